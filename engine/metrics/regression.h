#pragma once

// Measurements of a regression ensemble (model.likelihood gaussian or mse), in raw target
// units. The ensemble's predictive is the mixture of its members' Gaussians (Lakshminarayanan
// et al. 2017, "Simple and Scalable Predictive Uncertainty Estimation using Deep Ensembles"):
//   mu        = mean_k mu_k
//   sigma^2   = mean_k (sigma_k^2 + mu_k^2) - mu^2  =  aleatoric + epistemic
//   aleatoric = mean_k sigma_k^2
//   epistemic = var_k mu_k, the population variance (divided by K')
// An mse member has sigma_k^2 = 0, so an mse ensemble has only the epistemic part.
//
// Metrics of a predictive N(mu_i, sigma_i^2) against targets y_i (means over the points):
//   rmse, mae        of y - mu
//   nll              1/2 log(2 pi sigma^2) + (y - mu)^2 / (2 sigma^2), the constant included
//   coverage         fraction of y inside the central 50 / 90 / 95 % interval of N(mu, sigma^2)
//   calibration      Kuleshov et al. 2018 ("Accurate Uncertainties for Deep Learning Using
//                    Calibrated Regression"): for p = 0.05, 0.10, ..., 0.95 the fraction of
//                    points with F(y) <= p, F the CDF of N(mu, sigma^2); its mean absolute
//                    gap is the mean over p of |observed - p|
//   sharpness        mean sigma
// Where some sigma is 0 (an mse member, an mse ensemble of one) nll, coverage and calibration
// are undefined: NaN here, null in JSON.
//
// Threading: serial loops in point order, so results never depend on the thread count.

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "math/likelihood.h"
#include "metrics/types.h"

namespace ensemble {

// The levels p of the calibration curve: 0.05, 0.10, ..., 0.95.
constexpr int kRegressionCalibrationLevels = 19;
double regressionCalibrationLevel(int j);
// The central intervals whose coverage is reported.
constexpr std::array<double, 3> kCoverageLevels = {0.5, 0.9, 0.95};

// Every member's predictive in raw units: [k * rows + i]. Variance 0 for an mse head.
struct MemberGaussians {
    int members = 0;
    int64_t rows = 0;
    std::vector<double> mean;
    std::vector<double> variance;
};

// From a regression backend's outputs (MemberPredictions with classes = 2: [mu, sigma^2], or 1:
// [mu], in standardised units; Backend::predictLogProbs): mu * std + mean, sigma^2 * std^2.
MemberGaussians memberGaussians(const MemberPredictions& p, double targetMean, double targetStd);

// The mixture's per-point predictive.
struct RegressionPoints {
    int64_t rows = 0;
    int members = 0;  // K', the members mixed
    std::vector<double> mean;
    std::vector<double> variance;  // aleatoric + epistemic (clamped at 0 against rounding)
    std::vector<double> aleatoric;
    std::vector<double> epistemic;
};

// The mixture of `members` (indices, in summation order). Precondition: at least one.
RegressionPoints mixturePoints(const MemberGaussians& g, const std::vector<int>& members);

struct RegressionMetrics {
    int64_t rows = 0;
    double rmse = 0.0;
    double mae = 0.0;
    double nll = 0.0;                         // NaN where some sigma is 0
    std::array<double, 3> coverage{};         // per kCoverageLevels; NaN where some sigma is 0
    std::vector<double> calibrationObserved;  // kRegressionCalibrationLevels; NaN where sigma 0
    double calibrationGap = 0.0;              // NaN where some sigma is 0
    double sharpness = 0.0;                   // mean sigma
    bool probabilistic() const { return nll == nll; }
};

// Precondition: targets.size() == points.rows.
RegressionMetrics regressionMetrics(const RegressionPoints& points,
                                    const std::vector<float>& targets);

// NLL and RMSE of the first m included members, m = 1..K'.
struct RegressionSizePoint {
    int members = 0;
    double nll = 0.0;
    double rmse = 0.0;
};

struct RegressionReport {
    std::string split;
    Likelihood likelihood = Likelihood::Gaussian;
    std::vector<uint8_t> included;
    RegressionMetrics ensemble;
    double aleatoricStdMean = 0.0;  // mean over points of sqrt(aleatoric)
    double epistemicStdMean = 0.0;  // mean over points of sqrt(epistemic)
    std::vector<RegressionMetrics> members;
    std::vector<RegressionSizePoint> sizeCurve;
    RegressionPoints points;
};

// Every measurement above on one split. `include` empty: every member. Throws RuntimeError
// when no member is included, std::invalid_argument for inconsistent sizes.
RegressionReport evaluateRegression(const MemberPredictions& p, const std::vector<float>& targets,
                                    const std::vector<uint8_t>& include, double targetMean,
                                    double targetStd, const std::string& split = "test");

// The loss the trainer tracks for a regression head, per split (raw units): `loss` is the NLL
// above for gaussian members and ensembles, the mean squared error for mse ones; `rmse` is the
// RMSE; `accuracy` is NaN.
SplitEvaluation evaluateRegressionSplit(const MemberPredictions& p,
                                        const std::vector<float>& targets,
                                        const std::vector<uint8_t>& include, Likelihood likelihood,
                                        double targetMean, double targetStd);

// {"task": "regression", "likelihood", "split", "rows", "members_total", "members_included",
//  "definitions", "calibration_levels", "ensemble": {...}, "members": [...], "size_curve"};
// NaN numbers become null. docs/cli.md (report) documents every key.
nlohmann::json regressionReportJson(const RegressionReport& report);

// CSV texts: per point (row,target,mean,std,aleatoric_std,epistemic_std), per member
// (member,included,rmse,mae,nll,coverage_50,coverage_90,coverage_95,calibration_gap,
// sharpness, then the ensemble), the calibration curve (level, observed per member and
// ensemble) and the size curve (members,nll,rmse).
std::string regressionPointsCsv(const RegressionPoints& points, const std::vector<float>& targets);
std::string regressionMembersCsv(const RegressionReport& report);
std::string regressionCalibrationCsv(const RegressionReport& report);
std::string regressionSizeCurveCsv(const RegressionReport& report);
// Writes uncertainty.csv, members.csv, calibration.csv and size_curve.csv into `directory`.
void writeRegressionCsvs(const std::string& directory, const RegressionReport& report,
                         const std::vector<float>& targets);

}  // namespace ensemble
