#pragma once

// The backend registry: the one place that knows which backends this build has. It is the
// library engine_backends (registry.cpp), apart from `engine`, so that the engine stays free
// of CUDA; executables and tests that make backends or trainers link it.

#include <memory>
#include <string>

#include "backend/backend.h"

namespace ensemble {

struct BackendConfig;
struct ExperimentConfig;
class Trainer;
class Collective;

// A backend chosen by config. `auto` prefers CUDA and falls back to CPU; `notice` then says
// why (printed once by the caller). `cuda` without a usable device throws RuntimeError with
// the CUDA error string.
struct BackendChoice {
    std::unique_ptr<Backend> backend;
    std::string notice;
};

BackendChoice makeBackend(const BackendConfig& config);
// The same for a whole experiment: CNN members train on the CPU (the CUDA backend runs MLP
// members), so `auto` picks the CPU for them, saying why, and `cuda` is a BackendMissing error.
BackendChoice makeBackend(const ExperimentConfig& config);

// The CUDA devices this process sees (0 without the CUDA backend or a device).
int cudaDeviceCount();

// Whether the CUDA backend was compiled in, and if so whether a device is usable; `reason`
// says why not (for the GUI's disabled choice and for error messages).
bool cudaAvailable(int device, std::string& reason);

// Loads the data and makes the backend the config asks for; `notice` gets the backend's
// fallback message, if any (print it once). Callers include train/trainer.h to use the result
// (Trainer is only declared here, so the registry's header does not reach up into train/).
// Under MPI, `collective` gives the trainer its rank's share of the members (train/trainer.h),
// and a CUDA backend (kind cuda or auto) of a rank uses device (backend.device + the rank's
// local rank on its machine) mod the number of visible devices: one GPU per local rank.
std::unique_ptr<Trainer> makeTrainer(const ExperimentConfig& config, std::string* notice,
                                     Collective* collective = nullptr);

}  // namespace ensemble
