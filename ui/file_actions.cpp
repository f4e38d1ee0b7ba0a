#include "file_actions.h"

#include <QAction>
#include <QCoreApplication>
#include <QDialog>
#include <QDialogButtonBox>
#include <QDir>
#include <QFile>
#include <QFileDialog>
#include <QFileInfo>
#include <QFormLayout>
#include <QKeySequence>
#include <QLabel>
#include <QMainWindow>
#include <QMenu>
#include <QMessageBox>
#include <QMimeData>
#include <QSettings>
#include <QSpinBox>
#include <QStatusBar>
#include <QStyle>

#include <exception>
#include <filesystem>
#include <optional>

#include "action_reason.h"
#include "config/config.h"
#include "file_kinds.h"
#include "job_files.h"
#include "panels/experiment_panel.h"
#include "run_session.h"
#include "runs/run_fields.h"
#include "runs/run_store.h"
#include "std_string.h"
#include "sys/atomic_file.h"
#include "view_tabs.h"
#include "views/shift_view.h"

namespace ensemble::ui {

namespace {}  // namespace

FileActions::FileActions(EngineController* controller, ExperimentPanel* panel, RunSession* session,
                         ViewTabs* views, QMainWindow* window, bool useSettings)
    : QObject(window),
      m_controller(controller),
      m_panel(panel),
      m_session(session),
      m_views(views),
      m_window(window),
      m_useSettings(useSettings) {
    buildActions();
    if (m_useSettings) {
        m_recent = QSettings().value(QStringLiteral("files/recent")).toStringList();
    }
    connect(m_controller, &EngineController::exportFinished, this, &FileActions::onExportFinished);
    connect(m_controller, &EngineController::checkpointSaved, this,
            &FileActions::onCheckpointSaved);
    connect(m_panel, &ExperimentPanel::openRequested, this, &FileActions::chooseOpen);
    connect(m_panel, &ExperimentPanel::saveRequested, this, &FileActions::chooseSave);
}

void FileActions::buildActions() {
    QStyle* st = m_window->style();
    m_export = new QAction(st->standardIcon(QStyle::SP_DialogSaveButton), tr("Export…"), m_window);
    m_export->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_E));
    m_export->setToolTip(tr("Export weights, metrics and the current view (Ctrl+E)"));
    m_open = new QAction(st->standardIcon(QStyle::SP_DialogOpenButton), tr("Open…"), m_window);
    m_open->setShortcut(QKeySequence::Open);
    m_open->setToolTip(
        tr("Open an experiment (.json) or a trained ensemble (.safetensors) (Ctrl+O)"));
    m_save = new QAction(st->standardIcon(QStyle::SP_FileIcon), tr("Save…"), m_window);
    m_save->setShortcut(QKeySequence::Save);
    m_save->setToolTip(tr("Save the experiment (Ctrl+S)"));
    m_saveCheckpoint = new QAction(tr("Save Checkpoint…"), m_window);
    m_saveCheckpoint->setShortcut(QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_S));
    m_saveCheckpoint->setToolTip(
        tr("Save the trained state (weights, optimizer, curves) to continue it later "
           "(Ctrl+Shift+S)"));
    connect(m_export, &QAction::triggered, this, &FileActions::chooseExport);
    connect(m_open, &QAction::triggered, this, &FileActions::chooseOpen);
    connect(m_save, &QAction::triggered, this, &FileActions::chooseSave);
    connect(m_saveCheckpoint, &QAction::triggered, this, &FileActions::chooseSaveCheckpoint);
    buildPictureAction();
}

