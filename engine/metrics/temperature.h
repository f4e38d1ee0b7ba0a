#pragma once

// Temperature scaling (Guo et al. 2017, "On Calibration of Modern Neural Networks", ICML): one
// scalar T > 0 fitted on a validation split by minimising the NLL; logits z become z / T. Log-
// probabilities are logits up to a per-row constant, so log_softmax(log P / T) is exact.
//
// Two ways to apply it to an ensemble (Rahaman & Thiery 2021, "Uncertainty Quantification and
// Deep Ensembles", NeurIPS, compare them):
// - Ensemble ("pool-then-calibrate", the default): the averaged prediction is the model,
//   p_T = softmax(log p / T). A monotone map of each row, so accuracy is exactly unchanged.
// - Members ("calibrate-then-pool"): every member is scaled, p_T = mean_k softmax(log P_k / T).
//   For K' > 1 the argmax of the average can move, so accuracy may change (slightly).
// In both the fit compares T = 1 with the optimum and keeps the better, so the validation NLL
// is never raised.

#include <cstdint>
#include <vector>

#include "metrics/calibration.h"

namespace ensemble {

enum class TemperatureMode { Ensemble, Members };

const char* toString(TemperatureMode mode);

struct TemperatureFit {
    TemperatureMode mode = TemperatureMode::Ensemble;
    double temperature = 1.0;
    double nllBefore = 0.0;  // validation NLL at T = 1
    double nllAfter = 0.0;   // validation NLL at `temperature` (<= nllBefore)
    int evaluations = 0;     // NLL evaluations the search took
};

// Bounds of the search, in T.
constexpr double kMinTemperature = 0.05;
constexpr double kMaxTemperature = 20.0;

// Validation NLL of the ensemble of the included members at temperature T. Precondition:
// T > 0, at least one included member, labels p.rows long.
double temperatureNll(const MemberPredictions& p, const std::vector<int32_t>& labels,
                      const std::vector<uint8_t>& include, double temperature,
                      TemperatureMode mode = TemperatureMode::Ensemble);

// Golden-section search on log T over [log kMinTemperature, log kMaxTemperature] (the NLL is
// smooth in log T; the search is bounded so a degenerate split cannot push T to 0 or
// infinity), then T = 1 as a candidate. With no rows T = 1.
TemperatureFit fitTemperature(const MemberPredictions& validation,
                              const std::vector<int32_t>& labels,
                              const std::vector<uint8_t>& include,
                              TemperatureMode mode = TemperatureMode::Ensemble);

// Predictions after scaling, as members to average with every member included: for Members
// the K' included members, each log_softmax(log P_k / T); for Ensemble one pseudo-member,
// log_softmax(log p / T).
MemberPredictions temperatureScaled(const MemberPredictions& p, const std::vector<uint8_t>& include,
                                    double temperature,
                                    TemperatureMode mode = TemperatureMode::Ensemble);

}  // namespace ensemble
