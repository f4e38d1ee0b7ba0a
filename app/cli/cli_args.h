#pragma once

#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "dist/collective.h"
#include "io/config.h"

namespace ensemble::cli {

// The processes of this run: MPI's world under mpirun, else one process (main() sets it).
Collective& world();
void setWorld(Collective* collective);

// Parsed command line: `ensemble-cli <command> [--flag value]... [--set key=value]...`.
struct CliArgs {
    std::string command;
    std::map<std::string, std::string> options;  // --flag value
    // Every value of a repeatable flag, in order (a flag listed as "--weights..." in the
    // command's table; any other flag given twice is a usage error).
    std::map<std::string, std::vector<std::string>> repeated;
    std::vector<std::string> sets;      // every --set, in order
    std::vector<std::string> switches;  // flags without a value (e.g. --quiet)

    bool has(const std::string& flag) const { return options.count(flag) > 0; }
    std::string get(const std::string& flag, const std::string& fallback = {}) const {
        const auto it = options.find(flag);
        return it == options.end() ? fallback : it->second;
    }
    // The values of a repeatable flag (empty when it was not given).
    std::vector<std::string> all(const std::string& flag) const {
        const auto it = repeated.find(flag);
        return it == repeated.end() ? std::vector<std::string>{} : it->second;
    }
    bool flag(const std::string& name) const;
    // Throws ConfigError naming the flag when it is missing.
    std::string require(const std::string& flag) const;
};

// Throws ConfigError for a flag the command does not know, a flag missing its value, or a flag
// given twice that is not repeatable. `valueFlags` take a value ("--weights..." marks one that
// may be repeated: args.all() has every value, args.get() the first); `switchFlags` do not.
CliArgs parseArgs(int argc, char** argv, const std::vector<std::string>& valueFlags,
                  const std::vector<std::string>& switchFlags);

// --config FILE|PRESET (optional: defaults), then the --set list as one layer over it; notices
// about keys the layer made inapplicable go to stderr.
nlohmann::json configJsonFrom(const CliArgs& args);
ExperimentConfig configFrom(const CliArgs& args);

// Commands; each returns the process exit code and throws ConfigError / DataError /
// RuntimeError, which main() maps to exit codes 2 / 3 / 4.
int commandTrain(const CliArgs& args);
int commandPredict(const CliArgs& args);
int commandDataset(const CliArgs& args);
// Converts an export (or a checkpoint's export) to safetensors, ONNX or .npz
// (io/export_formats.h); --format, else the --out name's extension, picks the format.
int commandExport(const CliArgs& args);
int commandBench(const CliArgs& args);
int commandEval(const CliArgs& args);
// Validates --config and --set and prints the config that results: exactly the keys that apply,
// defaults filled in (what an export stores).
int commandConfig(const CliArgs& args);
// Prints the config schema: docs/configuration.md's Markdown table, or JSON for tools.
int commandSchema(const CliArgs& args);

}  // namespace ensemble::cli
