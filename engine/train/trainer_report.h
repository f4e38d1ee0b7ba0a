#pragma once

// What metrics/ measures of a live Trainer: its evaluation report and its grid. This is the
// glue between the two folders, kept in train/ so that metrics/ never includes the trainer.

#include <cstdint>
#include <optional>
#include <vector>

#include <nlohmann/json.hpp>

#include "metrics/grid.h"
#include "metrics/report.h"
#include "train/trainer.h"

namespace ensemble {

struct TrainerReport {
    EnsembleReport report;  // the measurements (for the CSVs); classification only
    // A regression head's measurements instead (report is then empty).
    std::optional<RegressionReport> regression;
    nlohmann::json json;  // reportJson(report or regression, the run's facts): what the files hold
};

// The evaluation report of the trainer's ensemble, the one that `ensemble-cli train --metrics`
// and the app's export both write: the test split (the train split when there is no test
// split), out-of-bag estimates from the train split, and the run's facts (RunFacts: step,
// epoch, dataset, per-member hyperparameters, diverged, switched_on, and train/test loss and
// accuracy of every member and of the ensemble). The ensemble is the members that are switched
// on (ensemble.switched_off with the schedule's entries up to the trainer's step, which are
// applied first; and `switchedOn`, when not empty) and have not diverged. Every member is
// predicted once per split. Throws RuntimeError when no member is left in the ensemble.
TrainerReport trainerReport(Trainer& trainer, const std::vector<uint8_t>& switchedOn = {},
                            EvaluationOptions options = {});

// The trainer's config as it trained: training.steps set to the steps trained (and
// training.epochs to 0) when they differ from the configured length (the app's until paused,
// a run paused early or continued), live edits in training.schedule. What the app's export
// stores, so the CLI replay of it gives the exported weights.
nlohmann::json configAsTrained(const Trainer& trainer);
// The trainer's config with the run's length set to `steps` (training.steps, and
// training.epochs 0) when it differs from the configured one; configAsTrained is this at the
// trainer's step.
nlohmann::json configWithLength(const Trainer& trainer, int64_t steps);

// The trainer's current ensemble on `bounds`, the members with include[k] != 0 (empty: the
// trainer's non-diverged ones). Where the backend computes the per-point measures itself
// (Backend::measuresUncertainty, the CUDA backend) only its results are transferred; else the
// members' log-probabilities come back and the host computes them.
GridEvaluation evaluateGrid(Trainer& trainer, const GridBounds& bounds, int size,
                            const std::vector<uint8_t>& include);
// The same on its data's bounding box (plus margin), its non-diverged members.
GridEvaluation evaluateGrid(Trainer& trainer, int size = kDefaultGridSize,
                            double margin = kDefaultGridMargin);

}  // namespace ensemble
