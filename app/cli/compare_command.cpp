// ensemble-cli compare: the ensemble methods (model/ensemble_methods.h) trained on the same data
// with the same K, steps and seed and measured side by side (engine/compare/compare.h): one
// table on stdout, progress on stderr, the report as JSON and the table as CSV.
#include <unistd.h>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <string>

#include "cli/cli_common.h"
#include "cli/command_run.h"
#include "cli/commands.h"
#include "cli/interrupt.h"
#include "compare/compare.h"
#include "core/errors.h"
#include "metrics/report.h"
#include "sys/atomic_file.h"

namespace ensemble::cli {
namespace {

using Clock = std::chrono::steady_clock;

std::string cell(double v, int width, int precision) {
    char buf[48];
    if (std::isfinite(v)) {
        std::snprintf(buf, sizeof buf, " %*.*f", width, precision, v);
    } else {
        std::snprintf(buf, sizeof buf, " %*s", width, "-");
    }
    return buf;
}

CompareOptions optionsFrom(const CliArgs& args) {
    CompareOptions options;
    if (args.has("--shift")) {
        const std::string name = args.get("--shift");
        if (!enumFromName(name, options.shiftKind)) {
            throw ConfigError("--shift: '" + name + "' is not a shift (" + namesText<ShiftKind>() +
                              ")");
        }
        if (options.shiftKind != CompareOptions{}.shiftKind && !args.has("--level")) {
            throw ConfigError("--shift " + name + ": give its --level (the default level " +
                              std::to_string(CompareOptions{}.shiftLevel) + " is " +
                              toString(CompareOptions{}.shiftKind) + "'s)");
        }
    }
    if (args.has("--level")) {
        const std::string text = args.get("--level");
        char* end = nullptr;
        options.shiftLevel = std::strtod(text.c_str(), &end);
        if (end == text.c_str() || *end != '\0' || !std::isfinite(options.shiftLevel)) {
            throw ConfigError("--level: expected a number, got '" + text + "'");
        }
    }
    return options;
}

// "nll noise 0.3": the shift_nll column's header, the shift and level named.
std::string shiftHeader(const CompareResult& r) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "nll %s %g", toString(r.shiftKind), r.shiftLevel);
    return buf;
}

void printTable(const CompareResult& r) {
    const std::string shift = shiftHeader(r);
    const int shiftWidth = std::max<int>(9, static_cast<int>(shift.size()));
    std::printf("%-14s %8s %8s %8s %8s %9s %*s %11s %9s %12s %9s %7s\n", "method", "accuracy",
                "nll", "brier", "ece", "ood auroc", shiftWidth, shift.c_str(), "parameters",
                "train s", "predict s/1k", "peak MiB", "ood MI");
    for (const MethodComparison& m : r.methods) {
        std::printf("%-14s%s%s%s%s%s%s %11lld%s%s%s%s\n", toString(m.method),
                    cell(m.accuracy, 8, 4).c_str(), cell(m.nll, 8, 4).c_str(),
                    cell(m.brier, 8, 4).c_str(), cell(m.ece, 8, 4).c_str(),
                    cell(m.oodAuroc, 9, 4).c_str(), cell(m.shiftNll, shiftWidth, 4).c_str(),
                    static_cast<long long>(m.parameters), cell(m.trainSeconds, 9, 2).c_str(),
                    cell(m.predictSecondsPer1000, 12, 5).c_str(), cell(m.peakRssMib, 9, 1).c_str(),
                    cell(m.oodMeanMi, 7, 4).c_str());
    }
    std::printf(
        "\naccuracy, nll (nats), brier, ece: the ensemble on the %lld %s rows; ood auroc: mutual "
        "information,\n",
        static_cast<long long>(r.rows), r.split.c_str());
    if (r.oodName.empty()) {
        std::printf(
            "  none for this data (no OOD set: the ring is for 2-D points, noise for images);\n");
    } else {
        std::printf(
            "  the %s rows against as many %s points; ood MI: the mean mutual information "
            "(nats) over those points;\n",
            r.split.c_str(), r.oodName.c_str());
    }
    std::printf(
        "%s: the %s rows under %s at level %g (%s); parameters: what the method stores;\n"
        "train s: seconds of training; predict s/1k: seconds to predict 1,000 rows with every "
        "member;\npeak MiB: the process's peak resident memory during the method (%s).\n",
        shift.c_str(), r.split.c_str(), toString(r.shiftKind), r.shiftLevel, r.shiftUnit.c_str(),
        r.peakRssSource == "VmHWM" ? "VmHWM, reset per method"
                                   : "getrusage: the process's peak so far, not reset");
    for (const MethodComparison& m : r.methods) {
        if (m.divergedMembers > 0) {
            std::printf("%s: %d of %d members diverged (a non-finite loss froze them)%s\n",
                        toString(m.method), m.divergedMembers, r.members,
                        m.divergedMembers >= r.members ? "; no ensemble to measure" : "");
        }
    }
}

}  // namespace

