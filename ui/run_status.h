#pragma once

// The status bar's parts: on the left the message (elided to fit, the full text in its
// tooltip, cleared after a timeout), on the right the run's counters (test accuracy, step,
// epoch, rates, backend); and the toolbar's progress bar.

#include <QObject>
#include <QString>
#include <QTimer>

#include <cstdint>

#include "controller/snapshot.h"

class QLabel;
class QProgressBar;
class QStatusBar;

namespace ensemble::ui {

class ElidedLabel;

class RunStatus : public QObject {
    Q_OBJECT

  public:
    // Adds the message and the counters to `bar`; progress() goes where the caller puts it.
    explicit RunStatus(QStatusBar* bar);

    QProgressBar* progress() const { return m_progress; }
    // Shows `text` for `timeoutMs` (0: until replaced). Empty clears it. The message speaks of
    // run `runId` (the one current when it was shown): runReplaced() by another clears it.
    void showMessage(const QString& text, int timeoutMs = 0, uint64_t runId = 0);
    // Run `runId` replaces the one shown: a message about another run no longer applies.
    void runReplaced(uint64_t runId);
    QString message() const;
    // The counters and the progress of `snapshot` (null: no run).
    void show(const SnapshotPtr& snapshot);
    // A new run is being set up: the previous run's counters no longer apply.
    void showSettingUp();

  private:
    ElidedLabel* m_message = nullptr;
    QTimer m_messageTimer;
    uint64_t m_messageRun = 0;
    QLabel* m_stepLabel = nullptr;
    QLabel* m_epochLabel = nullptr;
    QLabel* m_rateLabel = nullptr;
    QLabel* m_memberRateLabel = nullptr;
    QLabel* m_backendLabel = nullptr;
    QLabel* m_figuresLabel = nullptr;  // the ensemble's test accuracy, live subset labelled
    QProgressBar* m_progress = nullptr;
};

}  // namespace ensemble::ui
