// The reproductions' tiny SVG plotting layer (svg_plot.h).
#include "reproduce/svg_plot.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <utility>

namespace ensemble::reproduce::svg {
namespace {

// Pixels: two decimals are a hundredth of a pixel, finer than any renderer draws.
std::string px2(double v) {
    return fixed(v, 2);
}

std::size_t codePoints(std::string_view s) {
    std::size_t n = 0;
    for (unsigned char ch : s) {
        n += (ch & 0xC0) != 0x80 ? 1 : 0;
    }
    return n;
}

// About how wide `s` is drawn at `size` in a generic sans-serif font.
double textWidth(std::string_view s, double size) {
    return 0.56 * size * static_cast<double>(codePoints(s));
}

const char* anchorName(Anchor a) {
    switch (a) {
        case Anchor::Start:
            return "start";
        case Anchor::Middle:
            return "middle";
        case Anchor::End:
            return "end";
    }
    return "start";
}

// 1, 2 or 5 times a power of ten, the nearest at or above `raw`.
double niceStep(double raw) {
    const double power = std::pow(10.0, std::floor(std::log10(raw)));
    for (double m : {1.0, 2.0, 5.0}) {
        if (m * power >= raw * (1.0 - 1e-9)) {
            return m * power;
        }
    }
    return 10.0 * power;
}

constexpr const char* kAxisColour = "#555555";
constexpr const char* kGridColour = "#e4e4e4";

}  // namespace

std::string fixed(double v, int decimals) {
    if (!std::isfinite(v)) {
        return "0";  // callers skip non-finite values; this keeps "nan" out of any attribute
    }
    char buf[400];
    const auto r = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::fixed, decimals);
    if (r.ec != std::errc()) {
        return general(v, 6);  // too long to write in full: never a coordinate
    }
    std::string s(buf, r.ptr);
    if (s.front() == '-' && s.find_first_not_of("-0.") == std::string::npos) {
        s.erase(0, 1);  // "-0.00": a value that rounds to zero is zero
    }
    return s;
}

std::string general(double v, int digits) {
    if (!std::isfinite(v)) {
        return "not finite";
    }
    char buf[64];
    const auto r = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::general, digits);
    return std::string(buf, r.ptr);
}

std::string escape(std::string_view text) {
    std::string out;
    out.reserve(text.size());
    for (char c : text) {
        switch (c) {
            case '&':
                out += "&amp;";
                break;
            case '<':
                out += "&lt;";
                break;
            case '>':
                out += "&gt;";
                break;
            case '"':
                out += "&quot;";
                break;
            case '\'':
                out += "&apos;";
                break;
            default:
                out += static_cast<unsigned char>(c) < 0x20 ? ' ' : c;
        }
    }
    return out;
}

std::vector<std::string> wrap(const std::string& text, std::size_t columns) {
    std::vector<std::string> lines;
    std::string line;
    std::size_t start = 0;
    while (start < text.size()) {
        std::size_t end = text.find(' ', start);
        if (end == std::string::npos) {
            end = text.size();
        }
        const std::string word = text.substr(start, end - start);
        if (!line.empty() && codePoints(line) + 1 + codePoints(word) > columns) {
            lines.push_back(line);
            line.clear();
        }
        line += (line.empty() ? "" : " ") + word;
        start = end + 1;
    }
    if (!line.empty()) {
        lines.push_back(line);
    }
    return lines;
}

Axis niceAxis(double lo, double hi, int targetTicks, std::string label) {
    if (!std::isfinite(lo) && !std::isfinite(hi)) {
        lo = 0.0;
        hi = 1.0;
    } else if (!std::isfinite(lo)) {
        lo = hi;
    } else if (!std::isfinite(hi)) {
        hi = lo;
    }
    if (lo > hi) {
        std::swap(lo, hi);
    }
    if (hi - lo <= 1e-12 * std::max(std::abs(lo), std::abs(hi))) {
        const double pad = lo != 0.0 ? 0.1 * std::abs(lo) : 1.0;
        lo -= pad;
        hi += pad;
    }
    const double step = niceStep((hi - lo) / std::max(1, targetTicks - 1));
    const double first = std::floor(lo / step + 1e-9);
    const double last = std::ceil(hi / step - 1e-9);
    Axis axis;
    axis.lo = first * step;
    axis.hi = last * step;
    for (double k = first; k <= last + 0.5; k += 1.0) {
        axis.ticks.push_back(k * step);
    }
    axis.decimals = std::clamp(static_cast<int>(-std::floor(std::log10(step) + 1e-9)), 0, 12);
    axis.label = std::move(label);
    return axis;
}

