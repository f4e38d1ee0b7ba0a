#pragma once

#include <cstddef>
#include <cstdint>

namespace ensemble::ui {

// Tuning of the live view (the defaults keep the window's cost to about a tenth of training).
struct WorkerTuning {
    double chunkSeconds = 0.008;       // train this long between looks at the event queue
    double callSeconds = 0.002;        // one Trainer::runSteps call at most about this long
    double minSnapshotSeconds = 0.15;  // at most ~7 snapshots per second
    double snapshotBudget = 0.08;      // fraction of the time spent building snapshots
    double sizeCurveBudget = 0.03;     // fraction spent on the ensemble-size curve while training
    double sizeCurveMinSeconds = 2.0;
    double historyBudget = 0.08;  // fraction of the time spent on learning-curve points
    int historyPoints = 150;      // at most about this many curve points per run
    int minHistoryPoints = 30;    // and at least this many, whatever they cost
    // The snapshot's and the checkpoint's list of curve points is thinned to half beyond this
    // (the Curves view draws from LearningCurves, which keeps every extreme in bounded memory).
    int maxHistoryPoints = 1024;
    int64_t gridMemberPoints = 300'000;  // K * G * G budget of the heatmap grid
    int maxGridSize = 128;
    int minGridSize = 40;
    int64_t maxEvalRows = 2000;      // test rows evaluated live (the first ones)
    int64_t maxTrainEvalRows = 256;  // train rows of the learning curves (the first ones)
    // When > 0, stands for the machine's available memory in the run's price (tests).
    std::size_t availableMemoryBytes = 0;
};

}  // namespace ensemble::ui
