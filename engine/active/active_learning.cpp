// The active-learning loop (active_learning.h): the acquisition functions over member
// predictions, the balanced initial set, and ActiveLearner's rounds of train, score, acquire.
// It builds a Trainer per round, so it lives in engine_backends beside the backend registry.
// One file because the functions, the initial set and the rounds share the
// row bookkeeping (labelled, pool, subsets) that the tests check as a whole.
#include "active/active_learning.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <iterator>
#include <limits>
#include <numeric>
#include <stdexcept>
#include <utility>

#include "active/batch_bald.h"
#include "active/class_balance.h"
#include "core/errors.h"
#include "core/unreachable.h"
#include "math/philox.h"
#include "metrics/metrics.h"
#include "metrics/point_statistics.h"
#include "registry/registry.h"
#include "train/trainer.h"

namespace ensemble {

namespace {

using Clock = std::chrono::steady_clock;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// The draws of RngPurpose::Active, told apart by the counter's `sub` word.
enum class ActiveStream : uint32_t { Score = 0, PoolSubset = 1, Initial = 2 };

// Uniform in [0, 1) with 53 random bits.
double unitDouble(const Philox4x32& d) {
    const uint64_t bits = (static_cast<uint64_t>(d.v[0]) << 21) ^ (d.v[1] >> 11);
    return static_cast<double>(bits) * (1.0 / 9007199254740992.0);
}

std::size_t at(int64_t i) {
    return static_cast<std::size_t>(i);
}

// The run's split with the train split cut to `rows`; the normalisation stays the full train
// split's (pool-based: the unlabelled inputs are known), the test split stays whole.
DataSplit labelledSplit(const DataSplit& full, const std::vector<int64_t>& rows) {
    DataSplit s;
    s.name = full.name;
    s.classes = full.classes;
    s.regression = full.regression;
    s.isImage = full.isImage;
    s.imageWidth = full.imageWidth;
    s.imageHeight = full.imageHeight;
    s.train = selectRows(full.train, rows);
    s.test = full.test;
    s.normalization = full.normalization;
    return s;
}

// A JSON number, or NaN for null (what nlohmann writes for NaN).
double numberOrNaN(const nlohmann::json& v, const std::string& where) {
    if (v.is_null()) {
        return kNaN;
    }
    if (!v.is_number()) {
        throw DataError("active-learning state: " + where + " is not a number");
    }
    return v.get<double>();
}

std::vector<int64_t> rowList(const nlohmann::json& v, const std::string& where, int64_t rows) {
    if (!v.is_array()) {
        throw DataError("active-learning state: " + where + " is not a list of rows");
    }
    std::vector<int64_t> out;
    for (const nlohmann::json& r : v) {
        if (!r.is_number_integer() || r.get<int64_t>() < 0 || r.get<int64_t>() >= rows) {
            throw DataError("active-learning state: " + where + " holds " + r.dump() +
                            ", not a train row in [0, " + std::to_string(rows) + ")");
        }
        out.push_back(r.get<int64_t>());
    }
    return out;
}

std::vector<double> scoreList(const nlohmann::json& state, const char* key, std::size_t count,
                              const std::string& where) {
    std::vector<double> out(count, kNaN);
    if (!state.contains(key)) {
        return out;
    }
    const nlohmann::json& v = state[key];
    if (!v.is_array() || v.size() != count) {
        throw DataError("active-learning state: " + where + "." + key +
                        " is not a list of one score per acquired row");
    }
    for (std::size_t i = 0; i < count; ++i) {
        out[i] = numberOrNaN(v[i], where + "." + key);
    }
    return out;
}

nlohmann::json scoresJson(const std::vector<double>& scores) {
    nlohmann::json out = nlohmann::json::array();
    for (double s : scores) {
        out.push_back(std::isfinite(s) ? nlohmann::json(s) : nlohmann::json(nullptr));
    }
    return out;
}

}  // namespace

std::vector<double> acquisitionScores(Acquisition acquisition, const MemberPredictions& p,
                                      const std::vector<uint8_t>& include,
                                      const std::vector<int64_t>& rowIndex, uint64_t seed,
                                      int round) {
    const std::size_t n = at(p.rows);
    switch (acquisition) {
        case Acquisition::Random: {
            // A function of (seed, round, row) alone: the same row scores the same whichever
            // subset of the pool is scored with it.
            std::vector<double> out(rowIndex.size());
            for (std::size_t i = 0; i < rowIndex.size(); ++i) {
                out[i] =
                    unitDouble(philoxDraw(seed, RngPurpose::Active, static_cast<uint32_t>(round),
                                          static_cast<uint64_t>(rowIndex[i]),
                                          static_cast<uint32_t>(ActiveStream::Score)));
            }
            return out;
        }
        case Acquisition::Entropy:
        case Acquisition::Bald:
        case Acquisition::BatchBald:
        case Acquisition::Margin:
        case Acquisition::VariationRatios:
            break;
    }
    const std::vector<int> members = includedMembers(p, include);
    if (members.empty() || n == 0) {
        return std::vector<double>(n, kNaN);  // nothing to average: no preference (row order)
    }
    if (acquisition == Acquisition::VariationRatios) {
        // The members' votes (first argmax of each P_k, as everywhere in metrics/), then the
        // modal class of the votes (ties to the lowest class): 1 - its share of the votes.
        const int classes = p.classes;
        std::vector<double> out(n);
        std::vector<int> votes(static_cast<std::size_t>(classes));
        for (std::size_t i = 0; i < n; ++i) {
            std::fill(votes.begin(), votes.end(), 0);
            for (int k : members) {
                const float* lp =
                    p.logProbs.data() + (static_cast<std::size_t>(k) * n + i) * classes;
                ++votes[static_cast<std::size_t>(
                    firstArgmax([lp](int c) { return lp[c]; }, classes))];
            }
            const int modal = firstArgmax(
                [&votes](int c) { return votes[static_cast<std::size_t>(c)]; }, classes);
            out[i] = 1.0 - static_cast<double>(votes[static_cast<std::size_t>(modal)]) /
                               static_cast<double>(members.size());
        }
        return out;
    }
    // Entropy and BALD are the total and epistemic uncertainty of math/uncertainty.h, the
    // numbers the uncertainty heatmaps show (Houlsby et al. 2011; Gal et al. 2017).
    const PointStatistics s = pointStatistics(p, members, {});
    switch (acquisition) {
        case Acquisition::Entropy:
            return s.total;
        case Acquisition::Bald:
        case Acquisition::BatchBald:  // a row alone: I(y; w), the greedy batch's first gain
            return s.epistemic;
        case Acquisition::Margin: {
            std::vector<double> out(n);
            const std::size_t classes = static_cast<std::size_t>(s.classes);
            for (std::size_t i = 0; i < n; ++i) {
                double first = -1.0;
                double second = 0.0;
                for (std::size_t c = 0; c < classes; ++c) {
                    const double v = s.probabilities[i * classes + c];
                    if (v > first) {
                        second = std::max(first, 0.0);
                        first = v;
                    } else if (v > second) {
                        second = v;
                    }
                }
                out[i] = -(first - second);
            }
            return out;
        }
        case Acquisition::Random:
        case Acquisition::VariationRatios:
            break;
    }
    unreachableKind("Acquisition");
}

std::vector<int64_t> topScoring(const std::vector<double>& scores,
                                const std::vector<int64_t>& candidates, int count) {
    if (scores.size() != candidates.size()) {
        throw std::invalid_argument("topScoring: " + std::to_string(scores.size()) +
                                    " scores for " + std::to_string(candidates.size()) +
                                    " candidates");
    }
    std::vector<std::size_t> order(scores.size());
    std::iota(order.begin(), order.end(), std::size_t{0});
    const auto before = [&](std::size_t a, std::size_t b) {
        const bool nanA = std::isnan(scores[a]);
        const bool nanB = std::isnan(scores[b]);
        if (nanA != nanB) {
            return nanB;  // a number before NaN
        }
        if (!nanA && scores[a] != scores[b]) {
            return scores[a] > scores[b];
        }
        return candidates[a] < candidates[b];
    };
    const std::size_t k =
        static_cast<std::size_t>(std::clamp<int64_t>(count, 0, static_cast<int64_t>(order.size())));
    std::partial_sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(k), order.end(),
                      before);
    std::vector<int64_t> out(k);
    for (std::size_t i = 0; i < k; ++i) {
        out[i] = candidates[order[i]];
    }
    return out;
}

