// The Active learning view: the loop's controls (acquisition, Acquire, Play and its pace in
// rounds), its status, the pool map (active_canvas.cpp) and the accuracy-against-labels chart.
// One piece because every part follows the same loop state; the map's drawing and the worker
// live apart (active_canvas, controller/active_job).
#include "views/active_view.h"

#include <QBoxLayout>
#include <QCategoryAxis>
#include <QChart>
#include <QChartView>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QLegend>
#include <QLineSeries>
#include <QPushButton>
#include <QScatterSeries>
#include <QSettings>
#include <QShortcut>
#include <QSpinBox>
#include <QTimer>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>
#include <limits>

#include "render/chart_axes.h"
#include "render/plot_helpers.h"
#include "views/active_canvas.h"
#include "widgets/elided_label.h"
#include "widgets/job_status_row.h"
#include "widgets/lazy_refresh.h"
#include "widgets/wrapping_label.h"

namespace ensemble::ui {

namespace {

const QString kPauseKey = QStringLiteral("active/pauseBetweenRounds");  // seconds
const QString kStopAtKey = QStringLiteral("active/stopAtLabels");       // 0: the pool's end
constexpr double kDefaultPause = 1.0;  // seconds: a round's picture stays long enough to read

QLineSeries* curveSeries(const ActiveCurve& curve, const QString& name, const QPen& pen) {
    auto* s = new QLineSeries;
    s->setName(name);
    s->setPen(pen);
    for (std::size_t i = 0; i < curve.labels.size() && i < curve.accuracy.size(); ++i) {
        if (std::isfinite(curve.accuracy[i])) {
            s->append(static_cast<double>(curve.labels[i]), curve.accuracy[i]);
        }
    }
    return s;
}

}  // namespace

ActiveView::ActiveView(QWidget* parent) : QWidget(parent) {
    m_lazyRefresh = new LazyRefresh(this, [this] {
        updateControls();
        updateSummary();
    });
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(6, 6, 6, 6);

    // Two rows, so the controls fit the ~430 px an image run's view has at 900 x 600.
    auto* bar = new QHBoxLayout;
    m_acquisition = new QComboBox;
    for (const auto& row : EnumNames<Acquisition>::table) {
        m_acquisition->addItem(acquisitionLabel(row.value), QLatin1String(row.name));
    }
    m_acquisition->setToolTip(
        tr("The acquisition function that scores the pool; choosing another starts a new loop "
           "(the curves of the earlier ones stay on the chart)"));
    auto* acquisitionLabelWidget = new QLabel(tr("Ac&quisition"));
    acquisitionLabelWidget->setBuddy(m_acquisition);
    bar->addWidget(acquisitionLabelWidget);
    bar->addWidget(m_acquisition, 1);
    layout->addLayout(bar);

    auto* buttons = new QHBoxLayout;
    m_acquire = new QPushButton(tr("&Acquire"));
    m_acquire->setToolTip(tr("Label the ringed picks and train a round on them (A)"));
    m_play = new QPushButton(tr("&Play"));
    m_play->setToolTip(tr("Acquire and train round after round until paused (P)"));
    m_restart = new QPushButton(tr("&New loop"));
    m_restart->setToolTip(
        tr("Start again from the initial labelled rows (the curve so far stays on the chart)"));
    buttons->addWidget(m_acquire);
    buttons->addWidget(m_play);
    buttons->addStretch(1);
    buttons->addWidget(m_restart);
    layout->addLayout(buttons);

    // Play's pace in rounds (the window's speed control is in training steps).
    auto* pace = new QHBoxLayout;
    const QSettings settings;
    m_pause = new QDoubleSpinBox;
    m_pause->setRange(0.0, 10.0);
    m_pause->setDecimals(1);
    m_pause->setSingleStep(0.5);
    m_pause->setSuffix(tr(" s"));
    m_pause->setValue(settings.value(kPauseKey, kDefaultPause).toDouble());
    m_pause->setToolTip(
        tr("Play waits this long after each round before it acquires the next, so each round's "
           "picks can be read (0: no wait)"));
    auto* pauseLabel = new QLabel(tr("Pa&use between rounds"));
    pauseLabel->setBuddy(m_pause);
    m_stopAt = new QSpinBox;
    m_stopAt->setRange(0, 1'000'000);
    m_stopAt->setSuffix(tr(" labels"));
    m_stopAt->setSpecialValueText(tr("pool's end"));
    m_stopAt->setValue(settings.value(kStopAtKey, 0).toInt());
    m_stopAt->setToolTip(
        tr("Play stops when this many rows are labelled: its last round takes only the picks "
           "that fit, highest first (lowest: play to the pool's end)"));
    auto* stopAtLabel = new QLabel(tr("&Stop at"));
    stopAtLabel->setBuddy(m_stopAt);
    pace->addWidget(pauseLabel);
    pace->addWidget(m_pause);
    pace->addSpacing(10);
    pace->addWidget(stopAtLabel);
    pace->addWidget(m_stopAt);
    pace->addStretch(1);
    layout->addLayout(pace);
    m_countdown = new QTimer(this);
    m_countdown->setInterval(100);
    connect(m_countdown, &QTimer::timeout, this, &ActiveView::tickCountdown);

    m_status = new JobStatusRow(this, tr("Stop the round under way (Esc)"));
    layout->addWidget(m_status);
    m_summary = new WrappingLabel;
    m_summary->setStyleSheet(QStringLiteral("color: #555;"));
    layout->addWidget(m_summary);

    m_body = new QBoxLayout(QBoxLayout::LeftToRight);
    m_canvas = new ActiveCanvas;
    m_body->addWidget(m_canvas, 3);
    m_chart = new QChart;
    m_chart->setAnimationOptions(QChart::NoAnimation);
    m_chart->legend()->setAlignment(Qt::AlignBottom);
    m_chart->setMargins(QMargins(2, 2, 2, 2));
    m_chart->setTitle(tr("Test accuracy against labels"));
    m_chart->legend()->setVisible(false);  // the key above it: a legend takes the axes' room
    m_chartView = new QChartView(m_chart);
    m_chartView->setRenderHint(QPainter::Antialiasing);
    m_chartView->setMinimumSize(220, 150);
    m_key = new WrappingLabel;
    m_key->setTextFormat(Qt::RichText);
    auto* chartColumn = new QVBoxLayout;
    chartColumn->setSpacing(2);
    chartColumn->addWidget(m_key);
    chartColumn->addWidget(m_chartView, 1);
    m_body->addLayout(chartColumn, 2);
    layout->addLayout(m_body, 1);
    arrange();

    connect(m_acquire, &QPushButton::clicked, this, &ActiveView::acquire);
    connect(m_play, &QPushButton::clicked, this, &ActiveView::togglePlay);
    connect(m_status, &JobStatusRow::cancelRequested, this, &ActiveView::cancel);
    connect(m_restart, &QPushButton::clicked, this, &ActiveView::startLoop);
    connect(m_pause, &QDoubleSpinBox::valueChanged, this, &ActiveView::paceEdited);
    connect(m_stopAt, &QSpinBox::valueChanged, this, &ActiveView::paceEdited);
    connect(m_acquisition, &QComboBox::activated, this, [this] { startLoop(); });
    connect(m_canvas, &ActiveCanvas::labelRequested, this, &ActiveView::label);
    connect(m_canvas, &ActiveCanvas::cursorMoved, this, [this] { updateSummary(); });
    const auto shortcut = [this](const QKeySequence& key, auto slot) {
        auto* s = new QShortcut(key, this);
        s->setContext(Qt::WidgetWithChildrenShortcut);
        connect(s, &QShortcut::activated, this, slot);
    };
    shortcut(QKeySequence(Qt::Key_A), [this] {
        if (m_acquire->isEnabled()) {
            acquire();
        }
    });
    shortcut(QKeySequence(Qt::Key_P), [this] {
        if (m_play->isEnabled()) {
            togglePlay();
        }
    });
    setMessage(tr("The loop starts when the view is shown on a classification run."));
    updateControls();
}

Acquisition ActiveView::acquisition() const {
    Acquisition a = Acquisition::Bald;
    enumFromName(m_acquisition->currentData().toString().toStdString(), a);
    return a;
}

bool ActiveView::stateIsCurrent() const {
    return m_state && m_snapshot && m_state->runId == m_snapshot->run->runId;
}

int ActiveView::pauseMs() const {
    return static_cast<int>(std::lround(m_pause->value() * 1000.0));
}

int64_t ActiveView::stopAtLabels() const {
    return m_stopAt->value();
}

double ActiveView::nextRoundIn() const {
    if (m_waitMs <= 0 || !stateIsCurrent() || !m_state->playing) {
        return -1.0;
    }
    return std::max<double>(0.0, (m_waitMs - m_waitStarted.elapsed()) / 1000.0);
}

void ActiveView::paceEdited() {
    QSettings settings;
    settings.setValue(kPauseKey, m_pause->value());
    settings.setValue(kStopAtKey, m_stopAt->value());
    Q_EMIT paceChanged(pauseMs(), stopAtLabels());
    if (stateIsCurrent() && m_state->playing && m_state->message.isEmpty()) {
        setMessage(playingText());  // the rounds it can still run
    }
}

QString ActiveView::playingText() const {
    const ActiveState& s = *m_state;
    const auto labelled = static_cast<int64_t>(s.labelled.size());
    int64_t target = labelled + static_cast<int64_t>(s.pool.size());
    if (stopAtLabels() > 0) {
        target = std::min(target, std::max(labelled, stopAtLabels()));
    }
    const int64_t perRound = std::max(1, s.config.perRound);
    const int64_t done = std::max<int64_t>(0, static_cast<int64_t>(s.rounds.size()) - 1);
    const int64_t most = done + (target - labelled + perRound - 1) / perRound;
    const double left = nextRoundIn();
    if (left > 0.0) {
        return tr("Playing: round %1 of at most %2, next in %3 s (P pauses)")
            .arg(done)
            .arg(most)
            .arg(left, 0, 'f', 1);
    }
    return tr("Playing: round %1 of at most %2 training… (P pauses after it)")
        .arg(std::min(done + 1, most))
        .arg(most);
}

void ActiveView::tickCountdown() {
    if (!stateIsCurrent() || !m_state->playing || !m_state->message.isEmpty()) {
        stopCountdown();
        return;
    }
    setMessage(playingText());
    if (nextRoundIn() <= 0.0) {
        m_countdown->stop();  // the round trains: its state restarts the countdown
    }
}

void ActiveView::stopCountdown() {
    m_countdown->stop();
    m_waitMs = 0;
}

bool ActiveView::isBusy() const {
    return m_waiting || (stateIsCurrent() && m_state->playing);
}

void ActiveView::setSnapshot(SnapshotPtr snapshot) {
    const bool newRun = snapshot && (!m_snapshot || m_snapshot->run != snapshot->run);
    m_snapshot = std::move(snapshot);
    if (newRun) {
        m_canvas->setRun(m_snapshot->run);
        // The run's own active.acquisition is the loop's first choice.
        const int index = m_acquisition->findData(
            QLatin1String(toString(m_snapshot->run->config.active.acquisition)));
        if (index >= 0 && m_startedFor != m_snapshot->run->runId) {
            m_acquisition->setCurrentIndex(index);
        }
        if (stateIsCurrent()) {
            showState();  // the loop's state came before the run's first snapshot
        } else {
            m_canvas->setState(nullptr);
            refreshChart();
        }
    }
    startIfNeeded();  // only when shown: a loop nobody watches does not start
    m_lazyRefresh->request();
}

void ActiveView::showEvent(QShowEvent* event) {
    QWidget::showEvent(event);  // brings the read-outs up to date first (m_lazyRefresh)
    startIfNeeded();
}

void ActiveView::resizeEvent(QResizeEvent* event) {
    QWidget::resizeEvent(event);
    arrange();
}

void ActiveView::arrange() {
    // Narrow (900 x 600 with the panel open): the chart under the picture; wider: beside it.
    m_body->setDirection(width() >= 700 ? QBoxLayout::LeftToRight : QBoxLayout::TopToBottom);
}

void ActiveView::startIfNeeded() {
    if (!isVisible() || !m_snapshot || m_startedFor == m_snapshot->run->runId) {
        return;
    }
    const RunInfo& run = *m_snapshot->run;
    if (stateIsCurrent()) {
        m_startedFor = run.runId;  // restored from a checkpoint
        return;
    }
    if (run.regression || !run.missingData.empty()) {
        return;
    }
    startLoop();
}

void ActiveView::startLoop() {
    if (!m_snapshot || m_snapshot->run->regression || !m_snapshot->run->missingData.empty()) {
        return;
    }
    m_startedFor = m_snapshot->run->runId;
    m_waiting = true;
    m_status->start(tr("Training round 0 on the initial labelled rows…"));
    updateControls();
    Q_EMIT startRequested(acquisition());
}

void ActiveView::acquire() {
    if (!stateIsCurrent() || isBusy()) {
        return;
    }
    m_waiting = true;
    setMessage(
        m_state->pending
            ? tr("Training a round on the labelled rows…")
            : tr("Labelling %1 picks and training a round…").arg(m_state->scores.picks.size()));
    updateControls();
    Q_EMIT acquireRequested();
}

void ActiveView::label(qint64 row) {
    if (!stateIsCurrent() || isBusy() || m_state->pending) {
        return;
    }
    m_waiting = true;
    setMessage(
        tr("Labelling row %1 (class %2) and training a round…")
            .arg(row)
            .arg(m_snapshot->run->train.rows > row
                     ? QString::number(m_snapshot->run->train.y[static_cast<std::size_t>(row)])
                     : QStringLiteral("?")));
    updateControls();
    Q_EMIT labelRequested(row);
}

void ActiveView::togglePlay() {
    if (!stateIsCurrent()) {
        return;
    }
    if (m_state->playing) {
        const bool waiting = nextRoundIn() > 0.0;
        stopCountdown();
        setMessage(waiting ? tr("Pausing: the next round does not start…")
                           : tr("Pausing after the round under way…"));
        Q_EMIT pauseRequested();
        return;
    }
    if (m_waiting) {
        return;
    }
    m_waiting = true;
    setMessage(
        stopAtLabels() > 0
            ? tr("Playing: round after round until %1 labels or paused (P)…").arg(stopAtLabels())
            : tr("Playing: round after round until paused (P)…"));
    updateControls();
    Q_EMIT paceChanged(pauseMs(), stopAtLabels());
    Q_EMIT playRequested();
}

void ActiveView::cancel() {
    const bool waiting = nextRoundIn() > 0.0;
    stopCountdown();
    setMessage(waiting ? tr("Stopping Play…") : tr("Cancelling the round under way…"));
    Q_EMIT cancelRequested();
}

void ActiveView::expectRestore(quint64 runId) {
    m_startedFor = runId;
    m_waiting = true;
    m_status->start(
        tr("Restoring the checkpoint's active-learning loop (its last round trains "
           "again)…"));
    updateControls();
}

void ActiveView::setProgress(qint64 done, qint64 total) {
    m_status->setProgress(done, total);
}

void ActiveView::endJob() {
    // The loop is the run's own (its checkpoint holds it): a new run, Reset included, ends
    // the round under way and starts a loop of its own when shown.
    const bool wasBusy = m_waiting || (stateIsCurrent() && m_state->playing);
    m_waiting = false;
    stopCountdown();
    m_status->finish();
    if (wasBusy) {
        setMessage(tr("The round stopped: a new run began, and the loop starts again on it."));
    }
    updateControls();
}

void ActiveView::setState(ActiveStatePtr state) {
    if (!state) {
        return;
    }
    m_state = std::move(state);
    m_waiting = false;
    if (!stateIsCurrent()) {
        updateControls();
        return;  // a loop of a run replaced since, or of one whose snapshot is on its way
    }
    showState();
}

void ActiveView::showState() {
    // Run ids only grow: a late state of an earlier run never makes the view start a loop on
    // a run whose loop is being restored.
    m_startedFor = std::max<uint64_t>(m_startedFor, m_state->runId);
    const int index = m_acquisition->findData(QLatin1String(toString(m_state->acquisition)));
    if (index >= 0) {
        m_acquisition->setCurrentIndex(index);
    }
    m_canvas->setState(m_state);
    if (m_state->playing) {
        m_status->showBusy();
    } else {
        m_status->hideProgress();
    }
    // Play waits its pause after each round's state (ActiveWorker::playRound): counted down.
    stopCountdown();
    if (m_state->playing && m_state->message.isEmpty() && pauseMs() > 0) {
        m_waitMs = pauseMs();
        m_waitStarted.start();
        m_countdown->start();
    }
    if (!m_state->message.isEmpty()) {
        setMessage(m_state->message, m_state->error);
    } else if (m_state->playing) {
        setMessage(playingText());
    } else if (m_state->pending) {
        setMessage(tr("Rows wait for a round: Retrain (A) trains it."));
    } else if (m_snapshot && m_snapshot->run->hasGrid) {
        setMessage(tr("A: label the %1 ringed picks · click a grey point to label it instead · "
                      "P: play")
                       .arg(m_state->scores.picks.size()));
    } else {
        setMessage(tr("A: label the %1 highest-scoring rows · P: play until paused")
                       .arg(m_state->scores.picks.size()));
    }
    refreshChart();
    updateControls();
    updateSummary();
}

void ActiveView::updateControls() {
    const bool current = stateIsCurrent();
    const bool busy = isBusy();
    const bool runnable =
        m_snapshot && !m_snapshot->run->regression && m_snapshot->run->missingData.empty();
    const bool canAcquire =
        current && !busy && (m_state->pending || !m_state->scores.picks.empty());
    m_acquire->setEnabled(canAcquire);
    m_acquire->setText(current && m_state->pending ? tr("Re&train") : tr("&Acquire"));
    m_play->setEnabled(current && (m_state->playing || canAcquire));
    m_play->setText(current && m_state->playing ? tr("&Pause") : tr("&Play"));
    m_status->setCancellable(busy);
    m_restart->setEnabled(runnable && !busy);
    m_acquisition->setEnabled(runnable && !busy);
    m_canvas->setLabelling(current && !busy && !m_state->pending);
    if (!busy) {
        m_status->hideProgress();
    }
}

void ActiveView::updateSummary() {
    if (!m_snapshot) {
        m_summary->clear();
        return;
    }
    if (m_snapshot->run->regression) {
        m_summary->setText(tr("Active learning needs class labels: this is a regression run."));
        return;
    }
    if (!m_snapshot->run->missingData.empty()) {
        m_summary->setText(tr("This ensemble was opened without its data: no pool to label."));
        return;
    }
    if (!stateIsCurrent()) {
        m_summary->clear();
        return;
    }
    const ActiveState& s = *m_state;
    QString text = tr("%1 · round %2 · %3 labelled · %4 in the pool")
                       .arg(QLatin1String(toString(s.acquisition)))
                       .arg(std::max<int>(0, static_cast<int>(s.rounds.size()) - 1))
                       .arg(formatCount(static_cast<int64_t>(s.labelled.size())),
                            formatCount(static_cast<int64_t>(s.pool.size())));
    if (!s.rounds.empty()) {
        const ActiveRound& r = s.rounds.back();
        text += tr(" · test accuracy %1 %, NLL %2, ECE %3")
                    .arg(100.0 * r.accuracy, 0, 'f', 1)
                    .arg(formatValue(r.nll), formatValue(r.ece));
    }
    // The labelled set by true class: the cold-start effect (a class starved) shows here first.
    const std::vector<int64_t>& counts = s.classCounts;
    if (!counts.empty()) {
        QStringList parts;
        const int64_t fewest = *std::min_element(counts.begin(), counts.end());
        for (std::size_t c = 0; c < counts.size(); ++c) {
            const QString part = QStringLiteral("%1:&nbsp;%2").arg(c).arg(counts[c]);
            parts << (counts[c] == fewest ? QStringLiteral("<b>%1</b>").arg(part) : part);
        }
        text += tr("<br>labelled per class (fewest in bold): %1")
                    .arg(parts.join(QStringLiteral(" · ")));
    }
    if (s.acquisition == Acquisition::BatchBald && !s.scores.pickScores.empty()) {
        QStringList gains;
        for (double g : s.scores.pickScores) {
            gains << formatValue(g);
        }
        text += tr("<br>next batch's greedy gains (nats, pick order): %1 · joint %2")
                    .arg(gains.join(QStringLiteral(", ")),
                         formatValue(s.scores.joint.empty() ? 0.0 : s.scores.joint.back()));
    }
    const int64_t cursor = m_canvas->cursorRow();
    if (cursor >= 0) {
        text += tr("<br>cursor: pool row %1 (Enter labels it)").arg(cursor);
    }
    m_summary->setText(text);
}

void ActiveView::refreshChart() {
    const uint64_t serial = m_state && stateIsCurrent() ? m_state->serial : 0;
    if (serial == m_chartFor && serial != 0) {
        return;
    }
    m_chartFor = serial;
    clearChart(m_chart);
    if (serial == 0) {
        m_key->clear();
        return;
    }
    QStringList key;
    const auto swatch = [](const QColor& color, const QString& glyph, const QString& name) {
        return QStringLiteral("<span style=\"color:%1\"><b>%2</b></span>&nbsp;%3")
            .arg(color.name(), glyph,
                 QString(name).replace(QLatin1Char(' '), QStringLiteral("&nbsp;")));
    };
    std::vector<QLineSeries*> all;
    double lo = std::numeric_limits<double>::infinity();
    double hi = -lo;
    double xHi = 0.0;
    auto add = [&](const ActiveCurve& c, const QString& name, const QPen& pen) {
        all.push_back(curveSeries(c, name, pen));
        for (std::size_t i = 0; i < c.labels.size() && i < c.accuracy.size(); ++i) {
            if (std::isfinite(c.accuracy[i])) {
                lo = std::min(lo, c.accuracy[i]);
                hi = std::max(hi, c.accuracy[i]);
                xHi = std::max(xHi, static_cast<double>(c.labels[i]));
            }
        }
    };
    const ActiveCurve current = m_state->curve();
    key << swatch(acquisitionColor(current.acquisition), QStringLiteral("━━"),
                  QLatin1String(toString(current.acquisition)));
    for (const ActiveCurve& c : m_state->earlier) {
        QPen pen(acquisitionColor(c.acquisition), 1.4, Qt::DashLine);
        const QString name = tr("%1 (earlier)").arg(QLatin1String(toString(c.acquisition)));
        add(c, name, pen);
        key << swatch(acquisitionColor(c.acquisition), QStringLiteral("╍╍"), name);
    }
    add(current, QLatin1String(toString(current.acquisition)),
        QPen(acquisitionColor(current.acquisition), 2.6));
    m_key->setText(key.join(QStringLiteral(" &nbsp; ")));
    if (!(lo <= hi)) {
        lo = 0.0;
        hi = 1.0;
    }
    // At least 0.1 of accuracy tall, so one round's point does not make an axis of 0.001s.
    if (hi - lo < 0.1) {
        const double middle = 0.5 * (lo + hi);
        lo = std::max(0.0, middle - 0.05);
        hi = std::min(1.0, lo + 0.1);
        lo = std::max(0.0, hi - 0.1);
    }
    const double pad = 0.05 * (hi - lo);
    QCategoryAxis* x = makeNiceAxis();
    setNiceRange(x, 0.0, std::max(xHi, 1.0), 4, TickKind::Integer, 0.0);
    // Room past the last tick for the last point's marker, which it often sits on: 5 % of the
    // range is 8 px of the narrowest chart (220 px less its axis), more than the marker's 4.
    x->setMax(x->max() + 0.05 * (x->max() - x->min()));
    x->setTitleText(tr("labels"));
    QCategoryAxis* y = makeNiceAxis();
    setNiceRange(y, std::max(0.0, lo - pad), std::min(1.0, hi + pad), 4, TickKind::Real, 0.0, 1.0);
    y->setTitleText(tr("accuracy"));
    m_chart->addAxis(x, Qt::AlignBottom);
    m_chart->addAxis(y, Qt::AlignLeft);
    for (QLineSeries* s : all) {
        m_chart->addSeries(s);
        s->attachAxis(x);
        s->attachAxis(y);
    }
    // The last point of the current loop, so a loop of one round shows too.
    if (!current.labels.empty()) {
        auto* last = new QScatterSeries;
        last->setMarkerSize(7.0);
        last->setColor(acquisitionColor(current.acquisition));
        last->setBorderColor(Qt::white);
        last->append(static_cast<double>(current.labels.back()), current.accuracy.back());
        m_chart->addSeries(last);
        last->attachAxis(x);
        last->attachAxis(y);
    }
}

void ActiveView::setMessage(const QString& text, bool error) {
    m_status->setMessage(text, error);
}

QString ActiveView::message() const {
    return m_status->message();
}

QPushButton* ActiveView::cancelButton() const {
    return m_status->cancelButton();
}

QString ActiveView::summary() const {
    return m_summary->text();
}

}  // namespace ensemble::ui
