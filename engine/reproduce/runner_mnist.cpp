// The MNIST rows' runs (runner_internal.h): one trained ensemble per run, measured by the
// engine's own reports: the ensemble-size curve (Figure 2a), the classification metrics with
// the row's ECE bins (LeNet-5) and the shift report on rotated and translated test images
// (Ovadia et al.).
#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include "io/model_io.h"
#include "metrics/metrics.h"
#include "metrics/size_curve.h"
#include "reproduce/runner_internal.h"
#include "shift/shift_report.h"
#include "train/loaded_ensemble.h"
#include "train/trainer.h"

namespace ensemble::reproduce {
namespace mnist_runs {  // apart from runner.cpp's helpers in the unity build
namespace {

// Figure 2a: error (% of the test rows) and NLL for M = 1..K, each the mean over the random
// M-subsets of ensembleSizeCurve (the first M members' beside it in size_curve.csv).
void addSizeCurve(Trainer& trainer, const Reproduction& r, const PlannedRun& plan,
                  RunOutcome& out) {
    const DataSplit& data = trainer.data();
    const std::vector<SizeCurvePoint> curve =
        ensembleSizeCurve(trainer.predictTest(), data.test.y, trainer.included(), kSizeCurveSubsets,
                          out.seed, eceBinsOf(r));
    std::vector<std::string>& lines = out.csvLines["size_curve.csv"];
    for (const SizeCurvePoint& p : curve) {
        const std::string m = std::to_string(p.members);
        const double error = 100.0 * (1.0 - p.randomMean.accuracy);
        out.figures["error_m" + m] = error;
        out.figures["nll_m" + m] = p.randomMean.nll;
        lines.push_back(plan.level + ',' + std::to_string(plan.index) + ',' + m + ',' +
                        csvNumberRepro(error) + ',' + csvNumberRepro(p.randomMean.nll) + ',' +
                        csvNumberRepro(100.0 * (1.0 - p.first.accuracy)) + ',' +
                        csvNumberRepro(p.first.nll));
    }
    if (!curve.empty()) {
        const std::string last = std::to_string(curve.back().members);
        out.figures["nll_m" + last + "_minus_m1"] =
            curve.back().randomMean.nll - curve[0].randomMean.nll;
    }
}

// The test split's metrics of the ensemble of the included members (one network: K = 1).
void addLenetFigures(Trainer& trainer, const Reproduction& r, RunOutcome& out) {
    const ClassificationMetrics m = ensembleClassificationMetrics(
        trainer.predictTest(), trainer.data().test.y, trainer.included(), eceBinsOf(r));
    out.figures["accuracy_pct"] = 100.0 * m.accuracy;
    out.figures["nll"] = m.nll;
    out.figures["ece"] = m.ece;
    out.figures["brier"] = m.brier;
}

// Test rows the shift is measured on under --quick (0: all).
constexpr int64_t kQuickShiftRows = 1000;

// Ovadia et al.'s three methods at every level of `kind`: one network (the median over the
// members, all rows), temperature scaling (the median over the temperature-scaled members,
// the measuring half), the ensemble (all rows; and on the measuring half, beside temperature
// scaling). False when cancelled.
bool addShift(const LoadedEnsemble& ensemble, const DataSplit& data, const Reproduction& r,
              ShiftKind kind, const PlannedRun& plan, bool quick, const ReproduceHooks& hooks,
              ReproduceProgress progress, RunOutcome& out) {
    ShiftOptions options;
    options.kind = kind;
    options.levels = defaultShiftLevels(kind, ShiftData::Images);
    if (kind == ShiftKind::Translate) {  // the paper's 0..26: 28 pixels wraps back to 0
        options.levels.erase(std::remove_if(options.levels.begin(), options.levels.end(),
                                            [](double v) { return v > 26.0; }),
                             options.levels.end());
    }
    options.subset = quick ? kQuickShiftRows : 0;
    options.seed = static_cast<uint64_t>(plan.index);
    options.bins = eceBinsOf(r);
    options.ood = false;
    const ShiftReport report = computeShiftReport(
        ensemble, data, options,
        [&](const ShiftProgress& p) {
            if (hooks.progress) {
                progress.step = p.rowsDone;
                progress.steps = p.rowsTotal;
                hooks.progress(progress);
            }
        },
        hooks.cancel);
    if (!report.complete) {
        return false;
    }
    const std::string name = kind == ShiftKind::Rotate ? "rotate_" : "translate_";
    for (const ShiftLevelReport& level : report.levels) {
        const std::string prefix = name + std::to_string(std::lround(level.level)) + ".";
        const auto single = [&](double ShiftMetrics::*field) {
            return memberSpread(level.members, field).median;
        };
        const auto scaled = [&](double ShiftMetrics::*field) {
            return memberSpread(level.membersTs, field).median;
        };
        for (const auto& [metric, field] :
             {std::pair{"accuracy", &ShiftMetrics::accuracy},
              std::pair{"brier", &ShiftMetrics::brier}, std::pair{"ece", &ShiftMetrics::ece}}) {
            out.figures[prefix + metric + "_single"] = single(field);
            out.figures[prefix + metric + "_ts"] = scaled(field);
            out.figures[prefix + metric + "_ensemble"] = level.ensemble.*field;
            out.figures[prefix + metric + "_ensemble_half"] = level.ensembleMeasure.*field;
        }
        out.figures[prefix + "accuracy_ensemble_minus_single"] =
            level.ensemble.accuracy - single(&ShiftMetrics::accuracy);
        out.figures[prefix + "brier_ts_minus_ensemble"] =
            scaled(&ShiftMetrics::brier) - level.ensembleMeasure.brier;
    }
    out.figures[name + "temperature_median"] = [&] {
        std::vector<double> t = report.memberTemperatures;
        std::sort(t.begin(), t.end());
        return t.empty()           ? std::nan("")
               : t.size() % 2 == 1 ? t[t.size() / 2]
                                   : 0.5 * (t[t.size() / 2 - 1] + t[t.size() / 2]);
    }();
    return true;
}

}  // namespace
}  // namespace mnist_runs

int eceBinsOf(const Reproduction& r) {
    return r.eceBins > 0 ? r.eceBins : kCalibrationBins;
}

bool runMnist(const Reproduction& r, const PlannedRun& plan, const ReproduceHooks& hooks,
              ReproduceProgress progress, std::chrono::steady_clock::time_point start,
              ReproductionResult& result, RunOutcome& out) {
    const auto trainer = trainerFor(plan.config, result);
    if (!trainToEnd(*trainer, hooks, progress, start)) {
        return false;
    }
    if (r.runner == RunnerKind::MnistSizeCurve) {
        mnist_runs::addSizeCurve(*trainer, r, plan, out);
        return true;
    }
    if (r.runner == RunnerKind::MnistLenet) {
        mnist_runs::addLenetFigures(*trainer, r, out);
        return true;
    }
    if (r.runner == RunnerKind::MnistShift) {
        // The weights as an export writes them, as the app's Shift view measures them.
        const LoadedEnsemble ensemble = importEnsemble(exportFile(*trainer));
        for (ShiftKind kind : {ShiftKind::Rotate, ShiftKind::Translate}) {
            if (!mnist_runs::addShift(ensemble, trainer->data(), r, kind, plan,
                                      result.options.quick, hooks, progress, out)) {
                return false;
            }
        }
        return true;
    }
    throw std::logic_error("runMnist: " + r.id + " is not an MNIST row");
}

}  // namespace ensemble::reproduce
