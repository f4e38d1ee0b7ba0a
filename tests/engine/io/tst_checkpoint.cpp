// Checkpoints (io/checkpoint.h): N steps, a checkpoint and M more equal N + M straight, bit
// for bit, for every bootstrap mode and optimizer; what a checkpoint holds; which changes a
// resumed run accepts; and the CLI: train --checkpoint / --resume, predict and eval reading a
// checkpoint, eval over several --weights.
#include <QtTest/QtTest>

#include <cmath>
#include <cstring>
#include <limits>
#include <memory>

#include "backend/cpu/cpu_backend.h"
#include "core/errors.h"
#include "io/checkpoint.h"
#include "io/model_io.h"
#include "io/safetensors.h"
#include "support/engine_test_support.h"
#include "support/test_support.h"
#include "train/trainer.h"

using namespace ensemble;
using ensemble::test::describe;
using ensemble::test::expectConfigError;
using ensemble::test::fileBytes;
using ensemble::test::makeCpuTrainer;
using ensemble::test::numbersOf;
using ensemble::test::Run;
using ensemble::test::runCli;
using ensemble::test::sameBits;
using ensemble::test::smallSpiralsJson;
using nlohmann::json;

namespace {

const QStringList kSmall = {QStringLiteral("--config"), QStringLiteral("spirals"),
                            QStringLiteral("--set"),    QStringLiteral("ensemble.members=3"),
                            QStringLiteral("--set"),    QStringLiteral("dataset.n=200"),
                            QStringLiteral("--set"),    QStringLiteral("backend.kind=cpu"),
                            QStringLiteral("--set"),    QStringLiteral("training.eval_every=25"),
                            QStringLiteral("--quiet")};

}  // namespace

class TestCheckpoint : public QObject {
    Q_OBJECT

  private Q_SLOTS:
    void resumeIsBitExact_data();
    void resumeIsBitExact();
    void checkpointHoldsTheMomentsItsOptimizerUses_data();
    void checkpointHoldsTheMomentsItsOptimizerUses();
    void checkpointIsAnExport();
    void divergedMembersStayFrozenAfterResume();
    void liveChangeBeforeTheCheckpointIsReplayed();
    void memberSwitchesCarryThroughACheckpoint();
    void resumeOverrideOfALiveKeyEqualsItsScheduledReplay();
    void resumeConfigRefusesChangesToModelDataAndK();
    void resumeRefusesOtherData();
    void malformedCheckpointsFailCleanly();
    void curvesRoundTrip();
    void checkpointStoresTheRunsLength();
    void periodicHookRunsEveryNSteps();
    void cliResumeEqualsStraightRun();
    void cliPredictAndEvalReadACheckpoint();
    void cliResumeErrors();
    void cliEvalComparesSeveralFiles();
    void cliEvalComparesRegressionModels();

  private:
    QTemporaryDir m_dir;
};

void TestCheckpoint::resumeIsBitExact_data() {
    QTest::addColumn<QString>("bootstrap");
    QTest::addColumn<QString>("optimizer");
    for (const char* b : {"none", "resample", "poisson"}) {
        for (const char* o : {"adam", "adamw", "sgd"}) {
            QTest::newRow((std::string(b) + ", " + o).c_str()) << b << o;
        }
    }
}

// N steps, a checkpoint written and read back, a new trainer resumed from it and M more steps:
// the same parameters and optimizer state as N + M steps straight. A schedule with entries
// before, at and after the checkpoint's step is replayed. Resuming the weights alone (a plain
// export) does not give the same bits, so the optimizer state is what makes it exact.
void TestCheckpoint::resumeIsBitExact() {
    QFETCH(QString, bootstrap);
    QFETCH(QString, optimizer);
    constexpr int64_t n = 37;
    constexpr int64_t m = 29;
    json root = smallSpiralsJson();
    root["ensemble"]["bootstrap"] = bootstrap.toStdString();
    root["optimizer"]["kind"] = optimizer.toStdString();
    root["optimizer"]["weight_decay"] = 0.01;
    if (optimizer == QLatin1String("sgd")) {
        root["optimizer"]["lr"] = json{{"log_uniform", {0.02, 0.2}}};
        root["optimizer"]["momentum"] = 0.9;
    }
    root["training"]["steps"] = n + m;
    root["training"]["schedule"] = json::parse(R"([
        {"step": 10, "set": {"optimizer.lr": 0.01}},
        {"step": 37, "set": {"optimizer.weight_decay": 0.001}},
        {"step": 50, "set": {"optimizer.lr": [0.02, 0.01, 0.005, 0.002]}}])");
    const ExperimentConfig full = parseConfig(root);

    auto straight = makeCpuTrainer(full);
    straight->runSteps(n + m);

    root["training"]["steps"] = n;
    auto first = makeCpuTrainer(parseConfig(root));
    first->runSteps(1000);
    QCOMPARE(first->step(), n);
    const std::string path = m_dir.filePath("exact.safetensors").toStdString();
    writeCheckpoint(path, *first, {});

    const Checkpoint checkpoint = readCheckpoint(path);
    QCOMPARE(checkpoint.state.step, n);
    const ExperimentConfig resumedConfig =
        resumeConfig(checkpoint, {"training.steps=" + std::to_string(n + m)});
    QCOMPARE(resumedConfig.json, full.json);
    auto resumed = makeCpuTrainer(resumedConfig, 1);  // any thread count: the same bits
    resumeTrainer(*resumed, checkpoint);
    QCOMPARE(resumed->step(), n);
    resumed->runSteps(1000);
    QCOMPARE(resumed->step(), n + m);

    const TrainingState a = straight->trainingState();
    const TrainingState b = resumed->trainingState();
    QVERIFY(sameBits(a.params, b.params));
    QVERIFY(sameBits(a.optimizer.moment1, b.optimizer.moment1));
    QVERIFY(sameBits(a.optimizer.moment2, b.optimizer.moment2));
    QCOMPARE(b.optimizer.updates, uint64_t(n + m));
    QCOMPARE(a.optimizer.updates, b.optimizer.updates);

    // Control: the weights alone, as a plain export would give them, do not continue exactly.
    auto weightsOnly = makeCpuTrainer(resumedConfig);
    TrainingState fresh = checkpoint.state;
    fresh.optimizer.moment1.assign(fresh.optimizer.moment1.size(), 0.0f);
    fresh.optimizer.moment2.assign(fresh.optimizer.moment2.size(), 0.0f);
    fresh.optimizer.updates = 0;
    weightsOnly->restoreTrainingState(fresh);
    weightsOnly->runSteps(1000);
    QVERIFY(!sameBits(a.params, weightsOnly->parameters()));
}

