// Planning and running a reproduction: a complete config per run, trained by the engine's own
// trainer (registry's makeTrainer: the seeded split, the training rows' standardisation), and
// measured by the engine's own reports.
#include <algorithm>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "config/config.h"
#include "core/errors.h"
#include "math/philox.h"
#include "metrics/ood.h"
#include "metrics/point_statistics.h"
#include "metrics/regression.h"
#include "registry/registry.h"
#include "reproduce/reproduce.h"
#include "reproduce/runner_internal.h"
#include "train/trainer.h"

namespace ensemble::reproduce {
namespace {

using ReproClock = std::chrono::steady_clock;
using nlohmann::json;

// Deep Ensembles' UCI protocol (Table 1) for one set and split.
json uciRunConfig(const std::string& set, int split) {
    const int hidden = set == "protein" ? 100 : 50;
    return {
        {"dataset", {{"kind", "uci"}, {"uci_set", set}, {"test_fraction", 0.1}, {"seed", split}}},
        {"model", {{"hidden", {hidden}}, {"activation", "relu"}, {"likelihood", "gaussian"}}},
        {"ensemble", {{"members", 5}, {"bootstrap", "shuffle"}, {"seed", split}}},
        {"optimizer", {{"kind", "adam"}, {"lr", 0.01}}},
        {"training",
         {{"batch_size", 100},
          {"epochs", 40},
          {"adversarial_eps", 0.01},
          {"adversarial_eps_unit", "range"}}},
        {"backend", {{"kind", "cpu"}}}};
}

// The cubic preset as one panel of Figure 1, for one seed of the data and the members.
json cubicRunConfig(const std::string& panel, int seed) {
    json c = loadConfigJson("cubic");
    c["dataset"]["seed"] = seed;
    c["ensemble"]["seed"] = seed;
    c["backend"] = {{"kind", "cpu"}};
    const bool ensemble = panel == "mse-ensemble" || panel == "nll-adversarial-ensemble";
    const bool adversarial =
        panel == "nll-adversarial-single" || panel == "nll-adversarial-ensemble";
    c["ensemble"]["members"] = ensemble ? 5 : 1;
    c["model"]["likelihood"] = panel == "mse-ensemble" ? "mse" : "gaussian";
    if (!adversarial) {
        c["training"]["adversarial_eps"] = 0.0;
    }
    return c;
}

// Whitney 2021's setup with K members: every point trains, every step is the full batch.
json spiralsRunConfig(int members, int seed) {
    return {{"dataset",
             {{"kind", "spirals"},
              {"n", 100},
              {"noise", 0.05},
              {"rotations", 1.0},
              {"test_fraction", 0.0},
              {"seed", seed}}},
            {"model", {{"hidden", {32}}, {"activation", "relu"}}},
            {"ensemble", {{"members", members}, {"seed", seed}}},
            {"optimizer", {{"kind", "adam"}, {"lr", 1e-3}}},
            {"training", {{"batch_size", 100}, {"steps", 100}}},
            {"backend", {{"kind", "cpu"}}}};
}

// The SNGP tutorial's two moons (1,000 points, noise 0.1) for one ensemble method, on the
// `moons` preset's network and budget.
json moonsRunConfig(const std::string& method, int seed) {
    json c = loadConfigJson("moons");
    c["dataset"]["n"] = 1000;
    c["dataset"]["noise"] = 0.1;
    c["dataset"]["seed"] = seed;
    c["ensemble"]["seed"] = seed;
    c["ensemble"]["method"] = method;
    c["ensemble"]["members"] = 10;
    if (method != "independent") {
        c["ensemble"].erase("bootstrap");  // one network: no bootstrap of its own
    }
    c["backend"] = {{"kind", "cpu"}};
    return c;
}

}  // namespace

// The runners' shared steps (runner_internal.h), used by runner_mnist.cpp as well.

// The row's configPatch over a runner's config: its "" entry, then the level's.
json patchedConfig(json config, const Reproduction& r, const std::string& level) {
    if (r.configPatch.is_object()) {
        for (const std::string& key : {std::string(), level}) {
            if (r.configPatch.contains(key)) {
                config.merge_patch(r.configPatch[key]);
            }
        }
    }
    return config;
}

// The overrides over a run's config, then the config as parseConfig completes it (every key
// that applies, defaults filled in): what `ensemble-cli train --config` takes back.
json completedConfig(json config, const std::vector<std::string>& overrides) {
    for (const std::string& assignment : overrides) {
        applyOverride(config, assignment);
    }
    return parseConfig(config).json;
}

// Trains `trainer` to its end in slices, so that a cancel is seen within a slice and progress
// is reported about every second. False when cancelled.
bool trainToEnd(Trainer& trainer, const ReproduceHooks& hooks, ReproduceProgress progress,
                ReproClock::time_point start) {
    auto lastReport = ReproClock::now();
    constexpr int64_t kSlice = 25;
    while (!trainer.finished()) {
        if (hooks.cancel != nullptr && hooks.cancel->load()) {
            return false;
        }
        trainer.runSteps(std::min(kSlice, trainer.totalSteps() - trainer.step()));
        const auto now = ReproClock::now();
        if (hooks.progress && now - lastReport >= std::chrono::seconds(1)) {
            lastReport = now;
            progress.step = trainer.step();
            progress.steps = trainer.totalSteps();
            progress.elapsed = std::chrono::duration<double>(now - start).count();
            hooks.progress(progress);
        }
    }
    return true;
}

std::vector<int> reproIncludedMembers(const Trainer& trainer) {
    std::vector<int> members;
    const std::vector<uint8_t> included = trainer.included();
    for (std::size_t k = 0; k < included.size(); ++k) {
        if (included[k] != 0) {
            members.push_back(static_cast<int>(k));
        }
    }
    return members;
}

std::string csvNumberRepro(double v) {
    if (!std::isfinite(v)) {
        return "";
    }
    // to_chars, not printf: the app runs under the user's LC_NUMERIC, where "%g" writes
    // "0,5" and breaks the CSV line (and the figure that reads it back).
    char buf[32];
    const auto r = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::general, 6);
    return std::string(buf, r.ptr);
}

