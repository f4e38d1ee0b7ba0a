// ensemble-cli eval: every measurement of engine/metrics for an exported ensemble, on the test
// split of the dataset it was trained on. One command's flags, data rebuild, table and report;
// its OOD sets live in ood_sets.cpp, the measurements in engine/metrics.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <numeric>
#include <string>
#include <vector>

#include "cli/cli_common.h"
#include "cli/commands.h"
#include "cli/ood_sets.h"
#include "config/config.h"
#include "config/config_schema.h"
#include "core/errors.h"
#include "data/dataset.h"
#include "io/model_io.h"
#include "metrics/metrics.h"
#include "metrics/ood.h"
#include "metrics/point_statistics.h"
#include "metrics/report.h"
#include "sys/atomic_file.h"

namespace ensemble::cli {

namespace {

using nlohmann::json;

// The config the data is rebuilt from: the one stored in the weights, then --config
// over it key by key (a file may name only the keys it changes), then the --set list.
// Only `dataset` and `backend` are taken from the result: the model, the members and their
// hyperparameters are what the weights hold.
ExperimentConfig evalConfig(const LoadedEnsemble& ensemble, const CliArgs& args,
                            bool& datasetChanged) {
    json stored = ensemble.config.json.is_object() ? ensemble.config.json : defaultConfigJson();
    std::vector<std::string> notices;
    json merged = stored;
    if (args.has("--config")) {
        merged = overlayConfig(merged, loadConfigJson(args.get("--config")), &notices);
    }
    json overrides = json::object();
    for (const std::string& s : args.sets) {
        applyOverride(overrides, s);
    }
    merged = overlayConfig(merged, overrides, &notices);
    for (const std::string& notice : notices) {
        std::fprintf(stderr, "note: %s\n", notice.c_str());
    }
    datasetChanged = merged.value("dataset", json()) != stored.value("dataset", json());
    for (const char* section : {"dataset", "backend"}) {
        if (merged.contains(section)) {
            stored[section] = merged[section];
        }
    }
    return parseConfig(stored);
}

MemberPredictions predict(const LoadedEnsemble& ensemble, const Dataset& data, int threads) {
    MemberPredictions p;
    p.members = ensemble.layout.members();
    p.rows = data.rows;
    p.classes = ensemble.layout.classes();
    p.logProbs = predictLogProbs(ensemble, data.x.data(), data.rows, threads);
    return p;
}

// Why member k is not in the ensemble (`on`: its switches), for the summary's member rows.
const char* leftOutNote(const std::vector<uint8_t>& included, const std::vector<uint8_t>& on,
                        std::size_t k) {
    if (included[k] != 0) {
        return "";
    }
    return k < on.size() && on[k] == 0 ? "  (switched off: left out)" : "  (diverged: left out)";
}

void printMetricsRow(const char* label, const ClassificationMetrics& m, const char* note = "") {
    std::printf("%-12s %9.4f %9.4f %9.4f %9.4f%s\n", label, m.accuracy, m.nll, m.brier, m.ece,
                note);
}

void printSummary(const EnsembleReport& r, const std::string& dataset,
                  const std::vector<uint8_t>& on) {
    const std::size_t k = r.members.size();
    std::printf("%s split of %s: %lld rows, %d classes, %d of %zu members in the ensemble\n\n",
                r.split.c_str(), dataset.c_str(), static_cast<long long>(r.points.rows), r.classes,
                r.points.members, k);
    std::printf("%-12s %9s %9s %9s %9s\n", "", "accuracy", "nll", "brier", "ece");
    auto memberRow = [&](std::size_t i) {
        char label[32];
        std::snprintf(label, sizeof label, "member %zu", i);
        printMetricsRow(label, r.members[i], leftOutNote(r.included, on, i));
    };
    if (k <= 10) {
        for (std::size_t i = 0; i < k; ++i) {
            memberRow(i);
        }
    } else {
        std::vector<std::size_t> order(k);
        std::iota(order.begin(), order.end(), 0);
        std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
            return r.members[a].accuracy > r.members[b].accuracy;
        });
        for (std::size_t i = 0; i < 3; ++i) {
            memberRow(order[i]);
        }
        std::printf("%-12s (%zu more members)\n", "...", k - 6);
        for (std::size_t i = k - 3; i < k; ++i) {
            memberRow(order[i]);
        }
    }
    ClassificationMetrics mean;
    int used = 0;
    for (std::size_t i = 0; i < k; ++i) {
        if (!r.included[i]) {
            continue;
        }
        mean.accuracy += r.members[i].accuracy;
        mean.nll += r.members[i].nll;
        mean.brier += r.members[i].brier;
        mean.ece += r.members[i].ece;
        ++used;
    }
    if (used > 0) {
        mean.accuracy /= used;
        mean.nll /= used;
        mean.brier /= used;
        mean.ece /= used;
        printMetricsRow("member mean", mean);
    }
    printMetricsRow("ensemble", r.ensemble);
    std::printf("\nGibbs NLL %.4f vs ensemble NLL %.4f; diversity %.4f\n", r.gibbsNll,
                r.ensemble.nll, r.diversity);
    std::printf(
        "uncertainty (nats): total %.4f = aleatoric %.4f + epistemic %.4f; "
        "disagreement %.4f\n",
        r.uncertainty.entropyMean, r.uncertainty.aleatoricMean, r.uncertainty.epistemicMean,
        r.uncertainty.disagreementMean);
    if (r.oob && r.oob->ensembleRows > 0) {
        std::printf("out-of-bag: ensemble accuracy %.4f, NLL %.4f on %lld train rows\n",
                    r.oob->ensembleAccuracy, r.oob->ensembleNll,
                    static_cast<long long>(r.oob->ensembleRows));
    }
    if (r.ood) {
        std::printf(
            "OOD %s (%lld rows): AUROC max-prob %.4f, entropy %.4f, MI %.4f; "
            "FPR@95%%TPR %.4f / %.4f / %.4f\n",
            r.oodName.c_str(), static_cast<long long>(r.ood->outRows), r.ood->maxProbability.auroc,
            r.ood->entropy.auroc, r.ood->mutualInformation.auroc, r.ood->maxProbability.fprAt95Tpr,
            r.ood->entropy.fprAt95Tpr, r.ood->mutualInformation.fprAt95Tpr);
    }
    if (r.temperature.available) {
        const TemperatureReport& t = r.temperature;
        std::printf(
            "temperature %.4f (fitted on %lld rows, measured on %lld): NLL %.4f -> %.4f, "
            "ECE %.4f -> %.4f\n",
            t.fit.temperature, static_cast<long long>(t.validationRows),
            static_cast<long long>(t.evaluationRows), t.before.nll, t.after.nll, t.before.ece,
            t.after.ece);
    }
    if (r.conformal) {
        const ConformalReport& c = *r.conformal;
        std::printf(
            "conformal (alpha %.3g, %lld rows calibrate, %lld measure): LAC coverage %.4f, mean "
            "set size %.3f; APS coverage %.4f, mean set size %.3f\n",
            c.alpha, static_cast<long long>(c.calibrationRows),
            static_cast<long long>(c.measureRows), c.lac.coverage, c.lac.setSizeMean,
            c.aps.coverage, c.aps.setSizeMean);
    }
    if (r.selective) {
        const SelectiveReport& s = *r.selective;
        std::printf(
            "selective (%lld rows): AURC max-prob %.4f, MI %.4f; accuracy at 90%% coverage "
            "%.4f / %.4f, at 95%% %.4f / %.4f\n",
            static_cast<long long>(s.rows), s.maxProbability.aurc, s.mutualInformation.aurc,
            s.maxProbability.accuracyAt90, s.mutualInformation.accuracyAt90,
            s.maxProbability.accuracyAt95, s.mutualInformation.accuracyAt95);
    }
}

