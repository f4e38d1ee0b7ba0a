#include "controller/run_description.h"

#include <algorithm>
#include <cmath>

#include "metrics/grid.h"

namespace ensemble::ui {

namespace {

// The Regression view's x positions: the train range widened by half its span on each side.
constexpr int kCurvePoints = 400;

void setUpCurve(RunInfo& run, const Dataset& train) {
    run.train = train;
    run.hasCurve = true;
    double lo = 0.0;
    double hi = 1.0;
    if (train.rows > 0) {
        const auto [mn, mx] = std::minmax_element(train.x.begin(), train.x.end());
        lo = *mn;
        hi = *mx;
    }
    run.trainMin = lo;
    run.trainMax = hi;
    const double span = std::max(hi - lo, 1e-6);
    const double from = lo - 0.5 * span;
    const double to = hi + 0.5 * span;
    run.curveX.resize(kCurvePoints);
    for (int i = 0; i < kCurvePoints; ++i) {
        run.curveX[static_cast<std::size_t>(i)] =
            static_cast<float>(from + (to - from) * i / (kCurvePoints - 1));
    }
}

}  // namespace

int gridSizeFor(int members, const WorkerTuning& tuning) {
    const double side =
        std::sqrt(static_cast<double>(tuning.gridMemberPoints) / std::max(1, members));
    const int g = std::clamp(static_cast<int>(side), tuning.minGridSize, tuning.maxGridSize);
    return g - g % 4;
}

std::shared_ptr<RunInfo> describeRun(const Trainer& trainer, const ExperimentConfig& parsed,
                                     uint64_t runId, const std::string& notice,
                                     const WorkerTuning& tuning) {
    auto run = std::make_shared<RunInfo>();
    const DataSplit& d = trainer.data();
    run->runId = runId;
    run->config = parsed;
    run->datasetName = d.name;
    run->backendName = trainer.backend().name();
    run->notice = notice;
    run->members = trainer.members();
    run->classes = d.classes;
    run->features = d.train.features;
    run->isImage = d.isImage;
    run->imageWidth = d.imageWidth;
    run->imageHeight = d.imageHeight;
    run->totalSteps = trainer.totalSteps();
    run->trainRows = d.train.rows;
    run->testRows = d.test.rows;
    run->lr = parsed.optimizer.lr;
    run->momentum = parsed.optimizer.momentum;
    run->weightDecay = parsed.optimizer.weightDecay;
    const int64_t evalRows = std::min(d.test.rows, tuning.maxEvalRows);
    if (evalRows == d.test.rows) {
        run->evalTest = d.test;
    } else {
        std::vector<int64_t> first(static_cast<std::size_t>(evalRows));
        for (int64_t i = 0; i < evalRows; ++i) {
            first[static_cast<std::size_t>(i)] = i;
        }
        run->evalTest = selectRows(d.test, first);
    }
    run->regression = d.regression;
    run->likelihood = parsed.model.likelihood;
    run->targetMean = d.normalization.targetMean;
    run->targetStd = d.normalization.targetStd;
    if (d.regression && d.train.features == 1) {
        setUpCurve(*run, d.train);
    }
    if (d.planar()) {
        run->train = d.train;
        run->counts = trainer.bootstrapCounts();
        run->hasGrid = true;
        run->bounds = gridBounds(d);
        run->gridSize = gridSizeFor(run->members, tuning);
    }
    return run;
}

}  // namespace ensemble::ui
