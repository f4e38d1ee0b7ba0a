#include "backend/auto_choice.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/errors.h"
#include "model/mlp.h"
#include "optim/update_rules.h"
#include "sys/atomic_file.h"
#include "sys/cpu_identity.h"

namespace ensemble {

namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

constexpr const char* kCacheFormat = "ensemblelab-backend-calibration";
constexpr int kCacheVersion = 1;

// Per step: a parameter's value, gradient and two moments, each read and written once.
constexpr double kParameterTouches = 8.0;
// An activation is written in the forward pass and read twice in the backward pass.
constexpr double kActivationTouches = 3.0;

std::string fixed(double value, int digits) {
    char text[64];
    std::snprintf(text, sizeof text, "%.*f", digits, value);
    return text;
}

std::string milliseconds(double seconds) {
    return fixed(seconds * 1e3, 3) + " ms";
}

}  // namespace

std::string calibrationTimestamp() {
    const std::time_t now = std::time(nullptr);
    std::tm utc{};
    gmtime_r(&now, &utc);
    char text[32];
    std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &utc);
    return text;
}

namespace {

json termsJson(const ThroughputTerms& t) {
    return json{{"latency_s", t.latencySeconds},
                {"dense_flops_per_s", t.denseFlopsPerSecond},
                {"conv_flops_per_s", t.convFlopsPerSecond},
                {"bytes_per_s", t.bytesPerSecond}};
}

ThroughputTerms termsFromJson(const json& j, const std::string& where) {
    if (!j.is_object()) {
        throw std::runtime_error(where + ": expected an object, got " + j.dump());
    }
    const auto positive = [&](const char* name) {
        const auto it = j.find(name);
        if (it == j.end() || !it->is_number() || !std::isfinite(it->get<double>()) ||
            it->get<double>() <= 0.0) {
            throw std::runtime_error(where + "." + name + ": expected a positive number");
        }
        return it->get<double>();
    };
    ThroughputTerms t;
    t.latencySeconds = positive("latency_s");
    t.denseFlopsPerSecond = positive("dense_flops_per_s");
    t.convFlopsPerSecond = positive("conv_flops_per_s");
    t.bytesPerSecond = positive("bytes_per_s");
    return t;
}

// --- the probes ----------------------------------------------------------------------------

struct Probe {
    Architecture architecture;
    int batch = 1;
};

// A training problem of `members` members on synthetic data (deterministic values; the speed
// does not depend on them), Adam, shared batches.
struct SyntheticProblem {
    std::vector<float> x;
    std::vector<int32_t> y;
    TrainingProblem problem;
};

SyntheticProblem syntheticProblem(const Probe& probe, int members) {
    SyntheticProblem s;
    const ParamLayout layout(probe.architecture, members);
    const int64_t rows = std::max<int64_t>(256, probe.batch);
    const int64_t inputs = layout.inputs();
    s.x.resize(static_cast<std::size_t>(rows * inputs));
    uint32_t state = 12345u;
    for (float& v : s.x) {
        state = state * 1664525u + 1013904223u;  // Numerical Recipes' LCG: values only
        v = static_cast<float>(state >> 8) / 16777216.0f - 0.5f;
    }
    s.y.resize(static_cast<std::size_t>(rows));
    for (int64_t i = 0; i < rows; ++i) {
        s.y[static_cast<std::size_t>(i)] = static_cast<int32_t>(i % layout.classes());
    }
    TrainingProblem& p = s.problem;
    p.layout = layout;
    p.activation = Activation::Relu;
    p.trainX = s.x.data();
    p.trainY = s.y.data();
    p.trainRows = rows;
    p.plan.seed = 1;
    p.plan.rows = static_cast<uint32_t>(rows);
    p.plan.batch = static_cast<uint32_t>(probe.batch);
    p.plan.mode = BootstrapMode::None;
    p.rules.assign(static_cast<std::size_t>(members),
                   makeRule(OptimizerKind::Adam, 1e-3, 0.0, 0.0));
    return s;
}

// Median seconds of one step of `members` members on a fresh backend: 3 warm-up steps, then
// 3 timed runs each of at least 20 ms (and 3 steps).
double stepSeconds(const BackendFactory& makeBackend, const Probe& probe, int members) {
    SyntheticProblem s = syntheticProblem(probe, members);
    std::unique_ptr<Backend> backend = makeBackend();
    backend->bind(s.problem);
    std::vector<float> params(s.problem.layout.size());
    for (std::size_t i = 0; i < params.size(); ++i) {
        params[i] = 0.01f * static_cast<float>(static_cast<int>(i % 199) - 99) / 99.0f;
    }
    backend->setParameters(params.data());
    std::vector<uint8_t> active(static_cast<std::size_t>(members), 1);
    std::vector<float> losses(static_cast<std::size_t>(members));
    uint64_t step = 0;
    for (int i = 0; i < 3; ++i) {
        backend->step(step++, active.data(), losses.data());
    }
    // The step count of a timed run: doubled until a run lasts 20 ms.
    int64_t count = 3;
    std::vector<double> runs;
    while (runs.size() < 3) {
        const auto start = Clock::now();
        for (int64_t i = 0; i < count; ++i) {
            backend->step(step++, active.data(), losses.data());
        }
        const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
        if (seconds < 0.02 && runs.empty() && count < (int64_t{1} << 20)) {
            count *= 2;
            continue;
        }
        runs.push_back(seconds / static_cast<double>(count));
    }
    std::sort(runs.begin(), runs.end());
    return runs[1];
}

// The probe's step time, its members doubled (up to 256) until the step lasts 8 latencies, so
// that the term it measures dominates, or until the backend refuses the size (RuntimeError,
// e.g. not enough device memory); `cost` gets that run's cost.
double grownStepSeconds(const BackendFactory& makeBackend, const Probe& probe, double latency,
                        RunCost& cost) {
    int members = 1;
    double seconds = stepSeconds(makeBackend, probe, 1);
    while (seconds < 8.0 * latency && members < 256) {
        try {
            seconds = stepSeconds(makeBackend, probe, members * 2);
        } catch (const RuntimeError&) {
            break;  // the doubled probe does not fit (a small GPU): the last one that did
        }
        members *= 2;
    }
    cost = runCost(probe.architecture, members, probe.batch);
    return seconds;
}

// The time a term's probe leaves for the term: at least a tenth of the step (the other terms'
// estimates cannot make a rate negative or infinite).
double remainder(double seconds, double others) {
    return std::max(seconds - others, 0.1 * seconds);
}

}  // namespace

