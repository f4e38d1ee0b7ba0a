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

#include "config/active_config.h"
#include "config/config.h"
#include "core/named_enum.h"
#include "data/dataset.h"
#include "metrics/types.h"

namespace ensemble {

class Trainer;
struct TrainingState;

// Scores of `rows` points from member log-probabilities `p` (p.rows == rows) over the members
// with include[k] != 0 (empty: all). `random` draws from (seed, round, rowIndex[i]) so a row's
// score does not depend on which other rows are scored; the others ignore seed and round.
// `random` gives one score per rowIndex entry and does not read `p` (it may be empty); the
// others give one per p.rows and do not read rowIndex. NaN for every point when no member is
// included. `batchbald` scores a row alone: its BALD score, the first greedy step's gain (the
// batch itself is batchBald's, active/batch_bald.h).
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
    // The training steps this round ran (active.steps, or active.epochs over `labels` rows;
    // the report's "steps"); 0 for a round restored from a report written before it.
    int64_t steps = 0;
    double accuracy = 0.0;
    double nll = 0.0;
    double ece = 0.0;
    std::vector<int64_t> acquired;       // rows labelled after this round, in pick order
    std::vector<double> acquiredScores;  // their scores (NaN for rows a person picked)
    // The labelled set this round trained on, counted by true class (the report's
    // "class_counts").
    std::vector<int64_t> classCounts;
};

// The scored pool of the current round.
struct PoolScores {
    std::vector<int64_t> rows;   // the rows scored (the pool or its subset), ascending
    std::vector<double> scores;  // one per row
    // topScoring(scores, rows, per_round), under active.class_cap; batchbald: the greedy batch.
    std::vector<int64_t> picks;
    std::vector<double> pickScores;  // what each pick records: its score; batchbald: its gain
    std::vector<double> joint;       // batchbald: the joint information after each pick (nats)
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
    // The same over a split shared with other learners (the CLI runs acquisitions x seeds side
    // by side over one copy of the data).
    ActiveLearner(ExperimentConfig config, std::shared_ptr<const DataSplit> data,
                  Acquisition acquisition);
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

    // Trains the ensemble on the labelled rows (scratch or warm, the round's steps:
    // ActiveConfig::roundSteps of the labelled count, under ExperimentConfig::activeRound),
    // evaluates it on the test split and appends the round. `onStep(done, total)` is called about
    // every `progressSeconds` (total: the round's steps); returns false (no round appended, state
    // as before) when `cancel` is set.
    bool trainRound(const std::function<void(int64_t, int64_t)>& onStep = {},
                    const std::atomic<bool>* cancel = nullptr, double progressSeconds = 0.25);
    // Scores the pool (or this round's deterministic subset of active.pool_subset rows) with
    // the trained ensemble. Precondition: a round was trained.
    PoolScores scorePool();
    // Labels `rows` (pool rows; each at most once): recorded as the last round's `acquired`
    // with `scores` (NaN for a person's click; empty: all NaN). Throws std::invalid_argument for
    // a row that is not in the pool (or listed twice) and std::logic_error before the first
    // round; nothing changes when it throws.
    void acquire(const std::vector<int64_t>& rows, const std::vector<double>& scores);

    // The trainer of the last round (for the app's boundary and grid); null before the first.
    Trainer* trainer();

    // The notice of the backend choice (makeBackend: why `auto` fell back to the CPU), empty
    // when there was none or before the first round. Print it once.
    const std::string& backendNotice() const;

    // The state as JSON (the report's per-seed object: "seed", "initial", "rounds"), for the
    // report and the checkpoint's metadata; restore() brings it back (the labelled set and
    // rounds; the caller restores the trainer's weights with restoreTrainer()). The rounds are
    // written as the report reads: round r's "acquired" are the rows labelled since round r - 1
    // (the first round's: []), i.e. rounds()[r - 1].acquired. Rows acquired after the last
    // round trained (the app's picks not yet trained on) are "pending", a key present only
    // when there are some. `withScores` adds "scores" to each round (and "pending_scores"):
    // the acquired rows' scores, null for a person's pick; without them restore() sets NaN.
    nlohmann::json toJson(bool withScores = false) const;
    // Throws DataError naming the problem for a state that does not fit this learner's data
    // (another seed, a row out of range or listed twice, counts that do not add up).
    void restore(const nlohmann::json& state);
    // After restore(): the last round's trainer from its saved state (the checkpoint's
    // TrainingState), trained on the rows labelled at that round. Precondition: a round was
    // trained or restored. Throws what Trainer::restoreTrainingState throws for a state of
    // another shape.
    void restoreTrainer(const TrainingState& state);

  private:
    struct Impl;
    std::unique_ptr<Impl> m_impl;
};

// Labels needed to reach `accuracy` on the test split: the first round's labels whose accuracy
// is >= `accuracy`; -1 when never reached.
int64_t labelsToReach(const std::vector<ActiveRound>& rounds, double accuracy);

}  // namespace ensemble