Axis categoryAxis(std::vector<std::string> categories, std::string label) {
    Axis axis;
    axis.lo = -0.5;
    axis.hi = static_cast<double>(categories.size()) - 0.5;
    axis.categories = std::move(categories);
    axis.label = std::move(label);
    return axis;
}

double Panel::px(double v) const {
    if (!std::isfinite(v)) {
        return left;
    }
    const double t = (std::clamp(v, x.lo, x.hi) - x.lo) / (x.hi - x.lo);
    return left + t * width;
}

double Panel::py(double v) const {
    if (!std::isfinite(v)) {
        return top + height;
    }
    const double t = (std::clamp(v, y.lo, y.hi) - y.lo) / (y.hi - y.lo);
    return top + height - t * height;
}

Document::Document(double width, std::string title) : width_(width), title_(std::move(title)) {}

void Document::beginGroup(const std::string& id, const std::string& cls) {
    out_ += "<g";
    if (!id.empty()) {
        out_ += " id=\"" + escape(id) + "\"";
    }
    if (!cls.empty()) {
        out_ += " class=\"" + escape(cls) + "\"";
    }
    out_ += ">\n";
    ++openGroups_;
}

void Document::endGroup() {
    if (openGroups_ > 0) {
        out_ += "</g>\n";
        --openGroups_;
    }
}

void Document::line(Point a, Point b, const std::string& stroke, double width,
                    const std::string& cls, const std::string& dash) {
    out_ += "<line";
    if (!cls.empty()) {
        out_ += " class=\"" + escape(cls) + "\"";
    }
    out_ += " x1=\"" + px2(a.x) + "\" y1=\"" + px2(a.y) + "\" x2=\"" + px2(b.x) + "\" y2=\"" +
            px2(b.y) + "\" stroke=\"" + stroke + "\" stroke-width=\"" + px2(width) + "\"";
    if (!dash.empty()) {
        out_ += " stroke-dasharray=\"" + dash + "\"";
    }
    out_ += "/>\n";
}

namespace {
std::string pointList(const std::vector<Point>& points) {
    std::string s;
    for (const Point& p : points) {
        s += (s.empty() ? "" : " ") + px2(p.x) + "," + px2(p.y);
    }
    return s;
}
}  // namespace

void Document::polyline(const std::vector<Point>& points, const std::string& stroke, double width,
                        const std::string& dash) {
    out_ += "<polyline points=\"" + pointList(points) + "\" fill=\"none\" stroke=\"" + stroke +
            "\" stroke-width=\"" + px2(width) + "\" stroke-linejoin=\"round\"";
    if (!dash.empty()) {
        out_ += " stroke-dasharray=\"" + dash + "\"";
    }
    out_ += "/>\n";
}

void Document::polygon(const std::vector<Point>& points, const std::string& fill, double opacity) {
    out_ += "<polygon points=\"" + pointList(points) + "\" fill=\"" + fill + "\" fill-opacity=\"" +
            fixed(opacity, 2) + "\" stroke=\"none\"/>\n";
}

void Document::rect(double x, double y, double w, double h, const std::string& fill, double opacity,
                    const std::string& stroke, const std::string& id) {
    out_ += "<rect";
    if (!id.empty()) {
        out_ += " id=\"" + escape(id) + "\"";
    }
    out_ += " x=\"" + px2(x) + "\" y=\"" + px2(y) + "\" width=\"" + px2(w) + "\" height=\"" +
            px2(h) + "\" fill=\"" + fill + "\" fill-opacity=\"" + fixed(opacity, 2) +
            "\" stroke=\"" + stroke + "\"/>\n";
}

void Document::circle(Point c, double r, const std::string& fill, const std::string& stroke,
                      const std::string& id, const std::string& cls) {
    out_ += "<circle";
    if (!id.empty()) {
        out_ += " id=\"" + escape(id) + "\"";
    }
    if (!cls.empty()) {
        out_ += " class=\"" + escape(cls) + "\"";
    }
    out_ += " cx=\"" + px2(c.x) + "\" cy=\"" + px2(c.y) + "\" r=\"" + px2(r) + "\" fill=\"" + fill +
            "\" stroke=\"" + stroke + "\" stroke-width=\"1.5\"/>\n";
}

