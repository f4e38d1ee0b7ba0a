#include "main_window.h"

#include <QAction>
#include <QApplication>
#include <QClipboard>
#include <QCloseEvent>
#include <QDialog>
#include <QDialogButtonBox>
#include <QDir>
#include <QDockWidget>
#include <QDragEnterEvent>
#include <QDropEvent>
#include <QFile>
#include <QFileDialog>
#include <QFileInfo>
#include <QFormLayout>
#include <QFrame>
#include <QHBoxLayout>
#include <QKeySequence>
#include <QLabel>
#include <QMenu>
#include <QMenuBar>
#include <QMessageBox>
#include <QMimeData>
#include <QProgressBar>
#include <QPushButton>
#include <QSaveFile>
#include <QScrollArea>
#include <QSettings>
#include <QSpinBox>
#include <QStatusBar>
#include <QStyle>
#include <QTabWidget>
#include <QThread>
#include <QToolBar>
#include <QVBoxLayout>

#include <cmath>

#include "action_reason.h"
#include "controller/comparison.h"
#include "core/errors.h"
#include "data_traits.h"
#include "help_text.h"
#include "io/atomic_file.h"
#include "io/config.h"
#include "job_files.h"
#include "panels/experiment_panel.h"
#include "render/plot_helpers.h"
#include "views/boundary_view.h"
#include "views/calibration_view.h"
#include "views/curves_view.h"
#include "views/filters_view.h"
#include "views/images_view.h"
#include "views/members_view.h"
#include "views/regression_view.h"
#include "views/sweep_view.h"
#include "widgets/elided_label.h"

