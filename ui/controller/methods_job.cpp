#include "controller/methods_job.h"

#include <algorithm>
#include <cmath>
#include <exception>
#include <numeric>

#include "controller/snapshot_builder.h"
#include "render/contour.h"

namespace ensemble::ui {

namespace {

// The floor of the shared scale, as the Boundary view's epistemic map has it (a hundredth of
// log C): methods that all agree everywhere do not blow rounding noise up to full colour.
double epistemicFloor(int classes) {
    return 0.01 * std::log(static_cast<double>(std::max(2, classes)));
}

// The figures of every finished method on one colour scale: the largest mutual information any
// of them reaches (sequentialHeatImage colours [0, max(own max, minHigh)], so a minHigh at or
// above every map's maximum gives all of them the same range).
void drawFigures(MethodsOutcome& outcome, const CompareResult& result) {
    double high = 0.0;
    int classes = 2;
    for (const MethodComparison& m : result.methods) {
        if (!m.grid || m.grid->ensemble.rows == 0) {
            continue;
        }
        classes = m.grid->classes;
        for (double v : m.grid->ensemble.epistemic) {
            if (std::isfinite(v)) {
                high = std::max(high, v);
            }
        }
        outcome.bounds = m.grid->bounds;
        outcome.gridSize = m.grid->size;
    }
    outcome.epistemicHigh = std::max(high, epistemicFloor(classes));
    for (const MethodComparison& m : result.methods) {
        if (!m.grid) {
            continue;
        }
        MethodFigure figure;
        figure.method = m.method;
        const GridEvaluation& g = *m.grid;
        const PointStatistics& e = g.ensemble;
        if (e.rows > 0) {
            figure.epistemic = sequentialHeatImage(e.epistemic, g.size, outcome.epistemicHigh);
            figure.boundary =
                joinSegments(decisionBoundary(e.probabilities.data(), g.size, g.classes));
            figure.meanEpistemic = std::accumulate(e.epistemic.begin(), e.epistemic.end(), 0.0) /
                                   static_cast<double>(e.epistemic.size());
        }
        outcome.figures.push_back(std::move(figure));
    }
}

}  // namespace

CompareOptions methodsCompareOptions(int gridSize) {
    CompareOptions options;
    options.gridSize = gridSize;
    return options;
}

MethodsOutcome measureMethods(const ExperimentConfig& base,
                              const std::vector<EnsembleMethod>& methods, int gridSize,
                              uint64_t runId,
                              const std::function<void(const CompareProgress&)>& progress,
                              const std::atomic<bool>& cancel) {
    MethodsOutcome outcome;
    outcome.runId = runId;
    outcome.config = base.json;
    outcome.requested = methods;
    if (cancel.load()) {
        // Cancelled while queued (a newer request, a new run, the window closing): nothing
        // to load or train.
        outcome.cancelled = true;
        return outcome;
    }
    try {
        auto result = std::make_shared<CompareResult>(
            compareMethods(base, methods, methodsCompareOptions(gridSize), progress, &cancel));
        outcome.cancelled = !result->complete;
        outcome.report = compareReportJson(*result);
        drawFigures(outcome, *result);
        // The pictures hold what the view draws; the members' grid probabilities (K G² C
        // floats a method) need not stay as long as the window shows the table.
        for (MethodComparison& m : result->methods) {
            m.grid.reset();
        }
        outcome.result = std::move(result);
    } catch (const std::exception& e) {
        outcome.error = QString::fromStdString(e.what());
        outcome.result.reset();
        outcome.figures.clear();
    }
    return outcome;
}

MethodsOutcome refusedMethods(const std::vector<EnsembleMethod>& methods, uint64_t runId,
                              const QString& why) {
    MethodsOutcome outcome;
    outcome.runId = runId;
    outcome.requested = methods;
    outcome.error = why;
    return outcome;
}

}  // namespace ensemble::ui
