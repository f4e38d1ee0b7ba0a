#pragma once

// The dataset kinds, one row each: what `dataset.kind` may name, what each kind is (where its
// rows come from, its task, whether its inputs are points in the plane) and how it is built.
// The schema's choices, the config's checks, loadDataSplit, the app's panel and views, the CLI
// and the docs read these rows; nothing else compares dataset names. Adding a generated dataset
// is a file with its generator (`Dataset generateFoo(const DatasetConfig&)`) and a row here
// (docs/extending.md).

#include <cstddef>
#include <string_view>

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
    FashionMnist,
    Uci
};
inline constexpr std::size_t kDatasetKindCount = 12;

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
    Bundled,    // a table shipped with the program (data/bundled_data.h), named by a key
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
    const char* help;   // one line (the docs' dataset table, tooltips)
    DataSource source;
    DataTask task = DataTask::Classification;
    bool taskFromConfig = false;  // dataset.task decides the task (csv); else `task`
    // Inputs are points in the plane, drawn as the Boundary view and the uncertainty maps.
    // (A CSV of two feature columns is drawn so too: DataSplit::planar() asks the loaded data.)
    bool planar = false;
    // The dataset.* keys the kind reads, space-separated ("n noise seed"): the panel offers
    // these fields for the kind and greys out the others.
    const char* keys = "";
    Dataset (*generate)(const DatasetConfig&) = nullptr;  // Generator kinds
    int classes =
        0;  // classification kinds of a fixed class count (0: dataset.classes or the file's)
    // IdxImages kinds: a system folder searched after the XDG data folder (empty: none), and
    // how a person gets the files, for the "not found" message.
    const char* systemFolder = "";
    const char* howToGet = "";
    const char* const* classNames = nullptr;  // `classes` names for people, or null (indices)
};

// Whether `row` reads the key `dataset.<name>` (`name` without the section).
bool datasetKindReads(const DatasetKindInfo& row, std::string_view name);

template <>
struct EnumNames<DatasetKind> {
    // clang-format off
    static constexpr DatasetKindInfo table[] = {
        {.value = DatasetKind::Spirals, .name = "spirals", .label = "Two spirals",
         .help = "two interleaved spirals (Whitney 2021), 2 classes",
         .source = DataSource::Generator, .planar = true,
         .keys = "n noise rotations test_fraction seed limit", .generate = generateSpirals, .classes = 2},
        {.value = DatasetKind::Moons, .name = "moons", .label = "Two moons",
         .help = "two interleaving half circles, 2 classes",
         .source = DataSource::Generator, .planar = true,
         .keys = "n noise test_fraction seed limit", .generate = generateMoons, .classes = 2},
        {.value = DatasetKind::Circles, .name = "circles", .label = "Circles",
         .help = "a circle inside a ring, 2 classes",
         .source = DataSource::Generator, .planar = true,
         .keys = "n noise test_fraction seed limit", .generate = generateCircles, .classes = 2},
        {.value = DatasetKind::Xor, .name = "xor", .label = "XOR",
         .help = "four quadrants, opposite ones alike, 2 classes",
         .source = DataSource::Generator, .planar = true,
         .keys = "n noise test_fraction seed limit", .generate = generateXor, .classes = 2},
        {.value = DatasetKind::Blobs, .name = "blobs", .label = "Gaussian blobs",
         .help = "Gaussian blobs, dataset.classes classes",
         .source = DataSource::Generator, .planar = true,
         .keys = "n noise classes test_fraction seed limit", .generate = generateBlobs},
        {.value = DatasetKind::Cubic, .name = "cubic", .label = "Cubic (regression)",
         .help = "y = x^3 + noise on [-4, 4] (Lakshminarayanan et al. 2017)",
         .source = DataSource::Generator, .task = DataTask::Regression,
         .keys = "n noise test_fraction seed limit", .generate = generateCubic},
        {.value = DatasetKind::Sine, .name = "sine", .label = "Sine (regression)",
         .help = "y = sin(2x), its noise growing away from 0, on [-3, 3]",
         .source = DataSource::Generator, .task = DataTask::Regression,
         .keys = "n test_fraction seed limit", .generate = generateSine},
        {.value = DatasetKind::Linear, .name = "linear", .label = "Linear (regression)",
         .help = "y = x . w + b + noise, dataset.features inputs",
         .source = DataSource::Generator, .task = DataTask::Regression,
         .keys = "n noise features test_fraction seed limit", .generate = generateLinear},
        {.value = DatasetKind::Csv, .name = "csv", .label = "CSV file",
         .help = "your own CSV file (dataset.path), classification or regression",
         .source = DataSource::CsvFile, .taskFromConfig = true,
         .keys = "path test_path test_fraction seed limit task target"},
        {.value = DatasetKind::Mnist, .name = "mnist", .label = "MNIST",
         .help = "handwritten digits, 28 x 28 images, 10 classes",
         .source = DataSource::IdxImages, .keys = "path limit", .classes = 10,
         .howToGet = "Get it with `scripts/fetch-mnist.sh`"},
        {.value = DatasetKind::FashionMnist, .name = "fashion-mnist", .label = "Fashion-MNIST",
         .help = "Zalando's clothing images, 28 x 28, 10 classes",
         .source = DataSource::IdxImages, .keys = "path limit", .classes = 10,
         .systemFolder = "/usr/share/datasets/fashion-mnist",  // Debian's dataset-fashion-mnist
         .howToGet = "Get it with `sudo apt install dataset-fashion-mnist` (installs "
                     "/usr/share/datasets/fashion-mnist)",
         .classNames = kFashionMnistClassNames},
        {.value = DatasetKind::Uci, .name = "uci", .label = "UCI regression",
         .help = "the Deep Ensembles benchmark's UCI tables, shipped (`dataset.uci_set`)",
         .source = DataSource::Bundled, .task = DataTask::Regression,
         .keys = "uci_set test_fraction seed limit"},
    };
    // clang-format on
};
static_assert(tableMatchesEnum<DatasetKind>(kDatasetKindCount),
              "one row per DatasetKind, in the enum's order");

inline const DatasetKindInfo& datasetKindInfo(DatasetKind kind) {
    return enumRow(kind);
}

}  // namespace ensemble