namespace {

// The test split's regression report as run figures.
void addRegressionFigures(Trainer& trainer, RunOutcome& out) {
    const DataSplit& data = trainer.data();
    const RegressionReport report =
        evaluateRegression(trainer.predictTest(), data.test.target, trainer.included(),
                           data.normalization.targetMean, data.normalization.targetStd);
    out.figures["rmse"] = report.ensemble.rmse;
    out.figures["nll"] = report.ensemble.nll;
    out.figures["coverage_90"] = report.ensemble.coverage[1];
    out.figures["sharpness"] = report.ensemble.sharpness;
    double memberRmse = 0.0;
    for (const RegressionMetrics& m : report.members) {
        memberRmse += m.rmse / static_cast<double>(report.members.size());
    }
    out.figures["member_rmse"] = memberRmse;
}

// Figure 1's curves: the mixture's mean and ± 3 sigma on [-6, 6], and sigma inside the data
// (|x| <= 3) against outside it (5 <= |x| <= 6).
void addCubicCurves(Trainer& trainer, const PlannedRun& plan, RunOutcome& out) {
    constexpr int kPoints = 241;  // a step of 0.05
    std::vector<float> grid(kPoints);
    for (int i = 0; i < kPoints; ++i) {
        grid[static_cast<std::size_t>(i)] = static_cast<float>(-6.0 + 12.0 * i / (kPoints - 1));
    }
    const DataSplit& data = trainer.data();
    const MemberGaussians g =
        memberGaussians(trainer.predictRaw(grid.data(), kPoints), data.normalization.targetMean,
                        data.normalization.targetStd);
    const RegressionPoints points = mixturePoints(g, reproIncludedMembers(trainer));
    double inside = 0.0;
    double outside = 0.0;
    int insideCount = 0;
    int outsideCount = 0;
    std::vector<std::string>& curve = out.csvLines["curves.csv"];
    for (int i = 0; i < kPoints; ++i) {
        const double x = grid[static_cast<std::size_t>(i)];
        const double mean = points.mean[static_cast<std::size_t>(i)];
        const double sigma = std::sqrt(points.variance[static_cast<std::size_t>(i)]);
        if (std::abs(x) <= 3.0 + 1e-9) {
            inside += sigma;
            ++insideCount;
        } else if (std::abs(x) >= 5.0 - 1e-9) {
            outside += sigma;
            ++outsideCount;
        }
        curve.push_back(plan.level + ',' + std::to_string(plan.index) + ',' + csvNumberRepro(x) +
                        ',' + csvNumberRepro(mean) + ',' + csvNumberRepro(sigma) + ',' +
                        csvNumberRepro(mean - 3.0 * sigma) + ',' +
                        csvNumberRepro(mean + 3.0 * sigma));
    }
    out.figures["sigma_inside"] = inside / insideCount;
    out.figures["sigma_outside"] = outside / outsideCount;
    out.figures["band_ratio"] = out.figures["sigma_outside"] / out.figures["sigma_inside"];
    std::vector<std::string>& train = out.csvLines["points.csv"];
    for (int64_t i = 0; i < data.train.rows; ++i) {
        train.push_back(plan.level + ',' + std::to_string(plan.index) + ',' +
                        csvNumberRepro(data.train.x[static_cast<std::size_t>(i)]) + ',' +
                        csvNumberRepro(data.train.target[static_cast<std::size_t>(i)]));
    }
}

// The SNGP tutorial's OOD set: 500 points of N((2.5, -1.75), 0.1^2 I), drawn from `seed`.
std::vector<float> moonsOodBlob(uint64_t seed) {
    constexpr int kBlobPoints = 500;
    constexpr uint32_t kBlobStream = 0x4D4F4F4E;  // "MOON": apart from the shifts' streams
    std::vector<float> blob(2 * kBlobPoints);
    for (int i = 0; i < kBlobPoints; ++i) {
        const Philox4x32 d =
            philoxDraw(seed, RngPurpose::Shift, kBlobStream, static_cast<uint64_t>(i));
        const double radius = std::sqrt(-2.0 * std::log(uniformOpenDouble(d.v[0], d.v[1])));
        const double angle = 2.0 * 3.141592653589793 * uniformOpenDouble(d.v[2], d.v[3]);
        blob[static_cast<std::size_t>(2 * i)] =
            static_cast<float>(2.5 + 0.1 * radius * std::cos(angle));
        blob[static_cast<std::size_t>(2 * i + 1)] =
            static_cast<float>(-1.75 + 0.1 * radius * std::sin(angle));
    }
    return blob;
}

// The test rows against the blob: the ensemble's mean confidence (max_c p_c) on each, the
// AUROC of the mutual information and of the confidence (ood.h: higher = in-distribution).
void addMoonsOod(Trainer& trainer, const PlannedRun& plan, RunOutcome& out) {
    const std::vector<uint8_t> include = trainer.included();
    const DataSplit& data = trainer.data();
    const PointStatistics in = pointStatistics(trainer.predictTest(), include, data.test.y);
    std::vector<float> blob = moonsOodBlob(plan.config["dataset"]["seed"].get<uint64_t>());
    const PointStatistics outside = pointStatistics(
        trainer.predictRaw(blob.data(), static_cast<int64_t>(blob.size() / 2)), include);
    const OodMetrics ood = oodMetrics(in, outside);
    double correct = 0.0;
    for (std::size_t i = 0; i < in.predicted.size(); ++i) {
        correct += in.predicted[i] == data.test.y[i] ? 1.0 : 0.0;
    }
    double confidence = 0.0;
    for (double c : outside.confidence) {
        confidence += c / static_cast<double>(outside.confidence.size());
    }
    out.figures["test_accuracy"] = correct / static_cast<double>(in.predicted.size());
    out.figures["blob_confidence"] = confidence;
    out.figures["ood_auroc_mi"] = ood.mutualInformation.auroc;
    out.figures["ood_auroc_confidence"] = ood.maxProbability.auroc;
}

}  // namespace

