#pragma once

// Reliability diagrams, ECE and MCE: of any predicted probabilities with outcomes, and of an
// ensemble's per-point statistics (top-label, or the positive class of two).

#include <cstdint>
#include <vector>

#include "metrics/point_statistics.h"

namespace ensemble {

// Equal-width bins of the reliability diagram and ECE (Guo et al. 2017, "On Calibration of
// Modern Neural Networks", ICML).
constexpr int kCalibrationBins = 15;

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

// Top-label reliability of labelled statistics: confidence max_c p_c, outcome "correct".
Calibration topLabelCalibration(const PointStatistics& s, int bins = kCalibrationBins);
// Positive-class reliability for two classes: predicted p(class 1), outcome label == 1.
// Precondition: s.classes == 2 and labels.size() == s.rows.
Calibration positiveClassCalibration(const PointStatistics& s, const std::vector<int32_t>& labels,
                                     int bins = kCalibrationBins);

}  // namespace ensemble
