#include "run_session.h"

#include <QAbstractButton>
#include <QAction>
#include <QFileInfo>
#include <QKeySequence>
#include <QMessageBox>
#include <QSettings>
#include <QStringList>
#include <QStyle>
#include <QWidget>

#include "action_reason.h"
#include "config/command_line.h"
#include "config/config.h"
#include "core/errors.h"
#include "data_kinds.h"
#include "panels/experiment_panel.h"
#include "runs/run_store.h"
#include "std_string.h"
#include "sys/script_hints.h"

namespace ensemble::ui {

namespace {

// What a person can do about a failed run, from the kind of error.
QString adviceFor(ErrorKind kind) {
    switch (kind) {
        case ErrorKind::ImageData:
            return QString::fromStdString(scriptHints(
                RunSession::tr("Choose the folder that holds the MNIST IDX files in Dataset > "
                               "Path, or fetch them with scripts/fetch-mnist.sh.")
                    .toStdString()));
        case ErrorKind::BackendMissing:
            return RunSession::tr("Choose Auto or CPU in Backend > Device.");
        case ErrorKind::Memory:
            return RunSession::tr("Reduce the ensemble size K, the hidden layers or the dataset.");
        case ErrorKind::Csv:
            return RunSession::tr(
                "Check the CSV file: a header row, numeric features and an integer "
                "'label' column.");
        case ErrorKind::General:
        case ErrorKind::Config:
        case ErrorKind::Weights:
        case ErrorKind::Json:
        case ErrorKind::Io:
            return RunSession::tr("Fix the experiment settings and press Reset.");
    }
    return RunSession::tr("Fix the experiment settings and press Reset.");
}

// The method row of a config (model/ensemble_methods.h); independent when it names none.
const EnsembleMethodInfo& methodOf(const nlohmann::json& config) {
    EnsembleMethod method = EnsembleMethod::Independent;
    const nlohmann::json* e = config.contains("ensemble") ? &config["ensemble"] : nullptr;
    if (e != nullptr && e->is_object() && e->contains("method") && (*e)["method"].is_string()) {
        enumFromName((*e)["method"].get<std::string>(), method);
    }
    return ensembleMethodInfo(method);
}

// Whether an edit of `spec` needs a new run of `active` (the running experiment). The active.*
// keys configure the Active learning view's next loop (it reads them from the panel), not this
// run's training. A method that owns the learning rate takes optimizer.lr as its plan's peak,
// and a fixed-length one its length as its plan's: editing them means a new plan, a new run.
bool needsNewRun(const KeySpec& spec, const nlohmann::json& active) {
    const EnsembleMethodInfo& method = methodOf(active);
    if ((method.ownsLrSchedule && spec.key == "optimizer.lr") ||
        (method.fixedLength && (spec.key == "training.steps" || spec.key == "training.epochs"))) {
        return true;
    }
    return !spec.live && spec.section() != "active";
}

}  // namespace

RunSession::RunSession(EngineController* controller, ExperimentPanel* panel, QWidget* window)
    : QObject(window), m_window(window), m_controller(controller), m_panel(panel) {
    buildActions(window);
    // Every run is kept in the runs store (engine/runs), unless the setting says not to.
    applyRunRecording();
    connect(m_controller, &EngineController::runStoreWarning, this, [this](const QString& why) {
        Q_EMIT statusRequested(tr("The run is not recorded in the runs store: %1").arg(why), 15000);
    });
    connect(m_controller, &EngineController::configured, this, &RunSession::onConfigured);
    connect(m_controller, &EngineController::configureFailed, this, &RunSession::onConfigureFailed);
    connect(m_controller, &EngineController::openFailed, this, &RunSession::onOpenFailed);
    connect(m_controller, &EngineController::setupCancelled, this, [this](quint64 runId) {
        if (runId != m_controller->currentRunId()) {
            return;
        }
        m_configuring = false;
        m_opening.reset();
        Q_EMIT statusRequested(tr("Setup cancelled: no run now. Train or Reset starts the "
                                  "experiment in the panel."),
                               10000);
        Q_EMIT stateChanged();
    });
    connect(m_controller, &EngineController::liveEditFailed, this, [this](const QString& message) {
        Q_EMIT errorRaised(tr("Could not apply the edit"), message,
                           tr("Fix the value; the run goes on with the previous one."));
    });
    connect(m_panel, &ExperimentPanel::edited, this, &RunSession::onPanelEdited);
    connect(m_panel, &ExperimentPanel::presetChosen, this, [this](const QString& name) {
        const auto load = [this, name] {
            loadExperiment(nlohmann::json::parse(presetText(name.toStdString())), name);
        };
        if (!m_replaceCheck) {
            load();
        } else if (!m_replaceCheck(tr("the preset %1").arg(name), load)) {
            m_panel->keepShownPreset();  // the trained run stays, and the box names it
        }
    });
    connect(m_panel, &ExperimentPanel::regenerateRequested, this, [this] {
        if (!m_panel->isValid()) {
            return;
        }
        // New data starts over, as a preset does.
        if (!m_replaceCheck) {
            startRun();
        } else if (!m_replaceCheck(tr("new data"), [this] { startRun(); })) {
            onPanelEdited();  // kept: the new seed waits in the panel as any edit (Reset applies)
        }
    });

    m_applyTimer.setSingleShot(true);
    m_applyTimer.setInterval(350);
    connect(&m_applyTimer, &QTimer::timeout, this, [this] {
        if (m_panel->isValid() && m_panel->config() != m_activeConfig) {
            startRun();
        }
    });
}

void RunSession::buildActions(QWidget* window) {
    QStyle* st = window->style();
    m_train = new QAction(st->standardIcon(QStyle::SP_MediaPlay), tr("Train"), window);
    m_train->setShortcut(QKeySequence(Qt::Key_Space));
    m_train->setToolTip(tr("Train / Pause (Space)"));
    m_step = new QAction(st->standardIcon(QStyle::SP_MediaSeekForward), tr("Step"), window);
    m_step->setShortcut(QKeySequence(Qt::Key_S));
    m_step->setToolTip(tr("Train exactly one step (S)"));
    m_reset = new QAction(st->standardIcon(QStyle::SP_BrowserReload), tr("Reset"), window);
    m_reset->setShortcut(QKeySequence(Qt::Key_R));
    m_reset->setToolTip(
        tr("Back to step 0 with the experiment as edited (R); the initial "
           "weights change only with the ensemble seed"));
    connect(m_train, &QAction::triggered, this, &RunSession::train);
    connect(m_step, &QAction::triggered, this, [this] {
        if (!m_controller->isRunning()) {
            m_controller->step();
        }
    });
    connect(m_reset, &QAction::triggered, this, &RunSession::reset);
}

void RunSession::reset() {
    if (!m_panel->isValid()) {
        return;
    }
    // Reset restarts the experiment as the person sees it: a member switched off in the Members
    // view stays off (the ensemble keeping its size), and the status bar says which.
    const SnapshotPtr s = m_controller->snapshot();
    const std::vector<uint8_t> switches = s ? s->switchedOn : std::vector<uint8_t>{};
    if (!startRun(true)) {  // the run Reset replaces stays recoverable
        return;
    }
    const nlohmann::json& members = m_activeConfig["ensemble"]["members"];
    QStringList off;
    for (std::size_t k = 0; k < switches.size(); ++k) {
        if (switches[k] == 0) {
            off << QString::number(k);
        }
    }
    if (off.isEmpty() || !members.is_number_integer() ||
        members.get<std::size_t>() != switches.size()) {
        return;
    }
    m_controller->setSwitchedOnMembers(switches);
    Q_EMIT statusRequested(
        off.size() == 1
            ? tr("Reset kept member %1 switched off (tick it in Members to bring it back)")
                  .arg(off.first())
            : tr("Reset kept members %1 switched off (tick them in Members to bring them back)")
                  .arg(off.join(QStringLiteral(", "))),
        8000);
}

void RunSession::train() {
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
        if (!startRun()) {  // queued before start(), so it trains the edited experiment
            return;
        }
    } else if (s->finished && !restartPending()) {
        // Continue: another block of the same length, from where the run stopped.
        m_panel->extendStopAfter(s->step, s->epoch);
        applyLiveEdits();
    }
    m_controller->start();
}

