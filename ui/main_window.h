#pragma once

// The EnsembleLab window: lays out the Experiment dock, the views (ViewTabs), toolbar, menus
// and status bar, and shows what the run (RunSession) and the files (FileActions) report. It
// owns the EngineController (and through it the engine thread) and hands each snapshot to the
// views.

#include <QMainWindow>
#include <QStringList>

#include <functional>
#include <memory>
#include <optional>

#include <nlohmann/json.hpp>

#include "controller/engine_controller.h"
#include "recovery.h"
#include "view_table.h"

class QAction;
class QFrame;
class QLabel;
class QMenu;
class QUrl;

namespace ensemble::ui {

class ActiveView;
class BoundaryView;
class CalibrationView;
class CurvesView;
class ExperimentPanel;
class FileActions;
class FiltersView;
class ImagesView;
class MembersView;
class MethodsView;
class RegressionView;
class ShiftView;
class RunSession;
class RunStatus;
class SpeedControl;
class BusyOverlay;
class SweepView;
class ViewTabs;

class MainWindow : public QMainWindow {
    Q_OBJECT

  public:
    struct Options {
        bool useSettings = true;  // restore and save QSettings (tests turn it off)
        // Closing with trained steps not saved as a checkpoint asks whether to save one
        // (interactive use; never in the unattended modes, nor when a test closes the window).
        bool askToSaveCheckpoint = false;
        // A recovery checkpoint (ui/recovery.h) every this many seconds of training and when
        // training pauses; 0: none (tests, screenshots). ensemble-lab passes the File menu's
        // choice (rememberedAutosaveSeconds) or --autosave-seconds.
        int autosaveSeconds = 0;
        // A run priced above half of the available memory asks Start / Cancel first
        // (interactive use; ui/controller/run_price.h). `availableMemory` stands for the
        // machine's MemAvailable when set (tests).
        bool askBeforeLargeRuns = false;
        std::optional<std::size_t> availableMemory;
        WorkerTuning tuning;
        // Where Help's documentation entries look (empty: documentationFolderCandidates() of
        // the program's folder, ui/help_text.h) and what opens a page (empty:
        // QDesktopServices::openUrl); tests pass their own, so that no browser opens.
        QStringList documentationFolders;
        std::function<bool(const QUrl&)> openUrl;
    };

    explicit MainWindow(Options options, QWidget* parent = nullptr);
    explicit MainWindow(QWidget* parent = nullptr) : MainWindow(Options{}, parent) {}
    ~MainWindow() override;

    // Shows `config` in the Experiment dock and starts a new run at step 0 (when valid).
    void loadExperiment(const nlohmann::json& config, const QString& preset = {});
    // Open / Save an experiment file (the CLI's JSON). False with `error` set on failure, and
    // false with `error` empty when the person kept a trained, unsaved run (Open asks Save /
    // Discard / Cancel first, as a preset does, when Options::askToSaveCheckpoint is on).
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
    QStringList recentFiles() const;
    // The `ensemble-cli train` command that trains this experiment as the app did: its preset
    // (if it started from one) and a --set for every key that differs, live edits included.
    // With the Active learning view in front: the `ensemble-cli active` command of its loop
    // (its acquisition, one seed, the rounds it trained).
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
    // current run's test split, on the engine thread, and shows it beside the run;
    // comparisonFinished() reports (a file of another dataset: false, with the reason).
    void compareWith(const QString& path);

    // Views by the view table's keys (view_table.h): boundary, members, curves, calibration,
    // sweep, images, filters, regression, shift, active, methods. setView is false for a view that
    // does not apply to the run (its tab is hidden).
    static QStringList viewNames();
    bool setView(const QString& name);
    bool setView(ViewId id);
    QString currentViewName() const;
    ViewId currentViewId() const;
    QWidget* currentView() const;
    ViewTabs* viewTabs() const { return m_tabs; }

    EngineController* controller() const { return m_controller.get(); }
    // The pace of a run until paused (toolbar and Run menu).
    SpeedControl* speedControl() const { return m_speed; }
    ExperimentPanel* panel() const { return m_panel; }
    BoundaryView* boundaryView() const;
    MembersView* membersView() const;
    CurvesView* curvesView() const;
    CalibrationView* calibrationView() const;
    SweepView* sweepView() const;
    ImagesView* imagesView() const;
    FiltersView* filtersView() const;
    RegressionView* regressionView() const;
    ShiftView* shiftView() const;
    ActiveView* activeView() const;
    MethodsView* methodsView() const;
    RunSession* session() const { return m_session; }
    FileActions* files() const { return m_files; }
    QAction* trainAction() const;
    QAction* stepAction() const;
    QAction* resetAction() const;
    QAction* exportAction() const;
    QAction* openAction() const;
    QAction* saveAction() const;
    QAction* saveCheckpointAction() const;
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
    // --- keeping the run through a crash (ui/recovery.h) --------------------------------
    // The interval of recovery checkpoints, 0 for none (File > Recovery checkpoint).
    int autosaveSeconds() const { return m_autosaveSeconds; }
    void setAutosaveSeconds(int seconds);
    // The File menu's choice as QSettings remembers it (recovery/autosaveSeconds): 60 until
    // one is made.
    static int rememberedAutosaveSeconds();
    // This window's recovery checkpoint; empty while there is none to write.
    QString recoveryPath() const;
    // Offers, in the banner above the views, the newest recovery checkpoint that an instance
    // no longer running left (its lock is held meanwhile, so no other window offers it). For
    // plain interactive starts only (ensemble-lab decides). False when there is none.
    bool offerRecovery();
    // The banner's question ("Restore the run of 14:02, step 18,400?"), empty while hidden.
    QString recoveryOffer() const;
    // The banner's Restore: the run continues from the checkpoint as when it is opened (File >
    // Open), bit for bit; the file becomes this window's recovery checkpoint. recoveryRestored()
    // tells the result: false when the file cannot be read or its dataset is another one, or
    // when the run opens without its data (the file then stays for another start).
    // `beforeReset`: the run a Reset replaced, which the banner offers beside it.
    void restoreRecovery(bool beforeReset = false);
    // The banner's Discard: removes the checkpoint, then offers the next one if there is one.
    void discardRecovery();
    // For SIGTERM and SIGHUP: pauses training, writes the recovery checkpoint if the run
    // changed since the last one, then recoveryFlushed(); the checkpoint then stays when the
    // window goes. Otherwise destroying the window (a clean exit) removes it.
    void flushRecovery();

