#include "shift/transforms.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <numbers>
#include <string>
#include <vector>

#include "core/errors.h"
#include "core/index.h"
#include "math/philox.h"

namespace ensemble {
namespace {

// Streams of RngPurpose::Shift (the `sub` word of the counter).
enum class ShiftStream : uint32_t { Noise = 0, UniformImages = 1, Ring = 2 };

// cos and sin of an angle in degrees, exact at multiples of 90 (as scipy.special.cosdg and
// sindg are): the rotations by 90 and 180 degrees then move pixels without rounding.
void cosSinDegrees(double degrees, double& c, double& s) {
    const double reduced = std::fmod(degrees, 360.0);
    const double quarter = reduced / 90.0;
    if (quarter == std::floor(quarter)) {
        const int q = (static_cast<int>(quarter) % 4 + 4) % 4;
        constexpr double kCos[] = {1.0, 0.0, -1.0, 0.0};
        constexpr double kSin[] = {0.0, 1.0, 0.0, -1.0};
        c = kCos[q];
        s = kSin[q];
        return;
    }
    const double radians = reduced * std::numbers::pi / 180.0;
    c = std::cos(radians);
    s = std::sin(radians);
}

const char* dataText(ShiftData data) {
    return EnumNames<ShiftData>::table[static_cast<std::size_t>(data)].label;
}

void checkLevel(ShiftKind kind, double level) {
    if (!std::isfinite(level)) {
        throw ConfigError("--levels: a level of " + std::string(toString(kind)) +
                          " must be a finite number");
    }
    switch (kind) {
        case ShiftKind::Rotate:
        case ShiftKind::Translate:
            return;
        case ShiftKind::Noise:
            if (level < 0.0) {
                throw ConfigError("--levels: a noise sigma must be >= 0, got " +
                                  std::to_string(level));
            }
            return;
        case ShiftKind::Scale:
            if (level <= 0.0) {
                throw ConfigError("--levels: a scale factor must be > 0, got " +
                                  std::to_string(level));
            }
            return;
    }
}

}  // namespace

bool shiftApplies(ShiftKind kind, ShiftData data) {
    return shiftKindInfo(kind).levels[static_cast<std::size_t>(data)].step > 0.0;
}

std::vector<double> defaultShiftLevels(ShiftKind kind, ShiftData data) {
    const ShiftLevels& l = shiftKindInfo(kind).levels[static_cast<std::size_t>(data)];
    std::vector<double> out;
    if (l.step <= 0.0) {
        return out;
    }
    // Counted, not accumulated, so 0.1 steps give 0.3, not 0.30000000000000004 + drift.
    const auto count = static_cast<int>(std::floor((l.last - l.first) / l.step + 1e-9)) + 1;
    for (int i = 0; i < count; ++i) {
        // Rounded to 12 significant digits: 0.1 * 3 reads back as 0.3.
        const double v = l.first + l.step * i;
        out.push_back(std::round(v * 1e9) / 1e9);
    }
    return out;
}

std::string shiftKindsFor(ShiftData data) {
    return namesText<ShiftKind>(
        [data](const ShiftKindInfo& row) { return shiftApplies(row.value, data); });
}

ShiftData shiftDataOf(const DataSplit& data) {
    if (data.isImage) {
        return ShiftData::Images;
    }
    if (data.regression) {
        return ShiftData::Regression;
    }
    return data.train.features == 2 ? ShiftData::Planar : ShiftData::Tabular;
}

void checkShiftApplies(ShiftKind kind, const DataSplit& data) {
    const ShiftData what = shiftDataOf(data);
    if (shiftApplies(kind, what)) {
        return;
    }
    std::string needs;
    for (const auto& row : EnumNames<ShiftData>::table) {
        if (shiftApplies(kind, row.value)) {
            needs += needs.empty() ? "" : " or ";
            needs += row.label;
        }
    }
    throw ConfigError("--shift " + std::string(toString(kind)) + ": " + shiftKindInfo(kind).label +
                      " applies to " + needs + ", and " + data.name + " is " + dataText(what) +
                      " with " + std::to_string(data.train.features) +
                      (data.train.features == 1 ? " feature" : " features") + "; for it use " +
                      shiftKindsFor(what));
}

std::vector<double> parseShiftLevels(const std::string& text, const std::string& flag) {
    std::vector<double> out;
    std::size_t begin = 0;
    while (begin <= text.size()) {
        std::size_t end = text.find(',', begin);
        if (end == std::string::npos) {
            end = text.size();
        }
        std::string item = text.substr(begin, end - begin);
        item.erase(0, item.find_first_not_of(" \t"));
        item.erase(item.find_last_not_of(" \t") + 1);
        double v = 0.0;
        const auto r = std::from_chars(item.data(), item.data() + item.size(), v);
        if (item.empty() || r.ec != std::errc() || r.ptr != item.data() + item.size() ||
            !std::isfinite(v)) {
            throw ConfigError(flag + ": '" + item +
                              "' is not a number (expected a comma-separated list such as "
                              "0,15,30)");
        }
        out.push_back(v);
        begin = end + 1;
    }
    return out;
}

void rotateImage(const float* in, float* out, int width, int height, double degrees) {
    double c = 1.0;
    double s = 0.0;
    cosSinDegrees(degrees, c, s);
    // scipy.ndimage.rotate: the input coordinate of output (r, col) is M (r, col) + offset with
    // M = [[c, s], [-s, c]] and offset = centre - M centre, centre = ((h-1)/2, (w-1)/2); computed
    // in the same order as scipy's affine_transform so boundary decisions agree.
    const double cr = (height - 1) / 2.0;
    const double cc = (width - 1) / 2.0;
    const double offsetR = cr - (c * cr + s * cc);
    const double offsetC = cc - (-s * cr + c * cc);
    for (int r = 0; r < height; ++r) {
        for (int col = 0; col < width; ++col) {
            const double ir = c * r + s * col + offsetR;
            const double ic = -s * r + c * col + offsetC;
            float& o = out[static_cast<std::size_t>(r) * width + col];
            // mode='constant': a point outside [0, len - 1] reads cval; inside, order 1
            // interpolates between the (at most four) pixels around it.
            if (ir < 0.0 || ir > height - 1 || ic < 0.0 || ic > width - 1) {
                o = 0.0f;
                continue;
            }
            const int r0 = static_cast<int>(std::floor(ir));
            const int c0 = static_cast<int>(std::floor(ic));
            const double fr = ir - r0;
            const double fc = ic - c0;
            const int r1 = std::min(r0 + 1, height - 1);  // weight fr is 0 where r0 is the last
            const int c1 = std::min(c0 + 1, width - 1);
            const auto px = [&](int rr, int cc2) {
                return static_cast<double>(in[static_cast<std::size_t>(rr) * width + cc2]);
            };
            const double v = (1.0 - fr) * ((1.0 - fc) * px(r0, c0) + fc * px(r0, c1)) +
                             fr * ((1.0 - fc) * px(r1, c0) + fc * px(r1, c1));
            o = static_cast<float>(v);
        }
    }
}

void translateImage(const float* in, float* out, int width, int height, int pixels) {
    const int shift = ((pixels % width) + width) % width;
    for (int r = 0; r < height; ++r) {
        const float* from = in + static_cast<std::size_t>(r) * width;
        float* to = out + static_cast<std::size_t>(r) * width;
        for (int col = 0; col < width; ++col) {
            to[(col + shift) % width] = from[col];
        }
    }
}

ShiftFrame shiftFrameOf(const DataSplit& data, const Normalization& n) {
    ShiftFrame f;
    f.data = shiftDataOf(data);
    f.width = data.imageWidth;
    f.height = data.imageHeight;
    f.mean = n.mean;
    f.std = n.std;
    // Images reach the model as pixel / std (identity normalisation): std is the pixel range.
    f.pixelMax = data.isImage && !n.std.empty() ? n.std[0] : 255.0f;
    return f;
}

double shiftNoise(uint64_t seed, uint64_t index) {
    // Box-Muller (Box & Muller 1958) from the four words of one Philox block.
    const Philox4x32 d =
        philoxDraw(seed, RngPurpose::Shift, 0, index, static_cast<uint32_t>(ShiftStream::Noise));
    const double u1 = uniformOpenDouble(d.v[0], d.v[1]);
    const double u2 = uniformOpenDouble(d.v[2], d.v[3]);
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
}

Dataset applyShift(const Dataset& rows, ShiftKind kind, double level, const ShiftFrame& frame,
                   uint64_t seed) {
    if (!shiftApplies(kind, frame.data)) {
        throw ConfigError("--shift " + std::string(toString(kind)) + ": " +
                          shiftKindInfo(kind).label + " does not apply to " + dataText(frame.data) +
                          "; for it use " + shiftKindsFor(frame.data));
    }
    checkLevel(kind, level);
    const int d = rows.features;
    if (frame.data != ShiftData::Images &&
        (frame.mean.size() != idx(d) || frame.std.size() != idx(d))) {
        throw std::invalid_argument(
            "applyShift: the frame's mean and std need one entry per "
            "feature");
    }
    if (frame.data == ShiftData::Images && frame.width * frame.height != d) {
        throw std::invalid_argument("applyShift: the image size does not match the features");
    }
    Dataset out = rows;
    const int64_t n = rows.rows;
    switch (kind) {
        case ShiftKind::Rotate:
            if (frame.data == ShiftData::Images) {
#pragma omp parallel for schedule(static)
                for (int64_t i = 0; i < n; ++i) {
                    rotateImage(rows.row(i), out.x.data() + idx(i) * idx(d), frame.width,
                                frame.height, level);
                }
            } else {
                double c = 1.0;
                double s = 0.0;
                cosSinDegrees(level, c, s);
                const double mx = frame.mean[0];
                const double my = frame.mean[1];
                for (int64_t i = 0; i < n; ++i) {
                    const double x = rows.row(i)[0] - mx;
                    const double y = rows.row(i)[1] - my;
                    out.x[idx(i) * 2] = static_cast<float>(mx + c * x - s * y);
                    out.x[idx(i) * 2 + 1] = static_cast<float>(my + s * x + c * y);
                }
            }
            break;
        case ShiftKind::Translate: {
            const int pixels = static_cast<int>(std::lround(level));
            for (int64_t i = 0; i < n; ++i) {
                translateImage(rows.row(i), out.x.data() + idx(i) * idx(d), frame.width,
                               frame.height, pixels);
            }
            break;
        }
        case ShiftKind::Noise:
            if (level == 0.0) {
                break;
            }
#pragma omp parallel for schedule(static)
            for (int64_t i = 0; i < n; ++i) {
                for (int j = 0; j < d; ++j) {
                    const std::size_t at = idx(i) * idx(d) + idx(j);
                    const double z = shiftNoise(seed, static_cast<uint64_t>(at));
                    if (frame.data == ShiftData::Images) {
                        const double v = rows.x[at] + level * frame.pixelMax * z;
                        out.x[at] = static_cast<float>(std::clamp(v, 0.0, double{frame.pixelMax}));
                    } else {
                        out.x[at] = static_cast<float>(rows.x[at] + level * frame.std[idx(j)] * z);
                    }
                }
            }
            break;
        case ShiftKind::Scale:
            for (int64_t i = 0; i < n; ++i) {
                for (int j = 0; j < d; ++j) {
                    const std::size_t at = idx(i) * idx(d) + idx(j);
                    const double m = frame.mean[idx(j)];
                    out.x[at] = static_cast<float>(m + level * (rows.x[at] - m));
                }
            }
            break;
    }
    return out;
}

Dataset uniformNoiseImages(int64_t rows, int width, int height, float pixelMax, uint64_t seed) {
    Dataset out;
    out.rows = rows;
    out.features = width * height;
    out.x.resize(idx(rows) * idx(out.features));
    for (int f = 0; f < out.features; ++f) {
        out.featureNames.push_back("x" + std::to_string(f));
    }
    // One Philox block gives four pixels.
    for (std::size_t at = 0; at < out.x.size(); at += 4) {
        const Philox4x32 d = philoxDraw(seed, RngPurpose::Shift, 0, at / 4,
                                        static_cast<uint32_t>(ShiftStream::UniformImages));
        for (std::size_t w = 0; w < 4 && at + w < out.x.size(); ++w) {
            out.x[at + w] = uniformFloat(d.v[w]) * pixelMax;
        }
    }
    return out;
}

double planarRadius(const Dataset& train, const std::vector<float>& mean) {
    double radius = 0.0;
    for (int64_t i = 0; i < train.rows; ++i) {
        const double dx = train.row(i)[0] - mean[0];
        const double dy = train.row(i)[1] - mean[1];
        radius = std::max(radius, std::hypot(dx, dy));
    }
    return radius;
}

Dataset ringPoints(int64_t rows, const Dataset& train, const std::vector<float>& mean,
                   double factor, uint64_t seed) {
    if (train.features != 2 || mean.size() != 2) {
        throw std::invalid_argument("ringPoints: 2-D data only");
    }
    const double radius = factor * planarRadius(train, mean);
    Dataset out;
    out.rows = rows;
    out.features = 2;
    out.featureNames = train.featureNames;
    out.x.resize(idx(rows) * 2);
    for (int64_t i = 0; i < rows; ++i) {
        const Philox4x32 d = philoxDraw(seed, RngPurpose::Shift, 0, static_cast<uint64_t>(i),
                                        static_cast<uint32_t>(ShiftStream::Ring));
        const double angle = 2.0 * std::numbers::pi *
                             (static_cast<double>(i) + uniformFloat(d.v[0])) /
                             static_cast<double>(rows);
        out.x[idx(i) * 2] = static_cast<float>(mean[0] + radius * std::cos(angle));
        out.x[idx(i) * 2 + 1] = static_cast<float>(mean[1] + radius * std::sin(angle));
    }
    return out;
}

}  // namespace ensemble
