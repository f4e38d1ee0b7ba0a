#pragma once

// A tiny SVG plotting layer for the reproductions' figures (figure.h): a document that writes
// SVG 1.1 elements, panels with a linear mapping from data to pixels, axes with ticks at nice
// numbers, line series, shaded bands, points with error bars and text. Only what Qt SVG's
// renderer (SVG Tiny 1.2, the app's QSvgWidget) draws too: no CSS, no clip paths, no
// dominant-baseline; every colour a presentation attribute.
// Every number is written by std::to_chars, never printf: a Qt application runs under the
// user's LC_NUMERIC, where printf writes "0,5", and the same result must give the same bytes in
// the CLI and the app.

#include <string>
#include <string_view>
#include <vector>

namespace ensemble::reproduce::svg {

// `v` with `decimals` digits after the point, locale-independent; "-0.00" is "0.00".
std::string fixed(double v, int decimals);
// `v` to `digits` significant digits, as %g would write it but locale-independent.
std::string general(double v, int digits);
// Text for XML character data and attribute values: & < > " ' escaped, control characters
// (which XML 1.0 does not allow) replaced by blanks.
std::string escape(std::string_view text);
// `text` broken at blanks into lines of at most `columns` characters (UTF-8 code points).
std::vector<std::string> wrap(const std::string& text, std::size_t columns);

struct Axis {
    double lo = 0.0;
    double hi = 1.0;
    std::vector<double> ticks;            // numeric: the tick values, labelled with `decimals`
    int decimals = 0;                     //
    std::vector<std::string> categories;  // categorical: a label at 0, 1, ..., n - 1
    std::string label;
};
// An axis covering [lo, hi] (widened to nice numbers) with about `targetTicks` ticks at
// 1, 2 or 5 times a power of ten. A degenerate or non-finite range is widened around what is
// finite in it, or [0, 1].
Axis niceAxis(double lo, double hi, int targetTicks, std::string label);
// Categories at 0..n-1, the axis from -0.5 to n - 0.5.
Axis categoryAxis(std::vector<std::string> categories, std::string label);

// A plot area in pixels and the axes that map data into it.
struct Panel {
    double left = 0.0;
    double top = 0.0;
    double width = 0.0;
    double height = 0.0;
    Axis x;
    Axis y;
    // Data to pixels; values beyond an axis are clamped to its edge.
    double px(double v) const;
    double py(double v) const;
};

struct Point {
    double x = 0.0;
    double y = 0.0;
};

enum class Anchor { Start, Middle, End };

struct TextStyle {
    double size = 11.0;
    Anchor anchor = Anchor::Start;
    std::string fill = "#222222";
    bool bold = false;
    double rotate = 0.0;  // degrees about the text's anchor point
    std::string cls;      // a class attribute, for readers of the document
};

// An SVG 1.1 document of a fixed width, written element by element; its height is known at the
// end (figures grow with their panels and caption).
class Document {
  public:
    Document(double width, std::string title);
    void beginGroup(const std::string& id, const std::string& cls);
    void endGroup();
    void line(Point a, Point b, const std::string& stroke, double width,
              const std::string& cls = "", const std::string& dash = "");
    // A polyline through `points` (pixels).
    void polyline(const std::vector<Point>& points, const std::string& stroke, double width,
                  const std::string& dash = "");
    void polygon(const std::vector<Point>& points, const std::string& fill, double opacity);
    void rect(double x, double y, double w, double h, const std::string& fill, double opacity,
              const std::string& stroke = "none", const std::string& id = "");
    void circle(Point c, double r, const std::string& fill, const std::string& stroke,
                const std::string& id = "", const std::string& cls = "");
    void text(Point at, const std::string& text, const TextStyle& style);
    // The document, `height` pixels tall, closed. Call once.
    std::string finish(double height);

  private:
    double width_ = 0.0;
    std::string title_;
    std::string out_;  // the elements
    int openGroups_ = 0;
};

// The panel's frame, grid lines, ticks with their labels (class "xtick"/"ytick" on the tick
// lines, "xtick-label"/"ytick-label" on their text, in the same order), the axes' labels and
// `title` above it.
void drawPanel(Document& doc, const Panel& panel, const std::string& title);

// A line through the data points, broken where a value is not finite; returns how many points
// it skipped.
int drawSeries(Document& doc, const Panel& panel, const std::vector<double>& xs,
               const std::vector<double>& ys, const std::string& stroke, double width,
               const std::string& dash = "");
// The region between `lows` and `highs` over `xs`, one polygon per finite stretch; returns
// how many points it skipped.
int drawBand(Document& doc, const Panel& panel, const std::vector<double>& xs,
             const std::vector<double>& lows, const std::vector<double>& highs,
             const std::string& fill, double opacity);
// A marker at (x, y) with a vertical bar from `lo` to `hi` (no bar where they are not finite).
// `hollow`: a white marker with a coloured ring (the paper's), else filled (ours).
void drawPointWithBar(Document& doc, const Panel& panel, double x, double y, double lo, double hi,
                      const std::string& colour, bool hollow, const std::string& id,
                      const std::string& cls);

struct LegendEntry {
    enum class Kind { Line, DashedLine, Band, Point, HollowPoint };
    Kind kind = Kind::Line;
    std::string colour;
    std::string label;
};
// The entries in a row from (x, y), wrapped before `right`; returns the last row's y.
double drawLegend(Document& doc, double x, double y, double right,
                  const std::vector<LegendEntry>& entries);

}  // namespace ensemble::reproduce::svg
