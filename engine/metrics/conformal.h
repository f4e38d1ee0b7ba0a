#pragma once

// Which rows fit and which measure, split conformal prediction and selective prediction.
//
// Halves: every split of evaluated rows into a fitting half and a measuring half (the
// temperature fit's and the conformal calibration's) is one seeded Philox permutation of the
// rows (RngPurpose::Halves), the same for both, so the two fits see the same rows and a file's
// stored order (MNIST's, whose halves differ in difficulty) cannot bias either.
//
// Conformal (Angelopoulos & Bates 2021, "A Gentle Introduction to Conformal Prediction and
// Distribution-Free Uncertainty Quantification"): scores s(x, y) on n calibration rows set the
// threshold q = the ceil((n+1)(1-alpha))-th smallest score (+inf when that exceeds n); the set
// of x is every class whose score is <= q, which covers a new exchangeable row's label with
// probability in [1 - alpha, 1 - alpha + 1/(n+1)] (the upper bound without ties).
//   LAC  s = 1 - p_y; set {c : 1 - p_c <= q}.
//   APS  non-randomised: classes ranked by p descending (ties: lower index first); s = the mass
//        of the classes ranked up to and including y (the row's p renormalised to sum 1); the
//        set is {c : s_c <= q}, the classes in rank order while their cumulative mass stays
//        <= q (Romano et al. 2020 without the randomisation; exactly the classes whose score
//        passes, so both coverage bounds hold).
//   Regression: s = |y - mu| / sigma with the ensemble's predictive sigma; interval
//        mu +- q sigma.
//
// Selective prediction (Geifman & El-Yaniv 2017, "Selective Classification for Deep Neural
// Networks"): rows ranked by a confidence score (higher = kept first; ties: lower row index
// first), the risk at coverage m/n is the error rate of the first m; AURC = mean over
// m = 1..n of that risk (Geifman et al. 2019, "Bias-Reduced Uncertainty Estimation for Deep
// Neural Classifiers").

#include <cstdint>
#include <limits>
#include <vector>

#include "core/named_enum.h"
#include "metrics/types.h"