    // What the busy overlay over the views says (a run being built, the whole test split being
    // measured); empty when it is hidden.
    QString busyMessage() const;

  Q_SIGNALS:
    void exportFinished(bool ok, const QString& message, const QStringList& files);
    void snapshotShown();
    // openEnsemble(): the run stands (its first snapshot follows), or it could not be built.
    void ensembleOpened(const QString& path, bool checkpoint, qint64 step);
    void openFailed(const QString& message);
    void checkpointSaved(bool ok, const QString& message, const QString& path);
    void comparisonFinished(bool ok, const QString& message);
    void recoveryRestored(bool ok, const QString& message);
    // `step`: the step the run stopped at (what the checkpoint holds); -1 without a run.
    void recoveryFlushed(qint64 step);

  protected:
    void closeEvent(QCloseEvent* event) override;
    // Dropping a .json or .safetensors file on the window opens it.
    void dragEnterEvent(QDragEnterEvent* event) override;
    void dropEvent(QDropEvent* event) override;

  private:
    void buildViews();
    // The strips above the views (main_window_banners.cpp): the pending Reset, the recovery
    // offer and the missing data.
    void buildBanners();
    void buildMenus();
    // The views that run jobs and the controller's jobs, both ways, with the one rule for a
    // new run (main_window_jobs.cpp).
    void connectJobs();
    void onSnapshot();
    // The run openEnsemble() asked for stands: title, status bar and checkpoint mark follow it.
    void onEnsembleOpened(const std::shared_ptr<const OpenedEnsemble>& opened,
                          const QString& notice);
    void updateActions();
    // The busy overlay for snapshot `s` of the current run: hidden, or the strip saying the
    // whole test split is being measured.
    void showWorkOf(const SnapshotPtr& s);
    void showError(const QString& title, const QString& message, const QString& advice);
    void chooseCompare();
    // A view's Export… (Shift, Reproduce): asks for a folder, writes (dir, written, error).
    using FolderExport = std::function<bool(const QString&, QStringList*, QString*)>;
    void exportToChosenFolder(const QString& title, const FolderExport& write);
    // The Methods view's Save report…: a file, then MethodsView::saveReport.
    void chooseMethodsReport();
    void showHelpBox(const QString& name, const QString& title, const QString& html);
    // The engine's recovery writes follow m_autosaveSeconds and the store's own slot.
    void applyRecovery();
    void hideRecoveryOffer();
    void onRecoveryOpenFailed(const QString& message);
    // The restored run's first snapshot: the file becomes this window's, or, when the run has
    // no data here, stays for another start.
    void finishRestore(const RunInfo& run);
    void addRecoveryMenu(QMenu* file);

    Options m_options;
    std::unique_ptr<EngineController> m_controller;
    int m_selectedMember = -1;
    QString m_lastError;

    ExperimentPanel* m_panel = nullptr;
    ViewTabs* m_tabs = nullptr;
    RunSession* m_session = nullptr;
    FileActions* m_files = nullptr;

    QFrame* m_banner = nullptr;
    QLabel* m_bannerText = nullptr;
    // Above the views while the run was opened without its data: what is missing, how to get it.
    QFrame* m_dataBanner = nullptr;
    QLabel* m_dataBannerText = nullptr;
    uint64_t m_dataBannerFor = 0;  // the run whose missing data the status bar last named
    RunStatus* m_status = nullptr;
    SpeedControl* m_speed = nullptr;
    BusyOverlay* m_busy = nullptr;

    RecoveryStore m_recovery;
    int m_autosaveSeconds = 0;
    bool m_keepRecovery = false;  // flushRecovery(): the checkpoint outlives the window
    std::optional<RecoveryFile> m_recoveryOffer;
    QString m_restoring;  // the recovery checkpoint being opened by restoreRecovery()
    bool m_restoringBeforeReset = false;  // ... the one a Reset replaced
    uint64_t m_restoredRun = 0;           // its run, until its first snapshot (finishRestore)
    QFrame* m_recoveryBanner = nullptr;
    QLabel* m_recoveryBannerText = nullptr;
};

}  // namespace ensemble::ui
