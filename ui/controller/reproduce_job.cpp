#include "controller/reproduce_job.h"

#include <exception>
#include <utility>

#include "controller/app_run_record.h"
#include "reproduce/figure.h"
#include "runs/run_store.h"

namespace ensemble::ui {

std::string reproduceCommandLine(const ReproduceRequest& request) {
    std::string line = "ensemble-cli reproduce " + request.id;
    const reproduce::ReproduceOptions& o = request.options;
    for (std::size_t i = 0; i < o.levels.size(); ++i) {
        line += (i == 0 ? "/" : ",") + o.levels[i];
    }
    if (o.count > 0) {
        const reproduce::Reproduction* r = reproduce::findReproduction(request.id);
        const bool splits = r != nullptr && r->unit == "split";
        line += (splits ? " --splits " : " --seeds ") + std::to_string(o.count);
    }
    if (o.quick) {
        line += " --quick";
    }
    return line;
}

ReproduceStatePtr judgedState(const reproduce::ReproductionResult& result) {
    auto state = std::make_shared<ReproduceState>();
    state->result = std::make_shared<const reproduce::ReproductionResult>(result);
    state->report = reproduce::reportJson(result);
    state->figure = reproduce::figureSvg(result);
    return state;
}

ReproduceOutcome runReproductionJob(
    const ReproduceRequest& request, const AppRunRecord* record,
    const std::function<void(const ReproduceJobProgress&)>& progress,
    const std::atomic<bool>& cancel) {
    ReproduceOutcome outcome;
    outcome.request = request;
    outcome.commandLine = reproduceCommandLine(request);
    if (cancel.load(std::memory_order_acquire)) {
        // Cancelled while queued (a new run, the window closing): nothing was started.
        outcome.cancelled = true;
        return outcome;
    }
    const reproduce::Reproduction* r = reproduce::findReproduction(request.id);
    if (r == nullptr) {
        outcome.error =
            QStringLiteral("no reproduction '%1'").arg(QString::fromStdString(request.id));
        return outcome;
    }
    std::shared_ptr<runs::RunRecorder> entry;
    try {
        std::string why;
        if (!reproduce::dataPresent(*r, &why)) {
            outcome.error = QStringLiteral("%1: its data are missing: %2")
                                .arg(QString::fromStdString(r->id), QString::fromStdString(why));
            return outcome;
        }
        // As the CLI: the entry begins once the plan stands, over the first run's config.
        const std::vector<reproduce::PlannedRun> plan = reproduce::planRuns(*r, request.options);
        if (record != nullptr) {
            entry = record->beginCommand("reproduce", plan.front().config, outcome.commandLine);
        }
        ReproduceStatePtr judged;
        ReproduceJobProgress last;
        reproduce::ReproduceHooks hooks;
        hooks.cancel = &cancel;
        hooks.progress = [&](const reproduce::ReproduceProgress& p) {
            last.run = p.run;
            last.runs = p.runs;
            last.level = p.planned != nullptr ? p.planned->level : std::string();
            last.index = p.planned != nullptr ? p.planned->index : 0;
            last.step = p.step;
            last.steps = p.steps;
            last.elapsed = p.elapsed;
            last.judged = judged;
            progress(last);
        };
        // Judged after every run, as the CLI rewrites its report: the table grows as runs
        // finish and a job ended early keeps it.
        hooks.afterRun = [&](const reproduce::ReproductionResult& result) {
            judged = judgedState(result);
            last.run = result.outcomes.size();
            last.runs = result.plan.size();
            last.step = 0;
            last.steps = 0;
            last.judged = judged;
            progress(last);
        };
        const reproduce::ReproductionResult result =
            reproduce::runReproduction(*r, request.options, hooks);
        outcome.cancelled = !result.complete;
        outcome.state = judgedState(result);
        finishJobEntry(entry.get(), outcome.cancelled, false, reproduce::resultFigures(result));
    } catch (const std::exception& e) {
        outcome.error = QString::fromUtf8(e.what());
        outcome.state.reset();
        finishJobEntry(entry.get(), false, true, {});
    }
    outcome.entry = std::move(entry);
    return outcome;
}

std::map<std::string, std::string> reproduceExportFiles(const ReproduceState& state) {
    std::map<std::string, std::string> files = reproduce::resultCsvs(*state.result);
    files["report.json"] = state.report.dump(2) + "\n";
    files["figure.svg"] = state.figure;
    return files;
}

}  // namespace ensemble::ui
