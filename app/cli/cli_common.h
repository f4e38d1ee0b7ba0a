#pragma once

// What the ensemble-cli commands share: the parsed command line, the config it names, the
// processes of the run (MPI's world or one process), the setup every rank must agree on, and
// the formatting of rates. The commands themselves are declared in cli/commands.h.

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "config/config.h"
#include "core/exit_codes.h"
#include "dist/collective.h"

namespace ensemble {
class Trainer;
}

namespace ensemble::cli {

// The processes of this run: MPI's world under mpirun, else one process (main() sets it).
Collective& world();
void setWorld(Collective* collective);

// Parsed command line: `ensemble-cli <command> [<subcommand>] [ARG | --flag value]...
// [--set key=value]...`.
struct CliArgs {
    std::string command;                         // "train", or "runs show": what messages name
    std::map<std::string, std::string> options;  // --flag value
    // Every value of a repeatable flag, in order (a flag listed as "--weights..." in the
    // command's table; any other flag given twice is a usage error).
    std::map<std::string, std::vector<std::string>> repeated;
    std::vector<std::string> sets;         // every --set, in order
    std::vector<std::string> switches;     // flags without a value (e.g. --quiet)
    std::vector<std::string> positionals;  // the arguments that are no flag, in order
    std::vector<std::string> words;        // every argument after the command's name, as given

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

// What a command (or a subcommand) takes. `valueFlags` take a value ("--weights..." marks one
// that may be repeated: args.all() has every value, args.get() the first); `switchFlags` do
// not. `positionals` name the arguments that are no flag, as the synopsis writes them: "ID"
// is required, "[ID]" optional, and a last "ID..." takes one or more, "[ID...]" any number.
struct ArgumentSpec {
    std::vector<std::string> valueFlags;
    std::vector<std::string> switchFlags;
    std::vector<std::string> positionals;
};

// Parses `words` (the command line after the command's, or the subcommand's, name). Throws
// ConfigError for a flag the command does not know, a flag missing its value, a flag given
// twice that is not repeatable, a missing positional argument or one too many. A word that
// starts with '-' is a flag, except after "--".
CliArgs parseArgs(const std::string& command, const std::vector<std::string>& words,
                  const ArgumentSpec& spec);

// The integer value of `flag`, `fallback` when it is absent; ConfigError naming the flag when
// it is not an integer >= `lowest`.
int64_t parseCount(const CliArgs& args, const std::string& flag, int64_t fallback, int64_t lowest);

// The conformal alpha of `flag` (--alpha), `fallback` when absent; ConfigError naming the flag
// unless it is a number strictly between 0 and 1.
double parseAlpha(const CliArgs& args, const std::string& flag, double fallback);

// --config FILE|PRESET (optional: defaults), then the --set list as one layer over it; notices
// about keys the layer made inapplicable go to stderr.
nlohmann::json configJsonFrom(const CliArgs& args);
// configJsonFrom, parsed; the values that parse but cannot train (configWarnings) go to stderr
// as "warning: <key>: <why>" (the rank 0 only), and the command runs.
ExperimentConfig configFrom(const CliArgs& args);
void printConfigWarnings(const nlohmann::json& config);

// "1.23M", "45.6k", "7.8": a rate for a progress line.
std::string formatRate(double perSecond);

// Every rank runs `setup`; when it threw on any rank, rank 0 prints each failing rank's message
// (once per distinct message, naming the ranks) and every rank returns the largest exit code
// (exitCodeFor), so a rank that cannot start never leaves the others waiting. Returns nothing
// when every rank succeeded, else this rank's exit code (rank 0: the largest, the others Ok).
// In one process the exception propagates.
std::optional<ExitCode> agreeOnSetup(Collective& world, const char* command,
                                     const std::function<void()>& setup);

// backend.mesh against the ranks this run has. Under mpirun E x D must be the rank count (a
// ConfigError naming both); in one process a mesh other than "auto" is ignored with a notice.
void resolveMesh(const ExperimentConfig& config, Collective& world);

// Every rank's backend ("cuda:1 (NVIDIA H100 ...)", "cpu (1 thread)") on rank 0, in rank order
// (empty elsewhere), and, unless `quiet`, one line per rank saying it: each rank's device, once.
// A collective call.
std::vector<std::string> logRankDevices(const Trainer& trainer, bool quiet);

}  // namespace ensemble::cli
