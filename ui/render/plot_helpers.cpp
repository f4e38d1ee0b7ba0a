#include "render/plot_helpers.h"

#include <QLocale>

#include <cmath>

namespace ensemble::ui {

std::vector<double> niceTicks(double lo, double hi, int target) {
    std::vector<double> ticks;
    if (!std::isfinite(lo) || !std::isfinite(hi) || hi <= lo || target < 1) {
        return ticks;
    }
    const double raw = (hi - lo) / target;
    const double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
    const double residual = raw / magnitude;
    double step = magnitude;
    if (residual > 5.0) {
        step = 10.0 * magnitude;
    } else if (residual > 2.0) {
        step = 5.0 * magnitude;
    } else if (residual > 1.0) {
        step = 2.0 * magnitude;
    }
    const double first = std::ceil(lo / step - 1e-9) * step;
    for (double t = first; t <= hi + step * 1e-9; t += step) {
        ticks.push_back(std::abs(t) < step * 1e-9 ? 0.0 : t);
    }
    return ticks;
}

QString formatValue(double v) {
    if (!std::isfinite(v)) {
        return QStringLiteral("–");
    }
    const double a = std::abs(v);
    if (a != 0.0 && (a < 1e-3 || a >= 1e5)) {
        return QString::number(v, 'e', 2);
    }
    return QString::number(v, 'g', 3);
}

QString formatCount(int64_t v) {
    return QLocale(QLocale::English).toString(static_cast<qlonglong>(v));
}

QString formatRate(double v) {
    if (!std::isfinite(v) || v <= 0) {
        return QStringLiteral("–");
    }
    if (v >= 1e6) {
        return QString::number(v / 1e6, 'f', 2) + QStringLiteral("M");
    }
    if (v >= 1e4) {
        return QString::number(v / 1e3, 'f', 1) + QStringLiteral("k");
    }
    return QString::number(v, 'f', v >= 100 ? 0 : 1);
}

void drawVerticalText(QPainter& painter, const QPointF& centre, const QString& text) {
    painter.save();
    painter.translate(centre);
    painter.rotate(-90);
    const QFontMetricsF fm(painter.font());
    const double w = fm.horizontalAdvance(text);
    painter.drawText(QPointF(-w / 2, fm.ascent() / 2 - 1), text);
    painter.restore();
}

}  // namespace ensemble::ui
