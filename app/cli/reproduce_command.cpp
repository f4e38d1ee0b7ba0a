// ensemble-cli reproduce: a published experiment rerun and set beside the paper
// (engine/reproduce/reproduce.h). --list names the registered ones; `reproduce ID` runs one
// (ID/LEVEL[,LEVEL] only those levels), a line per run on stdout, progress on stderr, the
// report rewritten after every run (an interrupted run keeps what it finished), then the table
// of ours (mean ± standard error) beside the paper's number and spread with each verdict;
// --figure draws them (reproduce/figure.h), rewritten after every run as the report is.
#include <unistd.h>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "cli/cli_common.h"
#include "cli/command_run.h"
#include "cli/commands.h"
#include "cli/interrupt.h"
#include "core/errors.h"
#include "metrics/report.h"
#include "reproduce/figure.h"
#include "reproduce/reproduce.h"
#include "sys/atomic_file.h"

namespace ensemble::cli {
namespace {

using reproduce::costText;
using reproduce::Reproduction;

ExitCode listReproductions() {
    std::printf("%-22s %-42s %-10s %-10s %s\n", "id", "paper", "cost", "--quick", "data");
    for (const Reproduction& r : reproduce::reproductions()) {
        std::string why;
        const bool present = reproduce::dataPresent(r, &why);
        const std::string paper = r.cite + ", " + r.where;
        std::printf("%-22s %-42s %-10s %-10s %s\n", r.id.c_str(), paper.substr(0, 42).c_str(),
                    costText(r.costSeconds).c_str(), costText(r.quickCostSeconds).c_str(),
                    present ? "present" : "missing");
        if (!present) {
            std::printf("    %s\n", why.c_str());
        }
        if (r.costMeasuredOn != reproduce::reproductions().front().costMeasuredOn) {
            std::printf("    cost: %s\n", r.costMeasuredOn.c_str());
        }
    }
    std::printf(
        "\ncost: the whole row and --quick, %s: at most that long on two cores of its own.\n"
        "ensemble-cli reproduce ID runs one (ID/LEVEL: one level).\n",
        reproduce::reproductions().front().costMeasuredOn.c_str());
    return ExitCode::Ok;
}

// "ID" or "ID/LEVEL[,LEVEL...]".
const Reproduction& reproductionNamed(const std::string& text, std::vector<std::string>& levels) {
    const std::size_t slash = text.find('/');
    const std::string id = text.substr(0, slash);
    const Reproduction* r = reproduce::findReproduction(id);
    if (r == nullptr) {
        std::string known;
        for (const Reproduction& row : reproduce::reproductions()) {
            known += (known.empty() ? "" : ", ") + row.id;
        }
        throw ConfigError("reproduce: no reproduction '" + id + "' (" + known +
                          "; --list shows them)");
    }
    if (slash != std::string::npos) {
        std::size_t start = slash + 1;
        while (start <= text.size()) {
            const std::size_t comma = std::min(text.find(',', start), text.size());
            levels.push_back(text.substr(start, comma - start));
            start = comma + 1;
        }
    }
    return *r;
}

std::string runName(const Reproduction& r, const reproduce::PlannedRun& run) {
    return run.level + " " + r.unit + " " + std::to_string(run.index);
}

}  // namespace

ExitCode commandReproduce(const CliArgs& args) {
    if (args.flag("--list")) {
        if (!args.positionals.empty()) {
            throw ConfigError("--list: give no ID (it lists every reproduction)");
        }
        return listReproductions();
    }
    if (args.positionals.empty()) {
        throw ConfigError("reproduce: name a reproduction (ID, or ID/LEVEL), or --list them");
    }
    reproduce::ReproduceOptions options;
    const Reproduction& r = reproductionNamed(args.positionals.front(), options.levels);
    if (args.has("--splits") && args.has("--seeds")) {
        throw ConfigError("--splits and --seeds: give one (a count of runs per level)");
    }
    const std::string countFlag = r.unit == "split" ? "--splits" : "--seeds";
    const std::string otherFlag = r.unit == "split" ? "--seeds" : "--splits";
    if (args.has(otherFlag)) {
        throw ConfigError(otherFlag + ": " + r.id + " repeats over " + r.unit + "s; use " +
                          countFlag);
    }
    options.count = static_cast<int>(parseCount(args, countFlag, 0, 1));
    options.quick = args.flag("--quick");
    options.overrides = args.sets;

    if (args.flag("--print-config")) {
        nlohmann::json runs = nlohmann::json::array();
        for (const reproduce::PlannedRun& run : reproduce::planRuns(r, options)) {
            nlohmann::json entry = {
                {"level", run.level}, {r.unit, run.index}, {"config", run.config}};
            if (!run.otherConfig.is_null()) {
                entry["other_config"] = run.otherConfig;
            }
            runs.push_back(std::move(entry));
        }
        std::printf("%s\n", runs.dump(2).c_str());
        return ExitCode::Ok;
    }
    std::string why;
    if (!reproduce::dataPresent(r, &why)) {
        throw DataError(r.id + ": its data are missing: " + why);
    }

    if (args.has("--figure")) {
        resolveOutputPath(args.get("--figure"));  // a directory is refused now, not after the runs
    }
    const std::vector<reproduce::PlannedRun> plan = reproduce::planRuns(r, options);
    CommandRun record(args, "reproduce", plan.front().config);
    std::printf("%s: %s\n%s, %s\nruns: %s\n", r.id.c_str(), r.title.c_str(), r.paper.c_str(),
                r.where.c_str(), r.runs.c_str());
    if (r.costSeconds > 0.0) {
        std::printf("%zu run%s%s; the whole row measured at %s on two cores (--quick %s)\n",
                    plan.size(), plan.size() == 1 ? "" : "s", options.quick ? " (--quick)" : "",
                    costText(r.costSeconds).c_str(), costText(r.quickCostSeconds).c_str());
    } else {
        std::printf("%zu run%s%s; cost %s\n", plan.size(), plan.size() == 1 ? "" : "s",
                    options.quick ? " (--quick)" : "", r.costMeasuredOn.c_str());
    }
    for (const std::string& d : r.deviations) {
        std::printf("deviation: %s\n", d.c_str());
    }
    std::printf("\n");
    std::fflush(stdout);

    const auto writeOutputs = [&](const reproduce::ReproductionResult& result) {
        if (args.has("--report")) {
            writeFileAtomic(args.get("--report"), reproduce::reportJson(result).dump(2) + "\n");
        }
        if (args.has("--figure")) {
            writeFileAtomic(args.get("--figure"), reproduce::figureSvg(result));
        }
    };
    const bool tty = isatty(fileno(stderr)) != 0;
    bool progressShown = false;
    reproduce::ReproduceHooks hooks;
    const StopOnInterrupt stopOnInterrupt;
    hooks.cancel = &stopRequested();
    hooks.progress = [&](const reproduce::ReproduceProgress& p) {
        if (p.steps == 0) {
            return;  // a run starting: its first slice reports
        }
        progressShown = true;
        std::fprintf(stderr, "%s[%zu/%zu] %s: step %lld/%lld, %.0f s%s", tty ? "\r" : "", p.run + 1,
                     p.runs, runName(r, *p.planned).c_str(), static_cast<long long>(p.step),
                     static_cast<long long>(p.steps), p.elapsed, tty ? "   " : "\n");
    };
    hooks.afterRun = [&](const reproduce::ReproductionResult& result) {
        if (progressShown && tty) {
            std::fprintf(stderr, "\r%70s\r", "");
        }
        const reproduce::RunOutcome& o = result.outcomes.back();
        std::printf("[%zu/%zu] %-32s", result.outcomes.size(), result.plan.size(),
                    runName(r, result.plan[result.outcomes.size() - 1]).c_str());
        for (const auto& [name, value] : o.figures) {
            std::printf(" %s %.4g", name.c_str(), value);
        }
        std::printf("  (%.1f s)\n", o.seconds);
        std::fflush(stdout);
        writeOutputs(result);
    };
    const reproduce::ReproductionResult result = reproduce::runReproduction(r, options, hooks);
    if (progressShown && tty) {
        std::fprintf(stderr, "\r%70s\r", "");
    }

    std::printf("\n%s", reproduce::resultTable(result).c_str());
    std::printf("%zu of %zu runs in %.1f s on %s\n", result.outcomes.size(), result.plan.size(),
                result.seconds, result.backend.c_str());
    writeOutputs(result);
    if (args.has("--report")) {
        std::fprintf(stderr, "wrote the report to %s\n", args.get("--report").c_str());
        record.addFile(args.get("--report"), "report");
    }
    if (args.has("--figure")) {
        std::fprintf(stderr, "wrote the figure to %s\n", args.get("--figure").c_str());
        record.addFile(args.get("--figure"), "figure");
    }
    if (args.has("--csv")) {
        const std::filesystem::path dir = createCsvFolder(args.get("--csv"));
        for (const auto& [name, text] : reproduce::resultCsvs(result)) {
            writeFileAtomic((dir / name).string(), text);
            record.addFile((dir / name).string(), "csv");
        }
        std::fprintf(stderr, "wrote the CSV files to %s\n", args.get("--csv").c_str());
    }
    if (!result.complete) {
        std::fprintf(stderr, "interrupted: the report holds the %zu runs that finished\n",
                     result.outcomes.size());
    }
    const ExitCode code = result.complete ? ExitCode::Ok : interruptExitCode();
    record.finish(code, reproduce::resultFigures(result));
    return code;
}

}  // namespace ensemble::cli