namespace ensemble {

// ---- halves ----------------------------------------------------------------------------------

struct RowHalves {
    uint64_t seed = 0;
    int64_t rows = 0;                  // the rows split
    std::vector<int64_t> calibration;  // fit (temperature, conformal threshold); ascending
    std::vector<int64_t> measure;      // measure; ascending
};

// Philox Fisher-Yates permutation of 0..rows-1 (RngPurpose::Halves, `seed`); its first
// llround(calibrationFraction * rows) entries calibrate, the rest measure; each half sorted.
// Deterministic in (rows, seed, fraction). Precondition: rows >= 0, 0 <= fraction <= 1.
RowHalves splitHalves(int64_t rows, uint64_t seed, double calibrationFraction = 0.5);

// Rows `rows` of every member, in that order. Precondition: each in [0, p.rows).
MemberPredictions selectPredictionRows(const MemberPredictions& p,
                                       const std::vector<int64_t>& rows);

template <typename T>
std::vector<T> selectValues(const std::vector<T>& values, const std::vector<int64_t>& rows) {
    std::vector<T> out;
    out.reserve(rows.size());
    for (int64_t r : rows) {
        out.push_back(values[static_cast<std::size_t>(r)]);
    }
    return out;
}

// ---- conformal classification ----------------------------------------------------------------

enum class ConformalScore { Lac, Aps };
inline constexpr std::size_t kConformalScoreCount = 2;

template <>
struct EnumNames<ConformalScore> {
    static constexpr EnumName<ConformalScore> table[] = {
        {ConformalScore::Lac, "lac", "LAC (1 - p of the label)"},
        {ConformalScore::Aps, "aps", "APS (cumulative mass up to the label)"},
    };
};
static_assert(tableMatchesEnum<ConformalScore>(kConformalScoreCount));

constexpr double kDefaultConformalAlpha = 0.1;

// The ceil((n+1)(1-alpha))-th smallest of `scores` (1-based); +inf when that rank exceeds n
// (too few rows for this alpha: every set is every class). Precondition: 0 < alpha < 1.
double conformalQuantile(std::vector<double> scores, double alpha);

// Score of label `y` for one row of probabilities (`classes` of them).
double conformalScore(ConformalScore score, const double* probabilities, int classes, int y);

// The set of one row under threshold q, as a membership flag per class.
std::vector<uint8_t> conformalSet(ConformalScore score, const double* probabilities, int classes,
                                  double threshold);

struct ConformalThreshold {
    ConformalScore score = ConformalScore::Lac;
    double alpha = kDefaultConformalAlpha;
    int64_t calibrationRows = 0;
    double threshold = std::numeric_limits<double>::infinity();
};

// Threshold from the calibration rows: `probabilities` rows x classes, `labels` rows long.
ConformalThreshold calibrateConformal(ConformalScore score,
                                      const std::vector<double>& probabilities, int classes,
                                      const std::vector<int32_t>& labels, double alpha);

struct ConformalSets {
    int64_t rows = 0;
    double coverage = 0.0;     // fraction of rows whose label is in their set (NaN: no rows)
    double setSizeMean = 0.0;  // NaN: no rows
    // Index s = 0..classes: rows whose set has s classes, and the coverage among them (NaN
    // where no row has that size).
    std::vector<int64_t> countBySize;
    std::vector<double> coverageBySize;
};

// The sets of the measuring rows under `threshold` and how well they cover `labels`.
ConformalSets conformalSets(const ConformalThreshold& threshold,
                            const std::vector<double>& probabilities, int classes,
                            const std::vector<int32_t>& labels);

// Both scores at one alpha: what `eval --alpha` reports ("conformal").
struct ConformalReport {
    double alpha = kDefaultConformalAlpha;
    uint64_t seed = 0;
    int64_t calibrationRows = 0;
    int64_t measureRows = 0;
    ConformalThreshold lacThreshold;
    ConformalThreshold apsThreshold;
    ConformalSets lac;
    ConformalSets aps;
};

// Calibrates on halves.calibration, measures on halves.measure. `probabilities` is
// halves.rows x classes (the ensemble's p), labels halves.rows long.
ConformalReport conformalReport(const std::vector<double>& probabilities, int classes,
                                const std::vector<int32_t>& labels, const RowHalves& halves,
                                double alpha);

// ---- conformal regression --------------------------------------------------------------------

struct ConformalIntervals {
    double alpha = kDefaultConformalAlpha;
    int64_t calibrationRows = 0;
    double threshold = std::numeric_limits<double>::infinity();  // q, in sigmas
    int64_t rows = 0;                                            // measured rows
    double coverage = 0.0;                                       // NaN: no rows
    double widthMean = 0.0;                                      // mean 2 q sigma (raw units)
};

// q from the calibration rows' |y - mu| / sigma (a sigma of 0 scores +inf unless y == mu).
double calibrateIntervals(const std::vector<double>& mean, const std::vector<double>& variance,
                          const std::vector<float>& targets, double alpha);
// Coverage and width of mu +- q sigma on the given rows (all vectors the same length).
ConformalIntervals measureIntervals(double threshold, double alpha, int64_t calibrationRows,
                                    const std::vector<double>& mean,
                                    const std::vector<double>& variance,
                                    const std::vector<float>& targets);

// ---- selective prediction --------------------------------------------------------------------

// The risk-coverage curve kept at `curvePoints` evenly spaced coverages for plots (the AURC
// and the accuracies use every row).
constexpr int kRiskCoverageCurvePoints = 101;

struct SelectiveCurve {
    int64_t rows = 0;
    double aurc = 0.0;             // NaN: no rows
    double accuracyAt90 = 0.0;     // of the ceil(0.90 n) most confident rows
    double accuracyAt95 = 0.0;     // of the ceil(0.95 n) most confident rows
    std::vector<double> coverage;  // curve: m/n at ~curvePoints values of m, ascending
    std::vector<double> risk;      // error rate of the first m
};

// `confidence`: higher = more confident (kept first); `correct`: 1 where the prediction is
// right. Precondition: equal lengths.
SelectiveCurve selectivePrediction(const std::vector<double>& confidence,
                                   const std::vector<uint8_t>& correct,
                                   int curvePoints = kRiskCoverageCurvePoints);

// Accuracy of the ceil(coverage * n) most confident rows (NaN: no rows).
double accuracyAtCoverage(const std::vector<double>& confidence,
                          const std::vector<uint8_t>& correct, double coverage);

// "selective" of `eval --alpha`: ranked by max-probability and by mutual information (lower MI
// kept first), on the measuring half.
struct SelectiveReport {
    int64_t rows = 0;
    SelectiveCurve maxProbability;
    SelectiveCurve mutualInformation;
};

}  // namespace ensemble