void TestCheckpoint::checkpointHoldsTheMomentsItsOptimizerUses_data() {
    QTest::addColumn<QString>("optimizer");
    QTest::addColumn<QStringList>("present");
    QTest::addColumn<QStringList>("absent");
    QTest::newRow("adam") << "adam" << QStringList{"m", "v"} << QStringList{"momentum"};
    QTest::newRow("adamw") << "adamw" << QStringList{"m", "v"} << QStringList{"momentum"};
    QTest::newRow("sgd") << "sgd" << QStringList{"momentum"} << QStringList{"m", "v"};
}

void TestCheckpoint::checkpointHoldsTheMomentsItsOptimizerUses() {
    QFETCH(QString, optimizer);
    QFETCH(QStringList, present);
    QFETCH(QStringList, absent);
    json root = smallSpiralsJson();
    root["optimizer"]["kind"] = optimizer.toStdString();
    auto t = makeCpuTrainer(parseConfig(root));
    t->runSteps(23);
    const std::string path = m_dir.filePath("moments.safetensors").toStdString();
    Evaluation e = t->evaluate();
    writeCheckpoint(path, *t, {e});
    const SafetensorsFile file = readSafetensors(path);
    const TrainingState state = t->trainingState();
    const ParamLayout& layout = t->layout();
    for (int i = 0; i < present.size(); ++i) {
        const std::string moment = present[i].toStdString();
        const std::vector<float>& buffer =
            i == 0 ? state.optimizer.moment1 : state.optimizer.moment2;
        for (int l = 0; l < layout.layerCount(); ++l) {
            const LayerSlot& s = layout.layer(l);
            const std::string prefix = "optimizer." + std::to_string(l);
            const Tensor& w = file.get(prefix + ".weight." + moment);
            const Tensor& b = file.get(prefix + ".bias." + moment);
            QCOMPARE(w.shape, (std::vector<int64_t>{4, s.out, s.in}));
            QCOMPARE(b.shape, (std::vector<int64_t>{4, s.out}));
            QVERIFY(std::equal(w.f32().begin(), w.f32().end(),
                               buffer.begin() + static_cast<std::ptrdiff_t>(s.weightOffset)));
            QVERIFY(std::equal(b.f32().begin(), b.f32().end(),
                               buffer.begin() + static_cast<std::ptrdiff_t>(s.biasOffset)));
            // A moment the rule really uses is not all zero.
            QVERIFY(std::any_of(w.f32().begin(), w.f32().end(), [](float x) { return x != 0; }));
        }
    }
    for (const QString& moment : absent) {
        QVERIFY(file.find("optimizer.0.weight." + moment.toStdString()) == nullptr);
    }
    const Tensor& steps = file.get("optimizer.step");
    QCOMPARE(steps.dtype, DType::I64);
    QCOMPARE(std::vector<int64_t>(steps.i64().begin(), steps.i64().end()),
             std::vector<int64_t>(4, 23));
    QCOMPARE(file.metadata.at("checkpoint_format_version"), std::string("1"));
    QCOMPARE(json::parse(file.metadata.at("config")), t->config().json);
    const json curves = json::parse(file.metadata.at("curves"));
    QCOMPARE(curves["step"], json::array({23}));
    QCOMPARE(curves["ensemble"]["test_accuracy"][0].get<double>(), e.ensembleTest.accuracy);
    QCOMPARE(checkpointMoments(t->config().optimizer.kind).size(),
             static_cast<std::size_t>(present.size()));
}

// A checkpoint is an export: importEnsemble reads its weights, which predict as the trainer.
void TestCheckpoint::checkpointIsAnExport() {
    auto t =
        makeCpuTrainer(parseConfig(smallSpiralsJson(R"({"ensemble": {"bootstrap": "resample"}})")));
    t->runSteps(31);
    const std::string path = m_dir.filePath("export.safetensors").toStdString();
    writeCheckpoint(path, *t, {});
    const LoadedEnsemble e = importEnsemble(path);
    QVERIFY(sameBits(e.params, t->parameters()));
    QCOMPARE(e.step, int64_t(31));
    QVERIFY(e.counts == t->bootstrapCounts());
    const Dataset& test = t->data().test;
    const MemberPredictions expected = t->predictRaw(test.x.data(), test.rows);
    QVERIFY(predictLogProbs(e, test.x.data(), test.rows, 1) == expected.logProbs);
    // And a plain export is not a checkpoint.
    const std::string plain = m_dir.filePath("plain.safetensors").toStdString();
    exportEnsemble(plain, *t);
    QVERIFY(isCheckpoint(readSafetensors(path)));
    QVERIFY(!isCheckpoint(readSafetensors(plain)));
}

