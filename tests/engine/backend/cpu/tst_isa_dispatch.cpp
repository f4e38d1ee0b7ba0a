// Run-time dispatch of the CPU backend by x86-64 level (backend/cpu_dispatch.h): every level
// this CPU runs trains a small MLP and a small CNN to the baseline's parameters within
// kTolerance, each level is bit-for-bit the same on 1 and 2 threads and from run to run, a pin
// is honoured and recorded in the backend's name and the export, a pin above the CPU is a
// ConfigError, a missing level object falls back to the built-in backend with a note, errors
// thrown inside an object are caught as the engine's own types, and a checkpoint made at one
// level resumes at another. Needs a build with ENSEMBLE_ISA_DISPATCH=ON (skips otherwise).

#include <QTemporaryDir>
#include <QtTest>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "backend/cpu_dispatch.h"
#include "backend/gemm_library.h"
#include "backend/kernel_report.h"
#include "config/config.h"
#include "core/errors.h"
#include "data/dataset.h"
#include "io/checkpoint.h"
#include "registry/registry.h"
#include "support/bar_images.h"
#include "sys/cpu_identity.h"
#include "train/trainer.h"

using namespace ensemble;
using ensemble::test::barImages;
using nlohmann::json;

namespace {

// Levels differ in vector width and FMA contraction, so sums round differently; after the
// steps below the parameters agree to this, relative to the largest parameter's magnitude
// (measured on an Intel family 6 model 106: 0 for v2, 2.7e-7 for v3 and v4).
constexpr double kTolerance = 1e-5;
// OpenBLAS's products against Eigen's at one level: other blocking, other sums (tst_gemm_library
// holds training with the two libraries to the same bound).
constexpr double kGemmTolerance = 1e-4;

json mlpConfig(const std::string& pin, int threads) {
    return json{{"dataset", {{"kind", "spirals"}, {"n", 400}}},
                {"model", {{"hidden", {32, 32}}}},
                {"ensemble", {{"members", 4}, {"seed", 3}, {"bootstrap", "resample"}}},
                {"optimizer", {{"kind", "adam"}, {"lr", 0.01}}},
                {"training", {{"batch_size", 64}, {"steps", 60}, {"eval_every", 0}}},
                {"backend", {{"kind", "cpu"}, {"threads", threads}, {"cpu_isa", pin}}}};
}

json cnnConfig(const std::string& pin, int threads) {
    json c = ensemble::test::barCnnConfig(12);
    c["backend"] = {{"kind", "cpu"}, {"threads", threads}, {"cpu_isa", pin}};
    return c;
}

struct Run {
    std::vector<float> params;
    std::string name;
};

Run train(const json& config, bool cnn) {
    const ExperimentConfig c = parseConfig(config);
    DataSplit data = cnn ? barImages(120, 20, uint64_t{3}) : loadDataSplit(c.dataset);
    Trainer t(c, std::move(data),
              makeDispatchedCpuBackend(c.backend.threads, toString(c.backend.cpuIsa)));
    t.runSteps(t.totalSteps());
    return {t.parameters(), t.backend().name()};
}

// max |a - b| / max(1, max |a|)
double relativeDifference(const std::vector<float>& a, const std::vector<float>& b) {
    double diff = 0.0;
    double scale = 1.0;
    for (std::size_t i = 0; i < a.size(); ++i) {
        diff = std::max(diff, std::abs(static_cast<double>(a[i]) - b[i]));
        scale = std::max(scale, std::abs(static_cast<double>(a[i])));
    }
    return diff / scale;
}

const char* kIsa[] = {"", "SSE2", "SSE4.2", "AVX2+FMA", "AVX-512"};
const int kLanes[] = {0, 4, 4, 8, 16};

}  // namespace

class TestIsaDispatch : public QObject {
    Q_OBJECT

