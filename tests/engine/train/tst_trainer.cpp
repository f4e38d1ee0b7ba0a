// The trainer over the CPU backend: learning, determinism across thread counts, member
// independence, divergence handling, and the export / import round trip.
#include <QtTest/QtTest>

#include <cmath>
#include <cstring>
#include <memory>

#include <sys/resource.h>

#include "backend/cpu/cpu_backend.h"
#include "core/errors.h"
#include "io/model_io.h"
#include "io/safetensors.h"
#include "support/engine_test_support.h"
#include "support/test_support.h"
#include "sys/allocator.h"
#include "train/memory_estimate.h"
#include "train/trainer.h"
#include "train/trainer_report.h"

using namespace ensemble;
using ensemble::test::makeCpuTrainer;
using nlohmann::json;

namespace {

// The suites' small spirals run, larger (n = 400, a 16-16 MLP, K = 6) and at one learning rate;
// `extra` is the test's own patch.
ExperimentConfig trainerConfig(const std::string& extra = "{}") {
    return parseConfig(ensemble::test::smallSpiralsJson(
        R"({"dataset": {"n": 400}, "model": {"hidden": [16, 16]},
            "ensemble": {"members": 6, "seed": 1}, "optimizer": {"lr": 0.01},
            "training": {"batch_size": 32}})",
        extra));
}

}  // namespace

class TestTrainer : public QObject {
    Q_OBJECT

  private Q_SLOTS:
    void learnsTwoSpirals();
    void bitIdenticalForAnyThreadCount_data();
    void bitIdenticalForAnyThreadCount();
    void seedChangesTheRun();
    void memberTrajectoryDoesNotDependOnK();
    void perMemberLearningRatesReallyDiffer();
    void divergedMemberIsFrozenAndLeftOut();
    void exportImportRoundTrip();
    void zeroStepsExportsTheInitialWeights();
    void cancelStopsTheRun();
    void refusesRunsThatDoNotFitInMemory();
    void freedBuffersAreReusedWithoutPageFaults();
    void continuingAfterTheEndEqualsOneLongerRun_data();
    void continuingAfterTheEndEqualsOneLongerRun();
    void liveChangeEqualsItsScheduledReplay();
    void memberSwitchesLeaveTheEnsembleNotTraining();
    void regressionLearnsAndIsThreadIndependent();
    void adversarialTrainingLearnsBothTasks();
    void shuffleIsEachMembersOwnOrderAndThreadIndependent();
    void adversarialEpsInRangeUnitsIsPerColumn();
};

void TestTrainer::learnsTwoSpirals() {
    const ExperimentConfig c = trainerConfig(R"({"training": {"steps": 600}})");
    auto t = makeCpuTrainer(c, 2);
    const Evaluation before = t->evaluate();
    t->runSteps(600);
    const Evaluation after = t->evaluate();
    QVERIFY(t->finished());
    QVERIFY2(after.ensembleTrain.loss < 0.5 * before.ensembleTrain.loss,
             qPrintable(QStringLiteral("%1 -> %2")
                            .arg(before.ensembleTrain.loss)
                            .arg(after.ensembleTrain.loss)));
    QVERIFY2(after.ensembleTest.accuracy > 0.9,
             qPrintable(QString::number(after.ensembleTest.accuracy)));
}

void TestTrainer::bitIdenticalForAnyThreadCount_data() {
    QTest::addColumn<QString>("bootstrap");
    QTest::newRow("none") << "none";
    QTest::newRow("resample") << "resample";
    QTest::newRow("poisson") << "poisson";
}

void TestTrainer::bitIdenticalForAnyThreadCount() {
    QFETCH(QString, bootstrap);
    const ExperimentConfig c =
        trainerConfig(R"({"ensemble": {"bootstrap": ")" + bootstrap.toStdString() +
                      R"("}, "optimizer": {"lr": {"log_uniform": [0.001, 0.05]}}})");
    auto one = makeCpuTrainer(c, 1);
    auto two = makeCpuTrainer(c, 2);
    auto three = makeCpuTrainer(c, 3);
    one->runSteps(60);
    two->runSteps(60);
    three->runSteps(60);
    const std::vector<float> a = one->parameters();
    const std::vector<float> b = two->parameters();
    const std::vector<float> d = three->parameters();
    QVERIFY(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);
    QVERIFY(std::memcmp(a.data(), d.data(), a.size() * sizeof(float)) == 0);
    const MemberPredictions pa = one->predictTest();
    const MemberPredictions pb = two->predictTest();
    QVERIFY(pa.logProbs == pb.logProbs);
}

