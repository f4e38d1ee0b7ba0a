#pragma once

// Measurements of an ensemble's predictions: scores, calibration, per-point uncertainty,
// diversity, out-of-bag estimates and the ensemble-size curve. Everything works on member
// log-probabilities (MemberPredictions, logProbs[(k*rows + i)*C + c]) and defines the ensemble
// as the mean of the included members' probabilities, p(x) = 1/K' sum_k P_k(x) (average
// probabilities, never logits), with K' the number of included members. Ties in an argmax go
// to the lowest class index everywhere (members and ensemble alike). Natural logarithms.
//
// Threading: per-point loops run under OpenMP; every reduction over points is then done
// serially in point order, so results do not depend on the thread count.

#include <cstdint>
#include <vector>

#include "math/uncertainty.h"
#include "metrics/types.h"

namespace ensemble {

// Equal-width bins of the reliability diagram and ECE (Guo et al. 2017, "On Calibration of
// Modern Neural Networks", ICML).
constexpr int kCalibrationBins = 15;
// Random subsets per size of the ensemble-size curve.
constexpr int kSizeCurveSubsets = 20;

// Accuracy, NLL (mean, natural log), Brier score (mean over points of the squared error
// summed over classes, so in [0, 2]), ECE and MCE (top-label, kCalibrationBins bins).
struct ClassificationMetrics {
    int64_t rows = 0;
    double accuracy = 0.0;
    double nll = 0.0;
    double brier = 0.0;
    double ece = 0.0;
    double mce = 0.0;
};

// One bin (lower, upper] of a reliability diagram (the first bin also holds confidence 0).
// `confidence` is the mean predicted probability of the points in the bin, `accuracy` the
// fraction of them whose outcome is 1 (top-label: correct; positive class: label == 1). Both
// are NaN for an empty bin (count 0), which contributes nothing to ECE or MCE.
struct ReliabilityBin {
    double lower = 0.0;
    double upper = 0.0;
    int64_t count = 0;
    double confidence = 0.0;
    double accuracy = 0.0;
};

// ECE = sum_b (n_b / N) |acc_b - conf_b|; MCE = max over non-empty bins |acc_b - conf_b|
// (Naeini et al. 2015, "Obtaining Well Calibrated Probabilities Using Bayesian Binning").
// Both 0 when there are no points.
struct Calibration {
    int64_t rows = 0;
    double ece = 0.0;
    double mce = 0.0;
    std::vector<ReliabilityBin> bins;
};

// Bin index of `confidence` among `bins` equal-width bins (j/B, (j+1)/B] of [0, 1]; values
// <= 0 go to bin 0, values > 1 to the last bin. Precondition: bins >= 1, confidence not NaN.
int calibrationBin(double confidence, int bins);

// Reliability diagram of predicted probabilities `confidence[i]` of events with outcomes
// `outcome[i]` in {0, 1}. Precondition: equal sizes, bins >= 1.
Calibration calibrationFrom(const std::vector<double>& confidence,
                            const std::vector<uint8_t>& outcome, int bins = kCalibrationBins);

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

// Top-label reliability of labelled statistics: confidence max_c p_c, outcome "correct".
Calibration topLabelCalibration(const PointStatistics& s, int bins = kCalibrationBins);
// Positive-class reliability for two classes: predicted p(class 1), outcome label == 1.
// Precondition: s.classes == 2 and labels.size() == s.rows.
Calibration positiveClassCalibration(const PointStatistics& s, const std::vector<int32_t>& labels,
                                     int bins = kCalibrationBins);

// Accuracy, NLL, Brier, ECE, MCE of labelled statistics.
ClassificationMetrics classificationMetrics(const PointStatistics& s, int bins = kCalibrationBins);

// Member k alone (diverged members too: their numbers may be NaN or infinite).
ClassificationMetrics memberClassificationMetrics(const MemberPredictions& p,
                                                  const std::vector<int32_t>& labels, int k,
                                                  int bins = kCalibrationBins);
// The ensemble of the included members. NaN everywhere (rows set) when none is included.
ClassificationMetrics ensembleClassificationMetrics(const MemberPredictions& p,
                                                    const std::vector<int32_t>& labels,
                                                    const std::vector<uint8_t>& include,
                                                    int bins = kCalibrationBins);

// Loss and accuracy alone, in one pass over the rows and without the per-point vectors: what
// the trainer tracks at every evaluation. The same definitions and summation order as the
// nll and accuracy of ensembleClassificationMetrics and memberClassificationMetrics, so the
// numbers agree with the report's to the last bit. Ensemble: NLL_i = -(logsumexp_k
// log P_k(y_i|x_i) - log K') over the members with include[k] != 0, class = first argmax of
// the mean probabilities; NaN for both when no member is included or there are no rows.
// `include` empty means every member. Precondition: include empty or p.members long, labels
// p.rows long (std::invalid_argument else).
SplitMetrics ensembleMetrics(const MemberPredictions& p, const std::vector<int32_t>& labels,
                             const std::vector<uint8_t>& include);
// Member k alone: mean of -log P_k(y_i|x_i), class = first argmax of log P_k; 0 for no rows.
SplitMetrics memberMetrics(const MemberPredictions& p, const std::vector<int32_t>& labels, int k);
// Both for one split: the ensemble of `include` and every member (diverged ones too).
SplitEvaluation evaluateSplit(const MemberPredictions& p, const std::vector<int32_t>& labels,
                              const std::vector<uint8_t>& include);

// Gibbs cross-entropy: the mean over the included members of each member's NLL,
// 1/K' sum_k mean_i -log P_k(y_i|x_i). By Jensen it is >= the ensemble NLL; the gap is what
// averaging bought. NaN when no member is included or there are no rows.
double gibbsNll(const MemberPredictions& p, const std::vector<int32_t>& labels,
                const std::vector<uint8_t>& include);

// Diversity: mean over pairs k < l of included members of the fraction of points on which
// their predicted classes differ. Computed per point from the vote counts n_c as
// (K'^2 - sum_c n_c^2) / (K'(K'-1)), which is the same average. 0 with fewer than two
// members or no rows.
double diversity(const MemberPredictions& p, const std::vector<uint8_t>& include);

// Out-of-bag estimates (Breiman 1996, "Out-of-bag estimation") from the K x N bootstrap
// multiplicities of the train rows (`counts[k*N + i]`): member k's accuracy and NLL on the
// rows with counts == 0, and the ensemble's, where each row is predicted by the mean
// probabilities of the included members for which it is out of bag; rows out of bag for no
// included member are skipped and counted.
struct OobMember {
    int64_t rows = 0;       // rows out of bag for this member
    double accuracy = 0.0;  // NaN when rows == 0
    double nll = 0.0;       // NaN when rows == 0
};

struct OobMetrics {
    bool available = false;  // some row is out of bag for some member
    std::vector<OobMember> members;
    int64_t ensembleRows = 0;       // rows with at least one included out-of-bag member
    int64_t skippedRows = 0;        // rows out of bag for no included member
    double ensembleAccuracy = 0.0;  // NaN when ensembleRows == 0
    double ensembleNll = 0.0;       // NaN when ensembleRows == 0
};

// Preconditions: `train` holds the train rows in the order of `counts`; counts is empty (no
// bootstrap: nothing is out of bag) or train.members * train.rows long.
OobMetrics outOfBagMetrics(const MemberPredictions& train, const std::vector<int32_t>& labels,
                           const std::vector<int32_t>& counts, const std::vector<uint8_t>& include);

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