void TestCheckpoint::divergedMembersStayFrozenAfterResume() {
    json root = smallSpiralsJson(R"({"model": {"activation": "relu"},
        "optimizer": {"kind": "sgd", "momentum": 0.9, "lr": [0.05, 0.05, 10000, 0.05]}})");
    root["training"]["steps"] = 120;
    auto straight = makeCpuTrainer(parseConfig(root));
    straight->runSteps(120);
    QCOMPARE(straight->diverged(), (std::vector<uint8_t>{0, 0, 1, 0}));

    root["training"]["steps"] = 80;
    auto first = makeCpuTrainer(parseConfig(root));
    first->runSteps(80);
    QCOMPARE(first->diverged(), (std::vector<uint8_t>{0, 0, 1, 0}));
    const std::string path = m_dir.filePath("diverged.safetensors").toStdString();
    writeCheckpoint(path, *first, {first->evaluate()});
    const Checkpoint c = readCheckpoint(path);
    QCOMPARE(c.state.diverged, (std::vector<uint8_t>{0, 0, 1, 0}));
    QVERIFY(c.curves.at(0).members.at(2).diverged);
    auto resumed = makeCpuTrainer(resumeConfig(c, {"training.steps=120"}));
    resumeTrainer(*resumed, c);
    QCOMPARE(resumed->diverged(), (std::vector<uint8_t>{0, 0, 1, 0}));
    QCOMPARE(resumed->included(), (std::vector<uint8_t>{1, 1, 0, 1}));
    resumed->runSteps(40);
    QVERIFY(sameBits(resumed->parameters(), straight->parameters()));
}

// The app's live edit before a checkpoint is stored in training.schedule, so the resumed run
// applies it too.
void TestCheckpoint::liveChangeBeforeTheCheckpointIsReplayed() {
    const ExperimentConfig c = parseConfig(smallSpiralsJson(R"({"training": {"steps": 90}})"));
    auto live = makeCpuTrainer(c);
    live->runSteps(20);
    live->changeHyperparameters(json{{"optimizer.lr", 0.05}});
    live->runSteps(20);
    const std::string path = m_dir.filePath("live.safetensors").toStdString();
    writeCheckpoint(path, *live, {});
    live->runSteps(50);

    const Checkpoint checkpoint = readCheckpoint(path);
    auto resumed = makeCpuTrainer(resumeConfig(checkpoint, {}));
    resumeTrainer(*resumed, checkpoint);
    resumed->runSteps(50);
    QCOMPARE(resumed->step(), int64_t(90));
    QVERIFY(sameBits(resumed->parameters(), live->parameters()));
    QCOMPARE(resumed->rules()[0].lr, 0.05f);
}

// Member switches before a checkpoint (one at its very step, made after the last step trained)
// are in its stored schedule: the resumed run has them from the start and goes on as the
// straight run; `--set ensemble.switched_off=...` on resume is a switch at the checkpoint's step.
void TestCheckpoint::memberSwitchesCarryThroughACheckpoint() {
    const ExperimentConfig c = parseConfig(smallSpiralsJson(R"({"training": {"steps": 60}})"));
    const int k = c.ensemble.members;
    QVERIFY(k >= 3);
    auto live = makeCpuTrainer(c);
    live->runSteps(20);
    live->changeHyperparameters(json{{"ensemble.switched_off", {0}}});
    live->runSteps(20);
    live->changeHyperparameters(json{{"ensemble.switched_off", {0, 2}}});
    const std::string path = m_dir.filePath("switched.safetensors").toStdString();
    writeCheckpoint(path, *live, {});
    live->runSteps(20);

    const Checkpoint checkpoint = readCheckpoint(path);
    auto resumed = makeCpuTrainer(resumeConfig(checkpoint, {}));
    resumeTrainer(*resumed, checkpoint);
    resumed->applyDueChanges();
    std::vector<uint8_t> expected(static_cast<std::size_t>(k), 1);
    expected[0] = expected[2] = 0;
    QCOMPARE(resumed->included(), expected);
    resumed->runSteps(20);
    QVERIFY(sameBits(resumed->parameters(), live->parameters()));
    QCOMPARE(resumed->evaluate().ensembleTest.loss, live->evaluate().ensembleTest.loss);

    auto changed = makeCpuTrainer(resumeConfig(checkpoint, {"ensemble.switched_off=[1]"}));
    const json& schedule = changed->config().json["training"]["schedule"];
    QCOMPARE(schedule.back(),
             json::parse(R"({"step": 40, "set": {"ensemble.switched_off": [1]}})"));
    resumeTrainer(*changed, checkpoint);
    changed->applyDueChanges();
    expected.assign(static_cast<std::size_t>(k), 1);
    expected[1] = 0;
    QCOMPARE(changed->included(), expected);
}

// --set optimizer.lr=... on resume is a schedule entry at the checkpoint's step: the stored
// config of the resumed run replays it straight.
void TestCheckpoint::resumeOverrideOfALiveKeyEqualsItsScheduledReplay() {
    const ExperimentConfig c = parseConfig(smallSpiralsJson(R"({"training": {"steps": 30}})"));
    auto first = makeCpuTrainer(c);
    first->runSteps(30);
    const std::string path = m_dir.filePath("override.safetensors").toStdString();
    writeCheckpoint(path, *first, {});
    const Checkpoint checkpoint = readCheckpoint(path);
    const ExperimentConfig resumedConfig =
        resumeConfig(checkpoint, {"training.steps=70", "optimizer.lr=0.002"});
    // The base value stays; the change is an entry at step 30.
    QCOMPARE(resumedConfig.json["optimizer"]["lr"], c.json["optimizer"]["lr"]);
    QCOMPARE(resumedConfig.json["training"]["schedule"],
             json::parse(R"([{"step": 30, "set": {"optimizer.lr": 0.002}}])"));
    auto resumed = makeCpuTrainer(resumedConfig);
    resumeTrainer(*resumed, checkpoint);
    resumed->runSteps(40);

    auto replay = makeCpuTrainer(parseConfig(resumed->config().json));
    replay->runSteps(70);
    QVERIFY(sameBits(resumed->parameters(), replay->parameters()));
    auto without = makeCpuTrainer(resumeConfig(checkpoint, {"training.steps=70"}));
    resumeTrainer(*without, checkpoint);
    without->runSteps(40);
    QVERIFY(!sameBits(resumed->parameters(), without->parameters()));
}