  private slots:
    void init() {
        qunsetenv("ENSEMBLE_CPU_ISA");
        qunsetenv("ENSEMBLE_CPU_LEVEL_DIR");
        // The levels are compared on their own Eigen products; gemmChoiceReachesLevelObjects
        // turns OpenBLAS on.
        qputenv("ENSEMBLE_GEMM", "eigen");
        useGemmLibrary(GemmLibrary::Eigen);
        if (!cpuIsaDispatchBuilt()) {
            QSKIP("configured with ENSEMBLE_ISA_DISPATCH=OFF");
        }
        if (builtinCpuLevel() != 1) {
            // A -march=native build with level objects: its built-in backend is not the
            // baseline every level is compared with. The ASan tree (ENSEMBLE_NATIVE=OFF) runs
            // these checks; scripts/check-package.sh runs the package at every level.
            QSKIP("the built-in CPU backend is not baseline x86-64 (ENSEMBLE_NATIVE=ON)");
        }
    }

    // Every level up to the CPU's is carried by the build and reports its own kernels.
    void everyLevelLoads() {
        const int reach = cpuIdentity().x86Level();
        for (int level = 1; level <= reach; ++level) {
            const CpuLevelChoice c = chooseCpuLevel(cpuLevelName(level));
            QCOMPARE(c.level, level);
            QVERIFY2(c.note.empty(), c.note.c_str());
            QCOMPARE(c.object.empty(), level == 1);
            QCOMPARE(c.isa, std::string(kIsa[level]));
            QCOMPARE(c.floatLanes, kLanes[level]);
        }
        const CpuLevelChoice best = chooseCpuLevel("auto");
        QCOMPARE(best.level, reach);
        const CpuKernels k = cpuKernels();
        QCOMPARE(k.level, cpuLevelName(reach));
        QVERIFY2(k.describe().find("(" + k.level) != std::string::npos, k.describe().c_str());
    }

    void mlpLevelsEqualBaseline() { levelsEqualBaseline(false); }
    void cnnLevelsEqualBaseline() { levelsEqualBaseline(true); }

    // A level's results are its own: the same bits on 1 and 2 threads and on a second run.
    void levelsIndependentOfThreads() {
        for (int level = 1; level <= cpuIdentity().x86Level(); ++level) {
            const std::string pin = cpuLevelName(level);
            for (const bool cnn : {false, true}) {
                const auto config = [&](int threads) {
                    return cnn ? cnnConfig(pin, threads) : mlpConfig(pin, threads);
                };
                const Run one = train(config(1), cnn);
                const Run two = train(config(2), cnn);
                const Run again = train(config(2), cnn);
                QVERIFY2(one.params == two.params, (pin + (cnn ? " cnn" : " mlp")).c_str());
                QVERIFY(two.params == again.params);
            }
        }
    }

    // backend.cpu_isa through the registry: the trainer's backend is named for the level, the
    // export records that name; ENSEMBLE_CPU_ISA pins `auto` and not an explicit pin.
    void pinHonouredAndRecorded() {
        QVERIFY(parseConfig(mlpConfig("auto", 1)).backend.cpuIsa == CpuIsa::Auto);
        for (int level = 1; level <= cpuIdentity().x86Level(); ++level) {
            const std::string pin = cpuLevelName(level);
            std::string notice;
            auto t = makeTrainer(parseConfig(mlpConfig(pin, 1)), &notice);
            QCOMPARE(t->backend().name(), "cpu " + pin + " (1 thread)");
            QVERIFY2(notice.empty(), notice.c_str());
        }
        qputenv("ENSEMBLE_CPU_ISA", "x86-64-v2");
        QCOMPARE(chooseCpuLevel("auto").level, 2);
        QCOMPARE(chooseCpuLevel("x86-64").level, 1);
        QCOMPARE(makeTrainer(parseConfig(mlpConfig("auto", 2)), nullptr)->backend().name(),
                 std::string("cpu x86-64-v2 (2 threads)"));
        qputenv("ENSEMBLE_CPU_ISA", "x86-64-v9");
        QVERIFY_THROWS_EXCEPTION(ConfigError, chooseCpuLevel("auto"));
    }

