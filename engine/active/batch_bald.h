#pragma once

// BatchBALD (Kirsch, van Amersfoort & Gal 2019, "BatchBALD: Efficient and Diverse Batch
// Acquisition for Deep Bayesian Active Learning"): the batch of n pool rows whose labels carry
// the most joint information about the model,
//   I(y_1..y_n; w) = H(y_1..y_n) - E_w[H(y_1..y_n | w)],
// built greedily, one row at a time, each the row that raises the joint information most.
// The model samples w are the included members, equally weighted (K ensemble members, or
// mc_dropout's T fixed masks). Given w the labels are independent, so the second term is the
// sum of the rows' mean member entropies; the first needs the joint predictive
// p(y_1..y_n) = 1/K sum_k prod_i P_k(y_i|x_i) over C^n label configurations.
//
// Exact while the batch so far has at most `samples` (M) configurations (C^(n-1) <= M: each
// candidate then costs C^n x K, at most M x C x K); past that H(y_1..y_n) is estimated from M
// sampled configurations of the batch so far, as the paper does: configuration m is drawn from
// member m mod K (a stratified draw from the mixture), and
//   H ~= sum_k 1/K mean_{m of k} sum_c -(p(y^m, c) / p(y^m)) log p(y^m, c),
// an unbiased importance-weighted estimate. The draws are Philox draws of (seed, round, pick,
// m), so a seeded run is deterministic. I(y_1..y_n; w) <= log K: once the joint information
// nears log K, every further gain is about 0 and the greedy order is arbitrary (docs/active.md).

#include <cstdint>
#include <vector>

#include "metrics/types.h"

namespace ensemble {

struct BatchBaldOptions {
    int samples = 1000;  // M (raised to K): sampled configurations past the exact joint
    // The exact joint is used while the batch so far has at most this many configurations;
    // -1: `samples` (the rule above). 0 samples every step after the first (tests).
    int64_t exactLimit = -1;
    uint64_t seed = 0;  // the draws of the sampled configurations
    int round = 0;
    // Class-balanced acquisition (active.class_cap): `predicted` (one class per row of p, empty:
    // no cap) and at most `perClass` picks of a predicted class while another row can be taken.
    std::vector<int32_t> predicted;
    int perClass = 0;
};

// The greedy batch. picks: indices of p's rows, in pick order; joint[i]: the joint mutual
// information (nats) of the first i + 1 picks; gains[i] = joint[i] - joint[i - 1] (joint[0]
// for the first: the row's BALD score). sampled[i] != 0 where joint[i] is a sampled estimate.
// Ties go to the lower row. No included member: the first `count` rows, NaN information.
struct BatchBaldResult {
    std::vector<int64_t> picks;
    std::vector<double> joint;
    std::vector<double> gains;
    std::vector<uint8_t> sampled;
};

BatchBaldResult batchBald(const MemberPredictions& p, const std::vector<uint8_t>& include,
                          int count, const BatchBaldOptions& options = {});

// I(y_rows; w) of the rows `rows` of p (indices, each at most once) over the included members:
// exact or sampled by the rule above (the last row is the candidate, the others the batch).
double jointMutualInformation(const MemberPredictions& p, const std::vector<uint8_t>& include,
                              const std::vector<int64_t>& rows,
                              const BatchBaldOptions& options = {});

}  // namespace ensemble
