#pragma once

// A chart's legend as a wrapping line of text under it. Qt Charts' own legend keeps its entries
// on one row and cuts each to "ens…" when the row runs out of room (900 x 600 with the
// Experiment panel open); this one wraps between entries and never cuts one.

#include "widgets/wrapping_label.h"

class QChart;

namespace ensemble::ui {

class ChartLegend : public WrappingLabel {
    Q_OBJECT

  public:
    explicit ChartLegend(QWidget* parent = nullptr);
    // Shows the legend of `chart` (its visible markers, in order) here and hides the chart's own.
    void follow(QChart* chart);
    // Reads the markers again: call after the chart's series or their names change.
    void refresh();

  private:
    QChart* m_chart = nullptr;
};

}  // namespace ensemble::ui
