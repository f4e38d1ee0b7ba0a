#include "render/contour.h"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <limits>
#include <map>
#include <utility>

namespace ensemble::ui {

std::vector<QLineF> contourSegments(const std::function<double(int r, int c)>& value, int size,
                                    double level) {
    std::vector<QLineF> out;
    if (size < 2) {
        return out;
    }
    // Corners of the square between cell centres (r, c) .. (r+1, c+1), clockwise from top-left:
    // a = (r, c), b = (r, c+1), d = (r+1, c+1), e = (r+1, c).
    auto lerp = [level](double v0, double v1) {
        const double den = v1 - v0;
        return den != 0.0 ? std::clamp((level - v0) / den, 0.0, 1.0) : 0.5;
    };
    std::vector<double> above(static_cast<std::size_t>(size));
    std::vector<double> below(static_cast<std::size_t>(size));
    for (int c = 0; c < size; ++c) {
        below[static_cast<std::size_t>(c)] = value(0, c);
    }
    for (int r = 0; r + 1 < size; ++r) {
        std::swap(above, below);
        for (int c = 0; c < size; ++c) {
            below[static_cast<std::size_t>(c)] = value(r + 1, c);
        }
        const double y0 = r + 0.5;
        for (int c = 0; c + 1 < size; ++c) {
            const double a = above[static_cast<std::size_t>(c)];
            const double b = above[static_cast<std::size_t>(c) + 1];
            const double d = below[static_cast<std::size_t>(c) + 1];
            const double e = below[static_cast<std::size_t>(c)];
            const int index = (a > level ? 1 : 0) | (b > level ? 2 : 0) | (d > level ? 4 : 0) |
                              (e > level ? 8 : 0);
            if (index == 0 || index == 15) {
                continue;
            }
            const double x0 = c + 0.5;
            // Crossing points on the four edges.
            const QPointF top(x0 + lerp(a, b), y0);
            const QPointF right(x0 + 1.0, y0 + lerp(b, d));
            const QPointF bottom(x0 + lerp(e, d), y0 + 1.0);
            const QPointF left(x0, y0 + lerp(a, e));
            switch (index) {
                case 1:
                case 14:
                    out.emplace_back(left, top);
                    break;
                case 2:
                case 13:
                    out.emplace_back(top, right);
                    break;
                case 3:
                case 12:
                    out.emplace_back(left, right);
                    break;
                case 4:
                case 11:
                    out.emplace_back(right, bottom);
                    break;
                case 6:
                case 9:
                    out.emplace_back(top, bottom);
                    break;
                case 7:
                case 8:
                    out.emplace_back(left, bottom);
                    break;
                case 5:
                case 10: {
                    // Saddle: the centre value decides which corners connect.
                    const bool centreAbove = (a + b + d + e) / 4.0 > level;
                    const bool aAbove = index == 5;
                    if (centreAbove == aAbove) {
                        out.emplace_back(left, bottom);
                        out.emplace_back(top, right);
                    } else {
                        out.emplace_back(left, top);
                        out.emplace_back(right, bottom);
                    }
                    break;
                }
                default:
                    break;
            }
        }
    }
    return out;
}

std::vector<QPolygonF> joinSegments(const std::vector<QLineF>& segments) {
    // End points computed from the same cell edge are bit-identical, so exact keys suffice.
    auto key = [](const QPointF& p) { return std::make_pair(p.x(), p.y()); };
    std::map<std::pair<double, double>, std::vector<std::size_t>> ends;
    for (std::size_t i = 0; i < segments.size(); ++i) {
        ends[key(segments[i].p1())].push_back(i);
        ends[key(segments[i].p2())].push_back(i);
    }
    std::vector<uint8_t> used(segments.size(), 0);
    auto next = [&](const QPointF& at) -> std::ptrdiff_t {
        const auto it = ends.find(key(at));
        if (it == ends.end()) {
            return -1;
        }
        for (std::size_t i : it->second) {
            if (!used[i]) {
                return static_cast<std::ptrdiff_t>(i);
            }
        }
        return -1;
    };
    std::vector<QPolygonF> lines;
    for (std::size_t start = 0; start < segments.size(); ++start) {
        if (used[start]) {
            continue;
        }
        used[start] = 1;
        std::deque<QPointF> points{segments[start].p1(), segments[start].p2()};
        // Grow forwards from the back, then backwards from the front.
        for (bool forward : {true, false}) {
            while (true) {
                const QPointF end = forward ? points.back() : points.front();
                const std::ptrdiff_t n = next(end);
                if (n < 0) {
                    break;
                }
                used[static_cast<std::size_t>(n)] = 1;
                const QLineF& s = segments[static_cast<std::size_t>(n)];
                const QPointF other = key(s.p1()) == key(end) ? s.p2() : s.p1();
                if (forward) {
                    points.push_back(other);
                } else {
                    points.push_front(other);
                }
            }
        }
        lines.emplace_back(QList<QPointF>(points.begin(), points.end()));
    }
    return lines;
}

namespace {

template <typename T>
std::vector<QLineF> boundaryOf(const T* probs, int size, int classes) {
    const std::size_t g = static_cast<std::size_t>(size);
    const std::size_t cls = static_cast<std::size_t>(classes);
    if (classes == 2) {
        return contourSegments(
            [&](int r, int c) {
                return static_cast<double>(probs[(static_cast<std::size_t>(r) * g + c) * 2 + 1]);
            },
            size, 0.5);
    }
    std::vector<QLineF> out;
    for (int k = 0; k < classes; ++k) {
        std::vector<QLineF> part = contourSegments(
            [&](int r, int c) {
                const T* p = probs + (static_cast<std::size_t>(r) * g + c) * cls;
                double other = -std::numeric_limits<double>::infinity();
                for (int j = 0; j < classes; ++j) {
                    if (j != k) {
                        other = std::max(other, static_cast<double>(p[j]));
                    }
                }
                return static_cast<double>(p[k]) - other;
            },
            size, 0.0);
        out.insert(out.end(), part.begin(), part.end());
    }
    return out;
}

}  // namespace

std::vector<QLineF> decisionBoundary(const float* probs, int size, int classes) {
    return boundaryOf(probs, size, classes);
}

std::vector<QLineF> decisionBoundary(const double* probs, int size, int classes) {
    return boundaryOf(probs, size, classes);
}

}  // namespace ensemble::ui
