#include "registry/registry.h"

#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "backend/cpu_dispatch.h"
#include "backend/gemm_library.h"
#include "config/config.h"
#include "core/errors.h"
#include "dist/collective.h"
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

namespace {

// The CPU backend at the x86-64 level backend.cpu_isa asks for (backend/cpu_dispatch.h), its
// large products through backend.gemm's library (or ENSEMBLE_GEMM's), resolved for that level
// and set before the backend is made (a level object takes it then); `note` gets the lines
// saying why another level or library runs, when one does.
std::unique_ptr<Backend> makeCpu(const BackendConfig& config, std::string* note = nullptr) {
    const std::string pin = toString(config.cpuIsa);
    const GemmResolution gemm = resolveGemm(config.gemm, chooseCpuLevel(pin).floatLanes);
    useGemmLibrary(gemm.library);
    CpuLevelChoice choice;
    auto backend = makeDispatchedCpuBackend(config.threads, pin, &choice);
    if (note != nullptr) {
        *note = choice.note;
        if (!gemm.note.empty()) {
            *note += (note->empty() ? "" : "; ") + gemm.note;
        }
    }
    return backend;
}

// What a CPU backend for `config` computes with, for the calibration cache's key: its level and
// GEMM library ("x86-64-v4+eigen").
std::string cpuCodeKey(const BackendConfig& config) {
    const CpuLevelChoice level = chooseCpuLevel(toString(config.cpuIsa));
    return cpuLevelName(level.level) + "+" +
           gemmLibraryKey(resolveGemm(config.gemm, level.floatLanes).library);
}

// The CUDA backend, or BackendMissing when the build has none (the caller checked usability).
std::unique_ptr<Backend> makeCuda(const BackendConfig& config, MathMode math) {
#if defined(ENSEMBLE_HAVE_CUDA)
    return makeCudaBackend(config.device, math);
#else
    (void)math;
    throw RuntimeError(ErrorKind::BackendMissing,
                       "CUDA device " + std::to_string(config.device) +
                           " is not usable: this build has no CUDA backend");
#endif
}

std::string gpuSignature(int device) {
#if defined(ENSEMBLE_HAVE_CUDA)
    return cudaDeviceSignature(device);
#else
    (void)device;
    return {};
#endif
}

// The thread count CpuBackend resolves backend.threads to (0: every core), which the
// calibration is keyed by.
int cpuThreads(const BackendConfig& config) {
    return CpuBackend(config.threads).threads();
}

ThroughputTerms measureGpu(const BackendConfig& config, MathMode math) {
    return measureThroughput([&] { return makeCuda(config, math); });
}

// This machine's calibration for auto: from the cache, else measured now (and stored); the
// GPU terms of `config.math` measured now when the cached entry lacks them. `notes` gets what
// the notice says about the cache; nullopt, with `failure` saying why, when measuring threw.
std::optional<MachineCalibration> autoCalibration(const BackendConfig& config, int threads,
                                                  const std::string& signature,
                                                  std::vector<std::string>& notes,
                                                  std::string& failure) {
    const std::string key = machineKey(threads, cpuCodeKey(config), signature);
    const std::string path = calibrationCachePath();
    std::optional<MachineCalibration> calibration;
    std::string problem;
    if (!path.empty()) {
        calibration = readCalibration(path, key, &problem);
    }
    if (!problem.empty()) {
        notes.push_back("ignored the calibration cache: " + problem);
    }
    if (calibration && calibration->gpu(config.math)) {
        notes.push_back("calibration from " + path);
        return calibration;
    }
    try {
        if (calibration) {
            // Calibrated in the other math mode only (an edited file): measure this one.
            (config.math == MathMode::Tf32 ? calibration->gpuTf32 : calibration->gpuFp32) =
                measureGpu(config, config.math);
        } else {
            std::string status;
            calibration = calibrateMachine(config, std::string(), status);
        }
    } catch (const std::exception& e) {
        failure = std::string("measuring the GPU for backend.kind=auto failed: ") + e.what();
        return std::nullopt;
    }
    if (path.empty()) {
        notes.push_back(
            "calibrated now; neither XDG_CACHE_HOME nor HOME is set, so it is not kept");
        return calibration;
    }
    try {
        writeCalibration(path, *calibration);
        notes.push_back("calibrated now, stored in " + path);
    } catch (const std::exception& e) {
        notes.push_back(std::string("calibrated now; could not store it: ") + e.what());
    }
    return calibration;
}

}  // namespace