void FileActions::addActions(QMenu* file) {
    file->addAction(m_open);
    m_recentMenu = file->addMenu(tr("Open Recent"));
    m_recentMenu->setObjectName(QStringLiteral("OpenRecentMenu"));
    m_recentMenu->setToolTipsVisible(true);
    connect(m_recentMenu, &QMenu::aboutToShow, this, &FileActions::fillRecentMenu);
    file->addAction(m_save);
    file->addAction(m_saveCheckpoint);
    QAction* restore = file->addAction(tr("Restore last experiment"));
    connect(restore, &QAction::triggered, this, &FileActions::restoreLastExperiment);
    file->addSeparator();
    file->addAction(m_export);
    file->addAction(m_exportPicture);
    QAction* exportJob = file->addAction(tr("Export job…"));
    exportJob->setObjectName(QStringLiteral("ExportJobAction"));
    exportJob->setToolTip(
        tr("Write this experiment with an MPI mesh and ready-to-edit mpirun and Slurm scripts"));
    connect(exportJob, &QAction::triggered, this, &FileActions::chooseExportJob);
}

bool FileActions::openExperiment(const QString& path, QString* error) {
    try {
        const std::string file = QFile::encodeName(path).toStdString();
        const nlohmann::json config = loadConfigJson(file);
        // A JSON file that is no experiment (the metrics an export writes) is refused here:
        // loaded, it would replace the running experiment with one that cannot start.
        // The engine's validation decides, as `ensemble-cli train --config` does, before any
        // widget sees a value: the form's fields clamp (members -3 would become 1) and would
        // turn an invalid file into a valid run. A refused file keeps the experiment shown; the
        // window's own reason (a metrics file is named as one) adds to the engine's message.
        QString engineMessage;
        try {
            (void)parseConfig(composeConfig(file, {}));
        } catch (const ConfigError& e) {
            engineMessage = str(e.what());
        }
        const QString notExperiment = notAnExperiment(path, config);
        if (!notExperiment.isEmpty() || !engineMessage.isEmpty()) {
            if (error != nullptr) {
                *error = notExperiment.isEmpty() ? engineMessage
                         : engineMessage.isEmpty()
                             ? notExperiment
                             : notExperiment + QLatin1Char('\n') + engineMessage;
            }
            return false;
        }
        // Checked first, then asked: a refused file never asks about the run it would replace.
        return confirmReplace(tr("opening %1").arg(QFileInfo(path).fileName()),
                              [this, config, path] {
                                  m_session->loadExperiment(config);
                                  m_window->setWindowFilePath(path);
                                  addRecent(path);
                              });
    } catch (const std::exception& e) {
        if (error != nullptr) {
            *error = str(e.what());
        }
        return false;
    }
}

bool FileActions::openEnsemble(const QString& path, QString* error) {
    std::shared_ptr<const OpenedEnsemble> opened;
    try {
        opened = readOpenedEnsemble(path);
    } catch (const std::exception& e) {
        if (error != nullptr) {
            *error = str(e.what());
        }
        return false;
    }
    return confirmReplace(tr("opening %1").arg(QFileInfo(path).fileName()), [this, opened, path] {
        m_session->open(opened);
        addRecent(path);  // a file read and checked: Open Recent offers it at once
    });
}

bool FileActions::openFile(const QString& path, QString* error) {
    return path.endsWith(QStringLiteral(".safetensors"), Qt::CaseInsensitive)
               ? openEnsemble(path, error)
               : openExperiment(path, error);
}

void FileActions::addRecent(const QString& path) {
    constexpr int kRecentFiles = 10;
    const QString full = QFileInfo(path).absoluteFilePath();
    m_recent.removeAll(full);
    m_recent.prepend(full);
    while (m_recent.size() > kRecentFiles) {
        m_recent.removeLast();
    }
    if (m_useSettings) {
        QSettings().setValue(QStringLiteral("files/recent"), m_recent);
    }
}

