#pragma once

// The Active learning view's computation: one ActiveLearner (engine/active) over the
// current run's config and data, driven on the engine thread beside the EngineWorker. Each
// round (ActiveLearner::trainRound) reports progress and can be cancelled; after it the pool
// is scored, and for 2-D data the acquisition function is evaluated on the grid's member
// predictions (the same acquisitionScores, the same colour maps as the uncertainty heatmaps).
// Play runs rounds one queued call at a time, so training chunks, pause and every other command
// run between them; its pace (setPace) puts a pause between two rounds (a timer on the engine
// thread, never a sleep) and stops at a labelled count. What the GUI sees is an immutable
// ActiveState, published after each change.
//
// The loop is the engine's, not the app's: the same config and seed acquire the same rows here
// as in `ensemble-cli active` (tst_gui_active). Its state goes into the run's
// checkpoint as the metadata "active" (activeCheckpointJson) and comes back from it.

#include <QImage>
#include <QObject>
#include <QPolygonF>
#include <QString>

class QTimer;

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "active/active_learning.h"
#include "controller/progress_mailbox.h"
#include "controller/snapshot.h"
#include "runs/run_store.h"

namespace ensemble::ui {

// One loop's test accuracy against its labels (a curve of the view's chart).
struct ActiveCurve {
    Acquisition acquisition = Acquisition::Bald;
    uint64_t seed = 0;
    std::vector<int64_t> labels;
    std::vector<double> accuracy;
};

// A row acquired in the last round, as the view shows it for image data.
struct ActiveDigit {
    int64_t row = 0;
    int label = 0;       // its true label, revealed by acquiring it
    double score = 0.0;  // its acquisition score (NaN: picked by a person)
    QImage image;        // grey, 0 black (image data only)
};

// What the view draws of the loop. Built on the engine thread, never changed after.
struct ActiveState {
    uint64_t runId = 0;   // the run (RunInfo::runId) whose config and data the loop uses
    uint64_t serial = 0;  // increases with every state published
    Acquisition acquisition = Acquisition::Bald;
    ActiveConfig config;
    uint64_t seed = 0;
    std::vector<int64_t> labelled;     // train-split rows, ascending
    std::vector<int64_t> pool;         // the train rows not labelled, ascending
    std::vector<ActiveRound> rounds;   // the rounds trained, with what each acquired after it
    std::vector<int64_t> classCounts;  // the labelled rows per true class (pending ones too)
    // Rows were labelled after the last round (or no round was trained yet): the next round
    // trains on them before anything is scored again.
    bool pending = false;
    PoolScores scores;  // the pool scored after the last round (empty while pending)
    // 2-D data: the acquisition score over the run's grid (row 0 at the top, G x G), as the
    // heatmap shows it, and the ensemble's decision boundary in grid units.
    bool hasGrid = false;
    std::vector<double> gridScores;
    HeatImage heat;
    std::vector<QPolygonF> contour;
    // The rows of the latest acquisition (what the last round learnt from, or what waits for
    // the next one), with their scores; image data carry their pictures.
    std::vector<ActiveDigit> lastAcquired;
    // Earlier loops on this run with other acquisition functions (the latest of each).
    std::vector<ActiveCurve> earlier;
    bool playing = false;
    QString message;     // what stopped the loop (a cancel, an error, the pool's end), else empty
    bool error = false;  // the message is an error

    ActiveCurve curve() const;  // this loop's curve
};
using ActiveStatePtr = std::shared_ptr<const ActiveState>;

// The acquisition score of every grid point of `run` (2-D data) from the members' predictions
// there: acquisitionScores with the grid index as the row index (what `random` draws from).
std::vector<double> gridAcquisitionScores(Acquisition acquisition, const MemberPredictions& grid,
                                          const std::vector<uint8_t>& include, uint64_t seed,
                                          int round);
// The heatmap of `scores` over a G x G grid: the sequential map of the uncertainty heatmaps,
// from 0 for the scores that are never negative, over their own range for margin and random.
HeatImage acquisitionHeat(Acquisition acquisition, const std::vector<double>& scores, int size,
                          int classes);

// The metadata "active" of a checkpoint: {"acquisition": name, "config": the loop's active
// section, "state": ActiveLearner::toJson with the scores (seed, initial, rounds, pending),
// "earlier": [{"acquisition", "seed", "labels", "accuracy"}, ...]}.
nlohmann::json activeCheckpointJson(const ActiveLearner& learner,
                                    const std::vector<ActiveCurve>& earlier);

class ActiveWorker : public QObject {
    Q_OBJECT

  public:
    ActiveWorker();
    ~ActiveWorker() override;

    // Each command carries the cancel flag of the request that sent it (the controller's, as an
    // EngineJob's): setting it stops the round under way and every round that command would
    // still train (Play's next ones), while a later command comes with a flag of its own, so a
    // Cancel never reaches past the commands sent before it. Null: never cancelled.
    using CancelToken = std::shared_ptr<const std::atomic<bool>>;

