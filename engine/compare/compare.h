#pragma once

// The methods side by side: each ensemble method of
// model/ensemble_methods.h trained on the same data with the same K, steps and seed (the base
// config with ensemble.method set, so each method's own conditional keys take their defaults),
// then measured the same way. One computation for `ensemble-cli compare` and the app's Methods
// view: it prints nothing, reports progress through a callback and polls a cancel flag between
// training steps, so it runs on the app's engine thread as well as from the CLI's main().
//
// Per method, on the test split (the train split when the test split is empty), the ensemble
// being the members trainerReport (train/trainer_report.h) averages:
//   accuracy, nll, brier, ece   classificationMetrics (metrics/metrics.h): the numbers
//                               `ensemble-cli train --metrics` reports as "ensemble", bit for bit
//   ood_auroc                   AUROC of the mutual information (oodMetrics, metrics/ood.h)
//                               between the evaluated split and the data's own OOD set, as
//                               `eval --ood ring|uniform-noise` and the shift report build it
//                               (shift/transforms.h: the far ring for 2-D points, uniform-noise
//                               images for images; as many rows as are evaluated, ensemble.seed);
//                               NaN for data without one (tabular CSV)
//   shift_nll                   NLL of the evaluated split moved by applyShift (shift/transforms.h)
//                               at options.shiftKind / shiftLevel with ensemble.seed: the nll of
//                               the shift report's "ensemble" block at that level
//   parameters                  the trained values the method stores: the elements of the
//                               `layers.*` tensors of its export (io/model_io.h exportFile), which
//                               stores what each method has (K networks, one network, shared and
//                               fast weights), so a new method reports its own count
//   train_seconds               wall time of Trainer::run (its periodic evaluations left out)
//   predict_seconds_per_1000    wall time of predicting the evaluated split with every member on
//                               the method's backend (Trainer::predictRaw), repeated until at
//                               least options.predictRows rows and options.predictSeconds have
//                               passed, per 1,000 rows
//   peak_rss_mib                the process's peak resident memory from the method's start (the
//                               trainer's construction) to its end: VmHWM of /proc/self/status
//                               after resetting it (clear_refs 5, freed heap trimmed first), else
//                               getrusage's peak of the whole process (CompareResult says which)

#include <atomic>
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "config/config.h"
#include "metrics/grid.h"
#include "model/ensemble_methods.h"
#include "shift/transforms.h"

