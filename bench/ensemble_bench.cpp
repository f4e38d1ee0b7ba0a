// ensemble-bench: the benchmark modes `ensemble-cli bench` (training throughput) does not have.
//
//   ensemble-bench grid [--config NAME|FILE] [--set key=value ...] [--size G] [--train-steps S]
//                       [--seconds T] [--json OUT]
//       W3: refreshes per second of the live view, evaluateGrid(trainer, G)
//       (train/trainer_report.h): every member's predictions on the G x G grid plus the per-point
//       ensemble statistics (probabilities, total / aleatoric / epistemic uncertainty,
//       disagreement). Also times the members' predictions alone and the per-point work alone
//       (evaluateGrid on predictions already made), to say where the time goes. `--set
//       ensemble.members=100
//       --set backend.kind=cpu` gives the figures tst_metrics used to print (G = 128, K = 100).
//   ensemble-bench gemm [--n N] [--threads T] [--seconds T] [--json OUT]
//       W4: the machine's float32 matrix-multiply rate, C = A B for N x N matrices with Eigen,
//       one column block per thread (the engine builds Eigen single-threaded).
//   ensemble-bench dropout [--widths 784,256,256,10 | --cnn 1] [--members K] [--batch B]
//                          [--dropout P] [--threads T] [--seconds T] [--backend cpu|cuda]
//                          [--json OUT]
//       A backend's training step (Adam, no bootstrap, random inputs; the CPU by default) with
//       inverted dropout of rate P (0: none; math/dropout.h): what mc_dropout's masks cost.
//       --cnn 1 runs the mnist-cnn preset's stack (28 x 28 images) instead of the MLP of
//       --widths; --backend cuda the CUDA backend on device 0.
//
// Prints `RESULT key=value ...`; --json writes the same figures.
#include <omp.h>

#include <Eigen/Core>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "config/config.h"
#include "data/dataset.h"
#include "metrics/grid.h"
#include "registry/registry.h"
#include "sys/allocator.h"
#include "train/trainer.h"
#include "train/trainer_report.h"

namespace {

using Clock = std::chrono::steady_clock;
using nlohmann::json;

double seconds(Clock::duration d) {
    return std::chrono::duration<double>(d).count();
}

struct Args {
    std::string mode;
    std::vector<std::pair<std::string, std::string>> options;  // in order (--set repeats)

