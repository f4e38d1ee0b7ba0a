// ensemble-cli: the engine without a window. Exit codes are a public contract:
// 0 success, 2 usage or config error, 3 unreadable or invalid data/weights file,
// 4 runtime failure, 128 + N ended by signal N (130 Ctrl-C / SIGINT, 143 SIGTERM; see
// cli/interrupt.h). Messages go to stderr and say what was expected.
#include <cstdio>
#include <cstring>
#include <exception>
#include <functional>
#include <iostream>
#include <string>
#include <vector>

#include "cli/cli_args.h"
#include "cli/interrupt.h"
#include "core/errors.h"
#include "sys/allocator.h"

namespace {

using ensemble::cli::CliArgs;

struct Command {
    const char* name;
    const char* usage;
    std::vector<std::string> valueFlags;
    std::vector<std::string> switchFlags;
    std::function<int(const CliArgs&)> run;
};

const std::vector<Command>& commands() {
    static const std::vector<Command> table = {
        {"train",
         "train   --config FILE.json|PRESET [--set key=value]... [--export W.safetensors]\n"
         "        [--metrics M.json] [--checkpoint C.safetensors [--checkpoint-every N]] "
         "[--quiet]\n"
         "  train   --resume C.safetensors [--set key=value]... (the same outputs)",
         {"--config", "--set", "--export", "--metrics", "--checkpoint", "--checkpoint-every",
          "--resume"},
         {"--quiet"},
         ensemble::cli::commandTrain},
        {"predict",
         "predict --weights W.safetensors --input X.csv --output P.csv",
         {"--weights", "--input", "--output", "--threads"},
         {},
         ensemble::cli::commandPredict},
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
         ensemble::cli::commandBench},
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
        "a\ndotted config key (the value is read as JSON when it parses). See README.md.\n"
        "Exit codes: 0 ok, 2 usage/config error, 3 bad data or weights file, 4 runtime "
        "failure,\n130 interrupted by Ctrl-C (SIGINT), 143 by SIGTERM.\n");
}

}  // namespace

int main(int argc, char** argv) {
    ensemble::keepFreedMemoryForReuse();
    if (argc < 2 || std::strcmp(argv[1], "--help") == 0 || std::strcmp(argv[1], "-h") == 0 ||
        std::strcmp(argv[1], "help") == 0) {
        printUsage(argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    const std::string name = argv[1];
    for (const Command& c : commands()) {
        if (name != c.name) {
            continue;
        }
        ensemble::cli::installInterruptHandling(c.name);
        try {
            const CliArgs args = ensemble::cli::parseArgs(argc, argv, c.valueFlags, c.switchFlags);
            if (args.flag("--help")) {
                std::printf("usage: ensemble-cli %s\n", c.usage);
                return 0;
            }
            return c.run(args);
        } catch (const ensemble::ConfigError& e) {
            std::fprintf(stderr, "ensemble-cli %s: %s\n", c.name, e.what());
            return 2;
        } catch (const ensemble::DataError& e) {
            std::fprintf(stderr, "ensemble-cli %s: %s\n", c.name, e.what());
            return 3;
        } catch (const std::exception& e) {
            std::fprintf(stderr, "ensemble-cli %s: %s\n", c.name, e.what());
            return 4;
        }
    }
    std::fprintf(stderr, "ensemble-cli: unknown command '%s'\n\n", name.c_str());
    printUsage(stderr);
    return 2;
}
