// One-network ensemble methods (model/ensemble_methods.h, train/effective_members.h): the
// snapshot method's cyclic learning rate against its closed form, its members against an
// independent run of one network under the same learning rates, the members that follow the
// network before their cycle ends, a bit-exact resume, the refusals, and the export's `method`
// metadata and format version.
#include <QtTest/QtTest>

#include <cmath>
#include <cstring>
#include <memory>
#include <numbers>

#include "backend/cpu/cpu_backend.h"
#include "core/errors.h"
#include "dist/collective.h"
#include "io/checkpoint.h"
#include "io/model_io.h"
#include "io/safetensors.h"
#include "support/engine_test_support.h"
#include "train/effective_members.h"
#include "train/trainer.h"

using namespace ensemble;
using ensemble::test::expectConfigError;
using ensemble::test::makeCpuTrainer;
using ensemble::test::sameBits;
using ensemble::test::trainingStateDifference;
using nlohmann::json;

namespace {

// The suites' small spirals run (n = 200) as the snapshot method, at one learning rate with
// weight decay.
json snapshotConfigJson(int64_t steps = 40, int members = 4) {
    json root = ensemble::test::smallSpiralsJson(
        R"({"dataset": {"n": 200}, "ensemble": {"method": "snapshot"},
            "optimizer": {"lr": 0.02, "weight_decay": 0.001}})");
    root["ensemble"]["members"] = members;
    root["training"]["steps"] = steps;
    return root;
}

std::vector<float> member(const Trainer& t, const std::vector<float>& params, int k) {
    return memberParameters(t.layout(), params.data(), k);
}

// Two ranks on the ensemble axis, as an mpirun of 2 would give them (rank 0's view).
class TwoRankEnsembleAxis final : public Collective {
  public:
    int ranks() const override { return 2; }
    Mesh mesh() const override { return {2, 1}; }
};

}  // namespace

class TestMethods : public QObject {
    Q_OBJECT

  private slots:
    void cyclicLearningRateIsTheClosedForm();
    void unevenCyclesGiveTheRemainderToTheLast();
    void membersAreTheNetworkAtTheirCyclesEnd();
    void membersFollowTheNetworkUntilTheirCycleEnds();
    void resumeIsBitExact();
    void refusals();
    void lengthIsFixed();
    void ensembleAxisIsRefused();
    void exportRoundTripCarriesTheMethod();
    void versionOneFilesStillLoad();

  private:
    QTemporaryDir m_dir;
};

// lr_t = lr/2 (1 + cos(pi t / L)) within each cycle (Huang et al. 2017, eq. 2 with M dividing
// T): values at hand-picked steps of 12 steps in 3 cycles of 4.
void TestMethods::cyclicLearningRateIsTheClosedForm() {
    const SnapshotCycles cycles(3, 12);
    QCOMPARE(cycles.cycleLength(0), int64_t(4));
    QCOMPARE(cycles.cycleLength(2), int64_t(4));
    const double r = std::sqrt(0.5);  // cos(pi/4)
    const double expected[12] = {1.0, (1 + r) / 2, 0.5, (1 - r) / 2, 1.0, (1 + r) / 2,
                                 0.5, (1 - r) / 2, 1.0, (1 + r) / 2, 0.5, (1 - r) / 2};
    for (int s = 0; s < 12; ++s) {
        QVERIFY2(std::abs(cycles.lrFactor(s) - expected[s]) < 1e-15,
                 qPrintable(QString::number(s)));
    }
    QCOMPARE(cycles.endedAfter(0), 0);
    QCOMPARE(cycles.endedAfter(3), 0);
    QCOMPARE(cycles.endedAfter(4), 1);
    QCOMPARE(cycles.endedAfter(11), 2);
    QCOMPARE(cycles.endedAfter(12), 3);
}

