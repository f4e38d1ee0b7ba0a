// ensemble-cli bench: training and prediction throughput of a config, the median of repeats;
// under mpirun on every rank.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "backend/auto_choice.h"
#include "backend/kernel_report.h"
#include "cli/cli_common.h"
#include "cli/commands.h"
#include "registry/registry.h"
#include "sys/atomic_file.h"
#include "sys/cpu_identity.h"
#include "train/trainer.h"

namespace ensemble::cli {

namespace {

// The CPU the figures were measured on, for the --json report.
nlohmann::json cpuJson() {
    const CpuIdentity& cpu = cpuIdentity();
    return {{"vendor", cpu.vendor},        {"family", cpu.family},
            {"model", cpu.model},          {"stepping", cpu.stepping},
            {"brand", cpu.brand},          {"isa", cpu.isa},
            {"x86_level", cpu.x86Level()}, {"vector_bits", cpu.vectorBits()}};
}

// What computed the figures: the CPU backend's kernels (ISA, vector width, GEMM), or, for a
// GPU backend, cuBLAS with the engine's CUDA kernels. `cpuIsa`: the config's backend.cpu_isa,
// so the line names the level that ran.
std::string kernelsLine(const std::string& backendName, CpuIsa cpuIsa) {
    if (!backendName.starts_with("cpu")) {
        return "cuBLAS and the engine's CUDA kernels (" + backendName + ")";
    }
    return cpuKernels(toString(cpuIsa)).describe();
}

using nlohmann::json;
using Clock = std::chrono::steady_clock;

std::string termsLine(const ThroughputTerms& t) {
    char line[256];
    std::snprintf(line, sizeof line,
                  "latency %.4f ms, dense %.4g GFLOP/s, conv %.4g GFLOP/s, memory %.4g GB/s",
                  t.latencySeconds * 1e3, t.denseFlopsPerSecond / 1e9, t.convFlopsPerSecond / 1e9,
                  t.bytesPerSecond / 1e9);
    return line;
}

// bench --calibrate-auto: measures this machine's terms of backend.kind=auto's cost model
// (backend/auto_choice.h) for the config's backend.threads and backend.device, stores them in
// the cache and prints them; with --config, also what auto picks for that config and why.
ExitCode calibrateAuto(const CliArgs& args) {
    if (world().distributed()) {
        throw ConfigError("--calibrate-auto measures one machine: run it without mpirun");
    }
    const ExperimentConfig config = configFrom(args);
    const std::string path = calibrationCachePath();
    std::string gpu;
    std::fprintf(stderr, "measuring the CPU%s (a few seconds)...\n",
                 cudaAvailable(config.backend.device, gpu) ? " and the GPU" : "");
    const MachineCalibration c = calibrateMachine(config.backend, path, gpu);
    std::printf("calibration of %s, measured %s\n", c.key.c_str(), c.measuredAt.c_str());
    std::printf("  cpu: %s\n", termsLine(c.cpu).c_str());
    if (c.gpuFp32) {
        std::printf("  gpu fp32, %s: %s\n", gpu.c_str(), termsLine(*c.gpuFp32).c_str());
    }
    if (c.gpuTf32) {
        std::printf("  gpu tf32, %s: %s\n", gpu.c_str(), termsLine(*c.gpuTf32).c_str());
    }
    if (!c.gpuFp32) {
        std::printf("  gpu: none (%s)\n", gpu.c_str());
    }
    if (path.empty()) {
        std::printf("not stored: neither XDG_CACHE_HOME nor HOME is set\n");
    } else {
        std::printf("stored in %s\n", path.c_str());
    }
    if (args.has("--config")) {
        const DataSplit data = loadDataSplit(config.dataset);
        const BackendChoice choice = makeBackend(config, data);
        std::printf("this config: %s\n", choice.decision.reason.c_str());
    }
    if (args.has("--json")) {
        const json report{{"key", c.key}, {"cache", path}, {"calibration", calibrationToJson(c)}};
        writeFileAtomic(args.get("--json"), report.dump(2) + "\n");
    }
    return ExitCode::Ok;
}

}  // namespace

ExitCode commandBench(const CliArgs& args) {
    if (args.flag("--calibrate-auto")) {
        return calibrateAuto(args);
    }
    // Under mpirun every rank steps its share of the members (backend.mesh); a repeat lasts as
    // long as the slowest rank, and the rate counts every member.
    Collective& world = cli::world();
    ExperimentConfig config;
    int64_t steps = 0;
    int64_t warmup = 0;
    int64_t repeat = 0;
    std::string notice;
    std::unique_ptr<Trainer> trainer;
    const std::optional<ExitCode> setupFailed = agreeOnSetup(world, "bench", [&] {
        json root = configJsonFrom(args);
        // Benchmarks never stop for evaluation; the step count is the bench's own.
        applyOverride(root, "training.eval_every=0");
        applyOverride(root, "training.epochs=0");
        applyOverride(root, "training.steps=1000000000");
        config = parseConfig(root);
        steps = parseCount(args, "--steps", 200, 1);
        warmup = parseCount(args, "--warmup", 20, 0);
        repeat = parseCount(args, "--repeat", 3, 1);
        resolveMesh(config, world);
        trainer = makeTrainer(config, &notice, &world);
    });
    if (setupFailed) {
        return *setupFailed;
    }
    const bool talk = world.root();
    if (!notice.empty() && talk) {
        std::fprintf(stderr, "%s\n", notice.c_str());
    }
    logRankDevices(*trainer, !talk);
    trainer->runSteps(warmup);
    std::vector<double> rates;
    for (int64_t r = 0; r < repeat; ++r) {
        world.barrier();
        const auto start = Clock::now();
        trainer->runSteps(steps);
        const double s = world.max(std::chrono::duration<double>(Clock::now() - start).count());
        rates.push_back(static_cast<double>(steps) / s);
        if (talk) {
            std::fprintf(stderr, "repeat %lld: %.1f steps/s\n", static_cast<long long>(r + 1),
                         rates.back());
        }
    }
    if (!talk) {
        return ExitCode::Ok;
    }
    std::vector<double> sorted = rates;
    std::sort(sorted.begin(), sorted.end());
    const double median = sorted[sorted.size() / 2];
    const double memberRate = median * trainer->globalMembers();
    // Useful work of a step: forward, weight gradients and the input gradients of every layer
    // but the first, two FLOP per multiply-add (what docs/performance.md's FLOP rates count).
    const Architecture& arch = trainer->layout().architecture();
    double trainMacs = 2.0 * arch.forwardMacsPerExample();
    for (const StackLayer& s : arch.layers()) {
        if (s.param > 0) {
            trainMacs += static_cast<double>(s.fanIn()) * static_cast<double>(s.out.size());
        }
    }
    const double gflops = memberRate * config.training.batchSize * 2.0 * trainMacs / 1e9;
    // Prediction: the first ROWS rows of the test split (of the train split when there is no
    // test split) through every member, the median of `repeat` timings.
    double imagesPerSecond = 0.0;
    if (args.has("--predict")) {
        const int64_t want = parseCount(args, "--predict", 1024, 1);
        const Dataset& split =
            trainer->data().test.rows > 0 ? trainer->data().test : trainer->data().train;
        const int64_t rows = std::min(want, split.rows);
        std::vector<double> times;
        for (int64_t r = 0; r < repeat; ++r) {
            const auto start = Clock::now();
            const MemberPredictions p = trainer->predictRaw(split.x.data(), rows);
            times.push_back(std::chrono::duration<double>(Clock::now() - start).count());
        }
        std::sort(times.begin(), times.end());
        imagesPerSecond = static_cast<double>(rows) / times[times.size() / 2];
    }
    const std::string kernels = kernelsLine(trainer->backend().name(), config.backend.cpuIsa);
    if (args.has("--json")) {
        const json report{{"backend", trainer->backend().name()},
                          {"members", trainer->globalMembers()},
                          {"ranks", world.ranks()},
                          {"batch_size", config.training.batchSize},
                          {"widths", trainer->layout().widths()},
                          {"model", config.json.value("model", json::object())},
                          {"steps", steps},
                          {"warmup", warmup},
                          {"steps_per_sec", rates},
                          {"steps_per_sec_median", median},
                          {"member_steps_per_sec", memberRate},
                          {"useful_gflops", gflops},
                          {"cpu", cpuJson()},
                          {"kernels", kernels}};
        writeFileAtomic(args.get("--json"), report.dump(2) + "\n");
    }
    // A speed figure means little without the CPU it was measured on.
    std::printf("cpu: %s, %s, %d-bit vectors\n", cpuModelName().c_str(),
                cpuIdentity().describe().c_str(), cpuIdentity().vectorBits());
    std::printf("kernels: %s\n", kernels.c_str());
    std::printf(
        "backend %s, K = %d, batch %d%s\n", trainer->backend().name().c_str(),
        trainer->globalMembers(), config.training.batchSize,
        world.distributed() ? (", " + std::to_string(world.ranks()) + " MPI ranks").c_str() : "");
    std::printf("RESULT steps_per_sec=%.6g member_steps_per_sec=%.6g useful_gflops=%.6g", median,
                memberRate, gflops);
    if (args.has("--predict")) {
        std::printf(" predict_images_per_sec=%.6g", imagesPerSecond);
    }
    std::printf("\n");
    return ExitCode::Ok;
}

}  // namespace ensemble::cli
