#pragma once

// The engine thread's side of the GUI: owns the Trainer and drives it synchronously in short
// chunks, so commands queued by the GUI thread (configure, start, pause, step, member
// switches, predictions, export) run between chunks. Lives in its own QThread; see
// EngineController for the GUI thread's side. The class keeps the run's life cycle whole; its
// parts are apart: building a run (engine_worker_build.cpp), its curve points and snapshots
// (engine_worker_snapshots.cpp, through the SnapshotMailbox), its files and the recovery
// writer (engine_worker_files.cpp). What a snapshot measures is RunMeasures', the files it
// writes run_files.h's, what an opened file holds opened_ensemble.h's; the window's side jobs
// run beside it on the same thread (EngineJob).
//
// Threading contract: every method but requestStop(), requestPause(), cancelSetup() and the
// mailbox
// accessors runs on the worker's thread (the controller queues them as functors). Results
// go back as signals (queued across threads) and through the snapshot mailbox.

#include <QList>
#include <QObject>
#include <QString>
#include <QStringList>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include <nlohmann/json.hpp>

#include "controller/app_run_record.h"
#include "controller/learning_curves.h"
#include "controller/opened_ensemble.h"
#include "controller/run_measures.h"
#include "controller/snapshot.h"
#include "controller/snapshot_mailbox.h"
#include "controller/worker_tuning.h"
#include "data/dataset.h"
#include "io/export_formats.h"
#include "train/trainer.h"

class QTimer;

namespace ensemble::ui {

class EngineWorker : public QObject {
    Q_OBJECT

  public:
    explicit EngineWorker(SnapshotMailbox* mailbox, WorkerTuning tuning = {});
    ~EngineWorker() override;

    // Any thread: stop as soon as possible (the current Trainer::runSteps call finishes).
    void requestStop() { m_stop.store(true, std::memory_order_release); }
    // Any thread: interrupt the current chunk; the queued pause() then settles the state.
    void requestPause() { m_pauseRequested.store(true, std::memory_order_release); }
    // Any thread: run `runId`'s setup (the data, the members' initialisation, the first
    // measurement and snapshot) stops at its next stage and the run is dropped
    // (setupCancelled()); once its first snapshot is out, nothing.
    void cancelSetup(uint64_t runId) { m_cancelledSetup.store(runId, std::memory_order_release); }

    // --- worker thread only ---------------------------------------------------------------
    // Builds a new run from `config` at step 0 (with `data` instead of loading the dataset
    // when given) and publishes its first snapshot; emits configured() or configureFailed().
    // `keepReplaced` (a Reset): the run it replaces stays recoverable: its latest step is
    // written to the recovery checkpoint, which then moves to the replaced-run file
    // (setRecovery); otherwise that file is removed. Either way the recovery checkpoint follows
    // the new run from its first write.
    void configure(const nlohmann::json& config, std::shared_ptr<const DataSplit> data,
                   uint64_t runId, bool keepReplaced = false);
    // Builds a new run from an opened ensemble: its config and dataset, its members' weights
    // (a checkpoint: its whole training state and curves) and publishes its first snapshot,
    // without training. The dataset is loaded and checked against the file before the current
    // run is dropped: when it is another one (other rows or normalisation), openFailed() says
    // why and the current run stays; when it cannot be loaded here (a missing MNIST folder or
    // CSV file), the file opens without data (RunInfo::missingData; no trainer).
    void open(std::shared_ptr<const OpenedEnsemble> opened, uint64_t runId);
    // Trains until the run ends (target < 0) or the step `target` is reached.
    void start(int64_t target);
    void pause();
    // Trains exactly one step (when not running and not finished).
    void stepOnce();
    // Moves the end of the current run to `steps` (the app's Stop after, Continue); training
    // goes on from where it is, bit for bit as one longer run.
    void setStopAfter(int64_t steps);
    // Until paused: the run (this one and the next ones configured) has no end.
    void setUntilPaused(bool untilPaused);
    // The pace of a run until paused: at most `stepsPerSecond` steps a second (0: as fast as
    // possible), so a person can watch the boundary form. Waits between steps are timers on
    // this thread, so pause and every other command still run at once.
    void setStepsPerSecond(double stepsPerSecond);
    // A live edit ({"optimizer.lr": value, ...}) at the current step, recorded in the run's
    // training.schedule (Trainer::changeHyperparameters). A rejected value is reported with
    // liveEditFailed().
    void changeHyperparameters(const nlohmann::json& set);
    void setSwitchedOn(std::vector<uint8_t> switchedOn);
    // Coalesced: only the newest request is predicted (see EngineController::predict).
    void predictPending();
    // The weights go to <base>.safetensors, <base>.onnx or <base>.npz (`format`).
    void exportTo(const QString& basePath, ExportFormat format = ExportFormat::Safetensors);
    // Writes a checkpoint of the run after its last finished step (io/checkpoint.h) with the
    // curves the window measured; checkpointSaved() tells the result.
    void saveCheckpoint(const QString& path);
    // The GUI took the last snapshot: publish again if something changed meanwhile.
    void snapshotTaken();
    // Recovery checkpoints (ui/recovery.h): the run's state goes to `path` (the checkpoint
    // Save Checkpoint writes, atomically) `intervalSeconds` after the first step that no write
    // holds yet, and whenever training pauses or ends; never while nothing changed (the step
    // of the last write, of the run's start, or, for a new path, the step now: a restored
    // run's file holds it) nor at step 0. An empty path or an interval <= 0 writes nothing.
    // `replacedPath`: where the file of a run a Reset replaced goes (configure).
    void setRecovery(const QString& path, double intervalSeconds, const QString& replacedPath = {});
    // Writes the recovery checkpoint now if the run changed since the last write, then emits
    // recoveryFlushed() (SIGTERM, SIGHUP).
    void flushRecovery();
    // On this (the engine) thread, before it ends: deletes the recovery timer and writes no
    // more recovery checkpoints. The worker is destroyed from the GUI thread after the engine
    // thread is joined, where an active timer of this thread could not be stopped ("Timers
    // cannot be stopped from another thread"). EngineController's destructor calls it.
    void shutdown();

