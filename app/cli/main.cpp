// ensemble-cli: the engine without a window. One table below names every command (name,
// synopsis, summary, flags); the help text and the dispatch both read it, so a command is one
// file (cli/<name>_command.cpp) and one row. Exit codes are a public contract, listed in
// core/exit_codes.h; messages go to stderr and say what was expected.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <exception>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "cli/cli_common.h"
#include "cli/commands.h"
#include "cli/interrupt.h"
#include "core/exit_codes.h"
#include "sys/allocator.h"
#include "version.h"
#ifdef ENSEMBLE_HAVE_MPI
#include "dist/mpi_collective.h"
#endif

namespace {

using ensemble::ExitCode;
using ensemble::exitStatus;
using ensemble::cli::CliArgs;

struct Command {
    const char* name;
    // The arguments, one form per line; lines after the first continue it.
    const char* synopsis;
    const char* summary;
    std::vector<std::string> valueFlags;
    std::vector<std::string> switchFlags;
    ExitCode (*run)(const CliArgs&);
    // Whether the command runs on every rank under mpirun (train, bench); the others run on
    // rank 0 alone, as they would without mpirun.
    bool distributed = false;
    // The arguments that are no flag, as the synopsis names them (cli_common.h's ArgumentSpec).
    std::vector<std::string> positionals = {};
    // A command of subcommands (`runs list`, `runs show ID`) has no `run` of its own.
    std::vector<Command> subcommands = {};

