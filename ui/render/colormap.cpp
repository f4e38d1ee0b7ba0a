#include "render/colormap.h"

#include <algorithm>
#include <array>
#include <cmath>

namespace ensemble::ui {

namespace {

struct Stop {
    double t;
    int r;
    int g;
    int b;
};

template <std::size_t N>
QRgb interpolate(const std::array<Stop, N>& stops, double t) {
    if (!(t >= 0.0)) {  // NaN too
        t = 0.0;
    }
    t = std::min(t, 1.0);
    std::size_t i = 1;
    while (i + 1 < N && stops[i].t < t) {
        ++i;
    }
    const Stop& a = stops[i - 1];
    const Stop& b = stops[i];
    const double u = b.t > a.t ? (t - a.t) / (b.t - a.t) : 0.0;
    auto mix = [u](int x, int y) { return static_cast<int>(std::lround(x + (y - x) * u)); };
    return qRgb(mix(a.r, b.r), mix(a.g, b.g), mix(a.b, b.b));
}

// ColorBrewer RdBu, reversed (blue = class 0), lightened towards white so that the points,
// drawn in the saturated class colours, stand out on top.
constexpr std::array<Stop, 7> kDiverging = {{{0.0, 111, 160, 208},
                                             {0.18, 148, 189, 225},
                                             {0.36, 205, 224, 239},
                                             {0.5, 247, 247, 245},
                                             {0.64, 249, 216, 202},
                                             {0.82, 236, 161, 143},
                                             {1.0, 222, 118, 106}}};

// viridis (matplotlib), nine stops.
constexpr std::array<Stop, 9> kViridis = {{{0.0, 68, 1, 84},
                                           {0.125, 71, 44, 122},
                                           {0.25, 59, 81, 139},
                                           {0.375, 44, 113, 142},
                                           {0.5, 33, 144, 141},
                                           {0.625, 39, 173, 129},
                                           {0.75, 92, 200, 99},
                                           {0.875, 170, 220, 50},
                                           {1.0, 253, 231, 37}}};

// Tableau 10, with the first two matched to the diverging map's ends.
constexpr std::array<QRgb, 10> kClassColors = {0xff1f5fa8, 0xffc0282d, 0xff2ca02c, 0xffff7f0e,
                                               0xff9467bd, 0xff8c564b, 0xffe377c2, 0xff7f7f7f,
                                               0xffbcbd22, 0xff17becf};

}  // namespace

QRgb divergingColor(double t) {
    return interpolate(kDiverging, t);
}

QRgb sequentialColor(double t) {
    return interpolate(kViridis, t);
}

QColor classColor(int c, int classes) {
    (void)classes;
    if (c < 0) {
        return QColor(120, 120, 120);
    }
    QColor color = QColor::fromRgb(kClassColors[static_cast<std::size_t>(c) % kClassColors.size()]);
    if (c >= static_cast<int>(kClassColors.size())) {
        // Beyond ten classes, vary the lightness so repeats stay distinguishable.
        color = color.darker(100 + 30 * (c / static_cast<int>(kClassColors.size())));
    }
    return color;
}

QRgb classConfidenceColor(int c, double confidence, int classes) {
    const double floor = classes > 0 ? 1.0 / classes : 0.0;
    double s = floor < 1.0 ? (confidence - floor) / (1.0 - floor) : 1.0;
    s = std::clamp(std::isfinite(s) ? s : 0.0, 0.0, 1.0);
    // Full colour would hide the points; the most confident cells reach 78 % of it.
    s *= 0.78;
    const QColor base = classColor(c, classes);
    auto mix = [s](int channel) {
        return static_cast<int>(std::lround(250.0 + (channel - 250.0) * s));
    };
    return qRgb(mix(base.red()), mix(base.green()), mix(base.blue()));
}

QImage colorStrip(const std::function<QRgb(double)>& map, int length, bool vertical) {
    length = std::max(length, 2);
    QImage image(vertical ? 1 : length, vertical ? length : 1, QImage::Format_RGB32);
    for (int i = 0; i < length; ++i) {
        const double t = static_cast<double>(i) / (length - 1);
        if (vertical) {
            image.setPixel(0, length - 1 - i, map(t));
        } else {
            image.setPixel(i, 0, map(t));
        }
    }
    return image;
}

}  // namespace ensemble::ui
