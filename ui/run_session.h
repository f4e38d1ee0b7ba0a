#pragma once

// The run the window trains: the experiment as it runs (the panel may differ by edits that
// wait for Reset), Train / Step / Reset and when they apply, live edits, and the experiment as
// Save and Copy as Command write it. It drives the engine through the EngineController; the
// window shows what it reports (errors, status messages, the pending-restart banner).

#include <QObject>
#include <QSet>
#include <QString>
#include <QTimer>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>

#include <nlohmann/json.hpp>

#include "controller/engine_controller.h"
#include "controller/run_price.h"

class QAction;
class QWidget;

namespace ensemble::ui {

class ExperimentPanel;

class RunSession : public QObject {
    Q_OBJECT

  public:
    // `window` parents the actions (their shortcuts work anywhere in it).
    RunSession(EngineController* controller, ExperimentPanel* panel, QWidget* window);

    QAction* trainAction() const { return m_train; }
    QAction* stepAction() const { return m_step; }
    QAction* resetAction() const { return m_reset; }

    // Shows `config` in the panel and starts a new run at step 0 (when valid).
    void loadExperiment(const nlohmann::json& config, const QString& preset = {});
    // The same once the person agreed to replace a trained run (the replace check's Save /
    // Discard / Cancel, naming `what`); nothing when they cancel.
    void loadExperimentAsking(const nlohmann::json& config, const QString& what);
    // A new run at step 0 from the panel as it is. False when the person declined a large
    // run's price (setLargeRunCheck): nothing changed, the edit waits in the panel.
    // `keepReplaced`: the run it replaces stays recoverable (a Reset; EngineWorker::configure).
    bool startRun(bool keepReplaced = false);
    // Reset (R): startRun(), the member switches kept when the ensemble keeps its size.
    void reset();
    // A new run from a trained ensemble (MainWindow::openEnsemble): ensembleOpened() when it
    // stands, openFailed() when it cannot be built (the current run stays).
    void open(std::shared_ptr<const OpenedEnsemble> opened);

    // Asked before a preset or new data replaces the run (FileActions::confirmReplace): calls
    // `proceed` now, later or never; false when the person kept the run. Unset: they replace it
    // at once.
    using ReplaceCheck = std::function<bool(const QString& what, std::function<void()> proceed)>;
    void setReplaceCheck(ReplaceCheck check) { m_replaceCheck = std::move(check); }

    // Asked before a run that would take more than half of the available memory (its price,
    // ui/controller/run_price.h): true starts it. Unset (scripted starts, tests): never asked;
    // a run above all of the memory is refused by the engine thread either way. `available`
    // stands for MemAvailable when set (tests).
    using LargeRunCheck = std::function<bool(const RunPrice& price)>;
    // The window's check: a question box, "Start a large run?" (objectName LargeRunQuestion).
    static LargeRunCheck largeRunDialog(QWidget* parent);
    void setLargeRunCheck(LargeRunCheck check, WorkerTuning tuning,
                          std::optional<std::size_t> available = {});

    // A run is being built (configure or open under way).
    bool isConfiguring() const { return m_configuring; }
    // Whether the panel differs from the running experiment in a key that needs a new run
    // (the schema's non-live keys).
    bool restartPending() const;
    // The current run was opened without its data and no edit waits to replace it: it is
    // shown, not trained.
    bool dataMissing() const;
    // The panel's config as Save writes it: until paused, with the steps actually trained.
    nlohmann::json experimentToSave() const;
    // The `ensemble-cli train` command that trains this experiment as the app did.
    QString commandLine() const;
    // Train (Pause / Continue), Step and Reset as the run and the panel allow.
    void updateActions();
    // Whether runs are recorded in the runs store (the setting kRecordRunsKey, on by default;
    // ENSEMBLE_RUNS_DB=off turns it off for every program), applied from the next run.
    static bool recordsRuns();
    static void setRecordsRuns(bool on);
    void applyRunRecording();

  Q_SIGNALS:
    // Something the actions depend on changed: the window updates every action.
    void stateChanged();
    void statusRequested(const QString& text, int timeoutMs);
    void errorRaised(const QString& title, const QString& message, const QString& advice);
    // The banner above the views for edits that wait for Reset (empty: hidden).
    void pendingRestartChanged(const QString& banner);
    void ensembleOpened(std::shared_ptr<const OpenedEnsemble> opened, const QString& notice);
    void openFailed(const QString& message);

  private:
    void buildActions(QWidget* window);
    void train();
    void onPanelEdited();
    void onConfigured(quint64 runId, const QString& notice);
    void onConfigureFailed(quint64 runId, const QString& message, int errorKind);
    // Whether `config` may start: small, accepted before, or accepted now.
    bool priceAccepted(const nlohmann::json& config);
    void onOpenFailed(quint64 runId, const QString& message);
    void onOpened(const QString& notice);
    // Applies the panel's live keys (Stop after, until paused, optimizer) to the running run.
    void applyLiveEdits();
    // The banner and the panel's marks for edits that wait for Reset.
    void showPendingRestart(bool show);

    QWidget* m_window;
    EngineController* m_controller;
    ExperimentPanel* m_panel;
    nlohmann::json m_activeConfig;
    bool m_configuring = false;
    std::shared_ptr<const OpenedEnsemble> m_opening;  // open() waiting for its run
    uint64_t m_openingRun = 0;
    QTimer m_applyTimer;
    ReplaceCheck m_replaceCheck;
    LargeRunCheck m_largeRunCheck;
    WorkerTuning m_tuning;
    std::optional<std::size_t> m_availableMemory;
    nlohmann::json m_acceptedLargeRun;  // a Reset of the run accepted does not ask again
    QSet<QString> m_noticesShown;       // backend notices already shown this session

    QAction* m_train = nullptr;
    QAction* m_step = nullptr;
    QAction* m_reset = nullptr;
};

}  // namespace ensemble::ui
