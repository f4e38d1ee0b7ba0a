#pragma once

// The GUI thread's handle on the engine: owns an EngineWorker moved to its own QThread and
// forwards commands to it as queued functors, so they run between training chunks. Snapshots
// come back through a one-slot mailbox (latest wins); the controller takes each one as soon as
// it is announced and re-emits snapshotChanged(). The side jobs (the Calibration comparison, the
// Shift sweep, the Methods comparison, a reproduction) are EngineJobs on the same thread, and
// the Active learning loop's rounds take the same cancel flag and coalesced progress; endJobs()
// is the one rule for what a new run does to them. The destructor cancels every job, stops the
// worker and joins its thread, so closing the window while training or a job runs is safe.

#include <QList>
#include <QObject>
#include <QString>
#include <QStringList>
#include <QThread>

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include <nlohmann/json.hpp>

#include "controller/active_job.h"
#include "controller/comparison.h"
#include "controller/engine_job.h"
#include "controller/engine_worker.h"
#include "controller/methods_job.h"
#include "controller/reproduce_job.h"
#include "controller/shift_job.h"
#include "controller/snapshot.h"

namespace ensemble::ui {

class EngineController : public QObject {
    Q_OBJECT

  public:
    explicit EngineController(QObject* parent = nullptr, WorkerTuning tuning = {});
    ~EngineController() override;

    EngineController(const EngineController&) = delete;
    EngineController& operator=(const EngineController&) = delete;

    // A new run from `config` at step 0: the data is loaded (or `data` used as it is) and the
    // members are initialised from ensemble.seed, so the same config gives the same initial
    // weights. Returns the run id that configured()/configureFailed() will carry. Ends every
    // job (endJobs): a Reset when `config` is the one the current run was configured with.
    // `keepReplaced`: a Reset, whose replaced run stays recoverable (EngineWorker::configure).
    uint64_t configure(const nlohmann::json& config, std::shared_ptr<const DataSplit> data = {},
                       bool keepReplaced = false);
    // A new run from a trained ensemble read with readOpenedEnsemble (EngineWorker::open):
    // configured() when it stands, openFailed() when its dataset cannot be used (the current
    // run then stays, and currentRunId() is its id again). The jobs under way are cancelled at
    // once (the engine thread reads the file), and they end as for a new experiment only once
    // the run stands: a refused file leaves the run it kept with what its jobs finished.
    uint64_t open(std::shared_ptr<const OpenedEnsemble> opened);
    // The current run's setup (loading, initialising, its first measurement) stops at its next
    // stage and the run is dropped: setupCancelled(). Nothing once its first snapshot is out.
    void cancelSetup();
    void start();                // train to the end of the run
    void trainTo(int64_t step);  // train until `step`, then pause
    void pause();
    void toggleRunning();
    void step();  // exactly one step (when paused)
    // Moves the end of the run (training goes on from where it is; see EngineWorker).
    void setStopAfter(int64_t steps);
    // Until paused: this run and the next ones have no end until this is switched off.
    void setUntilPaused(bool untilPaused);
    // The pace until paused: at most this many steps a second, 0 as fast as possible.
    void setStepsPerSecond(double stepsPerSecond);
    // A live edit of the running experiment ({"optimizer.lr": 0.05}), applied before the next
    // step and recorded in its training.schedule.
    void changeHyperparameters(const nlohmann::json& set);
    void setMemberSwitchedOn(int member, bool switchedOn);
    void setSwitchedOnMembers(const std::vector<uint8_t>& switchedOn);
    // Member predictions of raw rows (features each); only the newest unserved request is
    // answered, with predictionReady(id, ...).
    void predict(uint64_t id, std::vector<float> rawRows);
    // Writes <base>.safetensors (or <base>.onnx, <base>.npz: `format`), <base>.metrics.json and
    // <base>.metrics.csv; exportFinished() tells the result.
    void exportTo(const QString& basePath, ExportFormat format = ExportFormat::Safetensors);
    // Writes a checkpoint of the current run to `path`; checkpointSaved() tells the result.
    void saveCheckpoint(const QString& path);
    // Recovery checkpoints of the runs to `path` (EngineWorker::setRecovery): written on the
    // engine thread every `intervalSeconds` of training (after the first step no write holds)
    // and when training pauses; empty or <= 0: none.
    void setRecovery(const QString& path, double intervalSeconds, const QString& replacedPath = {});
    // The runs store (EngineWorker::setRunStore): where the next runs' entries go (empty: not
    // recorded), and the preset the next run starts from (its entry's column).
    void setRunStore(const QString& path);
    void setRunPreset(const QString& preset);
    // Pauses training (the chunk under way ends early), writes the recovery checkpoint if the
    // run changed since the last one, then recoveryFlushed(): the app ending on a signal.
    void flushRecovery();
    // Measures the trained ensemble in `path` on the current run's test split (its dataset
    // section), on the engine thread; comparisonMeasured() tells the result (measured, failed
    // or cancelled). False (nothing queued) when there is no run yet. A new request replaces
    // the one under way.
    bool compareWith(const QString& path);
    // Stops the comparison under way (it finishes cancelled); nothing when none.
    void cancelComparison();

