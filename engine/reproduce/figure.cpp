// A reproduction's figure as SVG (figure.h): the layout per runner, the caption, and the text
// table for a result with nothing to plot. The non-MNIST runners' layouts stay here together
// because they share the caption, the panel grid and the paper's overlays; the MNIST rows'
// layouts are figure_mnist.cpp.
#include "reproduce/figure.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "reproduce/figure_mnist.h"
#include "reproduce/svg_plot.h"

namespace ensemble::reproduce {
// Its own namespace: the unity build compiles this file with report.cpp and runner.cpp, whose
// file-local helpers (paperText, ...) would otherwise meet these.
namespace figure_layout {
namespace {

using svg::Anchor;
using svg::LegendEntry;
using svg::TextStyle;

constexpr double kWidth = 1000.0;
constexpr double kMargin = 20.0;
constexpr std::size_t kCaptionColumns = 170;  // at 10.5 px, about the width of the page
constexpr const char* kOursColour = "#1f5fa8";
constexpr const char* kPaperColour = "#222222";
constexpr const char* kFailColour = "#c0392b";
constexpr const char* kPassColour = "#1e8449";
constexpr const char* kRunColour = "#a0a0a0";
constexpr const char* kRangeColour = "#2e8b57";
constexpr const char* kTruthColour = "#333333";
constexpr const char* kPointColour = "#d35400";
constexpr const char* kBesideColour = "#8e44ad";  // another published column (MC dropout)
const double kNaN = std::numeric_limits<double>::quiet_NaN();

// What a figure draws from, and what it gathers for its caption on the way.
struct Figure {
    const ReproductionResult& result;
    const Reproduction& r;
    std::vector<std::string> levels;   // planned, in the plan's order
    std::vector<const Check*> checks;  // of those levels, in the registry's order
    svg::Document doc;
    double y = 0.0;  // the next free pixel row
    std::vector<LegendEntry> legend;
    std::vector<std::string> notes;  // values left out, and why
};

// A fragment of an XML id: ASCII letters, digits, '-', '_' and '.' kept, the rest '_' (ids must
// be names; a level could be anything).
std::string idPart(const std::string& s) {
    std::string out;
    for (char c : s) {
        const bool keep = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                          (c >= '0' && c <= '9') || c == '-' || c == '_' || c == '.';
        out += keep ? c : '_';
    }
    return out;
}

const ResultRow* rowOf(const ReproductionResult& result, const Check& c) {
    for (const ResultRow& row : result.rows) {
        if (row.check == &c) {
            return &row;
        }
    }
    for (const ResultRow& row : result.rows) {
        if (row.check != nullptr && row.check->level == c.level && row.check->figure == c.figure &&
            row.check->kind == c.kind) {
            return &row;
        }
    }
    return nullptr;
}

// Each finished run's value of `figure` in `level` (NaN where the run has none).
std::vector<double> runValues(const ReproductionResult& result, const std::string& level,
                              const std::string& figure) {
    std::vector<double> values;
    for (const RunOutcome& o : result.outcomes) {
        if (o.level == level) {
            const auto it = o.figures.find(figure);
            values.push_back(it == o.figures.end() ? kNaN : it->second);
        }
    }
    return values;
}

std::string oursText(const Aggregate& a) {
    if (a.n == 0) {
        return "not run";
    }
    if (std::isfinite(a.beyond)) {
        return "> " + svg::general(a.beyond, 6) + " (n " + std::to_string(a.n) + ")";
    }
    if (!std::isfinite(a.mean)) {
        return "not finite";
    }
    std::string s = svg::general(a.mean, 4);
    if (std::isfinite(a.se)) {
        s += " ± " + svg::general(a.se, 2);
    }
    return s + " (n " + std::to_string(a.n) + ")";
}

// The paper's number as printed: "6.03 ± 0.58", "[1, 1.8]", "≥ 2"; "" for a measurement.
std::string paperText(const Check& c) {
    switch (c.kind) {
        case VerdictKind::Numeric:
            return c.printedValue + " ± " + c.printedSpread;
        case VerdictKind::Band:
            return (c.printedValue.empty() ? "" : c.printedValue + " in ") + "[" +
                   svg::general(c.low, 4) + ", " + svg::general(c.high, 4) + "]";
        case VerdictKind::Claim:
            return (c.test == ClaimTest::AtLeast ? "≥ " : "≤ ") +
                   (c.versus.empty() ? svg::general(c.threshold, 4)
                                     : svg::general(c.factor, 4) + " × " + c.versus);
        case VerdictKind::Measurement:
            return c.printedValue;
    }
    return "";
}

// "pass", "fail", "pass (5 of 5)" for a claim, "measured", "not run".
std::string verdictText(const ResultRow* row) {
    if (row == nullptr) {
        return "not run";
    }
    const std::string held = row->check->kind == VerdictKind::Claim && row->check->versus.empty()
                                 ? " (" + std::to_string(row->judgement.held) + " of " +
                                       std::to_string(row->ours.n) + ")"
                                 : "";
    switch (row->judgement.verdict) {
        case Verdict::Pass:
            return "pass" + held;
        case Verdict::Fail:
            return "fail" + held;
        case Verdict::None:
            return "measured";
    }
    return "";
}

const char* verdictColour(const ResultRow* row) {
    if (row == nullptr || row->judgement.verdict == Verdict::None) {
        return kPaperColour;
    }
    return row->judgement.verdict == Verdict::Pass ? kPassColour : kFailColour;
}

// The paper's value and its spread as judged (the printed spread floored at half its last
// digit), for a numeric check.
Judgement paperJudged(const Check& c, const ResultRow* row) {
    return row != nullptr ? row->judgement : judgeNumeric(c.printedValue, c.printedSpread, {});
}

void addLegend(Figure& f, LegendEntry::Kind kind, const char* colour, const std::string& label) {
    for (const LegendEntry& e : f.legend) {
        if (e.label == label) {
            return;
        }
    }
    f.legend.push_back({kind, colour, label});
}

// Values left out of a level's figure: a caption line.
void noteNotFinite(Figure& f, const std::string& what, int count, int of) {
    if (count > 0) {
        f.notes.push_back(what + ": " + std::to_string(count) + " of " + std::to_string(of) +
                          " values not finite (a diverged run), left out of the drawing");
    }
}

// Room around a panel in its grid cell: tick labels and the y axis' label left of it, the
// title above it.
constexpr double kPanelLeft = 62.0;
constexpr double kPanelRight = 14.0;
constexpr double kPanelTitle = 22.0;

// The panels of a grid row by row, `columns` a row; each `height` tall with `below` pixels
// under it; `draw(i, panel)` draws the i-th. Advances f.y past the grid.
template <typename Draw>
void drawGrid(Figure& f, std::size_t count, std::size_t columns, double height, double below,
              Draw draw) {
    const double cellWidth = (kWidth - 2.0 * kMargin) / static_cast<double>(columns);
    for (std::size_t i = 0; i < count; ++i) {
        const std::size_t column = i % columns;
        if (column == 0 && i > 0) {
            f.y += kPanelTitle + height + below;
        }
        svg::Panel panel;
        panel.left = kMargin + static_cast<double>(column) * cellWidth + kPanelLeft;
        panel.top = f.y + kPanelTitle;
        panel.width = cellWidth - kPanelLeft - kPanelRight;
        panel.height = height;
        draw(i, panel);
    }
    if (count > 0) {
        f.y += kPanelTitle + height + below;
    }
}

// The extent of the finite values pushed into it.
struct Extent {
    double lo = std::numeric_limits<double>::infinity();
    double hi = -std::numeric_limits<double>::infinity();
    void add(double v) {
        if (std::isfinite(v)) {
            lo = std::min(lo, v);
            hi = std::max(hi, v);
        }
    }
};

// --- checks side by side: the UCI table's panels and every other row's ---------------------

// Where a check's marks sit in its slot i: the paper's left of ours when there is one.
struct Slot {
    double paper = 0.0;
    double ours = 0.0;
    double runs = 0.0;
};
Slot slotOf(const Check& c, std::size_t i) {
    const double at = static_cast<double>(i);
    if (c.kind == VerdictKind::Numeric) {
        return {at - 0.2, at + 0.2, at + 0.34};
    }
    return {at, at, at + 0.16};
}

// One panel with `checks` in slots 0, 1, ... labelled `labels`: per check ours (mean ± 2 se)
// and each run's value, and the paper's number as its kind prints it.
void drawChecksPanel(Figure& f, svg::Panel panel, const std::vector<const Check*>& checks,
                     const std::vector<std::string>& labels, const std::string& title,
                     const std::string& id) {
    Extent extent;
    for (const Check* c : checks) {
        const ResultRow* row = rowOf(f.result, *c);
        if (row != nullptr && std::isfinite(row->ours.mean)) {
            const double se = std::isfinite(row->ours.se) ? row->ours.se : 0.0;
            extent.add(row->ours.mean - 2.0 * se);
            extent.add(row->ours.mean + 2.0 * se);
        }
        for (double v : runValues(f.result, c->level, c->figure)) {
            extent.add(v);
        }
        if (c->kind == VerdictKind::Numeric) {
            const Judgement p = paperJudged(*c, row);
            extent.add(p.paper - 2.0 * p.paperSe);
            extent.add(p.paper + 2.0 * p.paperSe);
            for (const Published& b : c->beside) {
                const Judgement other = judgeNumeric(b.printedValue, b.printedSpread, {});
                extent.add(other.paper - 2.0 * other.paperSe);
                extent.add(other.paper + 2.0 * other.paperSe);
            }
        } else if (c->kind == VerdictKind::Band) {
            extent.add(c->low);
            extent.add(c->high);
        } else if (c->kind == VerdictKind::Claim) {
            extent.add(c->threshold);
        }
    }
    panel.x = svg::categoryAxis(labels, "");
    panel.y = svg::niceAxis(extent.lo, extent.hi, 5, "");
    f.doc.beginGroup(id, "panel");
    svg::drawPanel(f.doc, panel, title);
    const double bottom = panel.top + panel.height;
    for (std::size_t i = 0; i < checks.size(); ++i) {
        const Check& c = *checks[i];
        const std::string key = idPart(c.level) + "-" + idPart(c.figure);
        const ResultRow* row = rowOf(f.result, c);
        const Slot slot = slotOf(c, i);
        const double from = static_cast<double>(i) - 0.42;
        const double to = static_cast<double>(i) + 0.42;
        if (c.kind == VerdictKind::Band) {
            const double top = panel.py(c.high);
            f.doc.rect(panel.px(from), top, panel.px(to) - panel.px(from), panel.py(c.low) - top,
                       kRangeColour, 0.2, "none", "band-" + key);
            addLegend(f, LegendEntry::Kind::Band, kRangeColour, "paper: the printed range");
        } else if (c.kind == VerdictKind::Claim) {
            f.doc.line({panel.px(from), panel.py(c.threshold)},
                       {panel.px(to), panel.py(c.threshold)}, kPaperColour, 1.5, "claim-threshold",
                       "5,3");
            TextStyle small;
            small.size = 9.0;
            small.anchor = Anchor::End;
            f.doc.text({panel.px(to) - 2.0, panel.py(c.threshold) - 3.0}, paperText(c), small);
            addLegend(f, LegendEntry::Kind::DashedLine, kPaperColour,
                      "paper: a claim's threshold (every run on its side)");
        } else if (c.kind == VerdictKind::Numeric) {
            const Judgement p = paperJudged(c, row);
            svg::drawPointWithBar(f.doc, panel, slot.paper, p.paper, p.paper - 2.0 * p.paperSe,
                                  p.paper + 2.0 * p.paperSe, kPaperColour, true, "paper-" + key,
                                  "paper");
            addLegend(f, LegendEntry::Kind::HollowPoint, kPaperColour,
                      "paper: value ± 2 spread (as judged)");
            // Another published column left of the paper's, ± 2 of its spread as judged.
            double at = slot.paper;
            for (const Published& b : c.beside) {
                at -= 0.14;
                const Judgement other = judgeNumeric(b.printedValue, b.printedSpread, {});
                svg::drawPointWithBar(f.doc, panel, at, other.paper,
                                      other.paper - 2.0 * other.paperSe,
                                      other.paper + 2.0 * other.paperSe, kBesideColour, true,
                                      "beside-" + idPart(b.label) + "-" + key, "beside");
                addLegend(f, LegendEntry::Kind::HollowPoint, kBesideColour,
                          "published " + b.label + ": value ± 2 spread (no verdict)");
            }
        }
        const std::vector<double> runs = runValues(f.result, c.level, c.figure);
        int notFinite = 0;
        bool drewRun = false;
        for (double v : runs) {
            if (std::isfinite(v)) {
                drewRun = true;
                f.doc.circle({panel.px(slot.runs), panel.py(v)}, 2.2, kRunColour, "none", "",
                             "run");
            } else {
                ++notFinite;
            }
        }
        noteNotFinite(f, c.level + " " + c.figure, notFinite, static_cast<int>(runs.size()));
        const bool failed = row != nullptr && row->judgement.verdict == Verdict::Fail;
        if (row != nullptr && std::isfinite(row->ours.mean)) {
            const double se = row->ours.se;
            svg::drawPointWithBar(f.doc, panel, slot.ours, row->ours.mean,
                                  row->ours.mean - 2.0 * se, row->ours.mean + 2.0 * se,
                                  failed ? kFailColour : kOursColour, false, "ours-" + key, "ours");
            addLegend(f, LegendEntry::Kind::Point, kOursColour, "ours: mean ± 2 standard errors");
            if (failed) {
                addLegend(f, LegendEntry::Kind::Point, kFailColour, "ours, where it fails");
            }
        } else {
            TextStyle missing;
            missing.size = 9.5;
            missing.anchor = Anchor::Middle;
            missing.fill = kFailColour;
            f.doc.text({panel.px(slot.ours), panel.top + panel.height / 2.0},
                       row == nullptr ? "not run" : "not finite", missing);
        }
        if (drewRun) {  // after ours, so that the legend reads paper, ours, then the runs
            addLegend(f, LegendEntry::Kind::Point, kRunColour, "each " + f.r.unit);
        }
        TextStyle verdict;
        verdict.size = 9.5;
        verdict.anchor = Anchor::Middle;
        verdict.fill = verdictColour(row);
        verdict.bold = failed;
        verdict.cls = "verdict";
        const std::string text = verdictText(row);
        if (text != "measured") {
            f.doc.text({panel.px(static_cast<double>(i)), bottom + 28.0}, text, verdict);
        }
        if (c.kind == VerdictKind::Numeric && checks.size() == 1 && row != nullptr &&
            std::isfinite(row->judgement.difference)) {
            verdict.bold = false;
            f.doc.text({panel.px(0.0), bottom + 41.0},
                       "ours - paper " + svg::general(row->judgement.difference, 2) + ", limit " +
                           svg::general(row->judgement.tolerance, 2),
                       verdict);
        }
    }
    f.doc.endGroup();
}

// The UCI table: sets differ in scale by orders of magnitude (naval's RMSE 0.00, concrete's
// 6.03) and NLL changes sign, so neither one shared axis nor values relative to the paper's
// (a ratio to 0.00, of a negative NLL) would read; a small panel per set and figure keeps each
// set in its own units, the tick labels saying which.
void drawPerCheckPanels(Figure& f) {
    std::vector<std::string> figures;
    for (const Check* c : f.checks) {
        if (std::find(figures.begin(), figures.end(), c->figure) == figures.end()) {
            figures.push_back(c->figure);
        }
    }
    for (const std::string& figure : figures) {
        std::vector<const Check*> checks;
        for (const Check* c : f.checks) {
            if (c->figure == figure) {
                checks.push_back(c);
            }
        }
        TextStyle heading;
        heading.size = 12.5;
        heading.bold = true;
        f.doc.text({kMargin, f.y + 14.0}, figure, heading);
        f.y += 22.0;
        const std::size_t columns = std::min<std::size_t>(4, checks.size());
        drawGrid(f, checks.size(), columns, 120.0, 50.0, [&](std::size_t i, svg::Panel panel) {
            const Check& c = *checks[i];
            drawChecksPanel(f, panel, {&c}, {""}, c.level,
                            "panel-" + idPart(c.level) + "-" + idPart(c.figure));
        });
    }
}

// Every other row: a panel per figure, its levels side by side.
void drawPerFigurePanels(Figure& f) {
    std::vector<std::string> figures;
    for (const Check* c : f.checks) {
        if (std::find(figures.begin(), figures.end(), c->figure) == figures.end()) {
            figures.push_back(c->figure);
        }
    }
    const std::size_t columns = std::min<std::size_t>(4, figures.size());
    drawGrid(f, figures.size(), columns, 150.0, 46.0, [&](std::size_t i, svg::Panel panel) {
        std::vector<const Check*> checks;
        std::vector<std::string> labels;
        for (const Check* c : f.checks) {
            if (c->figure == figures[i]) {
                checks.push_back(c);
                labels.push_back(c->level);
            }
        }
        drawChecksPanel(f, panel, checks, labels, figures[i], "panel-" + idPart(figures[i]));
    });
}

// --- Figure 1: the cubic's four panels --------------------------------------------------------

double csvNumber(const std::string& text) {
    double v = kNaN;
    const char* end = text.data() + text.size();
    const auto r = std::from_chars(text.data(), end, v);
    return r.ec == std::errc() && r.ptr == end ? v : kNaN;
}

std::vector<std::string> csvFields(const std::string& line) {
    std::vector<std::string> fields;
    std::size_t start = 0;
    while (start <= line.size()) {
        const std::size_t comma = std::min(line.find(',', start), line.size());
        fields.push_back(line.substr(start, comma - start));
        start = comma + 1;
    }
    return fields;
}

// A level's first run as it drew it: curves.csv (panel, seed, x, mean, std, lower, upper) and
// points.csv (panel, seed, x, y).
struct Curves {
    int seed = -1;  // -1: the level has no run
    std::vector<double> x, mean, lower, upper;
    std::vector<double> pointX, pointY;
};

Curves firstCurves(const ReproductionResult& result, const std::string& level) {
    Curves c;
    for (const RunOutcome& o : result.outcomes) {
        if (o.level != level) {
            continue;
        }
        c.seed = o.index;
        const auto curves = o.csvLines.find("curves.csv");
        for (const std::string& line :
             curves == o.csvLines.end() ? std::vector<std::string>{} : curves->second) {
            const std::vector<std::string> v = csvFields(line);
            if (v.size() == 7) {
                c.x.push_back(csvNumber(v[2]));
                c.mean.push_back(csvNumber(v[3]));
                c.lower.push_back(csvNumber(v[5]));
                c.upper.push_back(csvNumber(v[6]));
            }
        }
        const auto points = o.csvLines.find("points.csv");
        for (const std::string& line :
             points == o.csvLines.end() ? std::vector<std::string>{} : points->second) {
            const std::vector<std::string> v = csvFields(line);
            if (v.size() == 4) {
                c.pointX.push_back(csvNumber(v[2]));
                c.pointY.push_back(csvNumber(v[3]));
            }
        }
        break;
    }
    return c;
}

// The paper's four panels: y = x^3, the training points, our mean and ± 3 sigma on [-6, 6],
// one y axis for all (as the paper's), cut at four times the law's own extent so that one
// diverged band does not flatten the rest.
bool drawCubicPanels(Figure& f) {
    std::vector<Curves> curves;
    Extent extent;
    bool any = false;
    std::vector<double> grid;
    for (int i = 0; i <= 120; ++i) {
        grid.push_back(-6.0 + 0.1 * i);
    }
    std::vector<double> truth;
    for (double x : grid) {
        truth.push_back(x * x * x);
        extent.add(x * x * x);
    }
    for (const std::string& level : f.levels) {
        curves.push_back(firstCurves(f.result, level));
        const Curves& c = curves.back();
        any = any || !c.x.empty();
        for (std::size_t i = 0; i < c.x.size(); ++i) {
            extent.add(c.lower[i]);
            extent.add(c.upper[i]);
        }
        for (double y : c.pointY) {
            extent.add(y);
        }
    }
    if (!any) {
        return false;
    }
    const double cap = 4.0 * 216.0;
    const svg::Axis yAxis =
        svg::niceAxis(std::max(extent.lo, -cap), std::min(extent.hi, cap), 6, "y");
    std::size_t lines = 0;  // under the tallest panel: a line per check, two for a judged one
    for (const std::string& level : f.levels) {
        std::size_t n = 0;
        for (const Check* c : f.checks) {
            n += c->level != level ? 0 : c->kind == VerdictKind::Measurement ? 1 : 2;
        }
        lines = std::max(lines, n);
    }
    const std::size_t columns = std::min<std::size_t>(4, f.levels.size());
    drawGrid(
        f, f.levels.size(), columns, 190.0, 38.0 + 13.0 * static_cast<double>(lines),
        [&](std::size_t i, svg::Panel panel) {
            const std::string& level = f.levels[i];
            const Curves& c = curves[i];
            panel.x = svg::niceAxis(-6.0, 6.0, 7, "x");  // -6, -4, ..., 6
            panel.y = yAxis;
            f.doc.beginGroup("panel-" + idPart(level), "panel");
            svg::drawPanel(f.doc, panel, level);
            const int skippedBand =
                svg::drawBand(f.doc, panel, c.x, c.lower, c.upper, kOursColour, 0.2);
            const int skippedMean = svg::drawSeries(f.doc, panel, c.x, c.mean, kOursColour, 2.0);
            svg::drawSeries(f.doc, panel, grid, truth, kTruthColour, 1.3, "5,3");
            int skippedPoints = 0;
            for (std::size_t p = 0; p < c.pointX.size(); ++p) {
                if (std::isfinite(c.pointX[p]) && std::isfinite(c.pointY[p])) {
                    f.doc.circle({panel.px(c.pointX[p]), panel.py(c.pointY[p])}, 2.6, kPointColour,
                                 "none", "", "train-point");
                } else {
                    ++skippedPoints;
                }
            }
            const std::string seed = level + " " + f.r.unit + " " + std::to_string(c.seed);
            noteNotFinite(f, seed + ", the band", skippedBand, static_cast<int>(c.x.size()));
            noteNotFinite(f, seed + ", the mean", skippedMean, static_cast<int>(c.x.size()));
            noteNotFinite(f, seed + ", the training points", skippedPoints,
                          static_cast<int>(c.pointX.size()));
            for (std::size_t p = 0; p < c.x.size(); ++p) {
                if (std::abs(c.lower[p]) > cap || std::abs(c.upper[p]) > cap) {
                    f.notes.push_back(seed + ": the band leaves the axes (beyond ± " +
                                      svg::general(cap, 4) + "), cut at the frame");
                    break;
                }
            }
            TextStyle figureText;
            figureText.size = 9.5;
            if (c.seed < 0) {
                figureText.anchor = Anchor::Middle;
                f.doc.text({panel.left + panel.width / 2.0, panel.top + panel.height / 2.0},
                           "not run", figureText);
                figureText.anchor = Anchor::Start;
            }
            double lineY = panel.top + panel.height + 40.0;
            for (const Check* check : f.checks) {
                if (check->level != level) {
                    continue;
                }
                const ResultRow* row = rowOf(f.result, *check);
                figureText.fill = kPaperColour;
                figureText.bold = false;
                figureText.cls = "";
                f.doc.text({panel.left - 40.0, lineY},
                           check->figure + " " + oursText(row != nullptr ? row->ours : Aggregate{}),
                           figureText);
                lineY += 13.0;
                if (check->kind != VerdictKind::Measurement) {
                    figureText.fill = verdictColour(row);
                    figureText.bold = row != nullptr && row->judgement.verdict == Verdict::Fail;
                    figureText.cls = "verdict";
                    f.doc.text({panel.left - 40.0, lineY},
                               "paper " + paperText(*check) + ": " + verdictText(row), figureText);
                    lineY += 13.0;
                }
            }
            f.doc.endGroup();
        });
    addLegend(f, LegendEntry::Kind::DashedLine, kTruthColour, "y = x³, the data's law");
    addLegend(f, LegendEntry::Kind::Point, kPointColour, "the training points");
    addLegend(f, LegendEntry::Kind::Line, kOursColour, "ours: the mean");
    addLegend(f, LegendEntry::Kind::Band, kOursColour, "ours: mean ± 3σ");
    f.notes.insert(f.notes.begin(),
                   "Each panel draws its level's first " + f.r.unit +
                       " (its data and its members); the numbers under it are the mean ± "
                       "standard error over the level's " +
                       f.r.unit + "s.");
    return true;
}

// --- nothing to plot: the table as text ---------------------------------------------------------

void drawTextTable(Figure& f, const std::string& why) {
    TextStyle text;
    text.size = 11.0;
    f.doc.text({kMargin, f.y + 14.0}, "Nothing to plot (" + why + "): ours against the paper.",
               text);
    f.y += 36.0;
    const double columns[] = {kMargin, kMargin + 210.0, kMargin + 380.0, kMargin + 560.0,
                              kMargin + 700.0};
    const auto rowOfText = [&](const std::vector<std::string>& cells, bool bold,
                               const char* colour) {
        TextStyle cell;
        cell.size = 10.5;
        cell.bold = bold;
        for (std::size_t i = 0; i < cells.size(); ++i) {
            cell.fill = i + 1 == cells.size() ? colour : kPaperColour;
            f.doc.text({columns[i], f.y}, cells[i], cell);
        }
        f.y += 16.0;
    };
    rowOfText({"level", "figure", "ours (mean ± se)", "paper", "verdict"}, true, kPaperColour);
    for (const Check* c : f.checks) {
        const ResultRow* row = rowOf(f.result, *c);
        const std::string paper = paperText(*c);
        rowOfText({c->level, c->figure, oursText(row != nullptr ? row->ours : Aggregate{}),
                   paper.empty() ? "-" : paper, verdictText(row)},
                  false, verdictColour(row));
    }
    f.y += 6.0;
}

// Whether a check-by-check figure has anything to draw: a finite value of ours or a number
// of the paper's.
bool anythingToPlot(const Figure& f) {
    for (const Check* c : f.checks) {
        if (c->kind != VerdictKind::Measurement) {
            return true;
        }
        for (double v : runValues(f.result, c->level, c->figure)) {
            if (std::isfinite(v)) {
                return true;
            }
        }
    }
    return false;
}

// --- the frame: heading, legend, caption --------------------------------------------------------

void drawHeading(Figure& f) {
    TextStyle title;
    title.size = 15.0;
    title.bold = true;
    title.fill = "#111111";
    f.doc.text({kMargin, 28.0}, f.r.title, title);
    TextStyle sub;
    sub.size = 11.0;
    f.doc.text({kMargin, 46.0}, f.r.cite + ", " + f.r.where + ": ours beside the paper's numbers",
               sub);
    const std::size_t planned =
        f.result.plan.empty() ? f.result.outcomes.size() : f.result.plan.size();
    std::string status = std::to_string(f.result.outcomes.size()) + " of " +
                         std::to_string(planned) + " runs (" + f.r.unit + "s";
    status += f.result.options.quick ? ", --quick)" : ")";
    if (!f.result.backend.empty()) {
        status += ", backend " + f.result.backend;
    }
    if (!f.result.complete) {
        status += "; incomplete: drawn from the runs that finished";
        sub.fill = kFailColour;
    }
    f.doc.text({kMargin, 62.0}, status, sub);
    f.y = 80.0;
}

void drawCaption(Figure& f) {
    if (!f.legend.empty()) {
        f.y = svg::drawLegend(f.doc, kMargin, f.y + 14.0, kWidth - kMargin, f.legend) + 8.0;
    }
    std::vector<std::string> lines;
    std::vector<std::string> sources;
    for (const Check* c : f.checks) {
        if (!c->source.empty() &&
            std::find(sources.begin(), sources.end(), c->source) == sources.end()) {
            sources.push_back(c->source);
        }
        for (const Published& b : c->beside) {
            const std::string s = b.label + ": " + b.source;
            if (std::find(sources.begin(), sources.end(), s) == sources.end()) {
                sources.push_back(s);
            }
        }
    }
    for (const std::string& s : sources) {
        lines.push_back("Published: " + s + ".");
    }
    for (const std::string& d : f.r.deviations) {
        lines.push_back("Deviation from the paper: " + d + ".");
    }
    lines.insert(lines.end(), f.notes.begin(), f.notes.end());
    TextStyle caption;
    caption.size = 10.5;
    caption.fill = "#333333";
    caption.cls = "caption";
    for (const std::string& line : lines) {
        for (const std::string& wrapped : svg::wrap(line, kCaptionColumns)) {
            f.y += 14.0;
            f.doc.text({kMargin, f.y}, wrapped, caption);
        }
    }
}

std::string draw(const ReproductionResult& result) {
    const Reproduction& r = *result.reproduction;
    Figure f{
        result, r,  {}, {}, svg::Document(kWidth, r.title + " (" + r.cite + ", " + r.where + ")"),
        0.0,    {}, {}};
    for (const PlannedRun& p : result.plan) {
        if (std::find(f.levels.begin(), f.levels.end(), p.level) == f.levels.end()) {
            f.levels.push_back(p.level);
        }
    }
    for (const RunOutcome& o : result.outcomes) {
        if (std::find(f.levels.begin(), f.levels.end(), o.level) == f.levels.end()) {
            f.levels.push_back(o.level);
        }
    }
    if (f.levels.empty()) {
        f.levels = r.levels;
    }
    for (const Check& c : r.checks) {
        if (std::find(f.levels.begin(), f.levels.end(), c.level) != f.levels.end()) {
            f.checks.push_back(&c);
        }
    }

    drawHeading(f);
    const std::string nothing = result.outcomes.empty() ? "no run finished" : "no finite value";
    switch (r.runner) {
        case RunnerKind::CubicCurves:
            if (!drawCubicPanels(f)) {
                drawTextTable(f, result.outcomes.empty() ? nothing : "the runs drew no curves");
            }
            break;
        case RunnerKind::UciRegression:
            if (anythingToPlot(f)) {
                drawPerCheckPanels(f);
            } else {
                drawTextTable(f, nothing);
            }
            break;
        case RunnerKind::MnistActive: {
            MnistFigure active{result, f.levels, f.doc, f.y, f.legend, f.notes};
            if (!drawMnistFigure(active)) {
                drawTextTable(f, nothing);
            }
            break;
        }
        case RunnerKind::MnistSizeCurve:
        case RunnerKind::MnistShift:
        case RunnerKind::MnistLenet: {
            MnistFigure mnist{result, f.levels, f.doc, f.y, f.legend, f.notes};
            if (drawMnistFigure(mnist)) {
                break;
            }
            [[fallthrough]];
        }
        case RunnerKind::SpiralsTiming:
        case RunnerKind::MoonsOod:
            if (anythingToPlot(f)) {
                drawPerFigurePanels(f);
            } else {
                drawTextTable(f, nothing);
            }
            break;
    }
    drawCaption(f);
    return f.doc.finish(f.y + kMargin);
}

}  // namespace
}  // namespace figure_layout

std::string figureSvg(const ReproductionResult& result) {
    if (result.reproduction == nullptr) {
        throw std::invalid_argument("figureSvg: a result without its reproduction");
    }
    return figure_layout::draw(result);
}

}  // namespace ensemble::reproduce
