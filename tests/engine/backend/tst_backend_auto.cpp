// backend.kind=auto (backend/auto_choice.h, registry/registry.h): the cost of a run against
// hand-computed counts, the rule with injected calibrations (the CPU for spirals at K = 1, the
// GPU for large K), its determinism, the calibration cache (write, read, damaged files), auto
// without a usable GPU, the decision in an export's metadata and kept by a resumed run,
// backend.math's config rules, and `bench --calibrate-auto` end to end. No GPU needed: where
// this machine has one, the cases that assume none check the GPU's branch instead.
#include <QtTest/QtTest>

#include <cstdlib>
#include <memory>
#include <optional>
#include <string>

#include "backend/auto_choice.h"
#include "backend/gemm_library.h"
#include "backend/kernel_report.h"
#include "config/config.h"
#include "core/errors.h"
#include "io/checkpoint.h"
#include "io/model_io.h"
#include "io/safetensors.h"
#include "registry/registry.h"
#include "support/engine_test_support.h"
#include "support/test_support.h"
#include "sys/atomic_file.h"
#include "sys/cpu_identity.h"
#include "train/trainer.h"

using namespace ensemble;
using ensemble::test::describe;
using ensemble::test::Run;
using ensemble::test::runCli;
using nlohmann::json;

namespace {

// A 16-core workstation and an H100, roughly as docs/performance.md measured them: the CPU's
// step costs microseconds, the GPU's some 75 us of launches and a synchronisation.
ThroughputTerms workstationCpu() {
    ThroughputTerms t;
    t.latencySeconds = 6.5e-6;
    t.denseFlopsPerSecond = 5e11;
    t.convFlopsPerSecond = 3e11;
    t.bytesPerSecond = 5e10;
    return t;
}

ThroughputTerms h100() {
    ThroughputTerms t;
    t.latencySeconds = 75e-6;
    t.denseFlopsPerSecond = 2e13;
    t.convFlopsPerSecond = 1e13;
    t.bytesPerSecond = 2e12;
    return t;
}

MachineCalibration injected(const std::string& key = "cpu=test;threads=16;gpu=H100") {
    MachineCalibration c;
    c.key = key;
    c.measuredAt = "2026-11-26T00:00:00Z";
    c.cpu = workstationCpu();
    c.gpuFp32 = h100();
    return c;
}

AutoInputs gpuMachine(const MachineCalibration& c) {
    AutoInputs in;
    in.gpuUsable = true;
    in.gpuName = "cuda:0 (H100)";
    in.cpuThreads = 16;
    in.calibration = &c;
    in.calibrationSource = "injected";
    return in;
}

RunCost spirals(int members) {
    return runCost(Architecture::mlp({2, 32, 32, 2}), members, 32);
}

// The suites' small spirals run, smaller (n = 200, an 8-8 MLP of the default activation, K = 3,
// the default optimizer, 10 steps) and with backend.kind = auto on one thread; `extra` is the
// test's own patch.
json autoConfigJson(const std::string& extra = "{}") {
    return ensemble::test::smallSpiralsJson(
        R"({"dataset": {"n": 200}, "model": {"hidden": [8, 8], "activation": null},
            "ensemble": {"members": 3}, "optimizer": null, "training": {"steps": 10},
            "backend": {"kind": "auto", "threads": 1}})",
        extra);
}

bool gpuHere() {
    std::string reason;
    return cudaAvailable(0, reason);
}

}  // namespace

class TestBackendAuto : public QObject {
    Q_OBJECT

  private:
    QTemporaryDir m_cache;

  private Q_SLOTS:
    void initTestCase() {
        // Every case's cache in a folder of its own: never the user's.
        QVERIFY(m_cache.isValid());
        qputenv("XDG_CACHE_HOME", m_cache.path().toUtf8());
    }

