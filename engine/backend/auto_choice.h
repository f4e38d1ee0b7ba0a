#pragma once

// backend.kind=auto: which backend is faster for the run in hand, by a deterministic rule.
//
// A step's time on a backend is modelled as
//     t = latency + denseFlops / denseRate + convFlops / convRate + bytes / bandwidth
// where the run's FLOPs and bytes per step come from its size (members, layers, batch, input
// shape: runCost) and the four terms of each backend are measured once per machine by short
// probes (measureThroughput) and cached in a file (calibrationCachePath), keyed by the CPU
// model, the thread count and the GPU's name and driver. `auto` picks the backend whose
// predicted step is shorter (the CPU on a tie), so the same config on the same machine always
// picks the same backend. Without a usable GPU there is no GPU term: the CPU, with the reason.
// Plain C++ (no CUDA): the registry measures the GPU through the Backend interface.

#include <functional>
#include <memory>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "backend/backend.h"
#include "config/config_schema.h"
#include "model/architecture.h"

namespace ensemble {

// The work of one training step of every member.
struct RunCost {
    double denseFlops = 0.0;  // dense layers: forward, weight gradient, input gradient
    double convFlops = 0.0;   // conv layers, the same three products
    double bytes = 0.0;       // parameters, gradients, optimizer moments and activations moved
};

// Two FLOPs per multiply-add of the forward pass, the weight gradient and the input gradient
// (the first layer's input gradient is not needed, but both backends' cost is dominated by
// the rest) for `batch` examples of each of `members` members; bytes: every parameter's value,
// gradient and two moments read and written once per step, and every activation written once
// and read twice.
RunCost runCost(const Architecture& architecture, int members, int batch);

// One backend's measured terms of the cost model.
struct ThroughputTerms {
    double latencySeconds = 0.0;  // a step of almost no work
    double denseFlopsPerSecond = 0.0;
    double convFlopsPerSecond = 0.0;
    double bytesPerSecond = 0.0;
};

// The predicted seconds of a step: the model above. Terms of 0 rate count as infinitely slow.
double predictStepSeconds(const ThroughputTerms& terms, const RunCost& cost);

// What one machine measured: the CPU always, the GPU per math mode when it has one.
struct MachineCalibration {
    std::string key;         // machineKey()
    std::string measuredAt;  // UTC, ISO 8601
    ThroughputTerms cpu;
    std::optional<ThroughputTerms> gpuFp32;
    std::optional<ThroughputTerms> gpuTf32;

    const std::optional<ThroughputTerms>& gpu(MathMode math) const {
        return math == MathMode::Tf32 ? gpuTf32 : gpuFp32;
    }
};

// The current time in UTC, ISO 8601 (MachineCalibration::measuredAt).
std::string calibrationTimestamp();

// "cpu=<CpuIdentity::describe()>;threads=<n>;code=<cpuCode>;gpu=<signature or none>": the
// cache's key. `cpuCode` is what the CPU figures are measured with, the CPU backend's level and
// GEMM library ("x86-64-v4+eigen"): a pinned level or another library is another measurement.
std::string machineKey(int cpuThreads, const std::string& cpuCode, const std::string& gpuSignature);
// The CPU's brand string, for people (CPUID's; "unknown cpu" where there is none).
std::string cpuModelName();

nlohmann::json calibrationToJson(const MachineCalibration& calibration);
// Throws std::runtime_error saying what is wrong when `entry` is not what calibrationToJson
// writes.
MachineCalibration calibrationFromJson(const nlohmann::json& entry, const std::string& key);

// $XDG_CACHE_HOME/ensemblelab/backend-calibration.json, else $HOME/.cache/ensemblelab/...;
// empty when neither variable is set (nothing is cached then).
std::string calibrationCachePath();

// The calibration of machine `key` in the cache file at `path`: nullopt when the file or the
// entry does not exist, or when the file cannot be read or is not a calibration file, which
// `problem` (may be null) then describes (the caller measures again and rewrites it).
std::optional<MachineCalibration> readCalibration(const std::string& path, const std::string& key,
                                                  std::string* problem = nullptr);
// Stores `calibration` under its key in the file at `path` (atomically; creating its folder),
// keeping the other machines' entries; a file that cannot be parsed is replaced. Throws
// RuntimeError when the file cannot be written.
void writeCalibration(const std::string& path, const MachineCalibration& calibration);

// The probes' backends: a fresh one on each call (the CPU with the run's threads, or the GPU in
// the run's math mode).
using BackendFactory = std::function<std::unique_ptr<Backend>()>;

// Measures a backend's four terms with four synthetic training problems (a tiny MLP for the
// latency, a wide batch-1 MLP for the bandwidth, a batch-64 MLP for the dense rate, a small
// CNN for the conv rate), each grown in members until its step lasts at least 8 latencies
// (at most 256 members), each step time the median of 3 timed runs of at least 20 ms.
// About a second on a CPU or a GPU. Throws what the backend throws.
ThroughputTerms measureThroughput(const BackendFactory& makeBackend);

// What backend.kind resolved to, and why (the log's notice, the About box, the export's
// metadata "backend").
struct BackendDecision {
    BackendKind requested = BackendKind::Auto;
    BackendKind chosen = BackendKind::Cpu;
    std::string reason;  // one sentence; for an explicit kind "backend.kind=<kind>"
    bool kept = false;   // auto kept a resumed run's backend (AutoInputs::resumed)
};

// What decideAuto decides from.
struct AutoInputs {
    bool gpuUsable = false;
    std::string gpuUnusableReason;   // when not usable: the CUDA error string
    std::string gpuName;             // "cuda:0 (NVIDIA H100 80GB HBM3)" when usable
    int cpuThreads = 1;              // the CPU backend's thread count for this run
    MathMode math = MathMode::Fp32;  // backend.math
    const MachineCalibration* calibration = nullptr;  // required when the GPU is usable
    std::string calibrationSource;       // where the calibration came from, for the reason
    std::optional<BackendKind> resumed;  // the checkpoint's backend, kept when usable
};

// The rule: a resumed run keeps its backend when that backend is usable here; without a usable
// GPU, the CPU; otherwise the backend with the shorter predicted step (the CPU on a tie).
// Deterministic: the same inputs give the same decision. Precondition: `calibration` is set
// and has the GPU term of `math` when the GPU is usable and there is no usable resumed backend.
BackendDecision decideAuto(const RunCost& cost, const AutoInputs& inputs);

// The metadata "backend" of an export: {"kind", "requested", "name", "reason"}.
nlohmann::json decisionJson(const BackendDecision& decision, const std::string& backendName);

}  // namespace ensemble