void TestCheckpoint::resumeConfigRefusesChangesToModelDataAndK() {
    json root = smallSpiralsJson(R"({"training": {"steps": 30, "schedule": [
        {"step": 10, "set": {"optimizer.lr": 0.01}},
        {"step": 50, "set": {"optimizer.lr": 0.001}}]}})");
    auto t = makeCpuTrainer(parseConfig(root));
    t->runSteps(30);
    const std::string path = m_dir.filePath("rules.safetensors").toStdString();
    writeCheckpoint(path, *t, {});
    const Checkpoint c = readCheckpoint(path);

    // Allowed: the length, evaluation, the backend, later schedule entries, live keys.
    const ExperimentConfig ok =
        resumeConfig(c, {"training.steps=100", "training.eval_every=10", "backend.threads=1",
                         R"(training.schedule=[{"step": 10, "set": {"optimizer.lr": 0.01}},
                                  {"step": 60, "set": {"optimizer.lr": 0.003}}])",
                         "optimizer.momentum=0.5"});
    QCOMPARE(ok.training.steps, int64_t(100));
    QCOMPARE(ok.backend.threads, 1);
    QCOMPARE(ok.training.schedule.size(), std::size_t(3));
    QCOMPARE(ok.training.schedule[1].step, int64_t(30));  // the momentum change
    QCOMPARE(ok.training.schedule[2].step, int64_t(60));
    // An unchanged value of any key is no change.
    QCOMPARE(resumeConfig(c, {"ensemble.members=4", "model.hidden=[12,12]"}).json,
             c.ensemble.config.json);

    for (const char* key :
         {"model.hidden=[8]", "model.activation=relu", "dataset.n=400", "dataset.kind=moons",
          "ensemble.members=5", "ensemble.bootstrap=poisson", "ensemble.seed=9",
          "optimizer.kind=sgd", "optimizer.betas=[0.8,0.99]", "training.batch_size=8"}) {
        const std::string assignment = key;
        expectConfigError([&] { resumeConfig(c, {assignment}); },
                          assignment.substr(0, assignment.find('=')));
    }
    // The entries before the checkpoint's step have been applied.
    expectConfigError(
        [&] {
            resumeConfig(c, {R"(training.schedule=[{"step": 10, "set": {"optimizer.lr": 0.02}}])"});
        },
        "training.schedule");
    // A live key's value is checked as a schedule entry would be.
    expectConfigError([&] { resumeConfig(c, {"optimizer.lr=-1"}); }, "optimizer.lr");
}

void TestCheckpoint::resumeRefusesOtherData() {
    json root = smallSpiralsJson();
    auto t = makeCpuTrainer(parseConfig(root));
    t->runSteps(5);
    const std::string path = m_dir.filePath("data.safetensors").toStdString();
    writeCheckpoint(path, *t, {});
    const Checkpoint c = readCheckpoint(path);
    for (const char* change : {R"({"dataset": {"seed": 4}})", R"({"dataset": {"n": 320}})"}) {
        json other = root;
        other.merge_patch(json::parse(change));
        auto elsewhere = makeCpuTrainer(parseConfig(other));
        QVERIFY_THROWS_EXCEPTION(DataError, resumeTrainer(*elsewhere, c));
        QCOMPARE(elsewhere->step(), int64_t(0));
    }
    // restoreTrainingState is for a trainer that has not run.
    auto ran = makeCpuTrainer(parseConfig(root));
    ran->runSteps(1);
    QVERIFY_THROWS_EXCEPTION(std::logic_error, ran->restoreTrainingState(c.state));
}

void TestCheckpoint::malformedCheckpointsFailCleanly() {
    auto t = makeCpuTrainer(parseConfig(smallSpiralsJson()));
    t->runSteps(4);
    const std::string path = m_dir.filePath("good.safetensors").toStdString();
    writeCheckpoint(path, *t, {t->evaluate()});
    const SafetensorsFile good = readSafetensors(path);
    const auto expectDataError = [&](const SafetensorsFile& file, const std::string& needle) {
        const std::string broken = m_dir.filePath("broken.safetensors").toStdString();
        writeSafetensors(broken, file);
        try {
            readCheckpoint(broken);
            QFAIL(qPrintable(QString::fromStdString("expected a DataError with " + needle)));
        } catch (const DataError& e) {
            QVERIFY2(std::string(e.what()).find(needle) != std::string::npos, e.what());
            QVERIFY2(std::string(e.what()).find("broken.safetensors") != std::string::npos,
                     e.what());
        }
    };
    SafetensorsFile f = good;
    f.metadata.erase("checkpoint_format_version");
    expectDataError(f, "not a checkpoint");
    f = good;
    f.metadata["checkpoint_format_version"] = "2";
    expectDataError(f, "checkpoint_format_version");
    f = good;
    std::erase_if(f.tensors, [](const Tensor& x) { return x.name == "optimizer.1.bias.v"; });
    expectDataError(f, "optimizer.1.bias.v");
    f = good;
    for (Tensor& x : f.tensors) {
        if (x.name == "optimizer.0.weight.m") {
            x = Tensor::fromF32(x.name, {4, 2, 12}, std::vector<float>(96, 0.0f));
        }
    }
    expectDataError(f, "optimizer.0.weight.m");
    f = good;
    for (Tensor& x : f.tensors) {
        if (x.name == "optimizer.step") {
            x = Tensor::fromI64(x.name, {4}, std::vector<int64_t>{4, 4, 3, 4});
        }
    }
    expectDataError(f, "optimizer.step");
    f = good;
    f.metadata["curves"] = R"({"step": [1, 2], "epoch": [0.1]})";
    expectDataError(f, "curves");
    f = good;
    f.metadata.erase("curves");
    expectDataError(f, "curves");
}