// The run facts of a loaded ensemble for the report builder (metrics/report.h): it has no epoch
// and no training-time loss; its switches are those at the stored step.
RunFacts runFactsOf(const LoadedEnsemble& ensemble, const DataSplit& data) {
    RunFacts run;
    run.dataset = data.name;
    run.step = ensemble.step;
    run.lr = ensemble.config.optimizer.lr;
    run.momentum = ensemble.config.optimizer.momentum;
    run.weightDecay = ensemble.config.optimizer.weightDecay;
    run.diverged = ensemble.diverged;
    run.switchedOn = switchedOnMembers(ensemble);
    return run;
}

// DataError unless `data` is something the ensemble in `weights` can be evaluated on.
void checkFits(const LoadedEnsemble& ensemble, const DataSplit& data, const std::string& weights) {
    const int features = ensemble.layout.inputs();
    const int classes = ensemble.layout.classes();
    if (data.train.features != features) {
        throw DataError("dataset " + data.name + " has " + std::to_string(data.train.features) +
                        " features, but the ensemble in " + weights + " takes " +
                        std::to_string(features));
    }
    const bool regression = isRegression(ensemble.config.model.likelihood);
    if (regression && !data.regression) {
        throw DataError("dataset " + data.name +
                        " is a classification dataset, but the ensemble in " + weights +
                        " is a regression model");
    }
    if (!regression && data.regression) {
        throw DataError("dataset " + data.name + " is a regression dataset, but the ensemble in " +
                        weights + " classifies");
    }
    if (!regression && data.classes > classes) {
        throw DataError("dataset " + data.name + " has " + std::to_string(data.classes) +
                        " classes, but the ensemble in " + weights + " predicts " +
                        std::to_string(classes));
    }
}

