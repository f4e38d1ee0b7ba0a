#pragma once

// Out-of-distribution detection from the ensemble's uncertainty (Hendrycks & Gimpel 2017,
// "A Baseline for Detecting Misclassified and Out-of-Distribution Examples", ICLR: maximum
// softmax probability, AUROC, FPR at 95% TPR; Lakshminarayanan et al. 2017 for entropy and
// mutual information of ensembles).
//
// Convention, everywhere: the positive class is "in-distribution", and every score is
// oriented so that higher means more in-distribution: max-probability as is, entropy and
// mutual information negated.

#include <cstdint>
#include <vector>

#include "metrics/point_statistics.h"

namespace ensemble {

// Area under the ROC curve of scores where higher means positive: P(s+ > s-) + P(s+ = s-)/2
// (Mann-Whitney U with mid-ranks). 1 for perfectly separated scores, 0.5 for identical ones.
// NaN when either set is empty.
double auroc(const std::vector<double>& positive, const std::vector<double>& negative);

// False-positive rate at the largest threshold t whose true-positive rate
// |{s+ >= t}| / n+ is at least `tpr` (0.95 by default): |{s- >= t}| / n-. NaN when either set
// is empty.
double fprAtTpr(const std::vector<double>& positive, const std::vector<double>& negative,
                double tpr = 0.95);

// Area under the precision-recall curve of the positives (average precision): with the
// distinct thresholds t_1 > t_2 > ... of the pooled scores, sum_j (R_j - R_{j-1}) P_j, where
// R_j and P_j are the recall and precision of {s >= t_j} (tied scores enter together). The
// positive class is in-distribution, as everywhere here. NaN when either set is empty.
double aupr(const std::vector<double>& positive, const std::vector<double>& negative);

struct OodScore {
    double auroc = 0.0;
    double fprAt95Tpr = 0.0;
    double aupr = 0.0;
};

// Equal-width histogram counts of entropy over [0, log C] (values above go to the last bin).
struct EntropyHistogram {
    std::vector<double> edges;  // bins + 1 values, 0 .. log C
    std::vector<int64_t> in;
    std::vector<int64_t> out;
};

struct OodMetrics {
    int64_t inRows = 0;
    int64_t outRows = 0;
    OodScore maxProbability;     // score = max_c p_c
    OodScore entropy;            // score = -H[p]
    OodScore mutualInformation;  // score = -(H[p] - mean_k H[P_k])
    EntropyHistogram entropyHistogram;
};

constexpr int kEntropyHistogramBins = 30;

// Precondition: both statistics come from the same ensemble (same classes).
OodMetrics oodMetrics(const PointStatistics& in, const PointStatistics& out,
                      int histogramBins = kEntropyHistogramBins);

}  // namespace ensemble