    void costOfAnMlpByHand() {
        // 2-32-32-2: 2*32 + 32*32 + 32*2 = 1152 multiply-adds forward; three products of that
        // size, two FLOPs each, 32 rows: 221,184 FLOPs. 1,218 parameters; 68 activations a row.
        const RunCost one = spirals(1);
        QCOMPARE(one.denseFlops, 221184.0);
        QCOMPARE(one.convFlops, 0.0);
        QCOMPARE(one.bytes, 4.0 * (8.0 * 1218 + 3.0 * 32 * 68));
        const RunCost thousand = spirals(1000);
        QCOMPARE(thousand.denseFlops, 1000 * one.denseFlops);
        QCOMPARE(thousand.bytes, 1000 * one.bytes);
    }

    void costOfAConvByHand() {
        // 1x4x4 input, conv 2 filters 3x3 same (fan-in 9, 2x4x4 outputs: 288 MACs, 20
        // parameters), dense 32 -> 3 (96 MACs, 99 parameters); batch 5, K 2.
        LayerSpec conv;
        conv.kind = LayerKind::Conv;
        conv.filters = 2;
        conv.kernel = 3;
        const RunCost c = runCost(Architecture::stack(Shape{1, 4, 4}, {conv}, 3), 2, 5);
        QCOMPARE(c.convFlops, 2.0 * 5 * 6 * 288);
        QCOMPARE(c.denseFlops, 2.0 * 5 * 6 * 96);
        QCOMPARE(c.bytes, 2.0 * 4 * (8.0 * (20 + 99) + 3.0 * 5 * (16 + 32 + 3)));
    }

    void predictionIsTheModel() {
        const ThroughputTerms t = workstationCpu();
        RunCost c;
        c.denseFlops = 1e9;
        c.convFlops = 3e9;
        c.bytes = 5e8;
        QCOMPARE(predictStepSeconds(t, c), 6.5e-6 + 1e9 / 5e11 + 3e9 / 3e11 + 5e8 / 5e10);
        ThroughputTerms noConv = t;
        noConv.convFlopsPerSecond = 0.0;
        QVERIFY(std::isinf(predictStepSeconds(noConv, c)));
        c.convFlops = 0.0;  // no conv work: a missing conv rate costs nothing
        QVERIFY(std::isfinite(predictStepSeconds(noConv, c)));
    }

    void cpuForSpiralsAtOneMemberGpuForMany() {
        const MachineCalibration c = injected();
        const AutoInputs in = gpuMachine(c);
        // K = 1: 6.5 + 0.44 + 1.3 us on the CPU against 75 us of GPU latency.
        const BackendDecision small = decideAuto(spirals(1), in);
        QVERIFY(small.chosen == BackendKind::Cpu);
        QVERIFY(small.requested == BackendKind::Auto);
        QVERIFY2(QString::fromStdString(small.reason).contains(QStringLiteral("the CPU (16")),
                 small.reason.c_str());
        QVERIFY2(QString::fromStdString(small.reason).contains(QStringLiteral("injected")),
                 small.reason.c_str());
        // K = 1000: 1.75 ms on the CPU against 0.12 ms.
        const BackendDecision large = decideAuto(spirals(1000), in);
        QVERIFY(large.chosen == BackendKind::Cuda);
        QVERIFY2(QString::fromStdString(large.reason).contains(QStringLiteral("cuda:0 (H100)")),
                 large.reason.c_str());
        // mnist-cnn at K = 16, batch 128: conv work the GPU does far faster.
        LayerSpec conv32;
        conv32.kind = LayerKind::Conv;
        conv32.filters = 32;
        conv32.kernel = 3;
        LayerSpec conv64 = conv32;
        conv64.filters = 64;
        LayerSpec pool;
        pool.kind = LayerKind::Pool;
        pool.size = 2;
        LayerSpec dense;
        dense.kind = LayerKind::Dense;
        dense.units = 256;
        const RunCost cnn =
            runCost(Architecture::stack(Shape{1, 28, 28}, {conv32, pool, conv64, pool, dense}, 10),
                    16, 128);
        QVERIFY(decideAuto(cnn, in).chosen == BackendKind::Cuda);
        // The crossover lies between: some K picks each side, and the choice flips once.
        int flips = 0;
        BackendKind last = BackendKind::Cpu;
        for (int k = 1; k <= 1024; k *= 2) {
            const BackendKind now = decideAuto(spirals(k), in).chosen;
            flips += now != last ? 1 : 0;
            last = now;
        }
        QCOMPARE(flips, 1);
    }

