#pragma once

// The labelled set's classes: its class counts (the cold-start effect shows there first:
// uncertainty sampling from a weak model keeps picking the classes it confuses and starves the
// others) and class-balanced acquisition, the remedy of active.class_cap: no predicted class
// takes more than its share of a round's picks, by the ensemble's predicted labels (the true
// ones are unknown until acquired). A simple greedy cap in the spirit of Bengar et al. 2022
// ("Class-Balanced Active Learning for Image Classification", WACV), who add a class-balance
// term to the selection; theirs is an optimisation, this is not.

#include <cstdint>
#include <vector>

#include "metrics/types.h"

namespace ensemble {

// Rows of each class among `rows` (train-split indices into `labels`); labels outside
// [0, classes) are not counted.
std::vector<int64_t> classCounts(const std::vector<int32_t>& labels,
                                 const std::vector<int64_t>& rows, int classes);

// The most picks one predicted class may take of a round of `perRound`: floor(cap x perRound),
// at least 1; 0 (no cap) for cap >= 1.
int classCapPicks(double cap, int perRound);

// The ensemble's class of each row of p (argmax of the included members' mean probabilities,
// ties to the lower class; -1 for every row when no member is included).
std::vector<int32_t> predictedClasses(const MemberPredictions& p,
                                      const std::vector<uint8_t>& include);

// topScoring's `count` picks (highest first, ties to the lower row, NaN last) taking at most
// `perClass` rows of a predicted class (predicted[i] is candidates[i]'s); when the classes
// predicted cannot fill the round under the cap, the rest are the highest scores left.
// perClass 0: topScoring itself.
std::vector<int64_t> topScoringCapped(const std::vector<double>& scores,
                                      const std::vector<int64_t>& candidates,
                                      const std::vector<int32_t>& predicted, int count,
                                      int perClass);

}  // namespace ensemble