    // Measures the run's ensemble (the weights an export would write now) on its test split
    // moved by a shift, on the engine thread: the report `ensemble-cli shift` gives for those
    // weights. shiftProgress() while it runs, then shiftFinished() (with the report, or
    // cancelled, or why not). A new request replaces the one under way.
    void runShift(const ShiftRequest& request);
    // Stops the shift under way (it finishes with outcome->cancelled); nothing when none.
    void cancelShift();

    // The Methods view's comparison: `methods` trained on the current run's config and
    // measured by compareMethods on the engine thread, with each method's ensemble on a shared
    // grid for 2-D data. methodsProgress() while it runs, then methodsFinished() (the result,
    // cancelled with the finished methods, or why not). A new request replaces the one under
    // way.
    void compareMethods(const std::vector<EnsembleMethod>& methods);
    // Stops the comparison under way (it finishes cancelled, keeping the finished methods).
    void cancelMethods();

    // The Reproduce view's job: a registered reproduction run by runReproduction on the engine
    // thread (the CLI's numbers), recorded as the CLI records `reproduce`. reproduceProgress()
    // while it runs (with the table judged so far), then reproduceFinished(). It needs no run,
    // but shares the engine thread with one and ends by the same rule (endJobs). A new request
    // replaces the one under way.
    void runReproduction(const ReproduceRequest& request);
    // Stops the reproduction under way (it finishes cancelled with the runs that finished).
    void cancelReproduction();

    // The Active learning view's loop over the current run's config and data, on the
    // engine thread (ActiveWorker): activeChanged() after every change, activeProgress() while
    // a round trains (coalesced: the latest step's, however fast the round reports). Start begins a
    // loop with `acquisition` (the one before it is kept as an earlier curve), Acquire labels the
    // marked picks (or trains the pending round), Label one pool row; Play runs rounds until Pause;
    // Cancel stops the round under way. A new run (endJobs) stops the round under way and Play; the
    // loop goes with the run it was of. `active`: the loop's active section (the panel's; null: the
    // run's own).
    void activeStart(Acquisition acquisition, const nlohmann::json& active = nullptr);
    void activeAcquire();
    void activeLabel(int64_t row);
    void activePlay();
    // Play's pace (ActiveWorker::setPace): the pause between two rounds and the labels it stops
    // at (0: the pool's end); it applies from the next round, Play under way included.
    void activeSetPace(int pauseMs, int64_t stopAt);
    // Pause (and Cancel) during Play's wait between two rounds end it at once.
    void activePause();
    void activeCancel();
    // The loop's latest state (null before any).
    ActiveStatePtr activeState() const { return m_activeState; }

    SnapshotPtr snapshot() const { return m_snapshot; }
    bool isRunning() const { return m_running; }
    bool isConfigured() const { return m_snapshot != nullptr; }
    uint64_t snapshotsReceived() const { return m_received; }
    uint64_t currentRunId() const { return m_runId; }
    // The thread the engine's work runs on (tests hold it to order their steps against it).
    QThread* engineThread() { return &m_thread; }
    // A side job (the Calibration comparison, a shift, a methods comparison, a reproduction)
    // was asked for and has not ended.
    bool isJobRunning() const;