    // The run's trainer: null before a run and for a file opened without its data.
    const Trainer* trainer() const { return m_trainer.get(); }
    // The runs store's entry of the current run (for the jobs' own entries).
    const AppRunRecord& runRecord() const { return m_record; }
    // The run's description (null before a run).
    std::shared_ptr<const RunInfo> run() const { return m_run; }
    // What a checkpoint of run `runId` stores as its metadata "active" (the Active learning
    // view's loop; null: none). Called on this thread by saveCheckpoint().
    void setActiveMetadata(std::function<nlohmann::json(uint64_t runId)> metadata) {
        m_activeMetadata = std::move(metadata);
    }

    // The runs store (controller/app_run_record.h): where the next runs' entries go (empty:
    // not recorded) and the preset the next run starts from.
    void setRunStore(const QString& path);
    void setRunPreset(const QString& preset);

    // Any thread: queue a prediction of raw rows (replaces an unserved one).
    // Returns true when the caller must queue predictPending().
    bool offerPrediction(uint64_t id, std::vector<float> rawRows);

  Q_SIGNALS:
    void snapshotReady();
    void configured(quint64 runId, QString notice);
    // errorKind: an ensemble::ErrorKind, what the person can do about it.
    void configureFailed(quint64 runId, QString message, int errorKind);
    // cancelSetup() took effect: run `runId` was dropped before its first snapshot.
    void setupCancelled(quint64 runId);
    void liveEditFailed(QString message);
    // open() could not use the file's dataset; the run before it goes on.
    void openFailed(quint64 runId, QString message);
    void runningChanged(bool running);
    // What building run `runId` is doing now ("Loading the data…"), for the window's busy
    // overlay; the run's first snapshot, configured() or a failure ends it.
    void working(quint64 runId, QString what);
    // A stopped run's snapshot at `step` is being measured on `rows` test rows (seconds for a
    // CNN on MNIST): the window says so until the snapshot comes.
    void measuring(quint64 runId, qint64 step, qint64 rows);
    void predictionReady(quint64 id, QList<float> logProbs, int members, int classes);
    // CNN members: the first conv layer's feature maps of the request's first row,
    // [members, filters, height, width] after the activation (sent after predictionReady).
    void featureMapsReady(quint64 id, QList<float> maps, int members, int filters, int height,
                          int width);
    void exportFinished(bool ok, QString message, QStringList files);
    void checkpointSaved(bool ok, QString message, QString path, qint64 step);
    // A recovery checkpoint of `step` was written to `path` in `seconds` (on this thread).
    void recoveryWritten(QString path, qint64 step, double seconds);
    void recoveryFailed(QString message);
    // flushRecovery() done: the run stopped at `step` (-1: no run).
    void recoveryFlushed(qint64 step);
    // The runs store cannot record this run (read-only, corrupt, locked long): once an entry.
    void runStoreWarning(QString message);

