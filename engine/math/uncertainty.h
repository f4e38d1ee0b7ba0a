#pragma once

// The per-point uncertainty measures of an ensemble, defined once for host and device: the
// metrics (engine/metrics) compute them on the CPU, the CUDA backend's grid prediction in a
// kernel, so the CPU tests check the formulas the GPU runs.
//
// For the averaged members u < K' with probabilities P_u = exp(log P_u) and the ensemble
// p = mean_u P_u: total = H[p], aleatoric = mean_u H[P_u], epistemic = total - aleatoric
// clamped at 0 (the mutual information), disagreement = 1 - (members whose first argmax is
// the ensemble's class) / K', predictedStd = the population standard deviation over members of
// P_u(predicted). 0 log 0 counts as 0. Everything is accumulated in double, in member then
// class order, so the result does not depend on how points are spread over threads.

#include "math/hd.h"

namespace ensemble {

struct PointUncertainty {
    int predicted = 0;          // first argmax_c p_c
    double confidence = 0.0;    // p_predicted
    double total = 0.0;         // H[p]
    double aleatoric = 0.0;     // mean_u H[P_u]
    double epistemic = 0.0;     // max(0, total - aleatoric)
    double disagreement = 0.0;  // 1 - share of members voting `predicted`
    double predictedStd = 0.0;  // std over members of P_u(predicted)
};

// First index of the maximum of value(0..n).
template <typename ValueAt>
ENSEMBLE_HD inline int firstArgmax(const ValueAt& value, int n) {
    int best = 0;
    for (int c = 1; c < n; ++c) {
        if (value(c) > value(best)) {
            best = c;
        }
    }
    return best;
}

// The measures of one point over `members` (>= 1) members and `classes` classes.
// - logProb(u, c): log P_u(c) (a float or double).
// - keepProb(u, c, p): receives p = exp(log P_u(c)) in double as the first pass makes it, to
//   store it (host) or ignore it (device).
// - probAgain(u, c): that same p again, for the second pass (from storage, or recomputed).
// - prob: `classes` doubles of scratch; on return the ensemble's probabilities p.
template <typename LogProbAt, typename KeepProb, typename ProbAgain>
ENSEMBLE_HD inline PointUncertainty pointUncertainty(int members, int classes,
                                                     const LogProbAt& logProb,
                                                     const KeepProb& keepProb,
                                                     const ProbAgain& probAgain, double* prob) {
    for (int c = 0; c < classes; ++c) {
        prob[c] = 0.0;
    }
    double aleatoric = 0.0;
    for (int u = 0; u < members; ++u) {
        double h = 0.0;
        for (int c = 0; c < classes; ++c) {
            const double lp = logProb(u, c);
            const double pr = hd::exp(lp);
            keepProb(u, c, pr);
            prob[c] += pr;
            if (pr > 0.0) {
                h -= pr * lp;
            }
        }
        aleatoric += h;
    }
    const double k = static_cast<double>(members);
    for (int c = 0; c < classes; ++c) {
        prob[c] /= k;
    }
    aleatoric /= k;

    PointUncertainty s;
    s.predicted = firstArgmax([prob](int c) { return prob[c]; }, classes);
    s.confidence = prob[s.predicted];
    for (int c = 0; c < classes; ++c) {
        if (prob[c] > 0.0) {
            s.total -= prob[c] * hd::log(prob[c]);
        }
    }
    s.aleatoric = aleatoric;
    s.epistemic = s.total - aleatoric > 0.0 ? s.total - aleatoric : 0.0;

    int votes = 0;
    double var = 0.0;
    for (int u = 0; u < members; ++u) {
        const int vote = firstArgmax([&logProb, u](int c) { return logProb(u, c); }, classes);
        votes += vote == s.predicted ? 1 : 0;
        const double d = probAgain(u, s.predicted) - s.confidence;
        var += d * d;
    }
    s.disagreement = 1.0 - static_cast<double>(votes) / k;
    s.predictedStd = hd::sqrt(var / k);
    return s;
}

}  // namespace ensemble
