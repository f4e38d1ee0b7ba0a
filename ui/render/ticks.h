#pragma once

// The one tick generator of the app: every axis, painted (QPainter views) or Qt Charts
// (render/chart_axes.h), takes its tick values and labels from here. Ticks sit on nice
// 1-2-5 x 10^n steps; counts and sizes get whole-number steps; labels carry just enough
// digits to tell neighbours apart and large values read 200k / 1.5M instead of 200000.

#include <QString>
#include <QStringList>

#include <vector>

namespace ensemble::ui {

// Whole numbers only (member indices, ensemble sizes, steps) or any real value.
enum class TickKind { Real, Integer };

// The "nice" spacing (1, 2 or 5 x 10^n) that puts about `target` ticks in [lo, hi]; 0 when
// the range is empty or not finite. `integer` keeps the step at 1 or more (member indices).
double niceStep(double lo, double hi, int target = 5, bool integer = false);
// The multiples of niceStep() inside [lo, hi], each computed as i * step (no accumulated
// rounding, so 0.3 is 0.3 and a tick near zero is exactly 0).
std::vector<double> niceTicks(double lo, double hi, int target = 5, bool integer = false);
// Digits after the decimal point that tell ticks `step` apart (0 for steps of 1 and more).
int tickDecimals(double step);
// One label per tick, all different: fixed notation with tickDecimals() of the spacing, SI
// suffixes (k, M, G) from 10^4 on, scientific for spacings under 10^-3; digits are added
// until neighbouring labels differ.
QStringList tickLabels(const std::vector<double>& ticks);

// An axis over [lo, hi] widened outward to the nearest ticks (clamped to [clampLo, clampHi]),
// with its ticks and their labels.
struct AxisTicks {
    double lo = 0.0;
    double hi = 0.0;
    double step = 0.0;  // 0: no ticks (an empty or non-finite range)
    std::vector<double> values;
    QStringList labels;
};
AxisTicks axisTicks(double lo, double hi, int target = 5, TickKind kind = TickKind::Real,
                    double clampLo = -1e300, double clampHi = 1e300);

// A log axis (Qt Charts labels a base-10 log axis at powers of ten only) over [lo, hi]: as
// it is when two powers of ten lie inside, else widened outward to whole decades, so it always
// shows at least two labels: a loss between 0.3 and 0.7 is drawn on 0.1 .. 1 rather than on a
// range with no label at all.
// Precondition: 0 < lo <= hi, both finite (else {lo, hi} unchanged).
struct LogRange {
    double lo = 0.0;
    double hi = 0.0;
};
LogRange decadeRange(double lo, double hi);

}  // namespace ensemble::ui