void TestTrainer::seedChangesTheRun() {
    auto a = makeCpuTrainer(trainerConfig(), 2);
    auto b = makeCpuTrainer(trainerConfig(), 2);
    auto c = makeCpuTrainer(trainerConfig(R"({"ensemble": {"seed": 2}})"), 2);
    a->runSteps(10);
    b->runSteps(10);
    c->runSteps(10);
    QVERIFY(a->parameters() == b->parameters());
    QVERIFY(a->parameters() != c->parameters());
}

void TestTrainer::memberTrajectoryDoesNotDependOnK() {
    // With shared batches, member k's initialisation and batches depend only on (seed, k): the
    // same member trained in a K = 2 and a K = 6 ensemble ends bit-identical.
    auto small = makeCpuTrainer(trainerConfig(R"({"ensemble": {"members": 2}})"), 2);
    auto large = makeCpuTrainer(trainerConfig(), 2);
    small->runSteps(30);
    large->runSteps(30);
    const std::vector<float> ps = small->parameters();
    const std::vector<float> pl = large->parameters();
    for (int l = 0; l < small->layout().layerCount(); ++l) {
        const LayerSlot& s = small->layout().layer(l);
        QVERIFY(std::memcmp(ps.data() + small->layout().weightOffset(l, 1),
                            pl.data() + large->layout().weightOffset(l, 1),
                            sizeof(float) * s.out * s.in) == 0);
    }
}

void TestTrainer::perMemberLearningRatesReallyDiffer() {
    // Two members from identical parameters, lr 0.01 and 0.001: Adam's first step moves every
    // parameter by about lr (m^/sqrt(v^) = sign(g)), so member 0 moves 10x as far.
    const ExperimentConfig c =
        trainerConfig(R"({"ensemble": {"members": 2}, "optimizer": {"lr": [0.01, 0.001]}})");
    const DataSplit data = loadDataSplit(c.dataset);
    CpuBackend backend(2);
    const ParamLayout layout({2, 16, 16, 2}, 2);
    TrainingProblem problem;
    problem.layout = layout;
    problem.activation = Activation::Tanh;
    const std::vector<float> x = data.normalization.apply(data.train);
    problem.trainX = x.data();
    problem.trainY = data.train.y.data();
    problem.trainRows = data.train.rows;
    problem.plan = {0, static_cast<uint32_t>(data.train.rows), 32, BootstrapMode::None};
    for (double lr : c.optimizer.lr) {
        problem.rules.push_back(makeRule(OptimizerKind::Adam, lr, 0.0, 0.0));
    }
    backend.bind(problem);
    std::vector<float> p(layout.size());
    initParameters(layout, 9, p.data());
    for (int l = 0; l < layout.layerCount(); ++l) {  // member 1 := member 0
        const LayerSlot& s = layout.layer(l);
        std::memcpy(p.data() + layout.weightOffset(l, 1), p.data() + layout.weightOffset(l, 0),
                    sizeof(float) * s.out * s.in);
        std::memcpy(p.data() + layout.biasOffset(l, 1), p.data() + layout.biasOffset(l, 0),
                    sizeof(float) * s.out);
    }
    backend.setParameters(p.data());
    const uint8_t active[2] = {1, 1};
    float losses[2];
    backend.step(0, active, losses);
    QCOMPARE(losses[0], losses[1]);  // same parameters, same batch
    std::vector<float> q(layout.size());
    backend.parameters(q.data());
    const std::size_t w0 = layout.weightOffset(1, 0) + 5;
    const std::size_t w1 = layout.weightOffset(1, 1) + 5;
    const double move0 = std::abs(q[w0] - p[w0]);
    const double move1 = std::abs(q[w1] - p[w1]);
    ENSEMBLE_COMPARE_NEAR(move0 / move1, 10.0, 0.01);
}

