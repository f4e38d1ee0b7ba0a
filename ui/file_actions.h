#pragma once

// The window's files: Open (experiments and trained ensembles), Save, Save Checkpoint,
// Export (weights, metrics and the view's picture), Export picture (the view alone, SVG or PNG),
// Export job, Open Recent, dropped files and the question on closing with training that no
// checkpoint holds. What the files hold comes from the RunSession; the window shows what this
// reports (errors, status messages).

#include <QObject>
#include <QString>
#include <QStringList>

#include <cstdint>
#include <functional>

#include "controller/engine_controller.h"
#include "widgets/picture_export.h"

class QAction;
class QMainWindow;
class QMenu;
class QMimeData;

namespace ensemble::ui {

class ExperimentPanel;
class RunSession;
class ViewTabs;

class FileActions : public QObject {
    Q_OBJECT

  public:
    // `window` parents the actions and the dialogs; `useSettings`: remember folders and recent
    // files in QSettings.
    FileActions(EngineController* controller, ExperimentPanel* panel, RunSession* session,
                ViewTabs* views, QMainWindow* window, bool useSettings);

    QAction* openAction() const { return m_open; }
    QAction* saveAction() const { return m_save; }
    QAction* saveCheckpointAction() const { return m_saveCheckpoint; }
    QAction* exportAction() const { return m_export; }
    QAction* exportPictureAction() const { return m_exportPicture; }
    // The File menu: Open, Open Recent, Save, Save Checkpoint, Restore, Export, Export picture,
    // Export job.
    void addActions(QMenu* file);

    // See MainWindow, which forwards these. Every Open (the dialog, Open Recent, a drop, the
    // last experiment) reads and checks the file first, then asks as confirmReplace does.
    bool openExperiment(const QString& path, QString* error = nullptr);
    bool saveExperiment(const QString& path, QString* error = nullptr);
    bool openEnsemble(const QString& path, QString* error = nullptr);
    bool openFile(const QString& path, QString* error = nullptr);
    void saveCheckpoint(const QString& path);
    bool exportJob(const QString& configPath, int ensemble, int data, QString* error = nullptr);
    void exportTo(const QString& basePath, ExportFormat format = ExportFormat::Safetensors);
    // Export picture (picture_actions.cpp): the current view to `path`, SVG or PNG by its
    // suffix, atomically; false with `error` naming the file when it cannot be written.
    bool exportPicture(const QString& path, QString* error = nullptr);
    // The current view's picture's SVG title and description: the view's name and the run.
    PictureText pictureText() const;
    QStringList recentFiles() const { return m_recent; }
    void chooseOpen();
    void chooseSave();

    // The run `runId` at `step` is held by a checkpoint (one opened or saved).
    void markCheckpoint(uint64_t runId, int64_t step);
    // closeEvent: whether the window may close now. With `ask`, training that no checkpoint
    // holds asks Save / Discard / Cancel first (Save closes once the checkpoint is written).
    bool mayClose(bool ask);
    // Before something replaces the run (`what`: "the preset moons"): with training that no
    // checkpoint holds, asks Save / Discard / Cancel as closing does (when asking is on), and
    // calls `proceed` at once, after the checkpoint is written (Save), or never. False when the
    // person kept the run (Cancel, or no checkpoint file chosen).
    bool confirmReplace(const QString& what, std::function<void()> proceed);
    // Whether confirmReplace asks (interactive use; MainWindow::Options::askToSaveCheckpoint).
    void setAskBeforeReplacing(bool ask) { m_askBeforeReplacing = ask; }
    // The format the Export dialog offers first: the one chosen last (QSettings), else
    // safetensors.
    static ExportFormat rememberedExportFormat();
    // A drop of one .json or .safetensors file: its path, else empty.
    static QString droppedFile(const QMimeData* mime);
    // Export and Save Checkpoint as the run allows.
    void updateActions();

  Q_SIGNALS:
    void exportFinished(bool ok, const QString& message, const QStringList& files);
    void checkpointSaved(bool ok, const QString& message, const QString& path);
    void statusRequested(const QString& text, int timeoutMs);
    void errorRaised(const QString& title, const QString& message, const QString& advice);

  private:
    void buildActions();
    void buildPictureAction();
    void choosePicture();
    void chooseExport();
    void chooseExportJob();
    void chooseSaveCheckpoint();
    QString askCheckpointPath();
    void onCheckpointSaved(bool ok, const QString& message, const QString& path, qint64 step);
    void onExportFinished(bool ok, const QString& message, const QStringList& files);
    // Whether the run has trained steps that no checkpoint saved or opened holds.
    bool hasUnsavedTraining() const;
    void addRecent(const QString& path);
    void fillRecentMenu();
    void restoreLastExperiment();

    EngineController* m_controller;
    ExperimentPanel* m_panel;
    RunSession* m_session;
    ViewTabs* m_views;
    QMainWindow* m_window;
    bool m_useSettings;
    QString m_exportBase;
    QStringList m_recent;
    uint64_t m_checkpointRun = 0;  // the run and step the last checkpoint saved or opened holds
    int64_t m_checkpointStep = -1;
    bool m_closeAfterCheckpoint = false;
    std::function<void()> m_afterCheckpoint;  // confirmReplace's Save: what follows the write
    bool m_askBeforeReplacing = false;
    bool m_closing = false;  // answered: close without asking again

    QAction* m_open = nullptr;
    QAction* m_save = nullptr;
    QAction* m_saveCheckpoint = nullptr;
    QAction* m_export = nullptr;
    QAction* m_exportPicture = nullptr;
    QMenu* m_recentMenu = nullptr;
};

}  // namespace ensemble::ui
