// EngineWorker's building of a run: from a config (configure), from an opened file with its
// dataset (open) or without it, replacing the run before only once the new one stands.
#include "controller/engine_worker.h"

#include <QFileInfo>
#include <QTimer>

#include <algorithm>
#include <exception>
#include <string>
#include <utility>

#include "controller/run_description.h"
#include "controller/run_price.h"
#include "core/errors.h"
#include "io/checkpoint.h"
#include "metrics/grid.h"
#include "registry/registry.h"
#include "train/memory_estimate.h"

namespace ensemble::ui {

namespace {

// dataset.kind of a config with its defaults filled in ("mnist"), for progress messages.
QString datasetKindOf(const nlohmann::json& config) {
    const nlohmann::json kind =
        config.value("dataset", nlohmann::json::object()).value("kind", nlohmann::json("?"));
    return QString::fromStdString(kind.is_string() ? kind.get<std::string>() : kind.dump());
}

// Unwinds a build whose setup the person cancelled (EngineWorker::cancelSetup).
struct SetupCancelled {};

}  // namespace

void EngineWorker::throwIfSetupCancelled(uint64_t runId) const {
    if (m_cancelledSetup.load(std::memory_order_acquire) == runId) {
        throw SetupCancelled{};
    }
}

void EngineWorker::dropCancelledSetup(uint64_t runId) {
    setRunning(false);
    m_record.end(runs::RunState::Cancelled);
    m_trainer.reset();
    m_run.reset();
    m_measures.reset();
    m_settingUp = 0;
    Q_EMIT setupCancelled(runId);
}

void EngineWorker::open(std::shared_ptr<const OpenedEnsemble> opened, uint64_t runId) {
    if (m_stop.load(std::memory_order_acquire)) {
        return;  // the window is closing: no dataset is loaded for it any more
    }
    pause();  // the current run stays until the new one can be built
    const QString name = QFileInfo(opened->path).fileName();
    Q_EMIT working(runId, tr("Opening %1: loading the %2 data it was trained on…")
                              .arg(name, datasetKindOf(opened->config.json)));
    std::shared_ptr<const DataSplit> data;
    try {
        data = std::make_shared<const DataSplit>(loadDataSplit(opened->config.dataset));
    } catch (const std::exception& e) {
        openWithoutData(*opened, runId, e.what());
        return;
    }
    // The weights work on inputs normalised as when they were trained: the same data.
    const LoadedEnsemble& e = opened->checkpoint.ensemble;
    const bool sameRows = !opened->isCheckpoint || data->train.rows == opened->checkpoint.trainRows;
    if (!sameRows || data->normalization.mean != e.normalization.mean ||
        data->normalization.std != e.normalization.std) {
        Q_EMIT openFailed(
            runId, QStringLiteral("%1: the dataset found here (%2, %3 train rows) is not the one "
                                  "it was trained on (%4, %5 rows): a different file or seed")
                       .arg(name, QString::fromStdString(data->name))
                       .arg(data->train.rows)
                       .arg(QString::fromStdString(e.datasetName))
                       .arg(opened->checkpoint.trainRows));
        return;
    }
    // An opened run stops at its own length (Continue extends it), unless it had none: a
    // checkpoint of a run "until paused" plays on as it did.
    m_untilPaused = opened->isCheckpoint && opened->checkpoint.untilPaused;
    build(opened->config.json, std::move(data), runId, opened.get());
}

void EngineWorker::openWithoutData(const OpenedEnsemble& opened, uint64_t runId,
                                   const std::string& why) {
    setRunning(false);
    m_pauseRequested.store(false);
    retireRecovery(false);  // the run shown has no trainer: no file stands for it
    m_record.end();         // nor an entry: it cannot train
    m_trainer.reset();
    m_measures.reset();
    m_gridPoints.clear();
    m_history.clear();
    m_untilPaused = false;
    m_run = runWithoutData(opened, runId, why);
    auto s = snapshotWithoutData(opened, m_run, m_history);
    thinHistory();
    s->history = m_history;
    resetCurves();
    s->curves = m_publishedCurves = std::make_shared<const LearningCurves>(m_curves);
    s->serial = ++m_serial;
    m_switchedOn = s->switchedOn;
    Q_EMIT configured(runId, QString());
    m_mailbox->put(std::move(s));
    Q_EMIT snapshotReady();
}

void EngineWorker::build(const nlohmann::json& config, std::shared_ptr<const DataSplit> data,
                         uint64_t runId, const OpenedEnsemble* opened, bool keepReplaced) {
    if (m_stop.load(std::memory_order_acquire)) {
        return;  // the window is closing: commands queued before it closed build nothing
    }
    setRunning(false);
    m_pauseRequested.store(false);
    m_settingUp = runId;
    bool recordingBegun = false;
    try {
        throwIfSetupCancelled(runId);
        ExperimentConfig parsed = parseConfig(config);
        if (opened != nullptr && opened->isCheckpoint) {
            keepCheckpointBackend(parsed, opened->checkpoint.ensemble);  // auto keeps it
        }
        std::string notice;
        std::unique_ptr<Trainer> trainer;
        // Free the old run first: two MNIST-sized runs need not fit in memory together. Its
        // recovery checkpoint goes first: it must not stand for the new run.
        retireRecovery(keepReplaced);
        m_trainer.reset();
        m_measures.reset();
        Q_EMIT working(runId, data ? tr("Initialising %1 members…").arg(parsed.ensemble.members)
                                   : tr("Loading the %1 data and initialising %2 members…")
                                         .arg(datasetKindOf(parsed.json))
                                         .arg(parsed.ensemble.members));
        if (!data) {
            data = std::make_shared<const DataSplit>(loadDataSplit(parsed.dataset));
        }
        throwIfSetupCancelled(runId);
        // The trainer's need and the live views' together: the engine checks only its own.
        const RunPrice price =
            priceRun(parsed, dataShapeOf(*data), m_tuning,
                     m_tuning.availableMemoryBytes > 0
                         ? std::optional<std::size_t>(m_tuning.availableMemoryBytes)
                         : std::nullopt);
        if (!price.fits()) {
            throw RuntimeError(
                ErrorKind::Memory,
                memoryRefusal(price.totalBytes(), price.availableBytes, parsed.ensemble.members) +
                    " (the trainer about " + std::to_string(price.trainerBytes >> 20) +
                    " MiB, the live views about " + std::to_string(price.windowBytes >> 20) +
                    " MiB)");
        }
        BackendChoice choice = makeBackend(parsed, *data);
        notice = choice.notice;
        trainer = std::make_unique<Trainer>(parsed, *data, std::move(choice.backend), nullptr,
                                            std::move(choice.memberBackend));
        trainer->setBackendDecision(choice.decision);
        throwIfSetupCancelled(runId);
        if (opened != nullptr && opened->isCheckpoint) {
            resumeTrainer(*trainer, opened->checkpoint);
        } else if (opened != nullptr) {
            // An export: its weights are step 0 of a new run (fresh optimizer state).
            TrainingState state = trainer->trainingState();
            state.params = opened->checkpoint.ensemble.params;
            state.diverged = opened->checkpoint.ensemble.diverged;
            const LoadedEnsemble& stored = opened->checkpoint.ensemble;
            if (!stored.network.empty()) {
                // A file that stores the one network (mc_dropout): it goes on from there.
                state.trained = stored.network;
            } else if (!state.trained.empty()) {
                // A one-network method's network goes on from where the exported run ended:
                // its last member (the members follow it until their cycles end again).
                state.trained = memberParameters(trainer->layout(), state.params.data(),
                                                 trainer->members() - 1);
            }
            trainer->restoreTrainingState(state);
        }
        auto run = describeRun(*trainer, parsed, runId, notice, m_tuning);
        m_gridPoints = run->hasGrid ? gridPoints(run->bounds, run->gridSize) : std::vector<float>{};
        if (m_untilPaused && trainer->lengthChangeable()) {
            trainer->setTotalSteps(kUnboundedSteps);  // a fixed-length method keeps its plan's
        }
        if (opened != nullptr) {
            setMemberOrigins(opened->checkpoint.ensemble, *run);
        }
        m_trainer = std::move(trainer);
        m_run = std::move(run);
        // The run before this one ends its entry here; this one's begins.
        m_record.begin(*m_trainer, opened != nullptr ? opened->path.toStdString() : std::string());
        recordingBegun = true;
        // The switches as the run has them: the config's ensemble.switched_off, and for a
        // checkpoint its schedule's entries up to its step.
        m_trainer->applyDueChanges();
        m_switchedOn = m_trainer->switchedOn();
        m_history.clear();
        if (opened != nullptr && opened->isCheckpoint) {
            appendStoredCurves(opened->checkpoint.curves, m_trainer->step(), m_history);
        }
        thinHistory();
        resetCurves();
        m_historyEvery = std::max<int64_t>(1, historyHorizon() / m_tuning.historyPoints);
        m_nextHistory = 0;
        m_measuredStepsPerSecond = 0.0;
        m_buildSeconds = 0.0;
        if (m_stop.load(std::memory_order_acquire)) {
            // The window closed while the data loaded: the run is never shown, so it is not
            // measured (a CNN on MNIST measured its first curve point for a minute on a busy
            // machine while the closing window waited; the monkey's finding). It is dropped
            // whole, so that the commands still queued behind this one find no run, as after a
            // failed build (a run without its first curve point broke pause(); the monkey's
            // second finding).
            m_record.end(runs::RunState::Cancelled);
            m_trainer.reset();
            m_run.reset();
            m_measures.reset();
            return;
        }
        recordHistory();
        throwIfSetupCancelled(runId);
        // A new run has nothing a recovery write would keep yet (a restored one: its file).
        m_recoveryStep = m_trainer->step();
        m_recoveryDue.reset();
        if (m_recoveryTimer != nullptr) {
            m_recoveryTimer->stop();
        }
        m_dirty = true;
        Q_EMIT configured(runId, QString::fromStdString(notice));
        Q_EMIT working(runId, tr("Measuring the members at step %1 on %2 test rows…")
                                  .arg(m_trainer->step())
                                  .arg(m_run->evalTest.rows));
        publish();
    } catch (const SetupCancelled&) {
        dropCancelledSetup(runId);
    } catch (const std::exception& e) {
        m_settingUp = 0;
        // The run replaced was let go of before the new one failed: it ended as it stood.
        m_record.end(recordingBegun ? runs::RunState::Failed : runs::RunState::Finished);
        m_trainer.reset();
        m_run.reset();
        m_measures.reset();
        const auto* error = dynamic_cast<const Error*>(&e);
        const ErrorKind kind = error != nullptr ? error->kind() : ErrorKind::General;
        Q_EMIT configureFailed(runId, QString::fromStdString(e.what()), static_cast<int>(kind));
    }
}

}  // namespace ensemble::ui
