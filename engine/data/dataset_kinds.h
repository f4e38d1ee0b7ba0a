#pragma once

// The dataset kinds, one row each: what `dataset.kind` may name, what each kind is (where its
// rows come from, its task, whether its inputs are points in the plane) and how it is built.
// The schema's choices, the config's checks, loadDataSplit, the app's panel and views, the CLI
// and the docs read these rows; nothing else compares dataset names. Adding a generated dataset
// is a file with its generator (`Dataset generateFoo(const DatasetConfig&)`) and a row here
// (docs/extending.md).

#include <cstddef>

#include "core/named_enum.h"

namespace ensemble {

struct Dataset;
struct DatasetConfig;

enum class DatasetKind {
    Spirals,
    Moons,
    Circles,
    Xor,
    Blobs,
    Cubic,
    Sine,
    Linear,
    Csv,
    Mnist,
    FashionMnist
};
inline constexpr std::size_t kDatasetKindCount = 11;

enum class DataTask { Classification, Regression };

template <>
struct EnumNames<DataTask> {
    static constexpr EnumName<DataTask> table[] = {
        {DataTask::Classification, "classification", "Classification"},
        {DataTask::Regression, "regression", "Regression"},
    };
};

// Where a kind's rows come from.
enum class DataSource {
    Generator,  // computed from dataset.n, dataset.noise, ... and dataset.seed
    CsvFile,    // dataset.path (and dataset.test_path)
    IdxImages,  // a folder of MNIST-format IDX files (dataset.path or the default folders)
};

// The generators, as the rows call them (data/generators.cpp): the config's parameters in, the
// whole table out, before the train/test split.
Dataset generateSpirals(const DatasetConfig& c);
Dataset generateMoons(const DatasetConfig& c);
Dataset generateCircles(const DatasetConfig& c);
Dataset generateXor(const DatasetConfig& c);
Dataset generateBlobs(const DatasetConfig& c);
Dataset generateCubic(const DatasetConfig& c);
Dataset generateSine(const DatasetConfig& c);
Dataset generateLinear(const DatasetConfig& c);

inline constexpr const char* kFashionMnistClassNames[] = {
    "T-shirt", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker", "Bag", "Boot"};

struct DatasetKindInfo {
    DatasetKind value;
    const char* name;   // dataset.kind
    const char* label;  // for people (the panel's list)
    const char* help;   // one line (the docs' dataset list, tooltips)
    DataSource source;
    DataTask task;
    bool taskFromConfig;  // dataset.task decides the task (csv); else `task`
    // Inputs are points in the plane, drawn as the Boundary view and the uncertainty maps.
    // (A CSV of two feature columns is drawn so too: DataSplit::planar() asks the loaded data.)
    bool planar;
    Dataset (*generate)(const DatasetConfig&);  // Generator kinds; else null
    int classes;  // generated classification kinds (0: dataset.classes)
    // IdxImages kinds: a system folder searched after the XDG data folder (empty: none), and
    // how a person gets the files, for the "not found" message.
    const char* systemFolder;
    const char* howToGet;
    const char* const* classNames;  // names of the classes for people, or null (their indices)
};

template <>
struct EnumNames<DatasetKind> {
    // clang-format off
    static constexpr DatasetKindInfo table[] = {
        {DatasetKind::Spirals, "spirals", "Two spirals", "two interleaved spirals (Whitney 2021), 2 classes",
         DataSource::Generator, DataTask::Classification, false, true, generateSpirals, 2, "", "", nullptr},
        {DatasetKind::Moons, "moons", "Two moons", "two interleaving half circles, 2 classes",
         DataSource::Generator, DataTask::Classification, false, true, generateMoons, 2, "", "", nullptr},
        {DatasetKind::Circles, "circles", "Circles", "a circle inside a ring, 2 classes",
         DataSource::Generator, DataTask::Classification, false, true, generateCircles, 2, "", "", nullptr},
        {DatasetKind::Xor, "xor", "XOR", "four quadrants, opposite ones alike, 2 classes",
         DataSource::Generator, DataTask::Classification, false, true, generateXor, 2, "", "", nullptr},
        {DatasetKind::Blobs, "blobs", "Gaussian blobs", "Gaussian blobs, dataset.classes classes",
         DataSource::Generator, DataTask::Classification, false, true, generateBlobs, 0, "", "", nullptr},
        {DatasetKind::Cubic, "cubic", "Cubic (regression)", "y = x^3 + noise on [-4, 4] (Lakshminarayanan et al. 2017)",
         DataSource::Generator, DataTask::Regression, false, false, generateCubic, 0, "", "", nullptr},
        {DatasetKind::Sine, "sine", "Sine (regression)", "y = sin(2x) with noise growing with |x|, on [-3, 3]",
         DataSource::Generator, DataTask::Regression, false, false, generateSine, 0, "", "", nullptr},
        {DatasetKind::Linear, "linear", "Linear (regression)", "y = x . w + b + noise, dataset.features inputs",
         DataSource::Generator, DataTask::Regression, false, false, generateLinear, 0, "", "", nullptr},
        {DatasetKind::Csv, "csv", "CSV file", "your own CSV file (dataset.path), classification or regression",
         DataSource::CsvFile, DataTask::Classification, true, false, nullptr, 0, "", "", nullptr},
        {DatasetKind::Mnist, "mnist", "MNIST", "handwritten digits, 28 x 28 images, 10 classes",
         DataSource::IdxImages, DataTask::Classification, false, false, nullptr, 10, "",
         "Get it with `scripts/fetch-mnist.sh`", nullptr},
        {DatasetKind::FashionMnist, "fashion-mnist", "Fashion-MNIST", "Zalando's clothing images, 28 x 28, 10 classes",
         DataSource::IdxImages, DataTask::Classification, false, false, nullptr, 10,
         "/usr/share/datasets/fashion-mnist",  // Debian's dataset-fashion-mnist
         "Get it with `sudo apt install dataset-fashion-mnist` (installs "
         "/usr/share/datasets/fashion-mnist)", kFashionMnistClassNames},
    };
    // clang-format on
};
static_assert(tableMatchesEnum<DatasetKind>(kDatasetKindCount),
              "one row per DatasetKind, in the enum's order");

inline const DatasetKindInfo& datasetKindInfo(DatasetKind kind) {
    return enumRow(kind);
}

// The names of the kinds whose row satisfies `pred`, "a, b or c" (messages).
template <typename Pred>
std::string datasetKindNames(Pred pred) {
    std::string out;
    std::size_t count = 0;
    for (const DatasetKindInfo& row : EnumNames<DatasetKind>::table) {
        count += pred(row) ? 1 : 0;
    }
    std::size_t i = 0;
    for (const DatasetKindInfo& row : EnumNames<DatasetKind>::table) {
        if (pred(row)) {
            out += i == 0 ? "" : (i + 1 == count ? " or " : ", ");
            out += row.name;
            ++i;
        }
    }
    return out;
}

}  // namespace ensemble