MachineCalibration calibrateMachine(const BackendConfig& config, const std::string& cachePath,
                                    std::string& gpuStatus) {
    const bool gpu = cudaAvailable(config.device, gpuStatus);
    MachineCalibration c;
    c.key = machineKey(cpuThreads(config), cpuCodeKey(config),
                       gpu ? gpuSignature(config.device) : std::string());
    c.cpu = measureThroughput([&] { return makeCpu(config); });
    if (gpu) {
        gpuStatus =
            "cuda:" + std::to_string(config.device) + " (" + gpuSignature(config.device) + ")";
        c.gpuFp32 = measureGpu(config, MathMode::Fp32);
        c.gpuTf32 = measureGpu(config, MathMode::Tf32);
    }
    c.measuredAt = calibrationTimestamp();
    if (!cachePath.empty()) {
        writeCalibration(cachePath, c);
    }
    return c;
}

namespace {

BackendChoice chooseBackend(const ExperimentConfig& experiment, const DataSplit& data) {
    const BackendConfig& config = experiment.backend;
    BackendChoice choice;
    choice.decision.requested = config.kind;
    std::string reason;
    switch (config.kind) {
        case BackendKind::Cpu: {
            std::string note;
            choice.backend = makeCpu(config, &note);
            choice.decision.chosen = BackendKind::Cpu;
            choice.decision.reason = "backend.kind=cpu";
            if (config.math == MathMode::Tf32) {
                choice.notice =
                    "backend.kind=cpu: backend.math=tf32 does not apply, the CPU computes in FP32";
            }
            if (!note.empty()) {
                choice.notice += (choice.notice.empty() ? "" : "; ") + note;
            }
            return choice;
        }
        case BackendKind::Cuda:
            if (!cudaAvailable(config.device, reason)) {
                throw RuntimeError(ErrorKind::BackendMissing, "backend.kind=cuda: CUDA device " +
                                                                  std::to_string(config.device) +
                                                                  " is not usable: " + reason);
            }
            choice.backend = makeCuda(config, config.math);
            choice.decision.chosen = BackendKind::Cuda;
            choice.decision.reason = "backend.kind=cuda";
            return choice;
        case BackendKind::Auto:
            break;
    }
    AutoInputs in;
    in.math = config.math;
    in.resumed = config.resumedKind;
    in.gpuUsable = cudaAvailable(config.device, reason);
    in.gpuUnusableReason = reason;
    in.cpuThreads = cpuThreads(config);
    std::optional<MachineCalibration> calibration;
    std::vector<std::string> cacheNotes;
    const bool keepsResumed = in.resumed && (*in.resumed == BackendKind::Cpu || in.gpuUsable);
    if (in.gpuUsable) {
        const std::string signature = gpuSignature(config.device);
        in.gpuName = "cuda:" + std::to_string(config.device) + " (" + signature + ")";
        if (!keepsResumed) {
            std::string failure;
            calibration = autoCalibration(config, in.cpuThreads, signature, cacheNotes, failure);
            if (calibration) {
                // Named by its measurement time only, so that the same config on the same
                // machine records the same reason whether or not this run measured it (an
                // export's metadata stays the same bytes); the rest is the notice's.
                in.calibration = &*calibration;
                in.calibrationSource = "of " + calibration->measuredAt;
            } else {
                in.gpuUsable = false;  // a GPU that fails its probes is not one to train on
                in.gpuUnusableReason = failure;
            }
        }
    }
    const RunCost cost =
        runCost(modelArchitecture(experiment.model, data.inputShape(), data.classes),
                trainedNetworks(experiment.ensemble.method, experiment.ensemble.members),
                experiment.training.batchSize);
    choice.decision = decideAuto(cost, in);
    std::string cpuNote;
    choice.backend = choice.decision.chosen == BackendKind::Cuda ? makeCuda(config, config.math)
                                                                 : makeCpu(config, &cpuNote);
    choice.notice = choice.decision.reason;
    if (!cpuNote.empty()) {
        choice.notice += "; " + cpuNote;
    }
    if (choice.decision.kept && !config.resumedReason.empty()) {
        // The export records the first decision, so a resumed run's export equals the straight
        // run's byte for byte; the notice says that it was kept.
        choice.decision.reason = config.resumedReason;
    }
    for (const std::string& note : cacheNotes) {
        choice.notice += "; " + note;
    }
    return choice;
}

}  // namespace

BackendChoice makeBackend(const ExperimentConfig& experiment, const DataSplit& data) {
    BackendChoice choice = chooseBackend(experiment, data);
    if (derivesMembers(experiment.ensemble.method)) {
        // The K members predict where the network (or BatchEnsemble's shared and fast weights)
        // trains: a second backend of the same kind.
        const BackendConfig& config = experiment.backend;
        choice.memberBackend = choice.decision.chosen == BackendKind::Cuda
                                   ? makeCuda(config, config.math)
                                   : makeCpu(config);
    }
    return choice;
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
    BackendChoice choice = makeBackend(local, data);
    if (notice != nullptr) {
        *notice = choice.notice;
    }
    auto trainer = std::make_unique<Trainer>(config, std::move(data), std::move(choice.backend),
                                             collective, std::move(choice.memberBackend));
    trainer->setBackendDecision(choice.decision);
    return trainer;
}

}  // namespace ensemble
