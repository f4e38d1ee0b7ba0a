// The Calibration view: the table of headline figures (classification or regression) with
// the compared ensemble's rows and differences, the ensemble-size curve, and the comparison's
// status row, all read from one snapshot and one comparison. The plot beside them is
// ReliabilityPlot (views/reliability_plot.h).
#include "views/calibration_view.h"

#include <QCategoryAxis>
#include <QChart>
#include <QChartView>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLegendMarker>
#include <QLineSeries>
#include <QPainter>
#include <QPushButton>
#include <QSplitter>
#include <QTableWidget>
#include <QVBoxLayout>
#include <QValueAxis>

#include <algorithm>
#include <cmath>
#include <utility>

#include "config/config_schema.h"
#include "render/chart_axes.h"
#include "render/plot_helpers.h"
#include "views/reliability_plot.h"
#include "widgets/chart_legend.h"
#include "widgets/job_status_row.h"
#include "widgets/lazy_refresh.h"

namespace ensemble::ui {

namespace {

// The size chart's plot is about 100 px tall at 900 x 600: Qt Charts cuts a label to "..."
// when labels stand closer than their height, so its y axis asks for few ticks.
constexpr int kSizeChartYTicks = 3;

// A difference as the table shows it: signed; "–" when either side is not finite.
QString signedValue(double v, double scale = 1.0, const QString& suffix = {}) {
    if (!std::isfinite(v)) {
        return QStringLiteral("–");
    }
    return (v >= 0 ? QStringLiteral("+") : QString()) + formatValue(v * scale) + suffix;
}

// The included members' regression figures averaged (the table's mean member).
RegressionMetrics meanRegressionMember(const RegressionReport& report,
                                       const std::vector<uint8_t>& included) {
    RegressionMetrics mean;
    int n = 0;
    for (std::size_t k = 0; k < report.members.size(); ++k) {
        if (k < included.size() && included[k]) {
            const RegressionMetrics& m = report.members[k];
            mean.rmse += m.rmse;
            mean.nll += m.nll;
            mean.coverage[2] += m.coverage[2];
            mean.calibrationGap += m.calibrationGap;
            ++n;
        }
    }
    if (n > 0) {
        mean.rmse /= n;
        mean.nll /= n;
        mean.coverage[2] /= n;
        mean.calibrationGap /= n;
    }
    return mean;
}

// Whether a comparison was measured on the data `run` uses.
bool sameDataset(const Comparison& c, const RunInfo& run) {
    const nlohmann::json here = run.config.json.value("dataset", nlohmann::json::object());
    return changedKeys(nlohmann::json{{"dataset", here}}, nlohmann::json{{"dataset", c.dataset}})
        .empty();
}

}  // namespace

CalibrationView::CalibrationView(QWidget* parent) : QWidget(parent) {
    m_lazyRefresh = new LazyRefresh(this, [this] { refresh(); });
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(6, 6, 6, 6);
    auto* vertical = new QSplitter(Qt::Vertical);
    auto* horizontal = new QSplitter(Qt::Horizontal);
    m_split = horizontal;
    horizontal->setChildrenCollapsible(false);
    vertical->setChildrenCollapsible(false);
    m_plot = new ReliabilityPlot;
    m_sizeChart = new QChart;
    m_sizeChart->setTitle(tr("Ensemble size (test NLL)"));
    m_sizeChart->setAnimationOptions(QChart::NoAnimation);
    m_sizeChart->legend()->setAlignment(Qt::AlignBottom);
    m_sizeView = new QChartView(m_sizeChart);
    m_sizeView->setRenderHint(QPainter::Antialiasing);
    m_sizeView->setMinimumSize(320, 220);  // a chart's own hint lets it shrink to nothing
    auto* sizeColumn = new QWidget;
    auto* sizeLayout = new QVBoxLayout(sizeColumn);
    sizeLayout->setContentsMargins(0, 0, 0, 0);
    sizeLayout->addWidget(m_sizeView, 1);
    m_sizeLegend = new ChartLegend;
    m_sizeLegend->follow(m_sizeChart);
    sizeLayout->addWidget(m_sizeLegend);
    horizontal->addWidget(m_plot);
    horizontal->addWidget(sizeColumn);
    horizontal->setStretchFactor(0, 3);
    horizontal->setStretchFactor(1, 2);
    m_table = new QTableWidget;
    m_table->setColumnCount(5);
    m_table->setHorizontalHeaderLabels(
        {tr("model"), tr("accuracy"), tr("NLL"), tr("Brier"), tr("ECE")});
    // Every name ("member #3 (lr 0.01)") and figure in full; the table scrolls sideways if need
    // be, the last column takes what is left.
    m_table->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
    m_table->horizontalHeader()->setStretchLastSection(true);
    m_table->verticalHeader()->setVisible(false);
    m_table->setEditTriggers(QAbstractItemView::NoEditTriggers);
    m_table->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_table->setAlternatingRowColors(true);
    vertical->addWidget(horizontal);
    vertical->addWidget(m_table);
    vertical->setStretchFactor(0, 3);
    vertical->setStretchFactor(1, 2);
    auto* compareRow = new QHBoxLayout;
    m_compareButton = new QPushButton(tr("Compare with…"));
    m_compareButton->setObjectName(QStringLiteral("CompareButton"));
    m_compareButton->setToolTip(
        tr("Add a second trained ensemble (.safetensors, trained on the same dataset) to the "
           "table and the reliability plot, with its difference to this run"));
    m_clearButton = new QPushButton(tr("Clear"));
    m_clearButton->setToolTip(tr("Remove the compared ensemble"));
    m_clearButton->setVisible(false);
    m_compareStatus = new JobStatusRow(
        this, tr("Stop measuring the file; the comparison shown before stays (Esc)"));
    connect(m_compareButton, &QPushButton::clicked, this, &CalibrationView::compareRequested);
    connect(m_compareStatus, &JobStatusRow::cancelRequested, this,
            &CalibrationView::cancelComparisonRequested);
    connect(m_clearButton, &QPushButton::clicked, this, [this] {
        setComparison(nullptr);
        setComparisonMessage({});
    });
    compareRow->addWidget(m_compareButton);
    compareRow->addWidget(m_clearButton);
    compareRow->addWidget(m_compareStatus, 1);
    layout->addLayout(compareRow);
    layout->addWidget(vertical, 1);
}

// The count eval prints, so a file reads the same here and there.
QString CalibrationView::ensembleLabel(int included, int members) {
    return included == members ? tr("ensemble (%1 members)").arg(members)
                               : tr("ensemble (%1 of %2 members)").arg(included).arg(members);
}

void CalibrationView::setComparison(std::shared_ptr<const Comparison> comparison) {
    m_comparison = std::move(comparison);
    m_clearButton->setVisible(m_comparison != nullptr);
    if (m_comparison) {
        const Comparison& c = *m_comparison;
        setComparisonMessage(tr("Comparing with %1: %2 of %3 members, step %4, measured on %5 "
                                "test rows (rows in orange; differences are file − this run)")
                                 .arg(c.name)
                                 .arg(c.includedCount)
                                 .arg(c.members)
                                 .arg(formatCount(c.step))
                                 .arg(formatCount(c.rows)));
    }
    if (m_snapshot) {
        refresh();
    } else {
        m_plot->setComparison(m_comparison);
    }
}

void CalibrationView::setComparisonMessage(const QString& text, bool error) {
    m_compareStatus->setMessage(text, error);
}

QString CalibrationView::comparisonMessage() const {
    return m_compareStatus->message();
}

void CalibrationView::startComparison(const QString& name) {
    m_comparing = true;
    m_compareButton->setEnabled(false);
    m_compareStatus->start(tr("Measuring %1 on this run's test rows… (Esc cancels)").arg(name));
}

void CalibrationView::finishComparison(const ComparisonResult& result) {
    m_comparing = false;
    m_compareButton->setEnabled(true);
    m_compareStatus->finish();
    if (result.cancelled) {
        setComparisonMessage(
            m_comparison ? tr("Cancelled: the comparison with %1 stays.").arg(m_comparison->name)
                         : tr("Cancelled: nothing compared."));
    } else if (!result.comparison) {
        setComparisonMessage(result.error, true);
    } else {
        setComparison(result.comparison);
    }
}

void CalibrationView::endJob() {
    // The compared figures are of a file measured on the dataset, not of the run: they stay
    // while the dataset does (refresh() drops them otherwise). Only a measurement under way
    // ends, as its input run is gone.
    if (!std::exchange(m_comparing, false)) {
        return;
    }
    m_compareButton->setEnabled(true);
    m_compareStatus->finish();
    setComparisonMessage(tr("The comparison stopped: a new run began. Compare again."));
}

void CalibrationView::setSnapshot(SnapshotPtr snapshot) {
    m_snapshot = std::move(snapshot);
    m_lazyRefresh->request();
}

void CalibrationView::resizeEvent(QResizeEvent* event) {
    QWidget::resizeEvent(event);
    // The reliability plot and the size curve side by side need about 700 px; below that
    // they stack.
    const Qt::Orientation o = width() < 700 ? Qt::Vertical : Qt::Horizontal;
    if (m_split->orientation() != o) {
        m_split->setOrientation(o);
    }
}

void CalibrationView::refresh() {
    if (m_snapshot && m_comparison && !sameDataset(*m_comparison, *m_snapshot->run)) {
        // A new run on other data: the compared figures were measured on other rows.
        const QString name = m_comparison->name;
        m_comparison.reset();
        m_clearButton->setVisible(false);
        setComparisonMessage(tr("The comparison with %1 was removed: this run's dataset is not "
                                "the one it was measured on.")
                                 .arg(name),
                             true);
    }
    m_plot->setComparison(m_comparison);
    m_plot->setSnapshot(m_snapshot);
    if (!m_snapshot) {
        return;
    }
    const Snapshot& s = *m_snapshot;
    if (s.run->regression) {
        refreshRegression();
        return;
    }
    const Comparison* c = m_comparison && !m_comparison->regression ? m_comparison.get() : nullptr;
    // Figures on the live subset (while training) say so; a stopped run has every test row.
    const QString note = liveSubsetNote(*s.run, s.testRowsMeasured);
    m_table->setHorizontalHeaderLabels({note.isEmpty() ? tr("model") : tr("model (%1)").arg(note),
                                        tr("accuracy"), tr("NLL"), tr("Brier"), tr("ECE")});
    const int members = s.run->members;
    // With a comparison: each headline row, the file's, then their difference; then the run's
    // members and the file's.
    m_table->setRowCount(members + 2 + (c != nullptr ? 4 + c->members : 0));
    auto setCells = [this](int row, const QStringList& values, bool bold, const QColor& colour) {
        for (int col = 0; col < values.size(); ++col) {
            QTableWidgetItem* item = m_table->item(row, col);
            if (item == nullptr) {
                item = new QTableWidgetItem;
                m_table->setItem(row, col, item);
            }
            item->setText(values.at(col));
            QFont f = item->font();
            f.setBold(bold);
            item->setFont(f);
            item->setForeground(colour);
            item->setTextAlignment(col == 0 ? (Qt::AlignLeft | Qt::AlignVCenter)
                                            : (Qt::AlignRight | Qt::AlignVCenter));
        }
    };
    auto setRow = [&](int row, const QString& name, const ClassificationMetrics& m, bool bold,
                      bool muted, const QColor& colour = QColor(30, 30, 30)) {
        setCells(row,
                 {name,
                  std::isfinite(m.accuracy)
                      ? QString::number(m.accuracy * 100, 'f', 2) + QStringLiteral(" %")
                      : QStringLiteral("–"),
                  formatValue(m.nll), formatValue(m.brier), formatValue(m.ece)},
                 bold, muted ? QColor(150, 150, 150) : colour);
    };
    auto setDifference = [&](int row, const ClassificationMetrics& theirs,
                             const ClassificationMetrics& ours) {
        setCells(row,
                 {tr("   difference (%1 − this run)").arg(c->name),
                  signedValue(theirs.accuracy - ours.accuracy, 100, QStringLiteral(" %")),
                  signedValue(theirs.nll - ours.nll), signedValue(theirs.brier - ours.brier),
                  signedValue(theirs.ece - ours.ece)},
                 false, QColor(90, 90, 90));
    };
    int row = 0;
    setRow(row++, ensembleLabel(s.includedCount, s.run->members), s.ensembleMetrics, true,
           !s.hasEnsemble);
    if (c != nullptr) {
        setRow(row++, tr("%1: %2").arg(c->name, ensembleLabel(c->includedCount, c->members)),
               c->ensembleMetrics, true, false, kComparedColour.darker(130));
        setDifference(row++, c->ensembleMetrics, s.ensembleMetrics);
    }
    setRow(row++, tr("mean member"), s.meanMember, true, false);
    if (c != nullptr) {
        setRow(row++, tr("%1: mean member").arg(c->name), c->meanMember, true, false,
               kComparedColour.darker(130));
        setDifference(row++, c->meanMember, s.meanMember);
    }
    for (int k = 0; k < members; ++k) {
        const std::size_t ku = static_cast<std::size_t>(k);
        QString name = tr("member #%1 (lr %2)").arg(k).arg(formatValue(s.run->lr[ku]));
        if (s.diverged[ku]) {
            name += tr(" — diverged");
        } else if (!s.switchedOn[ku]) {
            name += tr(" — off");
        }
        setRow(row++, name,
               ku < s.memberMetrics.size() ? s.memberMetrics[ku] : ClassificationMetrics{}, false,
               !s.included[ku]);
    }
    for (int k = 0; c != nullptr && k < c->members; ++k) {
        const std::size_t ku = static_cast<std::size_t>(k);
        QString name = tr("%1 member #%2 (lr %3)").arg(c->name).arg(k).arg(formatValue(c->lr[ku]));
        if (!c->included[ku]) {
            name += tr(" — diverged");
        }
        setRow(row++, name, c->memberMetrics[ku], false, !c->included[ku],
               kComparedColour.darker(130));
    }
    refreshSizeCurve();
}

void CalibrationView::refreshRegression() {
    const Snapshot& s = *m_snapshot;
    const int members = s.run->members;
    m_table->setHorizontalHeaderLabels(
        {tr("model"), tr("RMSE"), tr("NLL"), tr("95 % coverage"), tr("calibration gap")});
    const Comparison* c = m_comparison && m_comparison->regression ? m_comparison.get() : nullptr;
    m_table->setRowCount(members + 2 + (c != nullptr ? 4 + c->members : 0));
    auto optional = [](double v, double scale, const QString& suffix) {
        return std::isfinite(v) ? formatValue(v * scale) + suffix : QStringLiteral("–");
    };
    const QColor theirColour = kComparedColour.darker(130);
    auto setRow = [&](int row, const QString& name, const RegressionMetrics* m, bool bold,
                      bool muted, const QColor& colour = QColor(30, 30, 30)) {
        const QStringList values{
            name, m != nullptr ? optional(m->rmse, 1, {}) : QStringLiteral("–"),
            m != nullptr ? optional(m->nll, 1, {}) : QStringLiteral("–"),
            m != nullptr ? optional(m->coverage[2], 100, QStringLiteral(" %"))
                         : QStringLiteral("–"),
            m != nullptr ? optional(m->calibrationGap, 1, {}) : QStringLiteral("–")};
        for (int col = 0; col < values.size(); ++col) {
            QTableWidgetItem* item = m_table->item(row, col);
            if (item == nullptr) {
                item = new QTableWidgetItem;
                m_table->setItem(row, col, item);
            }
            item->setText(values.at(col));
            QFont f = item->font();
            f.setBold(bold);
            item->setFont(f);
            item->setForeground(muted ? QColor(150, 150, 150) : colour);
            item->setTextAlignment(col == 0 ? (Qt::AlignLeft | Qt::AlignVCenter)
                                            : (Qt::AlignRight | Qt::AlignVCenter));
        }
    };
    auto setDifference = [&](int row, const RegressionMetrics& theirs,
                             const RegressionMetrics* ours) {
        const QStringList values{
            tr("   difference (%1 − this run)").arg(c->name),
            ours != nullptr ? signedValue(theirs.rmse - ours->rmse) : QStringLiteral("–"),
            ours != nullptr ? signedValue(theirs.nll - ours->nll) : QStringLiteral("–"),
            ours != nullptr
                ? signedValue(theirs.coverage[2] - ours->coverage[2], 100, QStringLiteral(" %"))
                : QStringLiteral("–"),
            ours != nullptr ? signedValue(theirs.calibrationGap - ours->calibrationGap)
                            : QStringLiteral("–")};
        for (int col = 0; col < values.size(); ++col) {
            QTableWidgetItem* item = m_table->item(row, col);
            if (item == nullptr) {
                item = new QTableWidgetItem;
                m_table->setItem(row, col, item);
            }
            item->setText(values.at(col));
            QFont f = item->font();
            f.setBold(false);
            item->setFont(f);
            item->setForeground(QColor(90, 90, 90));
            item->setTextAlignment(col == 0 ? (Qt::AlignLeft | Qt::AlignVCenter)
                                            : (Qt::AlignRight | Qt::AlignVCenter));
        }
    };
    const bool measured = s.hasEnsemble && s.regression.ensemble.rows > 0;
    int row = 0;
    setRow(row++, ensembleLabel(s.includedCount, s.run->members),
           measured ? &s.regression.ensemble : nullptr, true, !s.hasEnsemble);
    if (c != nullptr) {
        setRow(row++, tr("%1: %2").arg(c->name, ensembleLabel(c->includedCount, c->members)),
               &c->regressionReport.ensemble, true, false, theirColour);
        setDifference(row++, c->regressionReport.ensemble,
                      measured ? &s.regression.ensemble : nullptr);
    }
    // The mean member: the included members' figures averaged.
    const int n =
        measured ? static_cast<int>(std::count(s.included.begin(), s.included.end(), uint8_t{1}))
                 : 0;
    const RegressionMetrics mean =
        n > 0 ? meanRegressionMember(s.regression, s.included) : RegressionMetrics{};
    setRow(row++, tr("mean member"), n > 0 ? &mean : nullptr, true, false);
    if (c != nullptr) {
        const RegressionMetrics theirs = meanRegressionMember(c->regressionReport, c->included);
        setRow(row++, tr("%1: mean member").arg(c->name), &theirs, true, false, theirColour);
        setDifference(row++, theirs, n > 0 ? &mean : nullptr);
    }
    for (int k = 0; k < members; ++k) {
        const std::size_t ku = static_cast<std::size_t>(k);
        QString name = tr("member #%1 (lr %2)").arg(k).arg(formatValue(s.run->lr[ku]));
        if (s.diverged[ku]) {
            name += tr(" — diverged");
        } else if (!s.switchedOn[ku]) {
            name += tr(" — off");
        }
        setRow(row++, name,
               measured && ku < s.regression.members.size() ? &s.regression.members[ku] : nullptr,
               false, !s.included[ku]);
    }
    for (int k = 0; c != nullptr && k < c->members; ++k) {
        const std::size_t ku = static_cast<std::size_t>(k);
        QString name = tr("%1 member #%2 (lr %3)").arg(c->name).arg(k).arg(formatValue(c->lr[ku]));
        if (!c->included[ku]) {
            name += tr(" — diverged");
        }
        setRow(row++, name,
               ku < c->regressionReport.members.size() ? &c->regressionReport.members[ku] : nullptr,
               false, !c->included[ku], theirColour);
    }
    // The size curve: NLL and RMSE of the first m included members.
    m_sizeChart->removeAllSeries();
    for (QAbstractAxis* a : m_sizeChart->axes()) {
        m_sizeChart->removeAxis(a);
        delete a;
    }
    m_sizeChart->setTitle(tr("Ensemble size: test NLL and RMSE of the first m members"));
    if (!measured || s.regression.sizeCurve.empty()) {
        return;
    }
    auto* nll = new QLineSeries;
    nll->setName(tr("NLL"));
    nll->setPen(QPen(QColor(200, 65, 60), 2.6));
    auto* rmse = new QLineSeries;
    rmse->setName(tr("RMSE"));
    rmse->setPen(QPen(QColor(74, 127, 181), 2.0));
    double lo[2] = {1e300, 1e300};
    double hi[2] = {-1e300, -1e300};
    for (const RegressionSizePoint& pt : s.regression.sizeCurve) {
        if (std::isfinite(pt.nll)) {
            nll->append(pt.members, pt.nll);
            lo[0] = std::min(lo[0], pt.nll);
            hi[0] = std::max(hi[0], pt.nll);
        }
        if (std::isfinite(pt.rmse)) {
            rmse->append(pt.members, pt.rmse);
            lo[1] = std::min(lo[1], pt.rmse);
            hi[1] = std::max(hi[1], pt.rmse);
        }
    }
    QCategoryAxis* x = makeNiceAxis();
    x->setTitleText(tr("ensemble size m"));
    setNiceRange(x, 1, std::max(2, s.regression.sizeCurve.back().members), 6, TickKind::Integer);
    m_sizeChart->addAxis(x, Qt::AlignBottom);
    QLineSeries* series[2] = {nll, rmse};
    const QString titles[2] = {tr("test NLL"), tr("test RMSE")};
    const Qt::Alignment sides[2] = {Qt::AlignLeft, Qt::AlignRight};
    for (int i = 0; i < 2; ++i) {
        QCategoryAxis* y = makeNiceAxis();
        y->setTitleText(titles[i]);
        if (lo[i] <= hi[i]) {
            const double pad = 0.05 * std::max(hi[i] - lo[i], 1e-3 * std::max(1.0, hi[i]));
            setNiceRange(y, lo[i] - pad, hi[i] + pad, kSizeChartYTicks);
        }
        m_sizeChart->addAxis(y, sides[i]);
        m_sizeChart->addSeries(series[i]);
        series[i]->attachAxis(x);
        series[i]->attachAxis(y);
    }
    m_sizeLegend->refresh();
}

void CalibrationView::refreshSizeCurve() {
    m_sizeChart->removeAllSeries();
    for (QAbstractAxis* a : m_sizeChart->axes()) {
        m_sizeChart->removeAxis(a);
        delete a;
    }
    const Snapshot& s = *m_snapshot;
    m_sizeChart->setTitle(
        s.sizeCurveStep >= 0
            ? tr("Ensemble size: test NLL (step %1)").arg(formatCount(s.sizeCurveStep))
            : tr("Ensemble size: test NLL"));
    if (s.sizeCurve.empty()) {
        return;
    }
    auto* first = new QLineSeries;
    first->setName(tr("first m"));
    first->setPen(QPen(QColor(150, 150, 150), 1.5));
    auto* mean = new QLineSeries;
    mean->setName(tr("random m"));
    mean->setPen(QPen(QColor(200, 65, 60), 2.6));
    auto* upper = new QLineSeries;
    upper->setName(tr("± std"));
    auto* lower = new QLineSeries;
    QPen band(QColor(200, 65, 60, 140), 1.0, Qt::DashLine);
    upper->setPen(band);
    lower->setPen(band);
    double lo = 1e300;
    double hi = -1e300;
    for (const SizeCurvePoint& pt : s.sizeCurve) {
        const double m = pt.members;
        auto add = [&](QLineSeries* series, double v) {
            if (std::isfinite(v)) {
                series->append(m, v);
                lo = std::min(lo, v);
                hi = std::max(hi, v);
            }
        };
        add(first, pt.first.nll);
        add(mean, pt.randomMean.nll);
        add(upper, pt.randomMean.nll + pt.randomStd.nll);
        add(lower, pt.randomMean.nll - pt.randomStd.nll);
    }
    QCategoryAxis* x = makeNiceAxis();
    x->setTitleText(tr("ensemble size m"));
    setNiceRange(x, 1, std::max(2, s.sizeCurve.back().members), 6, TickKind::Integer);
    QCategoryAxis* y = makeNiceAxis();
    y->setTitleText(tr("test NLL"));
    if (lo <= hi) {
        const double pad = 0.05 * std::max(hi - lo, 1e-3);
        setNiceRange(y, std::max(0.0, lo - pad), hi + pad, kSizeChartYTicks);
    }
    m_sizeChart->addAxis(x, Qt::AlignBottom);
    m_sizeChart->addAxis(y, Qt::AlignLeft);
    for (QLineSeries* series : {first, upper, lower, mean}) {
        m_sizeChart->addSeries(series);
        series->attachAxis(x);
        series->attachAxis(y);
    }
    m_sizeChart->legend()->markers(lower).first()->setVisible(false);
    m_sizeLegend->refresh();
}

}  // namespace ensemble::ui