std::vector<int64_t> initialLabelledRows(const Dataset& train, int classes, int count,
                                         uint64_t seed) {
    if (count < 0 || count > train.rows || classes < 1 || train.y.size() != at(train.rows)) {
        throw std::invalid_argument("initialLabelledRows: " + std::to_string(count) +
                                    " rows of a labelled table of " + std::to_string(train.rows) +
                                    " rows and " + std::to_string(classes) + " classes");
    }
    std::vector<std::vector<int64_t>> byClass(static_cast<std::size_t>(classes));
    for (int64_t i = 0; i < train.rows; ++i) {
        const int32_t y = train.y[at(i)];
        if (y < 0 || y >= classes) {
            throw std::invalid_argument("initialLabelledRows: label " + std::to_string(y) +
                                        " outside [0, " + std::to_string(classes) + ")");
        }
        byClass[static_cast<std::size_t>(y)].push_back(i);
    }
    // Each class's rows in a Fisher-Yates order drawn from (seed, class, position).
    for (std::size_t c = 0; c < byClass.size(); ++c) {
        std::vector<int64_t>& rows = byClass[c];
        for (std::size_t i = rows.size(); i-- > 1;) {
            const Philox4x32 d = philoxDraw(seed, RngPurpose::Active, static_cast<uint32_t>(c), i,
                                            static_cast<uint32_t>(ActiveStream::Initial));
            const uint32_t j = uniformIndex(d.v[0], d.v[1], static_cast<uint32_t>(i + 1));
            std::swap(rows[i], rows[j]);
        }
    }
    // count / classes each, the remainder to the lowest classes; what a small class cannot give
    // goes round the others in class order.
    std::vector<int64_t> take(byClass.size());
    int64_t missing = count;
    for (std::size_t c = 0; c < byClass.size(); ++c) {
        const int64_t want = count / classes + (static_cast<int64_t>(c) < count % classes ? 1 : 0);
        take[c] = std::min<int64_t>(want, static_cast<int64_t>(byClass[c].size()));
        missing -= take[c];
    }
    while (missing > 0) {
        for (std::size_t c = 0; c < byClass.size() && missing > 0; ++c) {
            if (take[c] < static_cast<int64_t>(byClass[c].size())) {
                ++take[c];
                --missing;
            }
        }
    }
    std::vector<int64_t> out;
    out.reserve(at(count));
    for (std::size_t c = 0; c < byClass.size(); ++c) {
        out.insert(out.end(), byClass[c].begin(),
                   byClass[c].begin() + static_cast<std::ptrdiff_t>(take[c]));
    }
    std::sort(out.begin(), out.end());
    return out;
}