std::string signedText(double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%+.4f", v);
    return buf;
}

std::size_t fileColumnWidth(const std::vector<std::string>& files) {
    std::size_t width = 4;
    for (const std::string& f : files) {
        width = std::max(width, f.size());
    }
    return width;
}

// A table cell of a value that may be NaN (an mse model has no NLL where a sigma is 0).
std::string cellText(double v, int width, bool sign = false) {
    char buf[32];
    if (std::isfinite(v)) {
        std::snprintf(buf, sizeof buf, sign ? "%+*.4f" : "%*.4f", width, v);
    } else {
        std::snprintf(buf, sizeof buf, "%*s", width, "-");
    }
    return buf;
}

// eval with several regression --weights: a row per file with the ensemble's RMSE and NLL (in
// the target's own units, as eval of one file prints them) and their difference to the first.
ExitCode compareRegressions(const CliArgs& args, const std::vector<std::string>& files,
                            const std::vector<LoadedEnsemble>& ensembles,
                            const std::vector<ExperimentConfig>& configs, const DataSplit& data,
                            const Dataset& evaluated, bool useTest) {
    if (args.has("--ood")) {
        std::fprintf(stderr, "--ood: out-of-distribution scores are for classification; skipped\n");
    }
    std::vector<int> used;
    std::vector<RegressionMetrics> rows;
    for (std::size_t i = 0; i < files.size(); ++i) {
        const LoadedEnsemble& e = ensembles[i];
        const std::vector<uint8_t> include = includedMembers(e);
        used.push_back(static_cast<int>(std::count(include.begin(), include.end(), uint8_t{1})));
        if (used.back() == 0) {
            throw RuntimeError(files[i] +
                               ": no member is left in the ensemble (each diverged or is "
                               "switched off), so there is nothing to evaluate");
        }
        const MemberPredictions p = predict(e, evaluated, configs[i].backend.threads);
        rows.push_back(evaluateRegression(p, evaluated.target, include, e.normalization.targetMean,
                                          e.normalization.targetStd, useTest ? "test" : "train")
                           .ensemble);
    }
    const int width = static_cast<int>(fileColumnWidth(files));
    std::printf("%s split of %s: %lld rows, regression; differences to %s\n\n",
                useTest ? "test" : "train", data.name.c_str(),
                static_cast<long long>(evaluated.rows), files[0].c_str());
    std::printf("%-*s %9s %9s %10s %9s %9s %10s %10s\n", width, "file", "members", "step",
                "likelihood", "rmse", "nll", "d rmse", "d nll");
    for (std::size_t i = 0; i < files.size(); ++i) {
        const RegressionMetrics& m = rows[i];
        char members[32];
        std::snprintf(members, sizeof members, "%d/%d", used[i], ensembles[i].layout.members());
        const char* likelihood =
            ensembles[i].config.model.likelihood == Likelihood::Gaussian ? "gaussian" : "mse";
        std::printf("%-*s %9s %9lld %10s %s %s", width, files[i].c_str(), members,
                    static_cast<long long>(ensembles[i].step), likelihood,
                    cellText(m.rmse, 9).c_str(), cellText(m.nll, 9).c_str());
        if (i == 0) {
            std::printf(" %10s %10s\n", "-", "-");
            continue;
        }
        std::printf(" %s %s\n", cellText(m.rmse - rows[0].rmse, 10, true).c_str(),
                    cellText(m.nll - rows[0].nll, 10, true).c_str());
    }
    return ExitCode::Ok;
}

