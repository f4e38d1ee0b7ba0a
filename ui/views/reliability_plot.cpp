// The Calibration view's plot: the run's reliability diagram (classification) or interval
// coverage curve (regression) with the compared ensemble's curve drawn over it.
#include "views/reliability_plot.h"

#include <QPainter>

#include <algorithm>
#include <cmath>
#include <utility>

#include "render/plot_helpers.h"
#include "render/text_fit.h"

namespace ensemble::ui {

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
    p.setPen(QPen(kComparedColour, 2.2));
    p.setBrush(Qt::NoBrush);
    p.drawPolyline(curve);
    p.setBrush(kComparedColour);
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
    p.setPen(QPen(kComparedColour, 2.2));
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
    // No vertical "count" beside the ticks: four-digit counts reach under it (2,000 test rows);
    // the caption names the axis.
    p.setPen(plot::kText);
    drawTextFitted(p, QPointF(hist.left(), hist.bottom() + 16),
                   tr("confidence histogram (count, log scale)"));
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

}  // namespace ensemble::ui