// 14 steps in 3 cycles: 4, 4 and the last 6, whose cosine spans its own 6 steps.
void TestMethods::unevenCyclesGiveTheRemainderToTheLast() {
    const SnapshotCycles cycles(3, 14);
    QCOMPARE(cycles.cycleStart(2), int64_t(8));
    QCOMPARE(cycles.cycleLength(2), int64_t(6));
    QCOMPARE(cycles.cycleOf(13), 2);
    QVERIFY(std::abs(cycles.lrFactor(8) - 1.0) < 1e-15);
    QVERIFY(std::abs(cycles.lrFactor(11) - 0.5) < 1e-15);  // t = 3 of 6
    QVERIFY(std::abs(cycles.lrFactor(13) - 0.5 * (1 + std::cos(std::numbers::pi * 5 / 6))) < 1e-15);
    QCOMPARE(cycles.endedAfter(12), 2);
    QCOMPARE(cycles.endedAfter(13), 2);
    QCOMPARE(cycles.endedAfter(14), 3);
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, SnapshotCycles(5, 4));
}

// Member k equals, bit for bit, the parameters after cycle k's last step of an independent run
// of one network whose learning rate follows the same values through training.schedule.
void TestMethods::membersAreTheNetworkAtTheirCyclesEnd() {
    constexpr int64_t steps = 42;  // 4 cycles: 10, 10, 10 and 12
    constexpr int k = 4;
    const json root = snapshotConfigJson(steps, k);
    auto snap = makeCpuTrainer(parseConfig(root));
    snap->runSteps(steps);
    QCOMPARE(snap->membersTaken(), k);
    const std::vector<float> members = snap->parameters();

    json single = root;
    single["ensemble"]["method"] = "independent";
    single["ensemble"]["members"] = 1;
    const SnapshotCycles cycles(k, steps);
    json schedule = json::array();
    for (int64_t s = 1; s < steps; ++s) {
        schedule.push_back(
            json{{"step", s}, {"set", {{"optimizer.lr", 0.02 * cycles.lrFactor(s)}}}});
    }
    single["training"]["schedule"] = schedule;
    auto reference = makeCpuTrainer(parseConfig(single));
    int taken = 0;
    for (int c = 0; c < k; ++c) {
        reference->runSteps(cycles.cycleStart(c) + cycles.cycleLength(c) - reference->step());
        QVERIFY2(sameBits(reference->parameters(), member(*snap, members, c)),
                 qPrintable(QStringLiteral("member %1").arg(c)));
        ++taken;
    }
    QCOMPARE(taken, k);
    // The members differ: each is another point of the trajectory.
    QVERIFY(!sameBits(member(*snap, members, 0), member(*snap, members, 1)));
}

void TestMethods::membersFollowTheNetworkUntilTheirCycleEnds() {
    auto t = makeCpuTrainer(parseConfig(snapshotConfigJson(40, 4)));
    t->runSteps(15);  // cycle 0 (10 steps) has ended, cycle 1 has not
    QCOMPARE(t->membersTaken(), 1);
    const TrainingState state = t->trainingState();
    QCOMPARE(state.trained.size(), t->trainedLayout().size());
    for (int k = 1; k < 4; ++k) {
        QVERIFY(sameBits(member(*t, state.params, k), state.trained));
    }
    QVERIFY(!sameBits(member(*t, state.params, 0), state.trained));
    const std::vector<float> losses = t->lastLosses();
    QVERIFY(std::isnan(losses[0]));
    QVERIFY(std::isfinite(losses[1]));
    // Predictions follow too: members 1..3 predict the same, member 0 otherwise.
    const MemberPredictions p = t->predictTest();
    const std::size_t block = static_cast<std::size_t>(p.rows) * p.classes;
    QVERIFY(std::memcmp(p.logProbs.data() + block, p.logProbs.data() + 3 * block,
                        block * sizeof(float)) == 0);
    QVERIFY(std::memcmp(p.logProbs.data(), p.logProbs.data() + block, block * sizeof(float)) != 0);
}

