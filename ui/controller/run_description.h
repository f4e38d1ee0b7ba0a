#pragma once

// What stays fixed through a run (RunInfo), read off its new trainer: the data's shape, the
// test rows evaluated live, and what the views draw it on (the grid over the plane for 2-D
// data, the curve for 1-D regression).

#include <cstdint>
#include <memory>
#include <string>

#include "controller/snapshot.h"
#include "controller/worker_tuning.h"
#include "train/trainer.h"

namespace ensemble::ui {

// The side G of the heatmap grid for K members: K x G x G within tuning.gridMemberPoints, G
// within [minGridSize, maxGridSize], a multiple of 4.
int gridSizeFor(int members, const WorkerTuning& tuning);

// `parsed`: the run's config; `notice`: the backend's fallback message. The grid's size keeps
// K x G x G within tuning.gridMemberPoints.
std::shared_ptr<RunInfo> describeRun(const Trainer& trainer, const ExperimentConfig& parsed,
                                     uint64_t runId, const std::string& notice,
                                     const WorkerTuning& tuning);

}  // namespace ensemble::ui