void RunSession::loadExperiment(const nlohmann::json& config, const QString& preset) {
    m_applyTimer.stop();
    m_panel->setConfig(config, preset);
    // A 2-D preset loaded unchanged plays until paused, as TensorFlow Playground does; an
    // experiment file (or an edited preset) keeps its explicit step count.
    const nlohmann::json loaded = m_panel->config();
    const nlohmann::json& kind = loaded["dataset"]["kind"];
    m_panel->setUntilPaused(
        !preset.isEmpty() && kind.is_string() &&
        datasetKindNamed(QString::fromStdString(kind.get<std::string>())).planar);
    if (m_panel->isValid()) {
        startRun();
    } else {
        Q_EMIT statusRequested(tr("The experiment has invalid values: fix the marked fields."),
                               8000);
    }
    Q_EMIT stateChanged();
}

void RunSession::setLargeRunCheck(LargeRunCheck check, WorkerTuning tuning,
                                  std::optional<std::size_t> available) {
    m_largeRunCheck = std::move(check);
    m_tuning = tuning;
    m_availableMemory = available;
}

RunSession::LargeRunCheck RunSession::largeRunDialog(QWidget* parent) {
    return [parent](const RunPrice& price) {
        QMessageBox box(QMessageBox::Question, tr("Start a large run?"),
                        tr("This run needs %1 of memory.").arg(price.describe()),
                        QMessageBox::Yes | QMessageBox::Cancel, parent);
        box.setObjectName(QStringLiteral("LargeRunQuestion"));
        box.button(QMessageBox::Yes)->setText(tr("Start"));
        box.setInformativeText(
            tr("That is more than half of what this machine has free; setting it up can take "
               "a while (Esc or Cancel on the sheet stops it). Cancel keeps the edit in the "
               "panel without starting it."));
        box.setDefaultButton(QMessageBox::Cancel);
        return box.exec() == QMessageBox::Yes;
    };
}