RunCost runCost(const Architecture& architecture, int members, int batch) {
    RunCost cost;
    double parameters = 0.0;
    double activations = static_cast<double>(architecture.inputs());
    for (const StackLayer& s : architecture.layers()) {
        activations += static_cast<double>(s.out.size());
        if (s.param < 0) {
            continue;
        }
        const double macs = static_cast<double>(s.fanIn()) * static_cast<double>(s.out.size());
        // forward, weight gradient, input gradient: three products of the same size
        const double flops = 2.0 * 3.0 * macs;
        (s.kind == LayerKind::Conv ? cost.convFlops : cost.denseFlops) += flops;
        parameters += static_cast<double>(s.fanIn()) * static_cast<double>(s.units()) +
                      static_cast<double>(s.units());
    }
    const double k = static_cast<double>(members);
    const double b = static_cast<double>(batch);
    cost.denseFlops *= k * b;
    cost.convFlops *= k * b;
    cost.bytes = k * 4.0 * (kParameterTouches * parameters + kActivationTouches * b * activations);
    return cost;
}

double predictStepSeconds(const ThroughputTerms& t, const RunCost& c) {
    const auto over = [](double amount, double rate) {
        if (amount <= 0.0) {
            return 0.0;
        }
        return rate > 0.0 ? amount / rate : std::numeric_limits<double>::infinity();
    };
    return t.latencySeconds + over(c.denseFlops, t.denseFlopsPerSecond) +
           over(c.convFlops, t.convFlopsPerSecond) + over(c.bytes, t.bytesPerSecond);
}

std::string cpuModelName() {
    const std::string& brand = cpuIdentity().brand;
    return brand.empty() ? std::string("unknown cpu") : brand;
}

std::string machineKey(int cpuThreads, const std::string& cpuCode,
                       const std::string& gpuSignature) {
    // The CPU by what it is (vendor, family, model, vector units), not by its brand string:
    // "AMD EPYC" names machines whose vector units differ.
    return "cpu=" + cpuIdentity().describe() + ";threads=" + std::to_string(cpuThreads) +
           ";code=" + cpuCode +
           ";gpu=" + (gpuSignature.empty() ? std::string("none") : gpuSignature);
}

json calibrationToJson(const MachineCalibration& c) {
    json entry{{"measured_at", c.measuredAt}, {"cpu", termsJson(c.cpu)}};
    json gpu = json::object();
    if (c.gpuFp32) {
        gpu["fp32"] = termsJson(*c.gpuFp32);
    }
    if (c.gpuTf32) {
        gpu["tf32"] = termsJson(*c.gpuTf32);
    }
    entry["gpu"] = gpu;
    return entry;
}

