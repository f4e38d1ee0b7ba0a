#pragma once

// Small drawing helpers shared by the QPainter views: nice tick values, number formatting,
// and the palette of the plots.

#include <QColor>
#include <QPainter>
#include <QRectF>
#include <QString>
#include <QStringList>

#include <vector>

#include "render/ticks.h"

namespace ensemble::ui {

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

// The largest rectangle of width / height `aspect` centred in `area` (a plot of the plane
// drawn without distortion).
QRectF fitAspect(const QRectF& area, double aspect);

// Draws `text` centred at `p` rotated by -90 degrees (axis titles).
void drawVerticalText(QPainter& painter, const QPointF& centre, const QString& text);

}  // namespace ensemble::ui
