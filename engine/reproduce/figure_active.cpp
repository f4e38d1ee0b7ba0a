// The active-learning row's figure (figure_mnist.h): test accuracy against labels, a line per
// acquisition function (the mean curve over its seeds, as the level figures read it), with the
// paper's labels to reach 90 % and 95 % as hollow points in the function's colour, and each
// verdict below.
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "reproduce/figure_mnist.h"
#include "reproduce/runner_internal.h"

namespace ensemble::reproduce {
namespace active_figure {  // apart from figure.cpp's helpers in the unity build
namespace {

using svg::LegendEntry;
using svg::TextStyle;

constexpr double kActiveWidth = 1000.0;
constexpr double kActiveMargin = 20.0;
constexpr double kActiveLeft = 62.0;
constexpr double kActiveHeight = 300.0;
constexpr const char* kActivePass = "#1e8449";
constexpr const char* kActiveFail = "#c0392b";
constexpr const char* kActiveGuide = "#999999";
constexpr const char* kActiveColours[] = {"#1f5fa8", "#d35400", "#7d3c98", "#7f7f7f", "#117a65"};

// The accuracy (%) a labels-to-reach figure is about.
double reachAccuracy(const std::string& figure) {
    return figure == "labels_to_90" ? 90.0 : figure == "labels_to_95" ? 95.0 : std::nan("");
}

}  // namespace
}  // namespace active_figure

bool drawActiveFigure(MnistFigure& f) {
    using namespace active_figure;
    struct Line {
        std::string level;
        const char* colour;
        std::vector<ActiveCurvePoint> curve;
    };
    std::vector<Line> lines;
    double xHi = 0.0;
    double yLo = 90.0;
    for (std::size_t l = 0; l < f.levels.size(); ++l) {
        std::vector<const RunOutcome*> runs;
        for (const RunOutcome& o : f.result.outcomes) {
            if (o.level == f.levels[l]) {
                runs.push_back(&o);
            }
        }
        Line line{f.levels[l], kActiveColours[l % 5], activeLevelCurve(runs)};
        for (const ActiveCurvePoint& p : line.curve) {
            xHi = std::max(xHi, static_cast<double>(p.labels));
            if (std::isfinite(p.accuracy.mean)) {
                yLo = std::min(yLo, 100.0 * p.accuracy.mean);
            }
        }
        lines.push_back(std::move(line));
    }
    if (xHi <= 0.0) {
        return false;  // no round finished: figure.cpp draws the table
    }
    // The paper's points: the labels-to-reach checks of the planned levels with a printed number.
    struct PaperPoint {
        const char* colour;
        double labels;
        double accuracy;
    };
    std::vector<PaperPoint> paper;
    for (const ResultRow& row : f.result.rows) {
        const Check& c = *row.check;
        const double accuracy = reachAccuracy(c.figure);
        if (c.printedValue.empty() || !std::isfinite(accuracy)) {
            continue;
        }
        for (const Line& line : lines) {
            if (line.level == c.level) {
                paper.push_back({line.colour, printedNumber(c.printedValue), accuracy});
                xHi = std::max(xHi, paper.back().labels);
            }
        }
    }
    svg::Panel panel;
    panel.left = kActiveMargin + kActiveLeft;
    panel.top = f.y + 22.0;
    panel.width = kActiveWidth - 2.0 * kActiveMargin - kActiveLeft - 14.0;
    panel.height = kActiveHeight;
    panel.x = svg::niceAxis(0.0, xHi, 8, "labels");
    panel.y = svg::niceAxis(yLo, 100.0, 6, "test accuracy (%)");
    f.doc.beginGroup("panel-active", "panel");
    svg::drawPanel(f.doc, panel, "test accuracy against labels (the mean over each level's seeds)");
    for (double guide : {90.0, 95.0}) {
        f.doc.line({panel.px(panel.x.lo), panel.py(guide)}, {panel.px(panel.x.hi), panel.py(guide)},
                   kActiveGuide, 1.0, "guide", "4,3");
    }
    for (const Line& line : lines) {
        std::vector<double> xs;
        std::vector<double> ys;
        for (const ActiveCurvePoint& p : line.curve) {
            xs.push_back(static_cast<double>(p.labels));
            ys.push_back(100.0 * p.accuracy.mean);
        }
        if (xs.size() >= 2) {
            svg::drawSeries(f.doc, panel, xs, ys, line.colour, 2.0);
        } else if (xs.size() == 1 && std::isfinite(ys[0])) {
            f.doc.circle({panel.px(xs[0]), panel.py(ys[0])}, 3.0, line.colour, "none");
        }
    }
    std::size_t i = 0;
    for (const PaperPoint& p : paper) {
        svg::drawPointWithBar(f.doc, panel, p.labels, p.accuracy, std::nan(""), std::nan(""),
                              p.colour, true, "paper-" + std::to_string(i++), "paper");
    }
    f.doc.endGroup();
    f.y = panel.top + panel.height + 44.0;
    // The verdicts, a line each.
    TextStyle text;
    text.size = 10.0;
    text.cls = "verdict";
    for (const ResultRow& row : f.result.rows) {
        if (row.judgement.verdict == Verdict::None) {
            continue;
        }
        const bool pass = row.judgement.verdict == Verdict::Pass;
        text.fill = pass ? kActivePass : kActiveFail;
        text.bold = !pass;
        f.doc.text({kActiveMargin, f.y},
                   row.check->level + " " + row.check->figure + ": " + (pass ? "pass" : "fail") +
                       " (" + row.judgement.why + ")",
                   text);
        f.y += 14.0;
    }
    f.y += 6.0;
    for (const Line& line : lines) {
        f.legend.push_back({LegendEntry::Kind::Line, line.colour, "ours, " + line.level});
    }
    f.legend.push_back({LegendEntry::Kind::HollowPoint, "#222222",
                        "paper: the labels it needs to reach 90 % and 95 % (Table 1), in the "
                        "function's colour"});
    f.notes.push_back(
        "The labels to reach an accuracy are read off the mean curve over a level's seeds (the "
        "first round at or above it), as ensemble-cli active reads them: one number, no "
        "standard error; \"> N\" where the curve does not reach it within N labels.");
    return true;
}

}  // namespace ensemble::reproduce
