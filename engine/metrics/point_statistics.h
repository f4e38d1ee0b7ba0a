#pragma once

// The ensemble's per-point statistics (its mean probabilities, entropy, mutual information,
// disagreement) over the included members: what every classification figure reads.
// Everything works on member log-probabilities (MemberPredictions, logProbs[(k*rows + i)*C + c])
// and defines the ensemble as the mean of the included members' probabilities,
// p(x) = 1/K' sum_k P_k(x) (average probabilities, never logits), with K' the number of
// included members. Ties in an argmax go to the lowest class index everywhere (members and
// ensemble alike). Natural logarithms.
//
// Threading: per-point loops run under OpenMP; every reduction over points is then done
// serially in point order, so results do not depend on the thread count.

#include <cstdint>
#include <vector>

#include "math/uncertainty.h"
#include "metrics/types.h"

namespace ensemble {

// Per-point quantities of the ensemble (the included members) for a set of points. Entropies
// in nats (Depeweg et al. 2018, "Decomposition of Uncertainty in Bayesian Deep Learning";
// Lakshminarayanan et al. 2017, "Simple and Scalable Predictive Uncertainty Estimation
// using Deep Ensembles"):
//   total        H[p] = -sum_c p_c log p_c
//   aleatoric    mean_k H[P_k]  (expected entropy)
//   epistemic    H[p] - mean_k H[P_k], the mutual information between the prediction and the
//                member index, clamped at 0 against rounding
//   disagreement 1 - (members whose argmax is the ensemble's class) / K'
//   predictedStd standard deviation over members (population, divide by K') of P_k(yhat|x),
//                yhat the ensemble's class
// The label-dependent vectors (nll, brier, correct) are filled only when labels are given:
// nll_i = -log p(y_i|x_i) in the stable form -logsumexp_k log P_k(y_i|x_i) + log K';
// brier_i = sum_c (p_c - [c == y_i])^2.
struct PointStatistics {
    int64_t rows = 0;
    int classes = 0;
    int members = 0;                    // K', the members averaged
    std::vector<double> probabilities;  // p, rows x classes
    std::vector<int32_t> predicted;     // argmax_c p_c
    std::vector<double> confidence;     // max_c p_c
    std::vector<double> total;
    std::vector<double> aleatoric;
    std::vector<double> epistemic;
    std::vector<double> disagreement;
    std::vector<double> predictedStd;
    std::vector<double> nll;       // labelled only
    std::vector<double> brier;     // labelled only
    std::vector<uint8_t> correct;  // labelled only
};

// Means over the points of the per-point quantities (0 for no points).
struct UncertaintySummary {
    double entropyMean = 0.0;
    double aleatoricMean = 0.0;
    double epistemicMean = 0.0;
    double disagreementMean = 0.0;
    double predictedStdMean = 0.0;
};

// Indices of the members with include[k] != 0, ascending; every member when `include` is
// empty. Precondition: include is empty or has p.members entries.
std::vector<int> includedMembers(const MemberPredictions& p, const std::vector<uint8_t>& include);

// The ensemble's per-point statistics. `labels` may be empty (unlabelled points: no nll,
// brier, correct). Preconditions: at least one included member; labels empty or p.rows long
// with values in [0, classes).
PointStatistics pointStatistics(const MemberPredictions& p, const std::vector<uint8_t>& include,
                                const std::vector<int32_t>& labels = {});
// The same for the members in `members` (indices, in summation order).
PointStatistics pointStatistics(const MemberPredictions& p, const std::vector<int>& members,
                                const std::vector<int32_t>& labels);

// Unlabelled statistics from per-point measures computed elsewhere (a backend's
// Backend::predictUncertainty over `members` members): `probabilities` is rows x classes.
PointStatistics pointStatisticsFrom(const std::vector<PointUncertainty>& points,
                                    std::vector<double> probabilities, int classes, int members);

UncertaintySummary summarizeUncertainty(const PointStatistics& s);

}  // namespace ensemble
