// eval's out-of-distribution sets (cli/ood_sets.h).
#include "cli/ood_sets.h"

#include <filesystem>
#include <string>
#include <system_error>

#include "core/errors.h"
#include "data/dataset_kinds.h"
#include "shift/transforms.h"

namespace ensemble::cli {

// --ood uniform-noise (images: as many uniform-noise images as evaluated rows) or ring (2-D
// data: points on a circle at 1.5x the data's radius about the train mean); ConfigError for
// other data. False when `what` names neither.
bool generatedOod(const std::string& what, const DataSplit& data, const Normalization& n,
                  int64_t rows, uint64_t seed, Dataset& out) {
    if (what == "uniform-noise") {
        if (!data.isImage) {
            throw ConfigError("--ood uniform-noise: uniform-noise images need image data, and " +
                              data.name + " is not images (for 2-D data use --ood ring)");
        }
        out = uniformNoiseImages(rows, data.imageWidth, data.imageHeight, n.std[0], seed);
        return true;
    }
    if (what == "ring") {
        if (!data.planar()) {
            throw ConfigError("--ood ring: the ring is for 2-D points, and " + data.name + " has " +
                              std::to_string(data.train.features) + " features" +
                              (data.isImage ? " (for images use --ood uniform-noise)" : ""));
        }
        out = ringPoints(rows, data.train, n.mean, kRingRadiusFactor, seed);
        return true;
    }
    return false;
}

// --ood: a CSV file of raw features (a label column is ignored) or a dataset kind
// (fashion-mnist, mnist, or a 2-D generator), whose test split is used.
Dataset loadOod(const std::string& what, const DatasetConfig& base, int features,
                std::string& name) {
    std::error_code ec;
    if (std::filesystem::is_regular_file(what, ec)) {
        name = std::filesystem::path(what).filename().string();
        return readCsvFeatures(what, features);
    }
    DatasetConfig c = base;
    if (!enumFromName(what, c.kind)) {
        throw ConfigError("--ood: '" + what +
                          "' is neither a readable file, uniform-noise, ring nor a dataset kind (" +
                          namesText<DatasetKind>() + ")");
    }
    c.path.clear();
    c.testPath.clear();
    c.limit = 0;
    DataSplit split;
    try {
        split = loadDataSplit(c);
    } catch (const ConfigError& e) {
        throw ConfigError("--ood " + what + ": " + e.what());
    }
    if (split.train.features != features) {
        throw DataError("--ood " + what + ": " + std::to_string(split.train.features) +
                        " features, but the ensemble takes " + std::to_string(features));
    }
    name = what;
    return split.test.rows > 0 ? std::move(split.test) : std::move(split.train);
}

}  // namespace ensemble::cli
