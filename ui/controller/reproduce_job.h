#pragma once

// The Reproduce view's computation: a registered reproduction (engine/reproduce/reproduce.h)
// run by the engine's runReproduction, the very function `ensemble-cli reproduce` calls, so the
// same id, levels and count give the CLI's report bit for bit. Runs on the engine thread as an
// EngineJob (EngineController::runReproduction): progress (run i of n, its level and step)
// carries the table judged after the last finished run, so a cancelled or dropped job leaves
// the partial table the CLI's interrupted report holds. Recorded in the runs store as the CLI
// records it: kind "reproduce", the first run's config, the `ensemble-cli reproduce` line,
// resultFigures, and the files an export writes.

#include <QString>

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "reproduce/reproduce.h"

namespace ensemble::runs {
class RunRecorder;
}

namespace ensemble::ui {

class AppRunRecord;

struct ReproduceRequest {
    std::string id;  // a registry id
    reproduce::ReproduceOptions options;
};

// The `ensemble-cli reproduce` line that runs `request`: "ensemble-cli reproduce ID[/L1,L2]
// [--splits N | --seeds N] [--quick]" (the count flag is the row's unit's).
std::string reproduceCommandLine(const ReproduceRequest& request);

// What the runs judged so far: the result, its report (reportJson) and its figure (figureSvg,
// the bytes `--figure` writes), made on the engine thread and shared with the GUI.
struct ReproduceState {
    std::shared_ptr<const reproduce::ReproductionResult> result;
    nlohmann::json report;
    std::string figure;
};
using ReproduceStatePtr = std::shared_ptr<const ReproduceState>;

struct ReproduceJobProgress {
    std::size_t run = 0;  // 0-based, of `runs`
    std::size_t runs = 0;
    std::string level;
    int index = 0;  // the split's or seed's number
    int64_t step = 0;
    int64_t steps = 0;  // 0: the run is starting
    double elapsed = 0.0;
    ReproduceStatePtr judged;  // after the last finished run (null before the first)
};

struct ReproduceOutcome {
    ReproduceRequest request;
    std::string commandLine;
    bool cancelled = false;   // `state` holds the runs that finished
    QString error;            // why nothing ran (empty when it ran)
    ReproduceStatePtr state;  // null when nothing ran
    // The runs store's entry, kept so an export adds its files to it (null: not recorded).
    std::shared_ptr<runs::RunRecorder> entry;
};
using ReproduceOutcomePtr = std::shared_ptr<const ReproduceOutcome>;

// The judged state of `result` (its report and figure built once, here).
ReproduceStatePtr judgedState(const reproduce::ReproductionResult& result);

// Engine thread: runs `request` with `progress` told about every second and after each run,
// stopping between steps once `cancel` is set. `record`: the window's runs store (null: none).
// Never throws: an unknown id, missing data or a plan that does not parse is outcome.error.
ReproduceOutcome runReproductionJob(
    const ReproduceRequest& request, const AppRunRecord* record,
    const std::function<void(const ReproduceJobProgress&)>& progress,
    const std::atomic<bool>& cancel);

// The files Export… writes, by name: report.json (reportJson, as `--report` writes it),
// resultCsvs' files (as `--csv DIR` writes them) and figure.svg (as `--figure` writes it). The
// view adds the figure's PNG, which needs Qt SVG's renderer (ReproduceView::exportTo).
std::map<std::string, std::string> reproduceExportFiles(const ReproduceState& state);

}  // namespace ensemble::ui