void TestTrainer::divergedMemberIsFrozenAndLeftOut() {
    // SGD with lr 1e4 explodes member 2 within a few steps; the others train on.
    const ExperimentConfig c = trainerConfig(
        R"({"ensemble": {"members": 3}, "optimizer": {"kind": "sgd", "momentum": 0.9, "lr": [0.05, 0.05, 10000]}, "model": {"activation": "relu"},
            "training": {"steps": 200}})");
    auto t = makeCpuTrainer(c, 2);
    t->runSteps(100);
    QCOMPARE(t->diverged(), (std::vector<uint8_t>{0, 0, 1}));
    const std::vector<float> before = t->parameters();
    t->runSteps(20);
    const std::vector<float> after = t->parameters();
    const ParamLayout& layout = t->layout();
    const std::size_t n = static_cast<std::size_t>(layout.layer(0).out) * layout.layer(0).in;
    // The frozen member keeps its last parameters; a healthy member keeps learning.
    QVERIFY(std::equal(before.begin() + layout.weightOffset(0, 2),
                       before.begin() + layout.weightOffset(0, 2) + n,
                       after.begin() + layout.weightOffset(0, 2)));
    QVERIFY(!std::equal(before.begin() + layout.weightOffset(0, 0),
                        before.begin() + layout.weightOffset(0, 0) + n,
                        after.begin() + layout.weightOffset(0, 0)));
    const Evaluation e = t->evaluate();
    QVERIFY(e.members[2].diverged);
    QVERIFY(std::isfinite(e.ensembleTest.loss));
    QVERIFY(e.ensembleTest.accuracy > 0.6);
    QCOMPARE(t->included(), (std::vector<uint8_t>{1, 1, 0}));
}

void TestTrainer::exportImportRoundTrip() {
    const ExperimentConfig c = trainerConfig(R"({"ensemble": {"bootstrap": "resample"}})");
    auto t = makeCpuTrainer(c, 2);
    t->runSteps(40);
    QTemporaryDir dir;
    const std::string path = dir.filePath("w.safetensors").toStdString();
    exportEnsemble(path, *t, json{{"note", "test"}});
    const LoadedEnsemble e = importEnsemble(path);
    QVERIFY(e.params == t->parameters());
    QCOMPARE(e.layout.widths(), t->layout().widths());
    QVERIFY(e.normalization.mean == t->data().normalization.mean);
    QVERIFY(e.normalization.std == t->data().normalization.std);
    QVERIFY(e.counts == t->bootstrapCounts());
    QCOMPARE(e.step, int64_t(40));
    QCOMPARE(e.config.json, t->config().json);
    // The same probabilities from the file as from the trainer, for raw inputs.
    const Dataset& test = t->data().test;
    const MemberPredictions expected = t->predictRaw(test.x.data(), test.rows);
    const std::vector<float> actual = predictLogProbs(e, test.x.data(), test.rows, 1);
    QVERIFY(actual == expected.logProbs);
    // The tensors have the documented names and shapes.
    const SafetensorsFile file = readSafetensors(path);
    QCOMPARE(file.get("layers.0.weight").shape, (std::vector<int64_t>{6, 16, 2}));
    QCOMPARE(file.get("layers.2.bias").shape, (std::vector<int64_t>{6, 2}));
    QCOMPARE(file.get("bootstrap.counts").shape, (std::vector<int64_t>{6, t->data().train.rows}));
    QCOMPARE(file.metadata.at("format_version"), std::string("1"));
    // A file whose tensors do not match its architecture is refused with the tensor's name.
    SafetensorsFile broken = file;
    for (Tensor& tensor : broken.tensors) {
        if (tensor.name == "layers.1.weight") {
            tensor.shape = {6, 256};
        }
    }
    const std::string brokenPath = dir.filePath("broken.safetensors").toStdString();
    writeSafetensors(brokenPath, broken);
    try {
        importEnsemble(brokenPath);
        QFAIL("expected a DataError");
    } catch (const DataError& err) {
        QVERIFY2(QString::fromStdString(err.what()).contains("layers.1.weight"), err.what());
    }
}

void TestTrainer::zeroStepsExportsTheInitialWeights() {
    const ExperimentConfig c = trainerConfig(R"({"training": {"steps": 0}})");
    auto t = makeCpuTrainer(c, 2);
    QVERIFY(t->finished());
    std::vector<float> expected(t->layout().size());
    initParameters(t->layout(), c.ensemble.seed, expected.data());
    QVERIFY(t->parameters() == expected);
}

