#pragma once

// The Calibration view's second ensemble: a trained ensemble read from a file and measured on
// the test split of the dataset the current run uses, so both stand side by side (e.g. with
// and without bootstrap, K = 5 vs K = 50). Plain engine code behind a QString path, measured
// on the engine thread between training chunks (EngineController::compareWith, an EngineJob).

#include <QString>

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "metrics/calibration.h"
#include "metrics/metrics.h"
#include "metrics/regression.h"

namespace ensemble::ui {

struct Comparison {
    QString path;
    QString name;            // the file name, as the table and the legend show it
    nlohmann::json dataset;  // the `dataset` section it was measured with (the run's)
    int members = 0;
    int includedCount = 0;  // switched on at its step and not diverged: its ensemble
    int64_t step = 0;
    int64_t rows = 0;        // test rows measured
    std::vector<double> lr;  // per member
    std::vector<uint8_t> included;
    bool regression = false;
    // Classification: as Snapshot's figures, on every test row.
    std::vector<ClassificationMetrics> memberMetrics;
    ClassificationMetrics meanMember;
    ClassificationMetrics ensembleMetrics;
    Calibration reliability;
    // Regression: its report (ensemble, members, calibration curve).
    RegressionReport regressionReport;
};

// Reads the ensemble in `path` (an export or a checkpoint) and measures it on the test split
// (the train split when there is none) of `runDataset`, the current run's `dataset` section.
// DataError naming the file when it was trained on another dataset (the first key that
// differs, both values), on data of another shape or kind, or when every member diverged;
// whatever the reader or the dataset loader throws otherwise.
std::shared_ptr<const Comparison> measureComparison(const QString& path,
                                                    const nlohmann::json& runDataset);

// What a comparison sends back to the GUI thread: the measured ensemble, or why there is none.
struct ComparisonResult {
    QString path;
    std::shared_ptr<const Comparison> comparison;  // null when it failed or was cancelled
    QString error;
    bool cancelled = false;
};

// Engine thread: measureComparison() as a job's outcome (EngineController::compareWith, an
// EngineJob): the error when it throws; cancelled (nothing measured) when `cancel` is set before
// the ensemble is read or before it is measured.
ComparisonResult measureComparisonJob(const QString& path, const nlohmann::json& runDataset,
                                      const std::atomic<bool>& cancel);

}  // namespace ensemble::ui
