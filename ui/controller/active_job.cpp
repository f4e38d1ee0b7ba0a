#include "controller/active_job.h"

#include <QMetaObject>
#include <QTimer>

#include <algorithm>
#include <cmath>
#include <exception>
#include <limits>
#include <map>
#include <numeric>

#include "active/class_balance.h"
#include "controller/snapshot_builder.h"
#include "core/errors.h"
#include "core/named_enum.h"
#include "metrics/grid.h"
#include "render/contour.h"
#include "std_string.h"
#include "train/trainer.h"

namespace ensemble::ui {

namespace {

constexpr double kUnmeasured = std::numeric_limits<double>::quiet_NaN();

ActiveCurve curveOf(Acquisition acquisition, uint64_t seed,
                    const std::vector<ActiveRound>& rounds) {
    ActiveCurve c;
    c.acquisition = acquisition;
    c.seed = seed;
    for (const ActiveRound& r : rounds) {
        c.labels.push_back(r.labels);
        c.accuracy.push_back(r.accuracy);
    }
    return c;
}

// A train image as the view shows it: grey, 0 black, `pixelMax` white.
QImage imageOfRow(const DataSplit& data, int64_t row) {
    const float pixelMax =
        !data.normalization.std.empty() && data.normalization.std[0] > 0.0f
            ? data.normalization.std[0]  // images are normalised by their pixel range
            : 255.0f;
    QImage image(data.imageWidth, data.imageHeight, QImage::Format_Grayscale8);
    const float* x = data.train.row(row);
    for (int r = 0; r < data.imageHeight; ++r) {
        uchar* line = image.scanLine(r);
        for (int c = 0; c < data.imageWidth; ++c) {
            const float v = x[r * data.imageWidth + c] / pixelMax;
            line[c] = static_cast<uchar>(std::clamp(v, 0.0f, 1.0f) * 255.0f + 0.5f);
        }
    }
    return image;
}

// The earlier curves with `curve` in place of the one of its acquisition function.
void keepCurve(std::vector<ActiveCurve>& earlier, ActiveCurve curve) {
    if (curve.labels.empty()) {
        return;
    }
    earlier.erase(
        std::remove_if(earlier.begin(), earlier.end(),
                       [&](const ActiveCurve& c) { return c.acquisition == curve.acquisition; }),
        earlier.end());
    earlier.push_back(std::move(curve));
}

// The run's config with the loop's `active` section (the panel's, or a checkpoint's; null: the
// run's own). ConfigError naming the key for a value the schema refuses.
ExperimentConfig loopConfig(const RunInfo& run, const nlohmann::json& active) {
    if (active.is_null()) {
        return run.config;
    }
    nlohmann::json config = run.config.json;
    config["active"] = active;
    return parseConfig(config);
}

Acquisition acquisitionNamed(const nlohmann::json& name) {
    Acquisition a = Acquisition::Bald;
    if (!name.is_string() || !enumFromName(name.get<std::string>(), a)) {
        throw DataError("the checkpoint's metadata \"active\": \"acquisition\" is " + name.dump() +
                        ", expected one of " + namesText<Acquisition>());
    }
    return a;
}

}  // namespace

ActiveCurve ActiveState::curve() const {
    return curveOf(acquisition, seed, rounds);
}

std::vector<double> gridAcquisitionScores(Acquisition acquisition, const MemberPredictions& grid,
                                          const std::vector<uint8_t>& include, uint64_t seed,
                                          int round) {
    std::vector<int64_t> cells(static_cast<std::size_t>(grid.rows));
    std::iota(cells.begin(), cells.end(), int64_t{0});
    return acquisitionScores(acquisition, grid, include, cells, seed, round);
}

HeatImage acquisitionHeat(Acquisition acquisition, const std::vector<double>& scores, int size,
                          int classes) {
    const double logC = std::log(static_cast<double>(std::max(2, classes)));
    switch (acquisition) {
        case Acquisition::Entropy:
            return sequentialHeatImage(scores, size, 0.05 * logC);
        case Acquisition::Bald:
        case Acquisition::BatchBald:  // a point alone: its BALD score
            return sequentialHeatImage(scores, size, 0.01 * logC);
        case Acquisition::VariationRatios:
            return sequentialHeatImage(scores, size, 0.01);
        case Acquisition::Margin:  // -(p(1) - p(2)) in [-1, 0]
        case Acquisition::Random:
            return rangeHeatImage(scores, size);
    }
    return rangeHeatImage(scores, size);
}

nlohmann::json activeCheckpointJson(const ActiveLearner& learner,
                                    const std::vector<ActiveCurve>& earlier) {
    nlohmann::json curves = nlohmann::json::array();
    for (const ActiveCurve& c : earlier) {
        curves.push_back({{"acquisition", toString(c.acquisition)},
                          {"seed", c.seed},
                          {"labels", c.labels},
                          {"accuracy", c.accuracy}});
    }
    return {{"acquisition", toString(learner.acquisition())},
            {"config", learner.config().json.value("active", nlohmann::json::object())},
            {"state", learner.toJson(true)},
            {"earlier", curves}};
}

ActiveWorker::ActiveWorker() : m_nextRound(new QTimer(this)) {
    // A child, so it moves to the engine thread with the worker (and the controller stops it
    // there before the thread ends).
    m_nextRound->setSingleShot(true);
    connect(m_nextRound, &QTimer::timeout, this, [this] { playRound(); });
}

ActiveWorker::~ActiveWorker() {
    setEntry(nullptr);
}

void ActiveWorker::setEntry(std::unique_ptr<runs::RunRecorder> entry) {
    if (m_entry) {
        m_entry->finish(runs::RunState::Finished);
    }
    m_entry = std::move(entry);
}

void ActiveWorker::recordRound() {
    if (!m_entry || !m_learner || m_learner->rounds().empty()) {
        return;
    }
    // The names `ensemble-cli active` records, for this loop's one acquisition function.
    const ActiveRound& last = m_learner->rounds().back();
    const std::string name = toString(m_learner->acquisition());
    std::map<std::string, double> figures = {{name + ".labels", static_cast<double>(last.labels)}};
    if (std::isfinite(last.accuracy)) {
        figures[name + ".final_accuracy"] = last.accuracy;
    }
    m_entry->setFigures(figures);
}

void ActiveWorker::start(std::shared_ptr<const RunInfo> run, const DataSplit& data,
                         const nlohmann::json& active, Acquisition acquisition,
                         CancelToken cancel) {
    useCancel(std::move(cancel));
    m_playing.store(false, std::memory_order_release);
    stopWaiting();
    if (m_learner && m_run && run && m_run->runId == run->runId) {
        keepCurve(m_earlier,
                  curveOf(m_learner->acquisition(), m_learner->seed(), m_learner->rounds()));
    } else {
        m_earlier.clear();
    }
    m_learner.reset();
    m_scored = false;
    m_scores = PoolScores{};
    useRun(std::move(run), data);
    try {
        m_learner =
            std::make_unique<ActiveLearner>(loopConfig(*m_run, active), m_data, acquisition);
    } catch (const std::exception& e) {
        fail(str(e.what()));
        return;
    }
    trainAndPublish();
}

void ActiveWorker::restore(std::shared_ptr<const RunInfo> run, const DataSplit& data,
                           const nlohmann::json& active, CancelToken cancel) {
    useCancel(std::move(cancel));
    m_playing.store(false, std::memory_order_release);
    stopWaiting();
    m_learner.reset();
    m_scored = false;
    m_scores = PoolScores{};
    m_earlier.clear();
    useRun(std::move(run), data);
    try {
        if (!active.is_object() || !active.contains("state")) {
            throw DataError(
                "the checkpoint's metadata \"active\" is not an object with a \"state\"");
        }
        const Acquisition acquisition =
            acquisitionNamed(active.value("acquisition", nlohmann::json()));
        for (const nlohmann::json& c : active.value("earlier", nlohmann::json::array())) {
            ActiveCurve curve;
            curve.acquisition = acquisitionNamed(c.value("acquisition", nlohmann::json()));
            curve.seed = c.value("seed", uint64_t{0});
            curve.labels = c.at("labels").get<std::vector<int64_t>>();
            for (const nlohmann::json& a : c.at("accuracy")) {
                curve.accuracy.push_back(a.is_number() ? a.get<double>()
                                                       : kUnmeasured);  // NaN: null
            }
            m_earlier.push_back(std::move(curve));
        }
        m_learner = std::make_unique<ActiveLearner>(
            loopConfig(*m_run, active.value("config", nlohmann::json())), m_data, acquisition);
        const nlohmann::json& state = active.at("state");
        if (!replayLastRound(state)) {
            m_learner.reset();
            publish(tr("Restoring the loop was cancelled."));
            return;
        }
        if (!pendingRound()) {
            m_scores = m_learner->scorePool();
            m_scored = true;
        }
    } catch (const std::exception& e) {
        m_learner.reset();
        fail(tr("The checkpoint's active-learning state could not be restored: %1")
                 .arg(str(e.what())));
        return;
    }
    publish();
}

bool ActiveWorker::replayLastRound(const nlohmann::json& state) {
    // The rounds' weights are not stored: every round is a Trainer run from the run's seeds on
    // the rows labelled then, so training it again gives its weights bit for bit. From
    // scratch only the last round matters; warm starts continue each other, so every round is
    // trained again, acquiring what each acquired. Then the state as saved (scores, pending
    // rows) and the last round's trainer.
    const std::vector<nlohmann::json> rounds =
        state.value("rounds", nlohmann::json::array()).get<std::vector<nlohmann::json>>();
    if (rounds.empty()) {
        m_learner->restore(state);  // not even the initial round was trained
        return true;
    }
    const bool warm = m_learner->config().active.retrain == ActiveRetrain::Warm;
    const std::size_t first = warm ? 0 : rounds.size() - 1;
    nlohmann::json before = state;
    before.erase("pending");
    before.erase("pending_scores");
    before["rounds"] = std::vector<nlohmann::json>(
        rounds.begin(), rounds.begin() + static_cast<std::ptrdiff_t>(first));
    if (first > 0) {
        // The rows labelled to reach the last round wait for it.
        before["pending"] = rounds[first].value("acquired", nlohmann::json::array());
    }
    m_learner->restore(before);
    const auto progress = [this](int64_t done, int64_t total) { reportProgress(done, total); };
    for (std::size_t r = first; r < rounds.size(); ++r) {
        if (r > first) {
            m_learner->acquire(
                rounds[r].value("acquired", nlohmann::json::array()).get<std::vector<int64_t>>(),
                {});
        }
        if (!m_learner->trainRound(progress, m_cancel.get())) {
            return false;
        }
    }
    const TrainingState trained = m_learner->trainer()->trainingState();
    m_learner->restore(state);
    m_learner->restoreTrainer(trained);
    return true;
}

void ActiveWorker::useRun(std::shared_ptr<const RunInfo> run, const DataSplit& data) {
    if (!m_run || !run || m_run->runId != run->runId || !m_data) {
        // One copy of the run's data for all its loops (MNIST: some 200 MB).
        m_data = std::make_shared<const DataSplit>(data);
        m_gridPoints = run->hasGrid ? gridPoints(run->bounds, run->gridSize) : std::vector<float>{};
    }
    m_run = std::move(run);
}

void ActiveWorker::forgetRun(uint64_t runId) {
    if (m_run && m_run->runId != runId) {
        setEntry(nullptr);
        m_playing.store(false, std::memory_order_release);
        stopWaiting();
        m_learner.reset();
        m_data.reset();
        m_run.reset();
        m_earlier.clear();
        m_scored = false;
        m_scores = PoolScores{};
    }
}

nlohmann::json ActiveWorker::checkpointJson(uint64_t runId) const {
    if (!m_learner || !m_run || m_run->runId != runId) {
        return nullptr;
    }
    return activeCheckpointJson(*m_learner, m_earlier);
}

std::vector<int64_t> ActiveWorker::currentPicks() const {
    return m_scored ? m_scores.picks : std::vector<int64_t>{};
}

bool ActiveWorker::pendingRound() const {
    return m_learner &&
           (m_learner->rounds().empty() || !m_learner->rounds().back().acquired.empty());
}

void ActiveWorker::reportProgress(int64_t done, int64_t total) {
    if (m_progress.put({done, total})) {
        Q_EMIT progressPosted();
    }
}

void ActiveWorker::useCancel(CancelToken cancel) {
    m_cancel = cancel ? std::move(cancel) : std::make_shared<const std::atomic<bool>>(false);
}

void ActiveWorker::acquirePicks(CancelToken cancel) {
    useCancel(std::move(cancel));
    acquireAndTrain();
}

void ActiveWorker::acquireAndTrain(bool ofPlay) {
    if (!m_learner) {
        return;
    }
    if (!pendingRound()) {
        std::vector<int64_t> picks = currentPicks();
        const int64_t stopAt = m_stopAt.load(std::memory_order_acquire);
        if (ofPlay && stopAt > 0) {
            // The first picks (highest first) up to the labels Play stops at.
            const auto fit =
                std::max<int64_t>(0, stopAt - static_cast<int64_t>(m_learner->labelled().size()));
            if (static_cast<int64_t>(picks.size()) > fit) {
                picks.resize(static_cast<std::size_t>(fit));
            }
        }
        if (picks.empty()) {
            publish(tr("The pool is empty: every train row is labelled."));
            return;
        }
        // What each pick records (batchbald: its greedy gain); the picks are a prefix of the
        // scoring's.
        std::vector<double> scores(
            m_scores.pickScores.begin(),
            m_scores.pickScores.begin() + static_cast<std::ptrdiff_t>(picks.size()));
        try {
            m_learner->acquire(picks, scores);
        } catch (const std::exception& e) {
            fail(str(e.what()));
            return;
        }
    }
    trainAndPublish(ofPlay);
}

void ActiveWorker::label(int64_t row, CancelToken cancel) {
    useCancel(std::move(cancel));
    if (!m_learner) {
        return;
    }
    try {
        m_learner->acquire({row}, {kUnmeasured});
    } catch (const std::exception& e) {
        publish(str(e.what()), true);
        return;
    }
    trainAndPublish();
}

void ActiveWorker::play(CancelToken cancel) {
    // The rounds Play queues go on under the flag of the Play that started them: a Cancel
    // since then stops them.
    useCancel(std::move(cancel));
    if (m_playQueued) {
        return;  // the rounds go on already: their next call is queued
    }
    // The view waits for an answer to Play: a state, even when no round ran (paused or
    // cancelled before the first one began, or no loop).
    const uint64_t before = m_serial;
    playRound();
    if (m_serial == before) {
        publish();
    }
}

void ActiveWorker::playRound() {
    m_playQueued = false;
    // Pause is only a flag (requestPause, GUI thread): it can land during a round or between
    // two. Either way the last state published must say "not playing", and only one state
    // says so: a second would come after the view (or a test) saw the loop stopped.
    if (!m_learner || !m_playing.load(std::memory_order_acquire)) {
        if (m_publishedPlaying) {
            publish();  // paused between two rounds: the last state still said playing
        }
        return;
    }
    const int64_t stopAt = m_stopAt.load(std::memory_order_acquire);
    const auto labelled = static_cast<int64_t>(m_learner->labelled().size());
    if (!pendingRound() && stopAt > 0 && labelled >= stopAt) {
        m_playing.store(false, std::memory_order_release);
        publish(tr("Play stops at %1 labels and %2 are labelled: raise Stop at to play on.")
                    .arg(stopAt)
                    .arg(labelled));
        return;
    }
    if (!pendingRound() && currentPicks().empty()) {
        m_playing.store(false, std::memory_order_release);
        publish(tr("The pool is empty: every train row is labelled."));
        return;
    }
    acquireAndTrain(true);
    if (!m_playing.load(std::memory_order_acquire)) {
        if (m_publishedPlaying) {
            publish();  // paused after the round's state was published as playing
        }
        return;
    }
    // The next round after the pace's pause (a timer: the engine thread goes on meanwhile), or
    // as a queued call: either way the run's training chunks and every command queued meanwhile
    // (pause, a member switch, a checkpoint) run first.
    m_playQueued = true;
    const int pauseMs = m_pauseMs.load(std::memory_order_acquire);
    if (pauseMs > 0) {
        m_nextRound->start(pauseMs);
        return;
    }
    QMetaObject::invokeMethod(
        this, [this] { playRound(); }, Qt::QueuedConnection);
}

void ActiveWorker::setPace(int pauseMs, int64_t stopAt) {
    m_pauseMs.store(std::max(0, pauseMs), std::memory_order_release);
    m_stopAt.store(std::max<int64_t>(0, stopAt), std::memory_order_release);
}

bool ActiveWorker::waitingForNextRound() const {
    return m_nextRound->isActive();
}

void ActiveWorker::endWait() {
    if (!m_nextRound->isActive() || m_playing.load(std::memory_order_acquire)) {
        return;  // no wait, or Play again since the pause: the wait goes on
    }
    stopWaiting();
    if (m_publishedPlaying) {
        publish();  // the last state said playing: this one says stopped, once
    }
}

void ActiveWorker::stopWaiting() {
    if (m_nextRound->isActive()) {
        m_nextRound->stop();
        m_playQueued = false;  // the timer held Play's next round; a queued call is left alone
    }
}

void ActiveWorker::requestPlay() {
    m_playing.store(true, std::memory_order_release);
}

bool ActiveWorker::trainAndPublish(bool ofPlay) {
    m_scored = false;
    bool trained = false;
    try {
        trained = m_learner->trainRound(
            [this](int64_t done, int64_t total) { reportProgress(done, total); }, m_cancel.get());
        if (trained) {
            m_scores = m_learner->scorePool();
            m_scored = true;
        }
    } catch (const std::exception& e) {
        fail(str(e.what()));
        return false;
    }
    if (!trained) {
        m_playing.store(false, std::memory_order_release);
        publish(tr("Round cancelled: Retrain trains it on the labelled rows."));
        return false;
    }
    // Play's last round says so in its own state: no "playing" state, no wait, before it.
    QString message;
    if (ofPlay && m_playing.load(std::memory_order_acquire)) {
        const int64_t stopAt = m_stopAt.load(std::memory_order_acquire);
        const auto labelled = static_cast<int64_t>(m_learner->labelled().size());
        if (stopAt > 0 && labelled >= stopAt) {
            m_playing.store(false, std::memory_order_release);
            message = tr("Play stopped at %1 labels (Stop at).").arg(labelled);
        } else if (m_scores.picks.empty()) {
            m_playing.store(false, std::memory_order_release);
            message = tr("The pool is empty: every train row is labelled.");
        }
    }
    publish(message);
    return true;
}

void ActiveWorker::fail(const QString& message) {
    m_playing.store(false, std::memory_order_release);
    publish(message, true);
}

void ActiveWorker::publish(const QString& message, bool error) {
    recordRound();
    auto s = std::make_shared<ActiveState>();
    s->serial = ++m_serial;
    s->message = message;
    s->error = error;
    s->earlier = m_earlier;
    s->playing = m_playing.load(std::memory_order_acquire);
    m_publishedPlaying = s->playing;
    if (m_run) {
        s->runId = m_run->runId;
    }
    if (!m_learner) {
        Q_EMIT stateReady(std::move(s));
        return;
    }
    const ActiveLearner& l = *m_learner;
    s->acquisition = l.acquisition();
    s->config = l.config().active;
    s->seed = l.seed();
    s->labelled = l.labelled();
    s->pool = l.pool();
    s->rounds = l.rounds();
    s->classCounts = classCounts(l.data().train.y, s->labelled, l.data().classes);
    s->pending = pendingRound();
    if (m_scored) {
        s->scores = m_scores;
    }
    // What the last round learnt from, or what waits for the next one.
    const DataSplit& data = l.data();
    for (auto r = s->rounds.rbegin(); r != s->rounds.rend(); ++r) {
        if (r->acquired.empty()) {
            continue;
        }
        for (std::size_t i = 0; i < r->acquired.size(); ++i) {
            ActiveDigit d;
            d.row = r->acquired[i];
            d.label = data.train.y[static_cast<std::size_t>(d.row)];
            d.score = i < r->acquiredScores.size() ? r->acquiredScores[i] : kUnmeasured;
            if (data.isImage) {
                d.image = imageOfRow(data, d.row);
            }
            s->lastAcquired.push_back(std::move(d));
        }
        break;
    }
    Trainer* trainer = m_learner->trainer();
    if (m_run->hasGrid && trainer != nullptr && m_scored) {
        const int size = m_run->gridSize;
        const MemberPredictions grid =
            trainer->predictRaw(m_gridPoints.data(), static_cast<int64_t>(size) * size);
        const std::vector<uint8_t> include = trainer->included();
        s->hasGrid = true;
        s->gridScores = gridAcquisitionScores(l.acquisition(), grid, include, l.seed(), l.round());
        s->heat = acquisitionHeat(l.acquisition(), s->gridScores, size, data.classes);
        const GridEvaluation e = evaluateGrid(grid, m_run->bounds, size, include);
        if (e.ensemble.rows > 0) {
            s->contour =
                joinSegments(decisionBoundary(e.ensemble.probabilities.data(), size, data.classes));
        }
    }
    Q_EMIT stateReady(std::move(s));
}

}  // namespace ensemble::ui
