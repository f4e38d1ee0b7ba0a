#pragma once

// The shift report: an exported ensemble measured on its test split moved by one shift kind
// at each of its levels (shift/transforms.h), following Ovadia et al. 2019's protocol, with the
// in-distribution fits (temperature, conformal threshold) kept fixed under shift so the user
// sees where they stop holding. One computation for `ensemble-cli shift` and the app's Shift
// view, so their numbers are equal.
//
// Rows: the evaluated rows are the test split's first `subset` rows (all when 0),
// split by splitHalves (metrics/conformal.h, `seed`) into a calibration half and a measuring
// half. The temperatures (the ensemble's, pool-then-calibrate, and each member's) and the
// conformal thresholds (LAC and APS of the ensemble_ts probabilities, LAC of each member_ts)
// are fitted once, on the calibration half at level `identity` (unshifted). At each level:
//   ensemble, members         all evaluated rows, the raw predictions
//   ensemble_ts, members_ts   the measuring half, temperature-scaled; with the conformal
//                             coverage and mean set size (LAC) and the AURC (by max-probability)
// Regression models: per level the ensemble's and each member's RMSE, Gaussian NLL and 90%
// interval coverage on all rows, and the conformal intervals (normalised score, q fitted on
// the unshifted calibration half) on the measuring half.

#include <atomic>
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "io/model_io.h"
#include "metrics/calibration.h"
#include "metrics/conformal.h"
#include "metrics/ood.h"
#include "shift/transforms.h"

