#pragma once

// The EnsembleLab window: the Experiment dock, the views as tabs, toolbar, shortcuts and
// status bar. It owns the EngineController (and through it the engine thread) and hands each
// snapshot to the views; views that are not visible only keep it and draw when shown.

#include <QMainWindow>
#include <QSet>
#include <QStringList>
#include <QTimer>

#include <memory>

#include <nlohmann/json.hpp>

#include "controller/engine_controller.h"

class QAction;
class QFrame;
class QLabel;
class QMenu;
class QProgressBar;
class QTabWidget;
class QThread;

namespace ensemble::ui {

class BoundaryView;
class ElidedLabel;
class CalibrationView;
class CurvesView;
class ExperimentPanel;
class FiltersView;
class ImagesView;
class MembersView;
class RegressionView;
class SweepView;

class MainWindow : public QMainWindow {
    Q_OBJECT

  public:
    struct Options {
        bool useSettings = true;  // restore and save QSettings (tests turn it off)
        // Closing with trained steps not saved as a checkpoint asks whether to save one
        // (interactive use; never in the unattended modes, nor when a test closes the window).
        bool askToSaveCheckpoint = false;
        WorkerTuning tuning;
    };

    explicit MainWindow(Options options, QWidget* parent = nullptr);
    explicit MainWindow(QWidget* parent = nullptr) : MainWindow(Options{}, parent) {}
    ~MainWindow() override;

    // Shows `config` in the Experiment dock and starts a new run at step 0 (when valid).
    void loadExperiment(const nlohmann::json& config, const QString& preset = {});
    // Open / Save an experiment file (the CLI's JSON). False with `error` set on failure.
    bool openExperiment(const QString& path, QString* error = nullptr);
    bool saveExperiment(const QString& path, QString* error = nullptr);
    // Opens a trained ensemble (an export or a checkpoint, .safetensors): its config in the
    // panel, its dataset, its members' weights (a checkpoint: its whole training state, so
    // Train continues it), every view drawn without training. False with `error` set when the
    // file cannot be read (the current experiment stays); a dataset that cannot be loaded is
    // reported later (openFailed(), an error box), the current experiment staying too.
    bool openEnsemble(const QString& path, QString* error = nullptr);
    // openEnsemble for .safetensors, openExperiment otherwise; a file opened goes first in
    // File > Open Recent.
    bool openFile(const QString& path, QString* error = nullptr);
    // Writes a checkpoint of the current run (File > Save Checkpoint…, Ctrl+Shift+S);
    // checkpointSaved() reports. Opened again, Train continues it as train --resume does.
    void saveCheckpoint(const QString& path);
    // File > Open Recent: experiments and ensembles opened or saved, newest first.
    QStringList recentFiles() const { return m_recent; }
    // The `ensemble-cli train` command that trains this experiment as the app did: its preset
    // (if it started from one) and a --set for every key that differs, live edits included.
    QString commandLine() const;
    // File > Export job…: writes the experiment with backend.mesh {ensemble, data} to
    // `configPath` (NAME.json) and, next to it, NAME-mpirun.sh (executable) and NAME.sbatch,
    // the scripts that train it under mpirun and Slurm (ui/job_files.h). False with `error`
    // set when the mesh does not fit the experiment or a file cannot be written.
    bool exportJob(const QString& configPath, int ensemble, int data, QString* error = nullptr);
    // Writes <base>.safetensors (or the whole ensemble as <base>.onnx, or NumPy's <base>.npz:
    // `format`), <base>.metrics.json, <base>.metrics.csv and <base>.png (the current view);
    // exportFinished() reports. Nothing is left behind on failure.
    void exportTo(const QString& basePath, ExportFormat format = ExportFormat::Safetensors);
    // The Calibration view's Compare with…: measures the trained ensemble in `path` on the
    // current run's test split, off the GUI thread, and shows it beside the run;
    // comparisonFinished() reports (a file of another dataset: false, with the reason).
    void compareWith(const QString& path);

    // Views by name: boundary, members, curves, calibration, sweep, images, regression.
    static QStringList viewNames();
    bool setView(const QString& name);
    QString currentViewName() const;
    QWidget* currentView() const;

    EngineController* controller() const { return m_controller.get(); }
    ExperimentPanel* panel() const { return m_panel; }
    BoundaryView* boundaryView() const { return m_boundary; }
    MembersView* membersView() const { return m_members; }
    CurvesView* curvesView() const { return m_curves; }
    CalibrationView* calibrationView() const { return m_calibration; }
    SweepView* sweepView() const { return m_sweep; }
    ImagesView* imagesView() const { return m_images; }
    FiltersView* filtersView() const { return m_filters; }
    RegressionView* regressionView() const { return m_regression; }
    QAction* trainAction() const { return m_train; }
    QAction* stepAction() const { return m_step; }
    QAction* resetAction() const { return m_reset; }
    QAction* exportAction() const { return m_export; }
    QAction* openAction() const { return m_open; }
    QAction* saveAction() const { return m_save; }
    QAction* saveCheckpointAction() const { return m_saveCheckpoint; }
    int selectedMember() const { return m_selectedMember; }
    void selectMember(int member);
    // The last error message box's text (tests), empty when none was shown.
    QString lastError() const { return m_lastError; }
    // Shows `text` in the status bar (elided to fit, the full text in its tooltip) for
    // `timeoutMs` (0: until replaced). Empty clears it.
    void showStatus(const QString& text, int timeoutMs = 0);
    QString statusMessage() const;
    // The banner naming what an ensemble opened without its data is missing (empty: hidden).
    QString missingDataMessage() const;

