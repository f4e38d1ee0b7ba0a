#pragma once

// Pool-based active learning (Gal, Islam & Ghahramani 2017; Beluch et al. 2018): the ensemble
// is trained on a small labelled subset of the train split, scores the unlabelled rest (the
// pool) with an acquisition function, and the highest-scoring rows are labelled next. One loop,
// written once here, serves `ensemble-cli active` and the app's Active learning view, so the
// same config and seed acquire the same rows in both.
//
// Row indices are always indices into the train split of the run's DataSplit (0..N-1), the
// numbers the report's "initial" and "acquired" lists hold. Everything is deterministic in
// ensemble.seed and the data: the initial set, the pool subsets, `random`'s scores, the
// retraining (each round is a Trainer run, bit-reproducible as any run is).

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/named_enum.h"
#include "data/dataset.h"
#include "io/config.h"
#include "metrics/types.h"

namespace ensemble {

class Trainer;

// The acquisition functions, one row each (active.acquisition, --acquisition). Each scores a
// point from the per-member probabilities P_k(c|x) of the included members (the same
// MemberPredictions the uncertainty heatmaps read), p = mean_k P_k; higher means "label me
// first".
enum class Acquisition {
    Random,           // a Philox draw per (seed, round, row): uniform in [0, 1)
    Entropy,          // H[p] (nats)
    Bald,             // mutual information H[p] - mean_k H[P_k], clamped at 0
    VariationRatios,  // 1 - (votes for the modal class of the members' votes) / K
    Margin,           // -(p_(1) - p_(2)): the smaller the gap between the two largest, the higher
};
inline constexpr int kAcquisitionCount = 5;

template <>
struct EnumNames<Acquisition> {
    static constexpr EnumName<Acquisition> table[] = {
        {Acquisition::Random, "random", "Random"},
        {Acquisition::Entropy, "entropy", "Entropy"},
        {Acquisition::Bald, "bald", "BALD (mutual information)"},
        {Acquisition::VariationRatios, "variation_ratios", "Variation ratios"},
        {Acquisition::Margin, "margin", "Margin"},
    };
};

// How each round trains (active.retrain).
enum class ActiveRetrain {
    Scratch,  // re-initialise every member from the run's seeds, train active.steps steps
    Warm,     // continue from the last round's weights and optimizer state, active.steps more
};

template <>
struct EnumNames<ActiveRetrain> {
    static constexpr EnumName<ActiveRetrain> table[] = {
        {ActiveRetrain::Scratch, "scratch", "From scratch"},
        {ActiveRetrain::Warm, "warm", "Warm start"},
    };
};

// The `active` config section, parsed (ExperimentConfig::active).
struct ActiveConfig {
    int initial = 20;                            // active.initial: labelled rows at the start
    int perRound = 10;                           // active.per_round: rows acquired per round
    int64_t steps = 500;                         // active.steps: training steps per round
    ActiveRetrain retrain = ActiveRetrain::Scratch;
    int64_t poolSubset = 0;                      // active.pool_subset: 0 = score the whole pool
    Acquisition acquisition = Acquisition::Bald; // active.acquisition: the app's and default
    int rounds = 10;                             // active.rounds: rounds after the initial one
};

// Scores of `rows` points from member log-probabilities `p` (p.rows == rows) over the members
// with include[k] != 0 (empty: all). `random` draws from (seed, round, rowIndex[i]) so a row's
// score does not depend on which other rows are scored; the others ignore seed and round.
std::vector<double> acquisitionScores(Acquisition acquisition, const MemberPredictions& p,
                                      const std::vector<uint8_t>& include,
                                      const std::vector<int64_t>& rowIndex, uint64_t seed,
                                      int round);

// The `count` rows of `candidates` with the highest `scores` (scores[i] belongs to
// candidates[i]), highest first; equal scores go to the lower row index. NaN scores last.
std::vector<int64_t> topScoring(const std::vector<double>& scores,
                                const std::vector<int64_t>& candidates, int count);

// The initial labelled set: `count` rows of `train`, balanced over classes (count / classes
// per class, the remainder to the lowest classes; a class with too few rows gives what it has
// and the rest is filled from the others), each class's rows drawn by a Philox permutation of
// `seed`. Depends only on the seed and the data. Sorted ascending.
std::vector<int64_t> initialLabelledRows(const Dataset& train, int classes, int count,
                                         uint64_t seed);

// One round's record: the labelled-set size it trained on, the test figures of the ensemble
// trained on it, and the rows acquired after it (empty for the last round recorded).
struct ActiveRound {
    int64_t labels = 0;
    double accuracy = 0.0;
    double nll = 0.0;
    double ece = 0.0;
    std::vector<int64_t> acquired;       // rows labelled after this round, in pick order
    std::vector<double> acquiredScores;  // their scores (NaN for rows a person picked)
};

// The scored pool of the current round.
struct PoolScores {
    std::vector<int64_t> rows;   // the rows scored (the pool or its subset), ascending
    std::vector<double> scores;  // one per row
    std::vector<int64_t> picks;  // topScoring(scores, rows, per_round)
};

// The loop's state for one acquisition function and one seed: labelled rows, rounds, and a
// Trainer over the labelled rows. Owned by one thread at a time (the CLI's main, the app's
// engine thread).
class ActiveLearner {
  public:
    // `data` is the run's full split (the pool is its train split); `acquisition` overrides
    // config.active.acquisition. Throws ConfigError for regression data, an initial set or
    // per-round count larger than the train split, and DataError when a class has no rows.
    ActiveLearner(ExperimentConfig config, DataSplit data, Acquisition acquisition);
    ~ActiveLearner();

    const ExperimentConfig& config() const;
    const DataSplit& data() const;
    Acquisition acquisition() const;
    uint64_t seed() const;

    const std::vector<int64_t>& initial() const;
    const std::vector<int64_t>& labelled() const;  // ascending
    std::vector<int64_t> pool() const;             // the train rows not labelled, ascending
    const std::vector<ActiveRound>& rounds() const;
    int round() const;  // rounds trained so far

    // Trains the ensemble on the labelled rows (scratch or warm, active.steps steps), evaluates
    // it on the test split and appends the round. `onStep(done, total)` is called about every
    // `progressSeconds`; returns false (no round appended, state as before) when `cancel` is set.
    bool trainRound(const std::function<void(int64_t, int64_t)>& onStep = {},
                    const std::atomic<bool>* cancel = nullptr, double progressSeconds = 0.25);
    // Scores the pool (or this round's deterministic subset of active.pool_subset rows) with
    // the trained ensemble. Precondition: a round was trained.
    PoolScores scorePool();
    // Labels `rows` (pool rows; each at most once): recorded as the last round's `acquired`
    // with `scores` (NaN for a person's click). Throws std::invalid_argument for a row that is
    // not in the pool.
    void acquire(const std::vector<int64_t>& rows, const std::vector<double>& scores);

    // The trainer of the last round (for the app's boundary and grid); null before the first.
    Trainer* trainer();

    // The state as JSON (the report's per-seed object: "seed", "initial", "rounds"), for the
    // report and the checkpoint's metadata; restore() brings it back (the labelled set and
    // rounds; the caller restores the trainer's weights from the checkpoint).
    nlohmann::json toJson() const;
    void restore(const nlohmann::json& state);

  private:
    struct Impl;
    std::unique_ptr<Impl> m_impl;
};

// Labels needed to reach `accuracy` on the test split: the first round's labels whose accuracy
// is >= `accuracy`; -1 when never reached.
int64_t labelsToReach(const std::vector<ActiveRound>& rounds, double accuracy);

}  // namespace ensemble