// eval with several --weights: one table, a row per file with the ensemble's headline metrics
// and their difference to the first file's, all on the test split of their shared dataset.
ExitCode compareEnsembles(const CliArgs& args, const std::vector<std::string>& files) {
    if (args.has("--report") || args.has("--csv")) {
        throw ConfigError(std::string(args.has("--report") ? "--report" : "--csv") +
                          " writes the report of one ensemble, and " +
                          std::to_string(files.size()) +
                          " --weights were given: run eval once per file for its report");
    }
    std::vector<LoadedEnsemble> ensembles;
    std::vector<ExperimentConfig> configs;
    for (const std::string& file : files) {
        ensembles.push_back(importEnsemble(file));
        bool datasetChanged = false;
        configs.push_back(evalConfig(ensembles.back(), args, datasetChanged));
    }
    for (std::size_t i = 1; i < files.size(); ++i) {
        const std::vector<std::string> differ =
            changedKeys(json{{"dataset", configs[0].json["dataset"]}},
                        json{{"dataset", configs[i].json["dataset"]}});
        if (!differ.empty()) {
            const KeySpec& spec = keySpec(differ.front());
            const auto value = [&](const ExperimentConfig& c) {
                return jsonForMessage(*valueOrDefault(c.json, spec));
            };
            throw ConfigError("--weights: " + files[0] + " and " + files[i] +
                              " were trained on different datasets (" + spec.key + " " +
                              value(configs[0]) + " vs " + value(configs[i]) +
                              "); eval compares ensembles of one dataset");
        }
    }
    const DataSplit data = loadDataSplit(configs[0].dataset);
    for (std::size_t i = 0; i < files.size(); ++i) {
        // The files share the dataset, so this also makes them all classifiers or all
        // regression models.
        checkFits(ensembles[i], data, files[i]);
    }
    const bool useTest = data.test.rows > 0;
    const Dataset& evaluated = useTest ? data.test : data.train;
    if (!useTest) {
        std::fprintf(stderr, "the test split is empty: evaluating the train split\n");
    }
    if (data.regression) {
        return compareRegressions(args, files, ensembles, configs, data, evaluated, useTest);
    }
    Dataset oodData;
    std::string oodName;
    if (args.has("--ood")) {
        oodData =
            loadOod(args.get("--ood"), configs[0].dataset, ensembles[0].layout.inputs(), oodName);
    }

    struct Row {
        int used = 0;
        ClassificationMetrics metrics;
        double oodAuroc = 0.0;
    };
    std::vector<Row> rows;
    for (std::size_t i = 0; i < files.size(); ++i) {
        const LoadedEnsemble& e = ensembles[i];
        const std::vector<uint8_t> include = includedMembers(e);
        Row row;
        row.used = static_cast<int>(std::count(include.begin(), include.end(), uint8_t{1}));
        if (row.used == 0) {
            throw RuntimeError(files[i] +
                               ": no member is left in the ensemble (each diverged or is "
                               "switched off), so there is no ensemble to evaluate");
        }
        const MemberPredictions p = predict(e, evaluated, configs[i].backend.threads);
        const PointStatistics stats = pointStatistics(p, include, evaluated.y);
        row.metrics = classificationMetrics(stats);
        if (args.has("--ood")) {
            const MemberPredictions q = predict(e, oodData, configs[i].backend.threads);
            row.oodAuroc = oodMetrics(stats, pointStatistics(q, include)).mutualInformation.auroc;
        }
        rows.push_back(row);
    }

    const std::size_t width = fileColumnWidth(files);
    const bool ood = args.has("--ood");
    std::printf("%s split of %s: %lld rows, %d classes; differences to %s\n\n",
                useTest ? "test" : "train", data.name.c_str(),
                static_cast<long long>(evaluated.rows), data.classes, files[0].c_str());
    std::printf("%-*s %9s %9s %9s %9s %9s %9s%s %10s %10s %10s %10s%s\n", static_cast<int>(width),
                "file", "members", "step", "accuracy", "nll", "ece", "brier",
                ood ? "  ood auroc" : "", "d accuracy", "d nll", "d ece", "d brier",
                ood ? "  d ood auroc" : "");
    for (std::size_t i = 0; i < files.size(); ++i) {
        const Row& r = rows[i];
        const ClassificationMetrics& m = r.metrics;
        const ClassificationMetrics& f = rows[0].metrics;
        char members[32];
        std::snprintf(members, sizeof members, "%d/%d", r.used, ensembles[i].layout.members());
        std::printf("%-*s %9s %9lld %9.4f %9.4f %9.4f %9.4f", static_cast<int>(width),
                    files[i].c_str(), members, static_cast<long long>(ensembles[i].step),
                    m.accuracy, m.nll, m.ece, m.brier);
        if (ood) {
            std::printf(" %10.4f", r.oodAuroc);
        }
        if (i == 0) {
            std::printf(" %10s %10s %10s %10s%s\n", "-", "-", "-", "-", ood ? "            -" : "");
            continue;
        }
        std::printf(" %10s %10s %10s %10s", signedText(m.accuracy - f.accuracy).c_str(),
                    signedText(m.nll - f.nll).c_str(), signedText(m.ece - f.ece).c_str(),
                    signedText(m.brier - f.brier).c_str());
        if (ood) {
            std::printf(" %12s", signedText(r.oodAuroc - rows[0].oodAuroc).c_str());
        }
        std::printf("\n");
    }
    return ExitCode::Ok;
}

