#pragma once

// The Methods view's computation: the ensemble methods of the registry trained on the
// current experiment's config and measured side by side by the engine's compareMethods
// (compare/compare.h, the very function `ensemble-cli compare` calls, so the numbers are the
// CLI's), plus, for 2-D data, each method's ensemble on one shared grid drawn as its decision
// boundary and its epistemic (mutual information) map on one colour scale. Runs on the engine
// thread (EngineController::compareMethods, an EngineJob), reports progress and stops early when
// cancelled, keeping the methods that finished.

#include <QPolygonF>
#include <QString>

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include <nlohmann/json.hpp>

#include "compare/compare.h"
#include "config/config.h"
#include "controller/snapshot.h"

namespace ensemble::ui {

// One method's picture: its ensemble's epistemic map over the shared grid, coloured on the
// outcome's shared scale, and its decision boundary in grid units (0..G, row 0 at the top).
struct MethodFigure {
    EnsembleMethod method = EnsembleMethod::Independent;
    HeatImage epistemic;
    std::vector<QPolygonF> boundary;
    double meanEpistemic = 0.0;  // over the grid, nats
};

struct MethodsOutcome {
    uint64_t runId = 0;
    nlohmann::json config;  // the base config compared (the run's ExperimentConfig::json)
    std::vector<EnsembleMethod> requested;
    bool cancelled = false;  // the finished methods are in `result` (result->complete false)
    QString error;           // why there is no result (empty when there is one)
    std::shared_ptr<const CompareResult> result;  // null: none
    nlohmann::json report;                        // compareReportJson(*result)
    // 2-D data: one per finished method, in the result's order; empty otherwise.
    std::vector<MethodFigure> figures;
    GridBounds bounds;  // the shared grid's box (raw units)
    int gridSize = 0;
    // The shared colour scale of the epistemic maps: [0, epistemicHigh] nats.
    double epistemicHigh = 0.0;
};
using MethodsOutcomePtr = std::shared_ptr<const MethodsOutcome>;

// The maps' grid, cells a side: enough for canvases a few hundred pixels wide, cheap for K = 50.
inline constexpr int kMethodsGridSize = 96;

// The options the view's comparison uses: compareMethods' defaults (the CLI's shift, timing and
// progress) with the grid of `gridSize` cells a side for 2-D data (0: none).
CompareOptions methodsCompareOptions(int gridSize);

// Engine thread: compareMethods(base, methods, methodsCompareOptions(gridSize)) with `progress`
// as its callback and `cancel` polled, then the figures for 2-D data. Never throws: a failure
// is outcome.error.
MethodsOutcome measureMethods(const ExperimentConfig& base,
                              const std::vector<EnsembleMethod>& methods, int gridSize,
                              uint64_t runId,
                              const std::function<void(const CompareProgress&)>& progress,
                              const std::atomic<bool>& cancel);

// The outcome of a comparison that did not run: `why` (no experiment with its data).
MethodsOutcome refusedMethods(const std::vector<EnsembleMethod>& methods, uint64_t runId,
                              const QString& why);

}  // namespace ensemble::ui