    void aTieGoesToTheCpu() {
        MachineCalibration c = injected();
        c.gpuFp32 = c.cpu;
        QVERIFY(decideAuto(spirals(100), gpuMachine(c)).chosen == BackendKind::Cpu);
    }

    void theMathModeSelectsItsOwnTerms() {
        MachineCalibration c = injected();
        AutoInputs in = gpuMachine(c);
        in.math = MathMode::Tf32;
        // No tf32 terms: the registry measures them first; decideAuto refuses to guess.
        QVERIFY_THROWS_EXCEPTION(std::logic_error, decideAuto(spirals(1000), in));
        ThroughputTerms slow = h100();
        slow.latencySeconds = 1.0;  // a tf32 calibration that loses everywhere
        c.gpuTf32 = slow;
        const BackendDecision d = decideAuto(spirals(1000), in);
        QVERIFY(d.chosen == BackendKind::Cpu);
        QVERIFY2(QString::fromStdString(d.reason).contains(QStringLiteral("tf32")),
                 d.reason.c_str());
    }

    void theRuleIsDeterministic() {
        const MachineCalibration c = injected();
        // Through the cache's JSON and back: the same decision, the same words.
        const MachineCalibration back = calibrationFromJson(calibrationToJson(c), c.key);
        for (int k : {1, 7, 64, 100, 333, 1000}) {
            const BackendDecision a = decideAuto(spirals(k), gpuMachine(c));
            const BackendDecision b = decideAuto(spirals(k), gpuMachine(back));
            QVERIFY(a.chosen == b.chosen);
            QCOMPARE(a.reason, b.reason);
        }
    }

    void withoutAGpuTheCpuWithTheReason() {
        AutoInputs in;
        in.gpuUsable = false;
        in.gpuUnusableReason = "cudaGetDeviceCount failed: no CUDA-capable device is detected";
        in.cpuThreads = 2;
        const BackendDecision d = decideAuto(spirals(1000), in);  // no calibration needed
        QVERIFY(d.chosen == BackendKind::Cpu);
        QVERIFY2(QString::fromStdString(d.reason).contains(QStringLiteral("no GPU term")),
                 d.reason.c_str());
        QVERIFY2(QString::fromStdString(d.reason).contains(QStringLiteral("no CUDA-capable")),
                 d.reason.c_str());
    }

    void aResumedRunKeepsItsBackend() {
        const MachineCalibration c = injected();
        AutoInputs in = gpuMachine(c);
        in.resumed = BackendKind::Cpu;  // though the GPU would win at K = 1000
        BackendDecision d = decideAuto(spirals(1000), in);
        QVERIFY(d.chosen == BackendKind::Cpu);
        QVERIFY2(QString::fromStdString(d.reason).contains(QStringLiteral("kept")),
                 d.reason.c_str());
        in.resumed = BackendKind::Cuda;  // though the CPU would win at K = 1
        d = decideAuto(spirals(1), in);
        QVERIFY(d.chosen == BackendKind::Cuda);
        // Trained on CUDA, resumed where there is none: the CPU, saying so.
        AutoInputs none;
        none.gpuUnusableReason = "no device";
        none.resumed = BackendKind::Cuda;
        d = decideAuto(spirals(1), none);
        QVERIFY(d.chosen == BackendKind::Cpu);
        QVERIFY2(QString::fromStdString(d.reason).contains(QStringLiteral("not usable here")),
                 d.reason.c_str());
    }

    void cachePathFollowsXdg() {
        const QByteArray saved = qgetenv("XDG_CACHE_HOME");
        qputenv("XDG_CACHE_HOME", "/tmp/xdg-test");
        QCOMPARE(calibrationCachePath(),
                 std::string("/tmp/xdg-test/ensemblelab/backend-calibration.json"));
        qputenv("XDG_CACHE_HOME", "relative/is/ignored");
        const std::string home = qgetenv("HOME").toStdString();
        if (!home.empty()) {
            QCOMPARE(calibrationCachePath(), home + "/.cache/ensemblelab/backend-calibration.json");
        }
        qputenv("XDG_CACHE_HOME", saved);
    }