void TestMethods::resumeIsBitExact() {
    constexpr int64_t steps = 40;
    const ExperimentConfig config = parseConfig(snapshotConfigJson(steps, 4));
    auto straight = makeCpuTrainer(config);
    straight->runSteps(steps);

    auto first = makeCpuTrainer(config);
    first->runSteps(17);  // mid cycle 1
    const std::string path = m_dir.filePath("snap.safetensors").toStdString();
    writeCheckpoint(path, *first, {});
    const Checkpoint checkpoint = readCheckpoint(path);
    QCOMPARE(checkpoint.state.step, int64_t(17));
    auto resumed = makeCpuTrainer(resumeConfig(checkpoint, {}));
    resumeTrainer(*resumed, checkpoint);
    QCOMPARE(resumed->membersTaken(), 1);
    resumed->runSteps(steps);
    QCOMPARE(resumed->step(), steps);

    const std::string diff =
        trainingStateDifference(straight->trainingState(), resumed->trainingState());
    QVERIFY2(diff.empty(), diff.c_str());

    // A resume that changes the run's length would move every cycle: refused.
    expectConfigError([&] { (void)resumeConfig(checkpoint, {"training.steps=80"}); },
                      "training.steps");
}

void TestMethods::refusals() {
    const auto refused = [](const char* key, const json& value, const std::string& expectKey) {
        json root = snapshotConfigJson();
        const std::string k = key;
        const auto dot = k.find('.');
        root[k.substr(0, dot)][k.substr(dot + 1)] = value;
        expectConfigError([&] { (void)parseConfig(root); }, expectKey);
    };
    refused("optimizer.lr", json{0.01, 0.02, 0.03, 0.04}, "optimizer.lr");
    refused("optimizer.lr", json{{"log_uniform", {0.001, 0.1}}}, "optimizer.lr");
    refused("optimizer.momentum", json{0.1, 0.2, 0.3, 0.4}, "optimizer.momentum");
    refused("ensemble.bootstrap", "resample", "ensemble.bootstrap");
    refused("ensemble.bootstrap", "poisson", "ensemble.bootstrap");
    refused("training.schedule", json::parse(R"([{"step": 5, "set": {"optimizer.lr": 0.1}}])"),
            "optimizer.lr");
    // Fewer steps than members: no cycle of a step each (the trainer knows the length).
    expectConfigError([] { (void)makeCpuTrainer(parseConfig(snapshotConfigJson(3, 4))); },
                      "training.steps");
    // One value as a list of equal values is one value.
    json equal = snapshotConfigJson();
    equal["optimizer"]["lr"] = json{0.02, 0.02, 0.02, 0.02};
    (void)parseConfig(equal);

    // Live: optimizer.lr refused, weight decay (one value) accepted.
    auto t = makeCpuTrainer(parseConfig(snapshotConfigJson()));
    t->runSteps(3);
    expectConfigError([&] { t->changeHyperparameters({{"optimizer.lr", 0.1}}); }, "optimizer.lr");
    t->changeHyperparameters({{"optimizer.weight_decay", 0.01}});
    const json perMember = {{"optimizer.weight_decay", json::array({0.0, 0.0, 0.0, 0.1})}};
    try {
        t->changeHyperparameters(perMember);
        QFAIL("per-member weight decay accepted");
    } catch (const ConfigError& e) {
        QVERIFY2(std::string(e.what()).find("optimizer.weight_decay") != std::string::npos,
                 e.what());
    }
    // A one-network method without a member backend is a programming error.
    const ExperimentConfig c = parseConfig(snapshotConfigJson());
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument,
                             Trainer(c, loadDataSplit(c.dataset), std::make_unique<CpuBackend>(1)));
}

void TestMethods::lengthIsFixed() {
    auto t = makeCpuTrainer(parseConfig(snapshotConfigJson(40, 4)));
    QVERIFY(!t->lengthChangeable());
    t->setTotalSteps(40);                                                // its own length is fine
    expectConfigError([&] { t->setTotalSteps(80); }, "training.steps");  // Continue
    expectConfigError([&] { t->setTotalSteps(20); }, "training.steps");  // Stop after, earlier
    QCOMPARE(t->totalSteps(), int64_t(40));
    json independent = snapshotConfigJson();
    independent["ensemble"]["method"] = "independent";
    QVERIFY(makeCpuTrainer(parseConfig(independent))->lengthChangeable());
}