    std::string get(const std::string& key, const std::string& fallback) const {
        for (const auto& [k, v] : options) {
            if (k == key) {
                return v;
            }
        }
        return fallback;
    }
    std::vector<std::string> all(const std::string& key) const {
        std::vector<std::string> out;
        for (const auto& [k, v] : options) {
            if (k == key) {
                out.push_back(v);
            }
        }
        return out;
    }
};

Args parseArgs(int argc, char** argv) {
    Args a;
    if (argc < 2) {
        throw std::invalid_argument("usage: ensemble-bench grid|gemm|dropout [--option value ...]");
    }
    a.mode = argv[1];
    for (int i = 2; i < argc; ++i) {
        const std::string key = argv[i];
        if (key.rfind("--", 0) != 0 || i + 1 >= argc) {
            throw std::invalid_argument("expected --option value, got '" + key + "'");
        }
        a.options.emplace_back(key, argv[++i]);
    }
    return a;
}

// Runs `body` at least `minSeconds` in total (and at least 3 times) after one warm-up call;
// returns the per-call seconds of every timed call.
template <typename F>
std::vector<double> timeCalls(double minSeconds, F&& body) {
    body();
    std::vector<double> times;
    const auto start = Clock::now();
    while (times.size() < 3 || seconds(Clock::now() - start) < minSeconds) {
        const auto t0 = Clock::now();
        body();
        times.push_back(seconds(Clock::now() - t0));
    }
    return times;
}

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

void writeJson(const Args& args, const json& report) {
    const std::string path = args.get("--json", "");
    if (!path.empty()) {
        std::ofstream(path) << report.dump(2) << "\n";
    }
}

int runGrid(const Args& args) {
    json root = ensemble::loadConfigJson(args.get("--config", "spirals"));
    ensemble::applyOverride(root, "training.eval_every=0");
    ensemble::applyOverride(root, "training.steps=1000000000");
    for (const std::string& s : args.all("--set")) {
        ensemble::applyOverride(root, s);
    }
    const ensemble::ExperimentConfig config = ensemble::parseConfig(root);
    const int size = std::stoi(args.get("--size", "128"));
    const int64_t trainSteps = std::stoll(args.get("--train-steps", "200"));
    const double minSeconds = std::stod(args.get("--seconds", "2"));
    std::string notice;
    std::unique_ptr<ensemble::Trainer> trainer = ensemble::makeTrainer(config, &notice);
    trainer->runSteps(trainSteps);  // trained weights: realistic activations

    // The members' predictions alone (what the backend does) ...
    const ensemble::GridBounds bounds = ensemble::gridBounds(trainer->data());
    const std::vector<float> points = ensemble::gridPoints(bounds, size);
    const std::vector<double> predict = timeCalls(minSeconds / 2, [&] {
        const ensemble::MemberPredictions p =
            trainer->predictRaw(points.data(), static_cast<int64_t>(size) * size);
        if (p.logProbs.empty()) {
            std::abort();
        }
    });
    // ... the per-point work on them (the host's share when the backend does not measure
    // uncertainty itself) ...
    const ensemble::MemberPredictions memberPredictions =
        trainer->predictRaw(points.data(), static_cast<int64_t>(size) * size);
    const std::vector<uint8_t> include = trainer->included();
    const std::vector<double> pointWork = timeCalls(minSeconds / 2, [&] {
        const ensemble::GridEvaluation g =
            ensemble::evaluateGrid(memberPredictions, bounds, size, include);
        if (g.ensemble.rows != static_cast<int64_t>(size) * size) {
            std::abort();
        }
    });
    // ... and the whole refresh the GUI asks for.
    const std::vector<double> refresh = timeCalls(minSeconds, [&] {
        const ensemble::GridEvaluation g = ensemble::evaluateGrid(*trainer, size);
        if (g.memberProbabilities.empty()) {
            std::abort();
        }
    });
    const double refreshSeconds = median(refresh);
    const double predictSeconds = median(predict);
    const double pointSeconds = median(pointWork);
    std::printf("backend %s, K = %d, grid %d x %d\n", trainer->backend().name().c_str(),
                trainer->members(), size, size);
    std::printf(
        "RESULT refreshes_per_sec=%.6g refresh_ms=%.4g predict_ms=%.4g point_work_ms=%.4g\n",
        1.0 / refreshSeconds, 1e3 * refreshSeconds, 1e3 * predictSeconds, 1e3 * pointSeconds);
    writeJson(args, json{{"mode", "grid"},
                         {"backend", trainer->backend().name()},
                         {"members", trainer->members()},
                         {"size", size},
                         {"refresh_seconds", refresh},
                         {"predict_seconds", predict},
                         {"point_work_seconds", pointWork},
                         {"point_work_ms", 1e3 * pointSeconds},
                         {"refreshes_per_sec", 1.0 / refreshSeconds},
                         {"refresh_ms", 1e3 * refreshSeconds},
                         {"predict_ms", 1e3 * predictSeconds}});
    return 0;
}

int runGemm(const Args& args) {
    const int n = std::stoi(args.get("--n", "2048"));
    const int threads = std::stoi(args.get("--threads", std::to_string(omp_get_max_threads())));
    const double minSeconds = std::stod(args.get("--seconds", "2"));
    const Eigen::MatrixXf a = Eigen::MatrixXf::Random(n, n);
    const Eigen::MatrixXf b = Eigen::MatrixXf::Random(n, n);
    Eigen::MatrixXf c(n, n);
    const int block = (n + threads - 1) / threads;
    const std::vector<double> times = timeCalls(minSeconds, [&] {
#pragma omp parallel for num_threads(threads) schedule(static)
        for (int t = 0; t < threads; ++t) {
            const int begin = t * block;
            const int cols = std::min(block, n - begin);
            if (cols > 0) {
                c.middleCols(begin, cols).noalias() = a * b.middleCols(begin, cols);
            }
        }
    });
    const double s = median(times);
    const double gflops = 2.0 * n * static_cast<double>(n) * n / s / 1e9;
    std::printf("RESULT gflops=%.6g seconds=%.6g n=%d threads=%d check=%g\n", gflops, s, n, threads,
                static_cast<double>(c(0, 0)));
    writeJson(args, json{{"mode", "gemm"},
                         {"n", n},
                         {"threads", threads},
                         {"seconds", times},
                         {"gflops", gflops}});
    return 0;
}

int runDropout(const Args& args) {
    using namespace ensemble;
    const int members = std::stoi(args.get("--members", "1"));
    const int batch = std::stoi(args.get("--batch", "128"));
    const float rate = std::stof(args.get("--dropout", "0"));
    const int threads = std::stoi(args.get("--threads", std::to_string(omp_get_max_threads())));
    const double minSeconds = std::stod(args.get("--seconds", "2"));
    const bool cnn = args.get("--cnn", "0") == "1";
    std::vector<int> widths;
    for (std::size_t at = 0;;) {
        const std::string all = args.get("--widths", "784,256,256,10");
        const std::size_t comma = all.find(',', at);
        widths.push_back(std::stoi(all.substr(at, comma - at)));
        if (comma == std::string::npos) {
            break;
        }
        at = comma + 1;
    }
    const ParamLayout layout =
        cnn ? ParamLayout(Architecture::stack({1, 28, 28}, recipeLayers(), 10), members)
            : ParamLayout(widths, members);
    const int64_t rows = 4096;
    std::vector<float> x(static_cast<std::size_t>(rows) * layout.inputs());
    std::vector<int32_t> y(static_cast<std::size_t>(rows));
    for (std::size_t i = 0; i < x.size(); ++i) {
        x[i] = uniformFloat(philoxDraw(1, RngPurpose::DataGen, 0, i).v[0]) - 0.5f;
    }
    for (std::size_t i = 0; i < y.size(); ++i) {
        y[i] = static_cast<int32_t>(i % static_cast<std::size_t>(layout.classes()));
    }
    TrainingProblem problem;
    problem.layout = layout;
    problem.trainX = x.data();
    problem.trainY = y.data();
    problem.trainRows = rows;
    problem.plan.seed = 1;
    problem.plan.rows = static_cast<uint32_t>(rows);
    problem.plan.batch = static_cast<uint32_t>(batch);
    problem.plan.mode = BootstrapMode::None;
    problem.rules.assign(static_cast<std::size_t>(members),
                         makeRule(OptimizerKind::Adam, 1e-4, 0.0, 0.0));
    problem.dropout = rate;
    problem.dropoutSeed = 7;
    const std::string backendKind = args.get("--backend", "cpu");
    if (backendKind != "cpu" && backendKind != "cuda") {
        throw std::invalid_argument("--backend: cpu or cuda, not '" + backendKind + "'");
    }
    ExperimentConfig config;
    config.backend.kind = backendKind == "cuda" ? BackendKind::Cuda : BackendKind::Cpu;
    config.backend.threads = threads;
    const std::unique_ptr<Backend> made = makeBackend(config, DataSplit{}).backend;
    Backend& backend = *made;
    backend.bind(problem);
    std::vector<float> params(layout.size());
    initParameters(layout, 3, params.data());
    backend.setParameters(params.data());
    std::vector<uint8_t> active(static_cast<std::size_t>(members), 1);
    std::vector<float> losses(static_cast<std::size_t>(members));
    uint64_t step = 0;
    const std::vector<double> times =
        timeCalls(minSeconds, [&] { backend.step(step++, active.data(), losses.data()); });
    const double s = median(times);
    std::printf(
        "RESULT step_ms=%.6g dropout=%g members=%d batch=%d threads=%d cnn=%d backend=%s loss=%g\n",
        1e3 * s, static_cast<double>(rate), members, batch, threads, cnn ? 1 : 0,
        backendKind.c_str(), static_cast<double>(losses[0]));
    writeJson(args, json{{"mode", "dropout"},
                         {"backend", backendKind},
                         {"dropout", rate},
                         {"members", members},
                         {"batch", batch},
                         {"threads", threads},
                         {"cnn", cnn},
                         {"seconds", times},
                         {"step_ms", 1e3 * s}});
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    ensemble::keepFreedMemoryForReuse();
    try {
        const Args args = parseArgs(argc, argv);
        if (args.mode == "grid") {
            return runGrid(args);
        }
        if (args.mode == "gemm") {
            return runGemm(args);
        }
        if (args.mode == "dropout") {
            return runDropout(args);
        }
        throw std::invalid_argument("unknown mode '" + args.mode + "' (grid, gemm, dropout)");
    } catch (const std::exception& e) {
        std::fprintf(stderr, "ensemble-bench: %s\n", e.what());
        return 1;
    }
}
