#include "render/chart_axes.h"

#include <QValueAxis>

#include <algorithm>
#include <cmath>

#include "render/plot_helpers.h"

namespace ensemble::ui {

void setNiceRange(QValueAxis* axis, double lo, double hi, int target, bool integer, double clampLo,
                  double clampHi) {
    if (!std::isfinite(lo) || !std::isfinite(hi) || hi < lo) {
        return;
    }
    if (hi == lo) {
        // One value: a small range around it, so the line sits in the middle.
        const double half = integer ? 1.0 : std::max(std::abs(lo) * 0.05, 1e-3);
        lo -= half;
        hi += half;
    }
    const double step = niceStep(lo, hi, target, integer);
    if (step <= 0.0) {
        return;
    }
    const double first = std::max(clampLo, std::floor(lo / step + 1e-9) * step);
    const double last = std::min(clampHi, std::ceil(hi / step - 1e-9) * step);
    const double top = std::max(last, first + step * 1e-6);
    // Qt Charts lays the ticks out at every setter: a range set before its interval (or the
    // other way round) briefly asks for range / interval tick items. Going from 0..1 to
    // 0..200,000 at 0.2 would make a million of them and freeze the window for minutes, so
    // the step goes first when it grows and last when it shrinks: the state in between never
    // has more ticks than the larger of the old and the new layout.
    const bool dynamic = axis->tickType() == QValueAxis::TicksDynamic;
    const bool stepFirst = !dynamic || step >= axis->tickInterval();
    if (stepFirst) {
        axis->setTickAnchor(0.0);
        axis->setTickInterval(step);
        axis->setTickType(QValueAxis::TicksDynamic);
        axis->setRange(first, top);
    } else {
        axis->setRange(first, top);
        axis->setTickAnchor(0.0);
        axis->setTickInterval(step);
    }
    axis->setLabelFormat(QStringLiteral("%.") + QString::number(tickDecimals(step)) +
                         QStringLiteral("f"));
}

}  // namespace ensemble::ui
