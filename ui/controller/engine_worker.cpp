// The engine thread's side of the controller: the run's life cycle (train in chunks, pace,
// pause, step, live edits, member switches, predictions). Building a run, its snapshots and its
// files are EngineWorker's too, in engine_worker_build.cpp, engine_worker_snapshots.cpp and
// engine_worker_files.cpp.
#include "controller/engine_worker.h"

#include <QMetaObject>
#include <QTimer>
#include <QtGlobal>

#include <algorithm>
#include <cmath>
#include <exception>
#include <limits>
#include <utility>

namespace ensemble::ui {

EngineWorker::EngineWorker(SnapshotMailbox* mailbox, WorkerTuning tuning)
    : m_mailbox(mailbox), m_tuning(tuning), m_measures(tuning) {
    // A run's first snapshot stops measuring when its setup is cancelled (seconds per stage at
    // K in the ten thousands).
    m_measures.setStopCheck([this] {
        return m_settingUp != 0 && m_cancelledSetup.load(std::memory_order_acquire) == m_settingUp;
    });
}

EngineWorker::~EngineWorker() = default;

std::vector<uint8_t> EngineWorker::included() const {
    return m_trainer->included();  // the trainer knows the switches (ensemble.switched_off)
}

void EngineWorker::configure(const nlohmann::json& config, std::shared_ptr<const DataSplit> data,
                             uint64_t runId, bool keepReplaced) {
    build(config, std::move(data), runId, nullptr, keepReplaced);
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
        const double wall = secondsOf(Clock::now() - m_profile.start);
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
    m_trainer->setTotalSteps(untilPaused ? kUnboundedSteps : m_run->totalSteps);
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
    const auto due = static_cast<int64_t>(secondsOf(now - m_paceStart) * m_stepsPerSecond);
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
        m_profile.train += secondsOf(Clock::now() - before);
        m_profile.steps += n;
        m_windowSteps += n;
        if (m_trainer->step() >= m_nextHistory) {
            recordHistory();
        }
        if (secondsOf(Clock::now() - start) >= m_tuning.chunkSeconds) {
            break;
        }
    }
    if (m_stop.load(std::memory_order_acquire)) {
        return;
    }
    const auto now = Clock::now();
    const double window = secondsOf(now - m_windowStart);
    if (window >= 1.0 || (m_measuredStepsPerSecond == 0.0 && window >= 0.25)) {
        m_measuredStepsPerSecond = static_cast<double>(m_windowSteps) / window;
        m_windowStart = now;
        m_windowSteps = 0;
    }
    m_dirty = true;
    const bool done = m_trainer->step() >= end;
    if (done || m_pauseRequested.load(std::memory_order_acquire)) {
        // On stop, the rate over the whole stretch since start() (a short run has no window).
        const double stretch = secondsOf(now - m_profile.start);
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
    if (secondsOf(now - m_lastPublish) >= interval) {
        publish();
    }
    if (pacedSteps(now) == 0) {
        // The next step is due later: wait on a timer, so commands (pause) run meanwhile.
        const double wait = (static_cast<double>(m_paceSteps) + 1.0) / m_stepsPerSecond -
                            secondsOf(now - m_paceStart);
        m_chunkQueued = true;
        QTimer::singleShot(std::clamp(static_cast<int>(std::ceil(wait * 1000.0)), 1, 1000), this,
                           [this] { trainChunk(); });
        return;
    }
    queueChunk();
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

void EngineWorker::setRunStore(const QString& path) {
    m_record.setStore(path.toStdString());
}

void EngineWorker::setRunPreset(const QString& preset) {
    m_record.setPreset(preset.toStdString());
}

void EngineWorker::shutdown() {
    m_record.end();  // the window closes: its run's entry ends
    // An empty path keeps scheduleRecovery() from needing the timer again (a chunk or a paced
    // wake-up still queued behind this call returns at m_stop anyway).
    m_recoveryPath.clear();
    m_recoveryDue.reset();
    delete m_recoveryTimer;  // stopped here, on its own thread
    m_recoveryTimer = nullptr;
}

}  // namespace ensemble::ui
