#pragma once

// The MNIST rows' figures, drawn into figure.cpp's document (figure.h gives the layout per
// runner): MnistSizeCurve, Figure 2a's two panels (test error and NLL against the number of
// networks M, a line per level, the paper's printed range as a band, each verdict below);
// MnistShift, accuracy, Brier and ECE against the rotation and the translation, a line per
// method (one network, temperature scaling, the ensemble), each claim's count of levels below.
// MnistLenet keeps figure.cpp's checks side by side (ours beside the paper's number);
// MnistActive, test accuracy against labels with the paper's points (figure_active.cpp).

#include <string>
#include <vector>

#include "reproduce/reproduce.h"
#include "reproduce/svg_plot.h"

namespace ensemble::reproduce {

// What an MNIST figure draws into: figure.cpp's document, its next free pixel row, the
// planned levels, and the legend and caption notes it gathers.
struct MnistFigure {
    const ReproductionResult& result;
    const std::vector<std::string>& levels;
    svg::Document& doc;
    double& y;
    std::vector<svg::LegendEntry>& legend;
    std::vector<std::string>& notes;
};

// Draws the row's panels; false when the row has no figure of its own or nothing was run
// (figure.cpp then draws its checks side by side or the table).
bool drawMnistFigure(MnistFigure& f);
// MnistActive (figure_active.cpp): test accuracy against labels, a line per acquisition
// function (the mean curve over its seeds), the paper's labels to reach 90 % and 95 % as hollow
// points, the verdicts below; false when no round finished.
bool drawActiveFigure(MnistFigure& f);

}  // namespace ensemble::reproduce