namespace ensemble::ui {

namespace {

QString str(const std::string& s) {
    return QString::fromStdString(s);
}

// What a person can do about a failed run, from the kind of error.
QString adviceFor(ErrorKind kind) {
    switch (kind) {
        case ErrorKind::ImageData:
            return QObject::tr(
                "Choose the folder that holds the MNIST IDX files in Dataset > Path, "
                "or fetch them with scripts/fetch-mnist.sh.");
        case ErrorKind::BackendMissing:
            return QObject::tr("Choose Auto or CPU in Backend > Device.");
        case ErrorKind::Memory:
            return QObject::tr("Reduce the ensemble size K, the hidden layers or the dataset.");
        case ErrorKind::Csv:
            return QObject::tr(
                "Check the CSV file: a header row, numeric features and an integer "
                "'label' column.");
        default:
            return QObject::tr("Fix the experiment settings and press Reset.");
    }
}

}  // namespace

MainWindow::MainWindow(Options options, QWidget* parent)
    : QMainWindow(parent),
      m_options(options),
      m_controller(std::make_unique<EngineController>(nullptr, options.tuning)) {
    setWindowTitle(tr("EnsembleLab"));
    setObjectName(QStringLiteral("EnsembleLabMainWindow"));
    buildViews();
    buildActions();

    connect(m_controller.get(), &EngineController::snapshotChanged, this, &MainWindow::onSnapshot);
    connect(m_controller.get(), &EngineController::runningChanged, this,
            &MainWindow::onRunningChanged);
    connect(m_controller.get(), &EngineController::configureFailed, this,
            &MainWindow::onConfigureFailed);
    connect(m_controller.get(), &EngineController::liveEditFailed, this,
            [this](const QString& message) {
                showError(tr("Could not apply the edit"), message,
                          tr("Fix the value; the run goes on with the previous one."));
            });
    connect(m_controller.get(), &EngineController::configured, this,
            [this](quint64 runId, const QString& notice) {
                if (runId == m_controller->currentRunId()) {
                    m_configuring = false;
                    // The backend's fallback notice (CUDA driver too old …) once per
                    // session, not on every Reset; About and the backend label keep it.
                    if (!notice.isEmpty() && !m_noticesShown.contains(notice)) {
                        m_noticesShown.insert(notice);
                        showStatus(notice, 15000);
                    }
                    updateActions();
                }
                if (m_opening && runId == m_openingRun) {
                    onEnsembleOpened(notice);
                }
            });
    connect(m_controller.get(), &EngineController::openFailed, this,
            [this](quint64 runId, const QString& message) {
                if (!m_opening || runId != m_openingRun) {
                    return;
                }
                m_opening.reset();
                m_configuring = false;
                showError(tr("Could not open the ensemble"), message,
                          tr("The current experiment is kept. Make the dataset the file names "
                             "available on this machine (Dataset > Path for files; "
                             "scripts/fetch-mnist.sh for MNIST) and open it again."));
                updateActions();
                Q_EMIT openFailed(message);
            });
    connect(m_controller.get(), &EngineController::exportFinished, this,
            &MainWindow::onExportFinished);
    connect(m_controller.get(), &EngineController::predictionReady, m_images,
            &ImagesView::showPrediction);
    connect(m_controller.get(), &EngineController::featureMapsReady, m_filters,
            &FiltersView::showFeatureMaps);

    m_applyTimer.setSingleShot(true);
    m_applyTimer.setInterval(350);
    connect(&m_applyTimer, &QTimer::timeout, this, [this] {
        if (m_panel->isValid() && m_panel->config() != m_activeConfig) {
            startRun();
        }
    });

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
    if (m_options.useSettings) {
        m_recent = QSettings().value(QStringLiteral("files/recent")).toStringList();
    }
    connect(m_controller.get(), &EngineController::checkpointSaved, this,
            [this](bool ok, const QString& message, const QString& path, qint64 step) {
                if (ok) {
                    addRecent(path);
                    m_checkpointRun = m_controller->currentRunId();
                    m_checkpointStep = step;
                    showStatus(tr("Saved checkpoint at step %1 to %2")
                                   .arg(step)
                                   .arg(QFileInfo(path).fileName()),
                               8000);
                } else {
                    showError(tr("Could not save the checkpoint"), message,
                              tr("Nothing was written. Choose a folder that exists and that you "
                                 "can write to, with free space, and save again."));
                }
                Q_EMIT checkpointSaved(ok, message, path);
                if (m_closeAfterCheckpoint) {
                    m_closeAfterCheckpoint = false;
                    if (ok) {
                        m_closing = true;  // answered: close without asking again
                        close();
                    }
                }
            });
    setAcceptDrops(true);
    updateActions();
    updateStatus();
}

MainWindow::~MainWindow() {
    if (m_compareThread != nullptr) {
        m_compareThread->wait();  // a measurement under way finishes; its result is dropped
        delete m_compareThread;
    }
    // Stop and join the engine thread before the views it feeds go away.
    m_controller.reset();
}

void MainWindow::chooseCompare() {
    QSettings settings;
    const QString dir =
        settings.value(QStringLiteral("files/exports"), QDir::homePath()).toString();
    const QString path =
        QFileDialog::getOpenFileName(this, tr("Compare with a trained ensemble"), dir,
                                     tr("Trained ensembles (*.safetensors);;All files (*)"));
    if (!path.isEmpty()) {
        compareWith(path);
    }
}

void MainWindow::compareWith(const QString& path) {
    const SnapshotPtr s = m_controller->snapshot();
    if (!s) {
        const QString message = tr("There is no run to compare with yet.");
        m_calibration->setComparisonMessage(message, true);
        Q_EMIT comparisonFinished(false, message);
        return;
    }
    if (m_compareThread != nullptr) {
        return;  // one at a time: the button is disabled meanwhile
    }
    struct Result {
        std::shared_ptr<const Comparison> comparison;
        QString error;
    };
    auto result = std::make_shared<Result>();
    const nlohmann::json dataset = s->run->config.json.value("dataset", nlohmann::json::object());
    m_compareThread = QThread::create([result, path, dataset] {
        try {
            result->comparison = measureComparison(path, dataset);
        } catch (const std::exception& e) {
            result->error = QString::fromStdString(e.what());
        }
    });
    m_calibration->compareButton()->setEnabled(false);
    m_calibration->setComparisonMessage(
        tr("Measuring %1 on this run's test rows…").arg(QFileInfo(path).fileName()));
    connect(m_compareThread, &QThread::finished, this, [this, result] {
        m_compareThread->deleteLater();
        m_compareThread = nullptr;
        m_calibration->compareButton()->setEnabled(true);
        if (!result->comparison) {
            m_calibration->setComparisonMessage(result->error, true);
            Q_EMIT comparisonFinished(false, result->error);
            return;
        }
        m_calibration->setComparison(result->comparison);
        Q_EMIT comparisonFinished(true, m_calibration->comparisonMessage());
    });
    m_compareThread->start();
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

    m_tabs = new QTabWidget;
    m_tabs->setDocumentMode(true);
    m_boundary = new BoundaryView;
    m_members = new MembersView;
    m_curves = new CurvesView;
    m_calibration = new CalibrationView;
    m_sweep = new SweepView;
    m_images = new ImagesView;
    m_filters = new FiltersView;
    m_regression = new RegressionView;
    // Each view in a frameless scroll area: a window smaller than a view's minimum (900 x 600
    // with the panel open) scrolls the view instead of clipping it or growing the window.
    auto scrollable = [](QWidget* view) {
        auto* area = new QScrollArea;
        area->setWidgetResizable(true);
        area->setFrameShape(QFrame::NoFrame);
        area->setWidget(view);
        return area;
    };
    m_tabs->addTab(scrollable(m_boundary), tr("Boundary"));
    m_tabs->addTab(scrollable(m_members), tr("Members"));
    m_tabs->addTab(scrollable(m_curves), tr("Curves"));
    m_tabs->addTab(scrollable(m_calibration), tr("Calibration"));
    m_tabs->addTab(scrollable(m_sweep), tr("Sweep"));
    m_tabs->addTab(scrollable(m_images), tr("Images"));
    m_tabs->setTabVisible(5, false);
    m_tabs->addTab(scrollable(m_filters), tr("Filters"));
    m_tabs->setTabVisible(6, false);
    m_tabs->addTab(scrollable(m_regression), tr("Regression"));
    m_tabs->setTabVisible(7, false);
    // Above the views: the one place that says an edit waits for Reset.
    m_banner = new QFrame;
    m_banner->setObjectName(QStringLiteral("RestartBanner"));
    m_banner->setStyleSheet(
        QStringLiteral("#RestartBanner { background: #fff4d6; border-bottom: 1px solid #f0d68a; }"
                       "#RestartBanner QLabel { color: #7a5a00; }"));
    auto* bannerRow = new QHBoxLayout(m_banner);
    bannerRow->setContentsMargins(10, 4, 10, 4);
    m_bannerText = new QLabel;
    auto* bannerReset = new QPushButton(tr("Reset (R)"));
    connect(bannerReset, &QPushButton::clicked, this, [this] { m_reset->trigger(); });
    bannerRow->addWidget(m_bannerText, 1);
    bannerRow->addWidget(bannerReset);
    m_banner->setVisible(false);
    m_dataBanner = new QFrame;
    m_dataBanner->setObjectName(QStringLiteral("MissingDataBanner"));
    m_dataBanner->setStyleSheet(
        QStringLiteral("#MissingDataBanner { background: #fde8e6; border-bottom: 1px solid "
                       "#f0b4ae; } #MissingDataBanner QLabel { color: #7a1f16; }"));
    auto* dataRow = new QHBoxLayout(m_dataBanner);
    dataRow->setContentsMargins(10, 4, 10, 4);
    m_dataBannerText = new QLabel;
    m_dataBannerText->setWordWrap(true);
    m_dataBannerText->setTextInteractionFlags(Qt::TextSelectableByMouse);
    dataRow->addWidget(m_dataBannerText, 1);
    m_dataBanner->setVisible(false);
    auto* central = new QWidget;
    auto* centralColumn = new QVBoxLayout(central);
    centralColumn->setContentsMargins(0, 0, 0, 0);
    centralColumn->setSpacing(0);
    centralColumn->addWidget(m_dataBanner);
    centralColumn->addWidget(m_banner);
    centralColumn->addWidget(m_tabs, 1);
    setCentralWidget(central);

    connect(m_calibration, &CalibrationView::compareRequested, this, &MainWindow::chooseCompare);
    connect(m_panel, &ExperimentPanel::edited, this, &MainWindow::onPanelEdited);
    connect(m_panel, &ExperimentPanel::validityChanged, this, [this] { updateActions(); });
    connect(m_panel, &ExperimentPanel::presetChosen, this, [this](const QString& name) {
        loadExperiment(nlohmann::json::parse(presetText(name.toStdString())), name);
    });
    connect(m_panel, &ExperimentPanel::regenerateRequested, this, [this] {
        if (m_panel->isValid()) {
            startRun();
        }
    });
    connect(m_panel, &ExperimentPanel::openRequested, this, &MainWindow::chooseOpen);
    connect(m_panel, &ExperimentPanel::saveRequested, this, &MainWindow::chooseSave);

    connect(m_members, &MembersView::memberSelected, this, &MainWindow::selectMember);
    connect(m_members, &MembersView::memberToggled, this,
            [this](int k, bool on) { m_controller->setMemberEnabled(k, on); });
    connect(m_members, &MembersView::allMembersSet, this, [this](bool on) {
        const SnapshotPtr s = m_controller->snapshot();
        if (s) {
            m_controller->setEnabledMembers(
                std::vector<uint8_t>(static_cast<std::size_t>(s->run->members), on ? 1 : 0));
        }
    });
    connect(m_images, &ImagesView::predictionRequested, this,
            [this](quint64 id, const std::vector<float>& pixels) {
                m_controller->predict(id, pixels);
            });
    connect(m_filters, &FiltersView::predictionRequested, this,
            [this](quint64 id, const std::vector<float>& pixels) {
                m_controller->predict(id, pixels);
            });
}

void MainWindow::buildActions() {
    QStyle* st = style();
    m_train = new QAction(st->standardIcon(QStyle::SP_MediaPlay), tr("Train"), this);
    m_train->setShortcut(QKeySequence(Qt::Key_Space));
    m_train->setToolTip(tr("Train / Pause (Space)"));
    m_step = new QAction(st->standardIcon(QStyle::SP_MediaSeekForward), tr("Step"), this);
    m_step->setShortcut(QKeySequence(Qt::Key_S));
    m_step->setToolTip(tr("Train exactly one step (S)"));
    m_reset = new QAction(st->standardIcon(QStyle::SP_BrowserReload), tr("Reset"), this);
    m_reset->setShortcut(QKeySequence(Qt::Key_R));
    m_reset->setToolTip(
        tr("Back to step 0 with the experiment as edited (R); the initial "
           "weights change only with the ensemble seed"));
    m_export = new QAction(st->standardIcon(QStyle::SP_DialogSaveButton), tr("Export…"), this);
    m_export->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_E));
    m_export->setToolTip(tr("Export weights, metrics and the current view (Ctrl+E)"));
    m_open = new QAction(st->standardIcon(QStyle::SP_DialogOpenButton), tr("Open…"), this);
    m_open->setShortcut(QKeySequence::Open);
    m_open->setToolTip(
        tr("Open an experiment (.json) or a trained ensemble (.safetensors) (Ctrl+O)"));
    m_save = new QAction(st->standardIcon(QStyle::SP_FileIcon), tr("Save…"), this);
    m_save->setShortcut(QKeySequence::Save);
    m_save->setToolTip(tr("Save the experiment (Ctrl+S)"));
    m_saveCheckpoint = new QAction(tr("Save Checkpoint…"), this);
    m_saveCheckpoint->setShortcut(QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_S));
    m_saveCheckpoint->setToolTip(
        tr("Save the trained state (weights, optimizer, curves) to continue it later "
           "(Ctrl+Shift+S)"));

    connect(m_train, &QAction::triggered, this, [this] {
        if (m_controller->isRunning()) {
            m_controller->pause();
            return;
        }
        if (!m_panel->isValid()) {
            return;
        }
        const SnapshotPtr s = m_controller->snapshot();
        if (!s || (s->step == 0 && restartPending())) {
            m_applyTimer.stop();
            startRun();  // queued before start(), so it trains the edited experiment
        } else if (s->finished && !restartPending()) {
            // Continue: another block of the same length, from where the run stopped.
            m_panel->extendStopAfter(s->step, s->epoch);
            applyLiveEdits();
        }
        m_controller->start();
    });
    connect(m_step, &QAction::triggered, this, [this] {
        if (!m_controller->isRunning()) {
            m_controller->step();
        }
    });
    connect(m_reset, &QAction::triggered, this, [this] {
        if (m_panel->isValid()) {
            startRun();
        }
    });
    connect(m_export, &QAction::triggered, this, &MainWindow::chooseExport);
    connect(m_open, &QAction::triggered, this, &MainWindow::chooseOpen);
    connect(m_save, &QAction::triggered, this, &MainWindow::chooseSave);
    connect(m_saveCheckpoint, &QAction::triggered, this, &MainWindow::chooseSaveCheckpoint);

    QToolBar* bar = addToolBar(tr("Run"));
    bar->setObjectName(QStringLiteral("RunToolBar"));
    bar->setToolButtonStyle(Qt::ToolButtonTextBesideIcon);
    bar->setMovable(false);
    bar->addAction(m_train);
    bar->addAction(m_step);
    bar->addAction(m_reset);
    bar->addSeparator();
    bar->addAction(m_export);
    bar->addSeparator();
    bar->addAction(m_open);
    bar->addAction(m_save);
    auto* spacer = new QWidget;
    spacer->setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Preferred);
    bar->addWidget(spacer);
    m_progress = new QProgressBar;
    m_progress->setMaximumWidth(260);
    m_progress->setTextVisible(true);
    m_progress->setFormat(QStringLiteral("%p %"));
    bar->addWidget(m_progress);

    QMenu* file = menuBar()->addMenu(tr("&File"));
    file->addAction(m_open);
    m_recentMenu = file->addMenu(tr("Open Recent"));
    m_recentMenu->setObjectName(QStringLiteral("OpenRecentMenu"));
    connect(m_recentMenu, &QMenu::aboutToShow, this, &MainWindow::fillRecentMenu);
    file->addAction(m_save);
    file->addAction(m_saveCheckpoint);
    QAction* restore = file->addAction(tr("Restore last experiment"));
    connect(restore, &QAction::triggered, this, &MainWindow::restoreLastExperiment);
    file->addSeparator();
    file->addAction(m_export);
    QAction* exportJob = file->addAction(tr("Export job…"));
    exportJob->setObjectName(QStringLiteral("ExportJobAction"));
    exportJob->setToolTip(
        tr("Write this experiment with an MPI mesh and ready-to-edit mpirun and Slurm scripts"));
    connect(exportJob, &QAction::triggered, this, &MainWindow::chooseExportJob);
    file->addSeparator();
    QAction* quit = file->addAction(tr("Quit"));
    quit->setShortcut(QKeySequence::Quit);
    connect(quit, &QAction::triggered, this, &QWidget::close);
    QMenu* run = menuBar()->addMenu(tr("&Run"));
    run->addAction(m_train);
    run->addAction(m_step);
    run->addAction(m_reset);
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
    for (int i = 0; i < viewNames().size(); ++i) {
        const QString name = viewNames().at(i);
        QAction* a = view->addAction(m_tabs->tabText(i));
        a->setShortcut(QKeySequence(Qt::CTRL | static_cast<Qt::Key>(Qt::Key_1 + i)));
        connect(a, &QAction::triggered, this, [this, name] { setView(name); });
    }
    view->addSeparator();
    view->addAction(findChild<QDockWidget*>(QStringLiteral("ExperimentDock"))->toggleViewAction());
    QMenu* help = menuBar()->addMenu(tr("&Help"));
    QAction* keys = help->addAction(tr("Keyboard and mouse"));
    keys->setShortcut(QKeySequence::HelpContents);
    keys->setToolTip(tr("List the keyboard shortcuts and mouse gestures (F1)"));
    connect(keys, &QAction::triggered, this, [this] {
        showHelpBox(QStringLiteral("ShortcutsBox"), tr("Keyboard and mouse"), shortcutsHtml(this));
    });
    QAction* about = help->addAction(tr("About EnsembleLab"));
    connect(about, &QAction::triggered, this, [this] {
        showHelpBox(QStringLiteral("AboutBox"), tr("About EnsembleLab"),
                    aboutHtml(m_controller->snapshot()));
    });

    // Messages on the left, elided with the full text in the tooltip; counters on the right.
    m_message = new ElidedLabel;
    m_message->setObjectName(QStringLiteral("StatusMessage"));
    m_message->setContentsMargins(4, 0, 4, 0);
    statusBar()->addWidget(m_message, 1);
    m_messageTimer.setSingleShot(true);
    connect(&m_messageTimer, &QTimer::timeout, this, [this] { m_message->setFullText({}); });
    m_stepLabel = new QLabel;
    m_epochLabel = new QLabel;
    m_rateLabel = new QLabel;
    m_memberRateLabel = new QLabel;
    m_backendLabel = new QLabel;
    m_figuresLabel = new QLabel;
    m_figuresLabel->setObjectName(QStringLiteral("TestFigures"));
    for (QLabel* l : {m_figuresLabel, m_stepLabel, m_epochLabel, m_rateLabel, m_memberRateLabel,
                      m_backendLabel}) {
        l->setContentsMargins(8, 0, 8, 0);
        statusBar()->addPermanentWidget(l);
    }
}

