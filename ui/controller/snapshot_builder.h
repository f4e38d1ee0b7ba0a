#pragma once

// The worker thread's part of a snapshot that is not training: the grid's colour-mapped
// images and contours, and the test-set measurements for the included members. Nothing here
// touches a widget; everything is a value the GUI thread only reads.

#include <cstdint>
#include <vector>

#include "controller/snapshot.h"

namespace ensemble::ui {

// A sequential heatmap (viridis) of `values` over a G x G grid from 0 to their maximum (at least
// `minHigh`, so a nearly constant map does not blow rounding noise up to the full colour range).
HeatImage sequentialHeatImage(const std::vector<double>& values, int size, double minHigh);
// The same map over the values' own range [min, max] (a regression mean, which may be negative).
HeatImage rangeHeatImage(const std::vector<double>& values, int size);

// Fills s.heat, s.memberImages, s.ensembleContour and s.memberContours from s.grid.
// Precondition: s.hasGrid, s.grid filled (members' probabilities; ensemble statistics when
// s.hasEnsemble).
void renderGrid(Snapshot& s);

// Fills s.test, s.memberMetrics, s.meanMember, s.ensembleMetrics, s.reliability,
// s.memberPredicted and s.confusion from the members' predictions of the evaluated test rows.
// Precondition: s.included has K entries.
void measureTest(Snapshot& s, const MemberPredictions& test, const std::vector<int32_t>& labels);

// The ensemble-size curve of the included members (the costly part: O(subsets K'^2 N C)).
// `seed` drives the random subsets.
void measureSizeCurve(Snapshot& s, const MemberPredictions& test,
                      const std::vector<int32_t>& labels, uint64_t seed);

// Regression: s.regression, the report of the evaluated test rows (left empty when no member
// is included or there are no rows).
void measureRegressionTest(Snapshot& s, const MemberPredictions& test);
// Regression, 1-D: s.curveMembers and s.curve from the members' predictions at run->curveX.
void measureRegressionCurve(Snapshot& s, const MemberPredictions& curve);
// Regression, 2-D: s.gridRegression and the heatmaps of its mean and stds (s.heat[0..3]) from
// the members' predictions at the grid points.
void renderRegressionGrid(Snapshot& s, const MemberPredictions& grid);

// The mean of the included members' metrics (NaN fields when none is included).
ClassificationMetrics meanOfMembers(const std::vector<ClassificationMetrics>& members,
                                    const std::vector<uint8_t>& included);

}  // namespace ensemble::ui
