#include "cli/command_run.h"

#include <cstdio>
#include <filesystem>
#include <system_error>
#include <utility>

#include "cli/interrupt.h"
#include "config/command_line.h"
#include "runs/run_store.h"
#include "version.h"

namespace ensemble::cli {

namespace {

// --config's name as the entry's preset: a preset as given, a file's name without its folder
// and extension ("sweep" for experiments/sweep.json).
std::string presetOf(const CliArgs& args) {
    const std::string config = args.get("--config");
    if (config.empty()) {
        return {};
    }
    return std::filesystem::path(config).stem().string();
}

// A word that names a file relative to the working folder: the command only reproduces from
// that folder.
bool namesRelativeFile(const std::string& word) {
    static const char* const kExtensions[] = {".json", ".csv", ".safetensors", ".onnx", ".npz",
                                              ".svg",  ".png", ".gz",          ".idx",  ".ubyte"};
    const std::filesystem::path path(word);
    if (path.is_absolute() || word.empty() || word[0] == '-') {
        return false;
    }
    if (word.find('/') != std::string::npos) {
        return true;
    }
    const std::string extension = path.extension().string();
    for (const char* known : kExtensions) {
        if (extension == known) {
            return true;
        }
    }
    return false;
}

// `word` as a shell reads it back: bare when it holds only characters no shell treats
// specially, else single-quoted.
std::string shellWord(const std::string& word) {
    const bool plain = !word.empty() && word.find_first_not_of(
                                            "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                            "0123456789_-+=.,/:@%") == std::string::npos;
    return plain ? word : shellQuoted(word);
}

// The command as typed, quoted for a shell, from the folder it ran in when a file argument is
// relative to it.
std::string typedCommandLine(const CliArgs& args) {
    std::string line = "ensemble-cli " + args.command;
    bool relative = false;
    for (const std::string& word : args.words) {
        line += " " + shellWord(word);
        relative = relative || namesRelativeFile(word);
    }
    if (!relative) {
        return line;
    }
    std::error_code error;
    const std::filesystem::path folder = std::filesystem::current_path(error);
    return error ? line : "cd " + shellQuoted(folder.string()) + " && " + line;
}

}  // namespace

CommandRun::CommandRun(const CliArgs& args, std::string kind, const nlohmann::json& config) {
    if (args.flag(kNoRecordFlag) || !world().root() || runs::recordingDisabledByEnvironment()) {
        return;
    }
    const std::filesystem::path store = runs::defaultRunStorePath();
    if (store.empty()) {
        return;
    }
    runs::RunEntry entry;
    entry.program = "ensemble-cli";
    entry.kind = std::move(kind);
    entry.version = versionText();
    entry.config = config;
    entry.preset = presetOf(args);
    entry.commandLine = typedCommandLine(args);
    const std::string command = args.command;
    m_recorder = std::make_unique<runs::RunRecorder>(
        store, std::move(entry), [command](const std::string& message) {
            std::fprintf(stderr, "ensemble-cli %s: warning: %s (%s turns recording off)\n",
                         command.c_str(), message.c_str(), kNoRecordFlag);
        });
}

CommandRun::~CommandRun() = default;

std::int64_t CommandRun::id() const {
    return m_recorder ? m_recorder->id() : 0;
}

void CommandRun::setBackend(const std::string& backend) {
    if (m_recorder) {
        m_recorder->setBackend(backend);
    }
}

void CommandRun::setParent(std::int64_t parentId, const std::string& relation) {
    if (m_recorder && parentId > 0) {
        m_recorder->setParent(parentId, relation);
    }
}

void CommandRun::setParentFromFile(const std::string& path, const std::string& relation) {
    if (!m_recorder) {
        return;
    }
    std::error_code error;
    const std::filesystem::path absolute = std::filesystem::absolute(path, error);
    try {
        const runs::RunStore store = runs::RunStore::open(m_recorder->storePath());
        if (const std::optional<std::int64_t> parent =
                store.writerOf(absolute.lexically_normal().string())) {
            m_recorder->setParent(*parent, relation);
        }
    } catch (const std::exception&) {
        // The recorder says once why the store cannot be used; a missing link is no failure.
    }
}

void CommandRun::addEvaluation(const Evaluation& e) {
    if (!m_recorder) {
        return;
    }
    m_curves.add(e);
    m_curvesPending = true;
    // Building the curves' JSON costs little, but not on every evaluation of a long run.
    const auto now = std::chrono::steady_clock::now();
    if (now - m_lastCurves >= std::chrono::seconds(1)) {
        flushCurves();
        m_lastCurves = now;
    }
}

void CommandRun::flushCurves() {
    if (m_recorder && m_curvesPending) {
        m_recorder->setCurves(m_curves.json());
        m_curvesPending = false;
    }
}

void CommandRun::addFile(const std::string& path, const std::string& role) {
    if (!m_recorder) {
        return;
    }
    std::error_code error;
    const std::filesystem::path absolute = std::filesystem::absolute(path, error);
    m_recorder->addFile(error ? path : absolute.lexically_normal().string(), role);
}

void CommandRun::setFigures(const std::map<std::string, double>& figures) {
    if (m_recorder) {
        m_recorder->setFigures(figures);
    }
}

void CommandRun::finish(ExitCode code, const std::map<std::string, double>& figures) {
    if (!m_recorder) {
        return;
    }
    flushCurves();
    const runs::RunState state = code == ExitCode::Ok ? runs::RunState::Finished
                                 : code == interruptExitCode() && interruptSignal() != 0
                                     ? runs::RunState::Cancelled
                                     : runs::RunState::Failed;
    m_recorder->finish(state, figures);
}

}  // namespace ensemble::cli