  Q_SIGNALS:
    void exportFinished(bool ok, const QString& message, const QStringList& files);
    void snapshotShown();
    // openEnsemble(): the run stands (its first snapshot follows), or it could not be built.
    void ensembleOpened(const QString& path, bool checkpoint, qint64 step);
    void openFailed(const QString& message);
    void checkpointSaved(bool ok, const QString& message, const QString& path);
    void comparisonFinished(bool ok, const QString& message);

  protected:
    void closeEvent(QCloseEvent* event) override;
    // Dropping a .json or .safetensors file on the window opens it.
    void dragEnterEvent(QDragEnterEvent* event) override;
    void dropEvent(QDropEvent* event) override;

  private:
    void buildActions();
    void buildViews();
    void startRun();
    void onSnapshot();
    void onPanelEdited();
    // Whether the panel differs from the running experiment in a key that needs a new run
    // (the schema's non-live keys).
    bool restartPending() const;
    // Applies the panel's live keys (Stop after, until paused) to the running experiment.
    void applyLiveEdits();
    // The banner above the views and the panel's marks for edits that wait for Reset.
    void showPendingRestart(bool show);
    // The panel's config as Save writes it: until paused, with the steps actually trained.
    nlohmann::json experimentToSave() const;
    void onRunningChanged(bool running);
    void onConfigureFailed(quint64 runId, const QString& message, int errorKind);
    // The run openEnsemble() asked for stands: the panel, title and status bar follow it.
    void onEnsembleOpened(const QString& notice);
    void onExportFinished(bool ok, const QString& message, const QStringList& files);
    void updateActions();
    void updateStatus();
    void updateTabs();
    void showError(const QString& title, const QString& message, const QString& advice);
    void chooseOpen();
    void chooseSave();
    void chooseExport();
    void chooseExportJob();
    void chooseSaveCheckpoint();
    void chooseCompare();
    QString askCheckpointPath();
    // Whether the run has trained steps that no checkpoint saved or opened holds.
    bool hasUnsavedTraining() const;
    void addRecent(const QString& path);
    void fillRecentMenu();
    void restoreLastExperiment();
    void showHelpBox(const QString& name, const QString& title, const QString& html);

    Options m_options;
    std::unique_ptr<EngineController> m_controller;
    nlohmann::json m_activeConfig;
    bool m_configuring = false;
    std::shared_ptr<const OpenedEnsemble> m_opening;  // openEnsemble() waiting for its run
    uint64_t m_openingRun = 0;
    int m_selectedMember = -1;
    QString m_exportBase;
    QString m_lastError;
    QTimer m_applyTimer;
    uint64_t m_tabsFor = 0;  // RunInfo::runId the tabs were set up for

    ExperimentPanel* m_panel = nullptr;
    QTabWidget* m_tabs = nullptr;
    BoundaryView* m_boundary = nullptr;
    MembersView* m_members = nullptr;
    CurvesView* m_curves = nullptr;
    CalibrationView* m_calibration = nullptr;
    SweepView* m_sweep = nullptr;
    ImagesView* m_images = nullptr;
    FiltersView* m_filters = nullptr;
    RegressionView* m_regression = nullptr;
    QThread* m_compareThread = nullptr;  // measuring a comparison, joined on destruction
    bool m_tabsRegression = false;       // the tabs were set up for a regression run

    QAction* m_train = nullptr;
    QAction* m_step = nullptr;
    QAction* m_reset = nullptr;
    QFrame* m_banner = nullptr;
    QLabel* m_bannerText = nullptr;
    // Above the views while the run was opened without its data: what is missing, how to get it.
    QFrame* m_dataBanner = nullptr;
    QLabel* m_dataBannerText = nullptr;
    uint64_t m_dataBannerFor = 0;  // the run whose missing data the status bar last named
    QAction* m_export = nullptr;
    QAction* m_open = nullptr;
    QAction* m_save = nullptr;
    QAction* m_saveCheckpoint = nullptr;
    QMenu* m_recentMenu = nullptr;
    QStringList m_recent;
    uint64_t m_checkpointRun = 0;  // the run and step the last checkpoint saved or opened holds
    int64_t m_checkpointStep = -1;
    bool m_closeAfterCheckpoint = false;
    bool m_closing = false;
    ElidedLabel* m_message = nullptr;
    QTimer m_messageTimer;
    QSet<QString> m_noticesShown;  // backend notices already shown this session
    QLabel* m_stepLabel = nullptr;
    QLabel* m_epochLabel = nullptr;
    QLabel* m_rateLabel = nullptr;
    QLabel* m_memberRateLabel = nullptr;
    QLabel* m_backendLabel = nullptr;
    QLabel* m_figuresLabel = nullptr;  // the ensemble's test accuracy, live subset labelled
    QProgressBar* m_progress = nullptr;
};

}  // namespace ensemble::ui
