#include "views/curves_view.h"

#include <QCategoryAxis>
#include <QChart>
#include <QChartView>
#include <QCheckBox>
#include <QComboBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QLegendMarker>
#include <QLineSeries>
#include <QLogValueAxis>
#include <QPainter>
#include <QPushButton>
#include <QTimer>
#include <QToolTip>
#include <QVBoxLayout>
#include <QValueAxis>

#include <algorithm>
#include <cmath>
#include <limits>

#include "controller/learning_curves.h"
#include "render/chart_axes.h"
#include "render/colormap.h"
#include "render/plot_helpers.h"
#include "render/text_fit.h"
#include "widgets/chart_legend.h"
#include "widgets/lazy_refresh.h"
#include "widgets/reflow_row.h"
#include "widgets/wrapping_label.h"

namespace ensemble::ui {

namespace {

// More lines than this are unreadable and slow Qt Charts down; larger ensembles show an evenly
// spaced subset of their members.
constexpr int kMaxMemberLines = 48;
// The lowest loss the log axis shows: a loss at or below zero is drawn here.
constexpr double kLogFloor = 1e-6;
// While training, the charts are redrawn at most every this many milliseconds.
constexpr qint64 kMinDrawMs = 250;

QColor memberColor(const RunInfo& run, int k) {
    // Members coloured by their learning rate along viridis (log scale), so a sweep reads at a
    // glance; equal rates share one muted colour.
    const auto [lo, hi] = std::minmax_element(run.lr.begin(), run.lr.end());
    if (*hi <= *lo) {
        return QColor(110, 140, 180, 110);
    }
    const double t = (std::log(run.lr[static_cast<std::size_t>(k)]) - std::log(*lo)) /
                     (std::log(*hi) - std::log(*lo));
    QColor c = QColor::fromRgb(sequentialColor(0.1 + 0.8 * t));
    c.setAlpha(140);
    return c;
}

}  // namespace

ColorKey::ColorKey(QWidget* parent) : QWidget(parent) {}

void ColorKey::setRange(const QString& name, double lo, double hi) {
    m_name = name;
    m_lo = lo;
    m_hi = hi;
    setToolTip(tr("Member lines coloured by %1 (log scale): %2").arg(name, text()));
    updateGeometry();
    update();
}

QString ColorKey::text() const {
    return QStringLiteral("%1 %2 … %3").arg(m_name, formatValue(m_lo), formatValue(m_hi));
}

QSize ColorKey::sizeHint() const {
    const QFontMetrics fm(font());
    return {fm.horizontalAdvance(m_name + formatValue(m_lo) + formatValue(m_hi)) + 110,
            fm.height() + 4};
}

void ColorKey::paintEvent(QPaintEvent* /*event*/) {
    QPainter p(this);
    const QFontMetrics fm(font());
    const QString lo = formatValue(m_lo);
    const QString hi = formatValue(m_hi);
    int x = 0;
    const int baseline = (height() + fm.ascent() - fm.descent()) / 2;
    p.setPen(plot::kText);
    drawTextFitted(p, x, baseline, m_name);
    x += fm.horizontalAdvance(m_name) + 6;
    drawTextFitted(p, x, baseline, lo);
    x += fm.horizontalAdvance(lo) + 4;
    const int stripWidth = std::max(20, width() - x - fm.horizontalAdvance(hi) - 4);
    const QRect strip(x, (height() - 10) / 2, stripWidth, 10);
    // The same 0.1 … 0.9 stretch of the map that memberColor() uses.
    for (int i = 0; i < stripWidth; ++i) {
        p.setPen(QColor::fromRgb(sequentialColor(0.1 + 0.8 * i / std::max(1, stripWidth - 1))));
        p.drawLine(strip.left() + i, strip.top(), strip.left() + i, strip.bottom());
    }
    p.setPen(plot::kAxis);
    p.drawRect(strip.adjusted(0, 0, -1, -1));
    p.setPen(plot::kText);
    drawTextFitted(p, strip.right() + 4, baseline, hi);
}

CurvesView::CurvesView(QWidget* parent) : QWidget(parent) {
    m_lazyRefresh = new LazyRefresh(this, [this] { refresh(); });
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(6, 6, 6, 6);
    auto* bar = new QHBoxLayout;
    m_split = new QComboBox;
    m_split->addItem(tr("no member lines"));
    m_split->addItem(tr("members on test"));
    m_split->addItem(tr("members on train"));
    m_split->setCurrentIndex(1);
    m_logBox = new QCheckBox(tr("Log scale (loss)"));
    auto* legend = new WrappingLabel;
    legend->setStyleSheet(QStringLiteral("color: #555;"));
    m_legend = legend;
    bar->addWidget(m_split);
    bar->addWidget(m_logBox);
    bar->addSpacing(12);
    m_key = new ColorKey;
    m_key->setVisible(false);
    bar->addWidget(m_key);
    bar->addStretch(1);
    // Drag across a chart to zoom into those steps (drawn from the finer stored buckets);
    // right-click or this button shows the whole run again.
    m_resetZoom = new QPushButton(tr("Whole run"));
    m_resetZoom->setToolTip(tr("Show every step again (or right-click the chart)"));
    m_resetZoom->setVisible(false);
    connect(m_resetZoom, &QPushButton::clicked, this, &CurvesView::resetZoom);
    bar->addWidget(m_resetZoom);
    layout->addLayout(bar);
    // The legend on its own line: it wraps in a narrow window without squeezing the controls.
    legend->setWordWrap(true);
    layout->addWidget(legend);
    // Side by side from 2 x 360 px, one above the other (the view scrolls) in a narrower window.
    auto* charts = new ReflowRow(360);
    setupChart(m_loss, true);
    setupChart(m_accuracy, false);
    charts->addWidget(m_loss.view);
    charts->addWidget(m_accuracy.view);
    layout->addWidget(charts, 1);
    // Both charts have the same entries: one legend, wrapping, under them.
    m_chartLegend = new ChartLegend;
    m_chartLegend->follow(m_loss.chart);
    m_accuracy.chart->legend()->setVisible(false);
    layout->addWidget(m_chartLegend);
    connect(m_split, &QComboBox::currentIndexChanged, this, [this](int index) {
        m_memberSplit = index;
        m_builtFor = 0;
        refresh();
    });
    connect(m_logBox, &QCheckBox::toggled, this, &CurvesView::setLogScale);
    m_drawTimer.setSingleShot(true);
    connect(&m_drawTimer, &QTimer::timeout, m_lazyRefresh, &LazyRefresh::request);
}

void CurvesView::setupChart(Chart& c, bool loss) {
    c.chart = new QChart;
    c.chart->setTitle(loss ? tr("Loss (NLL, nats)") : tr("Accuracy"));
    c.chart->legend()->setAlignment(Qt::AlignBottom);
    c.chart->setMargins(QMargins(4, 4, 4, 4));
    c.chart->setAnimationOptions(QChart::NoAnimation);
    c.view = new QChartView(c.chart);
    c.view->setRenderHint(QPainter::Antialiasing);
    c.view->setMinimumSize(260, 220);
    QCategoryAxis* x = makeNiceAxis();
    x->setTitleText(tr("step"));
    c.chart->addAxis(x, Qt::AlignBottom);
    c.x = x;
    setYAxis(c, false);
    c.view->setRubberBand(QChartView::HorizontalRubberBand);
    c.view->setToolTip(
        tr("Drag across the chart to zoom into those steps; right-click to zoom out"));
    // The rubber band and right-click zoom the axis; the points for the new range come from
    // the curve store (refresh sets the ranges itself, m_settingRange tells those apart).
    connect(x, &QValueAxis::rangeChanged, this, [this](qreal min, qreal max) {
        if (m_settingRange || !m_drawnCurves) {
            return;
        }
        const double last = std::max<double>(1.0, static_cast<double>(m_drawnCurves->lastStep()));
        if (min <= 0.0 && max >= last) {
            resetZoom();
        } else {
            // Deferred: the chart is in the middle of its own zoom.
            QMetaObject::invokeMethod(
                this, [this, min, max] { zoomTo(min, max); }, Qt::QueuedConnection);
        }
    });
}

void CurvesView::setYAxis(Chart& c, bool log) {
    QAbstractAxis* axis = nullptr;
    if (log) {
        auto* a = new QLogValueAxis;
        a->setBase(10);
        a->setLabelFormat(QStringLiteral("%.3g"));
        a->setMinorTickCount(-1);
        axis = a;
    } else {
        axis = makeNiceAxis();
    }
    if (c.y != nullptr) {
        c.chart->removeAxis(c.y);
        delete c.y;
    }
    c.y = axis;
    c.chart->addAxis(axis, Qt::AlignLeft);
    for (QAbstractSeries* s : c.chart->series()) {
        s->attachAxis(axis);
    }
}

void CurvesView::setLogScale(bool log) {
    if (log == m_log) {
        return;
    }
    m_log = log;
    m_logBox->setChecked(log);
    // The points drawn were made for the other scale (a zero or negative loss on a linear
    // axis): empty the series before a log axis sees them; refresh() fills them again.
    for (QAbstractSeries* series : m_loss.chart->series()) {
        if (auto* xy = qobject_cast<QXYSeries*>(series)) {
            xy->clear();
        }
    }
    setYAxis(m_loss, log);
    m_drawnCurves.reset();
    refresh();
}

void CurvesView::setSnapshot(SnapshotPtr snapshot) {
    m_snapshot = std::move(snapshot);
    if (m_lazyRefresh->postponeWhileHidden()) {
        return;
    }
    // While training, at most a few redraws a second (a curve point can come with every
    // snapshot); a run that stops is drawn at once.
    const qint64 since = m_lastDraw.isValid() ? m_lastDraw.elapsed() : kMinDrawMs;
    if (m_snapshot && m_snapshot->running && since < kMinDrawMs) {
        if (!m_drawTimer.isActive()) {
            m_drawTimer.start(static_cast<int>(kMinDrawMs - since));
        }
        return;
    }
    m_drawTimer.stop();
    refresh();
}

int CurvesView::ensemblePointCount() const {
    return m_loss.ensembleTest != nullptr ? static_cast<int>(m_loss.ensembleTest->count()) : 0;
}

void CurvesView::rebuild() {
    const RunInfo& run = *m_snapshot->run;
    m_shownMembers.clear();
    const int lines = std::min(run.members, kMaxMemberLines);
    for (int i = 0; i < lines; ++i) {
        m_shownMembers.push_back(
            lines > 1 ? static_cast<int>(std::lround(i * (run.members - 1) / double(lines - 1)))
                      : 0);
    }
    {
        const auto [lo, hi] = std::minmax_element(run.lr.begin(), run.lr.end());
        const bool coloured = m_memberSplit != 0 && !run.lr.empty() && *hi > *lo;
        if (coloured) {
            m_key->setRange(tr("lr"), *lo, *hi);
        }
        m_key->setVisible(coloured);
    }
    // Regression: the loss is the Gaussian NLL (MSE for an mse head) in raw target units, and
    // the second chart shows the RMSE instead of the accuracy.
    if (run.regression) {
        m_loss.chart->setTitle(run.likelihood == Likelihood::Gaussian
                                   ? tr("Loss (Gaussian NLL, raw target units)")
                                   : tr("Loss (MSE, raw target units)"));
        m_accuracy.chart->setTitle(tr("RMSE (raw target units)"));
    } else {
        m_loss.chart->setTitle(tr("Loss (NLL, nats)"));
        m_accuracy.chart->setTitle(tr("Accuracy"));
    }
    const QString secondName = run.regression ? tr("RMSE") : tr("accuracy");
    // Test curves measured on the live subset say so.
    const QString note = liveSubsetNote(run, run.evalTest.rows);
    m_legend->setText(
        tr("<b>bold</b>: ensemble (solid test, dashed train) · thin: %1, coloured by lr%2")
            .arg(lines == run.members ? tr("every member")
                                      : tr("%1 of the %2 members").arg(lines).arg(run.members))
            .arg(note.isEmpty() ? QString() : QStringLiteral(" · test: %1").arg(note)));
    for (Chart* c : {&m_loss, &m_accuracy}) {
        c->chart->removeAllSeries();
        c->members.clear();
        const bool loss = c == &m_loss;
        if (m_memberSplit != 0) {
            for (int k : m_shownMembers) {
                auto* s = new QLineSeries;
                s->setName(tr("member #%1").arg(k));
                QPen pen(memberColor(run, k));
                pen.setWidthF(1.0);
                s->setPen(pen);
                c->chart->addSeries(s);
                s->attachAxis(c->x);
                s->attachAxis(c->y);
                c->chart->legend()->markers(s).first()->setVisible(false);
                connect(s, &QLineSeries::hovered, this,
                        [k, loss, secondName](const QPointF& p, bool on) {
                            if (on) {
                                QToolTip::showText(QCursor::pos(),
                                                   tr("member #%1 · step %2\n%3 %4")
                                                       .arg(k)
                                                       .arg(p.x(), 0, 'f', 0)
                                                       .arg(loss ? tr("loss") : secondName)
                                                       .arg(formatValue(p.y())));
                            }
                        });
                c->members.push_back(s);
            }
        }
        c->ensembleTrain = new QLineSeries;
        c->ensembleTrain->setName(tr("ensemble, train"));
        QPen train(QColor(40, 40, 40));
        train.setWidthF(2.4);
        train.setStyle(Qt::DashLine);
        c->ensembleTrain->setPen(train);
        c->ensembleTest = new QLineSeries;
        c->ensembleTest->setName(tr("ensemble, test"));
        QPen test(QColor(200, 65, 60));
        test.setWidthF(2.8);
        c->ensembleTest->setPen(test);
        for (QLineSeries* s : {c->ensembleTrain, c->ensembleTest}) {
            c->chart->addSeries(s);
            s->attachAxis(c->x);
            s->attachAxis(c->y);
            const QString name = s->name();
            connect(s, &QLineSeries::hovered, this,
                    [name, loss, secondName](const QPointF& p, bool on) {
                        if (on) {
                            QToolTip::showText(QCursor::pos(),
                                               QStringLiteral("%1 · step %2\n%3 %4")
                                                   .arg(name)
                                                   .arg(p.x(), 0, 'f', 0)
                                                   .arg(loss ? tr("loss") : secondName)
                                                   .arg(formatValue(p.y())));
                        }
                    });
        }
    }
    m_chartLegend->refresh();
    m_builtFor = m_snapshot->run->runId;
    m_drawnCurves.reset();
    m_zoomed = false;
    m_resetZoom->setVisible(false);
}

QList<QPointF> CurvesView::drawnPoints(const CurveStore& curve, bool loss, int budget) const {
    const bool log = loss && m_log;
    QList<QPointF> out;
    const std::vector<CurvePoint> points =
        m_zoomed ? curve.points(static_cast<int64_t>(std::floor(m_zoomFrom)),
                                static_cast<int64_t>(std::ceil(m_zoomTo)), budget)
                 : curve.points(budget);
    out.reserve(static_cast<qsizetype>(points.size()));
    for (const CurvePoint& p : points) {
        // On the log axis a loss at or below zero (-log p rounds to 0 on a fitted split; a
        // Gaussian NLL can be negative) sits at the floor: Qt Charts cannot place it.
        const double v = log ? std::max<double>(p.value, kLogFloor) : p.value;
        out.append(QPointF(static_cast<double>(p.step), v));
    }
    return out;
}

int CurvesView::pointBudget() const {
    // About one point per pixel column: M4 draws four per bucket, so a bucket per 4 px. The
    // plot is at least 200 px for the count, so a view not laid out yet still draws a curve.
    const double width = std::max(200.0, m_loss.chart->plotArea().width());
    return std::clamp(static_cast<int>(width), 200, 4000);
}

void CurvesView::refresh() {
    if (!m_snapshot) {
        return;
    }
    if (m_builtFor != m_snapshot->run->runId) {
        rebuild();
    }
    std::shared_ptr<const LearningCurves> curves = m_snapshot->curves;
    if (!curves) {
        // A snapshot made without the worker (tests): its history is the whole curve.
        curves = std::make_shared<const LearningCurves>(LearningCurves::fromHistory(
            m_snapshot->run->members, m_snapshot->run->regression, m_snapshot->history));
    }
    const int budget = pointBudget();
    if (curves == m_drawnCurves && budget == m_pointBudget && m_drawnZoom == m_zoomed) {
        return;  // nothing new: a refresh costs nothing between curve points
    }
    m_lastDraw.start();
    m_drawnCurves = curves;
    m_pointBudget = budget;
    m_drawnZoom = m_zoomed;
    const RunInfo& run = *m_snapshot->run;
    const CurveSplit memberSplit = m_memberSplit == 2 ? CurveSplit::Train : CurveSplit::Test;
    double lossLo = std::numeric_limits<double>::infinity();
    double lossHi = -lossLo;
    double accLo = std::numeric_limits<double>::infinity();
    double accHi = -accLo;
    auto track = [](const QList<QPointF>& points, double& lo, double& hi) {
        for (const QPointF& p : points) {
            lo = std::min(lo, p.y());
            hi = std::max(hi, p.y());
        }
    };
    // One replace() per series: the points a series keeps are bounded by the pixels.
    // The thin member lines are context: half the ensemble's points (their extremes still).
    auto draw = [&](QXYSeries* series, const CurveStore& curve, bool loss, bool member = false) {
        const QList<QPointF> points = drawnPoints(curve, loss, member ? budget / 2 : budget);
        track(points, loss ? lossLo : accLo, loss ? lossHi : accHi);
        series->replace(points);
    };
    for (std::size_t line = 0; line < m_loss.members.size(); ++line) {
        const int k = m_shownMembers[line];
        draw(m_loss.members[line], curves->curve(k, memberSplit, CurveFigure::Loss), true, true);
        draw(m_accuracy.members[line], curves->curve(k, memberSplit, CurveFigure::Second), false,
             true);
    }
    draw(m_loss.ensembleTrain, curves->curve(-1, CurveSplit::Train, CurveFigure::Loss), true);
    draw(m_accuracy.ensembleTrain, curves->curve(-1, CurveSplit::Train, CurveFigure::Second),
         false);
    if (run.testRows > 0) {
        draw(m_loss.ensembleTest, curves->curve(-1, CurveSplit::Test, CurveFigure::Loss), true);
        draw(m_accuracy.ensembleTest, curves->curve(-1, CurveSplit::Test, CurveFigure::Second),
             false);
    } else {
        m_loss.ensembleTest->clear();
        m_accuracy.ensembleTest->clear();
    }

    const double xLo = m_zoomed ? m_zoomFrom : 0.0;
    const double xHi =
        m_zoomed ? m_zoomTo : std::max<double>(1.0, static_cast<double>(curves->lastStep()));
    m_settingRange = true;
    for (Chart* c : {&m_loss, &m_accuracy}) {
        // Zoomed: exactly the chosen steps, ticks inside them; else 0 .. the last step on
        // nice ticks.
        const double clampLo = m_zoomed ? xLo : 0.0;
        const double clampHi = m_zoomed ? xHi : 1e300;
        setNiceRange(static_cast<QValueAxis*>(c->x), xLo, xHi, 6, TickKind::Integer, clampLo,
                     clampHi);
    }
    const bool log = m_log;
    const bool regression = run.regression;
    if (lossLo <= lossHi) {
        if (log) {
            // Whole decades: Qt labels a log axis at powers of ten only.
            const LogRange range = decadeRange(lossLo * 0.8, lossHi * 1.25);
            m_loss.y->setRange(range.lo, range.hi);
        } else {
            const double pad = 0.05 * std::max(lossHi - lossLo, 1e-3);
            setNiceRange(static_cast<QValueAxis*>(m_loss.y), lossLo - pad, lossHi + pad, 5,
                         TickKind::Real, 0.0);
        }
    }
    if (accLo <= accHi && regression) {
        const double pad = 0.05 * std::max(accHi - accLo, 1e-3 * std::max(1.0, accHi));
        setNiceRange(static_cast<QValueAxis*>(m_accuracy.y), std::max(0.0, accLo - pad),
                     accHi + pad, 5, TickKind::Real, 0.0);
    } else if (accLo <= accHi) {
        // The axis fits the data (0.93 … 0.99 is not drawn on 0 … 1), on nice ticks.
        const double pad = 0.03 * std::max(accHi - accLo, 0.01);
        setNiceRange(static_cast<QValueAxis*>(m_accuracy.y), accLo - pad, accHi + pad, 5,
                     TickKind::Real, 0.0, 1.0);
    }
    m_settingRange = false;
}

void CurvesView::zoomTo(double from, double to) {
    if (!(to > from)) {
        resetZoom();
        return;
    }
    m_zoomed = true;
    m_zoomFrom = std::max(0.0, from);
    m_zoomTo = to;
    m_resetZoom->setVisible(true);
    m_drawnCurves.reset();  // the points of the new range come from the stored buckets
    refresh();
}

void CurvesView::resetZoom() {
    if (!m_zoomed) {
        return;
    }
    m_zoomed = false;
    m_resetZoom->setVisible(false);
    m_drawnCurves.reset();
    refresh();
}

int CurvesView::drawnPointCount() const {
    int n = 0;
    for (const Chart* c : {&m_loss, &m_accuracy}) {
        for (QAbstractSeries* s : c->chart->series()) {
            if (auto* xy = qobject_cast<QXYSeries*>(s)) {
                n += static_cast<int>(xy->count());
            }
        }
    }
    return n;
}

}  // namespace ensemble::ui
