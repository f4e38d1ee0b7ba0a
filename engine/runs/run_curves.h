#pragma once

// The learning curves as the runs store keeps them (RunEntry::curves): the ensemble's train and
// test loss and accuracy (RMSE for a regression head), each decimated as the Curves view
// decimates (metrics/curve_store.h: min/max per bucket, the newest points exact), so an entry's
// curves stay small however long its run. The CLI and the app record the same form:
//   {"train_loss": [[step, value], ...], "test_loss": [...], "test_accuracy": [...], ...}
// A series with no finite value is left out.

#include <array>
#include <cstdint>

#include <nlohmann/json.hpp>

#include "metrics/curve_store.h"
#include "metrics/types.h"

namespace ensemble::runs {

class RunCurves {
  public:
    // The series' names, in the JSON's order.
    static constexpr std::array<const char*, 6> kSeries = {
        "train_loss", "test_loss", "train_accuracy", "test_accuracy", "train_rmse", "test_rmse"};
    // At most this many points per series in json().
    static constexpr int kMaxPoints = 256;

    // Appends the ensemble's figures at e.step (non-finite ones, such as a classifier's RMSE,
    // are skipped; a step below the last is ignored).
    void add(const Evaluation& e);
    bool empty() const;
    nlohmann::json json() const;

  private:
    std::array<CurveStore, kSeries.size()> m_series;
};

}  // namespace ensemble::runs