    void cacheWriteReadAndDamage() {
        const QTemporaryDir dir;
        const std::string path =
            (dir.path() + QStringLiteral("/sub/calibration.json")).toStdString();
        std::string problem = "unset";
        QVERIFY(!readCalibration(path, "a", &problem));  // no file yet: no problem either
        QVERIFY(problem.empty());
        MachineCalibration a = injected("a");
        MachineCalibration b = injected("b");
        b.gpuFp32.reset();  // a machine without a GPU
        b.cpu.latencySeconds = 1e-5;
        writeCalibration(path, a);  // creates the folder
        writeCalibration(path, b);  // keeps a
        std::optional<MachineCalibration> readA = readCalibration(path, "a", &problem);
        std::optional<MachineCalibration> readB = readCalibration(path, "b", &problem);
        QVERIFY(readA && readB);
        QCOMPARE(readA->cpu.denseFlopsPerSecond, a.cpu.denseFlopsPerSecond);
        QVERIFY(readA->gpuFp32);
        QCOMPARE(readA->gpuFp32->latencySeconds, a.gpuFp32->latencySeconds);
        QVERIFY(!readA->gpuTf32);
        QCOMPARE(readA->measuredAt, a.measuredAt);
        QCOMPARE(readB->cpu.latencySeconds, 1e-5);
        QVERIFY(!readB->gpuFp32);
        QVERIFY(!readCalibration(path, "c", &problem));
        QVERIFY(problem.empty());

        // Not JSON: nothing read, the problem named; a new write replaces the file.
        QFile corrupt(QString::fromStdString(path));
        QVERIFY(corrupt.open(QIODevice::WriteOnly | QIODevice::Truncate));
        corrupt.write("{\"format\": \"ensemblelab-backend-calib");
        corrupt.close();
        QVERIFY(!readCalibration(path, "a", &problem));
        QVERIFY2(QString::fromStdString(problem).contains(QStringLiteral("not valid JSON")),
                 problem.c_str());
        writeCalibration(path, b);
        QVERIFY(readCalibration(path, "b", &problem));
        QVERIFY(!readCalibration(path, "a", &problem));  // gone with the damaged file

        // Another file's JSON, and a damaged entry.
        QVERIFY(corrupt.open(QIODevice::WriteOnly | QIODevice::Truncate));
        corrupt.write("{\"machines\": {}}");
        corrupt.close();
        QVERIFY(!readCalibration(path, "b", &problem));
        QVERIFY2(QString::fromStdString(problem).contains(QStringLiteral("not a backend calib")),
                 problem.c_str());
        json damaged = {{"format", "ensemblelab-backend-calibration"},
                        {"version", 1},
                        {"machines", {{"b", calibrationToJson(b)}}}};
        damaged["machines"]["b"]["cpu"]["latency_s"] = -1;
        QVERIFY(corrupt.open(QIODevice::WriteOnly | QIODevice::Truncate));
        corrupt.write(QByteArray::fromStdString(damaged.dump()));
        corrupt.close();
        QVERIFY(!readCalibration(path, "b", &problem));
        QVERIFY2(QString::fromStdString(problem).contains(QStringLiteral("latency_s")),
                 problem.c_str());
    }

    void machineKeyNamesCpuThreadsAndGpu() {
        const std::string key = machineKey(4, "x86-64-v3+eigen", "");
        QVERIFY(key.find("cpu=" + cpuIdentity().describe()) == 0);
        QVERIFY(key.find(";threads=4;") != std::string::npos);
        QVERIFY(key.find(";code=x86-64-v3+eigen;") != std::string::npos);
        QVERIFY(key.find(";gpu=none") != std::string::npos);
        QVERIFY(machineKey(4, "x86-64-v3+eigen", "H100, driver 13.0") != key);
        QVERIFY(machineKey(8, "x86-64-v3+eigen", "") != key);
        // Another level or GEMM library is another measurement.
        QVERIFY(machineKey(4, "x86-64-v4+eigen", "") != key);
        QVERIFY(machineKey(4, "x86-64-v3+openblas", "") != key);
    }

