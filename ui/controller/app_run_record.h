#pragma once

// The runs store's entry of the window's run (engine/runs/run_store.h), kept on the engine
// thread beside the trainer: a run's entry begins when the run stands (a fresh start, a preset,
// an opened file), follows it through pauses and Continue (one entry), takes its learning
// curves, figures and the files the window writes of it, and ends when the run is replaced or
// the window closes. Every call only queues work for the recorder's own thread, so recording
// never holds up training; a store that cannot be written warns once (the sink) and the run
// trains on.

#include <QString>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "runs/run_curves.h"
#include "runs/run_store.h"

namespace ensemble {
class Trainer;
}

namespace ensemble::ui {

struct HistoryPoint;

class AppRunRecord {
  public:
    AppRunRecord();
    ~AppRunRecord();

    // Where entries go; empty: recording is off (the setting, ENSEMBLE_RUNS_DB=off). Applies
    // from the next run.
    void setStore(std::filesystem::path store);
    // The store's warning (a store that cannot be written), once per entry, for the engine
    // thread to pass on; nullopt when there is none new. The recorder's thread leaves it here
    // (it may outlive the entry by a moment: nothing it calls belongs to the window).
    std::optional<std::string> takeWarning();
    // The preset the next run starts from (the Experiment panel's), for the entry's column.
    void setPreset(std::string preset);

    // A new run stands: the entry before it ends (finished) and one begins. `kind`:
    // "app-train"; `openedFrom`: the file an opened run came from (empty for a fresh start).
    void begin(const Trainer& trainer, const std::string& openedFrom);
    // A learning-curve point of the run; the curves and figures reach the store at most once a
    // second, and when the entry ends.
    void addPoint(const HistoryPoint& point, bool gaussian);
    // A file the window wrote of this run: "export", "report", "checkpoint".
    void addFile(const QString& path, const std::string& role);
    // Ends the entry (nothing when none): finished, cancelled (a setup cancelled) or failed.
    void end(runs::RunState state = runs::RunState::Finished);
    // The entry's id without waiting; 0 when not (yet) recorded.
    std::int64_t id() const;
    // A job's own entry (the Shift and Methods views' measurements of this run: "app-shift",
    // "app-methods"), linked to this run's entry as "measured"; its caller finishes it. Null
    // when not recording.
    std::unique_ptr<runs::RunRecorder> beginJob(const std::string& kind,
                                                const nlohmann::json& config) const;
    // An entry of its own for a job that stands apart from the run (a reproduction: kind
    // "reproduce"), recorded as ensemble-cli records the same command: no parent, `commandLine`
    // the command that redoes it, no preset. Its caller finishes it. Null when not recording.
    std::unique_ptr<runs::RunRecorder> beginCommand(const std::string& kind,
                                                    const nlohmann::json& config,
                                                    const std::string& commandLine) const;

  private:
    void flushCurves();
    // An entry of this window (program, version, preset) of `kind` over `config`.
    runs::RunEntry newEntry(const std::string& kind, const nlohmann::json& config) const;
    // Its recorder, whose warning waits in m_warnings.
    std::unique_ptr<runs::RunRecorder> recorderFor(runs::RunEntry entry) const;

    std::filesystem::path m_store;
    std::string m_preset;
    struct WarningBox {
        std::mutex mutex;
        std::optional<std::string> message;
    };
    std::shared_ptr<WarningBox> m_warnings = std::make_shared<WarningBox>();
    std::unique_ptr<runs::RunRecorder> m_recorder;
    runs::RunCurves m_curves;
    std::map<std::string, double> m_figures;
    bool m_pending = false;
    std::chrono::steady_clock::time_point m_flushedAt{};
};

// Ends a job's entry (nothing when null): cancelled, failed (an error) or finished, with the
// figures it measured.
void finishJobEntry(runs::RunRecorder* entry, bool cancelled, bool failed,
                    const std::map<std::string, double>& figures);

}  // namespace ensemble::ui
