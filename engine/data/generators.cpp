// The 2-D toy datasets. Every random number comes from Philox (RngPurpose::DataGen), indexed by
// the point, so a dataset is a pure function of (n, parameters, seed) on any machine.
#include <cmath>
#include <numbers>
#include <string>
#include <vector>

#include "core/errors.h"
#include "data/dataset.h"
#include "math/philox.h"

namespace ensemble {
namespace {

// Separate streams per generator (the `member` word of the counter), so that two kinds drawn
// with the same seed are not built from the same numbers.
enum class GenStream : uint32_t {
    Spirals = 1,
    Moons = 2,
    Circles = 3,
    Xor = 4,
    Blobs = 5,
    Cubic = 6,
    Sine = 7,
    Linear = 8,
    LinearWeights = 9
};

struct Gaussian2 {
    double a;
    double b;
};

// Two independent N(0, 1) draws for point `i` by Box-Muller (Box & Muller 1958), from the four
// words of one Philox block. uniformOpenDouble never returns 0, so log() is finite.
Gaussian2 gaussianPair(uint64_t seed, GenStream stream, int64_t i) {
    const Philox4x32 d = philoxDraw(seed, RngPurpose::DataGen, static_cast<uint32_t>(stream),
                                    static_cast<uint64_t>(i));
    const double u1 = uniformOpenDouble(d.v[0], d.v[1]);
    const double u2 = uniformOpenDouble(d.v[2], d.v[3]);
    const double radius = std::sqrt(-2.0 * std::log(u1));
    const double angle = 2.0 * std::numbers::pi * u2;
    return {radius * std::cos(angle), radius * std::sin(angle)};
}

// The second block of point `i`: uniform draws that are not noise (signs, positions).
Philox4x32 extraDraw(uint64_t seed, GenStream stream, int64_t i) {
    return philoxDraw(seed, RngPurpose::DataGen, static_cast<uint32_t>(stream),
                      static_cast<uint64_t>(i), 1);
}

void checkParameters(const char* what, int64_t n, double noise) {
    if (n < 1) {
        throw ConfigError(std::string(what) + ": dataset.n must be at least 1, got " +
                          std::to_string(n));
    }
    if (!(noise >= 0.0) || !std::isfinite(noise)) {
        throw ConfigError(std::string(what) + ": dataset.noise must be a finite value >= 0");
    }
}

Dataset emptyPlane(int64_t n) {
    Dataset d;
    d.rows = n;
    d.features = 2;
    d.x.resize(static_cast<std::size_t>(n) * 2);
    d.y.resize(static_cast<std::size_t>(n));
    d.featureNames = {"x0", "x1"};
    return d;
}

void setPoint(Dataset& d, int64_t i, double x, double y, int32_t label) {
    d.x[static_cast<std::size_t>(2 * i)] = static_cast<float>(x);
    d.x[static_cast<std::size_t>(2 * i + 1)] = static_cast<float>(y);
    d.y[static_cast<std::size_t>(i)] = label;
}

// numpy.linspace(start, stop, count, endpoint)[i].
double linspace(double start, double stop, int64_t count, int64_t i, bool endpoint = true) {
    const int64_t intervals = endpoint ? count - 1 : count;
    if (intervals <= 0) {
        return start;
    }
    return start + (stop - start) * static_cast<double>(i) / static_cast<double>(intervals);
}

}  // namespace

Dataset makeSpirals(int64_t n, double noise, double rotations, uint64_t seed) {
    checkParameters("spirals", n, noise);
    if (!std::isfinite(rotations)) {
        throw ConfigError("spirals: dataset.rotations must be finite");
    }
    Dataset d = emptyPlane(n);
    for (int64_t i = 0; i < n; ++i) {
        // Whitney (2021): the arm a point lies on is its random sign; r = sqrt(t) spreads the
        // points evenly over the area rather than along the arm.
        const double t = linspace(0.0, 1.0, n, i);
        const double r = std::sqrt(t);
        const double theta = r * rotations * 2.0 * std::numbers::pi;
        const double s = (extraDraw(seed, GenStream::Spirals, i).v[0] & 1u) ? 1.0 : -1.0;
        const Gaussian2 g = gaussianPair(seed, GenStream::Spirals, i);
        setPoint(d, i, r * s * std::cos(theta) + noise * g.a, r * s * std::sin(theta) + noise * g.b,
                 s > 0 ? 1 : 0);
    }
    return d;
}

// As scikit-learn's make_moons (without its shuffle: the split permutes anyway): the first
// n/2 points are the upper half circle (label 0), the rest the lower one shifted to (1, 0.5).
Dataset makeMoons(int64_t n, double noise, uint64_t seed) {
    checkParameters("moons", n, noise);
    Dataset d = emptyPlane(n);
    const int64_t nOuter = n / 2;
    const int64_t nInner = n - nOuter;
    for (int64_t i = 0; i < n; ++i) {
        const bool outer = i < nOuter;
        const double a = outer ? linspace(0.0, std::numbers::pi, nOuter, i)
                               : linspace(0.0, std::numbers::pi, nInner, i - nOuter);
        const double x = outer ? std::cos(a) : 1.0 - std::cos(a);
        const double y = outer ? std::sin(a) : 0.5 - std::sin(a);
        const Gaussian2 g = gaussianPair(seed, GenStream::Moons, i);
        setPoint(d, i, x + noise * g.a, y + noise * g.b, outer ? 0 : 1);
    }
    return d;
}

// As scikit-learn's make_circles with factor 0.5: the first n/2 points on the unit circle
// (label 0), the rest on the circle of radius 0.5 (label 1), angles evenly spaced.
Dataset makeCircles(int64_t n, double noise, uint64_t seed) {
    checkParameters("circles", n, noise);
    constexpr double kFactor = 0.5;
    Dataset d = emptyPlane(n);
    const int64_t nOuter = n / 2;
    const int64_t nInner = n - nOuter;
    for (int64_t i = 0; i < n; ++i) {
        const bool outer = i < nOuter;
        const double a = outer ? linspace(0.0, 2.0 * std::numbers::pi, nOuter, i, false)
                               : linspace(0.0, 2.0 * std::numbers::pi, nInner, i - nOuter, false);
        const double r = outer ? 1.0 : kFactor;
        const Gaussian2 g = gaussianPair(seed, GenStream::Circles, i);
        setPoint(d, i, r * std::cos(a) + noise * g.a, r * std::sin(a) + noise * g.b, outer ? 0 : 1);
    }
    return d;
}

// Points uniform in [-1, 1]^2, label 1 where the coordinates' signs differ (2nd and 4th
// quadrants). The label is taken before the noise is added, so noise blurs the axes.
Dataset makeXor(int64_t n, double noise, uint64_t seed) {
    checkParameters("xor", n, noise);
    Dataset d = emptyPlane(n);
    for (int64_t i = 0; i < n; ++i) {
        const Philox4x32 u = extraDraw(seed, GenStream::Xor, i);
        const double x = 2.0 * uniformOpenDouble(u.v[0], u.v[1]) - 1.0;
        const double y = 2.0 * uniformOpenDouble(u.v[2], u.v[3]) - 1.0;
        const Gaussian2 g = gaussianPair(seed, GenStream::Xor, i);
        setPoint(d, i, x + noise * g.a, y + noise * g.b, (x < 0.0) != (y < 0.0) ? 1 : 0);
    }
    return d;
}

// `classes` isotropic Gaussian blobs, centres evenly spaced on the circle of radius 2, each of
// standard deviation `noise` (the same key as every 2-D kind: about 0.5-1 makes neighbouring
// blobs overlap, the default 0.05 keeps them apart). Point i belongs to class i mod classes, so
// classes are balanced to within one point.
Dataset makeBlobs(int64_t n, int classes, double noise, uint64_t seed) {
    checkParameters("blobs", n, noise);
    if (classes < 1) {
        throw ConfigError("blobs: dataset.classes must be at least 1, got " +
                          std::to_string(classes));
    }
    constexpr double kRadius = 2.0;
    Dataset d = emptyPlane(n);
    for (int64_t i = 0; i < n; ++i) {
        const int32_t label = static_cast<int32_t>(i % classes);
        const double a = 2.0 * std::numbers::pi * label / classes;
        const Gaussian2 g = gaussianPair(seed, GenStream::Blobs, i);
        setPoint(d, i, kRadius * std::cos(a) + noise * g.a, kRadius * std::sin(a) + noise * g.b,
                 label);
    }
    return d;
}

namespace {

// A regression table of n rows with `features` inputs x0, x1, ... and the target y.
Dataset emptyRegression(int64_t n, int features) {
    Dataset d;
    d.rows = n;
    d.features = features;
    d.x.resize(static_cast<std::size_t>(n) * static_cast<std::size_t>(features));
    d.target.resize(static_cast<std::size_t>(n));
    for (int f = 0; f < features; ++f) {
        d.featureNames.push_back("x" + std::to_string(f));
    }
    d.targetName = "y";
    return d;
}

// Uniform in [lo, hi) from point i's second block.
double uniformAt(uint64_t seed, GenStream stream, int64_t i, double lo, double hi) {
    const Philox4x32 u = extraDraw(seed, stream, i);
    return lo + (hi - lo) * uniformOpenDouble(u.v[0], u.v[1]);
}

}  // namespace

Dataset makeCubic(int64_t n, double noise, uint64_t seed) {
    checkParameters("cubic", n, noise);
    Dataset d = emptyRegression(n, 1);
    for (int64_t i = 0; i < n; ++i) {
        const double x = uniformAt(seed, GenStream::Cubic, i, -4.0, 4.0);
        const Gaussian2 g = gaussianPair(seed, GenStream::Cubic, i);
        d.x[static_cast<std::size_t>(i)] = static_cast<float>(x);
        d.target[static_cast<std::size_t>(i)] = static_cast<float>(x * x * x + noise * g.a);
    }
    return d;
}

Dataset makeSine(int64_t n, uint64_t seed) {
    checkParameters("sine", n, 0.0);
    Dataset d = emptyRegression(n, 1);
    for (int64_t i = 0; i < n; ++i) {
        const double x = uniformAt(seed, GenStream::Sine, i, -3.0, 3.0);
        const Gaussian2 g = gaussianPair(seed, GenStream::Sine, i);
        d.x[static_cast<std::size_t>(i)] = static_cast<float>(x);
        d.target[static_cast<std::size_t>(i)] =
            static_cast<float>(std::sin(2.0 * x) + (0.05 + 0.15 * std::abs(x)) * g.a);
    }
    return d;
}

Dataset makeLinear(int64_t n, int features, double noise, uint64_t seed) {
    checkParameters("linear", n, noise);
    if (features < 1) {
        throw ConfigError("linear: dataset.features must be at least 1, got " +
                          std::to_string(features));
    }
    // w_0..w_{d-1} and b (index d) from their own stream: the same for every n.
    std::vector<double> w(static_cast<std::size_t>(features) + 1);
    for (int j = 0; j <= features; ++j) {
        w[static_cast<std::size_t>(j)] = gaussianPair(seed, GenStream::LinearWeights, j).a;
    }
    Dataset d = emptyRegression(n, features);
    const std::size_t f = static_cast<std::size_t>(features);
    for (int64_t i = 0; i < n; ++i) {
        double y = w[f];
        for (int j = 0; j < features; ++j) {
            // Two features per Philox block (Box-Muller pairs), blocks indexed by (i, j / 2).
            const Gaussian2 g =
                gaussianPair(seed, GenStream::Linear, i * ((features + 1) / 2 + 1) + j / 2);
            const float x = static_cast<float>(j % 2 == 0 ? g.a : g.b);
            d.x[static_cast<std::size_t>(i) * f + static_cast<std::size_t>(j)] = x;
            y += w[static_cast<std::size_t>(j)] * x;  // the stored x: y is exact in the table
        }
        const Gaussian2 e = gaussianPair(seed, GenStream::Linear,
                                         i * ((features + 1) / 2 + 1) + (features + 1) / 2);
        d.target[static_cast<std::size_t>(i)] = static_cast<float>(y + noise * e.a);
    }
    return d;
}

// The rows' generators (data/dataset_kinds.h): the config's parameters for each kind.
Dataset generateSpirals(const DatasetConfig& c) {
    return makeSpirals(c.n, c.noise, c.rotations, c.seed);
}

Dataset generateMoons(const DatasetConfig& c) {
    return makeMoons(c.n, c.noise, c.seed);
}

Dataset generateCircles(const DatasetConfig& c) {
    return makeCircles(c.n, c.noise, c.seed);
}

Dataset generateXor(const DatasetConfig& c) {
    return makeXor(c.n, c.noise, c.seed);
}

Dataset generateBlobs(const DatasetConfig& c) {
    if (c.classes < 2) {
        throw ConfigError("dataset.classes: blobs need at least 2 classes, got " +
                          std::to_string(c.classes));
    }
    return makeBlobs(c.n, c.classes, c.noise, c.seed);
}

Dataset generateCubic(const DatasetConfig& c) {
    return makeCubic(c.n, c.noise, c.seed);
}

Dataset generateSine(const DatasetConfig& c) {
    return makeSine(c.n, c.seed);
}

Dataset generateLinear(const DatasetConfig& c) {
    return makeLinear(c.n, c.features, c.noise, c.seed);
}

}  // namespace ensemble
