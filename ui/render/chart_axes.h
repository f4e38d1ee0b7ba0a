#pragma once

// Qt Charts axes with the same ticks as the QPainter views: nice 1-2-5 steps anchored at 0,
// labels with just enough decimals to tell them apart (QValueAxis's own tick count splits a
// range into equal parts, which gives 0.233, 0.467 … or repeated labels).

class QValueAxis;

namespace ensemble::ui {

// Sets `axis` to cover [lo, hi] widened outward to the nearest ticks, with dynamic ticks at
// niceStep(lo, hi, target, integer). A range that is empty or not finite leaves the axis as is.
// `clampLo`/`clampHi` bound the widened range (accuracy never goes outside 0..1).
void setNiceRange(QValueAxis* axis, double lo, double hi, int target = 5, bool integer = false,
                  double clampLo = -1e300, double clampHi = 1e300);

}  // namespace ensemble::ui