    ensemble::cli::ArgumentSpec arguments() const { return {valueFlags, switchFlags, positionals}; }
};

const std::vector<Command>& commands() {
    static const std::vector<Command> table = {
        {"train",
         "[--config FILE.json|PRESET | --resume C.safetensors] [--set key=value]...\n"
         "[--export W.safetensors|.onnx|.npz] [--metrics M.json]\n"
         "[--checkpoint C.safetensors [--checkpoint-every N]] [--quiet] [--no-record]",
         "train an ensemble, or resume a checkpoint; write its weights, metrics, checkpoints",
         {"--config", "--set", "--export", "--metrics", "--checkpoint", "--checkpoint-every",
          "--resume"},
         {"--quiet", "--no-record"},
         ensemble::cli::commandTrain,
         true},
        {"predict",
         "--weights W.safetensors --input X.csv --output P.csv [--threads N]",
         "the ensemble's and every member's predictions for the rows of a CSV file",
         {"--weights", "--input", "--output", "--threads"},
         {},
         ensemble::cli::commandPredict},
        {"export",
         "--weights W.safetensors --out F.onnx|F.npz|F.safetensors\n"
         "[--format safetensors|onnx|npz]   (default: the --out extension)",
         "convert an export or a checkpoint to safetensors, ONNX or .npz",
         {"--weights", "--out", "--format"},
         {},
         ensemble::cli::commandExport},
        {"dataset",
         "--config FILE.json|PRESET [--set key=value]... --out D.csv [--split train|test]",
         "write the train or test split of a config's dataset as CSV",
         {"--config", "--set", "--out", "--split"},
         {},
         ensemble::cli::commandDataset},
        {"bench",
         "--config FILE.json|PRESET [--set key=value]... [--steps N] [--warmup N]\n"
         "[--repeat R] [--predict ROWS] [--json OUT.json] [--calibrate-auto]",
         "training (and prediction) throughput of a config: the median of repeats; "
         "--calibrate-auto instead measures and caches the calibration backend.kind=auto decides "
         "by",
         {"--config", "--set", "--steps", "--warmup", "--repeat", "--predict", "--json"},
         {"--calibrate-auto"},
         ensemble::cli::commandBench,
         true},
        {"eval",
         "--weights W.safetensors [--weights W2.safetensors]... [--config FILE.json|PRESET]\n"
         "[--set key=value]... [--ood fashion-mnist|mnist|uniform-noise|ring|FILE.csv]\n"
         "[--alpha A] [--report R.json] [--csv DIR]   (--report and --csv: one --weights)",
         "every measurement of an exported ensemble on its test split; several side by side",
         {"--weights...", "--config", "--set", "--ood", "--alpha", "--report", "--csv"},
         {},
         ensemble::cli::commandEval},
        {"shift",
         "--weights W.safetensors --shift rotate|translate|noise|scale [--levels a,b,...]\n"
         "[--alpha 0.1] [--subset N] [--report R.json] [--csv DIR] [--no-record]",
         "the ensemble on its test split under a dataset shift, level by level",
         {"--weights", "--shift", "--levels", "--alpha", "--subset", "--report", "--csv"},
         {"--no-record"},
         ensemble::cli::commandShift},
        {"active",
         "--config FILE.json|PRESET [--set key=value]...\n"
         "[--acquisition bald,entropy,random] [--seeds 3] [--rounds N | --labels N]\n"
         "[--report R.json] [--csv DIR] [--no-record]",
         "active learning: label the pool rows each acquisition picks, round by round",
         {"--config", "--set", "--acquisition", "--seeds", "--rounds", "--labels", "--report",
          "--csv"},
         {"--no-record"},
         ensemble::cli::commandActive},
        {"compare",
         "--config FILE.json|PRESET [--set key=value]...\n"
         "[--methods independent,mc_dropout,batchensemble,snapshot]   (default: every method)\n"
         "[--shift noise|rotate|translate|scale --level L]   (default: noise 0.3)\n"
         "[--report R.json] [--csv DIR] [--no-record]",
         "train each ensemble method on the same data, K, steps and seed; one table side by side",
         {"--config", "--set", "--methods", "--shift", "--level", "--report", "--csv"},
         {"--no-record"},
         ensemble::cli::commandCompare},
        {"reproduce",
         "ID[/LEVEL,...] [--splits N | --seeds N] [--quick] [--set key=value]...\n"
         "[--report R.json] [--csv DIR] [--figure F.svg] [--print-config] [--no-record]\n"
         "--list",
         "rerun a published experiment and set ours beside the paper's numbers, with verdicts",
         {"--splits", "--seeds", "--set", "--report", "--csv", "--figure"},
         {"--list", "--quick", "--print-config", "--no-record"},
         ensemble::cli::commandReproduce,
         false,
         {"[ID]"}},
        {"config",
         "[--config FILE.json|PRESET] [--set key=value]...",
         "print the full config: the keys that apply, defaults filled in",
         {"--config", "--set"},
         {},
         ensemble::cli::commandConfig},
        {"schema",
         "[--format markdown|json]",
         "every config key: default, range, meaning",
         {"--format"},
         {},
         ensemble::cli::commandSchema},
        {"presets",
         "",
         "the built-in presets' names, one a line",
         {},
         {},
         ensemble::cli::commandPresets},
        {"runs",
         "list|show|diff|tag|note|rm|export ...   (ensemble-cli runs --help: each)",
         "the runs every command and the app recorded: list, compare, tag, note, remove",
         {},
         {},
         nullptr,
         false,
         {},
         {
             {"list",
              "[FILTER]... [--sort FIELD] [--limit N] [--columns A,B,...]\n"
              "[--format table|csv|json] [--store S.sqlite]",
              "the runs that match every FILTER (preset=spirals, figure.test_nll<0.3), "
              "newest first",
              {"--sort", "--limit", "--columns", "--format", "--store"},
              {},
              ensemble::cli::commandRunsList,
              false,
              {"[FILTER...]"}},
             {"show",
              "ID [--format text|json] [--store S.sqlite]",
              "one run: its config, figures, curves, files and the command that reproduces it",
              {"--format", "--store"},
              {},
              ensemble::cli::commandRunsShow,
              false,
              {"ID"}},
             {"diff",
              "A B [--format text|json] [--store S.sqlite]",
              "two runs side by side: the config keys that differ and every figure",
              {"--format", "--store"},
              {},
              ensemble::cli::commandRunsDiff,
              false,
              {"A", "B"}},
             {"tag",
              "ID TAG... [--remove] [--store S.sqlite]",
              "add tags to a run, or take them off",
              {"--store"},
              {"--remove"},
              ensemble::cli::commandRunsTag,
              false,
              {"ID", "TAG..."}},
             {"note",
              "ID TEXT [--store S.sqlite]",
              "set a run's note (\"\" clears it)",
              {"--store"},
              {},
              ensemble::cli::commandRunsNote,
              false,
              {"ID", "TEXT"}},
             {"rm",
              "ID... [--files] [--store S.sqlite]",
              "remove runs from the store; --files also deletes the files they wrote",
              {"--store"},
              {"--files"},
              ensemble::cli::commandRunsRemove,
              false,
              {"ID..."}},
             {"export",
              "--out RUNS.csv|RUNS.json [FILTER]... [--sort FIELD] [--limit N]\n"
              "[--columns A,B,...] [--store S.sqlite]",
              "write the runs that match as a CSV table or as JSON (every field)",
              {"--out", "--sort", "--limit", "--columns", "--store"},
              {},
              ensemble::cli::commandRunsExport,
              false,
              {"[FILTER...]"}},
         }},
    };
    return table;
}

// The synopsis's lines, the first after `lead`, the others under it.
void printSynopsis(std::FILE* to, const char* lead, const char* synopsis) {
    const int indent = static_cast<int>(std::strlen(lead));
    std::string_view rest = synopsis;
    bool first = true;
    while (!rest.empty()) {
        const std::size_t end = rest.find('\n');
        const std::string_view line = rest.substr(0, end);
        std::fprintf(to, "%*s%.*s\n", first ? 0 : indent, first ? lead : "",
                     static_cast<int>(line.size()), line.data());
        rest = end == std::string_view::npos ? std::string_view{} : rest.substr(end + 1);
        first = false;
    }
}

// Each command's name and summary on a line, its synopsis under the summary: the names in a
// column as wide as the longest and a blank (bash completion and the man-page check read a
// name as the word after two blanks).
void printCommandList(std::FILE* to, const std::vector<Command>& list) {
    std::size_t width = 0;
    for (const Command& c : list) {
        width = std::max(width, std::strlen(c.name));
    }
    const std::string indent(2 + width + 1, ' ');
    for (const Command& c : list) {
        std::fprintf(to, "  %-*s %s\n", static_cast<int>(width), c.name, c.summary);
        printSynopsis(to, indent.c_str(), c.synopsis);
    }
}

void printUsage(std::FILE* to) {
    std::fprintf(to,
                 "ensemble-cli: train, evaluate and use ensembles of small neural networks.\n\n"
                 "usage: ensemble-cli <command> [options]   (ensemble-cli <command> --help: "
                 "its options)\n"
                 "       ensemble-cli --version\n\n");
    printCommandList(to, commands());
    std::fprintf(
        to,
        "\n--config takes a JSON file or a built-in preset name; --set key=value overrides "
        "a\ndotted config key (the value is read as JSON when it parses). See docs/cli.md.\n"
        "Exit codes:");
    // The rows of core/exit_codes.h, wrapped as a paragraph.
    int column = 11;
    const char* separator = " ";
    for (const ensemble::ExitCodeRow& row : ensemble::kExitCodeTable) {
        char item[96];
        const int width = std::snprintf(item, sizeof item, "%d %s", row.status, row.meaning);
        if (column + width + 2 > 90) {
            std::fprintf(to, ",\n");
            column = 0;
            separator = "";
        }
        column += std::fprintf(to, "%s%s", separator, item);
        separator = ", ";
    }
    std::fprintf(to, ".\n");
}

void printCommandUsage(const Command& c, const std::string& name) {
    const std::string lead = "usage: ensemble-cli " + name + " ";
    if (c.synopsis[0] == '\0') {
        std::printf("usage: ensemble-cli %s\n", name.c_str());
    }
    printSynopsis(stdout, lead.c_str(), c.synopsis);
    std::printf("%s\n", c.summary);
}

// A command of subcommands: a usage line, each subcommand as the overview lists commands, then
// the command's summary last (as every command's help ends; tests/checks reads it there).
void printSubcommandsUsage(std::FILE* to, const Command& c) {
    std::fprintf(to,
                 "usage: ensemble-cli %s <subcommand> [arguments]   (ensemble-cli %s "
                 "<subcommand> --help: its arguments)\n",
                 c.name, c.name);
    printCommandList(to, c.subcommands);
    std::fprintf(to, "%s\n", c.summary);
}

// Under mpirun a failure after the ranks stopped agreeing (a file rank 0 cannot write while
// the others wait in a gather) ends the whole job with this rank's message and exit code,
// never a hang; in one process it is the exit code.
ExitCode fail(const std::string& name, const char* what, ExitCode code) {
    ensemble::Collective& world = ensemble::cli::world();
    if (!world.distributed()) {
        std::fprintf(stderr, "ensemble-cli %s: %s\n", name.c_str(), what);
        return code;
    }
    std::fprintf(stderr, "ensemble-cli %s (rank %d of %d): %s\n", name.c_str(), world.rank(),
                 world.ranks(), what);
    world.abort(exitStatus(code));
    return code;  // not reached
}

ExitCode runCommand(int argc, char** argv) {
    if (argc < 2 || std::strcmp(argv[1], "--help") == 0 || std::strcmp(argv[1], "-h") == 0 ||
        std::strcmp(argv[1], "help") == 0) {
        if (ensemble::launcherRank() <= 0) {
            printUsage(argc < 2 ? stderr : stdout);
        }
        return argc < 2 ? ExitCode::Usage : ExitCode::Ok;
    }
    if (std::strcmp(argv[1], "--version") == 0) {
        if (ensemble::launcherRank() <= 0) {
            std::printf("ensemble-cli %s\n", ensemble::versionText());
        }
        return ExitCode::Ok;
    }
    const std::string name = argv[1];
    for (const Command& c : commands()) {
        if (name != c.name) {
            continue;
        }
        // Under mpirun only train and bench run on every rank; rank 0 runs the others, as one
        // process would, without initialising MPI.
        const int launched = ensemble::launcherRank();
        if (!c.distributed && launched > 0) {
            return ExitCode::Ok;
        }
        // Before MPI starts its threads: they inherit the blocked signals (cli/interrupt.h).
        ensemble::cli::installInterruptHandling(c.name);
        std::unique_ptr<ensemble::Collective> mpi;
        if (c.distributed && launched >= 0) {
#ifdef ENSEMBLE_HAVE_MPI
            try {
                mpi = ensemble::startMpi(&argc, &argv);
            } catch (const std::exception& e) {
                std::fprintf(stderr, "ensemble-cli %s: %s\n", c.name, e.what());
                return ExitCode::Runtime;
            }
            ensemble::cli::setWorld(mpi.get());
#else
            if (ensemble::launcherSize() > 1) {
                std::fprintf(stderr,
                             "ensemble-cli %s: started by mpirun with %d ranks, but this build "
                             "has no MPI (configure with -DENSEMBLE_MPI=ON and libopenmpi-dev)\n",
                             c.name, ensemble::launcherSize());
                return ExitCode::Usage;
            }
#endif
        }
        // A command of subcommands: argv[2] names one.
        const Command* target = &c;
        std::string fullName = c.name;
        int first = 2;
        if (!c.subcommands.empty()) {
            const bool asked = argc > 2 && (std::strcmp(argv[2], "--help") == 0 ||
                                            std::strcmp(argv[2], "-h") == 0);
            if (argc < 3 || asked) {
                printSubcommandsUsage(asked ? stdout : stderr, c);
                return asked ? ExitCode::Ok : ExitCode::Usage;
            }
            const auto sub =
                std::find_if(c.subcommands.begin(), c.subcommands.end(),
                             [&](const Command& s) { return std::strcmp(argv[2], s.name) == 0; });
            if (sub == c.subcommands.end()) {
                std::fprintf(stderr, "ensemble-cli %s: unknown subcommand '%s'\n\n", c.name,
                             argv[2]);
                printSubcommandsUsage(stderr, c);
                return ExitCode::Usage;
            }
            target = &*sub;
            fullName += std::string(" ") + sub->name;
            first = 3;
        }
        try {
            const CliArgs args = ensemble::cli::parseArgs(
                fullName, std::vector<std::string>(argv + first, argv + argc), target->arguments());
            if (args.flag("--help")) {
                if (ensemble::cli::world().root()) {
                    printCommandUsage(*target, fullName);
                }
                ensemble::cli::setWorld(nullptr);
                return ExitCode::Ok;
            }
            const ExitCode code = target->run(args);
            ensemble::cli::setWorld(nullptr);
            return code;
        } catch (const std::exception& e) {
            return fail(fullName, e.what(), ensemble::exitCodeFor(e));
        }
    }
    if (ensemble::launcherRank() <= 0) {
        std::fprintf(stderr, "ensemble-cli: unknown command '%s'\n\n", name.c_str());
        printUsage(stderr);
    }
    return ExitCode::Usage;
}

}  // namespace

int main(int argc, char** argv) {
    ensemble::keepFreedMemoryForReuse();
    return exitStatus(runCommand(argc, argv));
}