int64_t labelsToReach(const std::vector<ActiveRound>& rounds, double accuracy) {
    for (const ActiveRound& r : rounds) {
        if (r.accuracy >= accuracy) {
            return r.labels;
        }
    }
    return -1;
}

struct ActiveLearner::Impl {
    ExperimentConfig config;
    std::shared_ptr<const DataSplit> shared;
    Acquisition acquisition = Acquisition::Bald;
    std::vector<int64_t> initial;
    std::vector<int64_t> labelled;    // ascending
    std::vector<uint8_t> isLabelled;  // per train row
    std::vector<ActiveRound> rounds;  // rounds[r].acquired: labelled after round r
    std::unique_ptr<Trainer> trainer;
    std::string notice;

    const DataSplit& data() const { return *shared; }

    std::unique_ptr<Trainer> makeTrainer(const std::vector<int64_t>& rows) {
        // `auto` decides by the rounds' size (the batch and model, not the labelled count).
        BackendChoice choice = makeBackend(config, data());
        if (notice.empty()) {
            notice = choice.notice;
        }
        auto trainer = std::make_unique<Trainer>(
            config.activeRound(static_cast<int64_t>(rows.size())), labelledSplit(data(), rows),
            std::move(choice.backend), nullptr, std::move(choice.memberBackend));
        trainer->setBackendDecision(choice.decision);
        return trainer;
    }

    // The rows the last round trained on: the labelled ones less those acquired after it.
    std::vector<int64_t> lastTrainedRows() const {
        std::vector<int64_t> after = rounds.back().acquired;
        std::sort(after.begin(), after.end());
        std::vector<int64_t> out;
        std::set_difference(labelled.begin(), labelled.end(), after.begin(), after.end(),
                            std::back_inserter(out));
        return out;
    }

