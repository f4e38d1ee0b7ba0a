#include "controller/run_measures.h"

#include <algorithm>
#include <chrono>

#include <QtGlobal>

#include "controller/snapshot_builder.h"
#include "train/trainer_report.h"

namespace ensemble::ui {

namespace {

double seconds(std::chrono::steady_clock::duration d) {
    return std::chrono::duration<double>(d).count();
}

}  // namespace

void RunMeasures::reset() {
    m_cacheValid = false;
    m_fullTestPredictions = MemberPredictions{};
    m_fullTestStep = -1;
    m_firstConv.reset();
}

void RunMeasures::refreshPredictions(Trainer& trainer, const RunInfo& run,
                                     const std::vector<float>& gridPoints) {
    const int64_t step = trainer.step();
    if (m_cacheValid && m_cacheStep == step) {
        return;
    }
    // A backend that computes the grid's measures itself (CUDA) is asked per snapshot instead
    // (classification only: a regression grid is the members' Gaussians, mixed here).
    if (run.hasGrid && (run.regression || !trainer.backend().measuresUncertainty())) {
        m_gridPredictions = trainer.predictRaw(gridPoints.data(),
                                               static_cast<int64_t>(run.gridSize) * run.gridSize);
    }
    if (run.evalTest.rows == trainer.data().test.rows) {
        m_testPredictions = trainer.predictTest();
    } else {
        m_testPredictions = trainer.predictRaw(run.evalTest.x.data(), run.evalTest.rows);
    }
    if (run.hasCurve) {
        m_curvePredictions =
            trainer.predictRaw(run.curveX.data(), static_cast<int64_t>(run.curveX.size()));
    }
    m_cacheStep = step;
    m_cacheValid = true;
}

void RunMeasures::measure(Snapshot& s, Trainer& trainer, const std::vector<float>& gridPoints,
                          bool running) {
    const RunInfo& run = *s.run;
    const auto t0 = Clock::now();
    refreshPredictions(trainer, run, gridPoints);
    const auto t1 = Clock::now();
    if (stopEarly()) {
        return;
    }
    if (run.regression) {
        measureRegression(s);
        return;
    }
    if (run.hasGrid) {
        s.hasGrid = true;
        s.grid = trainer.backend().measuresUncertainty()
                     ? evaluateGrid(trainer, run.bounds, run.gridSize, s.included)
                     : evaluateGrid(m_gridPredictions, run.bounds, run.gridSize, s.included);
    }
    const auto t2 = Clock::now();
    if (stopEarly()) {
        return;
    }
    if (run.hasGrid) {
        renderGrid(s);
    }
    const auto t3 = Clock::now();
    measureTest(s, m_testPredictions, run.evalTest.y);
    if (stopEarly()) {
        return;
    }
    const MemberPredictions& figures = measureStoppedFigures(s, trainer, running);
    if (stopEarly()) {
        return;
    }
    const std::vector<int32_t>& figureLabels =
        figures.rows == run.evalTest.rows ? run.evalTest.y : trainer.data().test.y;
    // The size curve costs O(K'^2): while training, re-measure it only within its budget.
    const auto now = Clock::now();
    const bool stale = m_sizeCurveRun != run.runId || m_sizeCurveIncluded != s.included ||
                       m_sizeCurveStep != s.step || m_sizeCurveRows != figures.rows;
    const double due =
        std::max(m_tuning.sizeCurveMinSeconds, m_sizeCurveSeconds / m_tuning.sizeCurveBudget);
    m_sizeCurveCostOfLastBuild = 0.0;
    if (stale && (!running || m_sizeCurveRun != run.runId || m_sizeCurveIncluded != s.included ||
                  seconds(now - m_sizeCurveTime) >= due)) {
        measureSizeCurve(s, figures, figureLabels, run.config.ensemble.seed);
        m_sizeCurve = s.sizeCurve;
        m_sizeCurveStep = s.step;
        m_sizeCurveRows = figures.rows;
        m_sizeCurveIncluded = s.included;
        m_sizeCurveRun = run.runId;
        m_sizeCurveTime = Clock::now();
        m_sizeCurveSeconds = seconds(m_sizeCurveTime - now);
        m_sizeCurveCostOfLastBuild = m_sizeCurveSeconds;
    } else {
        s.sizeCurve = m_sizeCurve;
        s.sizeCurveStep = m_sizeCurveStep;
    }
    const auto t4 = Clock::now();
    if (qEnvironmentVariableIsSet("ENSEMBLE_UI_PROFILE")) {
        qDebug("snapshot: predict %.1f ms, grid stats %.1f ms, images %.1f ms, test %.1f ms",
               seconds(t1 - t0) * 1e3, seconds(t2 - t1) * 1e3, seconds(t3 - t2) * 1e3,
               seconds(t4 - t3) * 1e3);
    }
}

const MemberPredictions& RunMeasures::measureStoppedFigures(Snapshot& s, Trainer& trainer,
                                                            bool running) {
    const RunInfo& run = *s.run;
    const Dataset& test = trainer.data().test;
    if (running || run.evalTest.rows >= test.rows) {
        return m_testPredictions;
    }
    if (m_fullTestRun != run.runId || m_fullTestStep != s.step) {
        m_fullTestPredictions = trainer.predictTest();
        m_fullTestStep = s.step;
        m_fullTestRun = run.runId;
    }
    // Measured as the live figures are, on every row; the per-row parts (test, memberPredicted)
    // stay those of the live rows, which the image grid shows.
    Snapshot whole;
    whole.run = s.run;
    whole.included = s.included;
    whole.includedCount = s.includedCount;
    whole.hasEnsemble = s.hasEnsemble;
    measureTest(whole, m_fullTestPredictions, test.y);
    s.memberMetrics = std::move(whole.memberMetrics);
    s.meanMember = whole.meanMember;
    s.ensembleMetrics = whole.ensembleMetrics;
    s.reliability = std::move(whole.reliability);
    s.confusion = std::move(whole.confusion);
    s.testRowsMeasured = test.rows;
    return m_fullTestPredictions;
}

void RunMeasures::measureRegression(Snapshot& s) {
    const RunInfo& run = *s.run;
    // Regression: no class statistics, no size curve of classification's kind (the report
    // has its own, cheap: O(K' N)).
    m_sizeCurveCostOfLastBuild = 0.0;
    if (run.hasGrid) {
        s.hasGrid = true;
        renderRegressionGrid(s, m_gridPredictions);
    }
    if (run.hasCurve) {
        measureRegressionCurve(s, m_curvePredictions);
    }
    measureRegressionTest(s, m_testPredictions);
}

std::shared_ptr<const FirstConv> RunMeasures::firstConv(const Trainer& trainer) {
    const auto& layers = trainer.layout().architecture().layers();
    if (layers.empty() || layers.front().kind != LayerKind::Conv) {
        return nullptr;
    }
    if (!m_firstConv || m_firstConvStep != trainer.step()) {
        const std::vector<float> params = trainer.parameters();
        m_firstConv =
            std::make_shared<const FirstConv>(firstConvOf(trainer.layout(), params.data()));
        m_firstConvStep = trainer.step();
    }
    return m_firstConv;
}

}  // namespace ensemble::ui