  Q_SIGNALS:
    void snapshotChanged();
    // configure() or open() asked for run `runId`: what the window shows of the run before it
    // no longer applies. working() says what building it does, until its first snapshot.
    void runRequested(quint64 runId);
    void working(quint64 runId, QString what);
    // The current run stopped at `step` and is being measured on `rows` test rows.
    void measuring(quint64 runId, qint64 step, qint64 rows);
    void runningChanged(bool running);
    void configured(quint64 runId, QString notice);
    // errorKind: an ensemble::ErrorKind, what the person can do about it.
    void configureFailed(quint64 runId, QString message, int errorKind);
    // cancelSetup() took effect: run `runId` was dropped before its first snapshot.
    void setupCancelled(quint64 runId);
    void liveEditFailed(QString message);
    void openFailed(quint64 runId, QString message);
    void predictionReady(quint64 id, QList<float> logProbs, int members, int classes);
    void featureMapsReady(quint64 id, QList<float> maps, int members, int filters, int height,
                          int width);
    void exportFinished(bool ok, QString message, QStringList files);
    void checkpointSaved(bool ok, QString message, QString path, qint64 step);
    void recoveryWritten(QString path, qint64 step, double seconds);
    void recoveryFailed(QString message);
    // The runs store cannot record the run (EngineWorker::runStoreWarning); the run goes on.
    void runStoreWarning(QString message);
    void recoveryFlushed(qint64 step);
    // A new run was asked for and every job under way was ended without its outcome
    // (endJobs). sameExperiment: a Reset of the current experiment, whose finished results
    // stay (marked as the previous run's); otherwise they are another experiment's and go.
    void jobsEnded(bool sameExperiment);
    // A job was queued while training runs: training waits for it between two chunks (they
    // share the engine thread) until jobFinished(). `what` names the job for the status bar.
    void runWaitsForJob(QString what);
    void comparisonMeasured(ComparisonResult result);
    void shiftProgress(qint64 done, qint64 total);
    void shiftFinished(ShiftOutcomePtr outcome);
    void methodsProgress(ensemble::CompareProgress progress);
    void methodsFinished(ensemble::ui::MethodsOutcomePtr outcome);
    void reproduceProgress(ensemble::ui::ReproduceJobProgress progress);
    void reproduceFinished(ensemble::ui::ReproduceOutcomePtr outcome);
    void activeProgress(qint64 done, qint64 total);
    void activeChanged(ActiveStatePtr state);
    // open() brings back a checkpoint's active-learning loop on run `runId` (activeChanged()
    // follows): the Active learning view waits for it rather than starting a loop of its own.
    void activeRestoring(quint64 runId);

  private:
    // The one rule for jobs when a run is replaced, enforced here so that no view decides it:
    // every job under way is dropped (its input run is gone, and the engine thread is wanted
    // for the new one), Play stops, and jobsEnded() tells the views whether their finished
    // results are of the same experiment (a Reset keeps them) or not (they go).
    void endJobs(bool sameExperiment);
    // Stops Play and the active-learning command under way, and every one already sent; the
    // commands sent after this carry a fresh flag.
    void cancelActiveCommands();
    // Queues ActiveWorker::endWait after a Pause or Cancel: Play's wait ends at once.
    void endActiveWait();
    // The pending open() stood as run `runId`: the jobs of the run before end, the experiment
    // is the file's, and a checkpoint's loop is awaited.
    void openStood(uint64_t runId);
    // Tells the window when a job queued now holds up training (runWaitsForJob).
    void noteJobQueued(const QString& what);
    void takeSnapshot();
    template <typename F>
    void post(F&& f);

    SnapshotMailbox m_mailbox;
    QThread m_thread;
    EngineWorker* m_worker = nullptr;
    // The side jobs, run on m_thread (queued to m_worker) between training chunks.
    std::unique_ptr<EngineJob<JobProgress, ComparisonResult>> m_comparisonJob;
    std::unique_ptr<EngineJob<JobProgress, ShiftOutcomePtr>> m_shiftJob;
    std::unique_ptr<EngineJob<CompareProgress, MethodsOutcomePtr>> m_methodsJob;
    std::unique_ptr<EngineJob<ReproduceJobProgress, ReproduceOutcomePtr>> m_reproduceJob;
    ActiveWorker* m_active = nullptr;  // on m_thread beside the worker
    // The cancel flag the active-learning commands sent now carry (ActiveWorker::CancelToken).
    std::shared_ptr<std::atomic<bool>> m_activeCancel = std::make_shared<std::atomic<bool>>(false);
    ActiveStatePtr m_activeState;
    SnapshotPtr m_snapshot;
    std::vector<uint8_t> m_switchedOn;
    bool m_running = false;
    uint64_t m_received = 0;
    uint64_t m_runId = 0;
    uint64_t m_runIdBeforeOpen = 0;
    // The open() whose run has not stood yet (0: none): its configured() ends the jobs.
    uint64_t m_pendingOpen = 0;
    bool m_pendingOpenRestoresLoop = false;
    // The flag the loop restored by the pending open carries (m_activeCancel once it stands).
    std::shared_ptr<std::atomic<bool>> m_pendingOpenCancel;
    // The config of the last configure() (null after open()): a Reset asks for the same one.
    nlohmann::json m_experiment;
};

}  // namespace ensemble::ui
