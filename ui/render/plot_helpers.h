#pragma once

// Small drawing helpers shared by the QPainter views: nice tick values, number formatting,
// and the palette of the plots.

#include <QColor>
#include <QPainter>
#include <QRectF>
#include <QString>
#include <QStringList>

#include <vector>

namespace ensemble::ui {

// The "nice" spacing (1, 2 or 5 x 10^n) that puts about `target` ticks in [lo, hi]; 0 when
// the range is empty or not finite. `integer` keeps the step at 1 or more (member indices).
double niceStep(double lo, double hi, int target = 5, bool integer = false);
// The multiples of niceStep() inside [lo, hi], each computed as i * step (no accumulated
// rounding, so 0.3 is 0.3 and a tick near zero is exactly 0).
std::vector<double> niceTicks(double lo, double hi, int target = 5, bool integer = false);
// Digits after the decimal point that tell ticks `step` apart (0 for steps of 1 and more).
int tickDecimals(double step);
// One label per tick, all different: fixed notation with tickDecimals() of the spacing, or
// scientific outside [1e-3, 1e6) with as many digits as it takes to keep them distinct.
QStringList tickLabels(const std::vector<double>& ticks);

// Compact number text: 3 significant digits, scientific outside [1e-3, 1e5).
QString formatValue(double v);
// 1234567 -> "1,234,567".
QString formatCount(int64_t v);
// 12345.6 -> "12.3k".
QString formatRate(double v);

namespace plot {
inline const QColor kAxis(90, 90, 90);
inline const QColor kGrid(225, 225, 225);
inline const QColor kText(50, 50, 50);
inline const QColor kMuted(130, 130, 130);
inline const QColor kBackground(252, 252, 252);
inline const QColor kAccent(230, 126, 34);  // selection, highlights
}  // namespace plot

// Draws `text` centred at `p` rotated by -90 degrees (axis titles).
void drawVerticalText(QPainter& painter, const QPointF& centre, const QString& text);

}  // namespace ensemble::ui