void printRegressionSummary(const RegressionReport& r, const std::string& dataset,
                            const std::vector<uint8_t>& on) {
    const std::size_t k = r.members.size();
    std::printf("%s split of %s: %lld rows, %s likelihood, %d of %zu members in the ensemble\n\n",
                r.split.c_str(), dataset.c_str(), static_cast<long long>(r.points.rows),
                r.likelihood == Likelihood::Gaussian ? "gaussian" : "mse", r.points.members, k);
    std::printf("%-12s %9s %9s %9s %9s %9s %9s\n", "", "rmse", "mae", "nll", "cover90", "cal gap",
                "sharpness");
    const auto cell = [](double v) {
        char buf[32];
        if (std::isfinite(v)) {
            std::snprintf(buf, sizeof buf, " %9.4f", v);
        } else {
            std::snprintf(buf, sizeof buf, " %9s", "-");
        }
        return std::string(buf);
    };
    const auto row = [&](const std::string& label, const RegressionMetrics& m, const char* note) {
        std::printf("%-12s%s%s%s%s%s%s%s\n", label.c_str(), cell(m.rmse).c_str(),
                    cell(m.mae).c_str(), cell(m.nll).c_str(), cell(m.coverage[1]).c_str(),
                    cell(m.calibrationGap).c_str(), cell(m.sharpness).c_str(), note);
    };
    for (std::size_t i = 0; i < k; ++i) {
        if (i >= 8 && i + 3 < k) {
            if (i == 8) {
                std::printf("%-12s (%zu more members)\n", "...", k - 11);
            }
            continue;
        }
        row("member " + std::to_string(i), r.members[i], leftOutNote(r.included, on, i));
    }
    row("ensemble", r.ensemble, "");
    std::printf("\nmean std: aleatoric %.4f, epistemic %.4f (raw target units)\n",
                r.aleatoricStdMean, r.epistemicStdMean);
}

