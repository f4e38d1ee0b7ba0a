#pragma once

// The out-of-distribution sets `eval --ood` names: a file, a dataset kind, or one generated
// from the evaluated data (engine/shift/transforms.h).

#include <cstdint>
#include <string>

#include "data/dataset.h"

namespace ensemble::cli {

// --ood uniform-noise (images: as many uniform-noise images as evaluated rows) or ring (2-D
// data: points on a circle at 1.5x the data's radius about the train mean); ConfigError for
// other data. False when `what` names neither.
bool generatedOod(const std::string& what, const DataSplit& data, const Normalization& n,
                  int64_t rows, uint64_t seed, Dataset& out);

// --ood: a CSV file of raw features (a label column is ignored) or a dataset kind
// (fashion-mnist, mnist, or a 2-D generator), whose test split is used. `name` gets its name.
Dataset loadOod(const std::string& what, const DatasetConfig& base, int features,
                std::string& name);

}  // namespace ensemble::cli
