#pragma once

// One ensemble-cli command's entry in the runs store (engine/runs/run_store.h): begun once the
// command knows its config, told the files it writes, its curves and figures as they come,
// ended by the command's exit code. Recording never costs the command: the store is written on
// the recorder's own thread, and a store that cannot be written warns once on stderr while the
// command goes on. Nothing is recorded with --no-record, with ENSEMBLE_RUNS_DB=off, or on an
// MPI rank other than 0.

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "cli/cli_common.h"
#include "core/exit_codes.h"
#include "metrics/types.h"
#include "runs/run_curves.h"

namespace ensemble::runs {
class RunRecorder;
}

namespace ensemble::cli {

// The switch that turns recording off, for every command that records.
inline constexpr const char* kNoRecordFlag = "--no-record";

class CommandRun {
  public:
    // `kind`: "train", "resume", "compare", "shift", "active", ... `config`: the command's full
    // config (null for a command that reads an export's). The entry's preset is --config's name
    // (a preset, or a file's name without its folder and extension).
    CommandRun(const CliArgs& args, std::string kind, const nlohmann::json& config);
    ~CommandRun();
    CommandRun(const CommandRun&) = delete;
    CommandRun& operator=(const CommandRun&) = delete;

    bool recording() const { return m_recorder != nullptr; }
    // The store's id of the entry (waits briefly for the insert); 0 when not recorded.
    std::int64_t id() const;

    void setBackend(const std::string& backend);
    void setParent(std::int64_t parentId, const std::string& relation);
    // The parent is the run that wrote `path` (an export or a checkpoint this command
    // continues or measures), when the store knows one; read on this thread, once.
    void setParentFromFile(const std::string& path, const std::string& relation);
    // A learning-curve point; the curves reach the store at most once a second (and at the end).
    void addEvaluation(const Evaluation& e);
    // `path` as given (made absolute here); role: "export", "checkpoint", "report", "csv",
    // "figure", "metrics".
    void addFile(const std::string& path, const std::string& role);
    void setFigures(const std::map<std::string, double>& figures);
    // Ends the entry: Finished for ExitCode::Ok, Cancelled for an interrupt's code (Ctrl-C,
    // SIGTERM), Failed for any other. An entry never finished (an exception left the command)
    // is marked Failed by the recorder.
    void finish(ExitCode code, const std::map<std::string, double>& figures = {});

  private:
    void flushCurves();

    std::unique_ptr<runs::RunRecorder> m_recorder;
    runs::RunCurves m_curves;
    std::chrono::steady_clock::time_point m_lastCurves{};
    bool m_curvesPending = false;
};

}  // namespace ensemble::cli