void TestTrainer::cancelStopsTheRun() {
    const ExperimentConfig c =
        trainerConfig(R"({"training": {"steps": 100000, "eval_every": 50}})");
    auto t = makeCpuTrainer(c, 2);
    std::atomic<bool> cancel{false};
    int evaluations = 0;
    const bool completed = t->run(
        [&](const TrainingProgress& p) {
            QVERIFY(p.step > 0);
            QCOMPARE(p.totalSteps, int64_t(100000));
        },
        [&](const Evaluation&) {
            if (++evaluations == 3) {
                cancel = true;
            }
        },
        &cancel, 0.0);
    QVERIFY(!completed);
    QCOMPARE(t->step(), int64_t(150));
}

void TestTrainer::refusesRunsThatDoNotFitInMemory() {
    const ExperimentConfig c =
        trainerConfig(R"({"ensemble": {"members": 100000}, "model": {"hidden": [4096, 4096]}})");
    try {
        checkRunFitsInMemory(c, 1000, 100, Shape{2, 1, 1}, 2);
        QFAIL("expected a RuntimeError");
    } catch (const RuntimeError& e) {
        QVERIFY2(QString::fromStdString(e.what()).contains("MiB"), e.what());
    }
}

void TestTrainer::freedBuffersAreReusedWithoutPageFaults() {
    // What a grid refresh does at K = 100: allocate, fill and free tens of MB. After
    // keepFreedMemoryForReuse() the second round reuses the first one's pages instead of
    // faulting fresh ones in (without it, glibc mmaps such blocks and unmaps them on free).
#if !defined(__GLIBC__) || defined(ENSEMBLE_TEST_SANITIZED)
    QSKIP("keepFreedMemoryForReuse tunes glibc's allocator only (not a sanitizer's)");
#else
    ensemble::keepFreedMemoryForReuse();
    // Two 16 MiB blocks per round, like the grid's member probabilities and the predictions
    // they come from. With glibc's adaptive defaults the first round is mmapped, the later ones
    // come from the heap and are trimmed off it again on free (32 MiB freed at the top reaches
    // the adapted trim threshold of twice the block size), so every round faults 8192 pages in.
    constexpr std::size_t kBytes = (std::size_t{16} << 20) + 4096;
    const auto round = [] {
        std::unique_ptr<char[]> a(new char[kBytes]);
        std::unique_ptr<char[]> b(new char[kBytes]);
        std::memset(a.get(), 1, kBytes);
        std::memset(b.get(), 2, kBytes);
        // The blocks escape, so the compiler cannot drop the writes (or the allocations).
        asm volatile("" : : "r"(a.get()), "r"(b.get()) : "memory");
    };
    const auto minorFaults = [] {
        rusage usage{};
        getrusage(RUSAGE_SELF, &usage);
        return usage.ru_minflt;
    };
    round();
    round();
    const long before = minorFaults();
    round();
    const long faults = minorFaults() - before;
    QVERIFY2(faults < 1000,
             qPrintable(QStringLiteral("%1 page faults for two reused 16 MiB blocks").arg(faults)));
#endif
}

void TestTrainer::continuingAfterTheEndEqualsOneLongerRun_data() {
    QTest::addColumn<QString>("extra");
    QTest::newRow("none, adam") << R"({})";
    QTest::newRow("resample, sgd")
        << R"({"ensemble": {"bootstrap": "resample"}, "optimizer": {"kind": "sgd", "lr": 0.05}})";
    QTest::newRow("poisson, adamw")
        << R"({"ensemble": {"bootstrap": "poisson"}, "optimizer": {"kind": "adamw"}})";
}

// The app's Continue: a run that stopped at its limit and is extended goes on bit for bit as
// one longer run, whatever the bootstrap mode and optimizer.
void TestTrainer::continuingAfterTheEndEqualsOneLongerRun() {
    QFETCH(QString, extra);
    const ExperimentConfig c = trainerConfig(extra.toStdString());
    auto straight = makeCpuTrainer(c, 2);
    straight->setTotalSteps(100);
    straight->runSteps(100);
    auto stopped = makeCpuTrainer(c, 2);
    stopped->runSteps(1000);  // stops at the configured 60
    QCOMPARE(stopped->step(), int64_t(60));
    QVERIFY(stopped->finished());
    stopped->setTotalSteps(75);
    QVERIFY(!stopped->finished());
    stopped->runSteps(1000);
    QCOMPARE(stopped->step(), int64_t(75));
    stopped->setTotalSteps(100);
    stopped->runSteps(25);
    QCOMPARE(stopped->step(), straight->step());
    const std::vector<float> a = straight->parameters();
    const std::vector<float> b = stopped->parameters();
    QCOMPARE(a.size(), b.size());
    QVERIFY(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);
    // A limit below the current step ends the run where it is.
    stopped->setTotalSteps(10);
    QVERIFY(stopped->finished());
    stopped->runSteps(5);
    QCOMPARE(stopped->step(), int64_t(100));
}

