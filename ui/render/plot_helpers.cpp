#include "render/plot_helpers.h"

#include <QLocale>

#include <algorithm>
#include <cmath>

namespace ensemble::ui {

double niceStep(double lo, double hi, int target, bool integer) {
    if (!std::isfinite(lo) || !std::isfinite(hi) || hi <= lo || target < 1) {
        return 0.0;
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
    return integer ? std::max(1.0, step) : step;
}

std::vector<double> niceTicks(double lo, double hi, int target, bool integer) {
    std::vector<double> ticks;
    const double step = niceStep(lo, hi, target, integer);
    if (step <= 0.0) {
        return ticks;
    }
    const double first = std::ceil(lo / step - 1e-9);
    const double last = std::floor(hi / step + 1e-9);
    for (double i = first; i <= last; i += 1.0) {
        const double t = i * step;
        ticks.push_back(i == 0.0 ? 0.0 : t);
    }
    return ticks;
}

int tickDecimals(double step) {
    if (!(step > 0.0) || !std::isfinite(step)) {
        return 0;
    }
    // 0.25 needs two digits although its magnitude says one: steps are 1, 2 or 5 x 10^n, so
    // one more digit than the magnitude is needed only for halves of 10^n (2.5 never occurs).
    return std::max(0, static_cast<int>(-std::floor(std::log10(step) + 1e-9)));
}

QStringList tickLabels(const std::vector<double>& ticks) {
    QStringList labels;
    if (ticks.empty()) {
        return labels;
    }
    double step = 0.0;
    double largest = 0.0;
    for (std::size_t i = 0; i < ticks.size(); ++i) {
        largest = std::max(largest, std::abs(ticks[i]));
        if (i > 0) {
            const double d = std::abs(ticks[i] - ticks[i - 1]);
            step = step == 0.0 ? d : std::min(step, d);
        }
    }
    const bool scientific = largest >= 1e6 || (step > 0.0 && step < 1e-3);
    auto make = [&](int digits) {
        QStringList out;
        for (double t : ticks) {
            out << (scientific && t != 0.0 ? QString::number(t, 'e', digits)
                                           : QString::number(t, 'f', digits));
        }
        return out;
    };
    int digits = scientific ? 1 : tickDecimals(step);
    labels = make(digits);
    // Distinct labels for distinct ticks: add digits until they differ (bounded).
    for (int extra = 0; extra < 8 && labels.removeDuplicates() > 0; ++extra) {
        labels = make(++digits);
    }
    return make(digits);
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
