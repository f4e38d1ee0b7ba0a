#include "render/chart_axes.h"

#include <QCategoryAxis>
#include <QChart>
#include <QValueAxis>

#include <algorithm>
#include <cmath>

namespace ensemble::ui {

QCategoryAxis* makeNiceAxis() {
    auto* axis = new QCategoryAxis;
    axis->setLabelsPosition(QCategoryAxis::AxisLabelsPositionOnValue);
    return axis;
}

void setNiceRange(QValueAxis* axis, double lo, double hi, int target, TickKind kind, double clampLo,
                  double clampHi) {
    const AxisTicks ticks = axisTicks(lo, hi, target, kind, clampLo, clampHi);
    if (ticks.step <= 0.0) {
        return;
    }
    auto* categories = qobject_cast<QCategoryAxis*>(axis);
    if (categories == nullptr) {
        // Qt Charts lays the ticks out at every setter: a range set before its interval (or
        // the other way round) briefly asks for range / interval tick items. Going from 0..1
        // to 0..200,000 at 0.2 would make a million of them and freeze the window for
        // minutes, so the step goes first when it grows and last when it shrinks: the state
        // in between never has more ticks than the larger of the old and the new layout.
        const bool dynamic = axis->tickType() == QValueAxis::TicksDynamic;
        if (!dynamic || ticks.step >= axis->tickInterval()) {
            axis->setTickAnchor(0.0);
            axis->setTickInterval(ticks.step);
            axis->setTickType(QValueAxis::TicksDynamic);
            axis->setRange(ticks.lo, ticks.hi);
        } else {
            axis->setRange(ticks.lo, ticks.hi);
            axis->setTickAnchor(0.0);
            axis->setTickInterval(ticks.step);
        }
        axis->setLabelFormat(QStringLiteral("%.") + QString::number(tickDecimals(ticks.step)) +
                             QStringLiteral("f"));
        return;
    }
    // Live views set the same range many times a second: rebuild only what changed.
    if (categories->min() == ticks.lo && categories->max() == ticks.hi &&
        categories->categoriesLabels() == ticks.labels) {
        return;
    }
    for (const QString& label : categories->categoriesLabels()) {
        categories->remove(label);
    }
    categories->setStartValue(ticks.lo);
    for (std::size_t i = 0; i < ticks.values.size(); ++i) {
        categories->append(ticks.labels[static_cast<int>(i)], ticks.values[i]);
    }
    categories->setRange(ticks.lo, ticks.hi);
}

void clearChart(QChart* chart) {
    chart->removeAllSeries();
    for (QAbstractAxis* a : chart->axes()) {
        chart->removeAxis(a);
        delete a;
    }
}

}  // namespace ensemble::ui