MachineCalibration calibrationFromJson(const json& entry, const std::string& key) {
    if (!entry.is_object()) {
        throw std::runtime_error("entry \"" + key + "\": expected an object");
    }
    MachineCalibration c;
    c.key = key;
    if (entry.contains("measured_at") && entry["measured_at"].is_string()) {
        c.measuredAt = entry["measured_at"].get<std::string>();
    }
    c.cpu = termsFromJson(entry.value("cpu", json()), "cpu");
    const json gpu = entry.value("gpu", json::object());
    if (!gpu.is_object()) {
        throw std::runtime_error("gpu: expected an object");
    }
    if (gpu.contains("fp32")) {
        c.gpuFp32 = termsFromJson(gpu["fp32"], "gpu.fp32");
    }
    if (gpu.contains("tf32")) {
        c.gpuTf32 = termsFromJson(gpu["tf32"], "gpu.tf32");
    }
    return c;
}

std::string calibrationCachePath() {
    const char* xdg = std::getenv("XDG_CACHE_HOME");
    std::string folder;
    // The XDG base directory spec: a relative XDG_CACHE_HOME is invalid and ignored.
    if (xdg != nullptr && xdg[0] == '/') {
        folder = xdg;
    } else if (const char* home = std::getenv("HOME"); home != nullptr && home[0] != '\0') {
        folder = std::string(home) + "/.cache";
    } else {
        return {};
    }
    return folder + "/ensemblelab/backend-calibration.json";
}

namespace {

// The cache file's machines, or why it is not a cache file.
json readCacheMachines(const std::string& path, std::string& problem) {
    std::ifstream in(path, std::ios::binary);
    if (!in) {
        return json::object();  // no file yet: not a problem
    }
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const json root = json::parse(text, nullptr, false);
    if (root.is_discarded()) {
        problem = path + " is not valid JSON";
        return json::object();
    }
    if (!root.is_object() || root.value("format", "") != kCacheFormat ||
        !root.contains("machines") || !root["machines"].is_object()) {
        problem = path + " is not a backend calibration file (expected {\"format\": \"" +
                  kCacheFormat + "\", \"machines\": {...}})";
        return json::object();
    }
    if (root.value("version", 0) != kCacheVersion) {
        problem = path + " has calibration format version " + root.value("version", json()).dump() +
                  ", this build reads " + std::to_string(kCacheVersion);
        return json::object();
    }
    return root["machines"];
}

}  // namespace

std::optional<MachineCalibration> readCalibration(const std::string& path, const std::string& key,
                                                  std::string* problem) {
    std::string why;
    const json machines = readCacheMachines(path, why);
    if (!why.empty() || !machines.contains(key)) {
        if (problem != nullptr) {
            *problem = why;
        }
        return std::nullopt;
    }
    try {
        return calibrationFromJson(machines[key], key);
    } catch (const std::exception& e) {
        if (problem != nullptr) {
            *problem = path + ": the entry of this machine is damaged (" + e.what() + ")";
        }
        return std::nullopt;
    }
}

void writeCalibration(const std::string& path, const MachineCalibration& calibration) {
    std::string ignored;
    json machines = readCacheMachines(path, ignored);  // a damaged file is replaced
    machines[calibration.key] = calibrationToJson(calibration);
    const json root{{"format", kCacheFormat}, {"version", kCacheVersion}, {"machines", machines}};
    const std::filesystem::path folder = std::filesystem::path(path).parent_path();
    std::error_code error;
    if (!folder.empty()) {
        std::filesystem::create_directories(folder, error);
        if (error) {
            throw RuntimeError(ErrorKind::Io,
                               "cannot create the folder " + folder.string() +
                                   " for the backend calibration: " + error.message());
        }
    }
    writeFileAtomic(path, root.dump(2) + "\n");
}