namespace ensemble {

struct ShiftOptions {
    ShiftKind kind = ShiftKind::Rotate;
    std::vector<double> levels;  // empty: defaultShiftLevels(kind, data)
    double alpha = kDefaultConformalAlpha;
    int64_t subset = 0;  // the test split's first N rows (its stored order); 0: all
    uint64_t seed = 0;   // halves and noise; the CLI passes the ensemble's seed
    int bins = kCalibrationBins;
    int threads = 0;           // CPU prediction threads (0: the machine's)
    int64_t chunkRows = 2048;  // rows per prediction call: progress and cancel granularity
    // Also the OOD detectors on the data's own OOD set (uniform-noise images or the ring; none
    // for tabular and regression data), as many rows as are evaluated.
    bool ood = true;
};

constexpr double kNoValue = std::numeric_limits<double>::quiet_NaN();

// One block of a level ({...} in the JSON). NaN where a value does not apply: coverage,
// setSizeMean and aurc are measured only in the measuring-half (_ts) blocks.
struct ShiftMetrics {
    int64_t rows = 0;
    double accuracy = kNoValue;
    double nll = kNoValue;
    double brier = kNoValue;
    double ece = kNoValue;
    double entropyMean = kNoValue;
    double epistemicMean = kNoValue;  // mutual information; 0 for a single member
    double coverage = kNoValue;       // LAC, the in-distribution threshold
    double setSizeMean = kNoValue;    // LAC
    double aurc = kNoValue;           // by max-probability
};

// A regression block: all rows for rmse/nll/coverage90, the measuring half for the conformal
// interval's coverage and width.
struct ShiftRegressionMetrics {
    int64_t rows = 0;
    double rmse = kNoValue;
    double nll = kNoValue;         // NaN for an mse head
    double coverage90 = kNoValue;  // central 90% Gaussian interval; NaN for an mse head
    int64_t measureRows = 0;
    double intervalCoverage = kNoValue;   // conformal mu +- q sigma (ensemble only)
    double intervalWidthMean = kNoValue;  // raw target units (ensemble only)
};

// The median and range over the members of one block's value: "a single network".
struct MemberSpread {
    double median = kNoValue;
    double min = kNoValue;
    double max = kNoValue;
};

struct ShiftLevelReport {
    double level = 0.0;
    // Classification.
    ShiftMetrics ensemble;
    std::vector<ShiftMetrics> members;  // the included members, in member order
    ShiftMetrics ensembleTs;
    std::vector<ShiftMetrics> membersTs;
    // The raw ensemble on the measuring half: the same rows as ensembleTs, so the two compare
    // what temperature scaling did (with coverage, set size and AURC at its own LAC threshold,
    // fitted on the unshifted calibration half as ensembleTs's is).
    ShiftMetrics ensembleMeasure;
    ConformalSets lac;  // ensemble_ts, measuring half (with coverage by set size)
    ConformalSets aps;
    SelectiveCurve selectiveMaxProbability;     // ensemble_ts, measuring half
    SelectiveCurve selectiveMutualInformation;  // raw ensemble's MI, measuring half
    // Regression.
    ShiftRegressionMetrics regressionEnsemble;
    std::vector<ShiftRegressionMetrics> regressionMembers;
};

// The member spread of a value over a level's member blocks (NaN values skipped).
MemberSpread memberSpread(const std::vector<ShiftMetrics>& members, double ShiftMetrics::*field);

struct ShiftReport {
    ShiftKind kind = ShiftKind::Rotate;
    ShiftData data = ShiftData::Tabular;
    std::string dataset;
    bool regression = false;
    int classes = 0;
    double alpha = kDefaultConformalAlpha;
    uint64_t seed = 0;
    int64_t testRows = 0;  // the test split's rows before --subset
    int64_t rows = 0;      // evaluated rows
    int64_t calibrationRows = 0;
    int64_t measureRows = 0;
    std::vector<int> members;  // the included members' indices
    int membersTotal = 0;
    // The in-distribution fits.
    double temperature = 1.0;                 // the ensemble's (pool-then-calibrate)
    std::vector<double> memberTemperatures;   // per included member
    ConformalThreshold lacThreshold;          // ensemble_ts
    ConformalThreshold apsThreshold;          // ensemble_ts
    ConformalThreshold rawLacThreshold;       // ensemble_measure (untempered)
    std::vector<double> memberLacThresholds;  // per included member, of members_ts
    double intervalThreshold = kNoValue;      // regression: q in sigmas
    std::vector<ShiftLevelReport> levels;     // in the order asked
    // Out-of-distribution detection on the data's OOD set (nullopt where none applies).
    std::optional<OodMetrics> ood;
    std::string oodName;   // "uniform-noise" or "ring"
    bool complete = true;  // false when cancelled: `levels` holds the finished ones
};

struct ShiftProgress {
    int level = 0;  // index of the level being computed
    int levels = 0;
    int64_t rowsDone = 0;  // predicted rows of all work (levels x rows, plus the OOD set)
    int64_t rowsTotal = 0;
};

// Measures `ensemble` on data.test under options.kind at each level (see the top of this file).
// `onProgress` (may be empty) is called after every prediction chunk; `cancel` (may be null) is
// polled between chunks: when set, the report returned has complete = false and the levels
// finished so far. Throws ConfigError when the kind does not apply to the data
// (checkShiftApplies) or a level is out of range (negative sigma, scale <= 0), DataError when
// the data does not fit the ensemble (features, classes, task), RuntimeError when no member is
// included.
ShiftReport computeShiftReport(const LoadedEnsemble& ensemble, const DataSplit& data,
                               const ShiftOptions& options,
                               const std::function<void(const ShiftProgress&)>& onProgress = {},
                               const std::atomic<bool>* cancel = nullptr);

// {"shift", "unit", "dataset", "alpha", "seed", "rows": {"test", "evaluated", "calibration",
//  "measure"}, "temperature", "member_temperatures", "conformal_threshold": {"lac", "aps"},
//  "complete", "levels": [{"level", "ensemble": {...}, "members": [{...}], "ensemble_ts",
//  "members_ts", "members_spread", "ensemble_measure", "conformal": {"lac", "aps"}, "selective":
//  {...}}], "ood"};
// each {...} holds accuracy, nll, brier, ece, entropy_mean, epistemic_mean and rows, and the
// _ts blocks coverage, set_size_mean, aurc. Regression levels hold rmse, nll, coverage_90,
// interval_coverage, interval_width_mean. NaN becomes null. docs/shift.md documents every key.
nlohmann::json shiftReportJson(const ShiftReport& report);

// The headline figures the runs store keeps of a shift report (`ensemble-cli shift` and the
// app's Shift view record the same): the ensemble's accuracy, NLL and ECE at every level
// (regression: RMSE and NLL), named "<level>.<measure>" ("30.accuracy"); non-finite left out.
std::map<std::string, double> shiftHeadlineFigures(const ShiftReport& report);

// CSV: one row per level (level, then per block ensemble / members_median / members_min /
// members_max / ensemble_ts / members_ts_median the metrics) — shift_levels.csv; the
// risk-coverage curves of every level — risk_coverage.csv; coverage by set size —
// set_sizes.csv.
std::string shiftLevelsCsv(const ShiftReport& report);
std::string riskCoverageCsv(const ShiftReport& report);
std::string setSizesCsv(const ShiftReport& report);
// Writes the three files into `directory` (created), each atomically; RuntimeError on failure.
void writeShiftCsvs(const std::string& directory, const ShiftReport& report);

}  // namespace ensemble
