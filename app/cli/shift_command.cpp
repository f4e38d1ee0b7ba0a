// ensemble-cli shift: an exported ensemble on its test split moved by one shift kind at each of
// its levels (engine/shift/shift_report.h): a table row per level, the report as JSON and CSV.
#include <unistd.h>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <string>

#include "cli/cli_common.h"
#include "cli/command_run.h"
#include "cli/commands.h"
#include "cli/interrupt.h"
#include "core/errors.h"
#include "data/dataset.h"
#include "io/model_io.h"
#include "shift/shift_report.h"
#include "sys/atomic_file.h"

namespace ensemble::cli {
namespace {

using Clock = std::chrono::steady_clock;

std::string cell(double v, int width = 8) {
    char buf[32];
    if (std::isfinite(v)) {
        std::snprintf(buf, sizeof buf, " %*.4f", width, v);
    } else {
        std::snprintf(buf, sizeof buf, " %*s", width, "-");
    }
    return buf;
}

void printClassificationTable(const ShiftReport& r) {
    std::printf("%-8s %8s %8s %8s %8s %8s %8s %8s %8s %8s %8s %8s\n", "level", "acc", "nll",
                "brier", "ece", "mem nll", "mem brr", "ts nll", "ts ece", "coverage", "set size",
                "aurc");
    for (const ShiftLevelReport& l : r.levels) {
        const MemberSpread nll = memberSpread(l.members, &ShiftMetrics::nll);
        const MemberSpread brier = memberSpread(l.members, &ShiftMetrics::brier);
        std::printf("%-8g%s%s%s%s%s%s%s%s%s%s%s\n", l.level, cell(l.ensemble.accuracy).c_str(),
                    cell(l.ensemble.nll).c_str(), cell(l.ensemble.brier).c_str(),
                    cell(l.ensemble.ece).c_str(), cell(nll.median).c_str(),
                    cell(brier.median).c_str(), cell(l.ensembleTs.nll).c_str(),
                    cell(l.ensembleTs.ece).c_str(), cell(l.ensembleTs.coverage).c_str(),
                    cell(l.ensembleTs.setSizeMean).c_str(), cell(l.ensembleTs.aurc).c_str());
    }
    std::printf(
        "\nacc/nll/brier/ece: the ensemble on all %lld rows; mem: the members' median; ts: the "
        "temperature-scaled\nensemble (T = %.4f) on the %lld measuring rows, with the LAC "
        "set's coverage (1 - alpha = %.2f)\nand mean size at the in-distribution threshold, "
        "and the AURC by max-probability.\n",
        static_cast<long long>(r.rows), r.temperature, static_cast<long long>(r.measureRows),
        1.0 - r.alpha);
}

void printRegressionTable(const ShiftReport& r) {
    std::printf("%-8s %8s %8s %8s %8s %8s\n", "level", "rmse", "nll", "cover90", "conf cov",
                "width");
    for (const ShiftLevelReport& l : r.levels) {
        const ShiftRegressionMetrics& e = l.regressionEnsemble;
        std::printf("%-8g%s%s%s%s%s\n", l.level, cell(e.rmse).c_str(), cell(e.nll).c_str(),
                    cell(e.coverage90).c_str(), cell(e.intervalCoverage).c_str(),
                    cell(e.intervalWidthMean).c_str());
    }
    std::printf(
        "\nrmse/nll/cover90: the ensemble on all %lld rows; conf cov, width: the conformal "
        "interval mu +- %.4f sigma\n(fitted on the unshifted calibration half, 1 - alpha = "
        "%.2f) on the %lld measuring rows.\n",
        static_cast<long long>(r.rows), r.intervalThreshold, 1.0 - r.alpha,
        static_cast<long long>(r.measureRows));
}

}  // namespace

ExitCode commandShift(const CliArgs& args) {
    const std::string weights = args.require("--weights");
    ShiftOptions options;
    const std::string kindName = args.require("--shift");
    if (!enumFromName(kindName, options.kind)) {
        throw ConfigError("--shift: '" + kindName + "' is not a shift (" + namesText<ShiftKind>() +
                          ")");
    }
    if (args.has("--levels")) {
        options.levels = parseShiftLevels(args.get("--levels"));
    }
    options.alpha = parseAlpha(args, "--alpha", kDefaultConformalAlpha);
    options.subset = parseCount(args, "--subset", 0, 1);
    const LoadedEnsemble ensemble = importEnsemble(weights);
    options.seed = ensemble.config.ensemble.seed;
    options.threads = ensemble.config.backend.threads;
    DatasetConfig datasetConfig = ensemble.config.dataset;
    // The runs store's entry: the export's config, the weights as the file it measured.
    CommandRun run(args, "shift", ensemble.config.json);
    run.addFile(weights, "weights");
    run.setParentFromFile(weights, "measured");
    const DataSplit data = loadDataSplit(datasetConfig);
    checkShiftApplies(options.kind, data);

    const StopOnInterrupt stopOnInterrupt;
    const bool tty = isatty(fileno(stderr)) != 0;
    const auto start = Clock::now();
    auto lastLine = start;
    bool printed = false;
    const auto onProgress = [&](const ShiftProgress& p) {
        const auto now = Clock::now();
        const double elapsed = std::chrono::duration<double>(now - start).count();
        // Work over a second shows progress: redrawn on a terminal, a line a second in a log.
        if (elapsed < 1.0 || std::chrono::duration<double>(now - lastLine).count() < 1.0) {
            return;
        }
        lastLine = now;
        printed = true;
        std::fprintf(stderr, "%sshift %s: level %d/%d, %lld/%lld rows predicted, %.0f s%s",
                     tty ? "\r" : "", kindName.c_str(), p.level + 1, p.levels,
                     static_cast<long long>(p.rowsDone), static_cast<long long>(p.rowsTotal),
                     elapsed, tty ? "   " : "\n");
    };
    const ShiftReport report =
        computeShiftReport(ensemble, data, options, onProgress, &stopRequested());
    const double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
    if (printed && tty) {
        std::fprintf(stderr, "\n");
    }
    std::printf(
        "%s of %s (%s): %lld of %lld test rows, %zu of %d members, alpha %.3g, seed "
        "%llu; %lld rows calibrate, %lld measure\n\n",
        kindName.c_str(), data.name.c_str(),
        shiftKindInfo(options.kind).levels[static_cast<std::size_t>(report.data)].unit,
        static_cast<long long>(report.rows), static_cast<long long>(report.testRows),
        report.members.size(), report.membersTotal, report.alpha,
        static_cast<unsigned long long>(report.seed),
        static_cast<long long>(report.calibrationRows), static_cast<long long>(report.measureRows));
    if (report.regression) {
        printRegressionTable(report);
    } else {
        printClassificationTable(report);
    }
    if (report.ood) {
        std::printf(
            "OOD %s (%lld rows): AUROC max-prob %.4f, entropy %.4f, MI %.4f; AUPR %.4f / "
            "%.4f / %.4f\n",
            report.oodName.c_str(), static_cast<long long>(report.ood->outRows),
            report.ood->maxProbability.auroc, report.ood->entropy.auroc,
            report.ood->mutualInformation.auroc, report.ood->maxProbability.aupr,
            report.ood->entropy.aupr, report.ood->mutualInformation.aupr);
    }
    std::fprintf(stderr, "%zu levels in %.1f s\n", report.levels.size(), elapsed);
    if (!report.complete) {
        std::fprintf(stderr, "interrupted: %zu of the levels were measured\n",
                     report.levels.size());
    }
    nlohmann::json j = shiftReportJson(report);
    j["weights"] = weights;
    if (args.has("--report")) {
        writeFileAtomic(args.get("--report"), j.dump(2) + "\n");
        std::fprintf(stderr, "wrote the report to %s\n", args.get("--report").c_str());
        run.addFile(args.get("--report"), "report");
    }
    if (args.has("--csv")) {
        writeShiftCsvs(args.get("--csv"), report);
        for (const char* name : {"shift_levels.csv", "risk_coverage.csv", "set_sizes.csv"}) {
            if (!report.regression || name == std::string("shift_levels.csv")) {
                run.addFile((std::filesystem::path(args.get("--csv")) / name).string(), "csv");
            }
        }
        std::fprintf(stderr, "wrote shift_levels.csv%s to %s\n",
                     report.regression ? "" : ", risk_coverage.csv and set_sizes.csv",
                     args.get("--csv").c_str());
    }
    const ExitCode code = report.complete ? ExitCode::Ok : interruptExitCode();
    run.finish(code, shiftHeadlineFigures(report));
    return code;
}

}  // namespace ensemble::cli
