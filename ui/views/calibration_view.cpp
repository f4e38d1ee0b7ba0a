#include "views/calibration_view.h"

#include <QChart>
#include <QChartView>
#include <QHeaderView>
#include <QLegendMarker>
#include <QLineSeries>
#include <QPainter>
#include <QSplitter>
#include <QTableWidget>
#include <QVBoxLayout>
#include <QValueAxis>

#include <algorithm>
#include <cmath>

#include "render/plot_helpers.h"

namespace ensemble::ui {

ReliabilityPlot::ReliabilityPlot(QWidget* parent) : QWidget(parent) {
    setMinimumSize(360, 320);
}

void ReliabilityPlot::setSnapshot(SnapshotPtr snapshot) {
    m_snapshot = std::move(snapshot);
    update();
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
        p.drawText(rect(), Qt::AlignCenter, tr("No ensemble to measure yet."));
        return;
    }
    const Snapshot& s = *m_snapshot;
    const Calibration& cal = s.reliability;
    const double left = 52;
    const double right = 16;
    const double top = 30;
    const double w = width() - left - right;
    const double total = height() - top - 40;
    const QRectF rel(left, top, w, total * 0.68);
    const QRectF hist(left, rel.bottom() + 34, w, total * 0.32 - 34);

    QFont titleFont = font;
    titleFont.setBold(true);
    p.setFont(titleFont);
    p.setPen(plot::kText);
    p.drawText(QPointF(left, 18), tr("Reliability (ensemble, top label)   ECE %1 · MCE %2 · n = %3")
                                      .arg(cal.ece, 0, 'f', 3)
                                      .arg(cal.mce, 0, 'f', 3)
                                      .arg(formatCount(cal.rows)));
    p.setFont(font);

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
            p.drawText(QRectF(x0, rel.bottom() - 16, x1 - x0, 14), Qt::AlignCenter,
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
            p.drawText(QRectF(x0 - 4, std::min(yAcc, yConf) - 15, x1 - x0 + 8, 14), Qt::AlignCenter,
                       n);
        }
    }
    // The diagonal: perfect calibration.
    p.setPen(QPen(QColor(60, 60, 60), 1.2, Qt::DashLine));
    p.drawLine(QPointF(rel.left(), rel.bottom()), QPointF(rel.right(), rel.top()));
    p.setPen(QPen(plot::kAxis, 1));
    p.setBrush(Qt::NoBrush);
    p.drawRect(rel);
    for (double t : niceTicks(0, 1, 5)) {
        const QString text = formatValue(t);
        p.drawText(QPointF(rel.left() - 6 - fm.horizontalAdvance(text),
                           rel.bottom() - t * rel.height() + fm.ascent() / 2 - 1),
                   text);
        p.drawText(QPointF(xAt(t) - fm.horizontalAdvance(text) / 2, rel.bottom() + 4 + fm.ascent()),
                   text);
    }
    p.setPen(plot::kText);
    drawVerticalText(p, QPointF(rel.left() - 38, rel.center().y()), tr("accuracy"));
    p.drawText(QPointF(rel.center().x() - 30, rel.bottom() + 28), tr("confidence"));
    // Legend.
    const QRectF legend(rel.left() + 8, rel.top() + 8, 150, 40);
    p.fillRect(legend, QColor(255, 255, 255, 220));
    p.fillRect(QRectF(legend.left() + 6, legend.top() + 7, 12, 9), QColor(74, 127, 181));
    p.drawText(QPointF(legend.left() + 24, legend.top() + 16), tr("accuracy"));
    p.setBrush(QBrush(QColor(200, 65, 60, 150), Qt::BDiagPattern));
    p.setPen(QPen(QColor(200, 65, 60), 1));
    p.drawRect(QRectF(legend.left() + 6, legend.top() + 23, 12, 9));
    p.setPen(plot::kText);
    p.drawText(QPointF(legend.left() + 24, legend.top() + 32), tr("gap to confidence"));

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
    p.drawText(QPointF(hist.left() - 6 - fm.horizontalAdvance(maxText), hist.top() + fm.ascent()),
               maxText);
    p.drawText(QPointF(hist.left() - 6 - fm.horizontalAdvance(QStringLiteral("0")), hist.bottom()),
               QStringLiteral("0"));
    p.setPen(plot::kText);
    drawVerticalText(p, QPointF(hist.left() - 38, hist.center().y()), tr("count"));
    p.drawText(QPointF(hist.left(), hist.bottom() + 16), tr("confidence histogram (log scale)"));
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
        p.drawText(rect(), Qt::AlignCenter | Qt::TextWordWrap,
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
    p.drawText(QPointF(left, 16), tr("Calibration (ensemble)   gap %1 · n = %2")
                                      .arg(m.calibrationGap, 0, 'f', 3)
                                      .arg(formatCount(m.rows)));
    p.setFont(font);
    p.drawText(QPointF(left, 34), tr("coverage of the central 50 / 90 / 95 %: %1 / %2 / %3 %")
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
    p.setPen(QPen(plot::kAxis, 1));
    p.setBrush(Qt::NoBrush);
    p.drawRect(rel);
    for (double t : niceTicks(0, 1, 5)) {
        const QString text = formatValue(t);
        p.drawText(QPointF(rel.left() - 6 - fm.horizontalAdvance(text),
                           at(0, t).y() + fm.ascent() / 2 - 1),
                   text);
        p.drawText(
            QPointF(at(t, 0).x() - fm.horizontalAdvance(text) / 2, rel.bottom() + 4 + fm.ascent()),
            text);
    }
    p.setPen(plot::kText);
    drawVerticalText(p, QPointF(rel.left() - 38, rel.center().y()), tr("observed share F(y) ≤ q"));
    const QString xName = tr("expected level q");
    p.drawText(QPointF(rel.center().x() - fm.horizontalAdvance(xName) / 2, rel.bottom() + 30),
               xName);
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
    horizontal->addWidget(m_plot);
    horizontal->addWidget(m_sizeView);
    horizontal->setStretchFactor(0, 3);
    horizontal->setStretchFactor(1, 2);
    m_table = new QTableWidget;
    m_table->setColumnCount(5);
    m_table->setHorizontalHeaderLabels(
        {tr("model"), tr("accuracy"), tr("NLL"), tr("Brier"), tr("ECE")});
    m_table->horizontalHeader()->setSectionResizeMode(QHeaderView::Stretch);
    m_table->verticalHeader()->setVisible(false);
    m_table->setEditTriggers(QAbstractItemView::NoEditTriggers);
    m_table->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_table->setAlternatingRowColors(true);
    vertical->addWidget(horizontal);
    vertical->addWidget(m_table);
    vertical->setStretchFactor(0, 3);
    vertical->setStretchFactor(1, 2);
    layout->addWidget(vertical);
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
    m_plot->setSnapshot(m_snapshot);
    if (!m_snapshot) {
        return;
    }
    const Snapshot& s = *m_snapshot;
    if (s.run->regression) {
        refreshRegression();
        return;
    }
    // Figures on the live subset (while training) say so; a stopped run has every test row.
    const QString note = liveSubsetNote(*s.run, s.testRowsMeasured);
    m_table->setHorizontalHeaderLabels({note.isEmpty() ? tr("model") : tr("model (%1)").arg(note),
                                        tr("accuracy"), tr("NLL"), tr("Brier"), tr("ECE")});
    const int members = s.run->members;
    m_table->setRowCount(members + 2);
    auto setRow = [this](int row, const QString& name, const ClassificationMetrics& m, bool bold,
                         bool muted) {
        const QStringList values{
            name,
            std::isfinite(m.accuracy)
                ? QString::number(m.accuracy * 100, 'f', 2) + QStringLiteral(" %")
                : QStringLiteral("–"),
            formatValue(m.nll), formatValue(m.brier), formatValue(m.ece)};
        for (int c = 0; c < values.size(); ++c) {
            QTableWidgetItem* item = m_table->item(row, c);
            if (item == nullptr) {
                item = new QTableWidgetItem;
                m_table->setItem(row, c, item);
            }
            item->setText(values.at(c));
            QFont f = item->font();
            f.setBold(bold);
            item->setFont(f);
            item->setForeground(muted ? QColor(150, 150, 150) : QColor(30, 30, 30));
            item->setTextAlignment(c == 0 ? (Qt::AlignLeft | Qt::AlignVCenter)
                                          : (Qt::AlignRight | Qt::AlignVCenter));
        }
    };
    setRow(0, tr("ensemble (%1 members)").arg(s.includedCount), s.ensembleMetrics, true,
           !s.hasEnsemble);
    setRow(1, tr("mean member"), s.meanMember, true, false);
    for (int k = 0; k < members; ++k) {
        const std::size_t ku = static_cast<std::size_t>(k);
        QString name = tr("member #%1 (lr %2)").arg(k).arg(formatValue(s.run->lr[ku]));
        if (s.diverged[ku]) {
            name += tr(" — diverged");
        } else if (!s.enabled[ku]) {
            name += tr(" — off");
        }
        setRow(k + 2, name,
               ku < s.memberMetrics.size() ? s.memberMetrics[ku] : ClassificationMetrics{}, false,
               !s.included[ku]);
    }
    refreshSizeCurve();
}

void CalibrationView::refreshRegression() {
    const Snapshot& s = *m_snapshot;
    const int members = s.run->members;
    m_table->setHorizontalHeaderLabels(
        {tr("model"), tr("RMSE"), tr("NLL"), tr("95 % coverage"), tr("calibration gap")});
    m_table->setRowCount(members + 2);
    auto optional = [](double v, double scale, const QString& suffix) {
        return std::isfinite(v) ? formatValue(v * scale) + suffix : QStringLiteral("–");
    };
    auto setRow = [&](int row, const QString& name, const RegressionMetrics* m, bool bold,
                      bool muted) {
        const QStringList values{
            name, m != nullptr ? optional(m->rmse, 1, {}) : QStringLiteral("–"),
            m != nullptr ? optional(m->nll, 1, {}) : QStringLiteral("–"),
            m != nullptr ? optional(m->coverage[2], 100, QStringLiteral(" %"))
                         : QStringLiteral("–"),
            m != nullptr ? optional(m->calibrationGap, 1, {}) : QStringLiteral("–")};
        for (int c = 0; c < values.size(); ++c) {
            QTableWidgetItem* item = m_table->item(row, c);
            if (item == nullptr) {
                item = new QTableWidgetItem;
                m_table->setItem(row, c, item);
            }
            item->setText(values.at(c));
            QFont f = item->font();
            f.setBold(bold);
            item->setFont(f);
            item->setForeground(muted ? QColor(150, 150, 150) : QColor(30, 30, 30));
            item->setTextAlignment(c == 0 ? (Qt::AlignLeft | Qt::AlignVCenter)
                                          : (Qt::AlignRight | Qt::AlignVCenter));
        }
    };
    const bool measured = s.hasEnsemble && s.regression.ensemble.rows > 0;
    setRow(0, tr("ensemble (%1 members)").arg(s.includedCount),
           measured ? &s.regression.ensemble : nullptr, true, !s.hasEnsemble);
    // The mean member: the included members' figures averaged.
    RegressionMetrics mean;
    int n = 0;
    for (std::size_t k = 0; measured && k < s.regression.members.size(); ++k) {
        if (k < s.included.size() && s.included[k]) {
            const RegressionMetrics& m = s.regression.members[k];
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
    setRow(1, tr("mean member"), n > 0 ? &mean : nullptr, true, false);
    for (int k = 0; k < members; ++k) {
        const std::size_t ku = static_cast<std::size_t>(k);
        QString name = tr("member #%1 (lr %2)").arg(k).arg(formatValue(s.run->lr[ku]));
        if (s.diverged[ku]) {
            name += tr(" — diverged");
        } else if (!s.enabled[ku]) {
            name += tr(" — off");
        }
        setRow(k + 2, name,
               measured && ku < s.regression.members.size() ? &s.regression.members[ku] : nullptr,
               false, !s.included[ku]);
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
    auto* x = new QValueAxis;
    x->setTitleText(tr("ensemble size m"));
    x->setLabelFormat(QStringLiteral("%d"));
    x->setRange(1, std::max(2, s.regression.sizeCurve.back().members));
    m_sizeChart->addAxis(x, Qt::AlignBottom);
    QLineSeries* series[2] = {nll, rmse};
    const QString titles[2] = {tr("test NLL"), tr("test RMSE")};
    const Qt::Alignment sides[2] = {Qt::AlignLeft, Qt::AlignRight};
    for (int i = 0; i < 2; ++i) {
        auto* y = new QValueAxis;
        y->setTitleText(titles[i]);
        y->setLabelFormat(QStringLiteral("%.3g"));
        if (lo[i] <= hi[i]) {
            const double pad = 0.05 * std::max(hi[i] - lo[i], 1e-3 * std::max(1.0, hi[i]));
            y->setRange(lo[i] - pad, hi[i] + pad);
            y->applyNiceNumbers();
        }
        m_sizeChart->addAxis(y, sides[i]);
        m_sizeChart->addSeries(series[i]);
        series[i]->attachAxis(x);
        series[i]->attachAxis(y);
    }
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
    auto* x = new QValueAxis;
    x->setTitleText(tr("ensemble size m"));
    x->setLabelFormat(QStringLiteral("%d"));
    x->setRange(1, std::max(2, s.sizeCurve.back().members));
    auto* y = new QValueAxis;
    y->setTitleText(tr("test NLL"));
    y->setLabelFormat(QStringLiteral("%.3g"));
    if (lo <= hi) {
        const double pad = 0.05 * std::max(hi - lo, 1e-3);
        y->setRange(std::max(0.0, lo - pad), hi + pad);
        y->applyNiceNumbers();
    }
    m_sizeChart->addAxis(x, Qt::AlignBottom);
    m_sizeChart->addAxis(y, Qt::AlignLeft);
    for (QLineSeries* series : {first, upper, lower, mean}) {
        m_sizeChart->addSeries(series);
        series->attachAxis(x);
        series->attachAxis(y);
    }
    m_sizeChart->legend()->markers(lower).first()->setVisible(false);
}

}  // namespace ensemble::ui