void TestCheckpoint::curvesRoundTrip() {
    Evaluation a;
    a.step = 100;
    a.epoch = 2.5;
    a.ensembleTrain = {0.25, 0.9};
    a.ensembleTest = {0.5, 0.875};
    a.members.resize(2);
    a.members[0].train = {0.3, 0.85};
    a.members[0].test = {0.6, 0.8};
    a.members[1].train = {std::numeric_limits<double>::quiet_NaN(), 0.5};
    a.members[1].test = {std::numeric_limits<double>::infinity(), 0.5};
    a.members[1].diverged = true;
    Evaluation b = a;
    b.step = 200;
    b.epoch = 5.0;
    b.ensembleTest.accuracy = 0.9375;
    const json j = curvesJson({a, b});
    QCOMPARE(j["step"], json::array({100, 200}));
    QCOMPARE(j["ensemble"]["test_accuracy"], json::array({0.875, 0.9375}));
    QCOMPARE(j["members"]["train_loss"][0], json::array({0.3, nullptr}));
    QCOMPARE(j["members"]["diverged"][1], json::array({false, true}));
    // Through text, as the metadata holds it.
    const std::vector<Evaluation> back = curvesFromJson(json::parse(j.dump()), "x");
    QCOMPARE(back.size(), std::size_t(2));
    QCOMPARE(back[1].step, int64_t(200));
    QCOMPARE(back[1].epoch, 5.0);
    QCOMPARE(back[1].ensembleTest.accuracy, 0.9375);
    QCOMPARE(back[0].members[0].test.loss, 0.6);
    QVERIFY(std::isnan(back[0].members[1].train.loss));
    QVERIFY(std::isnan(back[0].members[1].test.loss));  // infinity is not JSON: null
    QVERIFY(back[0].members[1].diverged);
    QVERIFY(!back[0].members[0].diverged);
    QVERIFY(curvesFromJson(curvesJson({}), "x").empty());
    json bad = j;
    bad["members"]["test_loss"][1] = json::array({0.1});
    QVERIFY_THROWS_EXCEPTION(DataError, curvesFromJson(bad, "x"));
    bad = j;
    bad["ensemble"]["train_loss"][0] = "low";
    QVERIFY_THROWS_EXCEPTION(DataError, curvesFromJson(bad, "x"));
}

// The stored config's length is where the run ends: after Continue (the end moved past the
// configured length) the steps trained, so the stored config replays the checkpoint's weights
// and a resume without --set has nothing left; paused before its end, that end, so a resume
// finishes the run; an explicit length (the app's until paused) as given.
void TestCheckpoint::checkpointStoresTheRunsLength() {
    json root = smallSpiralsJson();
    root["training"]["steps"] = 0;
    root["training"]["epochs"] = 2;  // 300 rows, test 20 %: 240 train rows, 15 steps an epoch
    const ExperimentConfig config = parseConfig(root);
    auto t = makeCpuTrainer(config);
    const int64_t configured = t->totalSteps();
    QCOMPARE(configured, int64_t{30});
    t->runSteps(1000);
    QCOMPARE(t->step(), configured);
    t->setTotalSteps(2 * configured);  // Continue: another block of the same length
    t->runSteps(1000);
    QCOMPARE(t->step(), 2 * configured);
    const std::string continued = m_dir.filePath("length_continued.safetensors").toStdString();
    writeCheckpoint(continued, *t, {});
    const Checkpoint c = readCheckpoint(continued);
    QCOMPARE(c.ensemble.config.json["training"]["steps"].get<int64_t>(), 2 * configured);
    QCOMPARE(c.ensemble.config.json["training"]["epochs"].get<int64_t>(), int64_t{0});
    // Replayed from scratch, the stored config trains to the checkpoint's weights.
    auto replay = makeCpuTrainer(parseConfig(c.ensemble.config.json));
    replay->runSteps(1000);
    QCOMPARE(replay->step(), 2 * configured);
    QVERIFY(sameBits(replay->parameters(), t->parameters()));
    // Resumed as stored: at its end.
    auto resumed = makeCpuTrainer(resumeConfig(c, {}));
    resumeTrainer(*resumed, c);
    QVERIFY(resumed->finished());

    // Paused at 70 of a run moved to 90: stored 90, and a resume finishes the run there.
    t->setTotalSteps(90);
    t->runSteps(10);
    QCOMPARE(t->step(), int64_t{70});
    const std::string paused = m_dir.filePath("length_paused.safetensors").toStdString();
    writeCheckpoint(paused, *t, {});
    const Checkpoint p = readCheckpoint(paused);
    QCOMPARE(p.ensemble.config.json["training"]["steps"].get<int64_t>(), int64_t{90});
    auto finishing = makeCpuTrainer(resumeConfig(p, {}));
    resumeTrainer(*finishing, p);
    finishing->runSteps(1000);
    QCOMPARE(finishing->step(), int64_t{90});
    t->runSteps(1000);
    QVERIFY(sameBits(finishing->parameters(), t->parameters()));

    // An explicit length (until paused: the steps trained) and an untouched run (the config
    // as given: the configured epochs stay).
    writeCheckpoint(paused, *t, {}, nullptr, t->step());
    QCOMPARE(readCheckpoint(paused).ensemble.config.json["training"]["steps"].get<int64_t>(),
             int64_t{90});
    QVERIFY(!readCheckpoint(paused).untilPaused);  // a run with an end, as by default
    // A run without an end says so (the metadata "until_paused"), its length the steps trained.
    writeCheckpoint(paused, *t, {}, nullptr, t->step(), nullptr, true);
    const Checkpoint endless = readCheckpoint(paused);
    QVERIFY(endless.untilPaused);
    QCOMPARE(endless.ensemble.config.json["training"]["steps"].get<int64_t>(), int64_t{90});
    auto plain = makeCpuTrainer(config);
    plain->runSteps(7);
    writeCheckpoint(paused, *plain, {});
    QCOMPARE(readCheckpoint(paused).ensemble.config.json, config.json);
}