QStringList MainWindow::viewNames() {
    return {QStringLiteral("boundary"),    QStringLiteral("members"),   QStringLiteral("curves"),
            QStringLiteral("calibration"), QStringLiteral("sweep"),     QStringLiteral("images"),
            QStringLiteral("filters"),     QStringLiteral("regression")};
}

bool MainWindow::setView(const QString& name) {
    const int index = static_cast<int>(viewNames().indexOf(name.toLower()));
    if (index < 0 || !m_tabs->isTabVisible(index)) {
        return false;
    }
    m_tabs->setCurrentIndex(index);
    return true;
}

QString MainWindow::currentViewName() const {
    return viewNames().value(m_tabs->currentIndex());
}

QWidget* MainWindow::currentView() const {
    auto* area = qobject_cast<QScrollArea*>(m_tabs->currentWidget());
    return area != nullptr ? area->widget() : m_tabs->currentWidget();
}

void MainWindow::loadExperiment(const nlohmann::json& config, const QString& preset) {
    m_applyTimer.stop();
    m_panel->setConfig(config, preset);
    // A 2-D preset loaded unchanged plays until paused, as TensorFlow Playground does; an
    // experiment file (or an edited preset) keeps its explicit step count.
    const nlohmann::json loaded = m_panel->config();
    const nlohmann::json& kind = loaded["dataset"]["kind"];
    m_panel->setUntilPaused(!preset.isEmpty() && kind.is_string() &&
                            isTwoDimensional(kind.get<std::string>()));
    if (m_panel->isValid()) {
        startRun();
    } else {
        showStatus(tr("The experiment has invalid values: fix the marked fields."), 8000);
    }
    updateActions();
}