    void setLabelled(std::vector<int64_t> rows) {
        std::sort(rows.begin(), rows.end());
        labelled = std::move(rows);
        isLabelled.assign(at(data().train.rows), 0);
        for (int64_t r : labelled) {
            isLabelled[at(r)] = 1;
        }
    }
};

ActiveLearner::ActiveLearner(ExperimentConfig config, DataSplit data, Acquisition acquisition)
    : ActiveLearner(std::move(config), std::make_shared<const DataSplit>(std::move(data)),
                    acquisition) {}

ActiveLearner::ActiveLearner(ExperimentConfig config, std::shared_ptr<const DataSplit> shared,
                             Acquisition acquisition)
    : m_impl(std::make_unique<Impl>()) {
    Impl& m = *m_impl;
    if (shared == nullptr) {
        throw std::invalid_argument("ActiveLearner: no data");
    }
    const DataSplit& data = *shared;
    if (data.regression || data.classes < 1 || isRegression(config.model.likelihood)) {
        throw ConfigError("active", "active learning needs classification data; " + data.name +
                                        " is a regression dataset");
    }
    const int64_t n = data.train.rows;
    const ActiveConfig& a = config.active;
    if (a.initial > n) {
        throw ConfigError("active.initial", "expected at most the " + std::to_string(n) +
                                                " rows of the train split of " + data.name +
                                                ", got " + std::to_string(a.initial));
    }
    if (a.perRound > n) {
        throw ConfigError("active.per_round", "expected at most the " + std::to_string(n) +
                                                  " rows of the train split of " + data.name +
                                                  ", got " + std::to_string(a.perRound));
    }
    std::vector<int64_t> perClass(static_cast<std::size_t>(data.classes), 0);
    for (int32_t y : data.train.y) {
        if (y >= 0 && y < data.classes) {
            ++perClass[static_cast<std::size_t>(y)];
        }
    }
    for (std::size_t c = 0; c < perClass.size(); ++c) {
        if (perClass[c] == 0) {
            throw DataError("active learning: class " + std::to_string(c) +
                            " has no rows in the train split of " + data.name +
                            " (the initial set is balanced over the classes)");
        }
    }
    m.initial = initialLabelledRows(data.train, data.classes, a.initial, config.ensemble.seed);
    m.config = std::move(config);
    m.shared = std::move(shared);
    m.acquisition = acquisition;
    m.setLabelled(m.initial);
}

ActiveLearner::~ActiveLearner() = default;

const ExperimentConfig& ActiveLearner::config() const {
    return m_impl->config;
}

const DataSplit& ActiveLearner::data() const {
    return m_impl->data();
}

Acquisition ActiveLearner::acquisition() const {
    return m_impl->acquisition;
}

uint64_t ActiveLearner::seed() const {
    return m_impl->config.ensemble.seed;
}

const std::vector<int64_t>& ActiveLearner::initial() const {
    return m_impl->initial;
}

const std::vector<int64_t>& ActiveLearner::labelled() const {
    return m_impl->labelled;
}

std::vector<int64_t> ActiveLearner::pool() const {
    const Impl& m = *m_impl;
    std::vector<int64_t> out;
    out.reserve(at(m.data().train.rows) - m.labelled.size());
    for (int64_t i = 0; i < m.data().train.rows; ++i) {
        if (m.isLabelled[at(i)] == 0) {
            out.push_back(i);
        }
    }
    return out;
}

const std::vector<ActiveRound>& ActiveLearner::rounds() const {
    return m_impl->rounds;
}

int ActiveLearner::round() const {
    return static_cast<int>(m_impl->rounds.size());
}

Trainer* ActiveLearner::trainer() {
    return m_impl->trainer.get();
}

const std::string& ActiveLearner::backendNotice() const {
    return m_impl->notice;
}

