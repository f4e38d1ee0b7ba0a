#pragma once

// The Calibration view's plot (CalibrationView): the run's top-label reliability diagram
// (accuracy per confidence bin against the diagonal, gaps shaded, empty bins marked, counts
// shown) over the confidence histogram, or a regression run's interval coverage curve; the
// compared ensemble's curve (controller/comparison.h) is drawn over it in kComparedColour.

#include <QColor>
#include <QWidget>

#include <memory>

#include "controller/comparison.h"
#include "controller/snapshot.h"

class QPainter;

namespace ensemble::ui {

// The compared ensemble's colour: its curve, its legend entry and its rows in the table.
inline const QColor kComparedColour(222, 128, 30);

class ReliabilityPlot : public QWidget {
    Q_OBJECT

  public:
    explicit ReliabilityPlot(QWidget* parent = nullptr);
    void setSnapshot(SnapshotPtr snapshot);
    // The compared ensemble's curve over the run's (null: none).
    void setComparison(std::shared_ptr<const Comparison> comparison);
    QSize sizeHint() const override { return {520, 460}; }

  protected:
    void paintEvent(QPaintEvent* event) override;

  private:
    // A regression run: the coverage (calibration) curve instead of the reliability bars.
    void paintRegression(QPainter& p) const;

    // The compared ensemble's curve and legend entry over the plot `area` (a regression run's
    // calibration curve when `regression`).
    void paintComparison(QPainter& p, const QRectF& area, bool regression) const;

    SnapshotPtr m_snapshot;
    std::shared_ptr<const Comparison> m_comparison;
};

}  // namespace ensemble::ui
