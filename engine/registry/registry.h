#pragma once

// The backend registry: the one place that knows which backends this build has. It is the
// library engine_backends (registry.cpp), apart from `engine`, so that the engine stays free
// of CUDA; executables and tests that make backends or trainers link it.

#include <memory>
#include <string>

#include "backend/auto_choice.h"
#include "backend/backend.h"

namespace ensemble {

struct BackendConfig;
struct ExperimentConfig;
struct DataSplit;
class Trainer;
class Collective;

// A backend chosen by config, and why. `notice` is the line the caller prints once (the log,
// the app's status bar and About box): for `auto` always the decision and its reason (which
// backend, the predicted step times, or why there is no GPU term); for an explicit kind empty,
// but for `cpu` with backend.math=tf32 (which does not apply there).
// `cuda` without a usable device throws RuntimeError with the CUDA error string.
struct BackendChoice {
    std::unique_ptr<Backend> backend;
    // A one-network method's (model/ensemble_methods.h) predict-only backend for its K members,
    // of the same kind as `backend` (Trainer's memberBackend); null for other methods.
    std::unique_ptr<Backend> memberBackend;
    std::string notice;
    BackendDecision decision;
};

// The backend for an experiment on its data (the data decide the input shape, and with it the
// cost of a step that `auto` compares; backend/auto_choice.h). `auto` reads this machine's
// calibration from the cache (calibrationCachePath) and measures it first when the cache has
// none for this machine and a GPU is usable (about a second per backend); it keeps a resumed
// run's backend (BackendConfig::resumedKind). `backend.math` sets the GPU's math mode.
BackendChoice makeBackend(const ExperimentConfig& config, const DataSplit& data);

// Measures this machine's calibration (the CPU with `config.threads` threads, and the GPU
// `config.device` in both math modes when it is usable) and stores it in the cache file at
// `cachePath` (none when empty). `gpuStatus` gets the GPU's name or why there is none.
MachineCalibration calibrateMachine(const BackendConfig& config, const std::string& cachePath,
                                    std::string& gpuStatus);

// The CUDA devices this process sees (0 without the CUDA backend or a device).
int cudaDeviceCount();

// Whether the CUDA backend was compiled in, and if so whether a device is usable; `reason`
// says why not (for the GUI's disabled choice and for error messages).
bool cudaAvailable(int device, std::string& reason);

// Loads the data and makes the backend the config asks for (makeBackend); `notice` gets its
// notice, if any (print it once), and the trainer its BackendDecision (the export's metadata).
// Callers include train/trainer.h to use the result (Trainer is only declared here, so the
// registry's header does not reach up into train/). Under MPI, `collective` gives the trainer its
// rank's share of the members (train/trainer.h), and a CUDA backend (kind cuda or auto) of a rank
// uses device (backend.device + the rank's local rank on its machine) mod the number of visible
// devices: one GPU per local rank.
std::unique_ptr<Trainer> makeTrainer(const ExperimentConfig& config, std::string* notice,
                                     Collective* collective = nullptr);

}  // namespace ensemble
