// The window: its menus, toolbar, tabs and how snapshots reach the views, wired once here;
// the parts live apart (file_actions, run_session, run_status, view_table, view_tabs, the
// views), as do the banners (main_window_banners.cpp), the jobs (main_window_jobs.cpp) and the
// crash recovery (main_window_recovery.cpp).
#include "main_window.h"

#include <QAction>
#include <QApplication>
#include <QClipboard>
#include <QCloseEvent>
#include <QComboBox>
#include <QDir>
#include <QDockWidget>
#include <QDragEnterEvent>
#include <QDropEvent>
#include <QFileDialog>
#include <QFileInfo>
#include <QFrame>
#include <QHBoxLayout>
#include <QKeySequence>
#include <QLabel>
#include <QMenu>
#include <QMenuBar>
#include <QMessageBox>
#include <QProgressBar>
#include <QPushButton>
#include <QSettings>
#include <QStatusBar>
#include <QToolBar>
#include <QVBoxLayout>

#include <algorithm>
#include <exception>

#include "file_actions.h"
#include "help_text.h"
#include "panels/experiment_panel.h"
#include "render/plot_helpers.h"
#include "run_session.h"
#include "run_status.h"
#include "std_string.h"
#include "view_tabs.h"
#include "views/active_view.h"
#include "views/boundary_view.h"
#include "views/calibration_view.h"
#include "views/curves_view.h"
#include "views/filters_view.h"
#include "views/images_view.h"
#include "views/members_view.h"
#include "views/methods_view.h"
#include "views/regression_view.h"
#include "views/shift_view.h"
#include "views/sweep_view.h"
#include "widgets/busy_overlay.h"
#include "widgets/speed_control.h"