namespace {

// The run that wrote `path`, as Open Recent names it ("run 12: train, 2026-11-29 03:12:45"),
// from the runs store (null: none known, or no store to read).
QString recentFileRun(const runs::RunStore* store, const QString& path) {
    if (store == nullptr) {
        return {};
    }
    try {
        const std::optional<std::int64_t> id = store->writerOf(path.toStdString());
        const std::optional<runs::RunEntry> entry = id ? store->get(*id) : std::nullopt;
        if (!entry) {
            return {};
        }
        return QCoreApplication::translate("ensemble::ui::FileActions", "run %1: %2, %3")
            .arg(entry->id)
            .arg(QString::fromStdString(entry->kind),
                 QString::fromStdString(runs::runFieldText(*entry, "started")));
    } catch (const std::exception&) {
        return {};  // a store that cannot be read names no run; the file opens as before
    }
}

}  // namespace

void FileActions::fillRecentMenu() {
    m_recentMenu->clear();
    // The runs that wrote these files (the Runs view lists them; runs show ID has the rest).
    // Read-only with a short wait: the menu opens on the GUI thread, which neither sweeps nor
    // migrates the store nor waits long for another program's lock.
    std::optional<runs::RunStore> store;
    try {
        store = runs::RunStore::openReadOnly(runs::defaultRunStorePath());
    } catch (const std::exception&) {
        store.reset();
    }
    for (const QString& path : m_recent) {
        const bool ensembleFile = path.endsWith(QStringLiteral(".safetensors"));
        const QString run = recentFileRun(store ? &*store : nullptr, path);
        QAction* a = m_recentMenu->addAction(
            QStringLiteral("%1  (%2)")
                .arg(QFileInfo(path).fileName(),
                     ensembleFile ? tr("trained ensemble") : tr("experiment")) +
            (run.isEmpty() ? QString()
                           : QStringLiteral("  · ") + run.section(QLatin1Char(':'), 0, 0)));
        // The name alone does not say which folder (two runs' exports share names).
        a->setToolTip(
            tr("%1\nin %2")
                .arg(QFileInfo(path).fileName(), QDir::toNativeSeparators(QFileInfo(path).path())) +
            (run.isEmpty() ? QString() : tr("\nwritten by %1").arg(run)));
        a->setEnabled(QFileInfo::exists(path));
        connect(a, &QAction::triggered, this, [this, path] {
            QString error;
            if (!openFile(path, &error) && !error.isEmpty()) {
                Q_EMIT errorRaised(tr("Could not open the file"), error,
                                   tr("The file may have moved or changed since it was opened."));
            }
        });
    }
    if (m_recent.isEmpty()) {
        m_recentMenu->addAction(tr("No recent files"))->setEnabled(false);
        return;
    }
    m_recentMenu->addSeparator();
    connect(m_recentMenu->addAction(tr("Clear list")), &QAction::triggered, this, [this] {
        m_recent.clear();
        if (m_useSettings) {
            QSettings().remove(QStringLiteral("files/recent"));
        }
    });
}

void FileActions::restoreLastExperiment() {
    QSettings settings;
    const QByteArray text = settings.value(QStringLiteral("experiment/last")).toByteArray();
    if (text.isEmpty()) {
        Q_EMIT statusRequested(tr("No experiment was saved yet."), 5000);
        return;
    }
    try {
        const ComposedConfig composed =
            composeConfigText(text.toStdString(), tr("the saved experiment").toStdString(), {});
        (void)parseConfig(composed);
        confirmReplace(tr("the last experiment"),
                       [this, config = composed.json] { m_session->loadExperiment(config); });
    } catch (const std::exception& e) {
        Q_EMIT statusRequested(tr("The saved experiment was not loaded: %1").arg(str(e.what())),
                               10000);
    }
}

QString FileActions::droppedFile(const QMimeData* mime) {
    if (mime == nullptr || !mime->hasUrls() || mime->urls().size() != 1) {
        return {};
    }
    const QString path = mime->urls().first().toLocalFile();
    return path.endsWith(QStringLiteral(".json"), Qt::CaseInsensitive) ||
                   path.endsWith(QStringLiteral(".safetensors"), Qt::CaseInsensitive)
               ? path
               : QString();
}

