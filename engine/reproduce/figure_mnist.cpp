// The MNIST rows' figures (figure_mnist.h): Figure 2a's error and NLL against M with the
// paper's range as a band, and Ovadia et al.'s accuracy, Brier and ECE against the rotation and
// the translation for the three methods. Drawn from the runs' figures (the report's numbers),
// the mean over a level's runs at every point.
#include "reproduce/figure_mnist.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

namespace ensemble::reproduce {
namespace mnist_figure {  // apart from figure.cpp's helpers in the unity build
namespace {

using svg::Anchor;
using svg::LegendEntry;
using svg::TextStyle;

constexpr double kWidth = 1000.0;
constexpr double kMargin = 20.0;
constexpr double kPanelLeft = 62.0;
constexpr double kPanelRight = 14.0;
constexpr double kPanelTitle = 22.0;
constexpr const char* kBandColour = "#2e8b57";
constexpr const char* kPassColour = "#1e8449";
constexpr const char* kFailColour = "#c0392b";
constexpr const char* kTextColour = "#222222";
const double kNaN = std::numeric_limits<double>::quiet_NaN();

// The mean over the runs of `level` of `figure` (NaN when a run lacks it or none ran).
double meanOver(const ReproductionResult& result, const std::string& level,
                const std::string& figure) {
    double sum = 0.0;
    int n = 0;
    for (const RunOutcome& o : result.outcomes) {
        if (o.level != level) {
            continue;
        }
        const auto it = o.figures.find(figure);
        sum += it == o.figures.end() ? kNaN : it->second;
        ++n;
    }
    return n == 0 ? kNaN : sum / n;
}

struct Series {
    std::string label;
    const char* colour;
    std::string dash;
    std::vector<double> ys;
};

// One panel at column `column` of `columns`, its top at `top`: the series over `xs`, an
// optional band [low, high] across the whole x range. Returns whether anything was finite.
bool drawLinePanel(MnistFigure& f, std::size_t column, std::size_t columns, double top,
                   double height, const std::vector<double>& xs, const std::vector<Series>& series,
                   const std::string& title, const std::string& xLabel, const std::string& id,
                   double bandLow = kNaN, double bandHigh = kNaN) {
    const double cellWidth = (kWidth - 2.0 * kMargin) / static_cast<double>(columns);
    svg::Panel panel;
    panel.left = kMargin + static_cast<double>(column) * cellWidth + kPanelLeft;
    panel.top = top + kPanelTitle;
    panel.width = cellWidth - kPanelLeft - kPanelRight;
    panel.height = height;
    double lo = std::numeric_limits<double>::infinity();
    double hi = -lo;
    bool any = false;
    for (const Series& s : series) {
        for (double v : s.ys) {
            if (std::isfinite(v)) {
                lo = std::min(lo, v);
                hi = std::max(hi, v);
                any = true;
            }
        }
    }
    if (std::isfinite(bandLow)) {
        lo = std::min(lo, bandLow);
        hi = std::max(hi, bandHigh);
    }
    panel.x = svg::niceAxis(xs.front(), xs.back(), 6, xLabel);
    panel.y = svg::niceAxis(lo, hi, 5, "");
    f.doc.beginGroup(id, "panel");
    svg::drawPanel(f.doc, panel, title);
    if (std::isfinite(bandLow)) {
        const double y0 = panel.py(bandHigh);
        f.doc.rect(panel.px(panel.x.lo), y0, panel.px(panel.x.hi) - panel.px(panel.x.lo),
                   panel.py(bandLow) - y0, kBandColour, 0.18, "none", id + "-paper-band");
    }
    for (const Series& s : series) {
        const int skipped = svg::drawSeries(f.doc, panel, xs, s.ys, s.colour, 2.0, s.dash);
        if (skipped > 0) {
            f.notes.push_back(title + ", " + s.label + ": " + std::to_string(skipped) + " of " +
                              std::to_string(s.ys.size()) +
                              " values not finite (a diverged run), left out of the drawing");
        }
    }
    f.doc.endGroup();
    return any;
}

// The verdict lines of the checks whose figure starts with `stem`, under a panel.
void verdictLines(MnistFigure& f, double left, double y, const std::string& stem) {
    TextStyle text;
    text.size = 9.5;
    for (const ResultRow& row : f.result.rows) {
        const Check& c = *row.check;
        if (c.figure.rfind(stem, 0) != 0 || c.kind == VerdictKind::Measurement) {
            continue;
        }
        const bool pass = row.judgement.verdict == Verdict::Pass;
        text.fill = pass ? kPassColour : kFailColour;
        text.bold = !pass;
        text.cls = "verdict";
        const std::string ours = std::isfinite(row.ours.mean) ? svg::general(row.ours.mean, 4)
                                                              : std::string("not finite");
        f.doc.text({left, y},
                   c.level + " " + c.figure + " " + ours + ": " + (pass ? "pass" : "fail"), text);
        y += 12.0;
    }
}

// Figure 2a: error and NLL against M, a line per level, the paper's range as a band.
bool drawSizeCurves(MnistFigure& f) {
    int members = 0;
    for (const RunOutcome& o : f.result.outcomes) {
        while (o.figures.count("error_m" + std::to_string(members + 1)) != 0) {
            ++members;
        }
    }
    if (members == 0) {
        return false;
    }
    std::vector<double> xs;
    for (int m = 1; m <= members; ++m) {
        xs.push_back(m);
    }
    const char* colours[] = {"#1f5fa8", "#d35400", "#7d3c98", "#117a65"};
    const auto seriesOf = [&](const std::string& stem) {
        std::vector<Series> series;
        for (std::size_t l = 0; l < f.levels.size(); ++l) {
            Series s{f.levels[l], colours[l % 4], l % 2 == 0 ? "" : "6,3", {}};
            for (int m = 1; m <= members; ++m) {
                s.ys.push_back(meanOver(f.result, f.levels[l], stem + std::to_string(m)));
            }
            series.push_back(std::move(s));
        }
        return series;
    };
    const double top = f.y;
    const double height = 220.0;
    drawLinePanel(f, 0, 2, top, height, xs, seriesOf("error_m"), "test error (%)", "networks M",
                  "panel-error", 1.0, 1.8);
    drawLinePanel(f, 1, 2, top, height, xs, seriesOf("nll_m"), "test NLL", "networks M",
                  "panel-nll", 0.02, 0.14);
    const double below = top + kPanelTitle + height + 40.0;
    const double cellWidth = (kWidth - 2.0 * kMargin) / 2.0;
    verdictLines(f, kMargin + kPanelLeft - 40.0, below, "error_m");
    verdictLines(f, kMargin + cellWidth + kPanelLeft - 40.0, below, "nll_m");
    std::size_t lines = 0;
    for (const ResultRow& row : f.result.rows) {
        lines += row.check->kind != VerdictKind::Measurement ? 1 : 0;
    }
    f.y = below + 12.0 * static_cast<double>((lines + 1) / 2 + 1);
    for (std::size_t l = 0; l < f.levels.size(); ++l) {
        f.legend.push_back({l % 2 == 0 ? LegendEntry::Kind::Line : LegendEntry::Kind::DashedLine,
                            colours[l % 4],
                            "ours, " + f.levels[l] + ": the mean over random M-subsets"});
    }
    f.legend.push_back({LegendEntry::Kind::Band, kBandColour,
                        "paper: the range its Figure 2a covers (error 1.0-1.8 %, NLL 0.02-0.14)"});
    return true;
}

// Ovadia et al.: accuracy, Brier and ECE against each shift, the three methods.
bool drawShiftCurves(MnistFigure& f) {
    if (f.result.outcomes.empty()) {
        return false;
    }
    const std::string level = f.levels.empty() ? std::string() : f.levels.front();
    const struct {
        const char* name;
        const char* label;
        int first, last, step;
    } kinds[] = {{"rotate", "rotation (degrees)", 0, 180, 15},
                 {"translate", "translation (pixels)", 0, 26, 2}};
    const struct {
        const char* suffix;
        const char* label;
        const char* colour;
        const char* dash;
    } methods[] = {{"single", "one network (median member)", "#7f7f7f", "6,3"},
                   {"ts", "temperature scaling (median member)", "#d35400", "2,2"},
                   {"ensemble", "ensemble", "#1f5fa8", ""}};
    bool any = false;
    const double height = 150.0;
    for (const auto& kind : kinds) {
        std::vector<double> xs;
        for (int v = kind.first; v <= kind.last; v += kind.step) {
            xs.push_back(v);
        }
        std::size_t column = 0;
        for (const char* metric : {"accuracy", "brier", "ece"}) {
            std::vector<Series> series;
            for (const auto& method : methods) {
                Series s{method.label, method.colour, method.dash, {}};
                for (double x : xs) {
                    s.ys.push_back(meanOver(f.result, level,
                                            std::string(kind.name) + "_" +
                                                std::to_string(static_cast<int>(x)) + "." + metric +
                                                "_" + method.suffix));
                }
                series.push_back(std::move(s));
            }
            any = drawLinePanel(f, column++, 3, f.y, height, xs, series,
                                std::string(metric) + ", " + kind.name, kind.label,
                                std::string("panel-") + kind.name + "-" + metric) ||
                  any;
        }
        f.y += kPanelTitle + height + 40.0;
        // The claims of this shift, counted: a line each.
        TextStyle text;
        text.size = 10.0;
        for (const char* claim : {"accuracy_ensemble_minus_single", "brier_ts_minus_ensemble"}) {
            int pass = 0;
            int judged = 0;
            std::string failed;
            for (const ResultRow& row : f.result.rows) {
                const std::string& figure = row.check->figure;
                if (figure.rfind(std::string(kind.name) + "_", 0) != 0 ||
                    figure.find(claim) == std::string::npos) {
                    continue;
                }
                ++judged;
                if (row.judgement.verdict == Verdict::Pass) {
                    ++pass;
                } else {
                    failed += (failed.empty() ? "" : ", ") +
                              figure.substr(figure.find('_') + 1,
                                            figure.find('.') - figure.find('_') - 1);
                }
            }
            if (judged == 0) {
                continue;
            }
            text.fill = pass == judged ? kPassColour : kFailColour;
            text.cls = "verdict";
            const std::string what = std::string(claim) == "brier_ts_minus_ensemble"
                                         ? "temperature scaling's Brier at or above the ensemble's"
                                         : "the ensemble's accuracy at or above one network's";
            f.doc.text({kMargin, f.y},
                       std::string(kind.name) + ": " + what + ", " + std::to_string(pass) + " of " +
                           std::to_string(judged) + " levels pass" +
                           (failed.empty() ? "" : " (fails at " + failed + ")"),
                       text);
            f.y += 14.0;
        }
        f.y += 8.0;
    }
    for (const auto& method : methods) {
        f.legend.push_back({std::string(method.dash).empty() ? LegendEntry::Kind::Line
                                                             : LegendEntry::Kind::DashedLine,
                            method.colour, method.label});
    }
    f.notes.push_back(
        "Each point is the mean over the runs; the paper prints plots only, so its finding is "
        "checked per level (the claims above) instead of numbers.");
    return any;
}

}  // namespace
}  // namespace mnist_figure

bool drawMnistFigure(MnistFigure& f) {
    const RunnerKind runner = f.result.reproduction->runner;
    if (runner == RunnerKind::MnistSizeCurve) {
        return mnist_figure::drawSizeCurves(f);
    }
    if (runner == RunnerKind::MnistShift) {
        return mnist_figure::drawShiftCurves(f);
    }
    if (runner == RunnerKind::MnistActive) {
        return drawActiveFigure(f);
    }
    return false;  // LeNet-5: the checks side by side (figure.cpp) say it best
}

}  // namespace ensemble::reproduce
