#include "controller/engine_controller.h"

#include "controller/thread_handoff.h"
#include "io/model_io.h"

#include <QMetaObject>
#include <QTimer>

#include <array>
#include <exception>
#include <utility>

namespace ensemble::ui {

EngineController::EngineController(QObject* parent, WorkerTuning tuning) : QObject(parent) {
    m_worker = new EngineWorker(&m_mailbox, tuning);
    m_worker->moveToThread(&m_thread);
    m_comparer = new ComparisonWorker;
    m_comparer->moveToThread(&m_thread);
    m_shifter = new ShiftWorker;
    m_shifter->moveToThread(&m_thread);
    m_methods = new MethodsWorker;
    m_methods->moveToThread(&m_thread);
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
    announceSignal(m_worker, &EngineWorker::liveEditFailed);
    announceSignal(m_worker, &EngineWorker::openFailed);
    announceSignal(m_worker, &EngineWorker::predictionReady);
    announceSignal(m_worker, &EngineWorker::featureMapsReady);
    announceSignal(m_worker, &EngineWorker::exportFinished);
    announceSignal(m_worker, &EngineWorker::checkpointSaved);
    announceSignal(m_worker, &EngineWorker::recoveryWritten);
    announceSignal(m_worker, &EngineWorker::recoveryFailed);
    announceSignal(m_worker, &EngineWorker::recoveryFlushed);
    announceSignal(m_worker, &EngineWorker::working);
    announceSignal(m_worker, &EngineWorker::measuring);
    announceSignal(m_comparer, &ComparisonWorker::measured);
    announceSignal(m_shifter, &ShiftWorker::progressed);
    announceSignal(m_shifter, &ShiftWorker::finished);
    announceSignal(m_methods, &MethodsWorker::progressed);
    announceSignal(m_methods, &MethodsWorker::finished);
    announceSignal(m_active, &ActiveWorker::progressed);
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
    connect(m_worker, &EngineWorker::configured, this, &EngineController::configured,
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
                m_runId = m_runIdBeforeOpen;  // the run before it goes on
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
    connect(m_worker, &EngineWorker::recoveryFlushed, this, &EngineController::recoveryFlushed,
            Qt::QueuedConnection);
    connect(m_comparer, &ComparisonWorker::measured, this, &EngineController::comparisonMeasured,
            Qt::QueuedConnection);
    connect(m_shifter, &ShiftWorker::progressed, this, &EngineController::shiftProgress,
            Qt::QueuedConnection);
    connect(m_shifter, &ShiftWorker::finished, this, &EngineController::shiftFinished,
            Qt::QueuedConnection);
    connect(m_methods, &MethodsWorker::progressed, this, &EngineController::methodsProgress,
            Qt::QueuedConnection);
    connect(m_methods, &MethodsWorker::finished, this, &EngineController::methodsFinished,
            Qt::QueuedConnection);
    connect(m_active, &ActiveWorker::progressed, this, &EngineController::activeProgress,
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
    m_worker->requestStop();
    cancelShift();
    cancelMethods();
    m_active->requestShutdown();
    // The workers' timers (the recovery write's) belong to the engine thread and are stopped
    // there, before it ends: the workers are deleted below from this thread, where stopping an
    // active timer is refused with a warning ("Timers cannot be stopped from another thread").
    // A blocking call, so it has run before quit(); it runs after the commands queued before it
    // (those that build or train return at once on requestStop()). Unlike a slot on
    // `finished` (read there after the thread's last announcement, freed here: a TSan race),
    // the call announces its end before this thread goes on (announced()).
    EngineWorker* w = m_worker;
    const std::array<QObject*, 5> workers = {m_worker, m_comparer, m_shifter, m_methods, m_active};
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
    delete m_comparer;
    m_comparer = nullptr;
    delete m_shifter;
    m_shifter = nullptr;
    delete m_methods;
    m_methods = nullptr;
    delete m_active;
    m_active = nullptr;
}

template <typename F>
void EngineController::post(F&& f) {
    QMetaObject::invokeMethod(m_worker, announced(std::forward<F>(f)), Qt::QueuedConnection);
}

uint64_t EngineController::configure(const nlohmann::json& config,
                                     std::shared_ptr<const DataSplit> data) {
    const uint64_t id = ++m_runId;
    m_worker->requestPause();
    cancelMethods();
    EngineWorker* w = m_worker;
    post([w, config, data = std::move(data), id] { w->configure(config, data, id); });
    Q_EMIT runRequested(id);
    return id;
}

uint64_t EngineController::open(std::shared_ptr<const OpenedEnsemble> opened) {
    m_runIdBeforeOpen = m_runId;
    const uint64_t id = ++m_runId;
    m_worker->requestPause();
    cancelMethods();
    m_active->requestPause();
    m_active->requestCancel();
    const bool restoresLoop = opened->isCheckpoint && !opened->checkpoint.active.is_null();
    EngineWorker* w = m_worker;
    ActiveWorker* a = m_active;
    post([w, a, opened = std::move(opened), id] {
        w->open(opened, id);
        // A checkpoint saved with an active-learning loop: the loop comes back on the run,
        // once it stands with its data.
        const std::shared_ptr<const RunInfo> run = w->run();
        if (opened->isCheckpoint && !opened->checkpoint.active.is_null() &&
            w->trainer() != nullptr && run && run->runId == id) {
            a->restore(run, w->trainer()->data(), opened->checkpoint.active);
        }
    });
    Q_EMIT runRequested(id);
    if (restoresLoop) {
        Q_EMIT activeRestoring(id);
    }
    return id;
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

void EngineController::setRecovery(const QString& path, double intervalSeconds) {
    EngineWorker* w = m_worker;
    post([w, path, intervalSeconds] { w->setRecovery(path, intervalSeconds); });
}

void EngineController::flushRecovery() {
    m_worker->requestPause();  // the chunk under way ends early; pause() settles it
    EngineWorker* w = m_worker;
    post([w] {
        w->pause();
        w->flushRecovery();
    });
}

bool EngineController::compareWith(const QString& path) {
    if (!m_snapshot) {
        return false;
    }
    const nlohmann::json dataset =
        m_snapshot->run->config.json.value("dataset", nlohmann::json::object());
    ComparisonWorker* c = m_comparer;
    QMetaObject::invokeMethod(c, announced([c, path, dataset] { c->measure(path, dataset); }),
                              Qt::QueuedConnection);
    return true;
}

void EngineController::runShift(const ShiftRequest& request) {
    cancelShift();
    auto cancel = std::make_shared<std::atomic<bool>>(false);
    m_shiftCancel = cancel;
    EngineWorker* w = m_worker;
    ShiftWorker* s = m_shifter;
    const uint64_t runId = m_runId;
    const QString noRun =
        tr("There is no ensemble with its data to shift: train one, or open "
           "one whose dataset is on this machine.");
    post([w, s, request, runId, cancel, noRun] {
        const Trainer* trainer = w->trainer();
        if (trainer == nullptr) {
            s->refuse(request, runId, noRun);
            return;
        }
        LoadedEnsemble ensemble;
        try {
            // The weights as an export writes them and `ensemble-cli shift --weights` reads.
            ensemble = importEnsemble(exportFile(*trainer));
        } catch (const std::exception& e) {
            s->refuse(request, runId, QString::fromStdString(e.what()));
            return;
        }
        s->run(ensemble, trainer->data(), request, runId, cancel);
    });
}

void EngineController::cancelShift() {
    if (m_shiftCancel) {
        m_shiftCancel->store(true, std::memory_order_release);
        m_shiftCancel.reset();
    }
}

void EngineController::compareMethods(const std::vector<EnsembleMethod>& methods) {
    cancelMethods();
    auto cancel = std::make_shared<std::atomic<bool>>(false);
    m_methodsCancel = cancel;
    EngineWorker* w = m_worker;
    MethodsWorker* m = m_methods;
    const uint64_t runId = m_runId;
    const QString noRun =
        tr("There is no experiment with its data to compare the methods on: choose one whose "
           "dataset is on this machine.");
    post([w, m, methods, runId, cancel, noRun] {
        // The run's own config, as the engine thread built it: what `ensemble-cli compare
        // --config` reads from the same file.
        const std::shared_ptr<const RunInfo> run = w->run();
        if (!run || !run->missingData.empty()) {
            m->refuse(methods, runId, noRun);
            return;
        }
        m->run(run->config, methods, run->hasGrid ? kMethodsGridSize : 0, run->runId, cancel);
    });
}

void EngineController::cancelMethods() {
    if (m_methodsCancel) {
        m_methodsCancel->store(true, std::memory_order_release);
        m_methodsCancel.reset();
    }
}

void EngineController::activeStart(Acquisition acquisition, const nlohmann::json& active) {
    m_active->requestPause();
    m_active->requestCancel();
    EngineWorker* w = m_worker;
    ActiveWorker* a = m_active;
    post([w, a, acquisition, active] {
        const Trainer* trainer = w->trainer();
        if (trainer == nullptr || !w->run()) {
            return;  // no run with its data: the view says so
        }
        a->start(w->run(), trainer->data(), active, acquisition);
    });
}

void EngineController::activeAcquire() {
    ActiveWorker* a = m_active;
    QMetaObject::invokeMethod(a, announced([a] { a->acquirePicks(); }), Qt::QueuedConnection);
}

void EngineController::activeLabel(int64_t row) {
    ActiveWorker* a = m_active;
    QMetaObject::invokeMethod(a, announced([a, row] { a->label(row); }), Qt::QueuedConnection);
}

void EngineController::activePlay() {
    ActiveWorker* a = m_active;
    a->requestPlay();
    QMetaObject::invokeMethod(a, announced([a] { a->play(); }), Qt::QueuedConnection);
}

void EngineController::activePause() {
    m_active->requestPause();
}

void EngineController::activeCancel() {
    m_active->requestPause();
    m_active->requestCancel();
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