// A learning-rate change made during a run (the app's live edit) is recorded in
// training.schedule; replaying that config gives the same weights, bit for bit. A change does
// something: without it the weights differ.
void TestTrainer::liveChangeEqualsItsScheduledReplay() {
    const ExperimentConfig c = trainerConfig(
        R"({"ensemble": {"bootstrap": "poisson"}, "optimizer": {"kind": "sgd", "lr": 0.05}})");
    auto live = makeCpuTrainer(c, 2);
    live->runSteps(20);
    live->changeHyperparameters(
        json{{"optimizer.lr", {{"log_uniform", {0.01, 0.2}}}}, {"optimizer.momentum", 0.5}});
    live->runSteps(15);
    live->changeHyperparameters(json{{"optimizer.weight_decay", 0.01}});
    live->runSteps(100);
    const json stored = live->config().json["training"]["schedule"];
    QCOMPARE(stored.size(), std::size_t(2));
    QCOMPARE(stored[0]["step"].get<int64_t>(), int64_t(20));
    QCOMPARE(stored[1]["step"].get<int64_t>(), int64_t(35));

    const ExperimentConfig replayed = parseConfig(live->config().json);
    QCOMPARE(replayed.training.schedule.size(), std::size_t(2));
    auto replay = makeCpuTrainer(replayed, 1);
    replay->runSteps(100);
    const std::vector<float> a = live->parameters();
    const std::vector<float> b = replay->parameters();
    QVERIFY(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);

    auto unchanged = makeCpuTrainer(c, 1);
    unchanged->runSteps(100);
    const std::vector<float> u = unchanged->parameters();
    QVERIFY(std::memcmp(a.data(), u.data(), a.size() * sizeof(float)) != 0);

    // Keys that need a new run cannot change.
    try {
        live->changeHyperparameters(json{{"ensemble.members", 3}});
        QFAIL("expected a ConfigError");
    } catch (const ConfigError& e) {
        QVERIFY2(e.key().find("ensemble.members") != std::string::npos, e.what());
    }
    QVERIFY_THROWS_EXCEPTION(ConfigError,
                             live->changeHyperparameters(json{{"optimizer.lr", -1.0}}));
}