    // A level above the CPU's is an error naming the key and the CPU; a name that is no level
    // is refused by the config.
    void pinAboveCpuIsAnError() {
        for (int reach = 1; reach < 4; ++reach) {
            try {
                chooseCpuLevel(cpuLevelName(reach + 1), reach);
                QFAIL("expected a ConfigError");
            } catch (const ConfigError& e) {
                QCOMPARE(e.key(), std::string("backend.cpu_isa"));
                const std::string what = e.what();
                QVERIFY2(what.find("cannot run") != std::string::npos, e.what());
                QVERIFY2(what.find("reaches " + cpuLevelName(reach)) != std::string::npos,
                         e.what());
            }
            QCOMPARE(chooseCpuLevel("auto", reach).level, reach);
        }
        QVERIFY_THROWS_EXCEPTION(ConfigError, parseConfig(mlpConfig("avx2", 1)));
    }

    // No level objects where they are looked for: the built-in baseline runs, with a note that
    // the trainer's notice carries.
    void missingObjectFallsBackWithNote() {
        if (cpuIdentity().x86Level() < 2) {
            QSKIP("a baseline CPU loads no level object");
        }
        QTemporaryDir empty;
        qputenv("ENSEMBLE_CPU_LEVEL_DIR", empty.path().toUtf8());
        for (const std::string pin : {"auto", "x86-64-v2"}) {
            const CpuLevelChoice c = chooseCpuLevel(pin);
            QCOMPARE(c.level, 1);
            QVERIFY(c.object.empty());
            QVERIFY2(c.note.find(empty.path().toStdString()) != std::string::npos, c.note.c_str());
            QVERIFY2(c.note.find("built-in x86-64") != std::string::npos, c.note.c_str());
            std::string notice;
            auto t = makeTrainer(parseConfig(mlpConfig(pin, 1)), &notice);
            QCOMPARE(t->backend().name(), std::string("cpu x86-64 (1 thread)"));
            QVERIFY2(notice.find(c.note) != std::string::npos, notice.c_str());
        }
    }

    // An exception thrown inside a level object is the engine's own type outside it.
    void errorsCrossTheBoundary() {
        const int level = cpuIdentity().x86Level();
        if (level < 2) {
            QSKIP("a baseline CPU loads no level object");
        }
        const auto backend = makeDispatchedCpuBackend(1, cpuLevelName(level));
        std::vector<float> x(8, 0.0f);
        std::vector<int32_t> y(4, 0);
        TrainingProblem p;
        p.layout = ParamLayout({2, 4, 2}, 1);
        p.trainX = x.data();
        p.trainY = y.data();
        p.trainRows = 4;
        p.plan.rows = 4;
        p.plan.batch = 4;
        p.rules = {makeRule(OptimizerKind::Sgd, 0.1, 0.0, 0.0, 0.9, 0.999, 1e-8)};
        p.shard.count = 2;  // no sum over the replicas: refused by checkTrainingProblem
        try {
            backend->bind(p);
            QFAIL("expected a ConfigError");
        } catch (const ConfigError& e) {
            QCOMPARE(e.key(), std::string("backend.mesh"));
        }
    }