namespace ensemble::ui {

namespace {}  // namespace

MainWindow::MainWindow(Options options, QWidget* parent)
    : QMainWindow(parent),
      m_options(options),
      m_controller(std::make_unique<EngineController>(nullptr, options.tuning)),
      m_autosaveSeconds(std::max(0, options.autosaveSeconds)) {
    setWindowTitle(tr("EnsembleLab"));
    setObjectName(QStringLiteral("EnsembleLabMainWindow"));
    buildViews();
    m_session = new RunSession(m_controller.get(), m_panel, this);
    m_files = new FileActions(m_controller.get(), m_panel, m_session, m_tabs, this,
                              m_options.useSettings);
    m_files->setAskBeforeReplacing(m_options.askToSaveCheckpoint);
    m_session->setReplaceCheck([this](const QString& what, std::function<void()> proceed) {
        return m_files->confirmReplace(what, std::move(proceed));
    });
    if (m_options.askBeforeLargeRuns) {
        m_session->setLargeRunCheck(RunSession::largeRunDialog(this), m_options.tuning,
                                    m_options.availableMemory);
    }
    m_status = new RunStatus(statusBar());
    m_speed = new SpeedControl(m_options.useSettings, this);
    m_controller->setStepsPerSecond(m_speed->stepsPerSecond());
    connect(m_speed, &SpeedControl::speedChanged, m_controller.get(),
            &EngineController::setStepsPerSecond);
    buildMenus();
    connectJobs();

    connect(m_controller.get(), &EngineController::snapshotChanged, this, &MainWindow::onSnapshot);
    // A new run asked for: what is on screen is the previous run's. The status bar's message
    // about it goes, and the views are covered by what the new one is doing until it shows.
    connect(m_controller.get(), &EngineController::runRequested, this, [this](quint64 runId) {
        m_status->runReplaced(runId);
        m_status->showSettingUp();
        m_busy->setCancellable(true);
        m_busy->showWork(tr("Setting up the experiment…"), BusyOverlay::Cover::Everything);
    });
    connect(m_controller.get(), &EngineController::working, this,
            [this](quint64, const QString& what) {
                m_busy->showWork(what, BusyOverlay::Cover::Everything);
            });
    connect(m_busy, &BusyOverlay::cancelRequested, this, [this] {
        m_busy->setCancellable(false);
        m_busy->showWork(tr("Cancelling: the current stage ends first…"),
                         BusyOverlay::Cover::Everything);
        m_controller->cancelSetup();
    });
    connect(m_controller.get(), &EngineController::setupCancelled, this, [this](quint64 runId) {
        if (runId == m_controller->currentRunId()) {
            m_busy->finish();
            updateActions();
        }
    });
    // A stopped run being measured (a CNN's test rows take seconds): its step and what is
    // measured, over the views of the step before (covering them only while they are the
    // previous run's).
    connect(m_controller.get(), &EngineController::measuring, this,
            [this](quint64 runId, qint64 step, qint64 rows) {
                const SnapshotPtr s = m_controller->snapshot();
                const bool ours = s && s->run->runId == runId;
                if (ours && s->step == step && !s->running) {
                    return;  // this step shows already (a switch re-measured, the whole split)
                }
                m_busy->setCancellable(!ours);  // a new run's first measurement is its setup
                m_busy->showWork(tr("Step %1: measuring the members on %2 test rows…")
                                     .arg(formatCount(step), formatCount(rows)),
                                 ours ? BusyOverlay::Cover::Strip : BusyOverlay::Cover::Everything);
            });
    connect(m_controller.get(), &EngineController::configureFailed, this, [this](quint64 runId) {
        if (runId == m_controller->currentRunId()) {
            m_busy->finish();
        }
    });
    connect(m_controller.get(), &EngineController::openFailed, this, [this] {
        m_busy->finish();  // the run before it shows again
        m_status->show(m_controller->snapshot());
    });
    connect(m_controller.get(), &EngineController::runningChanged, this,
            [this] { updateActions(); });
    connect(m_controller.get(), &EngineController::predictionReady, imagesView(),
            &ImagesView::showPrediction);
    connect(m_controller.get(), &EngineController::featureMapsReady, filtersView(),
            &FiltersView::showFeatureMaps);

    connect(m_session, &RunSession::stateChanged, this, &MainWindow::updateActions);
    connect(m_session, &RunSession::statusRequested, this, &MainWindow::showStatus);
    connect(m_session, &RunSession::errorRaised, this, &MainWindow::showError);
    connect(m_session, &RunSession::pendingRestartChanged, this, [this](const QString& banner) {
        if (!banner.isEmpty()) {
            m_bannerText->setText(banner);
        }
        m_banner->setVisible(!banner.isEmpty());
    });
    connect(m_session, &RunSession::ensembleOpened, this, &MainWindow::onEnsembleOpened);
    connect(m_session, &RunSession::openFailed, this, &MainWindow::openFailed);
    connect(m_session, &RunSession::openFailed, this, &MainWindow::onRecoveryOpenFailed);
    connect(m_controller.get(), &EngineController::recoveryFlushed, this,
            &MainWindow::recoveryFlushed);
    connect(m_controller.get(), &EngineController::recoveryFailed, this,
            [this](const QString& message) {
                // Not an error box: the run goes on, and the next step tries again.
                showStatus(tr("Could not write the recovery checkpoint: %1").arg(message), 15000);
            });
    applyRecovery();
    connect(m_files, &FileActions::statusRequested, this, &MainWindow::showStatus);
    connect(m_files, &FileActions::errorRaised, this, &MainWindow::showError);
    connect(m_files, &FileActions::exportFinished, this, &MainWindow::exportFinished);
    connect(m_files, &FileActions::checkpointSaved, this, &MainWindow::checkpointSaved);

    resize(1280, 820);
    // The panel starts at the width its labels and editors need, the rest goes to the views;
    // a saved layout (the person's own width) wins.
    if (auto* dock = findChild<QDockWidget*>(QStringLiteral("ExperimentDock"))) {
        resizeDocks({dock}, {m_panel->minimumSizeHint().width()}, Qt::Horizontal);
    }
    if (m_options.useSettings) {
        QSettings settings;
        restoreGeometry(settings.value(QStringLiteral("window/geometry")).toByteArray());
        restoreState(settings.value(QStringLiteral("window/state")).toByteArray());
        setView(
            settings.value(QStringLiteral("window/view"), QStringLiteral("boundary")).toString());
    }
    setAcceptDrops(true);
    updateActions();
    m_status->show(nullptr);
}

MainWindow::~MainWindow() {
    // Stop and join the engine thread (a comparison under way finishes; its result is
    // dropped) before the views it feeds go away.
    m_controller.reset();
    // With the engine thread gone no write is in flight: a clean exit removes the recovery
    // checkpoint; after a signal it stays for the next start (the lock goes either way).
    if (!m_keepRecovery) {
        m_recovery.removeOwn();
    }
}

void MainWindow::buildViews() {
    m_panel = new ExperimentPanel;
    auto* dock = new QDockWidget(tr("Experiment"), this);
    dock->setObjectName(QStringLiteral("ExperimentDock"));
    dock->setWidget(m_panel);
    dock->setFeatures(QDockWidget::DockWidgetMovable | QDockWidget::DockWidgetFloatable);
    // No fixed width: the panel's own minimum (its widest label and editor in the current
    // font) bounds it, and the separator widens it.
    addDockWidget(Qt::LeftDockWidgetArea, dock);

    m_tabs = new ViewTabs;
    buildBanners();
    auto* central = new QWidget;
    auto* centralColumn = new QVBoxLayout(central);
    centralColumn->setContentsMargins(0, 0, 0, 0);
    centralColumn->setSpacing(0);
    centralColumn->addWidget(m_recoveryBanner);
    centralColumn->addWidget(m_dataBanner);
    centralColumn->addWidget(m_banner);
    centralColumn->addWidget(m_tabs, 1);
    setCentralWidget(central);
    m_busy = new BusyOverlay(m_tabs);

    connect(m_panel, &ExperimentPanel::validityChanged, this, [this] { updateActions(); });
    MembersView* members = membersView();
    connect(members, &MembersView::memberSelected, this, &MainWindow::selectMember);
    connect(members, &MembersView::memberToggled, this,
            [this](int k, bool on) { m_controller->setMemberSwitchedOn(k, on); });
    connect(members, &MembersView::allMembersSet, this, [this](bool on) {
        const SnapshotPtr s = m_controller->snapshot();
        if (s) {
            m_controller->setSwitchedOnMembers(
                std::vector<uint8_t>(static_cast<std::size_t>(s->run->members), on ? 1 : 0));
        }
    });
    connect(imagesView(), &ImagesView::predictionRequested, this,
            [this](quint64 id, const std::vector<float>& pixels) {
                m_controller->predict(id, pixels);
            });
    connect(filtersView(), &FiltersView::predictionRequested, this,
            [this](quint64 id, const std::vector<float>& pixels) {
                m_controller->predict(id, pixels);
            });
}

void MainWindow::buildMenus() {
    QToolBar* bar = addToolBar(tr("Run"));
    bar->setObjectName(QStringLiteral("RunToolBar"));
    bar->setToolButtonStyle(Qt::ToolButtonTextBesideIcon);
    bar->setMovable(false);
    bar->addAction(trainAction());
    bar->addAction(stepAction());
    bar->addAction(resetAction());
    bar->addWidget(m_speed->comboBox());
    bar->addSeparator();
    bar->addAction(exportAction());
    bar->addSeparator();
    bar->addAction(openAction());
    bar->addAction(saveAction());
    auto* spacer = new QWidget;
    spacer->setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Preferred);
    bar->addWidget(spacer);
    bar->addWidget(m_status->progress());

