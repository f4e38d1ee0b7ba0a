#pragma once

// What a run will take in memory, before it starts: the engine's estimate of the trainer
// (estimateRunBytes: data, parameters, optimizer state, workspaces) plus what the window keeps
// per member (the heatmap grid of each member in the snapshots, the test rows' predictions,
// the bootstrap counts, the learning curves and their history, at the bounds they grow to over
// a long run). The window asks before a run above half of the available memory and refuses one
// above all of it (docs/app.md#large-runs).

#include <QString>

#include <cstddef>
#include <cstdint>
#include <optional>

#include "config/config.h"
#include "controller/worker_tuning.h"
#include "core/shape.h"
#include "data/dataset.h"

namespace ensemble::ui {

// The data a run trains on, as far as its price needs it.
struct DataShape {
    int64_t trainRows = 0;
    int64_t testRows = 0;
    Shape input;
    int classes = 0;  // 0 for regression
    bool planar = false;
};

// The shape of a loaded split.
DataShape dataShapeOf(const DataSplit& data);
// The shape a config's data will have, told from the config alone (nothing generated or read):
// the generated kinds from dataset.n and test_fraction, MNIST and Fashion-MNIST from their fixed
// sizes, dataset.limit applied. Empty for a CSV file (its size is known once it is read).
std::optional<DataShape> expectedDataShape(const ExperimentConfig& config);

struct RunPrice {
    std::size_t trainerBytes = 0;    // the engine's estimate
    std::size_t windowBytes = 0;     // the live views' per-member structures
    std::size_t availableBytes = 0;  // MemAvailable; 0 when unknown
    std::size_t totalBytes() const { return trainerBytes + windowBytes; }
    // Above all the available memory: the run is refused.
    bool fits() const { return availableBytes == 0 || totalBytes() <= availableBytes; }
    // Above half of it: the window asks first.
    bool large() const { return availableBytes > 0 && totalBytes() > availableBytes / 2; }
    // "about 8.6 GB (the trainer 3.1 GB, the live views 5.5 GB) of the 23.1 GB available"
    QString describe() const;
};

// The window's bytes for a run of `members` members on data of `shape`.
std::size_t windowBytes(int members, const DataShape& shape, Likelihood likelihood,
                        const WorkerTuning& tuning);
// `availableBytes` is MemAvailable unless given (tests).
RunPrice priceRun(const ExperimentConfig& config, const DataShape& shape,
                  const WorkerTuning& tuning, std::optional<std::size_t> availableBytes = {});

// "8.6 GB", "412 MB"
QString bytesText(std::size_t bytes);

}  // namespace ensemble::ui