    // The CPU as CPUID tells it agrees with the kernel's own reading (/proc/cpuinfo: vendor_id,
    // cpu family, model, stepping, model name, flags), and the key names it by family and
    // model, not by the brand string two different machines share.
    void cpuIdentityAgreesWithTheKernel() {
        QFile file(QStringLiteral("/proc/cpuinfo"));
        if (!file.open(QIODevice::ReadOnly)) {
            QSKIP("no /proc/cpuinfo here");
        }
        QMap<QString, QString> first;  // the first processor's fields
        for (const QByteArray& line : file.readAll().split('\n')) {
            if (line.trimmed().isEmpty() && !first.isEmpty()) {
                break;
            }
            const int colon = line.indexOf(':');
            if (colon > 0) {
                first.insert(QString::fromUtf8(line.left(colon)).trimmed(),
                             QString::fromUtf8(line.mid(colon + 1)).trimmed());
            }
        }
        if (!first.contains(QStringLiteral("vendor_id"))) {
            QSKIP("/proc/cpuinfo names no x86 vendor (not an x86 machine)");
        }
        const CpuIdentity& cpu = cpuIdentity();
        QCOMPARE(QString::fromStdString(cpu.vendor), first.value(QStringLiteral("vendor_id")));
        QCOMPARE(cpu.family, first.value(QStringLiteral("cpu family")).toInt());
        QCOMPARE(cpu.model, first.value(QStringLiteral("model")).toInt());
        QCOMPARE(cpu.stepping, first.value(QStringLiteral("stepping")).toInt());
        QCOMPARE(QString::fromStdString(cpu.brand).simplified(),
                 first.value(QStringLiteral("model name")).simplified());
        // The kernel lists a flag only where the OS enables its state too.
        const QStringList flags = first.value(QStringLiteral("flags")).split(QLatin1Char(' '));
        for (const char* f : {"sse4_2", "avx", "avx2", "fma", "avx512f", "avx512dq", "avx512bw",
                              "avx512vl", "avx512_vnni", "avx512_bf16"}) {
            QVERIFY2(cpu.has(f) == flags.contains(QLatin1String(f)), f);
        }
        const int level = cpu.x86Level();
        QCOMPARE(level == 4, flags.contains(QStringLiteral("avx512bw")) &&
                                 flags.contains(QStringLiteral("avx512vl")) &&
                                 flags.contains(QStringLiteral("avx512dq")));
        QVERIFY(level >= 3 || !flags.contains(QStringLiteral("avx2")) ||
                !flags.contains(QStringLiteral("fma")));
        const std::string described = cpu.describe();
        QVERIFY2(described.find(" family " + std::to_string(cpu.family) + " model " +
                                std::to_string(cpu.model) + " ") != std::string::npos,
                 described.c_str());
        QVERIFY(machineKey(2, "x86-64+eigen", "").find(cpu.brand) == std::string::npos ||
                cpu.brand.empty());
    }

    // What bench and the About box say computed the figures: a packet the build's ISA gives,
    // no wider than the CPU's registers (the program runs on it).
    void cpuKernelsFitTheCpu() {
        const CpuKernels k = cpuKernels();
        QVERIFY(!k.isa.empty());
        QVERIFY(k.floatLanes >= 1);
        QCOMPARE(k.vectorBits, 32 * k.floatLanes);
        const int cpuBits = cpuIdentity().vectorBits();
        QVERIFY(cpuBits == 128 || cpuBits == 256 || cpuBits == 512);
        QVERIFY(cpuIdentity().vendor.empty() || k.vectorBits <= cpuBits);
        QCOMPARE(cpuBits == 512, cpuIdentity().has("avx512f"));
        const std::string line = k.describe();
        QVERIFY2(line.find("built for " + k.isa) != std::string::npos, line.c_str());
        QVERIFY2(line.find("offers " + std::to_string(cpuBits)) != std::string::npos, line.c_str());
    }