std::unique_ptr<Trainer> trainerFor(const json& config, ReproductionResult& result) {
    std::string notice;
    std::unique_ptr<Trainer> trainer = makeTrainer(parseConfig(config), &notice);
    if (result.backend.empty()) {
        result.backend = trainer->backend().name();
    }
    return trainer;
}

double reproSecondsSince(ReproClock::time_point t) {
    return std::chrono::duration<double>(ReproClock::now() - t).count();
}

namespace {

// Runs one planned run; false when cancelled (nothing is added then).
bool runPlanned(const Reproduction& r, const PlannedRun& plan, const ReproduceHooks& hooks,
                ReproduceProgress progress, ReproClock::time_point start,
                ReproductionResult& result) {
    RunOutcome out;
    out.level = plan.level;
    out.index = plan.index;
    out.seed = plan.config["ensemble"]["seed"].get<uint64_t>();
    const auto began = ReproClock::now();
    switch (r.runner) {
        case RunnerKind::UciRegression: {
            const auto trainer = trainerFor(plan.config, result);
            if (!trainToEnd(*trainer, hooks, progress, start)) {
                return false;
            }
            addRegressionFigures(*trainer, out);
            break;
        }
        case RunnerKind::CubicCurves: {
            const auto trainer = trainerFor(plan.config, result);
            if (!trainToEnd(*trainer, hooks, progress, start)) {
                return false;
            }
            addRegressionFigures(*trainer, out);
            addCubicCurves(*trainer, plan, out);
            break;
        }
        case RunnerKind::MoonsOod: {
            const auto trainer = trainerFor(plan.config, result);
            if (!trainToEnd(*trainer, hooks, progress, start)) {
                return false;
            }
            addMoonsOod(*trainer, plan, out);
            break;
        }
        case RunnerKind::SpiralsTiming: {
            // Each trainer is built (data, parameters, backend) before its clock starts: the
            // steps alone are timed, as Whitney times the jitted step. Each size trains twice
            // from scratch and the faster counts: the first run also pays for first-touch page
            // faults and cold caches (%timeit's warm runs, not its first).
            double seconds[2] = {0.0, 0.0};
            const json* configs[2] = {&plan.config, &plan.otherConfig};
            for (int which = 0; which < 2; ++which) {
                for (int repeat = 0; repeat < 2; ++repeat) {
                    const auto trainer = trainerFor(*configs[which], result);
                    const auto t0 = ReproClock::now();
                    if (!trainToEnd(*trainer, hooks, progress, start)) {
                        return false;
                    }
                    const double took = reproSecondsSince(t0);
                    seconds[which] = repeat == 0 ? took : std::min(seconds[which], took);
                }
            }
            out.figures["seconds_1"] = seconds[0];
            out.figures["seconds_100"] = seconds[1];
            out.figures["time_ratio"] = seconds[1] / seconds[0];
            break;
        }
        case RunnerKind::MnistSizeCurve:
        case RunnerKind::MnistLenet:
        case RunnerKind::MnistShift:
            if (!runMnist(r, plan, hooks, progress, start, result, out)) {
                return false;
            }
            break;
        case RunnerKind::MnistActive:
            if (!runActive(plan, hooks, progress, start, result, out)) {
                return false;
            }
            break;
    }
    out.seconds = reproSecondsSince(began);
    result.outcomes.push_back(std::move(out));
    return true;
}

}  // namespace