bool FileActions::saveExperiment(const QString& path, QString* error) {
    try {
        writeFileAtomic(QFile::encodeName(path).toStdString(),
                        m_session->experimentToSave().dump(2) + "\n");
        m_window->setWindowFilePath(path);
        addRecent(path);
        return true;
    } catch (const std::exception& e) {
        if (error != nullptr) {
            *error = str(e.what());
        }
        return false;
    }
}

void FileActions::chooseOpen() {
    QSettings settings;
    const QString dir = settings.value(QStringLiteral("files/experiments")).toString();
    const QString path = askFileToOpen(m_window, dir);
    if (path.isEmpty()) {
        return;
    }
    settings.setValue(QStringLiteral("files/experiments"), QFileInfo(path).path());
    QString error;
    if (!openFile(path, &error) && !error.isEmpty()) {
        Q_EMIT errorRaised(tr("Could not open the file"), error,
                           tr("Choose a JSON experiment file such as the ones Save writes, or a "
                              ".safetensors file that Export or ensemble-cli train --export / "
                              "--checkpoint wrote."));
    }
}

void FileActions::chooseSave() {
    QSettings settings;
    const QString dir =
        settings.value(QStringLiteral("files/experiments"), QDir::homePath()).toString();
    const QString name =
        m_panel->presetName().isEmpty() ? QStringLiteral("experiment") : m_panel->presetName();
    // .ensemble.json: the installed MIME type (application/x-ensemblelab-experiment), so a file
    // manager opens the file with the app; a plain .json still opens and saves as before.
    QString path =
        QFileDialog::getSaveFileName(m_window, tr("Save experiment"),
                                     QDir(dir).filePath(name + QStringLiteral(".ensemble.json")),
                                     tr("Experiments (*.ensemble.json *.json)"));
    if (path.isEmpty()) {
        return;
    }
    if (!path.endsWith(QStringLiteral(".json"))) {
        path += QStringLiteral(".ensemble.json");
    }
    settings.setValue(QStringLiteral("files/experiments"), QFileInfo(path).path());
    QString error;
    if (!saveExperiment(path, &error)) {
        Q_EMIT errorRaised(tr("Could not save the experiment"), error,
                           tr("Choose a folder you can write to."));
    }
}

void FileActions::saveCheckpoint(const QString& path) {
    m_controller->saveCheckpoint(path);
}

void FileActions::chooseSaveCheckpoint() {
    const QString path = askCheckpointPath();
    if (!path.isEmpty()) {
        saveCheckpoint(path);
    }
}

void FileActions::markCheckpoint(uint64_t runId, int64_t step) {
    m_checkpointRun = runId;
    m_checkpointStep = step;
}

bool FileActions::hasUnsavedTraining() const {
    const SnapshotPtr s = m_controller->snapshot();
    return s && s->step > 0 && !(s->run->runId == m_checkpointRun && s->step == m_checkpointStep);
}

QString FileActions::askCheckpointPath() {
    const SnapshotPtr s = m_controller->snapshot();
    if (!s) {
        return {};
    }
    QSettings settings;
    const QString dir =
        settings.value(QStringLiteral("files/exports"), QDir::homePath()).toString();
    const QString suggestion = QStringLiteral("%1-k%2-step%3.ckpt.safetensors")
                                   .arg(str(s->run->datasetName))
                                   .arg(s->run->members)
                                   .arg(s->step);
    QString path = QFileDialog::getSaveFileName(m_window, tr("Save checkpoint"),
                                                QDir(dir).filePath(suggestion),
                                                tr("Checkpoints (*.safetensors)"));
    if (path.isEmpty()) {
        return {};
    }
    if (!path.endsWith(QStringLiteral(".safetensors"))) {
        path += QStringLiteral(".safetensors");
    }
    settings.setValue(QStringLiteral("files/exports"), QFileInfo(path).path());
    return path;
}

