#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/shape.h"
#include "data/dataset_config.h"

namespace ensemble {

// A labelled table in the dataset's raw units (pixels 0..255 for images), row-major. A
// classification table fills `y`; a regression table fills `target` instead (and leaves `y`
// empty), so classification code never sees the difference.
struct Dataset {
    int64_t rows = 0;
    int features = 0;
    std::vector<float> x;                   // rows * features
    std::vector<int32_t> y;                 // rows, each in [0, classes); empty for regression
    std::vector<std::string> featureNames;  // features entries (x0, x1, ... or CSV header)
    std::vector<float> target;              // regression: rows, raw units; else empty
    std::string targetName;                 // regression: the target column's name ("y")

    const float* row(int64_t i) const { return x.data() + i * features; }
};

// Maps raw units to the model's inputs: (x - mean) / std per feature. Fitted on the train
// split for tabular data (std floored so constant columns stay finite); for images mean 0 and
// std 255, so pixels reach the model in [0, 1].
struct Normalization {
    std::vector<float> mean;
    std::vector<float> std;
    // Regression: the train split's target mean and population std; the model learns
    // (y - targetMean) / targetStd and its outputs are mapped back (mean: mu * std + mean,
    // variance: sigma^2 * std^2). 0 and 1 for classification.
    double targetMean = 0.0;
    double targetStd = 1.0;

    // Mean and population std per feature; a column with std below 1e-6 (constant) gets std 1,
    // so it is centred but not blown up.
    static Normalization fit(const Dataset& train);
    static Normalization identity(int features, float scale = 1.0f);
    // Returns the normalised copy of `data`'s features (rows * features).
    std::vector<float> apply(const Dataset& data) const;
    void applyInPlace(float* x, int64_t rows) const;
};

// Everything the trainer needs about the data of one experiment.
struct DataSplit {
    std::string name;         // "spirals", "mnist", the CSV file name, ...
    int classes = 0;          // 0 for regression
    bool regression = false;  // train.target / test.target hold the targets, not y
    bool isImage = false;
    int imageWidth = 0;   // images only
    int imageHeight = 0;  // images only
    Dataset train;
    Dataset test;
    Normalization normalization;

    // Whether the inputs are points in the plane (two features, not images): the data the
    // Boundary view and the uncertainty maps draw over a grid.
    bool planar() const { return !isImage && train.features == 2; }