ExitCode evalRegression(const LoadedEnsemble& ensemble, const ExperimentConfig& config,
                        const DataSplit& data, const CliArgs& args, const std::string& weights) {
    const bool useTest = data.test.rows > 0;
    const Dataset& evaluated = useTest ? data.test : data.train;
    if (!useTest) {
        std::fprintf(stderr, "the test split is empty: evaluating the train split\n");
    }
    const MemberPredictions predictions = predict(ensemble, evaluated, config.backend.threads);
    const std::vector<uint8_t> include = includedMembers(ensemble);
    // The model's own target units, as stored with the weights.
    const RegressionReport report = evaluateRegression(
        predictions, evaluated.target, include, ensemble.normalization.targetMean,
        ensemble.normalization.targetStd, useTest ? "test" : "train");
    json j = reportJson(report, runFactsOf(ensemble, data));
    j["weights"] = weights;
    printRegressionSummary(report, data.name, switchedOnMembers(ensemble));
    if (args.has("--alpha")) {
        // Split conformal intervals mu +- q sigma (metrics/conformal.h) on the seeded halves.
        const double alpha = parseAlpha(args, "--alpha", kDefaultConformalAlpha);
        const RowHalves halves = splitHalves(evaluated.rows, ensemble.config.ensemble.seed);
        const auto pick = [&](const std::vector<double>& v, const std::vector<int64_t>& rows) {
            return selectValues(v, rows);
        };
        const double q =
            calibrateIntervals(pick(report.points.mean, halves.calibration),
                               pick(report.points.variance, halves.calibration),
                               selectValues(evaluated.target, halves.calibration), alpha);
        const ConformalIntervals iv = measureIntervals(
            q, alpha, static_cast<int64_t>(halves.calibration.size()),
            pick(report.points.mean, halves.measure), pick(report.points.variance, halves.measure),
            selectValues(evaluated.target, halves.measure));
        j["conformal"] = {
            {"alpha", alpha},
            {"rows",
             {{"calibration", halves.calibration.size()}, {"measure", halves.measure.size()}}},
            {"halves", halvesJson(halves)},
            {"intervals",
             {{"score", "|y - mu| / sigma"},
              {"threshold", jsonNumber(iv.threshold)},
              {"coverage", jsonNumber(iv.coverage)},
              {"width_mean", jsonNumber(iv.widthMean)}}}};
        std::printf(
            "conformal intervals (alpha %.3g, %zu rows calibrate, %lld measure): mu +- %.4f "
            "sigma, coverage %.4f, mean width %.4f\n",
            alpha, halves.calibration.size(), static_cast<long long>(iv.rows), iv.threshold,
            iv.coverage, iv.widthMean);
    }
    if (args.has("--ood")) {
        std::fprintf(stderr, "--ood: out-of-distribution scores are for classification; skipped\n");
    }
    if (args.has("--report")) {
        writeFileAtomic(args.get("--report"), j.dump(2) + "\n");
        std::fprintf(stderr, "wrote the report to %s\n", args.get("--report").c_str());
    }
    if (args.has("--csv")) {
        writeRegressionCsvs(args.get("--csv"), report, evaluated.target);
        std::fprintf(stderr,
                     "wrote uncertainty.csv, members.csv, calibration.csv and size_curve.csv to "
                     "%s\n",
                     args.get("--csv").c_str());
    }
    return ExitCode::Ok;
}

}  // namespace