bool ActiveLearner::trainRound(const std::function<void(int64_t, int64_t)>& onStep,
                               const std::atomic<bool>* cancel, double progressSeconds) {
    Impl& m = *m_impl;
    const auto cancelled = [cancel] { return cancel != nullptr && cancel->load(); };
    if (cancelled()) {
        return false;
    }
    std::unique_ptr<Trainer> next = m.makeTrainer(m.labelled);
    const int64_t steps = m.config.active.roundSteps(static_cast<int64_t>(m.labelled.size()),
                                                     m.config.training.batchSize);
    if (m.config.active.retrain == ActiveRetrain::Warm && m.trainer != nullptr) {
        // The same model on a larger train split: the state fits, and every batch after it is
        // a function of (seed, member, step, rows), so warm rounds are as reproducible.
        next->restoreTrainingState(m.trainer->trainingState());
    }
    const int64_t first = next->step();
    next->setTotalSteps(first + steps);
    // Chunks of about `progressSeconds` (at least one step): progress and cancel in between.
    const double chunkSeconds = std::max(progressSeconds, 1e-3);
    auto lastReport = Clock::now();
    while (!next->finished()) {
        if (cancelled()) {
            return false;
        }
        const double perStep = next->lastStepSeconds();
        const int64_t remaining = next->totalSteps() - next->step();
        const int64_t chunk =
            perStep > 0.0
                ? std::clamp<int64_t>(static_cast<int64_t>(chunkSeconds / perStep), 1, remaining)
                : 1;
        next->runSteps(chunk);
        const auto now = Clock::now();
        if (onStep && (std::chrono::duration<double>(now - lastReport).count() >= progressSeconds ||
                       next->finished())) {
            lastReport = now;
            onStep(next->step() - first, steps);
        }
    }
    next->applyDueChanges();

    ActiveRound r;
    r.labels = static_cast<int64_t>(m.labelled.size());
    r.steps = next->step() - first;
    r.classCounts = classCounts(m.data().train.y, m.labelled, m.data().classes);
    r.accuracy = r.nll = r.ece = kNaN;
    if (m.data().test.rows > 0) {
        const MemberPredictions p = next->predictTest();
        const ClassificationMetrics c =
            ensembleClassificationMetrics(p, m.data().test.y, next->included());
        r.accuracy = c.accuracy;
        r.nll = c.nll;
        r.ece = c.ece;
    }
    m.rounds.push_back(std::move(r));
    m.trainer = std::move(next);
    return true;
}

PoolScores ActiveLearner::scorePool() {
    Impl& m = *m_impl;
    if (m.trainer == nullptr) {
        throw std::logic_error("ActiveLearner::scorePool: no round has been trained");
    }
    const int round = static_cast<int>(m.rounds.size()) - 1;
    PoolScores out;
    out.rows = pool();
    const auto subset = static_cast<std::size_t>(m.config.active.poolSubset);
    if (subset > 0 && subset < out.rows.size()) {
        // The `subset` rows with the smallest Philox keys of (seed, round, row): a uniformly
        // random subset, redrawn each round, that does not depend on how the pool is stored.
        std::vector<std::pair<uint64_t, int64_t>> keyed(out.rows.size());
        for (std::size_t i = 0; i < out.rows.size(); ++i) {
            const Philox4x32 d =
                philoxDraw(seed(), RngPurpose::Active, static_cast<uint32_t>(round),
                           static_cast<uint64_t>(out.rows[i]),
                           static_cast<uint32_t>(ActiveStream::PoolSubset));
            keyed[i] = {(static_cast<uint64_t>(d.v[0]) << 32) | d.v[1], out.rows[i]};
        }
        std::nth_element(keyed.begin(), keyed.begin() + static_cast<std::ptrdiff_t>(subset),
                         keyed.end());
        out.rows.resize(subset);
        for (std::size_t i = 0; i < subset; ++i) {
            out.rows[i] = keyed[i].second;
        }
        std::sort(out.rows.begin(), out.rows.end());
    }
    if (out.rows.empty()) {
        return out;
    }
    MemberPredictions p;
    std::vector<uint8_t> include;
    const ActiveConfig& a = m.config.active;
    const int perClass = classCapPicks(a.classCap, a.perRound);
    if (m.acquisition != Acquisition::Random || perClass > 0) {
        // `random` needs no predictions (but the cap does); the others score the members'.
        const Dataset& train = m.data().train;
        const std::size_t features = static_cast<std::size_t>(train.features);
        std::vector<float> x(out.rows.size() * features);
        for (std::size_t i = 0; i < out.rows.size(); ++i) {
            const float* src = train.row(out.rows[i]);
            std::copy(src, src + features, x.begin() + static_cast<std::ptrdiff_t>(i * features));
        }
        p = m.trainer->predictRaw(x.data(), static_cast<int64_t>(out.rows.size()));
        include = m.trainer->included();
    }
    out.scores = acquisitionScores(m.acquisition, p, include, out.rows, seed(), round);
    const std::vector<int32_t> predicted =
        perClass > 0 ? predictedClasses(p, include) : std::vector<int32_t>{};
    if (m.acquisition == Acquisition::BatchBald) {
        BatchBaldOptions o;
        o.samples = a.batchBaldSamples;
        o.seed = seed();
        o.round = round;
        o.predicted = predicted;
        o.perClass = perClass;
        const BatchBaldResult b = batchBald(p, include, a.perRound, o);
        for (int64_t i : b.picks) {
            out.picks.push_back(out.rows[at(i)]);
        }
        out.pickScores = b.gains;
        out.joint = b.joint;
        return out;
    }
    out.picks = topScoringCapped(out.scores, out.rows, predicted, a.perRound, perClass);
    for (int64_t row : out.picks) {
        const auto it = std::lower_bound(out.rows.begin(), out.rows.end(), row);
        out.pickScores.push_back(out.scores[at(it - out.rows.begin())]);
    }
    return out;
}

