#pragma once

// Dataset shift (Ovadia et al. 2019, "Can You Trust Your Model's Uncertainty? Evaluating
// Predictive Uncertainty Under Dataset Shift"): the transforms applied to a test split, one row
// per kind in a registry (core/named_enum.h) that says which data each applies to and its
// default levels, and the out-of-distribution sets the shift report and `eval --ood` add
// (uniform-noise images, a ring around 2-D data). Deterministic for a seed.
//
// Images are one channel, width x height, row-major with rows top-down, in the dataset's raw
// units (0..255 for MNIST; the model sees pixel / 255). The transforms are linear in the pixel
// values, so they equal their definitions on the 0..1 scale times 255.

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/named_enum.h"
#include "data/dataset.h"

namespace ensemble {

enum class ShiftKind { Rotate, Translate, Noise, Scale };
inline constexpr std::size_t kShiftKindCount = 4;

// What a split is, as far as the shifts care (shiftDataOf).
enum class ShiftData {
    Images,      // IDX images (MNIST, Fashion-MNIST, any IDX data)
    Planar,      // classification, two features (the 2-D generators, a 2-column CSV)
    Tabular,     // classification, any other feature count (CSV)
    Regression,  // regression, any feature count
};
inline constexpr std::size_t kShiftDataCount = 4;

template <>
struct EnumNames<ShiftData> {
    static constexpr EnumName<ShiftData> table[] = {
        {ShiftData::Images, "images", "images"},
        {ShiftData::Planar, "planar", "2-D points"},
        {ShiftData::Tabular, "tabular", "tabular (CSV) data"},
        {ShiftData::Regression, "regression", "regression data"},
    };
};
static_assert(tableMatchesEnum<ShiftData>(kShiftDataCount));

// Evenly spaced levels first, first + step, ..., last (inclusive); step 0: none.
struct ShiftLevels {
    double first = 0.0;
    double last = 0.0;
    double step = 0.0;
    const char* unit = "";  // "degrees", "pixels", ...
};

struct ShiftKindInfo {
    ShiftKind value;
    const char* name;   // --shift
    const char* label;  // for people (the view's combo box)
    const char* help;   // one line: what it does (docs, tooltips)
    // Which data it applies to, indexed by ShiftData; the levels per data (step 0 where the
    // kind does not apply). The level that leaves data unchanged is `identity`.
    ShiftLevels levels[kShiftDataCount];
    double identity = 0.0;
};

template <>
struct EnumNames<ShiftKind> {
    // clang-format off
    static constexpr ShiftKindInfo table[] = {
        {.value = ShiftKind::Rotate, .name = "rotate", .label = "Rotation",
         .help = "images: rotated about their centre (bilinear, zeros outside); 2-D points: "
                 "rotated about the training mean",
         .levels = {{0, 180, 15, "degrees"}, {0, 180, 15, "degrees"}, {}, {}},
         .identity = 0},
        {.value = ShiftKind::Translate, .name = "translate", .label = "Translation",
         .help = "images: moved right along the width, wrapping around",
         .levels = {{0, 28, 2, "pixels"}, {}, {}, {}},
         .identity = 0},
        {.value = ShiftKind::Noise, .name = "noise", .label = "Gaussian noise",
         .help = "images: Gaussian noise of sigma on the 0..1 pixel scale, clipped to 0..1; "
                 "other data: Gaussian noise of sigma training standard deviations per feature",
         .levels = {{0, 1, 0.1, "sigma (0..1 pixels)"}, {0, 1, 0.1, "sigma (standardised)"},
                    {0, 1, 0.1, "sigma (standardised)"}, {0, 1, 0.1, "sigma (standardised)"}},
         .identity = 0},
        {.value = ShiftKind::Scale, .name = "scale", .label = "Scaling (extrapolation)",
         .help = "points moved away from the training mean by a factor",
         .levels = {{}, {1, 3, 0.25, "factor"}, {1, 3, 0.25, "factor"}, {1, 3, 0.25, "factor"}},
         .identity = 1},
    };
    // clang-format on
};
static_assert(tableMatchesEnum<ShiftKind>(kShiftKindCount),
              "one row per ShiftKind, in the enum's order");

inline const ShiftKindInfo& shiftKindInfo(ShiftKind kind) {
    return enumRow(kind);
}

// Whether `kind` applies to `data` (its levels there have a step).
bool shiftApplies(ShiftKind kind, ShiftData data);
// The default levels of `kind` on `data` (empty where it does not apply).
std::vector<double> defaultShiftLevels(ShiftKind kind, ShiftData data);
// "a, b or c": the kinds that apply to `data`, for messages and the view's list.
std::string shiftKindsFor(ShiftData data);

// Images when the split is IDX images, Regression for a regression split, Planar for two
// features, else Tabular.
ShiftData shiftDataOf(const DataSplit& data);

// ConfigError naming the kind, the data and the kinds that do apply, unless `kind` applies:
// "--shift rotate: rotation needs 2-D points or images, and iris.csv is tabular (CSV) data
// with 4 features; for it use noise or scale".
void checkShiftApplies(ShiftKind kind, const DataSplit& data);

// "0,15,30" -> {0, 15, 30}; ConfigError naming `flag` for an empty list or a non-number.
std::vector<double> parseShiftLevels(const std::string& text, const std::string& flag = "--levels");

// ---- image transforms (one image) ------------------------------------------------------------

// scipy.ndimage.rotate(img, degrees, reshape=False, order=1, mode='constant', cval=0): the
// output pixel (r, c) takes the bilinear value of the input at the point rotated back about
// the centre ((h-1)/2, (w-1)/2); points outside the image read 0. Positive angles turn the
// image counter-clockwise as displayed (rows top-down), so 90 degrees is numpy.rot90(img, 1).
void rotateImage(const float* in, float* out, int width, int height, double degrees);

// numpy.roll(img, pixels, axis=1): out(r, c) = in(r, (c - pixels) mod width). Any integer
// (negative moves left).
void translateImage(const float* in, float* out, int width, int height, int pixels);

// ---- the transform of a split ----------------------------------------------------------------

// What a transform needs to know about the data it moves: the kind of data, the image size,
// the training mean and standard deviation per feature in raw units (the model's
// Normalization), and the pixel range (0..pixelMax) that image noise is clipped to.
struct ShiftFrame {
    ShiftData data = ShiftData::Tabular;
    int width = 0;
    int height = 0;
    std::vector<float> mean;
    std::vector<float> std;
    float pixelMax = 255.0f;
};

// The frame of `data` with the model's normalisation `n` (mean/std of the train split in raw
// units; for images 0 and 255, so pixelMax = 255).
ShiftFrame shiftFrameOf(const DataSplit& data, const Normalization& n);

// `rows` (a test split in raw units) moved by `kind` at `level`; labels and targets kept.
//   Rotate    images: rotateImage; planar: x' = m + R(level degrees) (x - m), m the train mean
//   Translate images: translateImage by round(level)
//   Noise     images: x + level * pixelMax * z, clipped to [0, pixelMax];
//             else:   x_j + level * std_j * z
//   Scale     x' = m + level (x - m)
// z standard normal from Philox (RngPurpose::Shift, `seed`), one draw per value, indexed by
// (row, feature), so a level's noise is level times the same z (common random numbers across
// levels) and a row's noise does not depend on which other rows are shifted.
// Throws ConfigError when the kind does not apply to frame.data (checkShiftApplies's text).
Dataset applyShift(const Dataset& rows, ShiftKind kind, double level, const ShiftFrame& frame,
                   uint64_t seed);

// The standard normal draw of value `index` of the noise stream of `seed` (exposed for tests).
double shiftNoise(uint64_t seed, uint64_t index);

// ---- out-of-distribution sets ----------------------------------------------------------------

// `rows` images of independent uniform pixels in [0, pixelMax] (Philox, RngPurpose::Shift
// stream 1 of `seed`); label column empty.
Dataset uniformNoiseImages(int64_t rows, int width, int height, float pixelMax, uint64_t seed);

// The radius of 2-D data: the largest distance of a train row from the train mean.
double planarRadius(const Dataset& train, const std::vector<float>& mean);

// `rows` points on the circle of radius factor * planarRadius about the train mean, at angles
// 2 pi (i + u_i) / rows (u_i uniform from Philox stream 2 of `seed`). Precondition: 2 features.
Dataset ringPoints(int64_t rows, const Dataset& train, const std::vector<float>& mean,
                   double factor, uint64_t seed);
constexpr double kRingRadiusFactor = 1.5;

}  // namespace ensemble
