#include "run_status.h"

#include <QLabel>
#include <QProgressBar>
#include <QStatusBar>

#include <algorithm>

#include "render/plot_helpers.h"
#include "widgets/elided_label.h"

namespace ensemble::ui {

RunStatus::RunStatus(QStatusBar* bar) : QObject(bar) {
    m_progress = new QProgressBar;
    m_progress->setMaximumWidth(260);
    m_progress->setTextVisible(true);
    m_progress->setFormat(QStringLiteral("%p %"));
    m_message = new ElidedLabel;
    m_message->setObjectName(QStringLiteral("StatusMessage"));
    m_message->setContentsMargins(4, 0, 4, 0);
    bar->addWidget(m_message, 1);
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
        bar->addPermanentWidget(l);
    }
}

void RunStatus::showMessage(const QString& text, int timeoutMs, uint64_t runId) {
    m_message->setFullText(text);
    m_messageRun = runId;
    if (timeoutMs > 0 && !text.isEmpty()) {
        m_messageTimer.start(timeoutMs);
    } else {
        m_messageTimer.stop();
    }
}

void RunStatus::runReplaced(uint64_t runId) {
    if (runId != m_messageRun) {
        showMessage(QString(), 0, runId);
    }
}

QString RunStatus::message() const {
    return m_message->fullText();
}

void RunStatus::showSettingUp() {
    show(nullptr);
    m_stepLabel->setText(tr("setting up…"));
}

void RunStatus::show(const SnapshotPtr& s) {
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
    m_backendLabel->setText(QString::fromStdString(run.backendName));
    m_backendLabel->setToolTip(QString::fromStdString(run.notice));
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

}  // namespace ensemble::ui
