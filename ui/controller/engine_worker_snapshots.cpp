// EngineWorker's curve points and snapshots: a point of the learning curves every few steps
// within their time budget, and a snapshot of the run published through the mailbox when the
// GUI has taken the last one.
#include "controller/engine_worker.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

#include "model/ensemble_methods.h"

namespace ensemble::ui {

int64_t EngineWorker::historyHorizon() const {
    // Until paused there is no end: space the points for a run twice as long as the one so far
    // (at least the configured length), so the curves keep their density as the run grows.
    return m_untilPaused ? std::max(m_run->totalSteps, 2 * m_trainer->step())
                         : std::max(m_trainer->totalSteps(), m_trainer->step());
}

void EngineWorker::recordHistory() {
    const auto start = Clock::now();
    struct AddTime {
        const Clock::time_point& start;
        double& total;
        ~AddTime() { total += secondsOf(Clock::now() - start); }
    } addTime{start, m_profile.history};
    auto point = std::make_shared<HistoryPoint>();
    point->step = m_trainer->step();
    point->epoch = m_trainer->epoch();
    const DataSplit& d = m_trainer->data();
    const std::vector<uint8_t> include = included();
    const int k = m_trainer->members();
    auto evaluate = [&](const Dataset& data, int64_t rows, SplitMetrics& ensembleOut,
                        std::vector<SplitMetrics>& membersOut) {
        membersOut.assign(static_cast<std::size_t>(k), SplitMetrics{});
        if (rows == 0) {
            return;
        }
        const MemberPredictions p = m_trainer->predictRaw(data.x.data(), rows);
        // Either task: loss and accuracy, or loss (NLL or MSE) and RMSE in raw target units.
        SplitEvaluation split = m_trainer->evaluatePredictions(p, data, include);
        ensembleOut = split.ensemble;
        membersOut = std::move(split.members);
    };
    evaluate(d.train, std::min(d.train.rows, m_tuning.maxTrainEvalRows), point->ensembleTrain,
             point->memberTrain);
    evaluate(m_run->evalTest, m_run->evalTest.rows, point->ensembleTest, point->memberTest);
    m_curves.append(*point);
    m_publishedCurves.reset();
    m_record.addPoint(*point, m_trainer->config().model.likelihood == Likelihood::Gaussian);
    m_history.push_back(std::move(point));
    thinHistory();
    // Keep the curves' cost within budget: space the points by what one costs.
    const double cost = secondsOf(Clock::now() - start);
    const double perStep = std::max(m_trainer->lastStepSeconds(), 1e-7);
    const int64_t minEvery = std::max<int64_t>(1, historyHorizon() / m_tuning.historyPoints);
    const auto byBudget =
        static_cast<int64_t>(std::ceil(cost / (m_tuning.historyBudget * perStep)));
    const int64_t maxEvery = std::max<int64_t>(1, historyHorizon() / m_tuning.minHistoryPoints);
    m_historyEvery = m_trainer->step() == 0
                         ? minEvery
                         : std::clamp(byBudget, minEvery, std::max(minEvery, maxEvery));
    m_nextHistory = m_trainer->step() + m_historyEvery;
}

void EngineWorker::thinHistory() {
    thinCurvePoints(m_history, static_cast<std::size_t>(std::max(4, m_tuning.maxHistoryPoints)));
}

void EngineWorker::resetCurves() {
    m_curves = LearningCurves::fromHistory(m_run->members, m_run->regression, m_history);
    m_publishedCurves.reset();
}

SnapshotPtr EngineWorker::buildSnapshot(bool quick) {
    auto s = std::make_shared<Snapshot>();
    s->run = m_run;
    s->serial = ++m_serial;
    s->step = m_trainer->step();
    s->epoch = m_trainer->epoch();
    s->running = m_running;
    s->finished = m_trainer->finished();
    s->totalSteps = m_trainer->totalSteps();
    s->schedule = m_trainer->config().json["training"]["schedule"];
    s->untilPaused = m_untilPaused;
    s->stepsPerSecond = m_measuredStepsPerSecond;
    // A one-network method (MC dropout, snapshots) trains one network per step, not K.
    s->memberStepsPerSecond =
        m_measuredStepsPerSecond *
        trainedNetworks(m_trainer->config().ensemble.method, m_trainer->members());
    s->lastLosses = m_trainer->lastLosses();
    if (m_trainer->lastStepSeconds() <= 0.0) {
        // No batch trained in this run yet (a new run, an opened file): no loss to show.
        std::fill(s->lastLosses.begin(), s->lastLosses.end(),
                  std::numeric_limits<float>::quiet_NaN());
    }
    s->diverged = m_trainer->diverged();
    s->switchedOn = m_switchedOn;
    s->included = included();
    s->includedCount = static_cast<int>(std::count(s->included.begin(), s->included.end(), 1));
    s->hasEnsemble = s->includedCount > 0;
    double loss = 0.0;
    int active = 0;
    for (std::size_t k = 0; k < s->lastLosses.size(); ++k) {
        if (!s->diverged[k]) {
            loss += s->lastLosses[k];
            ++active;
        }
    }
    s->meanLoss = active > 0 ? loss / active : std::nan("");
    s->history = m_history;
    if (!m_publishedCurves) {
        // A copy only when a curve point came since the last snapshot; bounded by the store.
        m_publishedCurves = std::make_shared<const LearningCurves>(m_curves);
    }
    s->curves = m_publishedCurves;
    s->firstConv = m_measures.firstConv(*m_trainer);
    s->testRowsMeasured = m_run->evalTest.rows;

    m_measures.measure(*s, *m_trainer, m_gridPoints, m_running || quick);
    s->evaluating = quick;
    return s;
}

bool EngineWorker::setupCancelledNow() {
    if (m_settingUp == 0 || !m_run || m_run->runId != m_settingUp) {
        return false;
    }
    const uint64_t runId = m_settingUp;
    if (m_cancelledSetup.load(std::memory_order_acquire) == runId) {
        dropCancelledSetup(runId);  // its first snapshot was being built: it never shows
        return true;
    }
    m_settingUp = 0;  // the first snapshot goes out: the setup is over
    return false;
}

void EngineWorker::publish() {
    if (const std::optional<std::string> warning = m_record.takeWarning()) {
        Q_EMIT runStoreWarning(QString::fromStdString(*warning));
    }
    if (!m_trainer || !m_dirty || m_stop.load(std::memory_order_acquire)) {
        return;  // nothing new, or the window is closing and will show nothing more
    }
    if (m_mailbox->waiting()) {
        return;  // the GUI has not taken the last one: snapshotTaken() publishes later
    }
    // A stopped run measures its figures on the whole test split, seconds on MNIST: its step
    // shows first, measured on the live rows and marked as evaluating; the whole split's
    // figures follow when the GUI has taken it (snapshotTaken).
    const bool quick = !m_running && m_run->evalTest.rows < m_trainer->data().test.rows &&
                       !(m_quickRun == m_run->runId && m_quickStep == m_trainer->step());
    if (!m_running) {
        Q_EMIT measuring(m_run->runId, m_trainer->step(),
                         quick ? m_run->evalTest.rows : m_trainer->data().test.rows);
    }
    if (quick) {
        m_quickRun = m_run->runId;
        m_quickStep = m_trainer->step();
        SnapshotPtr s = buildSnapshot(true);
        if (setupCancelledNow()) {
            return;
        }
        m_mailbox->put(std::move(s));
        Q_EMIT snapshotReady();
        return;  // still dirty
    }
    const auto start = Clock::now();
    SnapshotPtr s = buildSnapshot();
    if (setupCancelledNow()) {
        return;
    }
    const double total = secondsOf(Clock::now() - start);
    m_profile.snapshots += total;
    // The pace of snapshots follows their usual cost; the size curve has a budget of its own.
    const double cost = std::max(0.0, total - m_measures.sizeCurveCostOfLastBuild());
    m_buildSeconds = m_buildSeconds == 0.0 ? cost : 0.7 * m_buildSeconds + 0.3 * cost;
    m_dirty = false;
    m_lastPublish = Clock::now();
    m_mailbox->put(std::move(s));
    Q_EMIT snapshotReady();
}

void EngineWorker::snapshotTaken() {
    // While training, the next chunk publishes at its pace; otherwise publish what changed.
    if (!m_running) {
        publish();
    }
}

}  // namespace ensemble::ui