void FileActions::onCheckpointSaved(bool ok, const QString& message, const QString& path,
                                    qint64 step) {
    if (ok) {
        addRecent(path);
        markCheckpoint(m_controller->currentRunId(), step);
    }
    if (m_afterCheckpoint) {
        // confirmReplace's Save: the replacement comes first, so the message below stays.
        const std::function<void()> next = std::move(m_afterCheckpoint);
        m_afterCheckpoint = nullptr;
        if (ok) {
            next();
        }
    }
    if (ok) {
        Q_EMIT statusRequested(
            tr("Saved checkpoint at step %1 to %2").arg(step).arg(QFileInfo(path).fileName()),
            8000);
    } else {
        Q_EMIT errorRaised(tr("Could not save the checkpoint"), message,
                           tr("Nothing was written. Choose a folder that exists and that you "
                              "can write to, with free space, and save again."));
    }
    Q_EMIT checkpointSaved(ok, message, path);
    if (m_closeAfterCheckpoint) {
        m_closeAfterCheckpoint = false;
        if (ok) {
            m_closing = true;  // answered: close without asking again
            m_window->close();
        }
    }
}

bool FileActions::confirmReplace(const QString& what, std::function<void()> proceed) {
    if (!m_askBeforeReplacing || !hasUnsavedTraining()) {
        proceed();
        return true;
    }
    m_controller->pause();
    const SnapshotPtr s = m_controller->snapshot();
    QMessageBox box(QMessageBox::Question, tr("Save a checkpoint first?"),
                    tr("The run has trained to step %1 and no checkpoint holds it; %2 replaces "
                       "it.")
                        .arg(s->step)
                        .arg(what),
                    QMessageBox::Save | QMessageBox::Discard | QMessageBox::Cancel, m_window);
    box.setObjectName(QStringLiteral("ReplaceRunQuestion"));
    box.setInformativeText(
        tr("Save a checkpoint to continue training it later, Discard to drop it, or Cancel to "
           "keep it."));
    box.setDefaultButton(QMessageBox::Cancel);
    const int answer = box.exec();
    if (answer == QMessageBox::Discard) {
        proceed();
        return true;
    }
    if (answer == QMessageBox::Save) {
        const QString path = askCheckpointPath();
        if (!path.isEmpty()) {
            m_afterCheckpoint = std::move(proceed);
            saveCheckpoint(path);
            return true;
        }
    }
    return false;
}

bool FileActions::mayClose(bool ask) {
    if (m_closeAfterCheckpoint) {
        return false;  // the checkpoint is being written; the window closes after it
    }
    if (!ask || m_closing || !hasUnsavedTraining()) {
        return true;
    }
    m_controller->pause();
    const SnapshotPtr s = m_controller->snapshot();
    QMessageBox box(QMessageBox::Question, tr("Save a checkpoint?"),
                    tr("The run has trained to step %1 and no checkpoint holds it.").arg(s->step),
                    QMessageBox::Save | QMessageBox::Discard | QMessageBox::Cancel, m_window);
    box.setObjectName(QStringLiteral("SaveCheckpointQuestion"));
    box.setInformativeText(
        tr("Save a checkpoint to continue training it later (File > Open, or ensemble-cli "
           "train --resume)."));
    box.setDefaultButton(QMessageBox::Save);
    const int answer = box.exec();
    if (answer == QMessageBox::Save) {
        const QString path = askCheckpointPath();
        if (!path.isEmpty()) {
            m_closeAfterCheckpoint = true;
            saveCheckpoint(path);
        }
        return false;
    }
    return answer == QMessageBox::Discard;
}

