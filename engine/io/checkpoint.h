#pragma once

// Checkpoints: an export (io/model_io.h) plus what a run needs to continue, so that N steps, a
// checkpoint and M more steps from it equal N + M steps straight, bit for bit (every batch,
// resample and Poisson weight is a function of (seed, member, step)).
//
// Besides the export's tensors and metadata a checkpoint holds:
//   optimizer.{l}.weight.{moment} [K, out, in] F32, optimizer.{l}.bias.{moment} [K, out] F32:
//       the moments the optimizer uses, stacked like the parameters; adam and adamw: `m` and
//       `v`; sgd: `momentum` (its buffer, zero while a member's momentum is 0)
//   optimizer.step [K] I64: each member's update count (Adam's bias correction, SGD's first
//       step); every member's is the same, the steps since the run began
//   metadata checkpoint_format_version: "1"
//   metadata curves: the evaluations of the run so far (curvesJson below)
//   metadata active (optional): the active-learning state (writeCheckpoint's `active`)
// The metadata `config` is the full config with training.schedule, so a resumed run replays
// the same changes.

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "io/model_io.h"
#include "io/safetensors.h"
#include "metrics/types.h"
#include "train/trainer.h"

namespace ensemble {

constexpr int kCheckpointFormatVersion = 1;

// The moment tensors a checkpoint holds for an optimizer: {"m", "v"} for adam and adamw,
// {"momentum"} for sgd.
std::vector<std::string> checkpointMoments(OptimizerKind kind);

// The training curves as the metadata "curves" holds them, one array per measure, one entry
// per evaluation:
//   {"step": [..], "epoch": [..],
//    "ensemble": {"train_loss": [..], "train_accuracy": [..], "test_loss": [..],
//                 "test_accuracy": [..]},
//    "members": {"train_loss": [[K values], ..], "train_accuracy": .., "test_loss": ..,
//                "test_accuracy": .., "diverged": [[K booleans], ..]}}
// A value that is not finite (a diverged member's loss) is null.
nlohmann::json curvesJson(const std::vector<Evaluation>& evaluations);
// The inverse; DataError (kind Weights) starting with `origin` when the JSON is not of that
// form. Null values read back as NaN.
std::vector<Evaluation> curvesFromJson(const nlohmann::json& curves, const std::string& origin);

// Writes the trainer's state after its last finished step as a checkpoint (atomically, as an
// export): exportFile(trainer, metrics) plus the optimizer state, the curves so far and the
// format version. The stored config's length (training.steps, training.epochs 0 when it
// changes) is `runLength`: where the run ends, so a resume without --set goes on to the same
// end and a finished run's config replays its weights. runLength < 0: the trainer's end
// (Trainer::totalSteps, moved by the app's Stop after and Continue), or its step when it
// trained past that. RuntimeError when the file cannot be written.
// `active`, when not null, is stored as the metadata "active" (the app's active-learning state,
// active/active_learning.h: ActiveLearner::toJson and what the app keeps beside it).
// `untilPaused`: the run had no end (the app's "until paused"), written as the metadata
// `until_paused`, so that a window opening the file plays it on rather than stopping at
// `runLength` (the steps trained).
void writeCheckpoint(const std::string& path, const Trainer& trainer,
                     const std::vector<Evaluation>& curves, const nlohmann::json& metrics = nullptr,
                     int64_t runLength = -1, const nlohmann::json& active = nullptr,
                     bool untilPaused = false);

// A checkpoint read back: the export it is (what predict and eval read) and the rest.
struct Checkpoint {
    LoadedEnsemble ensemble;
    TrainingState state;  // step, parameters, optimizer state, diverged flags
    std::vector<Evaluation> curves;
    int64_t trainRows = 0;     // N of the train split it was trained on
    nlohmann::json active;     // the metadata "active" as written; null when absent
    bool untilPaused = false;  // the metadata "until_paused": the run had no end
};

// Whether a parsed weights file is a checkpoint (has checkpoint_format_version).
bool isCheckpoint(const SafetensorsFile& file);
// Reads and validates a checkpoint. DataError (kind Weights) naming the file: not a
// checkpoint (a plain export: say so), a missing or misshapen optimizer tensor, bad curves.
Checkpoint readCheckpoint(const std::string& path);
Checkpoint readCheckpoint(const SafetensorsFile& file);

// The config a resumed run trains with: the checkpoint's, with `assignments` (`--set
// key=value`) over it. Allowed: the run's length and evaluation (training.steps,
// training.epochs, training.eval_every), the backend (backend.*), entries of training.schedule
// after the checkpoint's step, and the live hyperparameters (optimizer.lr, optimizer.momentum,
// optimizer.weight_decay), which become a schedule entry at the checkpoint's step so that the
// stored config replays the resumed run. Any other change alters the model, the data, K or
// the trajectory so far: a ConfigError naming the key. `notices` (may be null) gets one line per
// key the overrides made inapplicable.
ExperimentConfig resumeConfig(const Checkpoint& checkpoint,
                              const std::vector<std::string>& assignments,
                              std::vector<std::string>* notices = nullptr);

// With backend.kind auto, records in `config` the backend the checkpoint's run trained on (its
// metadata "backend"), so `auto` keeps it (backend/auto_choice.h, decideAuto) and the resumed
// steps run where the first ones did; nothing for an explicit kind or a file without the entry.
// resumeConfig calls it; the app calls it for a checkpoint it opens.
void keepCheckpointBackend(ExperimentConfig& config, const LoadedEnsemble& ensemble);

// Makes a trainer continue a checkpoint: throws DataError when `trainer`'s train split is not
// the one the checkpoint was trained on (row count, normalisation), then restores its state.
void resumeTrainer(Trainer& trainer, const Checkpoint& checkpoint);

}  // namespace ensemble
