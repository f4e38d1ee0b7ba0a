#include "controller/engine_controller.h"

// The GUI thread's side of the engine thread, one piece: every command is a post to the worker
// and every job a closure on the one EngineJob pattern, so they read best side by side; the
// work itself lives in the workers and the jobs' own files (shift_job, methods_job, active_job).

#include "compare/compare.h"
#include "controller/thread_handoff.h"
#include "io/model_io.h"
#include "runs/run_store.h"
#include "shift/shift_report.h"

#include <QFileInfo>
#include <QMetaObject>
#include <QTimer>

#include <array>
#include <exception>
#include <map>
#include <optional>
#include <utility>

namespace ensemble::ui {

EngineController::EngineController(QObject* parent, WorkerTuning tuning) : QObject(parent) {
    m_worker = new EngineWorker(&m_mailbox, tuning);
    m_worker->moveToThread(&m_thread);
    // Outcomes come back once, to the signals the views take; a job the rule dropped never
    // comes back (endJobs says so instead).
    m_comparisonJob = std::make_unique<EngineJob<JobProgress, ComparisonResult>>(
        m_worker, this, nullptr, [this](ComparisonResult result, bool cancelled) {
            if (cancelled && !result.cancelled) {
                // Measured before the cancel reached it: what was asked for is nothing.
                result = ComparisonResult{result.path, nullptr, QString(), true};
            }
            Q_EMIT comparisonMeasured(result);
        });
    m_shiftJob = std::make_unique<EngineJob<JobProgress, ShiftOutcomePtr>>(
        m_worker, this, [this](const JobProgress& p) { Q_EMIT shiftProgress(p.done, p.total); },
        [this](const ShiftOutcomePtr& outcome, bool) { Q_EMIT shiftFinished(outcome); });
    m_methodsJob = std::make_unique<EngineJob<CompareProgress, MethodsOutcomePtr>>(
        m_worker, this, [this](const CompareProgress& p) { Q_EMIT methodsProgress(p); },
        [this](const MethodsOutcomePtr& outcome, bool) { Q_EMIT methodsFinished(outcome); });
    m_reproduceJob = std::make_unique<EngineJob<ReproduceJobProgress, ReproduceOutcomePtr>>(
        m_worker, this, [this](const ReproduceJobProgress& p) { Q_EMIT reproduceProgress(p); },
        [this](const ReproduceOutcomePtr& outcome, bool) { Q_EMIT reproduceFinished(outcome); });
    m_active = new ActiveWorker;
    m_active->moveToThread(&m_thread);
    ActiveWorker* active = m_active;
    // Both live on the engine thread: a checkpoint asks the loop for its state directly.
    m_worker->setActiveMetadata([active](uint64_t runId) { return active->checkpointJson(runId); });
    m_thread.setObjectName(QStringLiteral("engine"));
    // For ThreadSanitizer only (no-ops otherwise): the worker's signals and the thread's end
    // hand data to this thread through Qt's event queue and QThread::wait, which TSan cannot
    // see into (controller/thread_handoff.h). Connected before the queued connections below.
    trackQueuedHandoffs();
    announceSignal(m_worker, &EngineWorker::snapshotReady);
    announceSignal(m_worker, &EngineWorker::runningChanged);
    announceSignal(m_worker, &EngineWorker::configured);
    announceSignal(m_worker, &EngineWorker::configureFailed);
    announceSignal(m_worker, &EngineWorker::setupCancelled);
    announceSignal(m_worker, &EngineWorker::liveEditFailed);
    announceSignal(m_worker, &EngineWorker::openFailed);
    announceSignal(m_worker, &EngineWorker::predictionReady);
    announceSignal(m_worker, &EngineWorker::featureMapsReady);
    announceSignal(m_worker, &EngineWorker::exportFinished);
    announceSignal(m_worker, &EngineWorker::checkpointSaved);
    announceSignal(m_worker, &EngineWorker::recoveryWritten);
    announceSignal(m_worker, &EngineWorker::recoveryFailed);
    announceSignal(m_worker, &EngineWorker::runStoreWarning);
    announceSignal(m_worker, &EngineWorker::recoveryFlushed);
    announceSignal(m_worker, &EngineWorker::working);
    announceSignal(m_worker, &EngineWorker::measuring);
    announceSignal(m_active, &ActiveWorker::progressPosted);
    announceSignal(m_active, &ActiveWorker::stateReady);
    announceSignal(&m_thread, &QThread::finished);
    connect(m_worker, &EngineWorker::snapshotReady, this, &EngineController::takeSnapshot,
            Qt::QueuedConnection);
    connect(
        m_worker, &EngineWorker::runningChanged, this,
        [this](bool running) {
            m_running = running;
            Q_EMIT runningChanged(running);
        },
        Qt::QueuedConnection);
    connect(
        m_worker, &EngineWorker::configured, this,
        [this](quint64 runId, const QString& notice) {
            if (runId == m_pendingOpen) {
                openStood(runId);
            }
            Q_EMIT configured(runId, notice);
        },
        Qt::QueuedConnection);
    connect(
        m_worker, &EngineWorker::configureFailed, this,
        [this](quint64 runId, const QString& message, int errorKind) {
            if (runId == m_runId && m_snapshot) {
                // The worker dropped the old run: no snapshot stands for it any more.
                m_snapshot.reset();
                Q_EMIT snapshotChanged();
            }
            Q_EMIT configureFailed(runId, message, errorKind);
        },
        Qt::QueuedConnection);
    connect(
        m_worker, &EngineWorker::setupCancelled, this,
        [this](quint64 runId) {
            if (runId == m_pendingOpen) {
                m_pendingOpen = 0;
                m_pendingOpenCancel.reset();
            }
            if (runId == m_runId && m_snapshot) {
                m_snapshot.reset();
                Q_EMIT snapshotChanged();
            }
            Q_EMIT setupCancelled(runId);
        },
        Qt::QueuedConnection);
    connect(m_worker, &EngineWorker::liveEditFailed, this, &EngineController::liveEditFailed,
            Qt::QueuedConnection);
    connect(
        m_worker, &EngineWorker::working, this,
        [this](quint64 runId, const QString& what) {
            if (runId == m_runId) {  // a run already replaced says nothing
                Q_EMIT working(runId, what);
            }
        },
        Qt::QueuedConnection);
    connect(
        m_worker, &EngineWorker::measuring, this,
        [this](quint64 runId, qint64 step, qint64 rows) {
            if (runId == m_runId) {
                Q_EMIT measuring(runId, step, rows);
            }
        },
        Qt::QueuedConnection);
    connect(
        m_worker, &EngineWorker::openFailed, this,
        [this](quint64 runId, const QString& message) {
            if (runId == m_runId) {
                m_runId = m_runIdBeforeOpen;  // the run before it goes on, with its jobs
            }
            if (runId == m_pendingOpen) {
                m_pendingOpen = 0;
                m_pendingOpenCancel.reset();
            }
            Q_EMIT openFailed(runId, message);
        },
        Qt::QueuedConnection);
    connect(m_worker, &EngineWorker::predictionReady, this, &EngineController::predictionReady,
            Qt::QueuedConnection);
    connect(m_worker, &EngineWorker::featureMapsReady, this, &EngineController::featureMapsReady,
            Qt::QueuedConnection);
    connect(m_worker, &EngineWorker::exportFinished, this, &EngineController::exportFinished,
            Qt::QueuedConnection);
    connect(m_worker, &EngineWorker::checkpointSaved, this, &EngineController::checkpointSaved,
            Qt::QueuedConnection);
    connect(m_worker, &EngineWorker::recoveryWritten, this, &EngineController::recoveryWritten,
            Qt::QueuedConnection);
    connect(m_worker, &EngineWorker::recoveryFailed, this, &EngineController::recoveryFailed,
            Qt::QueuedConnection);
    connect(m_worker, &EngineWorker::runStoreWarning, this, &EngineController::runStoreWarning,
            Qt::QueuedConnection);
    connect(m_worker, &EngineWorker::recoveryFlushed, this, &EngineController::recoveryFlushed,
            Qt::QueuedConnection);
    connect(
        m_active, &ActiveWorker::progressPosted, this,
        [this] {
            if (const std::optional<JobProgress> p = m_active->takeProgress()) {
                Q_EMIT activeProgress(p->done, p->total);
            }
        },
        Qt::QueuedConnection);
    connect(
        m_active, &ActiveWorker::stateReady, this,
        [this](const ActiveStatePtr& state) {
            m_activeState = state;
            Q_EMIT activeChanged(state);
        },
        Qt::QueuedConnection);
    m_thread.start();
}

EngineController::~EngineController() {
    // Stop the current chunk, stop the workers' timers on the engine thread, end its event loop
    // and join it; then the worker and its Trainer can be destroyed from here.
    // Closing the window cancels every job and waits for it: each stops at its next check, and
    // the join below waits for the one under way.
    m_worker->requestStop();
    m_comparisonJob->drop();
    m_shiftJob->drop();
    m_methodsJob->drop();
    m_reproduceJob->drop();
    m_active->requestPause();
    m_activeCancel->store(true, std::memory_order_release);
    // The workers' timers (the recovery write's) belong to the engine thread and are stopped
    // there, before it ends: the workers are deleted below from this thread, where stopping an
    // active timer is refused with a warning ("Timers cannot be stopped from another thread").
    // A blocking call, so it has run before quit(); it runs after the commands queued before it
    // (those that build or train return at once on requestStop()). Unlike a slot on
    // `finished` (read there after the thread's last announcement, freed here: a TSan race),
    // the call announces its end before this thread goes on (announced()).
    EngineWorker* w = m_worker;
    const std::array<QObject*, 2> workers = {m_worker, m_active};
    QMetaObject::invokeMethod(
        m_worker, announced([w, workers] {
            w->shutdown();
            for (QObject* worker : workers) {
                for (QTimer* timer : worker->findChildren<QTimer*>()) {
                    timer->stop();  // none but the recovery timer so far: any added later
                }
            }
        }),
        Qt::BlockingQueuedConnection);
    m_thread.quit();
    m_thread.wait();
    acceptHandoff();  // what the thread did before `finished` happened before this
    delete m_worker;
    m_worker = nullptr;
    delete m_active;
    m_active = nullptr;
}

template <typename F>
void EngineController::post(F&& f) {
    QMetaObject::invokeMethod(m_worker, announced(std::forward<F>(f)), Qt::QueuedConnection);
}

uint64_t EngineController::configure(const nlohmann::json& config,
                                     std::shared_ptr<const DataSplit> data, bool keepReplaced) {
    const uint64_t id = ++m_runId;
    m_worker->requestPause();
    // A Reset asks again for the experiment the current run was configured with (the same
    // config, the same data); anything else is a new experiment.
    const bool sameExperiment = !m_experiment.is_null() && config == m_experiment && !data;
    m_experiment = config;
    m_pendingOpen = 0;  // this run replaces the opened one, and ends the jobs now
    endJobs(sameExperiment);
    EngineWorker* w = m_worker;
    post([w, config, data = std::move(data), id, keepReplaced] {
        w->configure(config, data, id, keepReplaced);
    });
    Q_EMIT runRequested(id);
    return id;
}

void EngineController::cancelSetup() {
    m_worker->cancelSetup(m_runId);
}

uint64_t EngineController::open(std::shared_ptr<const OpenedEnsemble> opened) {
    m_runIdBeforeOpen = m_runId;
    const uint64_t id = ++m_runId;
    m_worker->requestPause();
    // The engine thread must be free to read the file, so the jobs under way stop now,
    // cancelled: what they finished still comes back. They end with the run only when the
    // file's run stands (openStood); a file refused for its dataset leaves the run before with
    // what its jobs finished.
    m_comparisonJob->cancel();
    m_shiftJob->cancel();
    m_methodsJob->cancel();
    m_reproduceJob->cancel();
    cancelActiveCommands();
    m_pendingOpen = id;
    m_pendingOpenRestoresLoop = opened->isCheckpoint && !opened->checkpoint.active.is_null();
    m_pendingOpenCancel = std::make_shared<std::atomic<bool>>(false);
    EngineWorker* w = m_worker;
    ActiveWorker* a = m_active;
    ActiveWorker::CancelToken cancel = m_pendingOpenCancel;
    post([w, a, opened = std::move(opened), id, cancel] {
        w->open(opened, id);
        // A checkpoint saved with an active-learning loop: the loop comes back on the run,
        // once it stands with its data.
        const std::shared_ptr<const RunInfo> run = w->run();
        if (opened->isCheckpoint && !opened->checkpoint.active.is_null() &&
            w->trainer() != nullptr && run && run->runId == id) {
            a->restore(run, w->trainer()->data(), opened->checkpoint.active, cancel);
        }
    });
    Q_EMIT runRequested(id);
    return id;
}

void EngineController::openStood(uint64_t runId) {
    m_pendingOpen = 0;
    m_experiment = nullptr;
    endJobs(false);
    // The loop restore queued behind the open carries its own flag: a Cancel from now on
    // reaches it, the end of the jobs just now did not.
    m_activeCancel = std::move(m_pendingOpenCancel);
    if (m_pendingOpenRestoresLoop) {
        Q_EMIT activeRestoring(runId);
    }
}

void EngineController::start() {
    EngineWorker* w = m_worker;
    post([w] { w->start(-1); });
}

void EngineController::trainTo(int64_t step) {
    EngineWorker* w = m_worker;
    post([w, step] { w->start(step); });
}

void EngineController::pause() {
    m_worker->requestPause();
    EngineWorker* w = m_worker;
    post([w] { w->pause(); });
}

void EngineController::toggleRunning() {
    if (m_running) {
        pause();
    } else {
        start();
    }
}

void EngineController::step() {
    EngineWorker* w = m_worker;
    post([w] { w->stepOnce(); });
}

void EngineController::setStopAfter(int64_t steps) {
    EngineWorker* w = m_worker;
    post([w, steps] { w->setStopAfter(steps); });
}

void EngineController::setUntilPaused(bool untilPaused) {
    EngineWorker* w = m_worker;
    post([w, untilPaused] { w->setUntilPaused(untilPaused); });
}

void EngineController::setStepsPerSecond(double stepsPerSecond) {
    EngineWorker* w = m_worker;
    post([w, stepsPerSecond] { w->setStepsPerSecond(stepsPerSecond); });
}

void EngineController::changeHyperparameters(const nlohmann::json& set) {
    EngineWorker* w = m_worker;
    post([w, set] { w->changeHyperparameters(set); });
}

void EngineController::setMemberSwitchedOn(int member, bool switchedOn) {
    if (member < 0 || member >= static_cast<int>(m_switchedOn.size())) {
        return;
    }
    m_switchedOn[static_cast<std::size_t>(member)] = switchedOn ? 1 : 0;
    setSwitchedOnMembers(m_switchedOn);
}

void EngineController::setSwitchedOnMembers(const std::vector<uint8_t>& switchedOn) {
    m_switchedOn = switchedOn;
    EngineWorker* w = m_worker;
    post([w, switchedOn] { w->setSwitchedOn(switchedOn); });
}

void EngineController::predict(uint64_t id, std::vector<float> rawRows) {
    if (m_worker->offerPrediction(id, std::move(rawRows))) {
        EngineWorker* w = m_worker;
        post([w] { w->predictPending(); });
    }
}

void EngineController::exportTo(const QString& basePath, ExportFormat format) {
    EngineWorker* w = m_worker;
    post([w, basePath, format] { w->exportTo(basePath, format); });
}

void EngineController::saveCheckpoint(const QString& path) {
    EngineWorker* w = m_worker;
    post([w, path] { w->saveCheckpoint(path); });
}

void EngineController::setRecovery(const QString& path, double intervalSeconds,
                                   const QString& replacedPath) {
    EngineWorker* w = m_worker;
    post([w, path, intervalSeconds, replacedPath] {
        w->setRecovery(path, intervalSeconds, replacedPath);
    });
}

void EngineController::setRunStore(const QString& path) {
    EngineWorker* w = m_worker;
    post([w, path] { w->setRunStore(path); });
}

void EngineController::setRunPreset(const QString& preset) {
    EngineWorker* w = m_worker;
    post([w, preset] { w->setRunPreset(preset); });
}

void EngineController::flushRecovery() {
    m_worker->requestPause();  // the chunk under way ends early; pause() settles it
    EngineWorker* w = m_worker;
    post([w] {
        w->pause();
        w->flushRecovery();
    });
}

bool EngineController::isJobRunning() const {
    return m_comparisonJob->isRunning() || m_shiftJob->isRunning() || m_methodsJob->isRunning() ||
           m_reproduceJob->isRunning();
}

void EngineController::endJobs(bool sameExperiment) {
    m_comparisonJob->drop();
    m_shiftJob->drop();
    m_methodsJob->drop();
    m_reproduceJob->drop();
    cancelActiveCommands();
    Q_EMIT jobsEnded(sameExperiment);
}

void EngineController::noteJobQueued(const QString& what) {
    if (m_running) {
        Q_EMIT runWaitsForJob(what);
    }
}

bool EngineController::compareWith(const QString& path) {
    if (!m_snapshot) {
        return false;
    }
    const nlohmann::json dataset =
        m_snapshot->run->config.json.value("dataset", nlohmann::json::object());
    m_comparisonJob->start([path, dataset](const auto&, const std::atomic<bool>& cancel) {
        return measureComparisonJob(path, dataset, cancel);
    });
    noteJobQueued(tr("the comparison with %1").arg(QFileInfo(path).fileName()));
    return true;
}

void EngineController::cancelComparison() {
    m_comparisonJob->cancel();
}

void EngineController::runShift(const ShiftRequest& request) {
    EngineWorker* w = m_worker;
    const uint64_t runId = m_runId;
    const QString noRun =
        tr("There is no ensemble with its data to shift: train one, or open "
           "one whose dataset is on this machine.");
    m_shiftJob->start(
        [w, request, runId, noRun](const std::function<void(const JobProgress&)>& progress,
                                   const std::atomic<bool>& cancel) {
            auto outcome = std::make_shared<ShiftOutcome>();
            const Trainer* trainer = w->trainer();
            if (trainer == nullptr) {
                *outcome = refusedShift(request, runId, noRun);
                return ShiftOutcomePtr(outcome);
            }
            if (cancel.load(std::memory_order_acquire)) {
                outcome->runId = runId;
                outcome->request = request;
                outcome->cancelled = true;  // before the export: nothing to undo
                return ShiftOutcomePtr(outcome);
            }
            LoadedEnsemble ensemble;
            try {
                // The weights as an export writes them and `ensemble-cli shift --weights` reads.
                ensemble = importEnsemble(exportFile(*trainer));
            } catch (const std::exception& e) {
                *outcome = refusedShift(request, runId, QString::fromStdString(e.what()));
                return ShiftOutcomePtr(outcome);
            }
            // Its own entry in the runs store, linked to the run it measured.
            const std::unique_ptr<runs::RunRecorder> entry =
                w->runRecord().beginJob("app-shift", trainer->config().json);
            *outcome = measureShift(
                ensemble, trainer->data(), request, runId,
                [&progress](int64_t done, int64_t total) {
                    progress(JobProgress{done, total});
                },
                cancel);
            finishJobEntry(entry.get(), outcome->cancelled, !outcome->error.isEmpty(),
                           outcome->engineReport ? shiftHeadlineFigures(*outcome->engineReport)
                                                 : std::map<std::string, double>{});
            return ShiftOutcomePtr(outcome);
        });
    noteJobQueued(tr("the shift"));
}

void EngineController::cancelShift() {
    m_shiftJob->cancel();
}

void EngineController::compareMethods(const std::vector<EnsembleMethod>& methods) {
    EngineWorker* w = m_worker;
    const uint64_t runId = m_runId;
    const QString noRun =
        tr("There is no experiment with its data to compare the methods on: choose one whose "
           "dataset is on this machine.");
    m_methodsJob->start(
        [w, methods, runId, noRun](const std::function<void(const CompareProgress&)>& progress,
                                   const std::atomic<bool>& cancel) {
            // The run's own config, as the engine thread built it: what `ensemble-cli compare
            // --config` reads from the same file.
            const std::shared_ptr<const RunInfo> run = w->run();
            if (!run || !run->missingData.empty()) {
                return MethodsOutcomePtr(
                    std::make_shared<MethodsOutcome>(refusedMethods(methods, runId, noRun)));
            }
            const std::unique_ptr<runs::RunRecorder> entry =
                w->runRecord().beginJob("app-methods", run->config.json);
            auto outcome = std::make_shared<MethodsOutcome>(
                measureMethods(run->config, methods, run->hasGrid ? kMethodsGridSize : 0,
                               run->runId, progress, cancel));
            finishJobEntry(entry.get(), outcome->cancelled, !outcome->error.isEmpty(),
                           outcome->result ? compareHeadlineFigures(*outcome->result)
                                           : std::map<std::string, double>{});
            return MethodsOutcomePtr(std::move(outcome));
        });
    noteJobQueued(tr("the methods comparison"));
}

void EngineController::cancelMethods() {
    m_methodsJob->cancel();
}

void EngineController::runReproduction(const ReproduceRequest& request) {
    EngineWorker* w = m_worker;
    m_reproduceJob->start(
        [w, request](const std::function<void(const ReproduceJobProgress&)>& progress,
                     const std::atomic<bool>& cancel) {
            return ReproduceOutcomePtr(std::make_shared<ReproduceOutcome>(
                runReproductionJob(request, &w->runRecord(), progress, cancel)));
        });
    noteJobQueued(tr("the reproduction %1").arg(QString::fromStdString(request.id)));
}

void EngineController::cancelReproduction() {
    m_reproduceJob->cancel();
}

void EngineController::cancelActiveCommands() {
    m_active->requestPause();
    m_activeCancel->store(true, std::memory_order_release);
    m_activeCancel = std::make_shared<std::atomic<bool>>(false);
    endActiveWait();
}

void EngineController::endActiveWait() {
    ActiveWorker* a = m_active;
    QMetaObject::invokeMethod(a, announced([a] { a->endWait(); }), Qt::QueuedConnection);
}

void EngineController::activeStart(Acquisition acquisition, const nlohmann::json& active) {
    cancelActiveCommands();  // a new loop: the round under way is the old one's
    EngineWorker* w = m_worker;
    ActiveWorker* a = m_active;
    ActiveWorker::CancelToken cancel = m_activeCancel;
    post([w, a, acquisition, active, cancel] {
        const Trainer* trainer = w->trainer();
        if (trainer == nullptr || !w->run()) {
            return;  // no run with its data: the view says so
        }
        // The loop's own entry in the runs store, linked to the run it learns from.
        a->setEntry(w->runRecord().beginJob("app-active", w->run()->config.json));
        a->start(w->run(), trainer->data(), active, acquisition, cancel);
    });
}

void EngineController::activeAcquire() {
    ActiveWorker* a = m_active;
    ActiveWorker::CancelToken cancel = m_activeCancel;
    QMetaObject::invokeMethod(a, announced([a, cancel] { a->acquirePicks(cancel); }),
                              Qt::QueuedConnection);
}

void EngineController::activeLabel(int64_t row) {
    ActiveWorker* a = m_active;
    ActiveWorker::CancelToken cancel = m_activeCancel;
    QMetaObject::invokeMethod(a, announced([a, row, cancel] { a->label(row, cancel); }),
                              Qt::QueuedConnection);
}

void EngineController::activePlay() {
    ActiveWorker* a = m_active;
    a->requestPlay();
    ActiveWorker::CancelToken cancel = m_activeCancel;
    QMetaObject::invokeMethod(a, announced([a, cancel] { a->play(cancel); }), Qt::QueuedConnection);
}

void EngineController::activeSetPace(int pauseMs, int64_t stopAt) {
    m_active->setPace(pauseMs, stopAt);
}

void EngineController::activePause() {
    m_active->requestPause();
    endActiveWait();
}

void EngineController::activeCancel() {
    cancelActiveCommands();
}

void EngineController::takeSnapshot() {
    SnapshotPtr s = m_mailbox.take();
    if (!s) {
        return;
    }
    const bool newRun = !m_snapshot || m_snapshot->run != s->run;
    EngineWorker* w = m_worker;
    if (!newRun && s->serial <= m_snapshot->serial) {
        // Never show a run going back in time: a snapshot older than the one shown (the
        // one-slot mailbox makes this impossible today; this keeps it so) is dropped.
        post([w] { w->snapshotTaken(); });
        return;
    }
    if (newRun) {
        // The loop of the run before goes with it (and the copy of its data it holds).
        ActiveWorker* a = m_active;
        const uint64_t runId = s->run->runId;
        QMetaObject::invokeMethod(a, announced([a, runId] { a->forgetRun(runId); }),
                                  Qt::QueuedConnection);
    }
    m_snapshot = std::move(s);
    ++m_received;
    if (newRun || m_switchedOn.size() != m_snapshot->switchedOn.size()) {
        m_switchedOn = m_snapshot->switchedOn;
    }
    Q_EMIT snapshotChanged();
    // Let the worker publish what changed while this one was on its way.
    post([w] { w->snapshotTaken(); });
}

}  // namespace ensemble::ui