bool RunSession::priceAccepted(const nlohmann::json& config) {
    if (!m_largeRunCheck || config == m_acceptedLargeRun) {
        return true;
    }
    std::optional<DataShape> shape;
    ExperimentConfig parsed;
    try {
        parsed = parseConfig(config);
        shape = expectedDataShape(parsed);
    } catch (const std::exception&) {
        return true;  // the engine thread reports it, as for any run
    }
    if (!shape) {
        return true;  // a CSV: priced once it is read, on the engine thread (refused if too big)
    }
    const RunPrice price = priceRun(parsed, *shape, m_tuning, m_availableMemory);
    if (!price.large() || !price.fits()) {
        return true;  // small, or too big for the machine: the engine thread refuses it
    }
    if (!m_largeRunCheck(price)) {
        Q_EMIT statusRequested(tr("Not started: K = %1 needs %2. Fewer members or a smaller "
                                  "model need less.")
                                   .arg(parsed.ensemble.members)
                                   .arg(price.describe()),
                               10000);
        return false;
    }
    m_acceptedLargeRun = config;
    return true;
}

bool RunSession::startRun(bool keepReplaced) {
    m_applyTimer.stop();
    if (!priceAccepted(m_panel->config())) {
        showPendingRestart(!m_activeConfig.is_null() && restartPending());
        Q_EMIT stateChanged();
        return false;
    }
    m_activeConfig = m_panel->config();
    m_configuring = true;
    m_controller->setUntilPaused(m_panel->untilPaused());
    m_controller->setRunPreset(m_panel->presetName());
    m_controller->configure(m_activeConfig, {}, keepReplaced);
    showPendingRestart(false);
    Q_EMIT stateChanged();
    return true;
}

void RunSession::open(std::shared_ptr<const OpenedEnsemble> opened) {
    m_applyTimer.stop();
    m_opening = opened;
    m_configuring = true;
    m_openingRun = m_controller->open(std::move(opened));
    Q_EMIT stateChanged();
}

void RunSession::onConfigured(quint64 runId, const QString& notice) {
    if (runId == m_controller->currentRunId()) {
        m_configuring = false;
        // The backend's fallback notice (CUDA driver too old …) once per session, not on
        // every Reset; About and the backend label keep it.
        if (!notice.isEmpty() && !m_noticesShown.contains(notice)) {
            m_noticesShown.insert(notice);
            Q_EMIT statusRequested(notice, 15000);
        }
        Q_EMIT stateChanged();
    }
    if (m_opening && runId == m_openingRun) {
        onOpened(notice);
    }
}

