#pragma once

// The scripted start of ensemble-lab: on the first snapshot, the view asked for and training to
// --train-steps; with --screenshot, once the steps are trained and measured, the stage set as
// asked (member, heatmap quantity, a demo digit, a Methods comparison, active-learning rounds),
// the throughput, GUI timer lateness and recovery-write figures printed (bench/ reads them),
// and the window's picture saved before the app exits. The pictures in docs/ are made so.

#include <QElapsedTimer>
#include <QObject>
#include <QString>
#include <QTimer>

#include <string>
#include <vector>

#include "controller/snapshot.h"
#include "model/ensemble_methods.h"

namespace ensemble::ui {
class MainWindow;
}

// A QObject for its connections' lifetime only: it has no signals or slots of its own.
class ScreenshotScript : public QObject {
  public:
    struct Options {
        QString screenshot;  // the picture's path; empty: no picture (an interactive start)
        QString view;        // the view's key to show; empty: the window's own
        qint64 trainSteps = -1;
        int member = -1;    // the member to select; -1: none
        int quantity = -1;  // the Boundary heatmap's HeatQuantity; -1: the view's own
        bool demoDigit = false;
        QString hover;  // "FX,FY": the Boundary read-out drawn at that point of the plot
        int activeRounds = 0;
        std::vector<ensemble::EnsembleMethod> compareMethods;
    };

    // Follows `window`'s snapshots from now on; `window` must outlive the script.
    ScreenshotScript(ensemble::ui::MainWindow& window, Options options);

  private:
    // The first snapshot: the view, then training to trainSteps.
    void start(const std::string& missingData);
    void onSnapshotShown();
    // The figures of the run measured on the way (throughput, timer lateness, recovery writes).
    void printRunFigures(const ensemble::ui::SnapshotPtr& s);
    // Sets the stage, then grabs once it is ready (after a comparison or active rounds).
    void stage();
    // Lets the views draw what they were given, then saves the picture and exits.
    void grabLater();
    void grab();
    void recordLateness();

    ensemble::ui::MainWindow& m_window;
    Options m_options;
    bool m_started = false;
    bool m_shotScheduled = false;

    QElapsedTimer m_trainClock;
    // How late a 10 ms timer on the GUI thread fires while the engine trains: the GUI's
    // responsiveness, reported with the throughput (bench/gui_throughput.py reads both).
    QTimer m_lateness;
    // Per millisecond of lateness, how many ticks: bounded however long the run (10 s and
    // more share the last bin; the worst is kept exactly).
    std::vector<qint64> m_delayCounts;
    qint64 m_worstDelay = 0;
    qint64 m_ticks = 0;
    qint64 m_lastTick = 0;
    // The recovery writes' cost, on the engine thread (bench/budgets.py --autosave reads it
    // beside the GUI timer lateness).
    std::vector<double> m_recoveryWrites;
};
