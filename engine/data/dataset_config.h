#pragma once

// The `dataset` section of a config, as parseConfig (config/config.h) fills it: what
// loadDataSplit (data/dataset.h) and the generators read, kept here so that the data need not
// know the rest of the config.

#include <cstdint>
#include <string>

#include "data/bundled_data.h"
#include "data/dataset_kinds.h"

namespace ensemble {

// The fields are named after their JSON keys; their defaults and ranges are the schema's
// (config/config_schema.h).
struct DatasetConfig {
    DatasetKind kind = DatasetKind::Spirals;
    int64_t n = 0;
    double noise = 0.0;
    double rotations = 0.0;
    int classes = 0;
    double testFraction = 0.0;
    uint64_t seed = 0;
    std::string path;
    std::string testPath;
    int64_t limit = 0;
    int features = 0;                          // linear: d
    DataTask task = DataTask::Classification;  // csv: dataset.task; else the kind's own task
    std::string target;                        // regression csv: the target column
    UciSet uciSet = UciSet::Concrete;          // uci: which shipped table
    bool regression() const { return task == DataTask::Regression; }
};

}  // namespace ensemble