void MainWindow::startRun() {
    m_applyTimer.stop();
    m_activeConfig = m_panel->config();
    m_configuring = true;
    m_controller->setUntilPaused(m_panel->untilPaused());
    m_controller->configure(m_activeConfig);
    showPendingRestart(false);
    updateActions();
}

bool MainWindow::openExperiment(const QString& path, QString* error) {
    try {
        const nlohmann::json config = loadConfigJson(QFile::encodeName(path).toStdString());
        loadExperiment(config);
        setWindowFilePath(path);
        return true;
    } catch (const std::exception& e) {
        if (error != nullptr) {
            *error = str(e.what());
        }
        return false;
    }
}

bool MainWindow::openFile(const QString& path, QString* error) {
    const bool ok = path.endsWith(QStringLiteral(".safetensors"), Qt::CaseInsensitive)
                        ? openEnsemble(path, error)
                        : openExperiment(path, error);
    if (ok) {
        addRecent(path);
    }
    return ok;
}

void MainWindow::addRecent(const QString& path) {
    constexpr int kRecentFiles = 10;
    const QString full = QFileInfo(path).absoluteFilePath();
    m_recent.removeAll(full);
    m_recent.prepend(full);
    while (m_recent.size() > kRecentFiles) {
        m_recent.removeLast();
    }
    if (m_options.useSettings) {
        QSettings().setValue(QStringLiteral("files/recent"), m_recent);
    }
}

