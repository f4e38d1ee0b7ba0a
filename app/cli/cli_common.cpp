#include "cli/cli_common.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <utility>
#include <vector>

#include "core/errors.h"
#ifdef ENSEMBLE_HAVE_MPI
#include "dist/mpi_collective.h"
#endif
#include "train/trainer.h"

namespace ensemble::cli {

namespace {

using nlohmann::json;

Collective* g_world = nullptr;

ComposedConfig composedFrom(const CliArgs& args) {
    ComposedConfig composed = composeConfig(args.get("--config"), args.sets);
    for (const std::string& notice :
         world().root() ? composed.notices : std::vector<std::string>{}) {
        std::fprintf(stderr, "note: %s\n", notice.c_str());
    }
    return composed;
}

}  // namespace

Collective& world() {
    return g_world != nullptr ? *g_world : singleProcess();
}

void setWorld(Collective* collective) {
    g_world = collective;
}

bool CliArgs::flag(const std::string& name) const {
    return std::find(switches.begin(), switches.end(), name) != switches.end();
}

std::string CliArgs::require(const std::string& flag) const {
    if (!has(flag)) {
        throw ConfigError("missing " + flag + " (see ensemble-cli " + command + " --help)");
    }
    return get(flag);
}

namespace {

// "[ID...]" -> {"ID", optional, variadic}.
struct PositionalShape {
    std::string name;
    bool optional = false;
    bool variadic = false;
};

PositionalShape positionalShape(std::string text) {
    PositionalShape shape;
    if (text.size() >= 3 && text.compare(text.size() - 3, 3, "...") == 0) {
        shape.variadic = true;
        text.resize(text.size() - 3);
    }
    if (text.size() >= 2 && text.front() == '[' && text.back() == ']') {
        shape.optional = true;
        text = text.substr(1, text.size() - 2);
    }
    if (text.size() >= 3 && text.compare(text.size() - 3, 3, "...") == 0) {
        shape.variadic = true;
        text.resize(text.size() - 3);
    }
    shape.name = text;
    return shape;
}

// The positional arguments against the spec's names: one error naming what is missing or extra.
void checkPositionals(const CliArgs& args, const std::vector<std::string>& names) {
    std::size_t required = 0;
    bool unbounded = false;
    for (const std::string& name : names) {
        const PositionalShape shape = positionalShape(name);
        required += shape.optional ? 0 : 1;
        unbounded = unbounded || shape.variadic;
    }
    const std::size_t given = args.positionals.size();
    const std::string help = " (see ensemble-cli " + args.command + " --help)";
    if (given < required) {
        const PositionalShape missing = positionalShape(names[std::min(given, names.size() - 1)]);
        throw ConfigError("missing " + missing.name + help);
    }
    if (!unbounded && given > names.size()) {
        const std::string& extra = args.positionals[names.size()];
        throw ConfigError("unexpected argument '" + extra + "' for " + args.command +
                          (names.empty() ? ", which takes flags only" : "") + help);
    }
}

}  // namespace

CliArgs parseArgs(const std::string& command, const std::vector<std::string>& words,
                  const ArgumentSpec& spec) {
    CliArgs args;
    args.command = command;
    args.words = words;
    const auto listed = [](const std::vector<std::string>& list, const std::string& item) {
        return std::find(list.begin(), list.end(), item) != list.end();
    };
    bool flagsEnded = false;
    for (std::size_t i = 0; i < words.size(); ++i) {
        std::string arg = words[i];
        if (flagsEnded || arg.empty() || arg[0] != '-' || arg == "-") {
            args.positionals.push_back(arg);
            continue;
        }
        if (arg == "--") {
            flagsEnded = true;
            continue;
        }
        std::string value;
        bool inlineValue = false;
        const auto eq = arg.find('=');
        if (arg.rfind("--", 0) == 0 && eq != std::string::npos) {
            value = arg.substr(eq + 1);
            arg = arg.substr(0, eq);
            inlineValue = true;
        }
        if (arg == "--help" || arg == "-h") {
            args.switches.push_back("--help");
            continue;
        }
        if (listed(spec.switchFlags, arg)) {
            args.switches.push_back(arg);
            continue;
        }
        const bool repeatable = listed(spec.valueFlags, arg + "...");
        if (!repeatable && !listed(spec.valueFlags, arg)) {
            throw ConfigError("unknown option '" + arg + "' for " + args.command +
                              " (see ensemble-cli " + args.command + " --help)");
        }
        if (!inlineValue) {
            if (i + 1 >= words.size()) {
                throw ConfigError(arg + " needs a value");
            }
            value = words[++i];
        }
        if (arg == "--set") {
            args.sets.push_back(value);
        } else if (repeatable) {
            args.repeated[arg].push_back(value);
            args.options.emplace(arg, value);  // the first
        } else if (args.has(arg)) {
            // Keeping only the last would silently ignore the others.
            throw ConfigError(arg + " given twice ('" + args.get(arg) + "' and '" + value +
                              "'): give it once");
        } else {
            args.options[arg] = value;
        }
    }
    if (!args.flag("--help")) {
        checkPositionals(args, spec.positionals);
    }
    return args;
}

json configJsonFrom(const CliArgs& args) {
    return composedFrom(args).json;
}

ExperimentConfig configFrom(const CliArgs& args) {
    const ComposedConfig composed = composedFrom(args);
    ExperimentConfig config = parseConfig(composed);
    printConfigWarnings(composed.json);
    return config;
}

void printConfigWarnings(const json& config) {
    if (!world().root()) {
        return;
    }
    for (const ConfigWarning& warning : configWarnings(config)) {
        std::fprintf(stderr, "warning: %s\n", warning.text().c_str());
    }
}

int64_t parseCount(const CliArgs& args, const std::string& flag, int64_t fallback, int64_t lowest) {
    if (!args.has(flag)) {
        return fallback;
    }
    const std::string text = args.get(flag);
    char* end = nullptr;
    const long long value = std::strtoll(text.c_str(), &end, 10);
    if (end == text.c_str() || *end != '\0' || value < lowest) {
        throw ConfigError(flag + ": expected an integer >= " + std::to_string(lowest) + ", got '" +
                          text + "'");
    }
    return value;
}

double parseAlpha(const CliArgs& args, const std::string& flag, double fallback) {
    if (!args.has(flag)) {
        return fallback;
    }
    const std::string text = args.get(flag);
    char* end = nullptr;
    const double value = std::strtod(text.c_str(), &end);
    if (end == text.c_str() || *end != '\0' || !(value > 0.0 && value < 1.0)) {
        throw ConfigError(flag +
                          ": expected a number between 0 and 1 (exclusive), such as 0.1, got '" +
                          text + "'");
    }
    return value;
}

std::string formatRate(double perSecond) {
    char buf[32];
    if (perSecond >= 1e6) {
        std::snprintf(buf, sizeof buf, "%.2fM", perSecond / 1e6);
    } else if (perSecond >= 1e3) {
        std::snprintf(buf, sizeof buf, "%.1fk", perSecond / 1e3);
    } else {
        std::snprintf(buf, sizeof buf, "%.1f", perSecond);
    }
    return buf;
}

std::optional<ExitCode> agreeOnSetup(Collective& world, const char* command,
                                     const std::function<void()>& setup) {
    if (!world.distributed()) {
        setup();
        return std::nullopt;
    }
    ExitCode code = ExitCode::Ok;
    std::string message;
    try {
        setup();
    } catch (const std::exception& e) {
        code = exitCodeFor(e);
        message = e.what();
    }
    const auto worst = static_cast<ExitCode>(static_cast<int>(world.max(exitStatus(code))));
    if (worst == ExitCode::Ok) {
        return std::nullopt;
    }
    // Rank 0 reports and alone exits non-zero: mpirun then returns its code (a rank that fails
    // first makes mpirun stop the others, which would also report being stopped).
    const std::vector<std::string> messages = world.gatherText(message);
    if (world.root()) {
        std::vector<std::pair<std::string, std::vector<int>>> distinct;
        for (std::size_t r = 0; r < messages.size(); ++r) {
            if (messages[r].empty()) {
                continue;
            }
            auto it = std::find_if(distinct.begin(), distinct.end(),
                                   [&](const auto& d) { return d.first == messages[r]; });
            if (it == distinct.end()) {
                distinct.push_back({messages[r], {}});
                it = distinct.end() - 1;
            }
            it->second.push_back(static_cast<int>(r));
        }
        for (const auto& [text, ranks] : distinct) {
            std::string who;
            for (int r : ranks) {
                who += (who.empty() ? "" : ", ") + std::to_string(r);
            }
            std::fprintf(stderr, "ensemble-cli %s (rank%s %s of %d): %s\n", command,
                         ranks.size() > 1 ? "s" : "", who.c_str(), world.ranks(), text.c_str());
        }
    }
    world.barrier();
    return world.root() ? worst : ExitCode::Ok;
}

void resolveMesh(const ExperimentConfig& config, Collective& world) {
    const BackendConfig& b = config.backend;
    if (!world.distributed()) {
        if (!b.meshAuto()) {
            std::fprintf(stderr,
                         "note: backend.mesh {\"ensemble\": %d, \"data\": %d} is ignored: this "
                         "is one process (run it under mpirun -n %d)\n",
                         b.meshEnsemble, b.meshData, b.meshEnsemble * b.meshData);
        }
        return;
    }
    // auto: every rank on the ensemble axis, or on the data axis for a method whose members
    // share their training (it cannot split them).
    const bool shared = ensembleMethodInfo(config.ensemble.method).sharedTraining;
    const Mesh mesh = !b.meshAuto() ? Mesh{b.meshEnsemble, b.meshData}
                      : shared      ? Mesh{1, world.ranks()}
                                    : Mesh{world.ranks(), 1};
    if (mesh.ensemble * mesh.data != world.ranks()) {
        throw ConfigError("backend.mesh", "the mesh " + std::to_string(mesh.ensemble) + " x " +
                                              std::to_string(mesh.data) + " needs " +
                                              std::to_string(mesh.ensemble * mesh.data) +
                                              " ranks but mpirun "
                                              "started " +
                                              std::to_string(world.ranks()));
    }
    if (config.ensemble.members < mesh.ensemble) {
        throw ConfigError("backend.mesh",
                          "ensemble.members = " + std::to_string(config.ensemble.members) +
                              " is fewer than the " + std::to_string(mesh.ensemble) +
                              " ranks of the ensemble axis: every rank needs a "
                              "member");
    }
#ifdef ENSEMBLE_HAVE_MPI
    setMpiMesh(world, mesh);
#endif
}

std::vector<std::string> logRankDevices(const Trainer& trainer, bool quiet) {
    Collective& world = trainer.collective();
    if (!world.distributed()) {
        return {};
    }
    std::vector<std::string> names = world.gatherText(trainer.backend().name());
    for (std::size_t r = 0; r < names.size() && !quiet; ++r) {
        std::fprintf(stderr, "rank %zu of %d: %s\n", r, world.ranks(), names[r].c_str());
    }
    return names;
}

}  // namespace ensemble::cli
