#pragma once

// The Shift view's computation: the current run's ensemble measured on its test split moved
// by a shift at every level (the engine's shift report, shift/shift_report.h: the very function
// `ensemble-cli shift` calls, on the weights an export of the run holds, so the numbers are
// the CLI's), plus the shifted inputs the view shows at each level. Runs on the engine thread
// (EngineController::runShift, an EngineJob), reports progress and stops early when cancelled.

#include <QImage>
#include <QPointF>
#include <QString>

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "controller/shift_figures.h"

#include "data/dataset.h"
#include "io/model_io.h"
#include "shift/shift_report.h"

namespace ensemble::ui {

// What the view asks for: `ensemble-cli shift --shift <shift> --levels <levels> --alpha
// <alpha> --subset <subset>` (empty levels: the shift's defaults for the data; subset 0: the
// whole test split).
struct ShiftRequest {
    std::string shift = "rotate";
    std::vector<double> levels;
    double alpha = 0.1;
    int64_t subset = 0;
};

// The shifted inputs at one level, as the view shows them.
struct ShiftPreview {
    std::vector<QImage> images;   // image data: the first test images, shifted (grey, 0 black)
    std::vector<QPointF> points;  // 2-D data: every test point, moved (raw units)
    std::vector<int> labels;      // their classes
};

struct ShiftOutcome {
    uint64_t runId = 0;
    ShiftRequest request;
    int64_t step = 0;  // the training step of the weights measured
    bool cancelled = false;
    QString error;  // why there is no report (empty when there is one)
    std::shared_ptr<const ShiftReport> engineReport;  // the engine's report (null: none)
    nlohmann::json report;  // shiftReportJson(*engineReport), as `shift --report` writes it
    ShiftFigures figures;   // the same numbers, as the charts and the CSV read them
    std::vector<ShiftPreview> previews;  // per level
};
using ShiftOutcomePtr = std::shared_ptr<const ShiftOutcome>;

// How many test images a level's preview shows.
inline constexpr int kShiftPreviewImages = 24;

// Engine thread: measures `ensemble` on `data`'s test split (the train split when there is
// none) as `request` says, calling `progress(done, total)` as levels finish; stops with
// outcome.cancelled when `cancel` becomes true. Never throws: a failure is outcome.error.
ShiftOutcome measureShift(const LoadedEnsemble& ensemble, const DataSplit& data,
                          const ShiftRequest& request, uint64_t runId,
                          const std::function<void(int64_t, int64_t)>& progress,
                          const std::atomic<bool>& cancel);

// The outcome of a shift that was not measured: `why` (no ensemble to shift).
ShiftOutcome refusedShift(const ShiftRequest& request, uint64_t runId, const QString& why);

}  // namespace ensemble::ui