// Members switched off during a run (the app's switches) are recorded in training.schedule:
// switches between the same two steps merge into one entry, one made after the last step
// applies before the final figures. Training is not affected (the weights are those of a run
// with every member on); the ensemble's figures leave them out, and the replay of the config
// gives the same weights and the same report. A config that switches a member off from the
// start does the same from step 0.
void TestTrainer::memberSwitchesLeaveTheEnsembleNotTraining() {
    const ExperimentConfig c = trainerConfig(R"({"ensemble": {"members": 4}})");
    auto live = makeCpuTrainer(c, 2);
    live->runSteps(20);
    live->changeHyperparameters(json{{"ensemble.switched_off", {1}}});
    live->changeHyperparameters(json{{"ensemble.switched_off", {1, 3}}});  // merges
    QCOMPARE(live->included(), (std::vector<uint8_t>{1, 0, 1, 0}));
    live->runSteps(15);
    live->changeHyperparameters(json{{"optimizer.lr", 0.02}});
    live->changeHyperparameters(json{{"ensemble.switched_off", {3}}});  // merges with the lr
    live->runSteps(1000);                                               // to the configured 60
    QCOMPARE(live->step(), int64_t(60));
    live->changeHyperparameters(json{{"ensemble.switched_off", {0, 3}}});  // after the last step
    QCOMPARE(live->included(), (std::vector<uint8_t>{0, 1, 1, 0}));
    QCOMPARE(live->switchedOn(), (std::vector<uint8_t>{0, 1, 1, 0}));

    const json stored = live->config().json["training"]["schedule"];
    QCOMPARE(stored.size(), std::size_t(3));
    QCOMPARE(stored[0], json::parse(R"({"step": 20, "set": {"ensemble.switched_off": [1, 3]}})"));
    QCOMPARE(stored[1],
             json::parse(
                 R"({"step": 35, "set": {"optimizer.lr": 0.02, "ensemble.switched_off": [3]}})"));
    QCOMPARE(stored[2], json::parse(R"({"step": 60, "set": {"ensemble.switched_off": [0, 3]}})"));

    const ExperimentConfig replayed = parseConfig(live->config().json);
    QCOMPARE(replayed.switchedOffAt(19), std::vector<int>{});
    QCOMPARE(replayed.switchedOffAt(20), (std::vector<int>{1, 3}));
    QCOMPARE(replayed.switchedOffAt(59), std::vector<int>{3});
    QCOMPARE(replayed.switchedOffAt(60), (std::vector<int>{0, 3}));
    auto replay = makeCpuTrainer(replayed, 1);
    Evaluation last;
    QVERIFY(replay->run(nullptr, [&](const Evaluation& e) { last = e; }));
    QCOMPARE(replay->included(), live->included());
    const std::vector<float> a = live->parameters();
    const std::vector<float> b = replay->parameters();
    QVERIFY(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);
    // The same weights as the run with the lr change and no switch at all: switches do not
    // train differently.
    auto unswitched =
        makeCpuTrainer(trainerConfig(R"({"ensemble": {"members": 4}, "training": {"schedule": [
            {"step": 35, "set": {"optimizer.lr": 0.02}}]}})"),
                       1);
    unswitched->runSteps(60);
    const std::vector<float> u = unswitched->parameters();
    QVERIFY(std::memcmp(a.data(), u.data(), a.size() * sizeof(float)) == 0);

    // The figures: the ensemble of members 1 and 2, in the live run, its replay and its report.
    const Evaluation fromLive = live->evaluate();
    QCOMPARE(last.ensembleTest.accuracy, fromLive.ensembleTest.accuracy);
    QCOMPARE(last.ensembleTest.loss, fromLive.ensembleTest.loss);
    const Evaluation members12 = unswitched->evaluate(
        unswitched->predictTrain(), unswitched->predictTest(), std::vector<uint8_t>{0, 1, 1, 0});
    QCOMPARE(fromLive.ensembleTest.loss, members12.ensembleTest.loss);
    const Evaluation all = unswitched->evaluate();
    QVERIFY(all.ensembleTest.loss != fromLive.ensembleTest.loss);
    const json liveReport = trainerReport(*live).json;
    const json replayReport = trainerReport(*replay).json;
    QCOMPARE(liveReport, replayReport);
    QVERIFY(!liveReport["members"][0]["switched_on"].get<bool>());
    QVERIFY(liveReport["members"][1]["switched_on"].get<bool>());

    // Switched off from the start: the same weights as every member on, the ensemble without it.
    auto fromStart = makeCpuTrainer(trainerConfig(R"({"ensemble": {"members": 4,
        "switched_off": [2]}, "training": {"schedule": [
            {"step": 35, "set": {"optimizer.lr": 0.02}}]}})"),
                                    1);
    QCOMPARE(fromStart->included(), (std::vector<uint8_t>{1, 1, 0, 1}));
    fromStart->runSteps(60);
    const std::vector<float> f = fromStart->parameters();
    QVERIFY(std::memcmp(f.data(), u.data(), f.size() * sizeof(float)) == 0);
    QCOMPARE(fromStart->evaluate().ensembleTest.loss,
             unswitched
                 ->evaluate(unswitched->predictTrain(), unswitched->predictTest(),
                            std::vector<uint8_t>{1, 1, 0, 1})
                 .ensembleTest.loss);
    // A member that does not exist is a config error naming the key.
    try {
        live->changeHyperparameters(json{{"ensemble.switched_off", {4}}});
        QFAIL("expected a ConfigError");
    } catch (const ConfigError& e) {
        QVERIFY2(e.key().find("ensemble.switched_off[0]") != std::string::npos, e.what());
    }
}

