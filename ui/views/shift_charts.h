#pragma once

// The Shift view's charts (Qt Charts), filled from ShiftFigures: a metric against the shift's
// level in the style of Ovadia et al. 2019, figure 2 (the ensemble solid, the members' median
// with their min–max band as "a single network", both dashed after temperature scaling), the
// conformal coverage against 1 − α, and the risk–coverage curve of one level.

#include <QString>

#include <limits>
#include <vector>

#include "controller/shift_figures.h"

class QChart;

namespace ensemble::ui {

// The key of every chart's lines (rich text): one legend for all of them.
QString shiftChartsKey();

// The metric's title for people ("accuracy", "NLL", ...) and its CSV column stem.
QString shiftMetricTitle(ShiftMetric metric);
const char* shiftMetricKey(ShiftMetric metric);

// Fills `chart` with `series` against `levels` (x axis titled `xTitle`), y titled `yTitle`, a
// vertical marker at `current`. `reference`, when finite, is a horizontal line (1 − α) named
// `referenceName`. Everything the chart held before is removed.
void fillShiftChart(QChart* chart, const QString& title, const std::vector<double>& levels,
                    const ShiftSeries& series, const QString& xTitle, const QString& yTitle,
                    double current, bool probabilityAxis,
                    double reference = std::numeric_limits<double>::quiet_NaN(),
                    const QString& referenceName = {});

// The risk–coverage curve of one level (coverage on x, risk = error rate on y).
void fillRiskCoverageChart(QChart* chart, const std::vector<QPointF>& curve, const QString& title);

}  // namespace ensemble::ui
