#pragma once

// The classification figures of an ensemble's predictions: scores (accuracy, NLL, Brier, ECE,
// MCE) of the ensemble and of each member, the trainer's loss and accuracy, the Gibbs
// cross-entropy and diversity. The per-point statistics they read are point_statistics.h,
// the reliability diagrams calibration.h; out-of-bag figures are out_of_bag.h, the
// ensemble-size curve size_curve.h.
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

#include "metrics/calibration.h"
#include "metrics/point_statistics.h"
#include "metrics/types.h"

namespace ensemble {

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

}  // namespace ensemble
