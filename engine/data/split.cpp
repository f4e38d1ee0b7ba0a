// loadDataSplit: from a DatasetConfig to the train/test splits the trainer uses, plus the
// input normalisation and where MNIST-like data is looked for.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <numeric>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/errors.h"
#include "data/dataset.h"
#include "math/philox.h"
#include "sys/script_hints.h"

namespace ensemble {
namespace {

namespace fs = std::filesystem;

// The four files of an MNIST-like dataset, by their original names. Each may carry .gz, and
// the Kaggle copies' "train-images.idx3-ubyte" spelling is accepted too.
constexpr const char* kTrainImages = "train-images-idx3-ubyte";
constexpr const char* kTrainLabels = "train-labels-idx1-ubyte";
constexpr const char* kTestImages = "t10k-images-idx3-ubyte";
constexpr const char* kTestLabels = "t10k-labels-idx1-ubyte";

// Constant columns (population std below this) are only centred, not scaled.
constexpr double kMinStd = 1e-6;

}  // namespace

namespace {

// The file `base` in `folder` in any accepted spelling, or empty.
std::string findIdxFile(const fs::path& folder, const std::string& base) {
    std::string dotted = base;
    dotted[dotted.find("-idx")] = '.';
    for (const std::string& name : {base, base + ".gz", dotted, dotted + ".gz"}) {
        std::error_code ec;
        if (fs::is_regular_file(folder / name, ec)) {
            return (folder / name).string();
        }
    }
    return {};
}

struct IdxFiles {
    std::string trainImages, trainLabels, testImages, testLabels;
};

// The first folder that holds all four files; otherwise a DataError that lists every folder
// looked in, what each lacked, and how to get the data.
IdxFiles locateMnist(DatasetKind kind, const std::vector<std::string>& folders, bool fromConfig) {
    std::string looked;
    for (const std::string& folder : folders) {
        std::error_code ec;
        if (!fs::is_directory(folder, ec)) {
            looked += "\n  " + folder + ": no such folder";
            continue;
        }
        IdxFiles files{findIdxFile(folder, kTrainImages), findIdxFile(folder, kTrainLabels),
                       findIdxFile(folder, kTestImages), findIdxFile(folder, kTestLabels)};
        std::string missing;
        const std::pair<const std::string*, const char*> wanted[] = {
            {&files.trainImages, kTrainImages},
            {&files.trainLabels, kTrainLabels},
            {&files.testImages, kTestImages},
            {&files.testLabels, kTestLabels}};
        for (const auto& [found, base] : wanted) {
            if (found->empty()) {
                missing += (missing.empty() ? "" : ", ") + std::string(base) + "[.gz]";
            }
        }
        if (missing.empty()) {
            return files;
        }
        looked += "\n  " + folder + ": missing " + missing;
    }
    const std::string fileList = std::string(kTrainImages) + ", " + kTrainLabels + ", " +
                                 kTestImages + " and " + kTestLabels + " (raw or .gz)";
    std::string how;
    if (fromConfig) {
        how = "Point dataset.path at a folder holding " + fileList + ".";
    } else {
        how = scriptHints(datasetKindInfo(kind).howToGet) + ", or put " + fileList + " into " +
              (folders.empty() ? std::string("a folder") : folders.front()) +
              ", or set dataset.path to the folder holding them.";
    }
    throw DataError(ErrorKind::ImageData, std::string(datasetKindInfo(kind).name) +
                                              ": data not found. Looked in:" + looked + "\n" + how);
}

void checkLabels(const Dataset& data, int classes, const std::string& what) {
    for (std::size_t i = 0; i < data.y.size(); ++i) {
        if (data.y[i] < 0 || data.y[i] >= classes) {
            throw DataError(ErrorKind::ImageData, what + ": item " + std::to_string(i) +
                                                      " has label " + std::to_string(data.y[i]) +
                                                      ", expected 0 to " +
                                                      std::to_string(classes - 1));
        }
    }
}

void loadRegressionCsv(const DatasetConfig& c, DataSplit& split) {
    Dataset all = readCsvRegression(c.path, c.target);
    split.name = fs::path(c.path).filename().string();
    if (c.testPath.empty()) {
        TrainTest parts = splitTrainTest(all, c.testFraction, c.seed);
        split.train = std::move(parts.train);
        split.test = std::move(parts.test);
        return;
    }
    Dataset test = readCsvRegression(c.testPath, c.target);
    if (test.featureNames != all.featureNames) {
        throw DataError(ErrorKind::Csv, c.testPath + ": expected the same feature columns as " +
                                            c.path + " besides the target");
    }
    split.test = std::move(test);
    split.train = std::move(all);
}

void loadCsv(const DatasetConfig& c, DataSplit& split) {
    if (c.path.empty()) {
        throw ConfigError("dataset.path: the csv dataset needs the path of a CSV file");
    }
    if (c.regression()) {
        split.regression = true;
        loadRegressionCsv(c, split);
        return;
    }
    int trainClasses = 0;
    Dataset all = readCsv(c.path, trainClasses);
    split.name = fs::path(c.path).filename().string();
    split.classes = trainClasses;
    if (c.testPath.empty()) {
        TrainTest parts = splitTrainTest(all, c.testFraction, c.seed);
        split.train = std::move(parts.train);
        split.test = std::move(parts.test);
    } else {
        int testClasses = 0;
        split.test = readCsv(c.testPath, testClasses);
        if (split.test.featureNames != all.featureNames) {
            auto join = [](const std::vector<std::string>& names) {
                std::string s;
                for (const auto& n : names) {
                    s += (s.empty() ? "" : ", ") + n;
                }
                return s;
            };
            throw DataError(ErrorKind::Csv, c.testPath + ": expected the same feature columns as " +
                                                c.path + " (" + join(all.featureNames) + "), got " +
                                                join(split.test.featureNames));
        }
        split.classes = std::max(trainClasses, testClasses);
        split.train = std::move(all);
    }
    if (split.classes < 2) {
        throw DataError(ErrorKind::Csv,
                        c.path + ": every label is 0, expected at least two classes (0 and 1)");
    }
}

// A shipped UCI table, split as a CSV without a test file is: round(rows * test_fraction) rows
// held out by the seeded permutation.
void loadUci(const DatasetConfig& c, DataSplit& split) {
    split.regression = true;
    split.name = uciSetInfo(c.uciSet).name;
    TrainTest parts = splitTrainTest(readUciSet(c.uciSet), c.testFraction, c.seed);
    split.train = std::move(parts.train);
    split.test = std::move(parts.test);
}

void loadMnist(const DatasetConfig& c, DataSplit& split) {
    const bool fromConfig = !c.path.empty();
    const std::vector<std::string> folders =
        fromConfig ? std::vector<std::string>{c.path} : defaultDataFolders(c.kind);
    const IdxFiles files = locateMnist(c.kind, folders, fromConfig);
    int width = 0;
    int height = 0;
    split.train = readIdxPair(files.trainImages, files.trainLabels, width, height);
    int testWidth = 0;
    int testHeight = 0;
    split.test = readIdxPair(files.testImages, files.testLabels, testWidth, testHeight);
    if (testWidth != width || testHeight != height) {
        // rows x columns, as the IDX header orders them
        throw DataError(ErrorKind::ImageData,
                        files.testImages + ": images of " + std::to_string(testHeight) + "x" +
                            std::to_string(testWidth) + " pixels, expected " +
                            std::to_string(height) + "x" + std::to_string(width) + " as in " +
                            files.trainImages);
    }
    split.classes = datasetKindInfo(c.kind).classes;
    checkLabels(split.train, split.classes, files.trainLabels);
    checkLabels(split.test, split.classes, files.testLabels);
    split.isImage = true;
    split.imageWidth = width;
    split.imageHeight = height;
}

// The train split's target mean and population std (two passes in double). A constant train
// target cannot be standardised: a DataError naming where it came from.
void fitTargetNormalization(DataSplit& split, const DatasetConfig& config) {
    const std::vector<float>& t = split.train.target;
    double sum = 0.0;
    for (float v : t) {
        sum += v;
    }
    const double mean = t.empty() ? 0.0 : sum / static_cast<double>(t.size());
    double squares = 0.0;
    for (float v : t) {
        squares += (v - mean) * (v - mean);
    }
    const double sd = t.empty() ? 0.0 : std::sqrt(squares / static_cast<double>(t.size()));
    if (!(sd > 0.0) || !std::isfinite(sd)) {
        const std::string origin =
            datasetKindInfo(config.kind).source == DataSource::CsvFile ? config.path : split.name;
        throw DataError(ErrorKind::Csv,
                        origin + ": column '" + split.train.targetName +
                            "': the train split's target is constant (std 0), so it cannot be "
                            "standardised; a regression target needs some spread");
    }
    split.normalization.targetMean = mean;
    split.normalization.targetStd = sd;
}

}  // namespace

Normalization Normalization::fit(const Dataset& train) {
    Normalization n = identity(train.features);
    if (train.rows == 0) {
        return n;
    }
    // Two passes in double: exact enough for any realistic table and independent of threads.
    std::vector<double> sum(static_cast<std::size_t>(train.features), 0.0);
    for (int64_t r = 0; r < train.rows; ++r) {
        const float* row = train.row(r);
        for (int f = 0; f < train.features; ++f) {
            sum[f] += row[f];
        }
    }
    std::vector<double> mean(sum.size());
    for (std::size_t f = 0; f < sum.size(); ++f) {
        mean[f] = sum[f] / static_cast<double>(train.rows);
    }
    std::vector<double> squares(sum.size(), 0.0);
    for (int64_t r = 0; r < train.rows; ++r) {
        const float* row = train.row(r);
        for (int f = 0; f < train.features; ++f) {
            const double d = row[f] - mean[f];
            squares[f] += d * d;
        }
    }
    for (std::size_t f = 0; f < sum.size(); ++f) {
        const double sd = std::sqrt(squares[f] / static_cast<double>(train.rows));
        n.mean[f] = static_cast<float>(mean[f]);
        n.std[f] = sd < kMinStd ? 1.0f : static_cast<float>(sd);
    }
    return n;
}

Normalization Normalization::identity(int features, float scale) {
    Normalization n;
    n.mean.assign(static_cast<std::size_t>(features), 0.0f);
    n.std.assign(static_cast<std::size_t>(features), scale);
    return n;
}

std::vector<float> Normalization::apply(const Dataset& data) const {
    if (static_cast<std::size_t>(data.features) != mean.size()) {
        throw std::invalid_argument("Normalization::apply: the data has " +
                                    std::to_string(data.features) + " features, expected " +
                                    std::to_string(mean.size()));
    }
    std::vector<float> out = data.x;
    applyInPlace(out.data(), data.rows);
    return out;
}

void Normalization::applyInPlace(float* x, int64_t rows) const {
    const std::size_t features = mean.size();
    for (int64_t r = 0; r < rows; ++r) {
        float* row = x + static_cast<std::size_t>(r) * features;
        for (std::size_t f = 0; f < features; ++f) {
            row[f] = (row[f] - mean[f]) / std[f];
        }
    }
}

Dataset selectRows(const Dataset& data, const std::vector<int64_t>& indices) {
    Dataset out;
    out.rows = static_cast<int64_t>(indices.size());
    out.features = data.features;
    out.featureNames = data.featureNames;
    const std::size_t features = static_cast<std::size_t>(data.features);
    out.x.resize(indices.size() * features);
    const bool labels = !data.y.empty();
    if (labels) {
        out.y.resize(indices.size());
    }
    const bool targets = !data.target.empty();
    out.targetName = data.targetName;
    if (targets) {
        out.target.resize(indices.size());
    }
    for (std::size_t i = 0; i < indices.size(); ++i) {
        const float* src = data.row(indices[i]);
        std::copy(src, src + features, out.x.begin() + static_cast<std::ptrdiff_t>(i * features));
        if (labels) {
            out.y[i] = data.y[static_cast<std::size_t>(indices[i])];
        }
        if (targets) {
            out.target[i] = data.target[static_cast<std::size_t>(indices[i])];
        }
    }
    return out;
}

TrainTest splitTrainTest(const Dataset& data, double testFraction, uint64_t seed) {
    if (!(testFraction >= 0.0 && testFraction < 1.0)) {
        throw ConfigError("dataset.test_fraction: expected a value in [0, 1), got " +
                          std::to_string(testFraction));
    }
    const int64_t n = data.rows;
    if (n > int64_t{0xFFFFFFFF}) {
        throw DataError("a dataset of " + std::to_string(n) + " rows is too large to split");
    }
    int64_t nTest = 0;
    if (testFraction > 0.0) {
        if (n < 2) {
            throw DataError("cannot hold out a test split from " + std::to_string(n) +
                            " row(s): expected at least 2");
        }
        nTest = std::clamp<int64_t>(std::llround(static_cast<double>(n) * testFraction), 1, n - 1);
    }
    // Fisher-Yates, draw i from Philox (seed, Split, i): the same permutation on any machine.
    std::vector<int64_t> order(static_cast<std::size_t>(n));
    std::iota(order.begin(), order.end(), int64_t{0});
    for (int64_t i = n - 1; i > 0; --i) {
        const Philox4x32 d = philoxDraw(seed, RngPurpose::Split, 0, static_cast<uint64_t>(i));
        const uint32_t j = uniformIndex(d.v[0], d.v[1], static_cast<uint32_t>(i + 1));
        std::swap(order[static_cast<std::size_t>(i)], order[j]);
    }
    TrainTest parts;
    parts.test = selectRows(data, std::vector<int64_t>(order.begin(), order.begin() + nTest));
    parts.train = selectRows(data, std::vector<int64_t>(order.begin() + nTest, order.end()));
    return parts;
}

std::vector<std::string> defaultDataFolders(DatasetKind kind) {
    const DatasetKindInfo& info = datasetKindInfo(kind);
    std::vector<std::string> folders;
    // XDG base directories: a relative XDG_DATA_HOME is invalid and must be ignored.
    const char* xdg = std::getenv("XDG_DATA_HOME");
    const char* home = std::getenv("HOME");
    if (xdg != nullptr && xdg[0] == '/') {
        folders.push_back((fs::path(xdg) / "ensemblelab" / info.name).string());
    } else if (home != nullptr && home[0] != '\0') {
        folders.push_back((fs::path(home) / ".local/share/ensemblelab" / info.name).string());
    }
    if (info.systemFolder[0] != '\0') {
        folders.push_back(info.systemFolder);
    }
    return folders;
}

void checkIdxDataFound(DatasetKind kind, const std::string& path) {
    locateMnist(kind, path.empty() ? defaultDataFolders(kind) : std::vector<std::string>{path},
                !path.empty());
}

DataSplit loadDataSplit(const DatasetConfig& config) {
    if (!(config.testFraction >= 0.0 && config.testFraction < 1.0)) {
        throw ConfigError("dataset.test_fraction: expected a value in [0, 1), got " +
                          std::to_string(config.testFraction));
    }
    if (config.limit < 0) {
        throw ConfigError("dataset.limit: expected 0 (all rows) or more, got " +
                          std::to_string(config.limit));
    }
    const DatasetKindInfo& info = datasetKindInfo(config.kind);
    DataSplit split;
    split.name = info.name;
    switch (info.source) {
        case DataSource::Generator: {
            split.regression = info.task == DataTask::Regression;
            split.classes =
                split.regression ? 0 : (info.classes > 0 ? info.classes : config.classes);
            TrainTest parts =
                splitTrainTest(info.generate(config), config.testFraction, config.seed);
            split.train = std::move(parts.train);
            split.test = std::move(parts.test);
            break;
        }
        case DataSource::CsvFile:
            loadCsv(config, split);
            break;
        case DataSource::IdxImages:
            loadMnist(config, split);
            break;
        case DataSource::Bundled:
            loadUci(config, split);
            break;
    }

    if (config.limit > 0 && config.limit < split.train.rows) {
        const std::size_t rows = static_cast<std::size_t>(config.limit);
        split.train.rows = config.limit;
        split.train.x.resize(rows * static_cast<std::size_t>(split.train.features));
        if (!split.train.y.empty()) {
            split.train.y.resize(rows);
        }
        if (!split.train.target.empty()) {
            split.train.target.resize(rows);
        }
    }
    if (split.train.rows == 0) {
        throw DataError(split.name + ": the train split is empty");
    }
    split.normalization = split.isImage ? Normalization::identity(split.train.features, 255.0f)
                                        : Normalization::fit(split.train);
    if (split.regression) {
        fitTargetNormalization(split, config);
    }
    return split;
}

std::vector<float> standardizedTargets(const Dataset& data, const Normalization& n) {
    std::vector<float> out(data.target.size());
    for (std::size_t i = 0; i < out.size(); ++i) {
        out[i] =
            static_cast<float>((static_cast<double>(data.target[i]) - n.targetMean) / n.targetStd);
    }
    return out;
}

}  // namespace ensemble