void ActiveLearner::acquire(const std::vector<int64_t>& rows, const std::vector<double>& scores) {
    Impl& m = *m_impl;
    if (m.rounds.empty()) {
        throw std::logic_error("ActiveLearner::acquire: no round has been trained yet");
    }
    if (!scores.empty() && scores.size() != rows.size()) {
        throw std::invalid_argument("ActiveLearner::acquire: " + std::to_string(scores.size()) +
                                    " scores for " + std::to_string(rows.size()) + " rows");
    }
    std::vector<int64_t> sorted = rows;
    std::sort(sorted.begin(), sorted.end());
    for (std::size_t i = 0; i < sorted.size(); ++i) {
        const int64_t r = sorted[i];
        if (r < 0 || r >= m.data().train.rows) {
            throw std::invalid_argument("ActiveLearner::acquire: row " + std::to_string(r) +
                                        " is not a train row (0.." +
                                        std::to_string(m.data().train.rows - 1) + ")");
        }
        if (m.isLabelled[at(r)] != 0 || (i > 0 && sorted[i - 1] == r)) {
            throw std::invalid_argument("ActiveLearner::acquire: row " + std::to_string(r) +
                                        " is not in the pool (labelled already)");
        }
    }
    ActiveRound& last = m.rounds.back();
    for (std::size_t i = 0; i < rows.size(); ++i) {
        last.acquired.push_back(rows[i]);
        last.acquiredScores.push_back(scores.empty() ? kNaN : scores[i]);
        m.isLabelled[at(rows[i])] = 1;
    }
    std::vector<int64_t> merged;
    merged.reserve(m.labelled.size() + sorted.size());
    std::merge(m.labelled.begin(), m.labelled.end(), sorted.begin(), sorted.end(),
               std::back_inserter(merged));
    m.labelled = std::move(merged);
}

nlohmann::json ActiveLearner::toJson(bool withScores) const {
    const Impl& m = *m_impl;
    nlohmann::json rounds = nlohmann::json::array();
    for (std::size_t r = 0; r < m.rounds.size(); ++r) {
        const ActiveRound& round = m.rounds[r];
        // The report's reading: a round lists the rows that were labelled to reach it.
        static const ActiveRound kNone;
        const ActiveRound& before = r == 0 ? kNone : m.rounds[r - 1];
        nlohmann::json j = {{"labels", round.labels},
                            {"steps", round.steps},
                            {"accuracy", round.accuracy},
                            {"nll", round.nll},
                            {"ece", round.ece},
                            {"acquired", before.acquired},
                            {"class_counts", round.classCounts}};
        if (withScores) {
            j["scores"] = scoresJson(before.acquiredScores);
        }
        rounds.push_back(std::move(j));
    }
    nlohmann::json out = {{"seed", seed()}, {"initial", m.initial}, {"rounds", std::move(rounds)}};
    if (!m.rounds.empty() && !m.rounds.back().acquired.empty()) {
        out["pending"] = m.rounds.back().acquired;
        if (withScores) {
            out["pending_scores"] = scoresJson(m.rounds.back().acquiredScores);
        }
    }
    return out;
}

