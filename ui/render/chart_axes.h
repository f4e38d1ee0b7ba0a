#pragma once

// Qt Charts axes with the ticks and labels of render/ticks.h, as the QPainter views have them.
// QValueAxis formats labels with one printf format, so it cannot write "200k" or tell 2.302
// from 2.304 on its own: the axes here are QCategoryAxis with one label at each tick value.

class QCategoryAxis;
class QChart;
class QValueAxis;

#include "render/ticks.h"

namespace ensemble::ui {

// A value axis whose labels setNiceRange() writes (a QCategoryAxis labelled on the values).
QCategoryAxis* makeNiceAxis();

// Sets `axis` to cover [lo, hi] widened outward to the nearest ticks of axisTicks(), labelled
// with its labels when `axis` came from makeNiceAxis() (a plain QValueAxis gets dynamic ticks at
// the same step). A range that is empty or not finite leaves the axis as is. `clampLo`/`clampHi`
// bound the widened range (accuracy never goes outside 0..1).
void setNiceRange(QValueAxis* axis, double lo, double hi, int target = 5,
                  TickKind kind = TickKind::Real, double clampLo = -1e300, double clampHi = 1e300);

// Removes every series and axis of `chart` (the axes deleted), before it is drawn anew.
void clearChart(QChart* chart);

}  // namespace ensemble::ui
