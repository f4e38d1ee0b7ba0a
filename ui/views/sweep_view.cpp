#include "views/sweep_view.h"

#include <QCategoryAxis>
#include <QChart>
#include <QChartView>
#include <QComboBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QLegendMarker>
#include <QLineSeries>
#include <QLogValueAxis>
#include <QScatterSeries>
#include <QToolTip>
#include <QVBoxLayout>
#include <QValueAxis>

#include <algorithm>
#include <cmath>

#include "render/chart_axes.h"
#include "render/plot_helpers.h"
#include "widgets/chart_legend.h"
#include "widgets/lazy_refresh.h"
#include "widgets/reflow_row.h"
#include "widgets/wrapping_label.h"

namespace ensemble::ui {

namespace {

std::vector<double> parameterValues(const RunInfo& run, const QString& key) {
    if (key == QStringLiteral("weight_decay")) {
        return run.weightDecay;
    }
    if (key == QStringLiteral("momentum")) {
        return run.momentum;
    }
    if (key == QStringLiteral("member")) {
        std::vector<double> v(static_cast<std::size_t>(run.members));
        for (int k = 0; k < run.members; ++k) {
            v[static_cast<std::size_t>(k)] = k;
        }
        return v;
    }
    return run.lr;
}

bool varies(const std::vector<double>& v) {
    return !v.empty() &&
           *std::max_element(v.begin(), v.end()) > *std::min_element(v.begin(), v.end());
}

}  // namespace

SweepView::SweepView(QWidget* parent) : QWidget(parent) {
    m_lazyRefresh = new LazyRefresh(this, [this] { refresh(); });
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(6, 6, 6, 6);
    auto* bar = new QHBoxLayout;
    m_parameter = new QComboBox;
    m_parameter->addItem(tr("learning rate"), QStringLiteral("lr"));
    m_parameter->addItem(tr("weight decay"), QStringLiteral("weight_decay"));
    m_parameter->addItem(tr("momentum"), QStringLiteral("momentum"));
    m_parameter->addItem(tr("member index"), QStringLiteral("member"));
    auto* note = new WrappingLabel;
    note->setText(
        tr("each point: one member's test metrics now · lines: the ensemble "
           "and the mean member · red ×: diverged"));
    note->setStyleSheet(QStringLiteral("color: #555;"));
    note->setWordWrap(true);  // a narrow window wraps the note instead of widening the view
    bar->addWidget(new QLabel(tr("against")));
    bar->addWidget(m_parameter);
    bar->addSpacing(12);
    bar->addWidget(note, 1);
    layout->addLayout(bar);
    // Side by side from 2 x 360 px, stacked (the view scrolls) in a narrower window.
    auto* charts = new ReflowRow(360);
    for (QChart** chart : {&m_lossChart, &m_accChart}) {
        *chart = new QChart;
        (*chart)->setAnimationOptions(QChart::NoAnimation);
        (*chart)->legend()->setVisible(false);
        auto* view = new QChartView(*chart);
        view->setRenderHint(QPainter::Antialiasing);
        view->setMinimumSize(260, 220);
        charts->addWidget(view);
    }
    layout->addWidget(charts, 1);
    // Both charts have the same entries: one legend, wrapping, under them.
    m_legend = new ChartLegend;
    layout->addWidget(m_legend);
    connect(m_parameter, &QComboBox::currentIndexChanged, this, [this] { refresh(); });
}

void SweepView::setParameter(const QString& key) {
    const int i = m_parameter->findData(key);
    if (i >= 0) {
        m_parameter->setCurrentIndex(i);
    }
}

QString SweepView::parameter() const {
    return m_parameter->currentData().toString();
}

void SweepView::setSnapshot(SnapshotPtr snapshot) {
    m_snapshot = std::move(snapshot);
    if (m_snapshot && m_chosenFor != m_snapshot->run->runId) {
        // A new run: show the hyperparameter that varies across its members.
        m_chosenFor = m_snapshot->run->runId;
        const RunInfo& run = *m_snapshot->run;
        const QString key = varies(run.lr)            ? QStringLiteral("lr")
                            : varies(run.weightDecay) ? QStringLiteral("weight_decay")
                            : varies(run.momentum)    ? QStringLiteral("momentum")
                                                      : QStringLiteral("member");
        const QSignalBlocker block(m_parameter);
        setParameter(key);
    }
    m_lazyRefresh->request();
}

void SweepView::refresh() {
    if (!m_snapshot) {
        return;
    }
    fill(m_lossChart, true);
    fill(m_accChart, false);
    m_legend->follow(m_lossChart);
}

void SweepView::fill(QChart* chart, bool loss) {
    chart->removeAllSeries();
    for (QAbstractAxis* a : chart->axes()) {
        chart->removeAxis(a);
        delete a;
    }
    const Snapshot& s = *m_snapshot;
    const RunInfo& run = *s.run;
    const QString key = parameter();
    const std::vector<double> x = parameterValues(run, key);
    const bool positive = std::all_of(x.begin(), x.end(), [](double v) { return v > 0; });
    m_log = positive && varies(x) && key != QStringLiteral("member");
    chart->setTitle(loss ? tr("Test NLL per member") : tr("Test accuracy per member"));

    auto* on = new QScatterSeries;
    on->setName(tr("member"));
    on->setMarkerSize(9);
    on->setColor(QColor(74, 127, 181));
    on->setBorderColor(Qt::white);
    auto* off = new QScatterSeries;
    off->setName(tr("switched off"));
    off->setMarkerSize(8);
    off->setColor(QColor(190, 190, 190));
    off->setBorderColor(Qt::white);
    auto* bad = new QScatterSeries;
    bad->setName(tr("diverged"));
    bad->setMarkerShape(QScatterSeries::MarkerShapeRectangle);
    bad->setMarkerSize(8);
    bad->setColor(QColor(192, 57, 43));
    double lo = 1e300;
    double hi = -1e300;
    for (int k = 0; k < run.members; ++k) {
        const std::size_t ku = static_cast<std::size_t>(k);
        if (ku >= s.memberMetrics.size()) {
            break;
        }
        const double v = loss ? s.memberMetrics[ku].nll : s.memberMetrics[ku].accuracy;
        if (!std::isfinite(v)) {
            continue;
        }
        lo = std::min(lo, v);
        hi = std::max(hi, v);
    }
    const double ens = loss ? s.ensembleMetrics.nll : s.ensembleMetrics.accuracy;
    const double mean = loss ? s.meanMember.nll : s.meanMember.accuracy;
    for (double v : {ens, mean}) {
        if (std::isfinite(v)) {
            lo = std::min(lo, v);
            hi = std::max(hi, v);
        }
    }
    if (!(lo <= hi)) {
        lo = 0;
        hi = 1;
    }
    const double pad = 0.08 * std::max(hi - lo, 1e-3);
    const double yTop = hi + pad;
    for (int k = 0; k < run.members && static_cast<std::size_t>(k) < s.memberMetrics.size(); ++k) {
        const std::size_t ku = static_cast<std::size_t>(k);
        const double v = loss ? s.memberMetrics[ku].nll : s.memberMetrics[ku].accuracy;
        if (s.diverged[ku] || !std::isfinite(v)) {
            bad->append(x[ku], loss && lo > 0 && hi / lo > 50 ? hi * 1.3 : yTop - pad / 3);
        } else if (!s.included[ku]) {
            off->append(x[ku], v);
        } else {
            on->append(x[ku], v);
        }
    }
    const auto [xMinIt, xMaxIt] = std::minmax_element(x.begin(), x.end());
    double xLo = *xMinIt;
    double xHi = *xMaxIt;
    if (m_log) {
        xLo /= 1.4;
        xHi *= 1.4;
    } else {
        const double span = std::max(xHi - xLo, 1e-9);
        xLo -= 0.06 * span + (xHi == xLo ? 0.5 : 0.0);
        xHi += 0.06 * span + (xHi == xLo ? 0.5 : 0.0);
    }
    auto* ensembleLine = new QLineSeries;
    ensembleLine->setName(tr("ensemble"));
    ensembleLine->setPen(QPen(QColor(200, 65, 60), 2.4));
    auto* meanLine = new QLineSeries;
    meanLine->setName(tr("mean member"));
    meanLine->setPen(QPen(QColor(80, 80, 80), 1.6, Qt::DashLine));
    if (std::isfinite(ens)) {
        ensembleLine->append(xLo, ens);
        ensembleLine->append(xHi, ens);
    }
    if (std::isfinite(mean)) {
        meanLine->append(xLo, mean);
        meanLine->append(xHi, mean);
    }

    QAbstractAxis* xAxis = nullptr;
    const QString title = m_parameter->currentText();
    if (m_log) {
        auto* a = new QLogValueAxis;
        a->setBase(10);
        a->setLabelFormat(QStringLiteral("%.2g"));
        a->setMinorTickCount(-1);
        // Whole decades: Qt labels a log axis at powers of ten only.
        const LogRange range = decadeRange(xLo, xHi);
        a->setRange(range.lo, range.hi);
        a->setTitleText(title + tr(" (log)"));
        xAxis = a;
    } else {
        QCategoryAxis* a = makeNiceAxis();
        // Member indices: whole numbers only.
        if (key == QStringLiteral("member")) {
            // The padded index range as it is, with ticks on whole member indices only.
            setNiceRange(a, xLo, xHi, 6, TickKind::Integer, xLo, xHi);
        } else {
            setNiceRange(a, xLo, xHi, 5);
        }
        a->setTitleText(title);
        xAxis = a;
    }
    // NLL spanning orders of magnitude (a learning-rate sweep) reads better on a log axis.
    const bool logY = loss && lo > 0 && hi / lo > 50;
    QAbstractAxis* yAxis = nullptr;
    if (logY) {
        auto* a = new QLogValueAxis;
        a->setBase(10);
        a->setMinorTickCount(-1);
        a->setLabelFormat(QStringLiteral("%.2g"));
        const LogRange range = decadeRange(lo / 1.5, hi * 1.5);
        a->setRange(range.lo, range.hi);
        a->setTitleText(tr("test NLL (log)"));
        yAxis = a;
    } else {
        QCategoryAxis* a = makeNiceAxis();
        // Four ticks asked (up to six come): at 900 x 600 the plot is about 100 px tall, and
        // five asked gave seven (0.0995 … 0.1025), 17 px apart, which Qt Charts cut to "...".
        if (loss) {
            setNiceRange(a, lo - pad, yTop, 4, TickKind::Real, 0.0);
        } else {
            // The accuracy axis fits the members' accuracies (not 0 … 1), on nice ticks.
            setNiceRange(a, lo - pad, hi + pad, 4, TickKind::Real, 0.0, 1.0);
        }
        a->setTitleText(loss ? tr("test NLL") : tr("test accuracy"));
        yAxis = a;
    }
    chart->addAxis(xAxis, Qt::AlignBottom);
    chart->addAxis(yAxis, Qt::AlignLeft);
    for (QXYSeries* series :
         std::initializer_list<QXYSeries*>{ensembleLine, meanLine, off, on, bad}) {
        chart->addSeries(series);
        series->attachAxis(xAxis);
        series->attachAxis(yAxis);
        if (series->count() == 0 && series != on) {
            chart->legend()->markers(series).first()->setVisible(false);
        }
    }
    connect(on, &QScatterSeries::hovered, this, [title, loss](const QPointF& p, bool state) {
        if (state) {
            QToolTip::showText(QCursor::pos(),
                               QStringLiteral("%1 = %2\n%3 = %4")
                                   .arg(title, formatValue(p.x()))
                                   .arg(loss ? QStringLiteral("NLL") : QStringLiteral("accuracy"))
                                   .arg(formatValue(p.y())));
        }
    });
}

}  // namespace ensemble::ui