ThroughputTerms measureThroughput(const BackendFactory& makeBackend) {
    ThroughputTerms t;
    // Latency: 2-8-2, one member, one row; its work is negligible on either backend.
    const Probe tiny{Architecture::mlp({2, 8, 2}), 1};
    t.latencySeconds = stepSeconds(makeBackend, tiny, 1);
    // Bandwidth: 1024-1024-2 on one row is 1M parameters and their optimizer state per member
    // (32 MiB moved) against 6 MFLOP: memory-bound on both backends.
    const Probe wide{Architecture::mlp({1024, 1024, 2}), 1};
    RunCost cost;
    double seconds = grownStepSeconds(makeBackend, wide, t.latencySeconds, cost);
    t.bytesPerSecond = cost.bytes / remainder(seconds, t.latencySeconds);
    // Dense FLOPs: 256-256-256-10 on 64 rows, 50 MFLOP per member.
    const Probe dense{Architecture::mlp({256, 256, 256, 10}), 64};
    seconds = grownStepSeconds(makeBackend, dense, t.latencySeconds, cost);
    t.denseFlopsPerSecond =
        cost.denseFlops / remainder(seconds, t.latencySeconds + cost.bytes / t.bytesPerSecond);
    // Conv FLOPs: 16 x 16 images, conv 16 3x3 same, max-pool 2, conv 16 3x3 same, max-pool 2,
    // dense 10, on 32 rows (mnist-cnn's kind of layer, smaller).
    LayerSpec conv;
    conv.kind = LayerKind::Conv;
    conv.filters = 16;
    conv.kernel = 3;
    LayerSpec pool;
    pool.kind = LayerKind::Pool;
    pool.pool = PoolKind::Max;
    pool.size = 2;
    const Probe cnn{Architecture::stack(Shape{1, 16, 16}, {conv, pool, conv, pool}, 10), 32};
    seconds = grownStepSeconds(makeBackend, cnn, t.latencySeconds, cost);
    t.convFlopsPerSecond =
        cost.convFlops / remainder(seconds, t.latencySeconds + cost.bytes / t.bytesPerSecond +
                                                cost.denseFlops / t.denseFlopsPerSecond);
    return t;
}

BackendDecision decideAuto(const RunCost& cost, const AutoInputs& in) {
    BackendDecision d;
    d.requested = BackendKind::Auto;
    const std::string cpuName = "the CPU (" + std::to_string(in.cpuThreads) +
                                (in.cpuThreads == 1 ? " thread)" : " threads)");
    const std::string tf32Note = in.math == MathMode::Tf32
                                     ? "; backend.math=tf32 applies to the GPU only, the CPU "
                                       "computes in FP32"
                                     : "";
    if (in.resumed) {
        if (*in.resumed == BackendKind::Cpu) {
            d.chosen = BackendKind::Cpu;
            d.kept = true;
            d.reason = "backend auto: using " + cpuName +
                       ", kept from the checkpoint this run resumes (its steps so far ran there)" +
                       tf32Note;
            return d;
        }
        if (*in.resumed == BackendKind::Cuda && in.gpuUsable) {
            d.chosen = BackendKind::Cuda;
            d.kept = true;
            d.reason = "backend auto: using " + in.gpuName +
                       ", kept from the checkpoint this run resumes (its steps so far ran there)";
            return d;
        }
    }
    const std::string resumedNote =
        in.resumed && *in.resumed == BackendKind::Cuda
            ? " (the checkpoint this run resumes trained on CUDA, which is not usable here)"
            : "";
    if (!in.gpuUsable) {
        d.chosen = BackendKind::Cpu;
        d.reason = "backend auto: using " + cpuName + resumedNote + ", no GPU term (" +
                   in.gpuUnusableReason + ")" + tf32Note;
        return d;
    }
    if (in.calibration == nullptr || !in.calibration->gpu(in.math)) {
        throw std::logic_error("decideAuto: a usable GPU needs a calibration of its math mode");
    }
    const double cpuSeconds = predictStepSeconds(in.calibration->cpu, cost);
    const double gpuSeconds = predictStepSeconds(*in.calibration->gpu(in.math), cost);
    const bool gpu = gpuSeconds < cpuSeconds;
    d.chosen = gpu ? BackendKind::Cuda : BackendKind::Cpu;
    const std::string measured =
        "predicted " + milliseconds(gpu ? gpuSeconds : cpuSeconds) + " a step against " +
        milliseconds(gpu ? cpuSeconds : gpuSeconds) + " on " + (gpu ? cpuName : in.gpuName) + " (" +
        fixed(cost.denseFlops / 1e6, 1) + " dense + " + fixed(cost.convFlops / 1e6, 1) +
        " conv MFLOP, " + fixed(cost.bytes / 1e6, 2) + " MB a step; calibration " +
        in.calibrationSource + ")";
    d.reason = "backend auto: using " + (gpu ? in.gpuName : cpuName) + resumedNote + ", " +
               measured + (gpu ? "" : tf32Note);
    return d;
}

json decisionJson(const BackendDecision& decision, const std::string& backendName) {
    return json{{"kind", toString(decision.chosen)},
                {"requested", toString(decision.requested)},
                {"name", backendName},
                {"reason", decision.reason}};
}

}  // namespace ensemble