    QMenu* file = menuBar()->addMenu(tr("&File"));
    m_files->addActions(file);
    file->addSeparator();
    addRecoveryMenu(file);
    file->addSeparator();
    QAction* quit = file->addAction(tr("Quit"));
    quit->setShortcut(QKeySequence::Quit);
    connect(quit, &QAction::triggered, this, &QWidget::close);
    QMenu* run = menuBar()->addMenu(tr("&Run"));
    run->addAction(trainAction());
    run->addAction(stepAction());
    run->addAction(resetAction());
    m_speed->addMenu(run);
    run->addSeparator();
    QAction* copyCommand = run->addAction(tr("Copy as Command"));
    copyCommand->setShortcut(QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_C));
    copyCommand->setToolTip(
        tr("Copy the ensemble-cli command that trains this experiment, live edits included"));
    connect(copyCommand, &QAction::triggered, this, [this] {
        QGuiApplication::clipboard()->setText(commandLine());
        statusBar()->showMessage(tr("Copied: %1").arg(commandLine()), 8000);
    });
    QMenu* view = menuBar()->addMenu(tr("&View"));
    m_tabs->addViewActions(view);
    view->addSeparator();
    view->addAction(findChild<QDockWidget*>(QStringLiteral("ExperimentDock"))->toggleViewAction());
    QMenu* help = menuBar()->addMenu(tr("&Help"));
    const QString docs = addDocumentationActions(
        help, m_options.documentationFolders, m_options.openUrl,
        [this](const QString& title, const QString& message, const QString& advice) {
            showError(title, message, advice);
        });
    help->addSeparator();
    QAction* keys = help->addAction(tr("Keyboard and mouse"));
    keys->setShortcut(QKeySequence::HelpContents);
    keys->setToolTip(tr("List the keyboard shortcuts and mouse gestures (F1)"));
    connect(keys, &QAction::triggered, this, [this] {
        showHelpBox(QStringLiteral("ShortcutsBox"), tr("Keyboard and mouse"), shortcutsHtml(this));
    });
    QAction* about = help->addAction(tr("About EnsembleLab"));
    connect(about, &QAction::triggered, this, [this, docs] {
        showHelpBox(QStringLiteral("AboutBox"), tr("About EnsembleLab"),
                    aboutHtml(m_controller->snapshot(), docs));
    });
}