ExitCode commandCompare(const CliArgs& args) {
    args.require("--config");
    const std::vector<EnsembleMethod> methods =
        args.has("--methods") ? parseMethodList(args.get("--methods")) : allEnsembleMethods();
    const CompareOptions options = optionsFrom(args);
    const ExperimentConfig config = configFrom(args);

    std::string names;
    for (EnsembleMethod m : methods) {
        names += (names.empty() ? "" : ", ") + std::string(toString(m));
    }
    CommandRun run(args, "compare", config.json);
    std::fprintf(stderr, "comparing %s: K = %d, seed %llu\n", names.c_str(),
                 config.ensemble.members, static_cast<unsigned long long>(config.ensemble.seed));

    const StopOnInterrupt stopOnInterrupt;
    const bool tty = isatty(fileno(stderr)) != 0;
    const auto start = Clock::now();
    auto lastLine = start;
    bool progressShown = false;
    const auto onProgress = [&](const CompareProgress& p) {
        const auto now = Clock::now();
        const double elapsed = std::chrono::duration<double>(now - start).count();
        // A line a second in a log, redrawn on a terminal; each method's measuring always.
        const bool measuring = p.phase == ComparePhase::Measuring;
        if (!measuring &&
            (elapsed < 1.0 || std::chrono::duration<double>(now - lastLine).count() < 1.0)) {
            return;
        }
        lastLine = now;
        progressShown = true;
        std::fprintf(stderr, "%smethod %d/%d %s: %s %lld/%lld, %.0f s%s", tty ? "\r" : "",
                     p.method + 1, p.methods, toString(p.value),
                     measuring ? "measuring after step" : "step", static_cast<long long>(p.step),
                     static_cast<long long>(p.totalSteps), elapsed, tty ? "   " : "\n");
    };
    const CompareResult result =
        compareMethods(config, methods, options, onProgress, &stopRequested());
    const double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
    if (progressShown && tty) {
        std::fprintf(stderr, "\n");
    }
    if (!result.backendNotice.empty()) {
        std::fprintf(stderr, "%s\n", result.backendNotice.c_str());
    }
    std::printf("%s: K = %d, %lld steps, seed %llu, %zu of %zu methods\n\n", result.dataset.c_str(),
                result.members, static_cast<long long>(result.steps),
                static_cast<unsigned long long>(result.seed), result.methods.size(),
                methods.size());
    printTable(result);
    std::fflush(stdout);

    if (args.has("--report")) {
        writeFileAtomic(args.get("--report"), compareReportJson(result).dump(2) + "\n");
        std::fprintf(stderr, "wrote the report to %s\n", args.get("--report").c_str());
        run.addFile(args.get("--report"), "report");
    }
    if (args.has("--csv")) {
        const std::filesystem::path dir = createCsvFolder(args.get("--csv"));
        writeFileAtomic((dir / "compare.csv").string(), compareCsv(result));
        std::fprintf(stderr, "wrote compare.csv to %s\n", args.get("--csv").c_str());
        run.addFile((dir / "compare.csv").string(), "csv");
    }
    std::fprintf(stderr, "%zu method%s in %.1f s\n", result.methods.size(),
                 result.methods.size() == 1 ? "" : "s", elapsed);
    if (!result.complete) {
        std::fprintf(stderr,
                     "interrupted: the table and the report hold the %zu finished method%s\n",
                     result.methods.size(), result.methods.size() == 1 ? "" : "s");
    }
    const ExitCode code = result.complete ? ExitCode::Ok : interruptExitCode();
    run.finish(code, compareHeadlineFigures(result));
    return code;
}

}  // namespace ensemble::cli
