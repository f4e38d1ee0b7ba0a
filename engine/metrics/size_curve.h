#pragma once

// The ensemble-size curve: the figures of the first m members and of random m-subsets, for
// every m, from one set of trained members.

#include <cstdint>
#include <vector>

#include "metrics/metrics.h"

namespace ensemble {

// Random subsets per size of the ensemble-size curve.
constexpr int kSizeCurveSubsets = 20;

// The ensemble-size curve, without retraining: for m = 1..K' the metrics of the first m
// included members (member order) and the mean and standard deviation (population) over
// `subsets` random subsets of size m. Random subsets are the prefixes of `subsets` random
// permutations of the included members (Fisher-Yates driven by Philox, RngPurpose::Subset,
// seeded by `seed`): each is a uniformly random m-subset; the subsets of one permutation are
// nested across m, which lets every permutation be evaluated incrementally in O(K' N C).
struct SizeCurvePoint {
    int members = 0;
    ClassificationMetrics first;
    ClassificationMetrics randomMean;
    ClassificationMetrics randomStd;
};

std::vector<SizeCurvePoint> ensembleSizeCurve(const MemberPredictions& p,
                                              const std::vector<int32_t>& labels,
                                              const std::vector<uint8_t>& include,
                                              int subsets = kSizeCurveSubsets, uint64_t seed = 0,
                                              int bins = kCalibrationBins);

// The m-th random subset's member order used by ensembleSizeCurve: permutation `index` of
// `members` (exposed for tests).
std::vector<int> randomMemberPermutation(const std::vector<int>& members, uint64_t seed, int index);

}  // namespace ensemble