// --- what the window forwards -------------------------------------------------------------

void MainWindow::loadExperiment(const nlohmann::json& config, const QString& preset) {
    m_session->loadExperiment(config, preset);
}

bool MainWindow::openExperiment(const QString& path, QString* error) {
    return m_files->openExperiment(path, error);
}

bool MainWindow::saveExperiment(const QString& path, QString* error) {
    return m_files->saveExperiment(path, error);
}

bool MainWindow::openEnsemble(const QString& path, QString* error) {
    return m_files->openEnsemble(path, error);
}

bool MainWindow::openFile(const QString& path, QString* error) {
    return m_files->openFile(path, error);
}

void MainWindow::saveCheckpoint(const QString& path) {
    m_files->saveCheckpoint(path);
}

QStringList MainWindow::recentFiles() const {
    return m_files->recentFiles();
}

QString MainWindow::commandLine() const {
    QString line = m_session->commandLine();
    const ActiveStatePtr loop = m_controller->activeState();
    const SnapshotPtr s = m_controller->snapshot();
    if (currentViewId() != ViewId::Active || !loop || !s || loop->runId != s->run->runId) {
        return line;
    }
    // The Active learning view in front: the command that runs its loop (the panel's active
    // section is in the --sets) as far as it went.
    const QString train = QStringLiteral("ensemble-cli train");
    if (line.startsWith(train)) {
        line.replace(0, train.size(), QStringLiteral("ensemble-cli active"));
    }
    line += QStringLiteral(" --acquisition %1 --seeds 1")
                .arg(QLatin1String(toString(loop->acquisition)));
    if (loop->rounds.size() > 1) {
        line += QStringLiteral(" --rounds %1").arg(loop->rounds.size() - 1);
    }
    return line;
}

bool MainWindow::exportJob(const QString& configPath, int ensemble, int data, QString* error) {
    return m_files->exportJob(configPath, ensemble, data, error);
}

void MainWindow::exportTo(const QString& basePath, ExportFormat format) {
    m_files->exportTo(basePath, format);
}

QStringList MainWindow::viewNames() {
    return viewKeys();
}

bool MainWindow::setView(const QString& name) {
    const std::optional<ViewId> id = viewByKey(name);
    return id.has_value() && setView(*id);
}

bool MainWindow::setView(ViewId id) {
    return m_tabs->setView(id);
}

QString MainWindow::currentViewName() const {
    return QLatin1String(viewRow(currentViewId()).key);
}

ViewId MainWindow::currentViewId() const {
    return m_tabs->currentViewId();
}

QWidget* MainWindow::currentView() const {
    return m_tabs->currentView();
}