    void autoOnThisMachine() {
        const ExperimentConfig config = parseConfig(autoConfigJson());
        const DataSplit data = loadDataSplit(config.dataset);
        const std::string cache = calibrationCachePath();
        QFile::remove(QString::fromStdString(cache));
        const BackendChoice first = makeBackend(config, data);
        QVERIFY(first.decision.requested == BackendKind::Auto);
        QVERIFY(!first.notice.empty());
        QVERIFY(first.notice.find(first.decision.reason) == 0);
        if (!gpuHere()) {
            // No GPU term: the CPU, the CUDA reason, and nothing measured or cached.
            QVERIFY(first.decision.chosen == BackendKind::Cpu);
            QVERIFY2(first.notice.find("no GPU term") != std::string::npos, first.notice.c_str());
            QVERIFY(!QFile::exists(QString::fromStdString(cache)));
        } else {
            // Calibrated on first use and cached; the second decision reads the cache.
            QVERIFY(QFile::exists(QString::fromStdString(cache)));
        }
        const BackendChoice second = makeBackend(config, data);
        QVERIFY(second.decision.chosen == first.decision.chosen);
        QVERIFY(second.backend->name().rfind(
                    first.decision.chosen == BackendKind::Cuda ? "cuda" : "cpu", 0) == 0);
    }

    void explicitKindsSaySo() {
        const ExperimentConfig config =
            parseConfig(autoConfigJson(R"({"backend": {"kind": "cpu"}})"));
        const BackendChoice c = makeBackend(config, loadDataSplit(config.dataset));
        QVERIFY(c.decision.requested == BackendKind::Cpu);
        QVERIFY(c.decision.chosen == BackendKind::Cpu);
        QCOMPARE(c.decision.reason, std::string("backend.kind=cpu"));
        QVERIFY(c.notice.empty());
    }

    void mathModeConfig() {
        QVERIFY(parseConfig(autoConfigJson()).backend.math == MathMode::Fp32);
        QVERIFY(parseConfig(autoConfigJson(R"({"backend": {"math": "tf32"}})")).backend.math ==
                MathMode::Tf32);
        QVERIFY(parseConfig(autoConfigJson(R"({"backend": {"kind": "cuda", "math": "tf32"}})"))
                    .backend.math == MathMode::Tf32);
        // The CPU computes in FP32: tf32 with backend.kind cpu is accepted (a default config
        // switched to the CPU stays valid) and the run says once that it does not apply.
        const ExperimentConfig cpuTf32 =
            parseConfig(autoConfigJson(R"({"backend": {"kind": "cpu", "math": "tf32"}})"));
        QVERIFY(cpuTf32.backend.math == MathMode::Tf32);
        const BackendChoice onCpu = makeBackend(cpuTf32, loadDataSplit(cpuTf32.dataset));
        QVERIFY(onCpu.decision.chosen == BackendKind::Cpu);
        QVERIFY2(onCpu.notice.find("tf32 does not apply") != std::string::npos,
                 onCpu.notice.c_str());
        try {
            (void)parseConfig(autoConfigJson(R"({"backend": {"math": "fp16"}})"));
            QFAIL("expected a ConfigError for backend.math fp16");
        } catch (const ConfigError& e) {
            QVERIFY(e.key() == std::string("backend.math"));
        }
        // The config a run stores has the key (the default filled in).
        QCOMPARE(parseConfig(autoConfigJson()).json["backend"]["math"], json("fp32"));
        // The full default config with the CPU picked: valid (the pattern of many configs).
        json defaults = defaultConfigJson();
        defaults["backend"]["kind"] = "cpu";
        QVERIFY(parseConfig(defaults).backend.kind == BackendKind::Cpu);
    }