void TestCheckpoint::periodicHookRunsEveryNSteps() {
    auto t = makeCpuTrainer(
        parseConfig(smallSpiralsJson(R"({"training": {"steps": 100, "eval_every": 40}})")));
    std::vector<int64_t> hooks;
    std::vector<int64_t> evaluations;
    t->setPeriodicHook(25, [&] {
        hooks.push_back(t->step());
        // The evaluation of the same step comes first (a checkpoint then holds it).
        QVERIFY(evaluations.empty() || evaluations.back() <= t->step());
    });
    t->run(nullptr, [&](const Evaluation& e) { evaluations.push_back(e.step); });
    QCOMPARE(hooks, (std::vector<int64_t>{25, 50, 75}));
    QCOMPARE(evaluations, (std::vector<int64_t>{40, 80, 100}));
}

// The contract end to end: train N+M with an export; train N with a checkpoint; resume it for
// M more: the same export, byte for byte (weights, config, metrics), and the same checkpoint.
void TestCheckpoint::cliResumeEqualsStraightRun() {
    const QString full = m_dir.filePath("cli_full.safetensors");
    const QString fullCkpt = m_dir.filePath("cli_full_ckpt.safetensors");
    const QString half = m_dir.filePath("cli_half.safetensors");
    const QString resumed = m_dir.filePath("cli_resumed.safetensors");
    const QString resumedCkpt = m_dir.filePath("cli_resumed_ckpt.safetensors");
    const QStringList poissonSgd = {"--set", "ensemble.bootstrap=poisson",
                                    "--set", "optimizer.kind=sgd",
                                    "--set", "optimizer.lr=0.05"};
    Run r = runCli(QStringList{"train"} + kSmall + poissonSgd +
                   QStringList{"--set", "training.steps=110", "--export", full, "--checkpoint",
                               fullCkpt, "--checkpoint-every", "40"});
    QVERIFY2(r.code == 0, qPrintable(describe(r)));
    r = runCli(QStringList{"train"} + kSmall + poissonSgd +
               QStringList{"--set", "training.steps=60", "--checkpoint", half});
    QVERIFY2(r.code == 0, qPrintable(describe(r)));
    r = runCli({"train", "--resume", half, "--set", "training.steps=110", "--export", resumed,
                "--checkpoint", resumedCkpt});
    QVERIFY2(r.code == 0, qPrintable(describe(r)));
    QVERIFY2(r.err.contains(QStringLiteral("resuming")), qPrintable(r.err));
    QVERIFY(!fileBytes(full).isEmpty());
    QVERIFY(fileBytes(full) == fileBytes(resumed));
    // The checkpoints hold the same tensors and metadata; their curves differ only by the
    // evaluation at step 60, where the first part ended.
    SafetensorsFile x = readSafetensors(fullCkpt.toStdString());
    SafetensorsFile y = readSafetensors(resumedCkpt.toStdString());
    QCOMPARE(x.tensors.size(), y.tensors.size());
    for (std::size_t i = 0; i < x.tensors.size(); ++i) {
        QCOMPARE(x.tensors[i].name, y.tensors[i].name);
        QVERIFY2(x.tensors[i].data == y.tensors[i].data, x.tensors[i].name.c_str());
    }
    const std::vector<Evaluation> straightCurves = readCheckpoint(x).curves;
    const std::vector<Evaluation> resumedCurves = readCheckpoint(y).curves;
    x.metadata.erase("curves");
    y.metadata.erase("curves");
    QVERIFY(x.metadata == y.metadata);
    std::vector<int64_t> steps;
    for (const Evaluation& e : resumedCurves) {
        steps.push_back(e.step);
    }
    QCOMPARE(steps, (std::vector<int64_t>{25, 50, 60, 75, 100, 110}));
    QCOMPARE(straightCurves.size(), std::size_t(5));
    for (const Evaluation& e : straightCurves) {
        const auto same = std::find_if(resumedCurves.begin(), resumedCurves.end(),
                                       [&](const Evaluation& c) { return c.step == e.step; });
        QVERIFY(same != resumedCurves.end());
        QCOMPARE(same->ensembleTest.loss, e.ensembleTest.loss);
        QCOMPARE(same->members[1].train.accuracy, e.members[1].train.accuracy);
    }
}