void RunSession::onOpened(const QString& notice) {
    const std::shared_ptr<const OpenedEnsemble> opened = std::move(m_opening);
    m_opening.reset();
    // The panel shows the file's experiment; it is the running one, so nothing is pending.
    m_activeConfig = opened->config.json;
    m_panel->setConfig(opened->config.json, QString());
    // A checkpoint of a run until paused plays on as it did (EngineWorker::open).
    m_panel->setUntilPaused(opened->isCheckpoint && opened->checkpoint.untilPaused);
    m_activeConfig = m_panel->config();
    m_applyTimer.stop();
    showPendingRestart(false);
    Q_EMIT ensembleOpened(opened, notice);
}

void RunSession::onOpenFailed(quint64 runId, const QString& message) {
    if (!m_opening || runId != m_openingRun) {
        return;
    }
    m_opening.reset();
    m_configuring = false;
    Q_EMIT errorRaised(
        tr("Could not open the ensemble"), message,
        QString::fromStdString(scriptHints(
            tr("The current experiment is kept. Make the dataset the file names available on "
               "this machine (Dataset > Path for files; scripts/fetch-mnist.sh for MNIST) and "
               "open it again.")
                .toStdString())));
    Q_EMIT stateChanged();
    Q_EMIT openFailed(message);
}

void RunSession::onConfigureFailed(quint64 runId, const QString& message, int errorKind) {
    if (runId != m_controller->currentRunId()) {
        return;
    }
    m_configuring = false;
    if (m_opening && runId == m_openingRun) {
        m_opening.reset();
        Q_EMIT errorRaised(tr("Could not open the ensemble"), message,
                           adviceFor(static_cast<ErrorKind>(errorKind)));
        Q_EMIT stateChanged();
        Q_EMIT openFailed(message);
        return;
    }
    Q_EMIT errorRaised(tr("Could not start the experiment"), message,
                       adviceFor(static_cast<ErrorKind>(errorKind)));
    Q_EMIT stateChanged();
}

bool RunSession::restartPending() const {
    for (const std::string& key : changedKeys(m_activeConfig, m_panel->config())) {
        if (needsNewRun(keySpec(key), m_activeConfig)) {
            return true;
        }
    }
    return false;
}

bool RunSession::dataMissing() const {
    const SnapshotPtr s = m_controller->snapshot();
    return s && !s->run->missingData.empty() && !restartPending();
}

void RunSession::applyLiveEdits() {
    const SnapshotPtr s = m_controller->snapshot();
    if (!s || !m_panel->isValid() || restartPending()) {
        return;
    }
    const nlohmann::json edited = m_panel->config();
    // Live optimizer keys change the run at the next step; the run records them in its
    // training.schedule, so Save, the export and the CLI replay carry them.
    nlohmann::json set = nlohmann::json::object();
    for (const std::string& key : changedKeys(m_activeConfig, edited)) {
        if (schedulable(keySpec(key)) && !needsNewRun(keySpec(key), m_activeConfig)) {
            const KeySpec& spec = keySpec(key);
            set[key] = edited[spec.section()][spec.name()];
        }
    }
    if (!set.empty()) {
        m_controller->changeHyperparameters(set);
    }
    const bool fixedLength = methodOf(m_activeConfig).fixedLength;
    m_activeConfig = edited;
    if (fixedLength) {
        return;  // the run's length is its plan's (the length fields ask for a Reset instead)
    }
    if (m_panel->untilPaused()) {
        m_controller->setUntilPaused(true);
        return;
    }
    m_controller->setUntilPaused(false);
    m_controller->setStopAfter(parseConfig(m_activeConfig).totalSteps(s->run->trainRows));
}

