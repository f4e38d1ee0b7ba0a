// ensemble-cli: the engine without a window. Exit codes are a public contract:
// 0 success, 2 usage or config error, 3 unreadable or invalid data/weights file,
// 4 runtime failure, 128 + N ended by signal N (130 Ctrl-C / SIGINT, 143 SIGTERM; see
// cli/interrupt.h). Messages go to stderr and say what was expected.
#include <cstdio>
#include <cstring>
#include <exception>
#include <functional>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "cli/cli_args.h"
#include "cli/interrupt.h"
#include "core/errors.h"
#include "sys/allocator.h"
#ifdef ENSEMBLE_HAVE_MPI
#include "dist/mpi_collective.h"
#endif

namespace {

using ensemble::cli::CliArgs;

struct Command {
    const char* name;
    const char* usage;
    std::vector<std::string> valueFlags;
    std::vector<std::string> switchFlags;
    std::function<int(const CliArgs&)> run;
    // Whether the command runs on every rank under mpirun (train, bench); the others run on
    // rank 0 alone, as they would without mpirun.
    bool distributed = false;
};

const std::vector<Command>& commands() {
    static const std::vector<Command> table = {
        {"train",
         "train   --config FILE.json|PRESET [--set key=value]... [--export "
         "W.safetensors|.onnx|.npz]\n"
         "        [--metrics M.json] [--checkpoint C.safetensors [--checkpoint-every N]] "
         "[--quiet]\n"
         "  train   --resume C.safetensors [--set key=value]... (the same outputs)",
         {"--config", "--set", "--export", "--metrics", "--checkpoint", "--checkpoint-every",
          "--resume"},
         {"--quiet"},
         ensemble::cli::commandTrain,
         true},
        {"predict",
         "predict --weights W.safetensors --input X.csv --output P.csv",
         {"--weights", "--input", "--output", "--threads"},
         {},
         ensemble::cli::commandPredict},
        {"export",
         "export  --weights W.safetensors --out F.onnx|F.npz|F.safetensors\n"
         "        [--format safetensors|onnx|npz]   (default: the --out extension)",
         {"--weights", "--out", "--format"},
         {},
         ensemble::cli::commandExport},
        {"dataset",
         "dataset --config FILE.json|PRESET [--set key=value]... --out D.csv [--split train|test]",
         {"--config", "--set", "--out", "--split"},
         {},
         ensemble::cli::commandDataset},
        {"bench",
         "bench   --config FILE.json|PRESET [--set key=value]... [--steps N] [--warmup N]\n"
         "        [--repeat R] [--predict ROWS] [--json OUT.json]",
         {"--config", "--set", "--steps", "--warmup", "--repeat", "--predict", "--json"},
         {},
         ensemble::cli::commandBench,
         true},
        {"eval",
         "eval    --weights W.safetensors [--weights W2.safetensors]... [--config "
         "FILE.json|PRESET]\n"
         "        [--set key=value]... [--ood fashion-mnist|mnist|FILE.csv] [--report R.json]\n"
         "        [--csv DIR]   (--report and --csv: one --weights)",
         {"--weights...", "--config", "--set", "--ood", "--report", "--csv"},
         {},
         ensemble::cli::commandEval},
        {"config",
         "config  [--config FILE.json|PRESET] [--set key=value]...   (prints the full config)",
         {"--config", "--set"},
         {},
         ensemble::cli::commandConfig},
        {"schema",
         "schema  [--format markdown|json]   (every config key: default, range, meaning)",
         {"--format"},
         {},
         ensemble::cli::commandSchema},
    };
    return table;
}

void printUsage(std::FILE* to) {
    std::fprintf(to,
                 "ensemble-cli: train, evaluate and use ensembles of small neural networks.\n\n"
                 "usage: ensemble-cli <command> [options]\n\n");
    for (const Command& c : commands()) {
        std::fprintf(to, "  %s\n", c.usage);
    }
    std::fprintf(
        to,
        "\n--config takes a JSON file or a built-in preset name; --set key=value overrides "
        "a\ndotted config key (the value is read as JSON when it parses). See docs/cli.md.\n"
        "Exit codes: 0 ok, 2 usage/config error, 3 bad data or weights file, 4 runtime "
        "failure,\n130 interrupted by Ctrl-C (SIGINT), 143 by SIGTERM.\n");
}

// Under mpirun a failure after the ranks stopped agreeing (a file rank 0 cannot write while
// the others wait in a gather) ends the whole job with this rank's message and exit code,
// never a hang; in one process it is the exit code.
int fail(const Command& c, const char* what, int code) {
    ensemble::Collective& world = ensemble::cli::world();
    if (!world.distributed()) {
        std::fprintf(stderr, "ensemble-cli %s: %s\n", c.name, what);
        return code;
    }
    std::fprintf(stderr, "ensemble-cli %s (rank %d of %d): %s\n", c.name, world.rank(),
                 world.ranks(), what);
    world.abort(code);
    return code;  // not reached
}

int runCommand(int argc, char** argv) {
    if (argc < 2 || std::strcmp(argv[1], "--help") == 0 || std::strcmp(argv[1], "-h") == 0 ||
        std::strcmp(argv[1], "help") == 0) {
        if (ensemble::launcherRank() <= 0) {
            printUsage(argc < 2 ? stderr : stdout);
        }
        return argc < 2 ? 2 : 0;
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
            return 0;
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
                return 4;
            }
            ensemble::cli::setWorld(mpi.get());
#else
            if (ensemble::launcherSize() > 1) {
                std::fprintf(stderr,
                             "ensemble-cli %s: started by mpirun with %d ranks, but this build "
                             "has no MPI (configure with -DENSEMBLE_MPI=ON and libopenmpi-dev)\n",
                             c.name, ensemble::launcherSize());
                return 2;
            }
#endif
        }
        try {
            const CliArgs args = ensemble::cli::parseArgs(argc, argv, c.valueFlags, c.switchFlags);
            if (args.flag("--help")) {
                if (ensemble::cli::world().root()) {
                    std::printf("usage: ensemble-cli %s\n", c.usage);
                }
                ensemble::cli::setWorld(nullptr);
                return 0;
            }
            const int code = c.run(args);
            ensemble::cli::setWorld(nullptr);
            return code;
        } catch (const ensemble::ConfigError& e) {
            return fail(c, e.what(), 2);
        } catch (const ensemble::DataError& e) {
            return fail(c, e.what(), 3);
        } catch (const std::exception& e) {
            return fail(c, e.what(), 4);
        }
    }
    if (ensemble::launcherRank() <= 0) {
        std::fprintf(stderr, "ensemble-cli: unknown command '%s'\n\n", name.c_str());
        printUsage(stderr);
    }
    return 2;
}

}  // namespace

int main(int argc, char** argv) {
    ensemble::keepFreedMemoryForReuse();
    return runCommand(argc, argv);
}