BoundaryView* MainWindow::boundaryView() const {
    return m_tabs->viewAs<BoundaryView>(ViewId::Boundary);
}
MembersView* MainWindow::membersView() const {
    return m_tabs->viewAs<MembersView>(ViewId::Members);
}
CurvesView* MainWindow::curvesView() const {
    return m_tabs->viewAs<CurvesView>(ViewId::Curves);
}
CalibrationView* MainWindow::calibrationView() const {
    return m_tabs->viewAs<CalibrationView>(ViewId::Calibration);
}
SweepView* MainWindow::sweepView() const {
    return m_tabs->viewAs<SweepView>(ViewId::Sweep);
}
ImagesView* MainWindow::imagesView() const {
    return m_tabs->viewAs<ImagesView>(ViewId::Images);
}
FiltersView* MainWindow::filtersView() const {
    return m_tabs->viewAs<FiltersView>(ViewId::Filters);
}
RegressionView* MainWindow::regressionView() const {
    return m_tabs->viewAs<RegressionView>(ViewId::Regression);
}
ShiftView* MainWindow::shiftView() const {
    return m_tabs->viewAs<ShiftView>(ViewId::Shift);
}
ActiveView* MainWindow::activeView() const {
    return m_tabs->viewAs<ActiveView>(ViewId::Active);
}
MethodsView* MainWindow::methodsView() const {
    return m_tabs->viewAs<MethodsView>(ViewId::Methods);
}
QAction* MainWindow::trainAction() const {
    return m_session->trainAction();
}
QAction* MainWindow::stepAction() const {
    return m_session->stepAction();
}
QAction* MainWindow::resetAction() const {
    return m_session->resetAction();
}
QAction* MainWindow::exportAction() const {
    return m_files->exportAction();
}
QAction* MainWindow::openAction() const {
    return m_files->openAction();
}
QAction* MainWindow::saveAction() const {
    return m_files->saveAction();
}
QAction* MainWindow::saveCheckpointAction() const {
    return m_files->saveCheckpointAction();
}

// --- the run as the window shows it -------------------------------------------------------

void MainWindow::onEnsembleOpened(const std::shared_ptr<const OpenedEnsemble>& opened,
                                  const QString& notice) {
    if (!m_restoring.isEmpty() && opened->path == m_restoring) {
        // Its first snapshot says whether the run has its data here (finishRestore).
        m_restoredRun = m_controller->currentRunId();
        // No saved file holds the run (closing asks, as for any run trained here), and the
        // title names none.
        setWindowFilePath(QString());
        m_files->markCheckpoint(0, -1);
        const int64_t step = opened->checkpoint.state.step;
        QString text = tr("Restored the run at step %1; Train continues it").arg(formatCount(step));
        if (!notice.isEmpty()) {
            text += QStringLiteral(" — ") + notice;
        }
        showStatus(text);
        updateActions();
        return;
    }
    setWindowFilePath(opened->path);
    if (opened->isCheckpoint) {
        m_files->markCheckpoint(m_controller->currentRunId(), opened->checkpoint.state.step);
    }
    const QString name = QFileInfo(opened->path).fileName();
    const int64_t step =
        opened->isCheckpoint ? opened->checkpoint.state.step : opened->checkpoint.ensemble.step;
    QString text =
        opened->isCheckpoint
            ? tr("%1: resumed checkpoint at step %2; Train continues it").arg(name).arg(step)
            : tr("%1: loaded weights as the starting point (exported at step %2; Train starts "
                 "a new run from them)")
                  .arg(name)
                  .arg(step);
    if (!notice.isEmpty()) {
        text += QStringLiteral(" — ") + notice;
    }
    showStatus(text);
    updateActions();
    Q_EMIT ensembleOpened(opened->path, opened->isCheckpoint, step);
}

void MainWindow::selectMember(int member) {
    m_selectedMember = member;
    boundaryView()->setSelectedMember(member);
    membersView()->setSelectedMember(member);
    regressionView()->setSelectedMember(member);
}

QString MainWindow::missingDataMessage() const {
    return m_dataBanner->isHidden() ? QString() : m_dataBannerText->text();
}