void RunSession::showPendingRestart(bool show) {
    QStringList keys;
    QStringList sections;
    if (show) {
        for (const std::string& key : changedKeys(m_activeConfig, m_panel->config())) {
            const KeySpec& spec = keySpec(key);
            if (!needsNewRun(spec, m_activeConfig)) {
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
    if (sections.isEmpty()) {
        Q_EMIT pendingRestartChanged(QString());
        return;
    }
    // "Dataset changed", "Dataset and model changed", "Dataset, model and backend changed".
    QString what = sections.first();
    what[0] = what[0].toUpper();
    for (int i = 1; i < sections.size(); ++i) {
        what += (i + 1 == sections.size() ? tr(" and ") : QStringLiteral(", ")) + sections[i];
    }
    Q_EMIT pendingRestartChanged(
        tr("%1 changed — Reset (R) to apply; the run goes on as it was").arg(what));
}

void RunSession::onPanelEdited() {
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
    Q_EMIT stateChanged();
}

nlohmann::json RunSession::experimentToSave() const {
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

QString RunSession::commandLine() const {
    // The preset the experiment started from (else the defaults), then one --set per key that
    // differs from it: the schedule of live edits and the steps trained included.
    return QString::fromStdString(
        trainCommandLine(m_panel->presetName().toStdString(), experimentToSave()));
}

namespace {
// QSettings: whether the app records its runs in the runs store.
const QString kRecordRunsKey = QStringLiteral("runs/record");
}  // namespace

void RunSession::loadExperimentAsking(const nlohmann::json& config, const QString& what) {
    const auto load = [this, config] { loadExperiment(config); };
    if (!m_replaceCheck) {
        load();
    } else {
        m_replaceCheck(what, load);
    }
}

bool RunSession::recordsRuns() {
    return QSettings().value(kRecordRunsKey, true).toBool();
}

void RunSession::setRecordsRuns(bool on) {
    QSettings().setValue(kRecordRunsKey, on);
}

void RunSession::applyRunRecording() {
    const bool on = recordsRuns() && !runs::recordingDisabledByEnvironment();
    m_controller->setRunStore(on ? QString::fromStdString(runs::defaultRunStorePath().string())
                                 : QString());
}

void RunSession::updateActions() {
    const SnapshotPtr s = m_controller->snapshot();
    const bool running = m_controller->isRunning();
    const bool valid = m_panel->isValid();
    const bool finished = s && s->finished;
    // The first reason that applies is the one shown.
    const QString fixFields = tr("fix the marked fields in the Experiment panel");
    const QString settingUp = tr("the experiment is still being set up");
    const QString noRun = m_configuring ? settingUp : tr("no run: fix the experiment and Reset");
    const QString atLimit = tr("the run reached Stop after: Continue (Space) or raise it");
    // A run that reached its limit continues (same shortcut) with another block of its length,
    // but for a method whose plan fixes the length (snapshot's cycles).
    const EnsembleMethodInfo& method = methodOf(m_activeConfig);
    const bool continues = !running && finished && !restartPending();
    const QString fixedLength =
        tr("%1 planned its cycles over this run's length: it cannot continue (Reset trains "
           "it again; change Stop after first for a longer run)")
            .arg(QString::fromUtf8(method.name));
    m_train->setText(running ? tr("Pause") : (continues ? tr("Continue") : tr("Train")));
    m_train->setIcon(
        m_window->style()->standardIcon(running ? QStyle::SP_MediaPause : QStyle::SP_MediaPlay));
    setActionToolTip(m_train, continues ? tr("Train another block of the same length (Space)")
                                        : tr("Train / Pause (Space)"));
    // An ensemble opened without its data has no trainer: it is shown, not trained.
    const bool noData = dataMissing();
    const QString missing = tr("its dataset is missing on this machine (see the banner)");
    setActionEnabled(
        m_train,
        !noData && (running || (valid && (!finished || (continues && !method.fixedLength)) &&
                                (s || !m_configuring))),
        noData ? missing
               : (!valid ? fixFields
                         : (continues ? fixedLength
                                      : (finished ? tr("Reset to apply the edits") : settingUp))));
    setActionEnabled(m_step, !noData && !running && valid && s && !finished,
                     noData ? missing
                            : (running ? tr("pause first (Space)")
                                       : (!valid ? fixFields : (!s ? noRun : atLimit))));
    setActionEnabled(m_reset, valid, fixFields);
}

}  // namespace ensemble::ui
