#pragma once

// What the Shift view draws, read from the engine's shift report (shift/shift_report.h) by
// shiftFigures(): per level, a metric's value for the ensemble, the members' median and range
// ("a single network", Ovadia et al. 2019, figure 2) and both after temperature scaling. Plain
// values, so the charts and the CSV read one structure and never the report's layout.

#include <QPointF>
#include <QString>

#include <array>
#include <vector>

namespace ensemble::ui {

// One metric against the level: the ensemble's value and the members' median, smallest and
// largest, as measured, then after temperature scaling (each empty when not measured).
struct ShiftSeries {
    std::vector<double> ensemble;
    std::vector<double> membersMedian;
    std::vector<double> membersMin;
    std::vector<double> membersMax;
    std::vector<double> ensembleTs;
    std::vector<double> membersTsMedian;
    std::vector<double> membersTsMin;
    std::vector<double> membersTsMax;
};

// The metrics of Ovadia's figure 2, in the order the charts stand.
enum class ShiftMetric { Accuracy, Nll, Brier, Ece };
inline constexpr int kShiftMetricCount = 4;

struct ShiftFigures {
    bool regression = false;  // the four charts: RMSE, NLL, 90% coverage, interval width
    std::array<QString, kShiftMetricCount> titles;  // the four charts' titles
    std::array<bool, kShiftMetricCount> rates{};    // whose values lie in 0..1
    QString coverageTitle;
    QString shift;  // "rotate", "translate", "noise" or "scale"
    QString unit;   // the level's unit for the axis ("°", "px", "σ", "×")
    std::vector<double> levels;
    double alpha = 0.1;
    std::array<ShiftSeries, kShiftMetricCount> metrics;
    // The conformal set's coverage (LAC; regression: the interval's) on the measuring half,
    // against 1 − alpha.
    ShiftSeries coverage;
    ShiftSeries setSize;
    ShiftSeries aurc;
    // Per level: the ensemble's risk–coverage curve (coverage, risk), most confident first
    // (empty for regression).
    std::vector<std::vector<QPointF>> riskCoverage;
};

}  // namespace ensemble::ui