void Document::text(Point at, const std::string& text, const TextStyle& style) {
    out_ += "<text";
    if (!style.cls.empty()) {
        out_ += " class=\"" + escape(style.cls) + "\"";
    }
    out_ += " x=\"" + px2(at.x) + "\" y=\"" + px2(at.y) +
            "\" font-family=\"sans-serif\" font-size=\"" + px2(style.size) + "\" text-anchor=\"" +
            anchorName(style.anchor) + "\" fill=\"" + style.fill + "\"";
    if (style.bold) {
        out_ += " font-weight=\"bold\"";
    }
    if (style.rotate != 0.0) {
        out_ +=
            " transform=\"rotate(" + px2(style.rotate) + " " + px2(at.x) + " " + px2(at.y) + ")\"";
    }
    out_ += ">" + escape(text) + "</text>\n";
}

std::string Document::finish(double height) {
    while (openGroups_ > 0) {
        endGroup();
    }
    const std::string w = px2(width_);
    const std::string h = px2(height);
    std::string doc = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
    doc += "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"" + w +
           "\" height=\"" + h + "\" viewBox=\"0 0 " + w + " " + h + "\">\n";
    doc += "<title>" + escape(title_) + "</title>\n";
    doc += "<rect x=\"0\" y=\"0\" width=\"" + w + "\" height=\"" + h + "\" fill=\"#ffffff\"/>\n";
    doc += out_;
    doc += "</svg>\n";
    out_.clear();
    return doc;
}

void drawPanel(Document& doc, const Panel& panel, const std::string& title) {
    const double bottom = panel.top + panel.height;
    const double right = panel.left + panel.width;
    TextStyle tickText;
    tickText.size = 9.5;
    tickText.fill = kAxisColour;
    if (panel.x.categories.empty()) {
        for (double t : panel.x.ticks) {
            doc.line({panel.px(t), panel.top}, {panel.px(t), bottom}, kGridColour, 1.0);
        }
    }
    for (double t : panel.y.ticks) {
        doc.line({panel.left, panel.py(t)}, {right, panel.py(t)}, kGridColour, 1.0);
    }
    doc.rect(panel.left, panel.top, panel.width, panel.height, "none", 1.0, kAxisColour);

    tickText.anchor = Anchor::Middle;
    tickText.cls = "xtick-label";
    const auto xTick = [&](double at, const std::string& label) {
        if (label.empty()) {
            return;  // a category with no name (a panel of one): no tick either
        }
        doc.line({panel.px(at), bottom}, {panel.px(at), bottom + 4.0}, kAxisColour, 1.0, "xtick");
        doc.text({panel.px(at), bottom + 14.0}, label, tickText);
    };
    for (std::size_t i = 0; i < panel.x.categories.size(); ++i) {
        xTick(static_cast<double>(i), panel.x.categories[i]);
    }
    for (double t : panel.x.ticks) {
        xTick(t, fixed(t, panel.x.decimals));
    }
    tickText.anchor = Anchor::End;
    tickText.cls = "ytick-label";
    const auto yTick = [&](double at, const std::string& label) {
        doc.line({panel.left - 4.0, panel.py(at)}, {panel.left, panel.py(at)}, kAxisColour, 1.0,
                 "ytick");
        doc.text({panel.left - 6.0, panel.py(at) + 3.5}, label, tickText);
    };
    for (std::size_t i = 0; i < panel.y.categories.size(); ++i) {
        yTick(static_cast<double>(i), panel.y.categories[i]);
    }
    for (double t : panel.y.ticks) {
        yTick(t, fixed(t, panel.y.decimals));
    }

    TextStyle axisText;
    axisText.size = 10.0;
    axisText.anchor = Anchor::Middle;
    axisText.fill = kAxisColour;
    if (!panel.x.label.empty()) {
        doc.text({panel.left + panel.width / 2.0, bottom + 28.0}, panel.x.label, axisText);
    }
    if (!panel.y.label.empty()) {
        double widest = 0.0;
        for (double t : panel.y.ticks) {
            widest = std::max(widest, textWidth(fixed(t, panel.y.decimals), tickText.size));
        }
        axisText.rotate = -90.0;
        doc.text({panel.left - widest - 14.0, panel.top + panel.height / 2.0}, panel.y.label,
                 axisText);
    }
    if (!title.empty()) {
        TextStyle titleText;
        titleText.size = 11.0;
        titleText.bold = true;
        titleText.anchor = Anchor::Middle;
        titleText.cls = "panel-title";
        doc.text({panel.left + panel.width / 2.0, panel.top - 7.0}, title, titleText);
    }
}