    void decisionInExportAndKeptOnResume() {
        const QTemporaryDir dir;
        const ExperimentConfig config = parseConfig(autoConfigJson());
        std::string notice;
        std::unique_ptr<Trainer> trainer = makeTrainer(config, &notice);
        QVERIFY(trainer->backendDecision().requested == BackendKind::Auto);
        QVERIFY(notice.find(trainer->backendDecision().reason) == 0);
        trainer->runSteps(4);
        const std::string weights = (dir.path() + QStringLiteral("/w.safetensors")).toStdString();
        exportEnsemble(weights, *trainer);
        const LoadedEnsemble loaded = importEnsemble(weights);
        QVERIFY(loaded.metadata.contains("backend"));
        const json& backend = loaded.metadata["backend"];
        const std::string chosen = toString(trainer->backendDecision().chosen);
        QCOMPARE(backend["kind"].get<std::string>(), chosen);
        QCOMPARE(backend["requested"].get<std::string>(), std::string("auto"));
        QCOMPARE(backend["name"].get<std::string>(), trainer->backend().name());
        QCOMPARE(backend["reason"].get<std::string>(), trainer->backendDecision().reason);

        // A checkpoint: resumeConfig records its backend, and the resumed run keeps it.
        const std::string cp = (dir.path() + QStringLiteral("/c.safetensors")).toStdString();
        writeCheckpoint(cp, *trainer, {});
        const Checkpoint checkpoint = readCheckpoint(cp);
        const ExperimentConfig resumed = resumeConfig(checkpoint, {});
        QVERIFY(resumed.backend.resumedKind);
        QVERIFY(*resumed.backend.resumedKind == trainer->backendDecision().chosen);
        QCOMPARE(resumed.backend.resumedReason, trainer->backendDecision().reason);
        std::unique_ptr<Trainer> again = makeTrainer(resumed, &notice);
        QVERIFY(again->backendDecision().chosen == trainer->backendDecision().chosen);
        QVERIFY2(notice.find("kept from the checkpoint") != std::string::npos, notice.c_str());
        resumeTrainer(*again, checkpoint);
        again->runSteps(2);
        const std::string weights2 = (dir.path() + QStringLiteral("/w2.safetensors")).toStdString();
        exportEnsemble(weights2, *again);
        // The export records the first decision: a resumed run's export is the straight run's,
        // byte for byte (the checkpoint contract), while its notice says the backend was kept.
        QCOMPARE(importEnsemble(weights2).metadata["backend"]["reason"].get<std::string>(),
                 trainer->backendDecision().reason);
        QVERIFY(again->backendDecision().kept);

        // An explicit kind on resume is what the user asked for: nothing kept.
        QVERIFY(!resumeConfig(checkpoint, {"backend.kind=cpu"}).backend.resumedKind);

        // A run that trained on CUDA, resumed: CUDA where usable, else the CPU saying why.
        SafetensorsFile file = parseSafetensors(readFile(cp), cp);
        json meta = json::parse(file.metadata["backend"]);
        meta["kind"] = "cuda";
        file.metadata["backend"] = meta.dump();
        const ExperimentConfig fromCuda = resumeConfig(readCheckpoint(file), {});
        QVERIFY(*fromCuda.backend.resumedKind == BackendKind::Cuda);
        std::unique_ptr<Trainer> onCuda = makeTrainer(fromCuda, &notice);
        if (gpuHere()) {
            QVERIFY(onCuda->backendDecision().chosen == BackendKind::Cuda);
        } else {
            QVERIFY(onCuda->backendDecision().chosen == BackendKind::Cpu);
            QVERIFY2(notice.find("trained on CUDA, which is not usable here") != std::string::npos,
                     notice.c_str());
        }
    }

