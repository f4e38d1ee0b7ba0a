#pragma once

// A reproduction's figure: ours drawn beside the paper's numbers, as one SVG document that the
// CLI writes (`ensemble-cli reproduce --figure F.svg`) and the app shows and exports, so both
// draw a result the same way. The layout follows the row's runner (reproduce.h, RunnerKind):
//   UciRegression  a small panel per judged figure of each level: the paper's value ± 2 spread
//                  (as judged) beside ours (mean ± 2 se) and each split's value, in the level's
//                  own units; failed verdicts in red
//   CubicCurves    a panel per level as in the paper: y = x^3, the training points, our mean and
//                  ± 3 sigma band on [-6, 6] from the first run's curves; each check's numbers
//                  below its panel
//   MnistSizeCurve, MnistShift  their own panels (figure_mnist.h): curves against M or the shift
//   MnistActive    test accuracy against labels per acquisition function, the paper's points
//   otherwise      a panel per figure with the levels side by side: ours ± 2 se and every run's
//                  value; a band check's printed range as a band, a claim's threshold as a line
//                  with its verdict, a numeric check's value ± 2 spread beside ours
// and where nothing can be plotted (no run finished, nothing finite), the table of ours against
// the paper as rows of text. A caption names the source of every published number, the row's
// deviations from the paper and every value left out because it was not finite.

#include <string>

#include "reproduce/reproduce.h"

namespace ensemble::reproduce {

// The figure of `result` as a self-contained SVG 1.1 document (UTF-8; no external references;
// generic font families; every element Qt SVG draws). Deterministic: the same result gives the
// same bytes, whatever the locale. Reads result.rows, so judge() first.
std::string figureSvg(const ReproductionResult& result);

}  // namespace ensemble::reproduce
