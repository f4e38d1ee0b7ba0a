#pragma once

// Every learning curve of a run in bounded memory: the ensemble's and each member's loss and
// second figure (accuracy, or RMSE for regression) on the evaluated train and test rows, one
// CurveStore each. The worker appends a HistoryPoint at each curve point; snapshots share an
// immutable copy, so its size (not the run's length) bounds what a snapshot carries.

#include <cstdint>
#include <memory>
#include <vector>

#include "controller/snapshot.h"
#include "metrics/curve_store.h"

namespace ensemble::ui {

enum class CurveSplit { Train, Test };
enum class CurveFigure { Loss, Second };  // Second: accuracy, or RMSE of a regression run

class LearningCurves {
  public:
    LearningCurves() = default;
    LearningCurves(int members, bool regression);
    // The curves of `history` (stored curves of an opened file, the points so far).
    static LearningCurves fromHistory(int members, bool regression,
                                      const std::vector<std::shared_ptr<const HistoryPoint>>& h);

    void append(const HistoryPoint& point);

    int members() const { return m_members; }
    // member -1: the ensemble.
    const CurveStore& curve(int member, CurveSplit split, CurveFigure figure) const;
    int64_t points() const { return m_points; }  // HistoryPoints appended
    int64_t lastStep() const { return m_lastStep; }

  private:
    std::size_t index(int member, CurveSplit split, CurveFigure figure) const;

    int m_members = 0;
    bool m_regression = false;
    int64_t m_points = 0;
    int64_t m_lastStep = 0;
    std::vector<CurveStore> m_stores;  // (member + 1) * 4 + split * 2 + figure
};

// More than `limit` points: every other one is dropped (the first and the last kept), so the
// list spans the run at twice the spacing.
void thinCurvePoints(std::vector<std::shared_ptr<const HistoryPoint>>& history, std::size_t limit);

}  // namespace ensemble::ui