    // Any thread: Play goes on (set before play() is queued, so a Pause after it wins).
    void requestPlay();
    // Any thread: Play stops after the round under way (or, waiting between two rounds, when
    // the wait ends; endWait() ends it now).
    void requestPause() { m_playing.store(false, std::memory_order_release); }
    // Any thread: Play's pace, read at each round. `pauseMs` between the end of one round and the
    // start of the next (0: the next is queued at once); `stopAt` labelled rows, where Play
    // stops (0: at the pool's end): the round that reaches it takes only the picks that fit, the
    // first in pick order, so Play stops at exactly `stopAt` labels.
    void setPace(int pauseMs, int64_t stopAt);

    // --- engine thread only -------------------------------------------------------------
    // A new loop with `acquisition` on the run `run` (its config, with `active` as its active
    // section unless null) over `data` (its trainer's split), trained at once on the initial
    // labelled set. The loop before it (same run) becomes an earlier curve.
    void start(std::shared_ptr<const RunInfo> run, const DataSplit& data,
               const nlohmann::json& active, Acquisition acquisition, CancelToken cancel = {});
    // Labels the marked picks (Acquire), or trains the pending round, then trains a round.
    void acquirePicks(CancelToken cancel = {});
    // Labels pool row `row` (a person's click: score NaN) and trains a round.
    void label(int64_t row, CancelToken cancel = {});
    // Runs rounds (acquire the picks, train) until paused, cancelled, at the pace's labels or
    // out of pool rows, waiting the pace's pause between two.
    void play(CancelToken cancel = {});
    // Play waits for its next round (the pace's pause between rounds).
    bool waitingForNextRound() const;
    // A Pause or Cancel that came during the wait between two rounds ends it now: the state
    // that says Play stopped goes out at once, not when the pause would have ended. Nothing
    // while Play goes on or when it does not wait (the controller queues it after requestPause).
    void endWait();
    // Brings back a loop from a checkpoint's metadata "active" on run `run`: its labelled rows
    // and rounds, the last round's ensemble retrained (bit for bit: every round is a Trainer
    // run from the same seeds), its earlier curves. `failed` says why when it cannot.
    void restore(std::shared_ptr<const RunInfo> run, const DataSplit& data,
                 const nlohmann::json& active, CancelToken cancel = {});
    // The run `runId` replaced the loop's: the loop and its curves go.
    // The loop's own entry in the runs store (AppRunRecord::beginJob, null: not recorded):
    // given the loop's figures after each round, ended (finished) when the loop or its run is
    // replaced. The entry before it ends here.
    void setEntry(std::unique_ptr<runs::RunRecorder> entry);
    void forgetRun(uint64_t runId);
    // The metadata "active" for a checkpoint of run `runId` (null when no loop runs on it).
    nlohmann::json checkpointJson(uint64_t runId) const;

    // Any thread (the GUI thread, on progressPosted()): the latest round progress, none when a
    // delivery before took it.
    std::optional<JobProgress> takeProgress() { return m_progress.take(); }

  Q_SIGNALS:
    // A round's progress waits in takeProgress(): emitted once per delivery, not per step.
    void progressPosted();
    void stateReady(ActiveStatePtr state);

  private:
    void recordRound();
    std::unique_ptr<runs::RunRecorder> m_entry;
    // A round's step report: coalesced in m_progress (ProgressMailbox).
    void reportProgress(int64_t done, int64_t total);
    // The command under way is `cancel`'s (a fresh flag when null).
    void useCancel(CancelToken cancel);
    // Labels the marked picks (or takes the pending round) and trains, under the current flag.
    // A round of Play (`ofPlay`) takes only the picks that fit under the pace's stopAt, and is
    // Play's last when it reaches stopAt or empties the pool (its state says so).
    void acquireAndTrain(bool ofPlay = false);
    // Restores `state` (ActiveLearner::toJson) into m_learner with the last round's trainer
    // trained again; false when cancelled.
    bool replayLastRound(const nlohmann::json& state);
    // One round of Play, queueing the next while it goes on.
    void playRound();
    // Trains the next round and publishes; false when cancelled or failed.
    bool trainAndPublish(bool ofPlay = false);
    // Stops the wait between two rounds of Play (a new loop, another run): no round follows.
    void stopWaiting();
    void publish(const QString& message = {}, bool error = false);
    void fail(const QString& message);
    // The rows the next Acquire takes (the last scoring's picks, fewer at the pool's end).
    std::vector<int64_t> currentPicks() const;
    // No round trained yet, or rows labelled after the last one: the next round trains them.
    bool pendingRound() const;

    // The loop's run `run` with its train and test split `data` (copied once per run).
    void useRun(std::shared_ptr<const RunInfo> run, const DataSplit& data);

    std::unique_ptr<ActiveLearner> m_learner;
    std::shared_ptr<const RunInfo> m_run;
    std::shared_ptr<const DataSplit> m_data;
    std::vector<float> m_gridPoints;
    PoolScores m_scores;
    bool m_scored = false;
    std::vector<ActiveCurve> m_earlier;
    uint64_t m_serial = 0;
    CancelToken m_cancel;  // the command under way's (engine thread)
    ProgressMailbox<JobProgress> m_progress;
    std::atomic<bool> m_playing{false};
    std::atomic<int> m_pauseMs{0};
    std::atomic<int64_t> m_stopAt{0};
    QTimer* m_nextRound = nullptr;  // Play's pause between two rounds (engine thread)
    bool m_playQueued = false;
    bool m_publishedPlaying = false;  // the playing flag of the last state published
};

}  // namespace ensemble::ui