void ActiveLearner::restore(const nlohmann::json& state) {
    Impl& m = *m_impl;
    const int64_t n = m.data().train.rows;
    if (!state.is_object() || !state.contains("seed") || !state.contains("initial") ||
        !state.contains("rounds") || !state["rounds"].is_array()) {
        throw DataError(
            "active-learning state: expected an object with \"seed\", \"initial\" and "
            "\"rounds\"");
    }
    if (!state["seed"].is_number_unsigned() || state["seed"].get<uint64_t>() != seed()) {
        throw DataError("active-learning state: seed " + state["seed"].dump() +
                        ", but this run's ensemble.seed is " + std::to_string(seed()));
    }
    std::vector<int64_t> initial = rowList(state["initial"], "initial", n);
    std::vector<ActiveRound> rounds;
    std::vector<int64_t> all = initial;
    const nlohmann::json& list = state["rounds"];
    for (std::size_t r = 0; r < list.size(); ++r) {
        const std::string where = "rounds[" + std::to_string(r) + "]";
        const nlohmann::json& j = list[r];
        if (!j.is_object() || !j.contains("labels") || !j["labels"].is_number_integer() ||
            !j.contains("acquired")) {
            throw DataError("active-learning state: " + where +
                            " is not {\"labels\": N, ..., \"acquired\": [rows]}");
        }
        std::vector<int64_t> acquired = rowList(j["acquired"], where + ".acquired", n);
        if (r == 0 && !acquired.empty()) {
            throw DataError(
                "active-learning state: rounds[0] (the initial set's) lists acquired "
                "rows");
        }
        ActiveRound round;
        round.labels = j["labels"].get<int64_t>();
        if (j.contains("steps") && j["steps"].is_number_integer()) {
            round.steps = j["steps"].get<int64_t>();
        }
        round.accuracy = numberOrNaN(j.value("accuracy", nlohmann::json()), where + ".accuracy");
        round.nll = numberOrNaN(j.value("nll", nlohmann::json()), where + ".nll");
        round.ece = numberOrNaN(j.value("ece", nlohmann::json()), where + ".ece");
        if (r > 0) {
            rounds.back().acquiredScores = scoreList(j, "scores", acquired.size(), where);
            rounds.back().acquired = acquired;
        }
        all.insert(all.end(), acquired.begin(), acquired.end());
        round.classCounts = classCounts(m.data().train.y, all, m.data().classes);
        if (round.labels != static_cast<int64_t>(all.size())) {
            throw DataError("active-learning state: " + where + " trained on " +
                            std::to_string(round.labels) + " labels, but the initial set and " +
                            "the rows acquired up to it are " + std::to_string(all.size()));
        }
        rounds.push_back(std::move(round));
    }
    if (state.contains("pending")) {
        std::vector<int64_t> pending = rowList(state["pending"], "pending", n);
        if (rounds.empty() && !pending.empty()) {
            throw DataError("active-learning state: rows are pending before any round");
        }
        if (!pending.empty()) {
            rounds.back().acquiredScores =
                scoreList(state, "pending_scores", pending.size(), "state");
            rounds.back().acquired = pending;
            all.insert(all.end(), pending.begin(), pending.end());
        }
    }
    std::vector<int64_t> sorted = all;
    std::sort(sorted.begin(), sorted.end());
    const auto twice = std::adjacent_find(sorted.begin(), sorted.end());
    if (twice != sorted.end()) {
        throw DataError("active-learning state: row " + std::to_string(*twice) +
                        " is labelled twice");
    }
    m.initial = std::move(initial);
    std::sort(m.initial.begin(), m.initial.end());
    m.rounds = std::move(rounds);
    m.setLabelled(std::move(sorted));
    m.trainer.reset();
}

void ActiveLearner::restoreTrainer(const TrainingState& state) {
    Impl& m = *m_impl;
    if (m.rounds.empty()) {
        throw std::logic_error("ActiveLearner::restoreTrainer: no round was trained or restored");
    }
    std::unique_ptr<Trainer> trainer = m.makeTrainer(m.lastTrainedRows());
    trainer->restoreTrainingState(state);
    trainer->setTotalSteps(state.step);
    m.trainer = std::move(trainer);
}

}  // namespace ensemble
