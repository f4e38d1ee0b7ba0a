#pragma once

// An active-learning study: ActiveLearner's rounds for an acquisition function and a seed, and
// what is read off several seeds of it: the mean curve over the seeds and the labels it needs
// to reach a test accuracy. `ensemble-cli active` (acquisition functions x seeds side by side)
// and the reproduction gal-2017-active (a study per function and seed, engine/reproduce/) run
// these same functions, so the same config and seed acquire the same rows and read the same
// "labels to reach" in both.

#include <atomic>
#include <cstdint>
#include <functional>
#include <vector>

#include "active/active_learning.h"
#include "config/config.h"

namespace ensemble {

// Mean and sample standard deviation (n - 1; 0 for one value) over the seeds; NaN for none.
struct MeanStd {
    double mean = 0.0;
    double std = 0.0;
};
MeanStd meanStd(const std::vector<double>& values);

// One point of an acquisition function's learning curve: the mean over the seeds of one round.
struct ActiveCurvePoint {
    int64_t labels = 0;
    MeanStd accuracy;
    MeanStd nll;
    MeanStd ece;
};

// The mean curve over the seeds' rounds (one list of rounds per seed): the rounds every seed has
// finished (an interrupted study may have one seed a round ahead); the labels are the first
// seed's (every seed labels as many rows a round).
std::vector<ActiveCurvePoint> activeMeanCurve(
    const std::vector<const std::vector<ActiveRound>*>& seeds);

// Labels needed to reach `accuracy` on the mean curve: the labels of its first point whose mean
// accuracy is >= `accuracy` (labelsToReach over the curve); -1 when none is (not reached within
// the study's budget).
int64_t labelsToReachMean(const std::vector<ActiveCurvePoint>& curve, double accuracy);

// The rounds after the initial one that a study of `requested` rounds runs on a train split of
// `trainRows` rows: `requested`, cut to the rounds the pool lasts (`*cut` says whether it was).
int64_t activeStudyRounds(const ActiveConfig& active, int64_t trainRows, int64_t requested,
                          bool* cut = nullptr);

// The config of seed number `s` (0-based) of a study of `config`: ensemble.seed + s, in the
// parsed config and in its JSON.
ExperimentConfig activeSeedConfig(const ExperimentConfig& config, int64_t s);

// Round `r` of a study for one learner: after the first round (r > 0) the pool is scored and
// the picks acquired, then the ensemble is trained on the labelled rows (ActiveLearner::
// trainRound, with `onStep` and `cancel`). False when cancelled.
bool activeStudyRound(ActiveLearner& learner, int64_t r,
                      const std::function<void(int64_t, int64_t)>& onStep = {},
                      const std::atomic<bool>* cancel = nullptr);

// A whole study of one learner: rounds 0..`rounds` by activeStudyRound; `onStep(r, done,
// total)` within round r. False when cancelled (the rounds finished stay in the learner).
bool runActiveStudy(ActiveLearner& learner, int64_t rounds,
                    const std::function<void(int64_t, int64_t, int64_t)>& onStep = {},
                    const std::atomic<bool>* cancel = nullptr);

}  // namespace ensemble