int drawSeries(Document& doc, const Panel& panel, const std::vector<double>& xs,
               const std::vector<double>& ys, const std::string& stroke, double width,
               const std::string& dash) {
    int skipped = 0;
    std::vector<Point> run;
    const auto flush = [&] {
        if (run.size() >= 2) {
            doc.polyline(run, stroke, width, dash);
        }
        run.clear();
    };
    for (std::size_t i = 0; i < xs.size() && i < ys.size(); ++i) {
        if (!std::isfinite(xs[i]) || !std::isfinite(ys[i])) {
            ++skipped;
            flush();
            continue;
        }
        run.push_back({panel.px(xs[i]), panel.py(ys[i])});
    }
    flush();
    return skipped;
}

int drawBand(Document& doc, const Panel& panel, const std::vector<double>& xs,
             const std::vector<double>& lows, const std::vector<double>& highs,
             const std::string& fill, double opacity) {
    int skipped = 0;
    std::vector<Point> lower;
    std::vector<Point> upper;
    const auto flush = [&] {
        if (lower.size() >= 2) {
            lower.insert(lower.end(), upper.rbegin(), upper.rend());
            doc.polygon(lower, fill, opacity);
        }
        lower.clear();
        upper.clear();
    };
    const std::size_t n = std::min({xs.size(), lows.size(), highs.size()});
    for (std::size_t i = 0; i < n; ++i) {
        if (!std::isfinite(xs[i]) || !std::isfinite(lows[i]) || !std::isfinite(highs[i])) {
            ++skipped;
            flush();
            continue;
        }
        lower.push_back({panel.px(xs[i]), panel.py(lows[i])});
        upper.push_back({panel.px(xs[i]), panel.py(highs[i])});
    }
    flush();
    return skipped;
}

void drawPointWithBar(Document& doc, const Panel& panel, double x, double y, double lo, double hi,
                      const std::string& colour, bool hollow, const std::string& id,
                      const std::string& cls) {
    const double cx = panel.px(x);
    if (std::isfinite(lo) && std::isfinite(hi)) {
        doc.line({cx, panel.py(lo)}, {cx, panel.py(hi)}, colour, 1.5);
        doc.line({cx - 4.0, panel.py(lo)}, {cx + 4.0, panel.py(lo)}, colour, 1.5);
        doc.line({cx - 4.0, panel.py(hi)}, {cx + 4.0, panel.py(hi)}, colour, 1.5);
    }
    doc.circle({cx, panel.py(y)}, 4.0, hollow ? "#ffffff" : colour, colour, id, cls);
}

double drawLegend(Document& doc, double x, double y, double right,
                  const std::vector<LegendEntry>& entries) {
    TextStyle label;
    label.size = 10.0;
    const double left = x;
    for (const LegendEntry& e : entries) {
        const double advance = 23.0 + textWidth(e.label, label.size) + 16.0;
        if (x > left && x + advance - 16.0 > right) {
            x = left;
            y += 16.0;
        }
        switch (e.kind) {
            case LegendEntry::Kind::Line:
                doc.line({x, y - 3.5}, {x + 18.0, y - 3.5}, e.colour, 2.0);
                break;
            case LegendEntry::Kind::DashedLine:
                doc.line({x, y - 3.5}, {x + 18.0, y - 3.5}, e.colour, 1.5, "", "5,3");
                break;
            case LegendEntry::Kind::Band:
                doc.rect(x, y - 9.0, 18.0, 11.0, e.colour, 0.25);
                break;
            case LegendEntry::Kind::Point:
                doc.circle({x + 9.0, y - 3.5}, 4.0, e.colour, e.colour);
                break;
            case LegendEntry::Kind::HollowPoint:
                doc.circle({x + 9.0, y - 3.5}, 4.0, "#ffffff", e.colour);
                break;
        }
        doc.text({x + 23.0, y}, e.label, label);
        x += advance;
    }
    return y;
}

}  // namespace ensemble::reproduce::svg