void MainWindow::fillRecentMenu() {
    m_recentMenu->clear();
    for (const QString& path : m_recent) {
        const bool ensembleFile = path.endsWith(QStringLiteral(".safetensors"));
        QAction* a = m_recentMenu->addAction(
            QStringLiteral("%1  (%2)")
                .arg(QFileInfo(path).fileName(),
                     ensembleFile ? tr("trained ensemble") : tr("experiment")));
        a->setToolTip(path);
        a->setEnabled(QFileInfo::exists(path));
        connect(a, &QAction::triggered, this, [this, path] {
            QString error;
            if (!openFile(path, &error)) {
                showError(tr("Could not open the file"), error,
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
        if (m_options.useSettings) {
            QSettings().remove(QStringLiteral("files/recent"));
        }
    });
}

void MainWindow::saveCheckpoint(const QString& path) {
    m_controller->saveCheckpoint(path);
}

void MainWindow::chooseSaveCheckpoint() {
    const QString path = askCheckpointPath();
    if (!path.isEmpty()) {
        saveCheckpoint(path);
    }
}

bool MainWindow::hasUnsavedTraining() const {
    const SnapshotPtr s = m_controller->snapshot();
    return s && s->step > 0 && !(s->run->runId == m_checkpointRun && s->step == m_checkpointStep);
}

QString MainWindow::askCheckpointPath() {
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
    QString path =
        QFileDialog::getSaveFileName(this, tr("Save checkpoint"), QDir(dir).filePath(suggestion),
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

namespace {

QString droppedFile(const QMimeData* mime) {
    if (mime == nullptr || !mime->hasUrls() || mime->urls().size() != 1) {
        return {};
    }
    const QString path = mime->urls().first().toLocalFile();
    return path.endsWith(QStringLiteral(".json"), Qt::CaseInsensitive) ||
                   path.endsWith(QStringLiteral(".safetensors"), Qt::CaseInsensitive)
               ? path
               : QString();
}

}  // namespace

void MainWindow::dragEnterEvent(QDragEnterEvent* event) {
    if (!droppedFile(event->mimeData()).isEmpty()) {
        event->acceptProposedAction();
    }
}

void MainWindow::dropEvent(QDropEvent* event) {
    const QString path = droppedFile(event->mimeData());
    if (path.isEmpty()) {
        return;
    }
    event->acceptProposedAction();
    QString error;
    if (!openFile(path, &error)) {
        showError(tr("Could not open the file"), error,
                  tr("Drop a JSON experiment or a .safetensors export or checkpoint."));
    }
}

bool MainWindow::openEnsemble(const QString& path, QString* error) {
    std::shared_ptr<const OpenedEnsemble> opened;
    try {
        opened = readOpenedEnsemble(path);
    } catch (const std::exception& e) {
        if (error != nullptr) {
            *error = str(e.what());
        }
        return false;
    }
    m_applyTimer.stop();
    m_opening = opened;
    m_configuring = true;
    m_openingRun = m_controller->open(std::move(opened));
    updateActions();
    return true;
}

void MainWindow::onEnsembleOpened(const QString& notice) {
    const std::shared_ptr<const OpenedEnsemble> opened = std::move(m_opening);
    m_opening.reset();
    // The panel shows the file's experiment; it is the running one, so nothing is pending.
    m_activeConfig = opened->config.json;
    m_panel->setConfig(opened->config.json, QString());
    m_panel->setUntilPaused(false);
    m_activeConfig = m_panel->config();
    m_applyTimer.stop();
    showPendingRestart(false);
    setWindowFilePath(opened->path);
    if (opened->isCheckpoint) {
        m_checkpointRun = m_controller->currentRunId();
        m_checkpointStep = opened->checkpoint.state.step;
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

nlohmann::json MainWindow::experimentToSave() const {
    nlohmann::json config = m_panel->config();
    const SnapshotPtr s = m_controller->snapshot();
    if (s && !restartPending() && !s->schedule.empty()) {
        // Live edits: the run's starting values and the schedule of changes, so the file
        // replays the run (the panel shows the values as they are now).
        const nlohmann::json& initial = s->run->config.json;
        for (const KeySpec& spec : configSchema()) {
            if (schedulable(spec) && initial[spec.section()].contains(spec.name())) {
                config[spec.section()][spec.name()] = initial[spec.section()][spec.name()];
            }
        }
        config["training"]["schedule"] = s->schedule;
    }
    if (m_panel->untilPaused() && s && s->step > 0 && !restartPending()) {
        // Until paused has no length of its own: the file carries the steps actually trained.
        config["training"]["steps"] = s->step;
        config["training"]["epochs"] = 0;
    }
    return config;
}

QString MainWindow::commandLine() const {
    // The preset the experiment started from (else the defaults), then one --set per key that
    // differs from it: the schedule of live edits and the steps trained included.
    const QString preset = m_panel->presetName();
    const nlohmann::json base = preset.isEmpty()
                                    ? nlohmann::json::object()
                                    : nlohmann::json::parse(presetText(preset.toStdString()));
    const nlohmann::json config = experimentToSave();
    // Single quotes keep JSON as it is; a single quote inside becomes '\''.
    auto quoted = [](const std::string& text) {
        std::string out = "'";
        for (char c : text) {
            out += c == '\'' ? std::string("'\\''") : std::string(1, c);
        }
        return QString::fromStdString(out + "'");
    };
    QStringList parts{QStringLiteral("ensemble-cli train")};
    if (!preset.isEmpty()) {
        parts << QStringLiteral("--config %1").arg(preset);
    }
    for (const std::string& key : changedKeys(base, config)) {
        const KeySpec& spec = keySpec(key);
        if (!config[spec.section()].contains(spec.name())) {
            continue;  // a key that does not apply here: nothing to set
        }
        parts << QStringLiteral("--set %1")
                     .arg(quoted(key + "=" + config[spec.section()][spec.name()].dump()));
    }
    return parts.join(QLatin1Char(' '));
}

bool MainWindow::saveExperiment(const QString& path, QString* error) {
    try {
        writeFileAtomic(QFile::encodeName(path).toStdString(), experimentToSave().dump(2) + "\n");
        setWindowFilePath(path);
        addRecent(path);
        return true;
    } catch (const std::exception& e) {
        if (error != nullptr) {
            *error = str(e.what());
        }
        return false;
    }
}

void MainWindow::chooseOpen() {
    QSettings settings;
    const QString dir = settings.value(QStringLiteral("files/experiments")).toString();
    const QString path = QFileDialog::getOpenFileName(
        this, tr("Open experiment or trained ensemble"), dir,
        tr("Experiments and ensembles (*.json *.safetensors);;Experiments (*.json);;"
           "Trained ensembles: exports and checkpoints (*.safetensors);;All files (*)"));
    if (path.isEmpty()) {
        return;
    }
    settings.setValue(QStringLiteral("files/experiments"), QFileInfo(path).path());
    QString error;
    if (!openFile(path, &error)) {
        showError(tr("Could not open the file"), error,
                  tr("Choose a JSON experiment file such as the ones Save writes, or a "
                     ".safetensors file that Export or ensemble-cli train --export / "
                     "--checkpoint wrote."));
    }
}

void MainWindow::chooseSave() {
    QSettings settings;
    const QString dir =
        settings.value(QStringLiteral("files/experiments"), QDir::homePath()).toString();
    const QString name =
        m_panel->presetName().isEmpty() ? QStringLiteral("experiment") : m_panel->presetName();
    QString path = QFileDialog::getSaveFileName(this, tr("Save experiment"),
                                                QDir(dir).filePath(name + QStringLiteral(".json")),
                                                tr("Experiments (*.json)"));
    if (path.isEmpty()) {
        return;
    }
    if (!path.endsWith(QStringLiteral(".json"))) {
        path += QStringLiteral(".json");
    }
    settings.setValue(QStringLiteral("files/experiments"), QFileInfo(path).path());
    QString error;
    if (!saveExperiment(path, &error)) {
        showError(tr("Could not save the experiment"), error,
                  tr("Choose a folder you can write to."));
    }
}

bool MainWindow::exportJob(const QString& configPath, int ensemble, int data, QString* error) {
    QString base = configPath;
    if (base.endsWith(QStringLiteral(".json"))) {
        base.chop(5);
    }
    const QString name = QFileInfo(base).fileName();
    try {
        const JobFiles files = makeJobFiles(experimentToSave(), ensemble, data, name.toStdString());
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

void MainWindow::chooseExportJob() {
    // The mesh first: ranks on the ensemble axis (members split) by the data axis (batches
    // split), as backend.mesh says it.
    QDialog dialog(this);
    dialog.setWindowTitle(tr("Export job"));
    auto* form = new QFormLayout(&dialog);
    auto* ensemble = new QSpinBox;
    ensemble->setRange(1, 100000);
    ensemble->setValue(2);
    ensemble->setToolTip(tr("Ranks that hold different members (members split between them)"));
    auto* data = new QSpinBox;
    data->setRange(1, 4096);
    data->setValue(1);
    data->setToolTip(
        tr("Ranks that hold the same members and split every batch (gradients "
           "averaged); the batch size must be divisible by it"));
    auto* ranks = new QLabel;
    const auto showRanks = [&] {
        ranks->setText(tr("%1 MPI ranks").arg(ensemble->value() * data->value()));
    };
    connect(ensemble, &QSpinBox::valueChanged, &dialog, showRanks);
    connect(data, &QSpinBox::valueChanged, &dialog, showRanks);
    showRanks();
    form->addRow(tr("Ensemble axis"), ensemble);
    form->addRow(tr("Data axis"), data);
    form->addRow(QString(), ranks);
    auto* buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel);
    connect(buttons, &QDialogButtonBox::accepted, &dialog, &QDialog::accept);
    connect(buttons, &QDialogButtonBox::rejected, &dialog, &QDialog::reject);
    form->addRow(buttons);
    if (dialog.exec() != QDialog::Accepted) {
        return;
    }
    QSettings settings;
    const QString dir =
        settings.value(QStringLiteral("files/experiments"), QDir::homePath()).toString();
    const QString name =
        m_panel->presetName().isEmpty() ? QStringLiteral("job") : m_panel->presetName();
    const QString path = QFileDialog::getSaveFileName(
        this, tr("Export job: the experiment file (scripts are written next to it)"),
        QDir(dir).filePath(name + QStringLiteral(".json")), tr("Experiments (*.json)"));
    if (path.isEmpty()) {
        return;
    }
    QString error;
    if (!exportJob(path, ensemble->value(), data->value(), &error)) {
        showError(tr("Could not export the job"), error,
                  tr("Choose a mesh that fits the experiment (no more ensemble-axis ranks than "
                     "members, a batch size divisible by the data axis) and a folder you can "
                     "write to."));
        return;
    }
    QString base = path;
    if (base.endsWith(QStringLiteral(".json"))) {
        base.chop(5);
    }
    statusBar()->showMessage(tr("Wrote %1.json, %1-mpirun.sh and %1.sbatch").arg(base), 8000);
}

void MainWindow::chooseExport() {
    const SnapshotPtr s = m_controller->snapshot();
    if (!s) {
        return;
    }
    QSettings settings;
    const QString dir =
        settings.value(QStringLiteral("files/exports"), QDir::homePath()).toString();
    const QString suggestion = QStringLiteral("%1-k%2-step%3")
                                   .arg(str(s->run->datasetName))
                                   .arg(s->run->members)
                                   .arg(s->step);
    // The three formats of `ensemble-cli export`; the filter chosen (or the name's extension)
    // picks one. Metrics and the view's picture are written next to the weights either way.
    const QString safetensors = tr("Weights, safetensors (*.safetensors)");
    const QString onnx = tr("Whole ensemble as one ONNX model (*.onnx)");
    const QString npz = tr("NumPy arrays (*.npz)");
    QString filter = safetensors;
    QString path = QFileDialog::getSaveFileName(
        this, tr("Export ensemble (weights, metrics, view)"), QDir(dir).filePath(suggestion),
        QStringList{safetensors, onnx, npz}.join(QStringLiteral(";;")), &filter);
    if (path.isEmpty()) {
        return;
    }
    ExportFormat format = filter == onnx  ? ExportFormat::Onnx
                          : filter == npz ? ExportFormat::Npz
                                          : ExportFormat::Safetensors;
    for (ExportFormat f : {ExportFormat::Safetensors, ExportFormat::Onnx, ExportFormat::Npz}) {
        const QString suffix = QStringLiteral(".") + QLatin1String(exportFormatName(f));
        if (path.endsWith(suffix, Qt::CaseInsensitive)) {
            path.chop(suffix.size());
            format = f;
        }
    }
    settings.setValue(QStringLiteral("files/exports"), QFileInfo(path).path());
    exportTo(path, format);
}

void MainWindow::exportTo(const QString& basePath, ExportFormat format) {
    m_exportBase = basePath;
    showStatus(tr("Exporting…"));
    m_controller->exportTo(basePath, format);
}

void MainWindow::onExportFinished(bool ok, const QString& message, const QStringList& files) {
    QStringList written = files;
    QString error = message;
    if (ok) {
        // The picture of the current view, written atomically next to the weights.
        const QString png = m_exportBase + QStringLiteral(".png");
        QSaveFile out(png);
        const QImage image = currentView()->grab().toImage();
        if (out.open(QIODevice::WriteOnly) && image.save(&out, "PNG") && out.commit()) {
            written << png;
        } else {
            ok = false;
            error = tr("%1: %2").arg(png, out.errorString());
            for (const QString& f : files) {
                QFile::remove(f);
            }
            written.clear();
        }
    }
    if (ok) {
        showStatus(
            tr("Exported %1 files to %2").arg(written.size()).arg(QFileInfo(m_exportBase).path()),
            8000);
    } else {
        showStatus(QString());
        showError(tr("Export failed"), error,
                  tr("Nothing was written. Choose a folder that exists and that you can write "
                     "to, with free space, and export again."));
    }
    Q_EMIT exportFinished(ok, error, written);
}

void MainWindow::showError(const QString& title, const QString& message, const QString& advice) {
    m_lastError = message;
    auto* box = new QMessageBox(QMessageBox::Warning, title, message, QMessageBox::Ok, this);
    box->setInformativeText(advice);
    box->setAttribute(Qt::WA_DeleteOnClose);
    box->setObjectName(QStringLiteral("ErrorBox"));
    box->open();  // not modal to the event loop: training and tests go on
}

void MainWindow::onConfigureFailed(quint64 runId, const QString& message, int errorKind) {
    if (runId != m_controller->currentRunId()) {
        return;
    }
    m_configuring = false;
    if (m_opening && runId == m_openingRun) {
        m_opening.reset();
        showError(tr("Could not open the ensemble"), message,
                  adviceFor(static_cast<ErrorKind>(errorKind)));
        updateActions();
        Q_EMIT openFailed(message);
        return;
    }
    showError(tr("Could not start the experiment"), message,
              adviceFor(static_cast<ErrorKind>(errorKind)));
    updateActions();
}

bool MainWindow::restartPending() const {
    for (const std::string& key : changedKeys(m_activeConfig, m_panel->config())) {
        if (!keySpec(key).live) {
            return true;
        }
    }
    return false;
}

void MainWindow::applyLiveEdits() {
    const SnapshotPtr s = m_controller->snapshot();
    if (!s || !m_panel->isValid() || restartPending()) {
        return;
    }
    const nlohmann::json edited = m_panel->config();
    // Live optimizer keys change the run at the next step; the run records them in its
    // training.schedule, so Save, the export and the CLI replay carry them.
    nlohmann::json set = nlohmann::json::object();
    for (const std::string& key : changedKeys(m_activeConfig, edited)) {
        if (schedulable(keySpec(key))) {
            const KeySpec& spec = keySpec(key);
            set[key] = edited[spec.section()][spec.name()];
        }
    }
    if (!set.empty()) {
        m_controller->changeHyperparameters(set);
    }
    m_activeConfig = edited;
    if (m_panel->untilPaused()) {
        m_controller->setUntilPaused(true);
        return;
    }
    m_controller->setUntilPaused(false);
    m_controller->setStopAfter(parseConfig(m_activeConfig).totalSteps(s->run->trainRows));
}

void MainWindow::showPendingRestart(bool show) {
    QStringList keys;
    QStringList sections;
    if (show) {
        for (const std::string& key : changedKeys(m_activeConfig, m_panel->config())) {
            const KeySpec& spec = keySpec(key);
            if (spec.live) {
                continue;
            }
            keys << str(key);
            const QString section = str(spec.section());
            if (!sections.contains(section)) {
                sections << section;
            }
        }
    }
    m_panel->setPendingKeys(keys);
    m_banner->setVisible(!keys.isEmpty());
    if (sections.isEmpty()) {
        return;
    }
    // "Dataset changed", "Dataset and model changed", "Dataset, model and backend changed".
    QString what = sections.first();
    what[0] = what[0].toUpper();
    for (int i = 1; i < sections.size(); ++i) {
        what += (i + 1 == sections.size() ? tr(" and ") : QStringLiteral(", ")) + sections[i];
    }
    m_bannerText->setText(
        tr("%1 changed — Reset (R) to apply; the run goes on as it was").arg(what));
}

void MainWindow::onPanelEdited() {
    const SnapshotPtr s = m_controller->snapshot();
    const bool untouched = !s || (s->step == 0 && !m_controller->isRunning());
    const bool restart = restartPending();
    if (m_panel->isValid() && restart && untouched) {
        m_applyTimer.start();  // nothing trained yet: show the edited experiment right away
        showPendingRestart(false);
    } else {
        // Keys the schema marks live (Stop after) apply to the run as it is.
        applyLiveEdits();
        showPendingRestart(restart && !untouched);
    }
    updateActions();
}

void MainWindow::onRunningChanged(bool /*running*/) {
    updateActions();
}

void MainWindow::selectMember(int member) {
    m_selectedMember = member;
    m_boundary->setSelectedMember(member);
    m_members->setSelectedMember(member);
    m_regression->setSelectedMember(member);
}

void MainWindow::updateTabs() {
    const SnapshotPtr s = m_controller->snapshot();
    if (!s || s->run->runId == m_tabsFor) {
        return;
    }
    m_tabsFor = s->run->runId;
    const bool grid = s->run->hasGrid;
    // Opened without its data: no test images to show.
    const bool images = s->run->isImage && s->run->missingData.empty();
    const bool curve = s->run->hasCurve;
    const QString current = currentViewName();
    m_tabs->setTabVisible(0, grid);
    m_tabs->setTabVisible(5, images);
    // Filters: CNN members (a first conv layer to show).
    const bool filters = s->firstConv != nullptr;
    m_tabs->setTabVisible(6, filters);
    m_tabs->setTabVisible(7, curve);
    // Choosing a 1-D regression dataset brings its picture forward, as 2-D data brings the
    // boundary; leaving regression leaves its tab.
    const bool enteredRegression = curve && !m_tabsRegression;
    m_tabsRegression = s->run->regression;
    if (enteredRegression || (current == QStringLiteral("regression") && !curve)) {
        setView(curve ? QStringLiteral("regression")
                      : (grid ? QStringLiteral("boundary") : QStringLiteral("members")));
    } else if ((current == QStringLiteral("boundary") && !grid) ||
               (current == QStringLiteral("images") && !images) ||
               (current == QStringLiteral("filters") && !filters)) {
        setView(images ? QStringLiteral("images")
                       : (curve ? QStringLiteral("regression") : QStringLiteral("members")));
    }
    if (m_selectedMember >= s->run->members) {
        selectMember(-1);
    }
}

QString MainWindow::missingDataMessage() const {
    return m_dataBanner->isHidden() ? QString() : m_dataBannerText->text();
}

void MainWindow::onSnapshot() {
    const SnapshotPtr s = m_controller->snapshot();
    if (s) {
        updateTabs();
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
    m_boundary->setSnapshot(s);
    m_members->setSnapshot(s);
    m_curves->setSnapshot(s);
    m_calibration->setSnapshot(s);
    m_sweep->setSnapshot(s);
    m_images->setSnapshot(s);
    m_filters->setSnapshot(s);
    m_regression->setSnapshot(s);
    updateStatus();
    updateActions();
    Q_EMIT snapshotShown();
}

void MainWindow::updateActions() {
    const SnapshotPtr s = m_controller->snapshot();
    const bool running = m_controller->isRunning();
    const bool valid = m_panel->isValid();
    const bool finished = s && s->finished;
    // The first reason that applies is the one shown.
    const QString fixFields = tr("fix the marked fields in the Experiment panel");
    const QString settingUp = tr("the experiment is still being set up");
    const QString noRun = m_configuring ? settingUp : tr("no run: fix the experiment and Reset");
    const QString atLimit = tr("the run reached Stop after: Continue (Space) or raise it");
    // A run that reached its limit continues (same shortcut) with another block of its length.
    const bool continues = !running && finished && !restartPending();
    m_train->setText(running ? tr("Pause") : (continues ? tr("Continue") : tr("Train")));
    m_train->setIcon(style()->standardIcon(running ? QStyle::SP_MediaPause : QStyle::SP_MediaPlay));
    setActionToolTip(m_train, continues ? tr("Train another block of the same length (Space)")
                                        : tr("Train / Pause (Space)"));
    // An ensemble opened without its data has no trainer: it is shown, not trained.
    const bool noData = s && !s->run->missingData.empty() && !restartPending();
    const QString missing = tr("its dataset is missing on this machine (see the banner)");
    setActionEnabled(
        m_train,
        !noData && (running || (valid && (!finished || continues) && (s || !m_configuring))),
        noData ? missing
               : (!valid ? fixFields : (finished ? tr("Reset to apply the edits") : settingUp)));
    setActionEnabled(m_step, !noData && !running && valid && s && !finished,
                     noData ? missing
                            : (running ? tr("pause first (Space)")
                                       : (!valid ? fixFields : (!s ? noRun : atLimit))));
    setActionEnabled(m_reset, valid, fixFields);
    // An untrained ensemble is its seed's initial weights: nothing to export yet.
    setActionEnabled(m_export, !noData && s != nullptr && s->step > 0,
                     noData ? missing : (!s ? noRun : tr("train at least one step first")));
    setActionEnabled(m_saveCheckpoint, !noData && s != nullptr, noData ? missing : noRun);
}

void MainWindow::updateStatus() {
    const SnapshotPtr s = m_controller->snapshot();
    if (!s) {
        m_stepLabel->setText(tr("no run"));
        for (QLabel* l :
             {m_figuresLabel, m_epochLabel, m_rateLabel, m_memberRateLabel, m_backendLabel}) {
            l->clear();
        }
        m_progress->setValue(0);
        m_progress->setFormat(QString());
        return;
    }
    const RunInfo& run = *s->run;
    const QString limit = s->untilPaused ? tr("until paused") : formatCount(s->totalSteps);
    m_stepLabel->setText(tr("step %1 / %2").arg(formatCount(s->step), limit));
    m_epochLabel->setText(tr("epoch %1").arg(s->epoch, 0, 'f', 2));
    // The last measured rate stays shown while paused (greyed).
    m_rateLabel->setText(tr("%1 steps/s").arg(formatRate(s->stepsPerSecond)));
    m_memberRateLabel->setText(tr("%1 member-steps/s").arg(formatRate(s->memberStepsPerSecond)));
    for (QLabel* l : {m_rateLabel, m_memberRateLabel}) {
        l->setEnabled(s->running);
    }
    m_backendLabel->setText(str(run.backendName));
    m_backendLabel->setToolTip(str(run.notice));
    // The ensemble's test figure: on the live subset while training (said so), on the whole
    // test split once the run stops (what eval and the export's report give).
    if (run.testRows > 0 && s->hasEnsemble && !run.regression) {
        const QString note = liveSubsetNote(run, s->testRowsMeasured);
        m_figuresLabel->setText(
            tr("test accuracy %1 %%2")
                .arg(100.0 * s->ensembleMetrics.accuracy, 0, 'f', 2)
                .arg(note.isEmpty() ? QString() : QStringLiteral(" (%1)").arg(note)));
        m_figuresLabel->setToolTip(
            note.isEmpty()
                ? tr("The ensemble's accuracy on all %1 test images").arg(formatCount(run.testRows))
                : tr("Measured live on the first %1 of the %2 test images; the whole test split "
                     "is evaluated when the run stops")
                      .arg(formatCount(s->testRowsMeasured), formatCount(run.testRows)));
    } else {
        m_figuresLabel->clear();
        m_figuresLabel->setToolTip(QString());
    }
    m_progress->setMaximum(1000);
    m_progress->setValue(
        s->untilPaused || s->totalSteps <= 0
            ? 0
            : static_cast<int>(1000 * std::min(s->step, s->totalSteps) / s->totalSteps));
    m_progress->setFormat(tr("%1 / %2").arg(formatCount(s->step), limit));
}

void MainWindow::showStatus(const QString& text, int timeoutMs) {
    m_message->setFullText(text);
    if (timeoutMs > 0 && !text.isEmpty()) {
        m_messageTimer.start(timeoutMs);
    } else {
        m_messageTimer.stop();
    }
}

QString MainWindow::statusMessage() const {
    return m_message->fullText();
}

void MainWindow::showHelpBox(const QString& name, const QString& title, const QString& html) {
    auto* box = new QMessageBox(QMessageBox::NoIcon, title, html, QMessageBox::Close, this);
    box->setTextFormat(Qt::RichText);
    box->setTextInteractionFlags(Qt::TextSelectableByMouse);
    box->setAttribute(Qt::WA_DeleteOnClose);
    box->setObjectName(name);
    box->open();
}

void MainWindow::restoreLastExperiment() {
    QSettings settings;
    const QByteArray text = settings.value(QStringLiteral("experiment/last")).toByteArray();
    if (text.isEmpty()) {
        showStatus(tr("No experiment was saved yet."), 5000);
        return;
    }
    const nlohmann::json config = nlohmann::json::parse(text.toStdString(), nullptr, false);
    if (!config.is_discarded()) {
        loadExperiment(config);
    }
}

void MainWindow::closeEvent(QCloseEvent* event) {
    if (m_closeAfterCheckpoint) {
        event->ignore();  // the checkpoint is being written; the window closes after it
        return;
    }
    if (m_options.askToSaveCheckpoint && !m_closing && hasUnsavedTraining()) {
        m_controller->pause();
        const SnapshotPtr s = m_controller->snapshot();
        QMessageBox box(
            QMessageBox::Question, tr("Save a checkpoint?"),
            tr("The run has trained to step %1 and no checkpoint holds it.").arg(s->step),
            QMessageBox::Save | QMessageBox::Discard | QMessageBox::Cancel, this);
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
            event->ignore();
            return;
        }
        if (answer != QMessageBox::Discard) {
            event->ignore();
            return;
        }
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