std::vector<PlannedRun> planRuns(const Reproduction& r, const ReproduceOptions& options) {
    for (const std::string& level : options.levels) {
        if (std::find(r.levels.begin(), r.levels.end(), level) == r.levels.end()) {
            std::string known;
            for (const std::string& l : r.levels) {
                known += (known.empty() ? "" : ", ") + l;
            }
            throw ConfigError(r.id + " has no level '" + level + "' (" + known + ")");
        }
    }
    std::vector<PlannedRun> plan;
    for (std::size_t l = 0; l < r.levels.size(); ++l) {
        const std::string& level = r.levels[l];
        if (!options.levels.empty() && std::find(options.levels.begin(), options.levels.end(),
                                                 level) == options.levels.end()) {
            continue;
        }
        const int count = options.count > 0 ? options.count
                          : options.quick   ? r.quickCounts[l]
                                            : r.counts[l];
        for (int i = 0; i < count; ++i) {
            PlannedRun run;
            run.level = level;
            run.index = i;
            switch (r.runner) {
                case RunnerKind::UciRegression:
                    run.config = completedConfig(patchedConfig(uciRunConfig(level, i), r, level),
                                                 options.overrides);
                    break;
                case RunnerKind::CubicCurves:
                    run.config = completedConfig(cubicRunConfig(level, i), options.overrides);
                    break;
                case RunnerKind::MoonsOod:
                    run.config = completedConfig(moonsRunConfig(level, i), options.overrides);
                    break;
                case RunnerKind::SpiralsTiming:
                    run.config = completedConfig(spiralsRunConfig(1, i), options.overrides);
                    run.otherConfig = completedConfig(spiralsRunConfig(100, i), options.overrides);
                    break;
                case RunnerKind::MnistSizeCurve:
                case RunnerKind::MnistLenet:
                case RunnerKind::MnistShift:
                case RunnerKind::MnistActive:
                    run.config = completedConfig(mnistRunConfig(r, level, i, options.quick),
                                                 options.overrides);
                    break;
            }
            plan.push_back(std::move(run));
        }
    }
    return plan;
}