bool FileActions::exportJob(const QString& configPath, int ensemble, int data, QString* error) {
    QString base = configPath;
    if (base.endsWith(QStringLiteral(".json"))) {
        base.chop(5);
    }
    const QString name = QFileInfo(base).fileName();
    try {
        const JobFiles files =
            makeJobFiles(m_session->experimentToSave(), ensemble, data, name.toStdString());
        const QString script = base + QStringLiteral("-mpirun.sh");
        writeFileAtomic(QFile::encodeName(base + QStringLiteral(".json")).toStdString(),
                        files.config);
        writeFileAtomic(QFile::encodeName(script).toStdString(), files.mpirun);
        writeFileAtomic(QFile::encodeName(base + QStringLiteral(".sbatch")).toStdString(),
                        files.sbatch);
        QFile::setPermissions(script, QFile::permissions(script) | QFileDevice::ExeOwner |
                                          QFileDevice::ExeGroup | QFileDevice::ExeOther);
        return true;
    } catch (const std::exception& e) {
        if (error != nullptr) {
            *error = str(e.what());
        }
        return false;
    }
}

void FileActions::exportTo(const QString& basePath, ExportFormat format) {
    m_exportBase = basePath;
    Q_EMIT statusRequested(tr("Exporting…"), 0);
    m_controller->exportTo(basePath, format);
}

void FileActions::onExportFinished(bool ok, const QString& message, const QStringList& files) {
    QStringList written = files;
    QString error = message;
    if (ok) {
        // The picture of the current view, written atomically next to the weights: PNG, and
        // SVG for papers and slides.
        const QString png = m_exportBase + QStringLiteral(".png");
        const QString svg = m_exportBase + QStringLiteral(".svg");
        QWidget* view = m_views->currentView();
        QString pictureError;
        bool pictures = writePngPicture(view, png, &pictureError);
        if (pictures) {
            written << png;
            pictures = writeSvgPicture(view, svg, pictureText(), &pictureError);
        }
        if (pictures) {
            written << svg;
            // The Shift view's figures and data too, when it is shown and has measured: into
            // <base>-shift/, as its own Export… writes them.
            auto* shift = qobject_cast<ShiftView*>(m_views->currentView());
            QStringList shiftFiles;
            if (shift != nullptr && shift->outcome() != nullptr &&
                shift->outcome()->engineReport != nullptr) {
                if (shift->exportTo(m_exportBase + QStringLiteral("-shift"), &shiftFiles, &error)) {
                    written << shiftFiles;
                } else {
                    ok = false;
                }
            }
        } else {
            error = pictureError;
            ok = false;
        }
        if (!ok) {
            for (const QString& f : files) {
                QFile::remove(f);
            }
            for (const QString& f : {png, svg}) {
                if (written.contains(f)) {
                    QFile::remove(f);  // ours: what followed it failed
                }
            }
            written.clear();
        }
    }
    if (ok) {
        for (const QString& f : written) {
            if (f.endsWith(QStringLiteral(".safetensors"))) {
                addRecent(f);  // the weights open again from Open Recent
            }
        }
        Q_EMIT statusRequested(
            tr("Exported %1 files to %2").arg(written.size()).arg(QFileInfo(m_exportBase).path()),
            8000);
    } else {
        Q_EMIT statusRequested(QString(), 0);
        Q_EMIT errorRaised(tr("Export failed"), error,
                           tr("Nothing was written. Choose a folder that exists and that you can "
                              "write to, with free space, and export again."));
    }
    Q_EMIT exportFinished(ok, error, written);
}

void FileActions::updateActions() {
    const SnapshotPtr s = m_controller->snapshot();
    const bool noData = m_session->dataMissing();
    const QString missing = tr("its dataset is missing on this machine (see the banner)");
    const QString noRun = m_session->isConfiguring() ? tr("the experiment is still being set up")
                                                     : tr("no run: fix the experiment and Reset");
    // An untrained ensemble is its seed's initial weights: nothing to export yet.
    setActionEnabled(m_export, !noData && s != nullptr && s->step > 0,
                     noData ? missing : (!s ? noRun : tr("train at least one step first")));
    setActionEnabled(m_saveCheckpoint, !noData && s != nullptr, noData ? missing : noRun);
}

}  // namespace ensemble::ui
