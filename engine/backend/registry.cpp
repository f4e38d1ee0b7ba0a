#include "backend/registry.h"
#include "core/unreachable.h"

#include <stdexcept>
#include <string>

#include "backend/cpu/cpu_backend.h"
#include "core/errors.h"
#include "dist/collective.h"
#include "io/config.h"
#include "train/trainer.h"

#if defined(ENSEMBLE_HAVE_CUDA)
#include "backend/cuda/cuda_backend.h"
#endif

namespace ensemble {

int cudaDeviceCount() {
#if defined(ENSEMBLE_HAVE_CUDA)
    return cudaVisibleDevices();
#else
    return 0;
#endif
}

bool cudaAvailable(int device, std::string& reason) {
#if defined(ENSEMBLE_HAVE_CUDA)
    return cudaDeviceUsable(device, reason);
#else
    (void)device;
    reason = "this build has no CUDA backend (nvcc was not found when it was configured)";
    return false;
#endif
}

BackendChoice makeBackend(const BackendConfig& config) {
    BackendChoice choice;
    std::string reason;
    switch (config.kind) {
        case BackendKind::Cpu:
            choice.backend = std::make_unique<CpuBackend>(config.threads);
            return choice;
        case BackendKind::Cuda:
            if (!cudaAvailable(config.device, reason)) {
                throw RuntimeError(ErrorKind::BackendMissing, "backend.kind=cuda: CUDA device " +
                                                                  std::to_string(config.device) +
                                                                  " is not usable: " + reason);
            }
#if defined(ENSEMBLE_HAVE_CUDA)
            choice.backend = makeCudaBackend(config.device);
#endif
            return choice;
        case BackendKind::Auto:
            // The GPU when there is one, else the CPU, saying why once.
#if defined(ENSEMBLE_HAVE_CUDA)
            if (cudaAvailable(config.device, reason)) {
                choice.backend = makeCudaBackend(config.device);
                return choice;
            }
#else
            cudaAvailable(config.device, reason);
#endif
            choice.backend = std::make_unique<CpuBackend>(config.threads);
            choice.notice = "backend auto: using the CPU (" + reason + ")";
            return choice;
    }
    unreachableKind("backend.kind");
}

BackendChoice makeBackend(const ExperimentConfig& config) {
    // Every model kind runs on both backends (CNN members on the GPU since issue 21's CUDA
    // conv program); the experiment adds nothing to the backend section's choice.
    return makeBackend(config.backend);
}

std::unique_ptr<Trainer> makeTrainer(const ExperimentConfig& config, std::string* notice,
                                     Collective* collective) {
    DataSplit data = loadDataSplit(config.dataset);
    ExperimentConfig local = config;
    if (collective != nullptr && collective->distributed() &&
        config.backend.kind != BackendKind::Cpu) {
        // One GPU per rank of a machine, counted from backend.device.
        const int devices = cudaDeviceCount();
        if (devices > 0) {
            local.backend.device = (config.backend.device + collective->localRank()) % devices;
        }
    }
    // Both backends train a data-axis replica (CudaBackend sums its gradients on the host
    // between two captured graphs).
    BackendChoice choice = makeBackend(local);
    if (notice != nullptr) {
        *notice = choice.notice;
    }
    return std::make_unique<Trainer>(config, std::move(data), std::move(choice.backend),
                                     collective);
}

}  // namespace ensemble