  private:
    using Clock = std::chrono::steady_clock;
    // The limit of a run that goes on until paused: far beyond any run a person waits for.
    static constexpr int64_t kUnboundedSteps = std::numeric_limits<int64_t>::max() / 4;
    static double secondsOf(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

    // configure() and open(): `opened` (may be null) sets the new trainer's state and curves.
    void build(const nlohmann::json& config, std::shared_ptr<const DataSplit> data, uint64_t runId,
               const OpenedEnsemble* opened, bool keepReplaced = false);
    // The recovery checkpoint of the run about to be replaced: kept as the replaced-run file
    // (after writing its latest step) or removed, so that it never stands for the new run.
    void retireRecovery(bool keepReplaced);
    // open() without the dataset: publishes the one snapshot the file gives by itself (its
    // members, stored curves, first conv layer) and holds no trainer.
    void openWithoutData(const OpenedEnsemble& opened, uint64_t runId, const std::string& why);
    // Throws SetupCancelled when cancelSetup(runId) came.
    void throwIfSetupCancelled(uint64_t runId) const;
    // Drops the run being set up and says so (a cancelled setup).
    void dropCancelledSetup(uint64_t runId);
    // After the first snapshot of a run was built: true (the run dropped) when its setup was
    // cancelled meanwhile; otherwise the setup is over.
    bool setupCancelledNow();
    void trainChunk();
    void queueChunk();
    // Steps the pace until paused allows now (int64 max when unpaced).
    int64_t pacedSteps(Clock::time_point now) const;
    void setRunning(bool running);
    // The checkpoint of the run after its last finished step, as Save Checkpoint writes it
    // (`withReport`) or as the recovery file holds it (without the metrics report).
    void writeRunState(const QString& path, bool withReport);
    // A step no recovery write holds: the write is due `interval` after the first such step.
    void scheduleRecovery();
    // Writes the recovery checkpoint when the run changed since the last write.
    void writeRecovery();
    // The run length the learning curves' points are spaced for.
    int64_t historyHorizon() const;
    void recordHistory();
    // m_history kept within tuning.maxHistoryPoints; m_curves rebuilt from it (a new run).
    void thinHistory();
    void resetCurves();
    void publish();
    // `quick`: the figures on the live rows only, marked Snapshot::evaluating (the whole test
    // split's follow).
    SnapshotPtr buildSnapshot(bool quick = false);
    std::vector<uint8_t> included() const;

    SnapshotMailbox* m_mailbox;
    WorkerTuning m_tuning;
    std::atomic<bool> m_stop{false};
    std::atomic<bool> m_pauseRequested{false};
    std::atomic<uint64_t> m_cancelledSetup{0};
    uint64_t m_settingUp = 0;  // the run whose first snapshot is not out yet (0: none)

    std::unique_ptr<Trainer> m_trainer;
    std::shared_ptr<RunInfo> m_run;
    std::vector<uint8_t> m_switchedOn;
    std::vector<float> m_gridPoints;
    bool m_running = false;
    bool m_chunkQueued = false;
    int64_t m_target = -1;
    bool m_untilPaused = false;
    double m_stepsPerSecond = 0.0;  // the pace until paused; 0: as fast as possible
    Clock::time_point m_paceStart;  // the pace is measured from here ...
    int64_t m_paceSteps = 0;        // ... by the steps trained since
    bool m_dirty = false;
    uint64_t m_serial = 0;
    // The run and step whose quick snapshot was published (publish()).
    uint64_t m_quickRun = 0;
    int64_t m_quickStep = -1;

    // Learning curves.
    std::vector<std::shared_ptr<const HistoryPoint>> m_history;
    LearningCurves m_curves;
    std::shared_ptr<const LearningCurves> m_publishedCurves;  // null: m_curves changed since
    int64_t m_historyEvery = 1;
    int64_t m_nextHistory = 0;

    RunMeasures m_measures;  // what each snapshot measures, cached per step

    // Throughput over the last second of training.
    Clock::time_point m_windowStart;
    int64_t m_windowSteps = 0;
    // Where the worker's time went since start() (ENSEMBLE_UI_PROFILE prints it on stop).
    struct Profile {
        Clock::time_point start;
        int64_t steps = 0;
        double train = 0.0;
        double history = 0.0;
        double snapshots = 0.0;
    };
    Profile m_profile;
    double m_measuredStepsPerSecond = 0.0;
    Clock::time_point m_lastPublish;
    double m_buildSeconds = 0.0;

    std::function<nlohmann::json(uint64_t)> m_activeMetadata;

    AppRunRecord m_record;  // the runs store's entry of the current run

    // Recovery checkpoints (setRecovery).
    QString m_recoveryPath;
    QString m_replacedRecoveryPath;
    double m_recoveryInterval = 0.0;
    int64_t m_recoveryStep = -1;  // the step the file holds, or the current run's first step
    std::optional<Clock::time_point> m_recoveryDue;
    QTimer* m_recoveryTimer = nullptr;  // the same deadline while no chunk runs

    // The newest unserved prediction request.
    std::mutex m_predictMutex;
    std::optional<std::pair<uint64_t, std::vector<float>>> m_predictRequest;
};

}  // namespace ensemble::ui
