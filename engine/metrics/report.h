#pragma once

// The evaluation report of an ensemble: every measurement of metrics/ on one split, as a
// value, as JSON (the layout is documented in docs/cli.md, the report) and as CSV. The one JSON
// builder: `ensemble-cli train --metrics`, `eval --report` and the app's export all go through
// reportJson (a live trainer's through trainerReport, train/trainer_report.h).

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "metrics/calibration.h"
#include "metrics/conformal.h"
#include "metrics/metrics.h"
#include "metrics/ood.h"
#include "metrics/out_of_bag.h"
#include "metrics/point_statistics.h"
#include "metrics/regression.h"
#include "metrics/size_curve.h"
#include "metrics/temperature.h"
#include "metrics/types.h"

namespace ensemble {

struct EvaluationOptions {
    std::string split = "test";  // the name the report gives the evaluated split
    int bins = kCalibrationBins;
    int subsets = kSizeCurveSubsets;
    uint64_t seed = 0;  // random subsets of the size curve
    int histogramBins = kEntropyHistogramBins;
    // Two classes only: also the reliability of p(class 1) ("reliability_positive").
    bool positiveClassReliability = false;
    TemperatureMode temperatureMode = TemperatureMode::Ensemble;
    // Without a separate validation split, the evaluated rows are split by splitHalves
    // (metrics/conformal.h; `seed`): round(fraction * rows) of them fit the temperature and
    // the rest measure it. The conformal calibration uses the same halves.
    double validationFraction = 0.5;
    // `eval --alpha`: also split conformal sets (LAC, APS) at this alpha and selective
    // prediction, calibrated and measured on the halves above.
    std::optional<double> conformalAlpha;
};

// What to evaluate. Pointers are borrowed; null means "not available". The label vectors
// belong to the predictions next to them.
struct EvaluationInput {
    const MemberPredictions* predictions = nullptr;  // the evaluated split (required)
    const std::vector<int32_t>* labels = nullptr;    // required
    std::vector<uint8_t> include;                    // empty: every member
    // Out-of-bag: the train split's predictions and the K x N multiplicities.
    const MemberPredictions* train = nullptr;
    const std::vector<int32_t>* trainLabels = nullptr;
    const std::vector<int32_t>* counts = nullptr;
    // Temperature: a validation split; when null the evaluated split is halved (see options).
    const MemberPredictions* validation = nullptr;
    const std::vector<int32_t>* validationLabels = nullptr;
    // Out-of-distribution points (labels unused).
    const MemberPredictions* ood = nullptr;
    std::string oodName;
};

struct TemperatureReport {
    bool available = false;  // false when there are too few rows to fit and measure
    TemperatureFit fit;
    int64_t validationRows = 0;
    int64_t evaluationRows = 0;
    ClassificationMetrics before;  // on the evaluation rows, T = 1
    ClassificationMetrics after;   // on the evaluation rows, fitted T
};

struct EnsembleReport {
    std::string split;
    int classes = 0;
    std::vector<uint8_t> included;  // per member
    ClassificationMetrics ensemble;
    UncertaintySummary uncertainty;
    std::vector<ClassificationMetrics> members;
    double gibbsNll = 0.0;
    double diversity = 0.0;
    Calibration reliability;
    std::optional<Calibration> positiveReliability;
    std::vector<SizeCurvePoint> sizeCurve;
    std::optional<OobMetrics> oob;  // when train predictions were given
    std::optional<OodMetrics> ood;  // when OOD predictions were given
    std::string oodName;
    TemperatureReport temperature;
    RowHalves halves;  // the fitting and measuring halves (empty with a validation split)
    std::optional<ConformalReport> conformal;  // options.conformalAlpha given
    std::optional<SelectiveReport> selective;  // options.conformalAlpha given
    PointStatistics points;                    // per point of the evaluated split
};

// Throws std::invalid_argument when predictions or labels are missing or inconsistent, and
// RuntimeError when no member is included (each diverged or is switched off).
EnsembleReport evaluateEnsemble(const EvaluationInput& input,
                                const EvaluationOptions& options = {});

// What a run adds to its report beside the measurements: where it stands and each member's
// hyperparameters and state. Per-member vectors are empty or one entry per member.
struct RunFacts {
    std::string dataset;          // "dataset"; left out when empty
    int64_t step = 0;             // "step"
    std::optional<double> epoch;  // "epoch"; a loaded ensemble has none
    std::vector<double> lr;       // per member "lr", "momentum", "weight_decay"
    std::vector<double> momentum;
    std::vector<double> weightDecay;
    std::vector<uint8_t> diverged;    // per member "diverged"
    std::vector<uint8_t> switchedOn;  // per member "switched_on"; empty: every member is on
    // Loss and accuracy on both splits: "ensemble": {"train", "test"} and per member.
    std::optional<Evaluation> evaluation;
};

// {"split", "classes", "brier_definition", "ensemble": {...}, "members": [...], "gibbs_nll",
//  "diversity", "reliability": [...], "size_curve": [...], "oob": {...}, "ood": {...},
//  "temperature": {...}}; NaN numbers become null. See docs/cli.md (report) for every key.
nlohmann::json reportJson(const EnsembleReport& report);
// The report of a run: reportJson plus `run`'s keys ("step", "epoch", "dataset"; per member
// "member", "lr", "momentum", "weight_decay", "diverged", "switched_on", "train", "test").
// The one builder behind `ensemble-cli train --metrics`, `eval --report` and the app's export,
// so they write the same keys. Precondition: run's per-member vectors empty or
// report.members.size() long (std::invalid_argument else).
nlohmann::json reportJson(const EnsembleReport& report, const RunFacts& run);
// The same for a regression ensemble: regressionReportJson plus `run`'s keys (a split's
// "train" / "test" hold "loss" and "rmse" instead of "accuracy").
nlohmann::json reportJson(const RegressionReport& report, const RunFacts& run);
// Adds `run`'s keys to a report of `members` members (what both reportJson overloads do).
void addRunFacts(nlohmann::json& report, std::size_t members, const RunFacts& run, bool regression);
nlohmann::json evaluationReport(const EvaluationInput& input,
                                const EvaluationOptions& options = {});

// Pieces of the report other reports reuse (the shift report): a JSON number or null for NaN
// and infinities (JSON has neither); the halves ({"method", "seed", "calibration",
// "measure"}); a conformal set's {"threshold", "coverage", "set_size_mean",
// "coverage_by_size", "count_by_size"}; a selective curve's {"aurc", "accuracy_at_90",
// "accuracy_at_95", "curve": {"coverage", "risk"}}.
nlohmann::json jsonNumber(double v);
// The shortest text that reads back to the same double; empty for NaN (the CSVs' spelling).
std::string csvNumber(double v);
nlohmann::json halvesJson(const RowHalves& halves);
nlohmann::json conformalSetsJson(const ConformalSets& sets, const ConformalThreshold& threshold);
nlohmann::json selectiveJson(const SelectiveCurve& curve);

// CSV texts (header row, then one row per bin / size / point / member). NaN is written empty.
std::string reliabilityCsv(const Calibration& calibration);
std::string sizeCurveCsv(const std::vector<SizeCurvePoint>& curve);
// Per point: row,label,predicted,correct,confidence,nll,brier,total,aleatoric,epistemic,
// disagreement,predicted_std. `labels` may be empty.
std::string pointsCsv(const PointStatistics& points, const std::vector<int32_t>& labels);
std::string membersCsv(const EnsembleReport& report);

// Writes reliability.csv, size_curve.csv, uncertainty.csv and members.csv (and
// reliability_positive.csv when present) into `directory`, creating it; each atomically.
// Throws RuntimeError when a file cannot be written.
// Creates `directory` (and its parents) for a report's CSV files; RuntimeError when it cannot.
std::filesystem::path createCsvFolder(const std::string& directory);
void writeReportCsvs(const std::string& directory, const EnsembleReport& report,
                     const std::vector<int32_t>& labels);

}  // namespace ensemble
