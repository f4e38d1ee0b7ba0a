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
#include <QToolTip>
#include <QVBoxLayout>
#include <QValueAxis>

#include <algorithm>
#include <cmath>
#include <limits>

#include "render/chart_axes.h"
#include "render/colormap.h"
#include "render/plot_helpers.h"
#include "render/text_fit.h"
#include "widgets/chart_legend.h"
#include "widgets/reflow_row.h"
#include "widgets/wrapping_label.h"

namespace ensemble::ui {

namespace {

// More lines than this are unreadable and slow Qt Charts down; larger ensembles show an evenly
// spaced subset of their members.
constexpr int kMaxMemberLines = 48;
// The lowest loss the log axis shows: a loss at or below zero is drawn here.
constexpr double kLogFloor = 1e-6;

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
    m_pointsShown = 0;
    refresh();
}

void CurvesView::setSnapshot(SnapshotPtr snapshot) {
    m_snapshot = std::move(snapshot);
    if (isVisible()) {
        refresh();
    } else {
        m_stale = true;
    }
}

void CurvesView::showEvent(QShowEvent* event) {
    QWidget::showEvent(event);
    if (m_stale) {
        refresh();
    }
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
                        [this, k, loss, secondName](const QPointF& p, bool on) {
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
    m_pointsShown = 0;
}

void CurvesView::refresh() {
    m_stale = false;
    if (!m_snapshot) {
        return;
    }
    if (m_builtFor != m_snapshot->run->runId) {
        rebuild();
    }
    const auto& history = m_snapshot->history;
    if (history.size() == m_pointsShown) {
        return;
    }
    m_pointsShown = history.size();
    const RunInfo& run = *m_snapshot->run;
    const bool log = m_log;
    // On the log axis a loss at or below zero (-log p rounds to 0 on a fitted split; a
    // Gaussian NLL can be negative) sits at the floor: Qt Charts cannot place it.
    auto valid = [](double v) { return std::isfinite(v); };
    auto shown = [log](double v) { return log ? std::max(v, kLogFloor) : v; };
    double lossLo = std::numeric_limits<double>::infinity();
    double lossHi = -lossLo;
    double accLo = std::numeric_limits<double>::infinity();
    double accHi = -accLo;
    // The second chart: accuracy, or the RMSE of a regression run.
    const bool regression = run.regression;
    auto second = [regression](const SplitMetrics& m) { return regression ? m.rmse : m.accuracy; };
    auto track = [](double v, double& lo, double& hi) {
        lo = std::min(lo, v);
        hi = std::max(hi, v);
    };
    for (std::size_t line = 0; line < m_loss.members.size(); ++line) {
        const int k = m_shownMembers[line];
        QList<QPointF> loss;
        QList<QPointF> acc;
        for (const auto& h : history) {
            const auto& m = (m_memberSplit == 2 ? h->memberTrain : h->memberTest);
            const SplitMetrics& v = m[static_cast<std::size_t>(k)];
            if (valid(v.loss)) {
                loss.append(QPointF(static_cast<double>(h->step), shown(v.loss)));
                track(shown(v.loss), lossLo, lossHi);
            }
            if (std::isfinite(second(v))) {
                acc.append(QPointF(static_cast<double>(h->step), second(v)));
                track(second(v), accLo, accHi);
            }
        }
        m_loss.members[line]->replace(loss);
        m_accuracy.members[line]->replace(acc);
    }
    QList<QPointF> trainLoss;
    QList<QPointF> testLoss;
    QList<QPointF> trainAcc;
    QList<QPointF> testAcc;
    for (const auto& h : history) {
        const double x = static_cast<double>(h->step);
        if (valid(h->ensembleTrain.loss)) {
            trainLoss.append(QPointF(x, shown(h->ensembleTrain.loss)));
            track(shown(h->ensembleTrain.loss), lossLo, lossHi);
        }
        if (valid(h->ensembleTest.loss) && run.testRows > 0) {
            testLoss.append(QPointF(x, shown(h->ensembleTest.loss)));
            track(shown(h->ensembleTest.loss), lossLo, lossHi);
        }
        if (std::isfinite(second(h->ensembleTrain))) {
            trainAcc.append(QPointF(x, second(h->ensembleTrain)));
            track(second(h->ensembleTrain), accLo, accHi);
        }
        if (std::isfinite(second(h->ensembleTest)) && run.testRows > 0) {
            testAcc.append(QPointF(x, second(h->ensembleTest)));
            track(second(h->ensembleTest), accLo, accHi);
        }
    }
    m_loss.ensembleTrain->replace(trainLoss);
    m_loss.ensembleTest->replace(testLoss);
    m_accuracy.ensembleTrain->replace(trainAcc);
    m_accuracy.ensembleTest->replace(testAcc);

    const double xMax = std::max<double>(1.0, static_cast<double>(history.back()->step));
    for (Chart* c : {&m_loss, &m_accuracy}) {
        setNiceRange(static_cast<QValueAxis*>(c->x), 0.0, xMax, 6, TickKind::Integer, 0.0);
    }
    if (lossLo <= lossHi) {
        if (log) {
            m_loss.y->setRange(lossLo * 0.8, lossHi * 1.25);
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
}

}  // namespace ensemble::ui