void TestCheckpoint::cliPredictAndEvalReadACheckpoint() {
    const QString ckpt = m_dir.filePath("read_ckpt.safetensors");
    const QString exported = m_dir.filePath("read_export.safetensors");
    Run r = runCli(QStringList{"train"} + kSmall +
                   QStringList{"--set", "training.steps=50", "--set", "ensemble.bootstrap=resample",
                               "--export", exported, "--checkpoint", ckpt});
    QVERIFY2(r.code == 0, qPrintable(describe(r)));
    const QString input = m_dir.filePath("read_input.csv");
    r = runCli(QStringList{"dataset"} + kSmall.mid(0, kSmall.size() - 1) +
               QStringList{"--out", input, "--split", "test"});
    QVERIFY2(r.code == 0, qPrintable(describe(r)));
    const QString p1 = m_dir.filePath("p_ckpt.csv");
    const QString p2 = m_dir.filePath("p_export.csv");
    r = runCli({"predict", "--weights", ckpt, "--input", input, "--output", p1});
    QVERIFY2(r.code == 0, qPrintable(describe(r)));
    r = runCli({"predict", "--weights", exported, "--input", input, "--output", p2});
    QVERIFY2(r.code == 0, qPrintable(describe(r)));
    QVERIFY(fileBytes(p1).count('\n') == 41);
    QVERIFY(fileBytes(p1) == fileBytes(p2));
    const Run e1 = runCli({"eval", "--weights", ckpt});
    const Run e2 = runCli({"eval", "--weights", exported});
    QVERIFY2(e1.code == 0, qPrintable(describe(e1)));
    QVERIFY(e1.out.contains(QStringLiteral("out-of-bag")));
    QCOMPARE(e1.out, e2.out);
}

void TestCheckpoint::cliResumeErrors() {
    const QString ckpt = m_dir.filePath("err_ckpt.safetensors");
    const QString exported = m_dir.filePath("err_export.safetensors");
    Run r = runCli(
        QStringList{"train"} + kSmall +
        QStringList{"--set", "training.steps=20", "--export", exported, "--checkpoint", ckpt});
    QVERIFY2(r.code == 0, qPrintable(describe(r)));
    for (const QString& set : {QStringLiteral("model.hidden=[8]"), QStringLiteral("dataset.n=300"),
                               QStringLiteral("ensemble.members=4")}) {
        r = runCli({"train", "--resume", ckpt, "--set", set, "--quiet"});
        QVERIFY2(r.code == 2, qPrintable(describe(r)));
        QVERIFY2(r.err.contains(set.left(set.indexOf('='))), qPrintable(r.err));
    }
    r = runCli({"train", "--resume", ckpt, "--config", "spirals"});
    QVERIFY2(r.code == 2 && r.err.contains(QStringLiteral("--resume")), qPrintable(describe(r)));
    r = runCli({"train", "--resume", exported});
    QVERIFY2(r.code == 3 && r.err.contains(QStringLiteral("not a checkpoint")),
             qPrintable(describe(r)));
    r = runCli(QStringList{"train"} + kSmall + QStringList{"--checkpoint-every", "10"});
    QVERIFY2(r.code == 2 && r.err.contains(QStringLiteral("--checkpoint")),
             qPrintable(describe(r)));
    r = runCli(QStringList{"train"} + kSmall +
               QStringList{"--checkpoint", ckpt, "--checkpoint-every", "0"});
    QVERIFY2(r.code == 2, qPrintable(describe(r)));
    // A flag given twice is a usage error, not the last one silently.
    r = runCli(QStringList{"train"} + kSmall + QStringList{"--export", "a", "--export", "b"});
    QVERIFY2(r.code == 2 && r.err.contains(QStringLiteral("--export given twice")),
             qPrintable(describe(r)));
}

void TestCheckpoint::cliEvalComparesSeveralFiles() {
    const QString a = m_dir.filePath("cmp_a.safetensors");
    const QString b = m_dir.filePath("cmp_b.safetensors");
    const QString other = m_dir.filePath("cmp_other.safetensors");
    Run r = runCli(QStringList{"train"} + kSmall +
                   QStringList{"--set", "training.steps=30", "--export", a});
    QVERIFY2(r.code == 0, qPrintable(describe(r)));
    r = runCli(QStringList{"train"} + kSmall +
               QStringList{"--set", "training.steps=300", "--set", "ensemble.members=5",
                           "--checkpoint", b});
    QVERIFY2(r.code == 0, qPrintable(describe(r)));
    r = runCli(
        QStringList{"train"} + kSmall +
        QStringList{"--set", "training.steps=10", "--set", "dataset.noise=0.2", "--export", other});
    QVERIFY2(r.code == 0, qPrintable(describe(r)));

    // Each file's ensemble row, as eval of that file alone prints it: accuracy nll brier ece.
    const Run ra = runCli({"eval", "--weights", a});
    const Run rb = runCli({"eval", "--weights", b});
    QVERIFY2(ra.code == 0 && rb.code == 0, qPrintable(describe(ra) + describe(rb)));
    const QList<double> ea = numbersOf(ra.out, QStringLiteral("ensemble"));
    const QList<double> eb = numbersOf(rb.out, QStringLiteral("ensemble"));
    QCOMPARE(ea.size(), 4);
    QCOMPARE(eb.size(), 4);

    const Run both = runCli({"eval", "--weights", a, "--weights", b});
    QVERIFY2(both.code == 0, qPrintable(describe(both)));
    // Rows: members, step, accuracy, nll, ece, brier, then the differences to the first.
    const QList<double> rowA = numbersOf(both.out, a);
    const QList<double> rowB = numbersOf(both.out, b);
    QCOMPARE(rowA.size(), 5);  // "3/3" is not a number; the differences are "-"
    QCOMPARE(rowB.size(), 9);
    QCOMPARE(rowA[0], 30.0);
    QCOMPARE(rowB[0], 300.0);
    QVERIFY2(both.out.contains(QStringLiteral("5/5")), qPrintable(both.out));
    const int order[4] = {0, 1, 3, 2};  // accuracy, nll, ece, brier from accuracy nll brier ece
    for (int i = 0; i < 4; ++i) {
        ENSEMBLE_COMPARE_NEAR(rowA[1 + i], ea[order[i]], 1e-4);
        ENSEMBLE_COMPARE_NEAR(rowB[1 + i], eb[order[i]], 1e-4);
        ENSEMBLE_COMPARE_NEAR(rowB[5 + i], eb[order[i]] - ea[order[i]], 2e-4);
    }
    QVERIFY(rowB[5] > 0.0);  // 300 steps beat 30

    r = runCli({"eval", "--weights", a, "--weights", b, "--report", m_dir.filePath("r.json")});
    QVERIFY2(r.code == 2 && r.err.contains(QStringLiteral("once per file")),
             qPrintable(describe(r)));
    r = runCli({"eval", "--weights", a, "--weights", b, "--csv", m_dir.filePath("csvs")});
    QVERIFY2(r.code == 2 && r.err.contains(QStringLiteral("once per file")),
             qPrintable(describe(r)));
    QVERIFY(!QFileInfo::exists(m_dir.filePath("r.json")));
    r = runCli({"eval", "--weights", a, "--weights", other});
    QVERIFY2(r.code == 2 && r.err.contains(a) && r.err.contains(other) &&
                 r.err.contains(QStringLiteral("dataset.noise")),
             qPrintable(describe(r)));
}