    // backend.gemm (issue 53): the library behind the CPU's products is recorded beside the
    // backend's decision in exports and checkpoints; --resume under `auto` keeps it (so the
    // resumed run computes as the straight one), an explicit value wins; a checkpoint that
    // trained with OpenBLAS resumed on a build without it uses Eigen with a note.
    void gemmRecordedAndKeptOnResume() {
        unsetenv("ENSEMBLE_GEMM");
        const QTemporaryDir dir;
        const ExperimentConfig config =
            parseConfig(autoConfigJson(R"({"backend": {"kind": "cpu"}})"));
        QVERIFY(config.backend.gemm == GemmChoice::Auto);
        std::string notice;
        std::unique_ptr<Trainer> trainer = makeTrainer(config, &notice);
        trainer->runSteps(2);
        const GemmLibrary used = gemmLibrary();
        const std::string cp = (dir.path() + QStringLiteral("/c.safetensors")).toStdString();
        writeCheckpoint(cp, *trainer, {});
        const Checkpoint checkpoint = readCheckpoint(cp);
        QCOMPARE(checkpoint.ensemble.metadata["backend"]["gemm"].get<std::string>(),
                 gemmLibraryKey(used));
        QVERIFY(resumeConfig(checkpoint, {}).backend.gemm ==
                (used == GemmLibrary::OpenBlas ? GemmChoice::OpenBlas : GemmChoice::Eigen));

        // The other library recorded: auto keeps it, an explicit value wins.
        SafetensorsFile file = parseSafetensors(readFile(cp), cp);
        json meta = json::parse(file.metadata["backend"]);
        meta["gemm"] = "openblas";
        file.metadata["backend"] = meta.dump();
        const Checkpoint fromOpenblas = readCheckpoint(file);
        const ExperimentConfig kept = resumeConfig(fromOpenblas, {});
        QVERIFY(kept.backend.gemm == GemmChoice::OpenBlas);
        QVERIFY(resumeConfig(fromOpenblas, {"backend.gemm=eigen"}).backend.gemm ==
                GemmChoice::Eigen);
        std::unique_ptr<Trainer> again = makeTrainer(kept, &notice);
        QCOMPARE(gemmLibrary(), openblasBuilt() ? GemmLibrary::OpenBlas : GemmLibrary::Eigen);
        QCOMPARE(notice.find("without OpenBLAS") != std::string::npos, !openblasBuilt());
        useGemmLibrary(defaultGemmLibrary());
    }

    void calibrateAutoCommand() {
        // Measures this machine (the CPU; the GPU too where there is one), stores it under the
        // machine's key in the XDG cache, and says what auto picks for the config.
        const QString json = m_cache.path() + QStringLiteral("/calibration-report.json");
        const Run r =
            runCli({QStringLiteral("bench"), QStringLiteral("--calibrate-auto"),
                    QStringLiteral("--config"), QStringLiteral("spirals"), QStringLiteral("--set"),
                    QStringLiteral("backend.threads=1"), QStringLiteral("--json"), json});
        QVERIFY2(r.code == 0, qPrintable(describe(r)));
        QVERIFY2(r.out.contains(QStringLiteral("  cpu: latency ")), qPrintable(describe(r)));
        QVERIFY2(r.out.contains(QStringLiteral("this config: backend auto: ")),
                 qPrintable(describe(r)));
        const std::string cache = calibrationCachePath();
        QVERIFY2(r.out.contains(QString::fromStdString("stored in " + cache)),
                 qPrintable(describe(r)));
        QFile report(json);
        QVERIFY(report.open(QIODevice::ReadOnly));
        const nlohmann::json written = nlohmann::json::parse(report.readAll().toStdString());
        const std::string key = written["key"].get<std::string>();
        QVERIFY(key.find(";threads=1;") != std::string::npos);
        std::string problem;
        const std::optional<MachineCalibration> stored = readCalibration(cache, key, &problem);
        QVERIFY2(stored.has_value(), problem.c_str());
        QVERIFY(stored->cpu.latencySeconds > 0.0);
        QCOMPARE(stored->cpu.denseFlopsPerSecond,
                 written["calibration"]["cpu"]["dense_flops_per_s"].get<double>());
        QCOMPARE(stored->gpuFp32.has_value(), gpuHere());
        // Plausible for any CPU: a step of almost nothing within 10 ms, 10 MFLOP/s or more.
        QVERIFY(stored->cpu.latencySeconds < 1e-2);
        QVERIFY(stored->cpu.denseFlopsPerSecond > 1e7);
        QVERIFY(stored->cpu.convFlopsPerSecond > 1e7);
        QVERIFY(stored->cpu.bytesPerSecond > 1e7);
    }
};

QTEST_APPLESS_MAIN(TestBackendAuto)
#include "tst_backend_auto.moc"
