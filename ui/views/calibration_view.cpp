// The Calibration view: the reliability plot (classification) or the interval-coverage plot
// (regression), the headline figures, the comparison with a second ensemble and the
// ensemble-size curve. One piece because the plot and the table show the
// same comparison and snapshot; the reliability plot (ReliabilityPlot) could be its own file.
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

#include "config/config_schema.h"
#include "render/chart_axes.h"
#include "render/plot_helpers.h"
#include "render/text_fit.h"
#include "widgets/chart_legend.h"

namespace ensemble::ui {

namespace {

// The size chart's plot is about 100 px tall at 900 x 600: Qt Charts cuts a label to "..."
// when labels stand closer than their height, so its y axis asks for few ticks.
constexpr int kSizeChartYTicks = 3;

// The compared ensemble's colour: its curve, its legend entry and its rows.
const QColor kCompared(222, 128, 30);

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

ReliabilityPlot::ReliabilityPlot(QWidget* parent) : QWidget(parent) {
    setMinimumSize(360, 320);
}

void ReliabilityPlot::setSnapshot(SnapshotPtr snapshot) {
    m_snapshot = std::move(snapshot);
    update();
}

void ReliabilityPlot::setComparison(std::shared_ptr<const Comparison> comparison) {
    m_comparison = std::move(comparison);
    update();
}

void ReliabilityPlot::paintComparison(QPainter& p, const QRectF& area, bool regression) const {
    if (!m_comparison || m_comparison->regression != regression) {
        return;
    }
    const Comparison& c = *m_comparison;
    auto at = [&](double x, double y) {
        return QPointF(area.left() + x * area.width(), area.bottom() - y * area.height());
    };
    QPolygonF curve;
    if (regression) {
        const RegressionMetrics& m = c.regressionReport.ensemble;
        if (!m.probabilistic() || m.calibrationObserved.size() !=
                                      static_cast<std::size_t>(kRegressionCalibrationLevels)) {
            return;
        }
        curve << at(0, 0);
        for (int j = 0; j < kRegressionCalibrationLevels; ++j) {
            curve << at(regressionCalibrationLevel(j),
                        m.calibrationObserved[static_cast<std::size_t>(j)]);
        }
        curve << at(1, 1);
    } else {
        // Accuracy at each non-empty bin's mean confidence, as a line over the run's bars.
        for (const ReliabilityBin& b : c.reliability.bins) {
            if (b.count > 0) {
                curve << at(b.confidence, b.accuracy);
            }
        }
    }
    p.setPen(QPen(kCompared, 2.2));
    p.setBrush(Qt::NoBrush);
    p.drawPolyline(curve);
    p.setBrush(kCompared);
    for (int i = regression ? 1 : 0; i < static_cast<int>(curve.size()) - (regression ? 1 : 0);
         ++i) {
        p.drawEllipse(curve[i], 3.0, 3.0);
    }
    // Its legend entry, at the bottom right of the plot.
    const QString text = regression
                             ? tr("%1: gap %2")
                                   .arg(c.name)
                                   .arg(c.regressionReport.ensemble.calibrationGap, 0, 'f', 3)
                             : tr("%1: ECE %2").arg(c.name).arg(c.reliability.ece, 0, 'f', 3);
    const QFontMetricsF fm(p.font());
    const double w = std::min(area.width() - 16, fm.horizontalAdvance(text) + 34);
    const QRectF box(area.right() - w - 8, area.bottom() - 26, w, 20);
    p.setPen(Qt::NoPen);
    p.setBrush(QColor(255, 255, 255, 225));
    p.drawRect(box);
    p.setPen(QPen(kCompared, 2.2));
    p.drawLine(QPointF(box.left() + 6, box.center().y()),
               QPointF(box.left() + 20, box.center().y()));
    p.setPen(plot::kText);
    drawTextFitted(p, box.adjusted(26, 0, -2, 0), Qt::AlignVCenter | Qt::AlignLeft,
                   fm.elidedText(text, Qt::ElideMiddle, box.width() - 28));
}

void ReliabilityPlot::paintEvent(QPaintEvent* /*event*/) {
    QPainter p(this);
    p.fillRect(rect(), plot::kBackground);
    p.setRenderHint(QPainter::Antialiasing);
    QFont font = p.font();
    font.setPointSizeF(8.5);
    p.setFont(font);
    const QFontMetricsF fm(font);
    if (m_snapshot && m_snapshot->run->regression) {
        paintRegression(p);
        return;
    }
    if (!m_snapshot || !m_snapshot->hasEnsemble || m_snapshot->reliability.bins.empty()) {
        p.setPen(plot::kMuted);
        drawTextFitted(p, rect(), Qt::AlignCenter, tr("No ensemble to measure yet."));
        return;
    }
    const Snapshot& s = *m_snapshot;
    const Calibration& cal = s.reliability;
    const double left = 52;
    const double right = 16;
    // The title and its figures on two lines: one line does not fit beside the size chart at
    // 900 x 600.
    const double lineHeight = fm.height() + 2;
    const double top = 8 + 2 * lineHeight + 18;  // room above the plot for a bar's count
    const double w = width() - left - right;
    const double total = height() - top - 40;
    const QRectF rel(left, top, w, total * 0.68);
    const QRectF hist(left, rel.bottom() + 34, w, total * 0.32 - 34);

    QFont titleFont = font;
    titleFont.setBold(true);
    p.setFont(titleFont);
    p.setPen(plot::kText);
    drawTextFitted(p, QRectF(left, 4, w, lineHeight), Qt::AlignLeft | Qt::AlignVCenter,
                   tr("Reliability (ensemble, top label)"));
    p.setFont(font);
    drawTextFitted(p, QRectF(left, 4 + lineHeight, w, lineHeight), Qt::AlignLeft | Qt::AlignVCenter,
                   tr("ECE %1 · MCE %2 · n = %3")
                       .arg(cal.ece, 0, 'f', 3)
                       .arg(cal.mce, 0, 'f', 3)
                       .arg(formatCount(cal.rows)));

    auto xAt = [&](double v) { return rel.left() + v * rel.width(); };
    // Grid and axes.
    p.setPen(QPen(plot::kGrid, 1));
    for (double t : niceTicks(0, 1, 5)) {
        p.drawLine(QPointF(xAt(t), rel.top()), QPointF(xAt(t), rel.bottom()));
        p.drawLine(QPointF(rel.left(), rel.bottom() - t * rel.height()),
                   QPointF(rel.right(), rel.bottom() - t * rel.height()));
    }
    // Bars: accuracy per bin; the gap to the mean confidence shaded.
    int64_t maxCount = 1;
    for (const ReliabilityBin& b : cal.bins) {
        maxCount = std::max(maxCount, b.count);
    }
    for (const ReliabilityBin& b : cal.bins) {
        const double x0 = xAt(b.lower) + 1;
        const double x1 = xAt(b.upper) - 1;
        if (b.count == 0) {
            p.setPen(QPen(QColor(200, 200, 200), 1, Qt::DotLine));
            p.setBrush(Qt::NoBrush);
            p.drawRect(QRectF(x0, rel.top(), x1 - x0, rel.height()));
            p.setPen(plot::kMuted);
            drawTextFitted(p, QRectF(x0, rel.bottom() - 16, x1 - x0, 14), Qt::AlignCenter,
                           QStringLiteral("∅"));
            continue;
        }
        const double yAcc = rel.bottom() - b.accuracy * rel.height();
        const double yConf = rel.bottom() - b.confidence * rel.height();
        p.setPen(Qt::NoPen);
        p.setBrush(QColor(74, 127, 181));
        p.drawRect(QRectF(x0, yAcc, x1 - x0, rel.bottom() - yAcc));
        QBrush gap(QColor(200, 65, 60, 150), Qt::BDiagPattern);
        p.setBrush(gap);
        p.setPen(QPen(QColor(200, 65, 60, 200), 1));
        p.drawRect(QRectF(x0, std::min(yAcc, yConf), x1 - x0, std::abs(yAcc - yConf)));
        p.setPen(plot::kMuted);
        const QString n = formatCount(b.count);
        if (fm.horizontalAdvance(n) < x1 - x0 + 6) {
            // Above the bar, or inside its top when the bar reaches the plot's top: never over
            // the title.
            const double above = std::min(yAcc, yConf) - fm.height() - 1;
            const bool inside = above < rel.top() - fm.height() - 2;
            const double y = inside ? rel.top() + 2 : above;
            p.setPen(inside ? QColor(Qt::white) : plot::kMuted);
            drawTextFitted(p, QRectF(x0 - 4, y, x1 - x0 + 8, fm.height()), Qt::AlignCenter, n);
        }
    }
    // The diagonal: perfect calibration.
    p.setPen(QPen(QColor(60, 60, 60), 1.2, Qt::DashLine));
    p.drawLine(QPointF(rel.left(), rel.bottom()), QPointF(rel.right(), rel.top()));
    paintComparison(p, rel, false);
    p.setPen(QPen(plot::kAxis, 1));
    p.setBrush(Qt::NoBrush);
    p.drawRect(rel);
    const std::vector<double> ticks = niceTicks(0, 1, 5);
    const QStringList tickText = tickLabels(ticks);
    for (std::size_t i = 0; i < ticks.size(); ++i) {
        const double t = ticks[i];
        const QString& text = tickText[static_cast<int>(i)];
        drawTextFitted(p,
                       QPointF(rel.left() - 6 - fm.horizontalAdvance(text),
                               rel.bottom() - t * rel.height() + fm.ascent() / 2 - 1),
                       text);
        drawTextFitted(
            p, QPointF(xAt(t) - fm.horizontalAdvance(text) / 2, rel.bottom() + 4 + fm.ascent()),
            text);
    }
    p.setPen(plot::kText);
    drawVerticalText(p, QPointF(rel.left() - 38, rel.center().y()), tr("accuracy"));
    drawTextFitted(p, QPointF(rel.center().x() - 30, rel.bottom() + 28), tr("confidence"));
    // Legend.
    const QRectF legend(rel.left() + 8, rel.top() + 8, 150, 40);
    p.fillRect(legend, QColor(255, 255, 255, 220));
    p.fillRect(QRectF(legend.left() + 6, legend.top() + 7, 12, 9), QColor(74, 127, 181));
    drawTextFitted(p, QPointF(legend.left() + 24, legend.top() + 16), tr("accuracy"));
    p.setBrush(QBrush(QColor(200, 65, 60, 150), Qt::BDiagPattern));
    p.setPen(QPen(QColor(200, 65, 60), 1));
    p.drawRect(QRectF(legend.left() + 6, legend.top() + 23, 12, 9));
    p.setPen(plot::kText);
    drawTextFitted(p, QPointF(legend.left() + 24, legend.top() + 32), tr("gap to confidence"));

    // Confidence histogram.
    p.setPen(QPen(plot::kGrid, 1));
    p.drawLine(QPointF(hist.left(), hist.top()), QPointF(hist.right(), hist.top()));
    for (const ReliabilityBin& b : cal.bins) {
        const double x0 = xAt(b.lower) + 1;
        const double x1 = xAt(b.upper) - 1;
        // Log scale: one confident bin would otherwise flatten every other.
        const double h = std::log1p(static_cast<double>(b.count)) /
                         std::log1p(static_cast<double>(maxCount)) * hist.height();
        p.fillRect(QRectF(x0, hist.bottom() - h, x1 - x0, h), QColor(120, 120, 120));
    }
    p.setPen(QPen(plot::kAxis, 1));
    p.setBrush(Qt::NoBrush);
    p.drawRect(hist);
    const QString maxText = formatCount(maxCount);
    drawTextFitted(
        p, QPointF(hist.left() - 6 - fm.horizontalAdvance(maxText), hist.top() + fm.ascent()),
        maxText);
    drawTextFitted(
        p, QPointF(hist.left() - 6 - fm.horizontalAdvance(QStringLiteral("0")), hist.bottom()),
        QStringLiteral("0"));
    p.setPen(plot::kText);
    drawVerticalText(p, QPointF(hist.left() - 38, hist.center().y()), tr("count"));
    drawTextFitted(p, QPointF(hist.left(), hist.bottom() + 16),
                   tr("confidence histogram (log scale)"));
}

void ReliabilityPlot::paintRegression(QPainter& p) const {
    // Kuleshov et al. 2018's reliability curve of a regressor: for each level q the share of
    // test targets with F(y) <= q, F the CDF of the ensemble's N(mu, sigma^2); calibrated on
    // the diagonal.
    const QFontMetricsF fm(p.font());
    const Snapshot& s = *m_snapshot;
    const RegressionMetrics& m = s.regression.ensemble;
    if (!s.hasEnsemble || m.rows == 0 || !m.probabilistic() ||
        m.calibrationObserved.size() != static_cast<std::size_t>(kRegressionCalibrationLevels)) {
        p.setPen(plot::kMuted);
        drawTextFitted(p, rect(), Qt::AlignCenter | Qt::TextWordWrap,
                       s.hasEnsemble && m.rows > 0
                           ? tr("The ensemble's σ is 0 (one mse member): no calibration curve.")
                           : tr("No ensemble to measure yet."));
        return;
    }
    const double left = 52;
    const double right = 16;
    const double top = 46;
    const double side = std::max(40.0, std::min(width() - left - right, height() - top - 44.0));
    const QRectF rel(left, top, side, side);
    QFont titleFont = p.font();
    titleFont.setBold(true);
    const QFont font = p.font();
    p.setFont(titleFont);
    p.setPen(plot::kText);
    const QRectF titleRoom(left, 4, width() - left - right, fm.height() + 2);
    drawTextFitted(p, titleRoom, Qt::AlignLeft | Qt::AlignVCenter,
                   tr("Calibration (ensemble)   gap %1 · n = %2")
                       .arg(m.calibrationGap, 0, 'f', 3)
                       .arg(formatCount(m.rows)));
    p.setFont(font);
    drawTextFitted(p, titleRoom.translated(0, fm.height() + 4), Qt::AlignLeft | Qt::AlignVCenter,
                   tr("coverage of the central 50 / 90 / 95 %: %1 / %2 / %3 %")
                       .arg(100 * m.coverage[0], 0, 'f', 1)
                       .arg(100 * m.coverage[1], 0, 'f', 1)
                       .arg(100 * m.coverage[2], 0, 'f', 1));
    auto at = [&](double q, double observed) {
        return QPointF(rel.left() + q * rel.width(), rel.bottom() - observed * rel.height());
    };
    p.setPen(QPen(plot::kGrid, 1));
    for (double t : niceTicks(0, 1, 5)) {
        p.drawLine(at(t, 0), at(t, 1));
        p.drawLine(at(0, t), at(1, t));
    }
    p.setPen(QPen(QColor(60, 60, 60), 1.2, Qt::DashLine));
    p.drawLine(at(0, 0), at(1, 1));
    // The gap to the diagonal shaded, then the curve with its points.
    QPolygonF curve;
    curve << at(0, 0);
    for (int j = 0; j < kRegressionCalibrationLevels; ++j) {
        curve << at(regressionCalibrationLevel(j),
                    m.calibrationObserved[static_cast<std::size_t>(j)]);
    }
    curve << at(1, 1);
    QPolygonF gap = curve;
    for (int i = static_cast<int>(curve.size()) - 1; i >= 0; --i) {
        const double q = (curve[i].x() - rel.left()) / rel.width();
        gap << at(q, q);
    }
    p.setPen(Qt::NoPen);
    p.setBrush(QBrush(QColor(200, 65, 60, 150), Qt::BDiagPattern));
    p.drawPolygon(gap);
    p.setPen(QPen(QColor(74, 127, 181), 2.2));
    p.setBrush(Qt::NoBrush);
    p.drawPolyline(curve);
    p.setBrush(QColor(74, 127, 181));
    for (int i = 1; i + 1 < static_cast<int>(curve.size()); ++i) {
        p.drawEllipse(curve[i], 2.6, 2.6);
    }
    paintComparison(p, rel, true);
    p.setPen(QPen(plot::kAxis, 1));
    p.setBrush(Qt::NoBrush);
    p.drawRect(rel);
    const std::vector<double> ticks = niceTicks(0, 1, 5);
    const QStringList tickText = tickLabels(ticks);
    for (std::size_t i = 0; i < ticks.size(); ++i) {
        const double t = ticks[i];
        const QString& text = tickText[static_cast<int>(i)];
        drawTextFitted(p,
                       QPointF(rel.left() - 6 - fm.horizontalAdvance(text),
                               at(0, t).y() + fm.ascent() / 2 - 1),
                       text);
        drawTextFitted(
            p,
            QPointF(at(t, 0).x() - fm.horizontalAdvance(text) / 2, rel.bottom() + 4 + fm.ascent()),
            text);
    }
    p.setPen(plot::kText);
    drawVerticalText(p, QPointF(rel.left() - 38, rel.center().y()), tr("observed share F(y) ≤ q"));
    const QString xName = tr("expected level q");
    drawTextFitted(
        p, QPointF(rel.center().x() - fm.horizontalAdvance(xName) / 2, rel.bottom() + 30), xName);
}

CalibrationView::CalibrationView(QWidget* parent) : QWidget(parent) {
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
    m_compareLabel = new QLabel;
    m_compareLabel->setWordWrap(true);
    m_compareLabel->setTextInteractionFlags(Qt::TextSelectableByMouse);
    connect(m_compareButton, &QPushButton::clicked, this, &CalibrationView::compareRequested);
    connect(m_clearButton, &QPushButton::clicked, this, [this] {
        setComparison(nullptr);
        setComparisonMessage({});
    });
    compareRow->addWidget(m_compareButton);
    compareRow->addWidget(m_clearButton);
    compareRow->addWidget(m_compareLabel, 1);
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
    m_compareLabel->setText(text);
    m_compareLabel->setToolTip(text);
    m_compareLabel->setStyleSheet(error ? QStringLiteral("color: #a12b22;") : QString());
}

QString CalibrationView::comparisonMessage() const {
    return m_compareLabel->text();
}

void CalibrationView::setSnapshot(SnapshotPtr snapshot) {
    m_snapshot = std::move(snapshot);
    if (isVisible()) {
        refresh();
    } else {
        m_stale = true;
    }
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

void CalibrationView::showEvent(QShowEvent* event) {
    QWidget::showEvent(event);
    if (m_stale) {
        refresh();
    }
}

void CalibrationView::refresh() {
    m_stale = false;
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
               c->ensembleMetrics, true, false, kCompared.darker(130));
        setDifference(row++, c->ensembleMetrics, s.ensembleMetrics);
    }
    setRow(row++, tr("mean member"), s.meanMember, true, false);
    if (c != nullptr) {
        setRow(row++, tr("%1: mean member").arg(c->name), c->meanMember, true, false,
               kCompared.darker(130));
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
        setRow(row++, name, c->memberMetrics[ku], false, !c->included[ku], kCompared.darker(130));
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
    const QColor theirColour = kCompared.darker(130);
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
