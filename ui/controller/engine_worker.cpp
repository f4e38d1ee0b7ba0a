#include "controller/engine_worker.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QMetaObject>

#include <algorithm>
#include <cmath>
#include <exception>
#include <limits>
#include <sstream>

#include "backend/registry.h"
#include "controller/snapshot_builder.h"
#include "core/errors.h"
#include "io/atomic_file.h"
#include "io/model_io.h"
#include "metrics/report.h"
#include "train/trainer_report.h"

namespace ensemble::ui {

namespace {

// The limit of a run that goes on until paused: far beyond any run a person waits for.
constexpr int64_t kUnbounded = std::numeric_limits<int64_t>::max() / 4;

double seconds(std::chrono::steady_clock::duration d) {
    return std::chrono::duration<double>(d).count();
}

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

// A checkpoint's curves as the Curves view's points (those before `step`: the app evaluates
// the step it opens at itself, on the rows it evaluates live).
void appendStoredCurves(const std::vector<Evaluation>& curves, int64_t step,
                        std::vector<std::shared_ptr<const HistoryPoint>>& history) {
    for (const Evaluation& e : curves) {
        if (e.step >= step) {
            continue;
        }
        auto point = std::make_shared<HistoryPoint>();
        point->step = e.step;
        point->epoch = e.epoch;
        point->ensembleTrain = e.ensembleTrain;
        point->ensembleTest = e.ensembleTest;
        for (const MemberEvaluation& m : e.members) {
            point->memberTrain.push_back(m.train);
            point->memberTest.push_back(m.test);
        }
        history.push_back(std::move(point));
    }
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
    : m_mailbox(mailbox), m_tuning(tuning) {}

EngineWorker::~EngineWorker() = default;

std::vector<uint8_t> EngineWorker::included() const {
    return m_trainer->included();  // the trainer knows the switches (ensemble.switched_off)
}

std::shared_ptr<const OpenedEnsemble> readOpenedEnsemble(const QString& path) {
    const SafetensorsFile file = readSafetensors(QFile::encodeName(path).toStdString());
    auto opened = std::make_shared<OpenedEnsemble>();
    opened->path = path;
    if (isCheckpoint(file)) {
        opened->isCheckpoint = true;
        opened->checkpoint = readCheckpoint(file);
        opened->config = resumeConfig(opened->checkpoint, {});
    } else {
        opened->checkpoint.ensemble = importEnsemble(file);
        opened->checkpoint.trainRows = opened->checkpoint.ensemble.trainRows;
        opened->config = opened->checkpoint.ensemble.config;
    }
    return opened;
}

namespace {

// Where an opened file's members were trained, from the metadata ensemble-cli writes under
// mpirun (mesh, member_ranks, member_devices); nothing for a file trained in one process.
void setMemberOrigins(const LoadedEnsemble& e, RunInfo& run) {
    const nlohmann::json& meta = e.metadata;
    const auto ranks = meta.find("member_ranks");
    if (ranks == meta.end() || !ranks->is_array() ||
        ranks->size() != static_cast<std::size_t>(e.layout.members())) {
        return;
    }
    const auto devices = meta.find("member_devices");
    const bool haveDevices =
        devices != meta.end() && devices->is_array() && devices->size() == ranks->size();
    for (std::size_t k = 0; k < ranks->size(); ++k) {
        std::string origin = "rank " + (*ranks)[k].dump();
        if (haveDevices) {
            const nlohmann::json& d = (*devices)[k];
            origin += " · " + (d.is_string() ? d.get<std::string>() : d.dump());
        }
        run.memberOrigins.push_back(origin);
    }
    const auto mesh = meta.find("mesh");
    if (mesh != meta.end() && mesh->is_object() && mesh->contains("ensemble") &&
        mesh->contains("data")) {
        run.mesh = (*mesh)["ensemble"].dump() + " × " + (*mesh)["data"].dump() + " ranks";
    }
}

}  // namespace

void EngineWorker::configure(const nlohmann::json& config, std::shared_ptr<const DataSplit> data,
                             uint64_t runId) {
    build(config, std::move(data), runId, nullptr);
}

void EngineWorker::open(std::shared_ptr<const OpenedEnsemble> opened, uint64_t runId) {
    pause();  // the current run stays until the new one can be built
    const QString name = QFileInfo(opened->path).fileName();
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
    m_cacheValid = false;
    m_fullTestPredictions = MemberPredictions{};
    m_fullTestStep = -1;
    m_firstConv.reset();
    m_gridPoints.clear();
    m_history.clear();
    m_untilPaused = false;
    const LoadedEnsemble& e = opened.checkpoint.ensemble;
    const ExperimentConfig& config = opened.config;
    const int k = e.layout.members();
    auto run = std::make_shared<RunInfo>();
    run->runId = runId;
    run->config = config;
    run->datasetName = e.datasetName;
    run->backendName = "none";
    run->members = k;
    run->regression = isRegression(config.model.likelihood);
    run->classes = run->regression ? 0 : e.layout.classes();
    run->features = e.layout.inputs();
    const Shape input = e.layout.architecture().input();
    run->isImage = input.height > 1 || input.width > 1;
    run->imageWidth = run->isImage ? input.width : 0;
    run->imageHeight = run->isImage ? input.height : 0;
    run->trainRows = opened.checkpoint.trainRows;
    run->totalSteps = std::max(e.step, config.totalSteps(std::max<int64_t>(1, run->trainRows)));
    run->likelihood = config.model.likelihood;
    run->targetMean = e.normalization.targetMean;
    run->targetStd = e.normalization.targetStd;
    run->lr = config.optimizer.lr;
    run->momentum = config.optimizer.momentum;
    run->weightDecay = config.optimizer.weightDecay;
    run->missingData = why;
    setMemberOrigins(e, *run);

    auto s = std::make_shared<Snapshot>();
    s->run = run;
    s->serial = ++m_serial;
    s->step = e.step;
    s->finished = true;
    s->totalSteps = run->totalSteps;
    if (config.json.contains("training") && config.json["training"].contains("schedule")) {
        s->schedule = config.json["training"]["schedule"];
    }
    s->diverged = e.diverged;
    s->enabled.assign(static_cast<std::size_t>(k), 1);
    s->included.resize(static_cast<std::size_t>(k));
    for (int m = 0; m < k; ++m) {
        s->included[static_cast<std::size_t>(m)] = e.diverged[static_cast<std::size_t>(m)] ? 0 : 1;
    }
    s->includedCount =
        static_cast<int>(std::count(s->included.begin(), s->included.end(), uint8_t{1}));
    s->lastLosses.assign(static_cast<std::size_t>(k), std::numeric_limits<float>::quiet_NaN());
    // A checkpoint's curves, every one of them: nothing can be evaluated here.
    appendStoredCurves(opened.checkpoint.curves, std::numeric_limits<int64_t>::max(), m_history);
    s->history = m_history;
    // The figures: the last stored evaluation's test accuracy and loss where the file has
    // curves; unknown ("–") otherwise.
    const double nan = std::numeric_limits<double>::quiet_NaN();
    const ClassificationMetrics unknown{0, nan, nan, nan, nan, nan};
    s->memberMetrics.assign(static_cast<std::size_t>(k), unknown);
    s->meanMember = unknown;
    s->ensembleMetrics = unknown;
    if (!m_history.empty() && m_history.back()->step == e.step && !run->regression) {
        const HistoryPoint& last = *m_history.back();
        for (std::size_t m = 0; m < last.memberTest.size() && m < s->memberMetrics.size(); ++m) {
            s->memberMetrics[m].accuracy = last.memberTest[m].accuracy;
            s->memberMetrics[m].nll = last.memberTest[m].loss;
        }
        s->ensembleMetrics.accuracy = last.ensembleTest.accuracy;
        s->ensembleMetrics.nll = last.ensembleTest.loss;
    }
    const auto& layers = e.layout.architecture().layers();
    if (!layers.empty() && layers.front().kind == LayerKind::Conv) {
        s->firstConv = std::make_shared<const FirstConv>(firstConvOf(e.layout, e.params.data()));
    }
    m_run = run;
    m_enabled = s->enabled;
    Q_EMIT configured(runId, QString());
    m_mailbox->put(std::move(s));
    Q_EMIT snapshotReady();
}

void EngineWorker::build(const nlohmann::json& config, std::shared_ptr<const DataSplit> data,
                         uint64_t runId, const OpenedEnsemble* opened) {
    setRunning(false);
    m_pauseRequested.store(false);
    try {
        const ExperimentConfig parsed = parseConfig(config);
        std::string notice;
        std::unique_ptr<Trainer> trainer;
        // Free the old run first: two MNIST-sized runs need not fit in memory together.
        m_trainer.reset();
        m_cacheValid = false;
        m_fullTestPredictions = MemberPredictions{};
        m_fullTestStep = -1;
        m_firstConv.reset();
        if (data) {
            BackendChoice choice = makeBackend(parsed);
            notice = choice.notice;
            trainer = std::make_unique<Trainer>(parsed, *data, std::move(choice.backend));
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
            trainer->restoreTrainingState(state);
        }
        auto run = std::make_shared<RunInfo>();
        const DataSplit& d = trainer->data();
        run->runId = runId;
        run->config = parsed;
        run->datasetName = d.name;
        run->backendName = trainer->backend().name();
        run->notice = notice;
        run->members = trainer->members();
        run->classes = d.classes;
        run->features = d.train.features;
        run->isImage = d.isImage;
        run->imageWidth = d.imageWidth;
        run->imageHeight = d.imageHeight;
        run->totalSteps = trainer->totalSteps();
        run->trainRows = d.train.rows;
        run->testRows = d.test.rows;
        run->lr = parsed.optimizer.lr;
        run->momentum = parsed.optimizer.momentum;
        run->weightDecay = parsed.optimizer.weightDecay;
        const int64_t evalRows = std::min(d.test.rows, m_tuning.maxEvalRows);
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
            run->counts = trainer->bootstrapCounts();
            run->hasGrid = true;
            run->bounds = gridBounds(d);
            const double side = std::sqrt(static_cast<double>(m_tuning.gridMemberPoints) /
                                          std::max(1, run->members));
            int g = std::clamp(static_cast<int>(side), m_tuning.minGridSize, m_tuning.maxGridSize);
            run->gridSize = g - g % 4;
            m_gridPoints = gridPoints(run->bounds, run->gridSize);
        } else {
            m_gridPoints.clear();
        }
        if (m_untilPaused) {
            trainer->setTotalSteps(kUnbounded);
        }
        if (opened != nullptr) {
            setMemberOrigins(opened->checkpoint.ensemble, *run);
        }
        m_trainer = std::move(trainer);
        m_run = std::move(run);
        // The switches as the run has them: the config's ensemble.switched_off, and for a
        // checkpoint its schedule's entries up to its step.
        m_trainer->applyDueChanges();
        m_enabled = m_trainer->switchedOn();
        m_history.clear();
        if (opened != nullptr && opened->isCheckpoint) {
            appendStoredCurves(opened->checkpoint.curves, m_trainer->step(), m_history);
        }
        m_historyEvery = std::max<int64_t>(1, historyHorizon() / m_tuning.historyPoints);
        m_nextHistory = 0;
        m_stepsPerSecond = 0.0;
        m_buildSeconds = 0.0;
        recordHistory();
        m_dirty = true;
        Q_EMIT configured(runId, QString::fromStdString(notice));
        publish();
    } catch (const std::exception& e) {
        m_trainer.reset();
        m_run.reset();
        m_cacheValid = false;
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
}

void EngineWorker::setStopAfter(int64_t steps) {
    if (!m_trainer) {
        return;
    }
    m_untilPaused = false;
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
    if (!m_trainer) {
        return;
    }
    m_trainer->setTotalSteps(untilPaused ? kUnbounded : m_run->totalSteps);
    m_dirty = true;
    if (!m_running) {
        publish();
    }
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

void EngineWorker::setEnabled(std::vector<uint8_t> enabled) {
    if (!m_trainer || enabled.size() != m_enabled.size() || enabled == m_enabled) {
        return;
    }
    // A switch is a live edit of ensemble.switched_off: recorded in training.schedule at this
    // step (merged with other switches between the same steps), so Save, Copy as Command, the
    // export and a checkpoint replay the figures too. Training is not affected.
    nlohmann::json off = nlohmann::json::array();
    for (std::size_t k = 0; k < enabled.size(); ++k) {
        if (enabled[k] == 0) {
            off.push_back(static_cast<int>(k));
        }
    }
    try {
        m_trainer->changeHyperparameters({{"ensemble.switched_off", off}});
    } catch (const std::exception& e) {
        Q_EMIT liveEditFailed(QString::fromStdString(e.what()));
        return;
    }
    m_enabled = m_trainer->switchedOn();
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
    if (window >= 1.0 || (m_stepsPerSecond == 0.0 && window >= 0.25)) {
        m_stepsPerSecond = static_cast<double>(m_windowSteps) / window;
        m_windowStart = now;
        m_windowSteps = 0;
    }
    m_dirty = true;
    const bool done = m_trainer->step() >= end;
    if (done || m_pauseRequested.load(std::memory_order_acquire)) {
        // On stop, the rate over the whole stretch since start() (a short run has no window).
        const double stretch = seconds(now - m_profile.start);
        if (m_profile.steps > 0 && stretch >= 0.005) {
            m_stepsPerSecond = static_cast<double>(m_profile.steps) / stretch;
        }
    }
    if (done || m_pauseRequested.load(std::memory_order_acquire)) {
        m_pauseRequested.store(false);
        setRunning(false);
        if (m_trainer->step() != m_history.back()->step) {
            recordHistory();
        }
        publish();
        return;
    }
    // Publish at a pace that keeps the snapshot work within its share of the time.
    const double interval =
        std::max(m_tuning.minSnapshotSeconds, m_buildSeconds / m_tuning.snapshotBudget);
    if (seconds(now - m_lastPublish) >= interval) {
        publish();
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
    m_history.push_back(std::move(point));
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

void EngineWorker::refreshPredictions() {
    const int64_t step = m_trainer->step();
    if (m_cacheValid && m_cacheStep == step) {
        return;
    }
    // A backend that computes the grid's measures itself (CUDA) is asked per snapshot instead
    // (classification only: a regression grid is the members' Gaussians, mixed here).
    if (m_run->hasGrid && (m_run->regression || !m_trainer->backend().measuresUncertainty())) {
        m_gridPredictions = m_trainer->predictRaw(
            m_gridPoints.data(), static_cast<int64_t>(m_run->gridSize) * m_run->gridSize);
    }
    if (m_run->evalTest.rows == m_trainer->data().test.rows) {
        m_testPredictions = m_trainer->predictTest();
    } else {
        m_testPredictions = m_trainer->predictRaw(m_run->evalTest.x.data(), m_run->evalTest.rows);
    }
    if (m_run->hasCurve) {
        m_curvePredictions =
            m_trainer->predictRaw(m_run->curveX.data(), static_cast<int64_t>(m_run->curveX.size()));
    }
    m_cacheStep = step;
    m_cacheValid = true;
}

SnapshotPtr EngineWorker::buildSnapshot() {
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
    s->stepsPerSecond = m_stepsPerSecond;
    s->memberStepsPerSecond = m_stepsPerSecond * m_trainer->members();
    s->lastLosses = m_trainer->lastLosses();
    if (m_trainer->lastStepSeconds() <= 0.0) {
        // No batch trained in this run yet (a new run, an opened file): no loss to show.
        std::fill(s->lastLosses.begin(), s->lastLosses.end(),
                  std::numeric_limits<float>::quiet_NaN());
    }
    s->diverged = m_trainer->diverged();
    s->enabled = m_enabled;
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
    s->firstConv = firstConv();
    s->testRowsMeasured = m_run->evalTest.rows;

    const auto t0 = Clock::now();
    refreshPredictions();
    const auto t1 = Clock::now();
    if (m_run->regression) {
        buildRegression(*s);
        return s;
    }
    if (m_run->hasGrid) {
        s->hasGrid = true;
        s->grid =
            m_trainer->backend().measuresUncertainty()
                ? evaluateGrid(*m_trainer, m_run->bounds, m_run->gridSize, s->included)
                : evaluateGrid(m_gridPredictions, m_run->bounds, m_run->gridSize, s->included);
    }
    const auto t2 = Clock::now();
    if (m_run->hasGrid) {
        renderGrid(*s);
    }
    const auto t3 = Clock::now();
    measureTest(*s, m_testPredictions, m_run->evalTest.y);
    const MemberPredictions& figures = measureStoppedFigures(*s);
    const std::vector<int32_t>& figureLabels =
        figures.rows == m_run->evalTest.rows ? m_run->evalTest.y : m_trainer->data().test.y;
    // The size curve costs O(K'^2): while training, re-measure it only within its budget.
    const auto now = Clock::now();
    const bool stale = m_sizeCurveRun != m_run->runId || m_sizeCurveIncluded != s->included ||
                       m_sizeCurveStep != s->step || m_sizeCurveRows != figures.rows;
    const double due =
        std::max(m_tuning.sizeCurveMinSeconds, m_sizeCurveSeconds / m_tuning.sizeCurveBudget);
    m_sizeCurveCostOfLastBuild = 0.0;
    if (stale && (!m_running || m_sizeCurveRun != m_run->runId ||
                  m_sizeCurveIncluded != s->included || seconds(now - m_sizeCurveTime) >= due)) {
        measureSizeCurve(*s, figures, figureLabels, m_run->config.ensemble.seed);
        m_sizeCurve = s->sizeCurve;
        m_sizeCurveStep = s->step;
        m_sizeCurveRows = figures.rows;
        m_sizeCurveIncluded = s->included;
        m_sizeCurveRun = m_run->runId;
        m_sizeCurveTime = Clock::now();
        m_sizeCurveSeconds = seconds(m_sizeCurveTime - now);
        m_sizeCurveCostOfLastBuild = m_sizeCurveSeconds;
    } else {
        s->sizeCurve = m_sizeCurve;
        s->sizeCurveStep = m_sizeCurveStep;
    }
    const auto t4 = Clock::now();
    if (qEnvironmentVariableIsSet("ENSEMBLE_UI_PROFILE")) {
        qDebug("snapshot: predict %.1f ms, grid stats %.1f ms, images %.1f ms, test %.1f ms",
               seconds(t1 - t0) * 1e3, seconds(t2 - t1) * 1e3, seconds(t3 - t2) * 1e3,
               seconds(t4 - t3) * 1e3);
    }
    return s;
}

const MemberPredictions& EngineWorker::measureStoppedFigures(Snapshot& s) {
    const Dataset& test = m_trainer->data().test;
    if (m_running || m_run->evalTest.rows >= test.rows) {
        return m_testPredictions;
    }
    if (m_fullTestRun != m_run->runId || m_fullTestStep != s.step) {
        m_fullTestPredictions = m_trainer->predictTest();
        m_fullTestStep = s.step;
        m_fullTestRun = m_run->runId;
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

void EngineWorker::buildRegression(Snapshot& s) {
    // Regression: no class statistics, no size curve of classification's kind (the report
    // has its own, cheap: O(K' N)).
    m_sizeCurveCostOfLastBuild = 0.0;
    if (m_run->hasGrid) {
        s.hasGrid = true;
        renderRegressionGrid(s, m_gridPredictions);
    }
    if (m_run->hasCurve) {
        measureRegressionCurve(s, m_curvePredictions);
    }
    measureRegressionTest(s, m_testPredictions);
}

void EngineWorker::publish() {
    if (!m_trainer || !m_dirty) {
        return;
    }
    if (m_mailbox->waiting()) {
        return;  // the GUI has not taken the last one: snapshotTaken() publishes later
    }
    const auto start = Clock::now();
    SnapshotPtr s = buildSnapshot();
    const double total = seconds(Clock::now() - start);
    m_profile.snapshots += total;
    // The pace of snapshots follows their usual cost; the size curve has a budget of its own.
    const double cost = std::max(0.0, total - m_sizeCurveCostOfLastBuild);
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
    if (const std::shared_ptr<const FirstConv> conv = firstConv()) {
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

std::shared_ptr<const FirstConv> EngineWorker::firstConv() {
    if (!m_trainer) {
        return nullptr;
    }
    const auto& layers = m_trainer->layout().architecture().layers();
    if (layers.empty() || layers.front().kind != LayerKind::Conv) {
        return nullptr;
    }
    if (!m_firstConv || m_firstConvStep != m_trainer->step()) {
        const std::vector<float> params = m_trainer->parameters();
        m_firstConv =
            std::make_shared<const FirstConv>(firstConvOf(m_trainer->layout(), params.data()));
        m_firstConvStep = m_trainer->step();
    }
    return m_firstConv;
}

void EngineWorker::exportTo(const QString& basePath, ExportFormat format) {
    if (!m_trainer) {
        Q_EMIT exportFinished(false, QStringLiteral("There is no trained ensemble to export yet."),
                              {});
        return;
    }
    const std::string base = QFile::encodeName(basePath).toStdString();
    // exportEnsemble picks the format from the extension (io/export_formats.h).
    const std::string weights = base + "." + exportFormatName(format);
    const std::string json = base + ".metrics.json";
    const std::string csv = base + ".metrics.csv";
    QStringList written;
    try {
        // The engine's report (the same as `ensemble-cli train --metrics`) of the ensemble as
        // the app shows it: the switched-on members only (the trainer holds the switches).
        const TrainerReport metrics = trainerReport(*m_trainer);
        // The config with the steps trained, so the CLI replay of it gives these weights.
        exportEnsemble(weights, *m_trainer, metrics.json,
                       {{"config", configAsTrained(*m_trainer).dump()}});
        written << QString::fromStdString(weights);
        writeFileAtomic(json, metrics.json.dump(2) + "\n");
        written << QString::fromStdString(json);
        writeFileAtomic(csv, metrics.regression ? regressionMembersCsv(*metrics.regression)
                                                : membersCsv(metrics.report));
        written << QString::fromStdString(csv);
    } catch (const std::exception& e) {
        // Each file is written atomically; remove the complete ones of this export too, so a
        // failed export leaves nothing of itself behind.
        for (const QString& f : written) {
            QFile::remove(f);
        }
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
    // The Curves view's points as the checkpoint's curves (measured on the rows the window
    // evaluates live), so a reopened checkpoint shows them again.
    std::vector<Evaluation> curves;
    curves.reserve(m_history.size());
    for (const auto& point : m_history) {
        Evaluation e;
        e.step = point->step;
        e.epoch = point->epoch;
        e.ensembleTrain = point->ensembleTrain;
        e.ensembleTest = point->ensembleTest;
        for (std::size_t k = 0; k < point->memberTrain.size(); ++k) {
            MemberEvaluation m;
            m.train = point->memberTrain[k];
            m.test = k < point->memberTest.size() ? point->memberTest[k] : SplitMetrics{};
            m.diverged = !std::isfinite(m.train.loss);
            e.members.push_back(m);
        }
        curves.push_back(std::move(e));
    }
    try {
        // The stored length is where this run ends (Stop after, moved by Continue), so the CLI
        // and a reopened window continue to the same step; until paused has no end: the
        // steps trained.
        writeCheckpoint(QFile::encodeName(path).toStdString(), *m_trainer, curves,
                        trainerReport(*m_trainer).json, m_untilPaused ? m_trainer->step() : -1);
    } catch (const std::exception& e) {
        Q_EMIT checkpointSaved(false, QString::fromStdString(e.what()), path, m_trainer->step());
        return;
    }
    Q_EMIT checkpointSaved(true, {}, path, m_trainer->step());
}

}  // namespace ensemble::ui