    // A checkpoint made at the CPU's level resumes at the baseline: the resumed run's export
    // records the level it resumed at, and ends within kTolerance of the straight run.
    void resumeAtAnotherLevel() {
        const int level = cpuIdentity().x86Level();
        const std::string high = cpuLevelName(level);
        QTemporaryDir dir;
        const std::string path = dir.filePath("half.safetensors").toStdString();
        {
            auto t = makeTrainer(parseConfig(mlpConfig(high, 1)), nullptr);
            t->runSteps(30);
            writeCheckpoint(path, *t, {});
        }
        const Checkpoint cp = readCheckpoint(path);
        QCOMPARE(cp.ensemble.metadata.at("backend").at("name").get<std::string>(),
                 "cpu " + high + " (1 thread)");
        const ExperimentConfig resumed = resumeConfig(cp, {"backend.cpu_isa=x86-64"});
        auto t = makeTrainer(resumed, nullptr);
        resumeTrainer(*t, cp);
        t->runSteps(t->totalSteps() - t->step());
        QCOMPARE(t->backend().name(), std::string("cpu x86-64 (1 thread)"));
        const Run straight = train(mlpConfig(high, 1), false);
        const double d = relativeDifference(straight.params, t->parameters());
        QVERIFY2(d <= kTolerance, std::to_string(d).c_str());
    }

    // backend.gemm reaches the level objects, which hold their own copy of the choice: a
    // backend made there with OpenBLAS says so in its name (computed in the object) and trains
    // within kGemmTolerance of the same level's Eigen products; through the registry the key
    // does the same.
    void gemmChoiceReachesLevelObjects() {
        if (const std::string why = openblasUnusableReason(); !why.empty()) {
            QSKIP(why.c_str());
        }
        for (int level = 2; level <= cpuIdentity().x86Level(); ++level) {
            const std::string pin = cpuLevelName(level);
            for (const bool cnn : {false, true}) {
                const json config = cnn ? cnnConfig(pin, 2) : mlpConfig(pin, 2);
                useGemmLibrary(GemmLibrary::Eigen);
                const Run eigen = train(config, cnn);
                useGemmLibrary(GemmLibrary::OpenBlas);
                const Run openblas = train(config, cnn);
                QCOMPARE(eigen.name, "cpu " + pin + " (2 threads)");
                QCOMPARE(openblas.name, "cpu " + pin + " (2 threads, OpenBLAS GEMM)");
                const double d = relativeDifference(eigen.params, openblas.params);
                qInfo("%s %s: OpenBLAS against Eigen %.3g (relative)", cnn ? "cnn" : "mlp",
                      pin.c_str(), d);
                QVERIFY2(d <= kGemmTolerance, std::to_string(d).c_str());
            }
            qunsetenv("ENSEMBLE_GEMM");
            json keyed = mlpConfig(pin, 1);
            keyed["backend"]["gemm"] = "openblas";
            QCOMPARE(makeTrainer(parseConfig(keyed), nullptr)->backend().name(),
                     "cpu " + pin + " (1 thread, OpenBLAS GEMM)");
            keyed["backend"]["gemm"] = "eigen";
            QCOMPARE(makeTrainer(parseConfig(keyed), nullptr)->backend().name(),
                     "cpu " + pin + " (1 thread)");
            qputenv("ENSEMBLE_GEMM", "eigen");
        }
    }

  private:
    void levelsEqualBaseline(bool cnn) {
        const auto config = [&](const std::string& pin) {
            return cnn ? cnnConfig(pin, 2) : mlpConfig(pin, 2);
        };
        const Run baseline = train(config("x86-64"), cnn);
        QCOMPARE(baseline.name, std::string("cpu x86-64 (2 threads)"));
        for (int level = 2; level <= cpuIdentity().x86Level(); ++level) {
            const Run run = train(config(cpuLevelName(level)), cnn);
            QCOMPARE(run.name, "cpu " + cpuLevelName(level) + " (2 threads)");
            QCOMPARE(run.params.size(), baseline.params.size());
            const double d = relativeDifference(baseline.params, run.params);
            qInfo("%s %s: max difference from x86-64 %.3g (relative)", cnn ? "cnn" : "mlp",
                  cpuLevelName(level).c_str(), d);
            QVERIFY2(d <= kTolerance, std::to_string(d).c_str());
        }
    }
};

QTEST_GUILESS_MAIN(TestIsaDispatch)
#include "tst_isa_dispatch.moc"