ReproductionResult runReproduction(const Reproduction& r, const ReproduceOptions& options,
                                   const ReproduceHooks& hooks) {
    ReproductionResult result;
    result.reproduction = &r;
    result.options = options;
    result.plan = planRuns(r, options);
    const auto start = ReproClock::now();
    result.complete = true;
    for (std::size_t i = 0; i < result.plan.size(); ++i) {
        ReproduceProgress progress;
        progress.run = i;
        progress.runs = result.plan.size();
        progress.planned = &result.plan[i];
        if (hooks.progress) {
            progress.elapsed = reproSecondsSince(start);
            hooks.progress(progress);
        }
        if (!runPlanned(r, result.plan[i], hooks, progress, start, result)) {
            result.complete = false;
            break;
        }
        result.seconds = reproSecondsSince(start);
        judge(result);
        if (hooks.afterRun) {
            hooks.afterRun(result);
        }
    }
    result.seconds = reproSecondsSince(start);
    judge(result);
    return result;
}

namespace {

bool levelPlanned(const ReproductionResult& result, const std::string& level) {
    return std::any_of(result.plan.begin(), result.plan.end(),
                       [&](const PlannedRun& p) { return p.level == level; });
}

// Ours for `figure` of `level`: the level figure, or the mean ± se over the runs (their values
// in `values`); n = 0 when no run of the level finished.
Aggregate oursOf(const ReproductionResult& result, const std::string& level,
                 const std::string& figure, FigureOf of, std::vector<double>& values) {
    values.clear();
    for (const RunOutcome& o : result.outcomes) {
        if (o.level != level) {
            continue;
        }
        const auto it = o.figures.find(figure);
        values.push_back(it == o.figures.end() ? std::numeric_limits<double>::quiet_NaN()
                                               : it->second);
    }
    if (of == FigureOf::Run || values.empty()) {
        return aggregate(values);
    }
    const auto figures = result.levelFigures.find(level);
    if (figures != result.levelFigures.end()) {
        const auto it = figures->second.find(figure);
        if (it != figures->second.end()) {
            return it->second;
        }
    }
    Aggregate missing;  // the runner reads no such level figure: not a number
    missing.n = static_cast<int>(values.size());
    missing.level = true;
    missing.mean = missing.se = std::numeric_limits<double>::quiet_NaN();
    return missing;
}

}  // namespace

void judge(ReproductionResult& result) {
    result.rows.clear();
    result.levelFigures.clear();
    const Reproduction& r = *result.reproduction;
    for (const std::string& level : r.levels) {
        std::vector<const RunOutcome*> runs;
        for (const RunOutcome& o : result.outcomes) {
            if (o.level == level) {
                runs.push_back(&o);
            }
        }
        if (!runs.empty()) {
            std::map<std::string, Aggregate> figures = levelFiguresOf(r, runs);
            if (!figures.empty()) {
                result.levelFigures[level] = std::move(figures);
            }
        }
    }
    std::vector<double> values;
    std::vector<double> otherValues;
    for (const Check& check : r.checks) {
        if (!levelPlanned(result, check.level) ||
            (!check.versus.empty() && !levelPlanned(result, check.versus))) {
            continue;
        }
        ResultRow row;
        row.check = &check;
        row.ours = oursOf(result, check.level, check.figure, check.of, values);
        if (values.empty()) {
            continue;  // an interrupted run's level that no run reached: nothing to judge
        }
        switch (check.kind) {
            case VerdictKind::Numeric:
                row.judgement = judgeNumeric(check.printedValue, check.printedSpread, row.ours);
                break;
            case VerdictKind::Band:
                row.judgement = judgeBand(check.low, check.high, row.ours);
                break;
            case VerdictKind::Claim:
                if (check.versus.empty()) {
                    row.judgement = judgeClaim(check.test, check.threshold, values);
                } else {
                    const Aggregate other =
                        oursOf(result, check.versus, check.figure, check.of, otherValues);
                    if (otherValues.empty()) {
                        continue;  // the other level has no finished run yet
                    }
                    row.judgement = judgeAgainst(check.test, check.factor, row.ours, other);
                }
                break;
            case VerdictKind::Measurement:
                row.judgement.verdict = Verdict::None;
                break;
        }
        result.rows.push_back(std::move(row));
    }
}

std::map<std::string, Aggregate> levelFiguresOf(const Reproduction& r,
                                                const std::vector<const RunOutcome*>& runs) {
    switch (r.runner) {
        case RunnerKind::MnistActive:
            return activeLevelFigures(runs);
        case RunnerKind::UciRegression:
        case RunnerKind::CubicCurves:
        case RunnerKind::SpiralsTiming:
        case RunnerKind::MoonsOod:
        case RunnerKind::MnistSizeCurve:
        case RunnerKind::MnistLenet:
        case RunnerKind::MnistShift:
            break;
    }
    return {};
}

}  // namespace ensemble::reproduce