void TestMethods::ensembleAxisIsRefused() {
    json root = snapshotConfigJson();
    root["backend"]["mesh"] = json{{"ensemble", 2}, {"data", 1}};
    expectConfigError([&] { (void)parseConfig(root); }, "backend.mesh");
    // The mesh mpirun gives (auto): the trainer refuses an ensemble axis too.
    const ExperimentConfig c = parseConfig(snapshotConfigJson());
    TwoRankEnsembleAxis world;
    expectConfigError(
        [&] {
            Trainer t(c, loadDataSplit(c.dataset), std::make_unique<CpuBackend>(1), &world,
                      std::make_unique<CpuBackend>(1));
        },
        "backend.mesh");
    // The data axis is what a snapshot run spreads over.
    root["backend"]["mesh"] = json{{"ensemble", 1}, {"data", 2}};
    (void)parseConfig(root);
}

void TestMethods::exportRoundTripCarriesTheMethod() {
    auto t = makeCpuTrainer(parseConfig(snapshotConfigJson(40, 4)));
    t->runSteps(25);
    const std::string path = m_dir.filePath("snap-export.safetensors").toStdString();
    exportEnsemble(path, *t);
    const SafetensorsFile file = readSafetensors(path);
    QCOMPARE(file.metadata.at("method"), std::string("snapshot"));
    QCOMPARE(file.metadata.at("format_version"), std::string("2"));
    QVERIFY(file.find("trained.0.weight") == nullptr);  // a checkpoint's, not an export's
    const LoadedEnsemble e = importEnsemble(path);
    QVERIFY(e.method == EnsembleMethod::Snapshot);
    QCOMPARE(e.layout.members(), 4);
    QVERIFY(sameBits(e.params, t->parameters()));
    // The same members predict: the export's CPU forward equals the trainer's.
    const DataSplit& data = t->data();
    const std::vector<float> loaded = predictLogProbs(e, data.test.x.data(), data.test.rows);
    QVERIFY(loaded == t->predictRaw(data.test.x.data(), data.test.rows).logProbs);

    // The metadata must agree with the stored config.
    SafetensorsFile wrong = file;
    wrong.metadata["method"] = "independent";
    QVERIFY_THROWS_EXCEPTION(DataError, importEnsemble(wrong));
    wrong.metadata["method"] = "bagging";
    QVERIFY_THROWS_EXCEPTION(DataError, importEnsemble(wrong));
    SafetensorsFile noMethod = file;
    noMethod.metadata.erase("method");
    QVERIFY_THROWS_EXCEPTION(DataError, importEnsemble(noMethod));
}

// An independent ensemble's file stays version 1 (with its `method` entry), and a version-1
// file without the entry, as earlier builds wrote them, loads as an independent ensemble.
void TestMethods::versionOneFilesStillLoad() {
    json root = snapshotConfigJson();
    root["ensemble"]["method"] = "independent";
    root["ensemble"]["members"] = 3;
    auto t = makeCpuTrainer(parseConfig(root));
    t->runSteps(5);
    const std::string path = m_dir.filePath("indep.safetensors").toStdString();
    exportEnsemble(path, *t);
    SafetensorsFile file = readSafetensors(path);
    QCOMPARE(file.metadata.at("format_version"), std::string("1"));
    QCOMPARE(file.metadata.at("method"), std::string("independent"));
    file.metadata.erase("method");
    json config = json::parse(file.metadata.at("config"));
    config["ensemble"].erase("method");  // what earlier builds stored
    file.metadata["config"] = config.dump();
    const LoadedEnsemble e = importEnsemble(file);
    QVERIFY(e.method == EnsembleMethod::Independent);
    QVERIFY(sameBits(e.params, t->parameters()));
    // Version 1 cannot claim another method.
    SafetensorsFile claim = readSafetensors(path);
    claim.metadata["method"] = "snapshot";
    QVERIFY_THROWS_EXCEPTION(DataError, importEnsemble(claim));
}

QTEST_GUILESS_MAIN(TestMethods)
#include "tst_methods.moc"