    // The shape of one input: [1, height, width] for images, [features, 1, 1] otherwise.
    Shape inputShape() const {
        return isImage ? Shape{1, imageHeight, imageWidth} : Shape{train.features, 1, 1};
    }
};

// Builds or loads the dataset the config names, splits it and fits the normalisation.
// Throws ConfigError for impossible parameters, DataError for unreadable or invalid files
// (message: file, line/offset, what was expected) and for a missing MNIST / Fashion-MNIST,
// saying where it looked and how to get it.
DataSplit loadDataSplit(const DatasetConfig& config);

// The train split's standardised targets, (target - targetMean) / targetStd.
std::vector<float> standardizedTargets(const Dataset& data, const Normalization& n);

// The 2-D generators. Labels in [0, classes). Deterministic in `seed`.
// Two spirals exactly as Whitney (2021): t = linspace(0,1,n); r = sqrt(t);
// theta = r * rotations * 2 pi; random sign s in {-1,+1}; label = s > 0;
// x = r s cos(theta) + N(0, noise^2), y = r s sin(theta) + N(0, noise^2).
Dataset makeSpirals(int64_t n, double noise, double rotations, uint64_t seed);
Dataset makeMoons(int64_t n, double noise, uint64_t seed);
Dataset makeCircles(int64_t n, double noise, uint64_t seed);
Dataset makeXor(int64_t n, double noise, uint64_t seed);
Dataset makeBlobs(int64_t n, int classes, double noise, uint64_t seed);

// The regression generators (features x0, x1, ..., target y), deterministic in `seed`:
// cubic (Lakshminarayanan et al. 2017): x ~ U(-4, 4), y = x^3 + noise * N(0, 1).
Dataset makeCubic(int64_t n, double noise, uint64_t seed);
// sine, heteroscedastic: x ~ U(-3, 3), y = sin(2x) + (0.05 + 0.15 |x|) N(0, 1).
Dataset makeSine(int64_t n, uint64_t seed);
// linear: x ~ N(0, I_d), y = x . w + b + noise * N(0, 1), with w_j, b ~ N(0, 1) drawn from
// `seed` (the same w and b for every n).
Dataset makeLinear(int64_t n, int features, double noise, uint64_t seed);

// CSV with a header row, numeric feature columns and an integer `label` column (any position).
// Labels must be 0..C-1. `classes` is set to max label + 1.
Dataset readCsv(const std::string& path, int& classes);
// Reads raw features only; a `label` column, if present, is skipped (for predict).
// `expectedFeatures` < 0 accepts any count. The result's `y` is empty.
Dataset readCsvFeatures(const std::string& path, int expectedFeatures);
// readCsv / readCsvFeatures of text already in memory (the fuzz targets, no file needed);
// `origin` stands for the file name in error messages.
Dataset parseCsv(std::string text, const std::string& origin, int& classes);
Dataset parseCsvFeatures(std::string text, const std::string& origin, int expectedFeatures);
// A regression CSV: numeric features and the numeric column `target` (any position; a `label`
// column is skipped). Throws DataError (file, line, column) for a missing target column, a
// value that is not a finite number, and a constant target (std 0).
Dataset readCsvRegression(const std::string& path, const std::string& target);
Dataset parseCsvRegression(std::string text, const std::string& origin, const std::string& target);
// readCsvFeatures that also skips the column named `skip` (a regression model's target);
// `skip` empty: only `label`.
Dataset readCsvFeatures(const std::string& path, int expectedFeatures, const std::string& skip);
// Writes features (raw units) and a `label` column; atomic (temp + rename).
// The label column is last and left out when `data.y` is empty; a regression table's target
// column (`data.targetName`) takes its place. Throws RuntimeError when the
// file cannot be written (the temporary is removed), std::invalid_argument for inconsistent
// sizes or a feature named `label`.
void writeCsv(const std::string& path, const Dataset& data);

// MNIST-format IDX files (raw or .gz). `folder` holds train-images-idx3-ubyte[.gz] etc.
// Pixels are kept raw (0..255); Normalization::identity(784, 255) scales them.
Dataset readIdxPair(const std::string& imagesPath, const std::string& labelsPath);
// The same, also giving the images' size from the header.
Dataset readIdxPair(const std::string& imagesPath, const std::string& labelsPath, int& imageWidth,
                    int& imageHeight);
// readIdxPair of files already in memory (the fuzz target, no file needed); the origins stand
// for the files' names in error messages.
Dataset parseIdxPair(std::string_view images, std::string_view labels,
                     const std::string& imagesOrigin, const std::string& labelsOrigin,
                     int& imageWidth, int& imageHeight);

// Rows `indices` of `data`, in that order (labels too when `data.y` is filled).
// Precondition: every index in [0, data.rows).
Dataset selectRows(const Dataset& data, const std::vector<int64_t>& indices);

struct TrainTest {
    Dataset train;
    Dataset test;
};

// Holds out round(rows * testFraction) rows (at least 1 when testFraction > 0) chosen by a
// Philox permutation (RngPurpose::Split) of `seed`; both parts keep the permuted order.
// Throws ConfigError unless 0 <= testFraction < 1, DataError when testFraction > 0 and there
// are fewer than 2 rows.
TrainTest splitTrainTest(const Dataset& data, double testFraction, uint64_t seed);

// Where MNIST-like data of `kind` (an IdxImages kind) is looked for when dataset.path is empty,
// in order.
std::vector<std::string> defaultDataFolders(DatasetKind kind);
// Throws the DataError loading `kind` (an IdxImages kind) from `path` (empty: the default
// folders) would throw for files not found, without reading them: the reproductions' --list.
void checkIdxDataFound(DatasetKind kind, const std::string& path);

}  // namespace ensemble