ExitCode commandEval(const CliArgs& args) {
    const std::vector<std::string> files = args.all("--weights");
    if (files.size() > 1) {
        return compareEnsembles(args, files);
    }
    const std::string weights = args.require("--weights");
    const LoadedEnsemble ensemble = importEnsemble(weights);
    bool datasetChanged = false;
    const ExperimentConfig config = evalConfig(ensemble, args, datasetChanged);
    const DataSplit data = loadDataSplit(config.dataset);
    const int features = ensemble.layout.inputs();
    const int classes = ensemble.layout.classes();
    checkFits(ensemble, data, weights);
    if (isRegression(ensemble.config.model.likelihood)) {
        return evalRegression(ensemble, config, data, args, weights);
    }
    const int threads = config.backend.threads;
    const bool useTest = data.test.rows > 0;
    const Dataset& evaluated = useTest ? data.test : data.train;
    if (!useTest) {
        std::fprintf(stderr, "the test split is empty: evaluating the train split\n");
    }
    const MemberPredictions predictions = predict(ensemble, evaluated, threads);

    EvaluationInput input;
    input.predictions = &predictions;
    input.labels = &evaluated.y;
    input.include = includedMembers(ensemble);

    // Out-of-bag needs the train rows the counts were drawn for.
    MemberPredictions train;
    std::string oobNote;
    if (ensemble.counts.empty()) {
        oobNote = "no bootstrap (ensemble.bootstrap = none): every member saw every row";
    } else if (datasetChanged) {
        oobNote =
            "the dataset was overridden, so its train rows are not the ones the bootstrap "
            "counts were drawn for";
    } else if (ensemble.trainRows != data.train.rows) {
        oobNote = "the bootstrap counts are for " + std::to_string(ensemble.trainRows) +
                  " train rows but the dataset has " + std::to_string(data.train.rows);
    } else {
        train = predict(ensemble, data.train, threads);
        input.train = &train;
        input.trainLabels = &data.train.y;
        input.counts = &ensemble.counts;
    }
    if (!oobNote.empty() && !ensemble.counts.empty()) {
        std::fprintf(stderr, "out-of-bag skipped: %s\n", oobNote.c_str());
    }

    MemberPredictions ood;
    if (args.has("--ood")) {
        std::string name = args.get("--ood");
        Dataset oodData;
        if (!generatedOod(name, data, ensemble.normalization, evaluated.rows,
                          ensemble.config.ensemble.seed, oodData)) {
            oodData = loadOod(args.get("--ood"), config.dataset, features, name);
        }
        ood = predict(ensemble, oodData, threads);
        input.ood = &ood;
        input.oodName = name;
    }

    EvaluationOptions options;
    options.split = useTest ? "test" : "train";
    options.seed = ensemble.config.ensemble.seed;
    options.positiveClassReliability = classes == 2;
    if (args.has("--alpha")) {
        options.conformalAlpha = parseAlpha(args, "--alpha", kDefaultConformalAlpha);
    }
    const EnsembleReport report = evaluateEnsemble(input, options);

    // The same builder as `train --metrics` and the app's export (metrics/report.h); a loaded
    // ensemble has no epoch and no training-time loss; its switches are those at its step.
    json j = reportJson(report, runFactsOf(ensemble, data));
    j["weights"] = weights;
    if (!oobNote.empty()) {
        j["oob"]["reason"] = oobNote;
    }
    printSummary(report, data.name, switchedOnMembers(ensemble));
    if (args.has("--report")) {
        writeFileAtomic(args.get("--report"), j.dump(2) + "\n");
        std::fprintf(stderr, "wrote the report to %s\n", args.get("--report").c_str());
    }
    if (args.has("--csv")) {
        writeReportCsvs(args.get("--csv"), report, evaluated.y);
        std::fprintf(stderr,
                     "wrote reliability.csv, size_curve.csv, uncertainty.csv and "
                     "members.csv to %s\n",
                     args.get("--csv").c_str());
    }
    return ExitCode::Ok;
}

}  // namespace ensemble::cli