// Regression ensembles compare too: RMSE and NLL of each file as eval of that file alone prints
// them, and the differences to the first.
void TestCheckpoint::cliEvalComparesRegressionModels() {
    const QStringList sine = {"--config", "sine",
                              "--set",    "dataset.n=200",
                              "--set",    "model.hidden=[16]",
                              "--set",    "backend.kind=cpu",
                              "--set",    "training.eval_every=0",
                              "--quiet"};
    const QString a = m_dir.filePath("reg_a.safetensors");
    const QString b = m_dir.filePath("reg_b.safetensors");
    const QString c = m_dir.filePath("reg_mse.safetensors");
    const QString spirals = m_dir.filePath("reg_spirals.safetensors");
    Run r = runCli(
        QStringList{"train"} + sine +
        QStringList{"--set", "training.steps=20", "--set", "ensemble.members=3", "--export", a});
    QVERIFY2(r.code == 0, qPrintable(describe(r)));
    r = runCli(QStringList{"train"} + sine +
               QStringList{"--set", "training.steps=400", "--set", "ensemble.members=6", "--set",
                           "ensemble.bootstrap=resample", "--checkpoint", b});
    QVERIFY2(r.code == 0, qPrintable(describe(r)));
    r = runCli(
        QStringList{"train"} + sine +
        QStringList{"--set", "training.steps=50", "--set", "model.likelihood=mse", "--export", c});
    QVERIFY2(r.code == 0, qPrintable(describe(r)));

    // Each file's ensemble row alone: rmse mae nll cover90 cal gap sharpness.
    const Run ra = runCli({"eval", "--weights", a});
    const Run rb = runCli({"eval", "--weights", b});
    QVERIFY2(ra.code == 0 && rb.code == 0, qPrintable(describe(ra) + describe(rb)));
    const QList<double> ea = numbersOf(ra.out, QStringLiteral("ensemble"));
    const QList<double> eb = numbersOf(rb.out, QStringLiteral("ensemble"));
    QCOMPARE(ea.size(), 6);
    QCOMPARE(eb.size(), 6);

    const Run all = runCli({"eval", "--weights", a, "--weights", b, "--weights", c});
    QVERIFY2(all.code == 0, qPrintable(describe(all)));
    QVERIFY2(all.out.contains(QStringLiteral("rmse")) && all.out.contains(QStringLiteral("d nll")),
             qPrintable(all.out));
    // Rows: members, step, likelihood, rmse, nll, then d rmse, d nll.
    const QList<double> rowA = numbersOf(all.out, a);
    const QList<double> rowB = numbersOf(all.out, b);
    QCOMPARE(rowA.size(), 3);  // step, rmse, nll; the differences are "-"
    QCOMPARE(rowB.size(), 5);
    QCOMPARE(rowA[0], 20.0);
    QCOMPARE(rowB[0], 400.0);
    QVERIFY2(all.out.contains(QStringLiteral("6/6")), qPrintable(all.out));
    ENSEMBLE_COMPARE_NEAR(rowA[1], ea[0], 1e-4);
    ENSEMBLE_COMPARE_NEAR(rowA[2], ea[2], 1e-4);
    ENSEMBLE_COMPARE_NEAR(rowB[1], eb[0], 1e-4);
    ENSEMBLE_COMPARE_NEAR(rowB[2], eb[2], 1e-4);
    ENSEMBLE_COMPARE_NEAR(rowB[3], eb[0] - ea[0], 2e-4);
    ENSEMBLE_COMPARE_NEAR(rowB[4], eb[2] - ea[2], 2e-4);
    QVERIFY(rowB[3] < 0.0);  // 400 steps fit better than 20
    // The mse model's row names its likelihood and has an RMSE.
    const QString mseLine = all.out.split('\n').filter(c).value(0);
    QVERIFY2(mseLine.contains(QStringLiteral(" mse ")), qPrintable(all.out));
    QVERIFY(numbersOf(all.out, c).size() >= 3);

    // A classifier next to a regression model: different datasets, exit 2 naming both.
    r = runCli(QStringList{"train"} + kSmall +
               QStringList{"--set", "training.steps=5", "--export", spirals});
    QVERIFY2(r.code == 0, qPrintable(describe(r)));
    r = runCli({"eval", "--weights", a, "--weights", spirals});
    QVERIFY2(r.code == 2 && r.err.contains(a) && r.err.contains(spirals), qPrintable(describe(r)));
}

QTEST_GUILESS_MAIN(TestCheckpoint)
#include "tst_checkpoint.moc"
