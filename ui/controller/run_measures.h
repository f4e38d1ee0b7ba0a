#pragma once

// What each snapshot measures of the run, on the engine thread: the members' predictions at
// the current step (grid, live test rows, regression curve; cached while the step stays),
// the grid's statistics and pictures, the test figures (on the whole split once the run
// stops), the ensemble-size curve within its share of the time, and the first conv layer.

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "controller/snapshot.h"
#include "controller/worker_tuning.h"
#include "train/trainer.h"

namespace ensemble::ui {

class RunMeasures {
  public:
    explicit RunMeasures(WorkerTuning tuning) : m_tuning(tuning) {}

    // A new run (or none): nothing cached applies any more.
    void reset();
    // Asked between measure()'s stages: true leaves the snapshot half measured (its run is
    // being dropped: a cancelled setup, EngineWorker::cancelSetup).
    void setStopCheck(std::function<bool()> check) { m_stopCheck = std::move(check); }
    // Fills the measured parts of `s`, whose run, step and included members are set, from
    // `trainer` at its current step. `gridPoints`: the run's grid (RunInfo::hasGrid);
    // `running`: while training the size curve keeps to its budget and the figures stay on
    // the live rows.
    void measure(Snapshot& s, Trainer& trainer, const std::vector<float>& gridPoints, bool running);
    // The seconds the last measure() spent on the size curve (0 when it reused it): the pace
    // of snapshots leaves it out, it has a budget of its own.
    double sizeCurveCostOfLastBuild() const { return m_sizeCurveCostOfLastBuild; }
    // The first conv layer at the trainer's step (null for an MLP), copied once per step.
    std::shared_ptr<const FirstConv> firstConv(const Trainer& trainer);

  private:
    using Clock = std::chrono::steady_clock;

    void refreshPredictions(Trainer& trainer, const RunInfo& run,
                            const std::vector<float>& gridPoints);
    // A stopped run whose live subset is smaller than the test split: the figures of `s`
    // (members', ensemble, reliability, confusion) measured on the whole split instead.
    // Returns the predictions they were measured on (the live ones when nothing changed).
    const MemberPredictions& measureStoppedFigures(Snapshot& s, Trainer& trainer, bool running);
    // The regression part of a snapshot (curve, grid maps, test report).
    void measureRegression(Snapshot& s);

    bool stopEarly() const { return m_stopCheck && m_stopCheck(); }

    WorkerTuning m_tuning;
    std::function<bool()> m_stopCheck;

    // Predictions at m_cacheStep (reused while paused: member switches only re-average).
    bool m_cacheValid = false;
    int64_t m_cacheStep = -1;
    MemberPredictions m_gridPredictions;
    MemberPredictions m_testPredictions;
    MemberPredictions m_curvePredictions;  // 1-D regression: at RunInfo::curveX
    // The whole test split at m_fullTestStep, when the live subset is smaller (a stopped run's
    // figures are measured on it, as eval measures them).
    MemberPredictions m_fullTestPredictions;
    int64_t m_fullTestStep = -1;
    uint64_t m_fullTestRun = 0;

    // The ensemble-size curve, re-measured less often than the rest while training.
    std::vector<SizeCurvePoint> m_sizeCurve;
    int64_t m_sizeCurveStep = -1;
    std::vector<uint8_t> m_sizeCurveIncluded;
    int64_t m_sizeCurveRows = 0;  // test rows it was measured on
    uint64_t m_sizeCurveRun = 0;  // RunInfo::runId (addresses can repeat)
    Clock::time_point m_sizeCurveTime;
    double m_sizeCurveSeconds = 0.0;
    double m_sizeCurveCostOfLastBuild = 0.0;  // 0 when the last snapshot reused the curve

    std::shared_ptr<const FirstConv> m_firstConv;
    int64_t m_firstConvStep = -1;
};

}  // namespace ensemble::ui
