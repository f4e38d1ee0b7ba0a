#include "render/ticks.h"

#include <algorithm>
#include <cmath>

namespace ensemble::ui {

namespace {

// 1.50 -> 1.5, 2.00 -> 2 (SI labels read "1.5M", "2M"); other text unchanged.
QString trimZeros(QString text) {
    if (!text.contains(QLatin1Char('.'))) {
        return text;
    }
    while (text.endsWith(QLatin1Char('0'))) {
        text.chop(1);
    }
    if (text.endsWith(QLatin1Char('.'))) {
        text.chop(1);
    }
    return text;
}

enum class Notation { Fixed, SI, Scientific };

QString tickText(double t, Notation notation, int digits, double unit, QChar suffix) {
    if (t == 0.0 && notation != Notation::Fixed) {
        return QStringLiteral("0");
    }
    switch (notation) {
        case Notation::Fixed:
            return QString::number(t, 'f', digits);
        case Notation::SI:
            return trimZeros(QString::number(t / unit, 'f', digits)) + suffix;
        case Notation::Scientific:
            return QString::number(t, 'e', digits);
    }
    return {};
}

// The 1-2-5 step below `step`: 5 -> 2, 2 -> 1, 1 -> 0.5 (times its power of ten).
double smallerNiceStep(double step) {
    const double magnitude = std::pow(10.0, std::floor(std::log10(step) + 1e-9));
    return std::abs(step / magnitude - 5.0) < 1e-6 ? step / 2.5 : step / 2.0;
}

}  // namespace

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
    double step = niceStep(lo, hi, target, integer);
    if (step <= 0.0) {
        return ticks;
    }
    // A range just short of a step's two multiples ([0.0001, 0.9999] with step 0.5) would get
    // one tick, which says nothing of the scale: the next smaller 1-2-5 step until two fit.
    for (int finer = 0; finer < 3; ++finer) {
        const double smaller = smallerNiceStep(step);
        if (std::floor(hi / step + 1e-9) > std::ceil(lo / step - 1e-9) ||
            (integer && smaller < 1.0)) {
            break;
        }
        step = smaller;
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
    // Steps are 1, 2 or 5 x 10^n: the magnitude's digits tell them apart.
    return std::max(0, static_cast<int>(-std::floor(std::log10(step) + 1e-9)));
}

QStringList tickLabels(const std::vector<double>& ticks) {
    if (ticks.empty()) {
        return {};
    }
    // One tick has no spacing to read its digits from: its own digits (up to 6) say it.
    if (ticks.size() == 1) {
        const double t = ticks.front();
        int digits = 0;
        while (digits < 6 &&
               std::abs(t - std::round(t * std::pow(10.0, digits)) / std::pow(10.0, digits)) >
                   1e-9 * std::max(1.0, std::abs(t))) {
            ++digits;
        }
        return {trimZeros(QString::number(t, 'f', digits))};
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
    Notation notation = Notation::Fixed;
    double unit = 1.0;
    QChar suffix;
    if (largest > 0.0 && largest < 1e-3) {
        notation = Notation::Scientific;
    } else if (largest >= 1e4) {
        notation = Notation::SI;
        const int thousands = std::min(3, static_cast<int>(std::floor(std::log10(largest) / 3.0)));
        unit = std::pow(1000.0, thousands);
        suffix = QLatin1Char("kMG"[thousands - 1]);
    }
    int digits = notation == Notation::Scientific ? 1 : tickDecimals(step / unit);
    auto make = [&](int d) {
        QStringList out;
        for (double t : ticks) {
            out << tickText(t, notation, d, unit, suffix);
        }
        return out;
    };
    QStringList labels = make(digits);
    // Distinct labels for distinct ticks: add digits until they differ (bounded).
    for (int extra = 0; extra < 8 && QStringList(labels).removeDuplicates() > 0; ++extra) {
        labels = make(++digits);
    }
    return labels;
}

AxisTicks axisTicks(double lo, double hi, int target, TickKind kind, double clampLo,
                    double clampHi) {
    AxisTicks axis;
    if (!std::isfinite(lo) || !std::isfinite(hi) || hi < lo) {
        return axis;
    }
    const bool integer = kind == TickKind::Integer;
    if (hi == lo) {
        // One value: a small range around it, so the line sits in the middle.
        const double half = integer ? 1.0 : std::max(std::abs(lo) * 0.05, 1e-3);
        lo -= half;
        hi += half;
    }
    axis.step = niceStep(lo, hi, target, integer);
    if (axis.step <= 0.0) {
        return axis;
    }
    axis.lo = std::max(clampLo, std::floor(lo / axis.step + 1e-9) * axis.step);
    axis.hi = std::min(clampHi, std::ceil(hi / axis.step - 1e-9) * axis.step);
    axis.hi = std::max(axis.hi, axis.lo + axis.step * 1e-6);
    // The ticks of the step chosen for [lo, hi] (niceTicks would re-pick it for the widened range).
    const double first = std::ceil(axis.lo / axis.step - 1e-9);
    const double last = std::floor(axis.hi / axis.step + 1e-9);
    for (double i = first; i <= last; i += 1.0) {
        axis.values.push_back(i == 0.0 ? 0.0 : i * axis.step);
    }
    axis.labels = tickLabels(axis.values);
    return axis;
}

LogRange decadeRange(double lo, double hi) {
    if (!(lo > 0.0) || !(hi >= lo) || !std::isfinite(lo) || !std::isfinite(hi)) {
        return {lo, hi};
    }
    // Two powers of ten inside already: two labels, the range stays as the data want it.
    if (std::floor(std::log10(hi) + 1e-9) - std::ceil(std::log10(lo) - 1e-9) >= 1.0) {
        return {lo, hi};
    }
    // A small slack keeps a value that is a power of ten (up to rounding) on its own decade.
    const double first = std::floor(std::log10(lo) + 1e-9);
    double last = std::ceil(std::log10(hi) - 1e-9);
    if (last <= first) {
        last = first + 1.0;
    }
    return {std::pow(10.0, first), std::pow(10.0, last)};
}

}  // namespace ensemble::ui