namespace ensemble {

struct CompareOptions {
    // The shift of shift_nll. Noise applies to every kind of data (shift/transforms.h).
    ShiftKind shiftKind = ShiftKind::Noise;
    double shiftLevel = 0.3;
    // The prediction timing: at least this many rows and this long in all.
    int64_t predictRows = 1000;
    double predictSeconds = 0.2;
    // How often onProgress reports training steps (Trainer::run's progressSeconds).
    double progressSeconds = 0.25;
    // 2-D data and gridSize > 0: each method's ensemble also on a gridSize x gridSize grid over
    // the data's bounding box widened by gridMargin (the same box for every method), for the
    // Methods view's boundaries and epistemic maps side by side. Not part of the report.
    int gridSize = 0;
    double gridMargin = kDefaultGridMargin;
};

enum class ComparePhase { Training, Measuring };

struct CompareProgress {
    int method = 0;   // index into the methods asked for
    int methods = 0;  // how many were asked for
    EnsembleMethod value = EnsembleMethod::Independent;
    ComparePhase phase = ComparePhase::Training;
    int64_t step = 0;
    int64_t totalSteps = 0;
};

constexpr double kNotMeasured = std::numeric_limits<double>::quiet_NaN();

// One method's row: the report's keys (compareReportJson), in its order.
struct MethodComparison {
    EnsembleMethod method = EnsembleMethod::Independent;
    double accuracy = kNotMeasured;
    double nll = kNotMeasured;
    double brier = kNotMeasured;
    double ece = kNotMeasured;
    double oodAuroc = kNotMeasured;  // NaN: the data has no OOD set
    double shiftNll = kNotMeasured;
    int64_t parameters = 0;
    double trainSeconds = kNotMeasured;
    double predictSecondsPer1000 = kNotMeasured;
    double peakRssMib = kNotMeasured;
    // The mean mutual information (nats) over the OOD set (the far ring for 2-D points): how
    // much the members disagree where there is no data. NaN: no OOD set.
    double oodMeanMi = kNotMeasured;
    // Members whose training diverged (a non-finite loss froze them). When every member is out
    // of the ensemble the metrics stay NaN (not measured) and the comparison goes on.
    int divergedMembers = 0;
    // CompareOptions::gridSize > 0 on 2-D data: the ensemble (the same members as the metrics)
    // on the grid (metrics/grid.h), measured after peak_rss_mib.
    std::optional<GridEvaluation> grid;
};

struct CompareResult {
    std::vector<MethodComparison> methods;  // the finished methods, in the order asked
    bool complete = true;                   // false when cancelled: `methods` holds the finished
    std::string dataset;
    std::string split;  // "test", or "train" when the test split is empty
    int64_t rows = 0;   // evaluated rows
    int members = 0;    // K
    int64_t steps = 0;  // training steps of every method
    uint64_t seed = 0;
    std::string oodName;  // "ring", "uniform-noise", or empty: none for this data
    ShiftKind shiftKind = ShiftKind::Noise;
    double shiftLevel = 0.0;
    std::string shiftUnit;  // the level's unit on this data ("sigma (standardised)", ...)
    // "VmHWM" (reset per method) or "getrusage" (the process's peak so far, not reset).
    std::string peakRssSource;
    std::string backendNotice;  // makeBackend's notice for the first method (print it once)
    nlohmann::json config;      // the base config's JSON
};

// Every method of the registry, in its order: what --methods defaults to.
std::vector<EnsembleMethod> allEnsembleMethods();

// "independent,snapshot" -> the methods. ConfigError naming `flag`, the name and the known
// methods for an unknown name, an empty item, or a method listed twice.
std::vector<EnsembleMethod> parseMethodList(const std::string& text,
                                            const std::string& flag = "--methods");

// The base config with ensemble.method = `method`, composed as a --set layer over the base's
// JSON (overlayConfig): keys of the base that stop applying are dropped, the method's own keys
// take their defaults. Throws ConfigError (the method named) when the result is invalid.
ExperimentConfig methodConfig(const ExperimentConfig& base, EnsembleMethod method);

// Trains and measures each of `methods` in turn (see the top of this file). `onProgress` (may
// be empty) is called at each method's start, during its training and before its measurements;
// `cancel` (may be null) is polled before each method and between training steps: a method cut
// short is dropped, the finished ones are returned with complete = false. Every method's
// config is checked before any trains. Throws ConfigError for a regression dataset, a shift
// that does not apply to the data, an invalid method config, or an empty `methods`; what
// loading the data, making the backend or the trainer throws.
CompareResult compareMethods(const ExperimentConfig& base,
                             const std::vector<EnsembleMethod>& methods,
                             const CompareOptions& options = {},
                             const std::function<void(const CompareProgress&)>& onProgress = {},
                             const std::atomic<bool>* cancel = nullptr);

// {"methods": {"<name>": {"accuracy", "nll", "brier", "ece", "ood_auroc", "shift_nll",
//  "parameters", "train_seconds", "predict_seconds_per_1000", "peak_rss_mib"}, ...},
//  "config": {...}, "complete", "dataset", "split", "rows", "members", "steps", "seed",
//  "ood": {"set", "score"}, "shift": {"kind", "level", "unit"}, "peak_rss_source"}; NaN is null.
nlohmann::json compareReportJson(const CompareResult& result);

// The headline figures the runs store keeps of a comparison (`ensemble-cli compare` and the
// app's Methods view record the same): each finished method's accuracy, NLL, Brier, ECE, OOD
// AUROC, shift NLL and training seconds, "<method>.<measure>" ("batchensemble.test_nll").
std::map<std::string, double> compareHeadlineFigures(const CompareResult& result);

// The table as CSV: a header row (method, then the report's keys) and a row per method; NaN
// is written empty.
std::string compareCsv(const CompareResult& result);

}  // namespace ensemble
