// The engine thread's side of the controller: the run's life cycle (set up, train in chunks,
// pace, pause), its curve points and snapshots, and when the recovery checkpoint is written
// (between chunks). One file because those share the worker's state step by step;
// measurements (run_measures), descriptions (run_description), files (run_files) and opened
// ensembles (opened_ensemble) already live apart.
#include "controller/engine_worker.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QMetaObject>
#include <QTimer>

#include <algorithm>
#include <cmath>
#include <exception>
#include <limits>
#include <sstream>

#include "controller/run_description.h"
#include "controller/run_files.h"
#include "core/errors.h"
#include "metrics/grid.h"
#include "model/ensemble_methods.h"
#include "registry/registry.h"

namespace ensemble::ui {

namespace {

// The limit of a run that goes on until paused: far beyond any run a person waits for.
constexpr int64_t kUnbounded = std::numeric_limits<int64_t>::max() / 4;

double seconds(std::chrono::steady_clock::duration d) {
    return std::chrono::duration<double>(d).count();
}

// dataset.kind of a config with its defaults filled in ("mnist"), for progress messages.
QString datasetKindOf(const nlohmann::json& config) {
    const nlohmann::json kind =
        config.value("dataset", nlohmann::json::object()).value("kind", nlohmann::json("?"));
    return QString::fromStdString(kind.is_string() ? kind.get<std::string>() : kind.dump());
}

}  // namespace

void SnapshotMailbox::put(SnapshotPtr snapshot) {
    std::lock_guard<std::mutex> lock(m_mutex);
    m_slot = std::move(snapshot);
    m_waiting.store(true, std::memory_order_release);
}

SnapshotPtr SnapshotMailbox::take() {
    std::lock_guard<std::mutex> lock(m_mutex);
    SnapshotPtr s = std::move(m_slot);
    m_slot.reset();
    m_waiting.store(false, std::memory_order_release);
    return s;
}

EngineWorker::EngineWorker(SnapshotMailbox* mailbox, WorkerTuning tuning)
    : m_mailbox(mailbox), m_tuning(tuning), m_measures(tuning) {}

EngineWorker::~EngineWorker() = default;

std::vector<uint8_t> EngineWorker::included() const {
    return m_trainer->included();  // the trainer knows the switches (ensemble.switched_off)
}

void EngineWorker::configure(const nlohmann::json& config, std::shared_ptr<const DataSplit> data,
                             uint64_t runId) {
    build(config, std::move(data), runId, nullptr);
}

void EngineWorker::open(std::shared_ptr<const OpenedEnsemble> opened, uint64_t runId) {
    if (m_stop.load(std::memory_order_acquire)) {
        return;  // the window is closing: no dataset is loaded for it any more
    }
    pause();  // the current run stays until the new one can be built
    const QString name = QFileInfo(opened->path).fileName();
    Q_EMIT working(runId, tr("Opening %1: loading the %2 data it was trained on…")
                              .arg(name, datasetKindOf(opened->config.json)));
    std::shared_ptr<const DataSplit> data;
    try {
        data = std::make_shared<const DataSplit>(loadDataSplit(opened->config.dataset));
    } catch (const std::exception& e) {
        openWithoutData(*opened, runId, e.what());
        return;
    }
    // The weights work on inputs normalised as when they were trained: the same data.
    const LoadedEnsemble& e = opened->checkpoint.ensemble;
    const bool sameRows = !opened->isCheckpoint || data->train.rows == opened->checkpoint.trainRows;
    if (!sameRows || data->normalization.mean != e.normalization.mean ||
        data->normalization.std != e.normalization.std) {
        Q_EMIT openFailed(
            runId, QStringLiteral("%1: the dataset found here (%2, %3 train rows) is not the one "
                                  "it was trained on (%4, %5 rows): a different file or seed")
                       .arg(name, QString::fromStdString(data->name))
                       .arg(data->train.rows)
                       .arg(QString::fromStdString(e.datasetName))
                       .arg(opened->checkpoint.trainRows));
        return;
    }
    m_untilPaused = false;  // an opened run stops at its own length (Continue extends it)
    build(opened->config.json, std::move(data), runId, opened.get());
}

void EngineWorker::openWithoutData(const OpenedEnsemble& opened, uint64_t runId,
                                   const std::string& why) {
    setRunning(false);
    m_pauseRequested.store(false);
    m_trainer.reset();
    m_measures.reset();
    m_gridPoints.clear();
    m_history.clear();
    m_untilPaused = false;
    m_run = runWithoutData(opened, runId, why);
    auto s = snapshotWithoutData(opened, m_run, m_history);
    thinHistory();
    s->history = m_history;
    resetCurves();
    s->curves = m_publishedCurves = std::make_shared<const LearningCurves>(m_curves);
    s->serial = ++m_serial;
    m_switchedOn = s->switchedOn;
    Q_EMIT configured(runId, QString());
    m_mailbox->put(std::move(s));
    Q_EMIT snapshotReady();
}

void EngineWorker::build(const nlohmann::json& config, std::shared_ptr<const DataSplit> data,
                         uint64_t runId, const OpenedEnsemble* opened) {
    if (m_stop.load(std::memory_order_acquire)) {
        return;  // the window is closing: commands queued before it closed build nothing
    }
    setRunning(false);
    m_pauseRequested.store(false);
    try {
        ExperimentConfig parsed = parseConfig(config);
        if (opened != nullptr && opened->isCheckpoint) {
            keepCheckpointBackend(parsed, opened->checkpoint.ensemble);  // auto keeps it
        }
        std::string notice;
        std::unique_ptr<Trainer> trainer;
        // Free the old run first: two MNIST-sized runs need not fit in memory together.
        m_trainer.reset();
        m_measures.reset();
        Q_EMIT working(runId, data ? tr("Initialising %1 members…").arg(parsed.ensemble.members)
                                   : tr("Loading the %1 data and initialising %2 members…")
                                         .arg(datasetKindOf(parsed.json))
                                         .arg(parsed.ensemble.members));
        if (data) {
            BackendChoice choice = makeBackend(parsed, *data);
            notice = choice.notice;
            trainer = std::make_unique<Trainer>(parsed, *data, std::move(choice.backend), nullptr,
                                                std::move(choice.memberBackend));
            trainer->setBackendDecision(choice.decision);
        } else {
            trainer = makeTrainer(parsed, &notice);
        }
        if (opened != nullptr && opened->isCheckpoint) {
            resumeTrainer(*trainer, opened->checkpoint);
        } else if (opened != nullptr) {
            // An export: its weights are step 0 of a new run (fresh optimizer state).
            TrainingState state = trainer->trainingState();
            state.params = opened->checkpoint.ensemble.params;
            state.diverged = opened->checkpoint.ensemble.diverged;
            const LoadedEnsemble& stored = opened->checkpoint.ensemble;
            if (!stored.network.empty()) {
                // A file that stores the one network (mc_dropout): it goes on from there.
                state.trained = stored.network;
            } else if (!state.trained.empty()) {
                // A one-network method's network goes on from where the exported run ended:
                // its last member (the members follow it until their cycles end again).
                state.trained = memberParameters(trainer->layout(), state.params.data(),
                                                 trainer->members() - 1);
            }
            trainer->restoreTrainingState(state);
        }
        auto run = describeRun(*trainer, parsed, runId, notice, m_tuning);
        m_gridPoints = run->hasGrid ? gridPoints(run->bounds, run->gridSize) : std::vector<float>{};
        if (m_untilPaused && trainer->lengthChangeable()) {
            trainer->setTotalSteps(kUnbounded);  // a fixed-length method keeps its plan's
        }
        if (opened != nullptr) {
            setMemberOrigins(opened->checkpoint.ensemble, *run);
        }
        m_trainer = std::move(trainer);
        m_run = std::move(run);
        // The switches as the run has them: the config's ensemble.switched_off, and for a
        // checkpoint its schedule's entries up to its step.
        m_trainer->applyDueChanges();
        m_switchedOn = m_trainer->switchedOn();
        m_history.clear();
        if (opened != nullptr && opened->isCheckpoint) {
            appendStoredCurves(opened->checkpoint.curves, m_trainer->step(), m_history);
        }
        thinHistory();
        resetCurves();
        m_historyEvery = std::max<int64_t>(1, historyHorizon() / m_tuning.historyPoints);
        m_nextHistory = 0;
        m_measuredStepsPerSecond = 0.0;
        m_buildSeconds = 0.0;
        if (m_stop.load(std::memory_order_acquire)) {
            // The window closed while the data loaded: the run is never shown, so it is not
            // measured (a CNN on MNIST measured its first curve point for a minute on a busy
            // machine while the closing window waited; the monkey's finding). It is dropped
            // whole, so that the commands still queued behind this one find no run, as after a
            // failed build (a run without its first curve point broke pause(); the monkey's
            // second finding).
            m_trainer.reset();
            m_run.reset();
            m_measures.reset();
            return;
        }
        recordHistory();
        // A new run has nothing a recovery write would keep yet (a restored one: its file).
        m_recoveryStep = m_trainer->step();
        m_recoveryDue.reset();
        if (m_recoveryTimer != nullptr) {
            m_recoveryTimer->stop();
        }
        m_dirty = true;
        Q_EMIT configured(runId, QString::fromStdString(notice));
        Q_EMIT working(runId, tr("Measuring the members at step %1 on %2 test rows…")
                                  .arg(m_trainer->step())
                                  .arg(m_run->evalTest.rows));
        publish();
    } catch (const std::exception& e) {
        m_trainer.reset();
        m_run.reset();
        m_measures.reset();
        const auto* error = dynamic_cast<const Error*>(&e);
        const ErrorKind kind = error != nullptr ? error->kind() : ErrorKind::General;
        Q_EMIT configureFailed(runId, QString::fromStdString(e.what()), static_cast<int>(kind));
    }
}

void EngineWorker::setRunning(bool running) {
    if (m_running == running) {
        return;
    }
    m_running = running;
    if (running) {
        m_windowStart = Clock::now();
        m_windowSteps = 0;
        m_profile = Profile{};
        m_profile.start = m_windowStart;
    } else if (m_profile.steps > 0 && qEnvironmentVariableIsSet("ENSEMBLE_UI_PROFILE")) {
        const double wall = seconds(Clock::now() - m_profile.start);
        qDebug(
            "worker: %lld steps in %.2f s = %.1f steps/s; training %.1f %% (%.1f steps/s "
            "while training), curves %.1f %%, snapshots %.1f %%, other %.1f %%",
            static_cast<long long>(m_profile.steps), wall, m_profile.steps / wall,
            100 * m_profile.train / wall, m_profile.steps / m_profile.train,
            100 * m_profile.history / wall, 100 * m_profile.snapshots / wall,
            100 * (wall - m_profile.train - m_profile.history - m_profile.snapshots) / wall);
    }
    Q_EMIT runningChanged(running);
}

void EngineWorker::start(int64_t target) {
    m_pauseRequested.store(false);
    if (!m_trainer || m_trainer->finished()) {
        return;
    }
    if (target >= 0 && m_trainer->step() >= target) {
        m_dirty = true;
        publish();
        return;
    }
    m_target = target;
    setRunning(true);
    m_paceStart = Clock::now();
    m_paceSteps = 0;
    queueChunk();
}

void EngineWorker::pause() {
    m_pauseRequested.store(false);
    if (m_running) {
        setRunning(false);
        if (m_trainer && m_trainer->step() != m_history.back()->step) {
            recordHistory();
        }
        m_dirty = true;
        publish();
        writeRecovery();  // training paused: the step it stopped at
    }
}

void EngineWorker::stepOnce() {
    if (!m_trainer || m_running || m_trainer->finished()) {
        return;
    }
    m_trainer->runSteps(1);
    recordHistory();
    m_dirty = true;
    publish();
    scheduleRecovery();
}

void EngineWorker::setStopAfter(int64_t steps) {
    if (!m_trainer) {
        return;
    }
    m_untilPaused = false;
    std::string why;
    if (!m_trainer->lengthChangeable(&why)) {
        if (steps != m_trainer->totalSteps()) {
            Q_EMIT liveEditFailed(QString::fromStdString(why));
        }
        return;
    }
    m_trainer->setTotalSteps(std::max<int64_t>(0, steps));
    m_dirty = true;
    if (!m_running) {
        publish();  // the limit shows, and Train/Continue follow it
    }
}

void EngineWorker::setUntilPaused(bool untilPaused) {
    if (untilPaused == m_untilPaused) {
        return;
    }
    m_untilPaused = untilPaused;
    if (!m_trainer || !m_trainer->lengthChangeable()) {
        return;  // a fixed-length method's run ends where its plan does
    }
    m_trainer->setTotalSteps(untilPaused ? kUnbounded : m_run->totalSteps);
    m_dirty = true;
    if (!m_running) {
        publish();
    }
}

void EngineWorker::setStepsPerSecond(double stepsPerSecond) {
    m_stepsPerSecond = std::isfinite(stepsPerSecond) ? std::max(0.0, stepsPerSecond) : 0.0;
    m_paceStart = Clock::now();
    m_paceSteps = 0;
}

int64_t EngineWorker::pacedSteps(Clock::time_point now) const {
    if (!m_untilPaused || m_stepsPerSecond <= 0.0) {
        return std::numeric_limits<int64_t>::max();
    }
    const auto due = static_cast<int64_t>(seconds(now - m_paceStart) * m_stepsPerSecond);
    return std::max<int64_t>(0, due - m_paceSteps);
}

void EngineWorker::changeHyperparameters(const nlohmann::json& set) {
    if (!m_trainer) {
        return;
    }
    try {
        m_trainer->changeHyperparameters(set);
    } catch (const std::exception& e) {
        Q_EMIT liveEditFailed(QString::fromStdString(e.what()));
        return;
    }
    m_dirty = true;
    if (!m_running) {
        publish();
    }
}

int64_t EngineWorker::historyHorizon() const {
    // Until paused there is no end: space the points for a run twice as long as the one so far
    // (at least the configured length), so the curves keep their density as the run grows.
    return m_untilPaused ? std::max(m_run->totalSteps, 2 * m_trainer->step())
                         : std::max(m_trainer->totalSteps(), m_trainer->step());
}

void EngineWorker::setSwitchedOn(std::vector<uint8_t> switchedOn) {
    if (!m_trainer || switchedOn.size() != m_switchedOn.size() || switchedOn == m_switchedOn) {
        return;
    }
    // A switch is a live edit of ensemble.switched_off: recorded in training.schedule at this
    // step (merged with other switches between the same steps), so Save, Copy as Command, the
    // export and a checkpoint replay the figures too. Training is not affected.
    nlohmann::json off = nlohmann::json::array();
    for (std::size_t k = 0; k < switchedOn.size(); ++k) {
        if (switchedOn[k] == 0) {
            off.push_back(static_cast<int>(k));
        }
    }
    try {
        m_trainer->changeHyperparameters({{"ensemble.switched_off", off}});
    } catch (const std::exception& e) {
        Q_EMIT liveEditFailed(QString::fromStdString(e.what()));
        return;
    }
    m_switchedOn = m_trainer->switchedOn();
    m_dirty = true;
    publish();
}

void EngineWorker::queueChunk() {
    if (m_chunkQueued) {
        return;
    }
    m_chunkQueued = true;
    QMetaObject::invokeMethod(
        this, [this] { trainChunk(); }, Qt::QueuedConnection);
}

void EngineWorker::trainChunk() {
    m_chunkQueued = false;
    if (!m_running || !m_trainer || m_stop.load(std::memory_order_acquire)) {
        return;
    }
    const auto start = Clock::now();
    const int64_t end =
        m_target >= 0 ? std::min(m_target, m_trainer->totalSteps()) : m_trainer->totalSteps();
    while (m_trainer->step() < end) {
        if (m_stop.load(std::memory_order_acquire) ||
            m_pauseRequested.load(std::memory_order_acquire)) {
            break;
        }
        // Size the call from the measured step time (one step before anything is measured).
        const double perStep = m_trainer->lastStepSeconds();
        int64_t n = perStep > 0.0
                        ? std::clamp<int64_t>(static_cast<int64_t>(m_tuning.callSeconds / perStep),
                                              1, 100000)
                        : 1;
        n = std::min(
            {n, end - m_trainer->step(), std::max<int64_t>(1, m_nextHistory - m_trainer->step())});
        const auto before = Clock::now();
        n = std::min(n, pacedSteps(before));
        if (n == 0) {
            break;  // ahead of the chosen pace: wait below
        }
        m_paceSteps += n;
        m_trainer->runSteps(n);
        m_profile.train += seconds(Clock::now() - before);
        m_profile.steps += n;
        m_windowSteps += n;
        if (m_trainer->step() >= m_nextHistory) {
            recordHistory();
        }
        if (seconds(Clock::now() - start) >= m_tuning.chunkSeconds) {
            break;
        }
    }
    if (m_stop.load(std::memory_order_acquire)) {
        return;
    }
    const auto now = Clock::now();
    const double window = seconds(now - m_windowStart);
    if (window >= 1.0 || (m_measuredStepsPerSecond == 0.0 && window >= 0.25)) {
        m_measuredStepsPerSecond = static_cast<double>(m_windowSteps) / window;
        m_windowStart = now;
        m_windowSteps = 0;
    }
    m_dirty = true;
    const bool done = m_trainer->step() >= end;
    if (done || m_pauseRequested.load(std::memory_order_acquire)) {
        // On stop, the rate over the whole stretch since start() (a short run has no window).
        const double stretch = seconds(now - m_profile.start);
        if (m_profile.steps > 0 && stretch >= 0.005) {
            m_measuredStepsPerSecond = static_cast<double>(m_profile.steps) / stretch;
        }
    }
    if (done || m_pauseRequested.load(std::memory_order_acquire)) {
        m_pauseRequested.store(false);
        setRunning(false);
        if (m_trainer->step() != m_history.back()->step) {
            // The curves' last point first (seconds for a CNN): the window says so at once.
            Q_EMIT measuring(m_run->runId, m_trainer->step(), m_run->evalTest.rows);
            recordHistory();
        }
        publish();
        writeRecovery();  // training paused or ended: the step it stopped at
        return;
    }
    scheduleRecovery();
    if (m_recoveryDue && now >= *m_recoveryDue) {
        writeRecovery();  // between chunks, on this thread: the GUI thread never waits for it
    }
    // Publish at a pace that keeps the snapshot work within its share of the time.
    const double interval =
        std::max(m_tuning.minSnapshotSeconds, m_buildSeconds / m_tuning.snapshotBudget);
    if (seconds(now - m_lastPublish) >= interval) {
        publish();
    }
    if (pacedSteps(now) == 0) {
        // The next step is due later: wait on a timer, so commands (pause) run meanwhile.
        const double wait = (static_cast<double>(m_paceSteps) + 1.0) / m_stepsPerSecond -
                            seconds(now - m_paceStart);
        m_chunkQueued = true;
        QTimer::singleShot(std::clamp(static_cast<int>(std::ceil(wait * 1000.0)), 1, 1000), this,
                           [this] { trainChunk(); });
        return;
    }
    queueChunk();
}

void EngineWorker::recordHistory() {
    const auto start = Clock::now();
    struct AddTime {
        const Clock::time_point& start;
        double& total;
        ~AddTime() { total += seconds(Clock::now() - start); }
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
    m_history.push_back(std::move(point));
    thinHistory();
    // Keep the curves' cost within budget: space the points by what one costs.
    const double cost = seconds(Clock::now() - start);
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

void EngineWorker::publish() {
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
        m_mailbox->put(buildSnapshot(true));
        Q_EMIT snapshotReady();
        return;  // still dirty
    }
    const auto start = Clock::now();
    SnapshotPtr s = buildSnapshot();
    const double total = seconds(Clock::now() - start);
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

bool EngineWorker::offerPrediction(uint64_t id, std::vector<float> rawRows) {
    std::lock_guard<std::mutex> lock(m_predictMutex);
    const bool wasEmpty = !m_predictRequest.has_value();
    m_predictRequest.emplace(id, std::move(rawRows));
    return wasEmpty;
}

void EngineWorker::predictPending() {
    std::optional<std::pair<uint64_t, std::vector<float>>> request;
    {
        std::lock_guard<std::mutex> lock(m_predictMutex);
        request.swap(m_predictRequest);
    }
    if (!request || !m_trainer) {
        return;
    }
    const int features = m_trainer->data().train.features;
    if (features <= 0 || request->second.size() % static_cast<std::size_t>(features) != 0) {
        return;
    }
    const int64_t rows = static_cast<int64_t>(request->second.size()) / features;
    const MemberPredictions p = m_trainer->predictRaw(request->second.data(), rows);
    QList<float> out(p.logProbs.begin(), p.logProbs.end());
    Q_EMIT predictionReady(request->first, out, p.members, p.classes);
    if (const std::shared_ptr<const FirstConv> conv = m_measures.firstConv(*m_trainer)) {
        // The drawn digit (the first row), normalised as the members see it.
        std::vector<float> x(request->second.begin(), request->second.begin() + features);
        m_trainer->data().normalization.applyInPlace(x.data(), 1);
        const std::vector<float> maps =
            firstConvFeatureMaps(*conv, m_trainer->config().model.activation, x.data());
        const Shape o = conv->layer.out;
        Q_EMIT featureMapsReady(request->first, QList<float>(maps.begin(), maps.end()),
                                conv->members, o.channels, o.height, o.width);
    }
}

void EngineWorker::exportTo(const QString& basePath, ExportFormat format) {
    if (!m_trainer) {
        Q_EMIT exportFinished(false, QStringLiteral("There is no trained ensemble to export yet."),
                              {});
        return;
    }
    QStringList written;
    try {
        written = exportRun(*m_trainer, basePath, format);
    } catch (const std::exception& e) {
        Q_EMIT exportFinished(false, QString::fromStdString(e.what()), {});
        return;
    }
    Q_EMIT exportFinished(true, {}, written);
}

void EngineWorker::saveCheckpoint(const QString& path) {
    if (!m_trainer) {
        Q_EMIT checkpointSaved(false, QStringLiteral("There is no run to save yet."), path, 0);
        return;
    }
    try {
        writeRunState(path, true);
    } catch (const std::exception& e) {
        Q_EMIT checkpointSaved(false, QString::fromStdString(e.what()), path, m_trainer->step());
        return;
    }
    Q_EMIT checkpointSaved(true, {}, path, m_trainer->step());
}

void EngineWorker::writeRunState(const QString& path, bool withReport) {
    // The stored length is where this run ends (Stop after, moved by Continue), so the CLI and
    // a reopened window continue to the same step; until paused has no end: the steps trained.
    const nlohmann::json active =
        m_activeMetadata ? m_activeMetadata(m_run->runId) : nlohmann::json(nullptr);
    writeRunCheckpoint(path, *m_trainer, m_history, m_untilPaused ? m_trainer->step() : -1, active,
                       withReport);
}

void EngineWorker::setRecovery(const QString& path, double intervalSeconds) {
    const QString next = intervalSeconds > 0.0 ? path : QString();
    if (next != m_recoveryPath) {
        // A new file starts from the run as it is now: a restored run's file holds it already.
        m_recoveryStep = m_trainer ? m_trainer->step() : -1;
    }
    m_recoveryPath = next;
    m_recoveryInterval = intervalSeconds;
    m_recoveryDue.reset();
    if (m_recoveryTimer == nullptr) {
        // Created here, on this thread, so that it fires here.
        m_recoveryTimer = new QTimer(this);
        m_recoveryTimer->setSingleShot(true);
        connect(m_recoveryTimer, &QTimer::timeout, this, [this] { writeRecovery(); });
    }
    m_recoveryTimer->stop();
}

void EngineWorker::scheduleRecovery() {
    if (m_recoveryPath.isEmpty() || !m_trainer || m_trainer->step() == m_recoveryStep ||
        m_recoveryDue) {
        return;
    }
    const auto interval = std::chrono::duration_cast<Clock::duration>(
        std::chrono::duration<double>(m_recoveryInterval));
    m_recoveryDue = Clock::now() + interval;
    // While training, the chunks check the deadline; once paused (Step), the timer does.
    // (QTimer counts int milliseconds: a longer interval waits for the chunks' check.)
    m_recoveryTimer->start(static_cast<int>(
        std::min(std::ceil(m_recoveryInterval * 1000.0), double{std::numeric_limits<int>::max()})));
}

void EngineWorker::writeRecovery() {
    m_recoveryDue.reset();
    if (m_recoveryTimer != nullptr) {
        m_recoveryTimer->stop();
    }
    if (m_recoveryPath.isEmpty() || !m_trainer || m_trainer->step() == m_recoveryStep ||
        m_trainer->step() == 0) {
        return;  // nothing changed since the last write, or nothing trained to lose
    }
    const int64_t step = m_trainer->step();
    // A failed write is not retried until the run moves on (a full disk stays full).
    m_recoveryStep = step;
    const auto start = Clock::now();
    try {
        // No metrics report: the file only has to resume the run, and the report is most of
        // the write's time (a K = 1000 spirals run: seconds).
        writeRunState(m_recoveryPath, false);
    } catch (const std::exception& e) {
        Q_EMIT recoveryFailed(QString::fromStdString(e.what()));
        return;
    }
    Q_EMIT recoveryWritten(m_recoveryPath, step, seconds(Clock::now() - start));
}

void EngineWorker::flushRecovery() {
    writeRecovery();
    Q_EMIT recoveryFlushed(m_trainer ? m_trainer->step() : -1);
}

void EngineWorker::shutdown() {
    // An empty path keeps scheduleRecovery() from needing the timer again (a chunk or a paced
    // wake-up still queued behind this call returns at m_stop anyway).
    m_recoveryPath.clear();
    m_recoveryDue.reset();
    delete m_recoveryTimer;  // stopped here, on its own thread
    m_recoveryTimer = nullptr;
}

}  // namespace ensemble::ui