QTEST_APPLESS_MAIN(TestTrainer)
void TestTrainer::regressionLearnsAndIsThreadIndependent() {
    for (const char* head : {"gaussian", "mse"}) {
        const ExperimentConfig c = parseConfig(
            json::parse(std::string(R"({"dataset": {"kind": "sine", "n": 400, "seed": 2},
                "model": {"hidden": [32], "activation": "relu", "likelihood": ")") +
                        head + R"("},
                "ensemble": {"members": 4, "bootstrap": "poisson", "seed": 1},
                "optimizer": {"kind": "adam", "lr": 0.01},
                "training": {"batch_size": 32, "steps": 400, "eval_every": 0},
                "backend": {"kind": "cpu"}})"));
        auto one = makeCpuTrainer(c, 1);
        auto two = makeCpuTrainer(c, 2);
        QCOMPARE(one->layout().classes(), std::string(head) == "gaussian" ? 2 : 1);
        const Evaluation before = one->evaluate();
        one->runSteps(400);
        two->runSteps(400);
        QVERIFY(one->parameters() == two->parameters());  // bit for bit
        const Evaluation after = one->evaluate();
        QVERIFY(std::isnan(after.ensembleTest.accuracy));
        // sin(2x) on [-3, 3] has a std of about 0.7; a fitted mean gets the RMSE near the
        // noise's (about 0.3).
        QVERIFY2(
            after.ensembleTest.rmse < 0.5 && after.ensembleTest.rmse < before.ensembleTest.rmse,
            qPrintable(QStringLiteral("%1: rmse %2 -> %3")
                           .arg(QString::fromLatin1(head))
                           .arg(before.ensembleTest.rmse)
                           .arg(after.ensembleTest.rmse)));
        QVERIFY(after.ensembleTrain.loss < before.ensembleTrain.loss);
    }
}

void TestTrainer::adversarialTrainingLearnsBothTasks() {
    // training.adversarial_eps > 0 (loss(x) + loss(x + eps sign(dloss/dx)) per step) trains a
    // classifier and a regressor, stays independent of the thread count, and really changes
    // the run.
    const ExperimentConfig spirals =
        trainerConfig(R"({"training": {"steps": 600, "adversarial_eps": 0.05},
                        "ensemble": {"bootstrap": "poisson"}})");
    auto one = makeCpuTrainer(spirals, 1);
    auto two = makeCpuTrainer(spirals, 2);
    const Evaluation before = one->evaluate();
    one->runSteps(600);
    two->runSteps(600);
    QVERIFY(one->parameters() == two->parameters());  // bit for bit
    const Evaluation after = one->evaluate();
    QVERIFY2(after.ensembleTrain.loss < 0.5 * before.ensembleTrain.loss &&
                 after.ensembleTest.accuracy > 0.85,
             qPrintable(QStringLiteral("loss %1 -> %2, accuracy %3")
                            .arg(before.ensembleTrain.loss)
                            .arg(after.ensembleTrain.loss)
                            .arg(after.ensembleTest.accuracy)));
    auto plain = makeCpuTrainer(
        trainerConfig(R"({"training": {"steps": 600}, "ensemble": {"bootstrap": "poisson"}})"), 1);
    plain->runSteps(600);
    QVERIFY(plain->parameters() != one->parameters());

    const ExperimentConfig sine = parseConfig(json::parse(R"({
        "dataset": {"kind": "sine", "n": 400, "seed": 2},
        "model": {"hidden": [32], "activation": "relu", "likelihood": "gaussian"},
        "ensemble": {"members": 4, "bootstrap": "resample", "seed": 1},
        "optimizer": {"kind": "adam", "lr": 0.01},
        "training": {"batch_size": 32, "steps": 400, "eval_every": 0, "adversarial_eps": 0.05},
        "backend": {"kind": "cpu"}})"));
    auto regressor = makeCpuTrainer(sine, 2);
    const Evaluation r0 = regressor->evaluate();
    regressor->runSteps(400);
    const Evaluation r1 = regressor->evaluate();
    QVERIFY2(r1.ensembleTrain.loss < r0.ensembleTrain.loss && r1.ensembleTest.rmse < 0.5,
             qPrintable(QStringLiteral("loss %1 -> %2, rmse %3")
                            .arg(r0.ensembleTrain.loss)
                            .arg(r1.ensembleTrain.loss)
                            .arg(r1.ensembleTest.rmse)));
}

