#pragma once

// The Active learning view: the ensemble chooses which train rows to label next.
// A loop (the engine's ActiveLearner, run on the engine thread) starts from `active.initial`
// labelled rows of the run's train split; the rest is the pool. For 2-D data the picture shows
// the acquisition score of the current ensemble over the plane, the labelled rows in their
// class colours, the pool in grey and the next `active.per_round` picks ringed (ActiveCanvas).
// Acquire (A) labels the picks and trains a round; a click on a pool point (or the cursor and
// Enter) labels that row instead, its true label revealed as an oracle would; Play (P) runs
// rounds until paused, at a pace in rounds (a pause between two, remembered, and the labels it
// stops at; the status counts down to the next round), the last round's picks numbered in pick
// order on the picture; Esc cancels the round under way. Choosing another acquisition function
// starts a new loop, and the chart keeps the earlier loops' test accuracy against labels for
// comparison. Image data: the same loop with Play, showing the digits acquired last.

#include <QElapsedTimer>
#include <QWidget>

#include <map>

#include "controller/active_job.h"
#include "controller/snapshot.h"

class QBoxLayout;
class QChart;
class QChartView;
class QComboBox;
class QDoubleSpinBox;
class QPushButton;
class QSpinBox;
class QTimer;

namespace ensemble::ui {

class LazyRefresh;

class ActiveCanvas;
class ElidedLabel;
class JobStatusRow;
class WrappingLabel;

class ActiveView : public QWidget {
    Q_OBJECT

  public:
    explicit ActiveView(QWidget* parent = nullptr);

    void setSnapshot(SnapshotPtr snapshot);
    // The loop's state from the engine thread (EngineController::activeChanged).
    void setState(ActiveStatePtr state);
    void setProgress(qint64 done, qint64 total);
    // A checkpoint's loop is being restored on run `runId`: no loop of the view's own there.
    void expectRestore(quint64 runId);
    // A new run ended the round under way and Play (EngineController::jobsEnded).
    void endJob();
    ActiveStatePtr state() const { return m_state; }

    // The acquisition function chosen (the box).
    Acquisition acquisition() const;
    // A new loop with the chosen acquisition function (the box's choice does it too).
    void startLoop();
    // Whether a command was sent and its answer has not come yet, or Play runs.
    bool isBusy() const;

    QComboBox* acquisitionBox() const { return m_acquisition; }
    QPushButton* acquireButton() const { return m_acquire; }
    QPushButton* playButton() const { return m_play; }
    QPushButton* restartButton() const { return m_restart; }
    // Play's pace, remembered between runs (QSettings): the pause between two rounds in
    // seconds, and the labels Play stops at (0: the pool's end).
    QDoubleSpinBox* pauseBox() const { return m_pause; }
    QSpinBox* stopAtBox() const { return m_stopAt; }
    int pauseMs() const;
    int64_t stopAtLabels() const;
    // Seconds until Play's next round starts (0 once it is due); negative when Play does not
    // wait for one (paused, or no pause between rounds).
    double nextRoundIn() const;
    QPushButton* cancelButton() const;
    ActiveCanvas* canvas() const { return m_canvas; }
    QChart* chart() const { return m_chart; }
    QString message() const;
    QString summary() const;

  Q_SIGNALS:
    void startRequested(Acquisition acquisition);
    void acquireRequested();
    void labelRequested(qint64 row);
    // Play's pace changed (and before every Play): ActiveWorker::setPace.
    void paceChanged(int pauseMs, qint64 stopAt);
    void playRequested();
    void pauseRequested();
    void cancelRequested();

  protected:
    void showEvent(QShowEvent* event) override;
    void resizeEvent(QResizeEvent* event) override;

  private:
    void acquire();
    void label(qint64 row);
    void togglePlay();
    void cancel();
    // A pace box was edited: remembered, and sent for Play's next round.
    void paceEdited();
    // Where Play stands: the round, the rounds it can still run, the wait for the next one.
    QString playingText() const;
    void tickCountdown();
    void stopCountdown();
    // Starts the loop when the view is shown on a run that has none yet.
    void startIfNeeded();
    // Shows m_state, a state of the run shown.
    void showState();
    void updateControls();
    void updateSummary();
    void refreshChart();
    void arrange();
    void setMessage(const QString& text, bool error = false);
    // The state is of the run shown.
    bool stateIsCurrent() const;

    SnapshotPtr m_snapshot;
    ActiveStatePtr m_state;
    bool m_waiting = false;     // a command is on its way to the engine thread
    uint64_t m_startedFor = 0;  // the run the last loop was started (or restored) on
    uint64_t m_chartFor = 0;    // the state the chart shows
    LazyRefresh* m_lazyRefresh =
        nullptr;  // the read-outs, when shown, if a snapshot came while hidden

    QComboBox* m_acquisition = nullptr;
    QPushButton* m_acquire = nullptr;
    QPushButton* m_play = nullptr;
    QPushButton* m_restart = nullptr;
    QDoubleSpinBox* m_pause = nullptr;
    QSpinBox* m_stopAt = nullptr;
    QTimer* m_countdown = nullptr;  // updates the status while Play waits for its next round
    QElapsedTimer m_waitStarted;    // since the state that began the wait came
    int m_waitMs = 0;               // the wait that began then (0: none)
    JobStatusRow* m_status = nullptr;
    WrappingLabel* m_summary = nullptr;
    ActiveCanvas* m_canvas = nullptr;
    QBoxLayout* m_body = nullptr;
    QChart* m_chart = nullptr;
    QChartView* m_chartView = nullptr;
    WrappingLabel* m_key = nullptr;  // the curves' colours (the chart has no legend)
};

}  // namespace ensemble::ui