void MainWindow::onSnapshot() {
    const SnapshotPtr s = m_controller->snapshot();
    if (s && m_restoredRun != 0 && s->run->runId == m_restoredRun) {
        finishRestore(*s->run);  // before anything else sees the run (--train-steps trains it)
    }
    if (s && m_selectedMember >= s->run->members) {
        selectMember(-1);
    }
    const bool noData = s && !s->run->missingData.empty();
    if (noData) {
        const RunInfo& run = *s->run;
        const QString file = QFileInfo(windowFilePath()).fileName();
        // The loader's message names what is missing and how to get it (scripts/fetch-mnist.sh,
        // dataset.path).
        m_dataBannerText->setText(
            tr("%1 opened without its data. %2\nShown: its config, its members' settings, the "
               "curves it stored and (CNN) its filters; the views that measure the data stay "
               "empty and it cannot train. Once the data is there, open the file again.")
                .arg(file, str(run.missingData)));
        if (m_dataBannerFor != run.runId) {
            m_dataBannerFor = run.runId;
            showStatus(tr("%1: opened at step %2 without its dataset, which cannot be loaded "
                          "here")
                           .arg(file)
                           .arg(s->step));
        }
    }
    m_dataBanner->setVisible(noData);
    showWorkOf(s);
    m_tabs->showSnapshot(s);
    if (!s || s->run->runId == m_controller->currentRunId()) {
        m_status->show(s);
    } else {
        m_status->showSettingUp();  // the run before the one being built
    }
    updateActions();
    Q_EMIT snapshotShown();
}

void MainWindow::showWorkOf(const SnapshotPtr& s) {
    if (!s || s->run->runId != m_controller->currentRunId()) {
        return;  // a replaced run's last snapshot: the new one is still being built
    }
    if (s->evaluating) {
        m_busy->showWork(tr("Step %1: measuring the figures on all %2 test rows (shown meanwhile: "
                            "the %3 live ones)…")
                             .arg(formatCount(s->step), formatCount(s->run->testRows),
                                  formatCount(s->testRowsMeasured)),
                         BusyOverlay::Cover::Strip);
    } else {
        m_busy->finish();
    }
}

QString MainWindow::busyMessage() const {
    return m_busy->text();
}

void MainWindow::updateActions() {
    m_session->updateActions();
    m_files->updateActions();
}

// --- messages, help, drops and closing ----------------------------------------------------

void MainWindow::showError(const QString& title, const QString& message, const QString& advice) {
    m_lastError = message;
    auto* box = new QMessageBox(QMessageBox::Warning, title, message, QMessageBox::Ok, this);
    box->setInformativeText(advice);
    box->setAttribute(Qt::WA_DeleteOnClose);
    box->setObjectName(QStringLiteral("ErrorBox"));
    box->open();  // not modal to the event loop: training and tests go on
}

void MainWindow::showStatus(const QString& text, int timeoutMs) {
    m_status->showMessage(text, timeoutMs, m_controller->currentRunId());
}

QString MainWindow::statusMessage() const {
    return m_status->message();
}

void MainWindow::showHelpBox(const QString& name, const QString& title, const QString& html) {
    openHelpDialog(this, name, title, html);
}

void MainWindow::dragEnterEvent(QDragEnterEvent* event) {
    if (!FileActions::droppedFile(event->mimeData()).isEmpty()) {
        event->acceptProposedAction();
    }
}

void MainWindow::dropEvent(QDropEvent* event) {
    const QString path = FileActions::droppedFile(event->mimeData());
    if (path.isEmpty()) {
        return;
    }
    event->acceptProposedAction();
    QString error;
    if (!openFile(path, &error) && !error.isEmpty()) {  // empty: the person kept the run
        showError(tr("Could not open the file"), error,
                  tr("Drop a JSON experiment or a .safetensors export or checkpoint."));
    }
}

void MainWindow::closeEvent(QCloseEvent* event) {
    if (!m_files->mayClose(m_options.askToSaveCheckpoint)) {
        event->ignore();
        return;
    }
    if (m_options.useSettings) {
        QSettings settings;
        settings.setValue(QStringLiteral("window/geometry"), saveGeometry());
        settings.setValue(QStringLiteral("window/state"), saveState());
        settings.setValue(QStringLiteral("window/view"), currentViewName());
        settings.setValue(QStringLiteral("experiment/last"),
                          QByteArray::fromStdString(m_panel->config().dump()));
    }
    m_controller->pause();
    QMainWindow::closeEvent(event);
}

}  // namespace ensemble::ui