// ensemble.bootstrap shuffle: the same weights for any thread count, another run than none's
// (members no longer share batches), every train row counted once per member, and member k's
// weights independent of K (its order is keyed by k alone).
void TestTrainer::shuffleIsEachMembersOwnOrderAndThreadIndependent() {
    const ExperimentConfig shuffle =
        trainerConfig(R"({"training": {"steps": 120}, "ensemble": {"bootstrap": "shuffle"}})");
    auto one = makeCpuTrainer(shuffle, 1);
    auto two = makeCpuTrainer(shuffle, 2);
    one->runSteps(120);
    two->runSteps(120);
    QVERIFY(one->parameters() == two->parameters());
    auto none = makeCpuTrainer(trainerConfig(R"({"training": {"steps": 120}})"), 1);
    none->runSteps(120);
    QVERIFY(none->parameters() != one->parameters());
    const std::vector<int32_t> counts = one->bootstrapCounts();
    QVERIFY(!counts.empty() &&
            std::all_of(counts.begin(), counts.end(), [](int32_t c) { return c == 1; }));
    const ExperimentConfig fewer = trainerConfig(
        R"({"training": {"steps": 120}, "ensemble": {"bootstrap": "shuffle", "members": 2}})");
    auto small = makeCpuTrainer(fewer, 1);
    small->runSteps(120);
    const std::vector<float> a = small->parameters();
    const std::vector<float> b = one->parameters();
    // Layer by layer [K, out, in] then [K, out]: member 0's blocks start each layer's.
    const ParamLayout& layout2 = small->trainedLayout();
    const ParamLayout& layout6 = one->trainedLayout();
    for (int l = 0; l < layout2.layerCount(); ++l) {
        const LayerSlot& s2 = layout2.layer(l);
        const LayerSlot& s6 = layout6.layer(l);
        const auto n = static_cast<std::ptrdiff_t>(s2.out) * s2.in;
        QVERIFY(std::equal(a.begin() + static_cast<std::ptrdiff_t>(s2.weightOffset),
                           a.begin() + static_cast<std::ptrdiff_t>(s2.weightOffset) + n,
                           b.begin() + static_cast<std::ptrdiff_t>(s6.weightOffset)));
        QVERIFY(std::equal(a.begin() + static_cast<std::ptrdiff_t>(s2.biasOffset),
                           a.begin() + static_cast<std::ptrdiff_t>(s2.biasOffset) + s2.out,
                           b.begin() + static_cast<std::ptrdiff_t>(s6.biasOffset)));
    }
}

// training.adversarial_eps_unit range, by hand: input 0 holds 0, 2, 4, 10 (range 10, mean 4,
// population std sqrt(14)), input 1 is constant (std floored to 1, range 0). eps 0.01 of the
// range is 0.1 raw units: 0.1 / sqrt(14) in the model's units, and 0 for the constant column.
void TestTrainer::adversarialEpsInRangeUnitsIsPerColumn() {
    DataSplit data;
    data.train.rows = 4;
    data.train.features = 2;
    data.train.x = {0.0f, 3.0f, 2.0f, 3.0f, 4.0f, 3.0f, 10.0f, 3.0f};
    data.normalization = Normalization::fit(data.train);
    QCOMPARE(data.normalization.std[0], static_cast<float>(std::sqrt(14.0)));
    const std::vector<float> eps = adversarialInputEps(0.01, AdversarialEpsUnit::Range, data);
    QCOMPARE(eps.size(), std::size_t{2});
    QCOMPARE(eps[0],
             static_cast<float>(0.1 / static_cast<double>(static_cast<float>(std::sqrt(14.0)))));
    QCOMPARE(eps[1], 0.0f);
    QVERIFY(adversarialInputEps(0.01, AdversarialEpsUnit::Standardised, data).empty());
    QVERIFY(adversarialInputEps(0.0, AdversarialEpsUnit::Range, data).empty());

    // Through a run: thread-independent, and another run than the same eps in standardised
    // units (the spirals' inputs span about 3.5 std, so range moves them further).
    const ExperimentConfig range = trainerConfig(
        R"({"training": {"steps": 100, "adversarial_eps": 0.05, "adversarial_eps_unit": "range"}})");
    QVERIFY(range.training.adversarialEpsUnit == AdversarialEpsUnit::Range);
    auto one = makeCpuTrainer(range, 1);
    auto two = makeCpuTrainer(range, 2);
    one->runSteps(100);
    two->runSteps(100);
    QVERIFY(one->parameters() == two->parameters());
    auto standardised = makeCpuTrainer(
        trainerConfig(R"({"training": {"steps": 100, "adversarial_eps": 0.05}})"), 1);
    standardised->runSteps(100);
    QVERIFY(standardised->parameters() != one->parameters());
}

#include "tst_trainer.moc"
