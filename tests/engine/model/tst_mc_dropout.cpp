// The mc_dropout method (Gal & Ghahramani 2016; model/ensemble_methods.h, train/
// effective_members.h): its training against a 1-member backend bound by hand with the same
// dropout, its members against foldDropoutMasks of the trained network (at every evaluation),
// the export that stores the one network and the seed (members regenerated on reading, predict
// unchanged), a bit-exact resume and Continue, and the refusals.
#include <QtTest/QtTest>

#include <cstring>
#include <memory>

#include "backend/cpu/cpu_backend.h"
#include "core/errors.h"
#include "io/checkpoint.h"
#include "io/export_formats.h"
#include "io/model_io.h"
#include "io/safetensors.h"
#include "model/dropout_masks.h"
#include "optim/update_rules.h"
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

constexpr double kRate = 0.25;

// The suites' small spirals run (n = 200, a 12-10 ReLU MLP with dropout kRate) as mc_dropout, at
// one learning rate with weight decay.
json mcConfigJson(int64_t steps = 30, int members = 4) {
    json root = ensemble::test::smallSpiralsJson(
        R"({"dataset": {"n": 200}, "model": {"hidden": [12, 10], "activation": "relu",
            "dropout": 0.25}, "ensemble": {"method": "mc_dropout", "seed": 7},
            "optimizer": {"lr": 0.02, "weight_decay": 0.001}})");
    root["ensemble"]["members"] = members;
    root["training"]["steps"] = steps;
    return root;
}

// The network a CpuBackend bound by hand trains in `steps` steps: one member, the config's
// optimizer, `rate` dropout keyed by the ensemble's seed (the mask seed's documented
// derivation), the trainer's initialisation and batches.
std::vector<float> referenceNetwork(const ExperimentConfig& c, int64_t steps, float rate) {
    const DataSplit data = loadDataSplit(c.dataset);
    const ParamLayout one(modelArchitecture(c.model, data.inputShape(), data.classes), 1);
    const std::vector<float> x = data.normalization.apply(data.train);
    TrainingProblem p;
    p.layout = one;
    p.activation = c.model.activation;
    p.trainX = x.data();
    p.trainY = data.train.y.data();
    p.trainRows = data.train.rows;
    p.likelihood = c.model.likelihood;
    p.plan.seed = c.ensemble.seed;
    p.plan.rows = static_cast<uint32_t>(data.train.rows);
    p.plan.batch = static_cast<uint32_t>(c.training.batchSize);
    p.plan.mode = BootstrapMode::None;
    const OptimizerConfig& o = c.optimizer;
    p.rules = {makeRule(o.kind, o.lr[0], o.weightDecay[0], o.momentum[0], o.beta1, o.beta2, o.eps)};
    p.dropout = rate;
    p.dropoutSeed = c.ensemble.seed;
    CpuBackend backend(1);
    backend.bind(p);
    std::vector<float> params(one.size());
    initParameters(one, c.ensemble.seed, params.data(), 0);
    backend.setParameters(params.data());
    const uint8_t active = 1;
    float loss = 0.0f;
    for (int64_t s = 0; s < steps; ++s) {
        backend.step(static_cast<uint64_t>(s), &active, &loss);
    }
    backend.parameters(params.data());
    return params;
}

}  // namespace

class TestMcDropout : public QObject {
    Q_OBJECT

    QTemporaryDir m_dir;

  private slots:
    void trainingIsOneNetworkWithDropout();
    void membersAreTheFoldedMasksAtEveryEvaluation();
    void exportStoresTheNetworkAndTheSeed();
    void resumeAndContinueAreBitExact();
    void refusals();
};

void TestMcDropout::trainingIsOneNetworkWithDropout() {
    constexpr int64_t steps = 30;
    const ExperimentConfig config = parseConfig(mcConfigJson(steps, 4));
    QCOMPARE(config.model.dropout, kRate);
    auto t = makeCpuTrainer(config);
    QCOMPARE(t->trainedLayout().members(), 1);
    QCOMPARE(t->members(), 4);
    t->runSteps(steps);
    const std::vector<float> trained = t->trainedParameters();
    QVERIFY(sameBits(trained, referenceNetwork(config, steps, static_cast<float>(kRate))));
    // The dropout matters: without it the same network trains to other weights.
    QVERIFY(!sameBits(trained, referenceNetwork(config, steps, 0.0f)));
}

void TestMcDropout::membersAreTheFoldedMasksAtEveryEvaluation() {
    const ExperimentConfig config = parseConfig(mcConfigJson(30, 4));
    auto t = makeCpuTrainer(config);
    const Architecture& arch = t->layout().architecture();
    const DataSplit& data = t->data();
    std::vector<float> before;
    for (int64_t chunk : {0, 7, 23}) {
        t->runSteps(chunk);
        const std::vector<float> network = t->trainedParameters();
        const std::vector<float> folded = foldDropoutMasks(
            arch, network.data(), static_cast<float>(kRate), config.ensemble.seed, 4);
        const std::vector<float> members = t->parameters();
        QVERIFY(sameBits(members, folded));
        QVERIFY(members != before);  // the members follow the network
        before = members;
        QCOMPARE(t->membersTaken(), 0);
        // The trainer predicts those members: a CPU backend holding the folded members agrees.
        CpuBackend reference(1);
        TrainingProblem p;
        p.layout = t->layout();
        p.activation = config.model.activation;
        p.plan.batch = 1;
        p.rules.assign(4, makeRule(OptimizerKind::Sgd, 0.1, 0.0, 0.0, 0.0, 0.0, 0.0));
        reference.bind(p);
        reference.setParameters(folded.data());
        const std::vector<float> x = data.normalization.apply(data.test);
        std::vector<float> expected(static_cast<std::size_t>(4) * data.test.rows *
                                    t->layout().classes());
        reference.predictLogProbs(x.data(), data.test.rows, expected.data());
        QVERIFY(expected == t->predictTest().logProbs);
    }
    // Each member has its own boundary: the members' predictions differ pairwise.
    const std::vector<float> p = t->predictTest().logProbs;
    const std::size_t block = static_cast<std::size_t>(data.test.rows) * t->layout().classes();
    for (int a = 0; a < 4; ++a) {
        for (int b = a + 1; b < 4; ++b) {
            QVERIFY(std::memcmp(p.data() + a * block, p.data() + b * block,
                                block * sizeof(float)) != 0);
        }
    }
    const Evaluation e = t->evaluate();
    QCOMPARE(static_cast<int>(e.members.size()), 4);
}

void TestMcDropout::exportStoresTheNetworkAndTheSeed() {
    auto t = makeCpuTrainer(parseConfig(mcConfigJson(30, 4)));
    t->runSteps(30);
    const std::string path = m_dir.filePath("mc.safetensors").toStdString();
    exportEnsemble(path, *t);
    const SafetensorsFile file = readSafetensors(path);
    QCOMPARE(file.metadata.at("method"), std::string("mc_dropout"));
    QCOMPARE(file.metadata.at("format_version"), std::string("2"));
    QCOMPARE(json::parse(file.metadata.at("dropout")).get<double>(), kRate);
    QCOMPARE(file.metadata.at("dropout_seed"), std::string("7"));
    // What the method has: one network, not K folded copies.
    QVERIFY((file.get("layers.0.weight").shape == std::vector<int64_t>{1, 12, 2}));
    QVERIFY((file.get("layers.1.bias").shape == std::vector<int64_t>{1, 10}));
    QVERIFY(file.get("layers.1.weight").f32().size() == std::size_t{12 * 10});
    QVERIFY(file.find("trained.0.weight") == nullptr);

    const LoadedEnsemble e = importEnsemble(path);
    QVERIFY(e.method == EnsembleMethod::McDropout);
    QCOMPARE(e.layout.members(), 4);
    QVERIFY(sameBits(e.network, t->trainedParameters()));
    QVERIFY(sameBits(e.params, t->parameters()));  // the masks regenerated from the seed
    const DataSplit& data = t->data();
    const std::vector<float> loaded = predictLogProbs(e, data.test.x.data(), data.test.rows);
    QVERIFY(loaded == t->predictRaw(data.test.x.data(), data.test.rows).logProbs);

    // The npz holds the same tensors and metadata.
    const std::string npz = m_dir.filePath("mc.npz").toStdString();
    exportEnsemble(npz, *t);
    QVERIFY(QFileInfo(QString::fromStdString(npz)).size() > 0);

    // The masks come from the stored seed: another seed gives other members.
    SafetensorsFile other = file;
    other.metadata["dropout_seed"] = "8";
    const LoadedEnsemble reseeded = importEnsemble(other);
    QVERIFY(sameBits(reseeded.network, e.network));
    QVERIFY(!sameBits(reseeded.params, e.params));
    QVERIFY(sameBits(reseeded.params, foldDropoutMasks(e.layout.architecture(), e.network.data(),
                                                       static_cast<float>(kRate), 8, 4)));
    SafetensorsFile noSeed = file;
    noSeed.metadata.erase("dropout_seed");
    QVERIFY_THROWS_EXCEPTION(DataError, importEnsemble(noSeed));
    SafetensorsFile badSeed = file;
    badSeed.metadata["dropout_seed"] = "-1";
    QVERIFY_THROWS_EXCEPTION(DataError, importEnsemble(badSeed));
    SafetensorsFile otherRate = file;
    otherRate.metadata["dropout"] = "0.5";
    QVERIFY_THROWS_EXCEPTION(DataError, importEnsemble(otherRate));
}

void TestMcDropout::resumeAndContinueAreBitExact() {
    constexpr int64_t steps = 30;
    const ExperimentConfig config = parseConfig(mcConfigJson(steps, 3));
    auto straight = makeCpuTrainer(config);
    straight->runSteps(steps);

    auto first = makeCpuTrainer(config);
    first->runSteps(11);
    const std::string path = m_dir.filePath("mc-ckpt.safetensors").toStdString();
    writeCheckpoint(path, *first, {});
    const Checkpoint checkpoint = readCheckpoint(path);
    QCOMPARE(checkpoint.state.step, int64_t(11));
    QVERIFY(sameBits(checkpoint.state.trained, first->trainedParameters()));
    QVERIFY(sameBits(checkpoint.state.params, first->parameters()));
    auto resumed = makeCpuTrainer(resumeConfig(checkpoint, {}));
    resumeTrainer(*resumed, checkpoint);
    resumed->runSteps(steps);
    QCOMPARE(resumed->step(), steps);
    const std::string diff =
        trainingStateDifference(straight->trainingState(), resumed->trainingState());
    QVERIFY2(diff.empty(), diff.c_str());

    // Continue: the length is not part of the method's plan, so 30 steps then 10 more equal
    // 40 straight.
    QVERIFY(straight->lengthChangeable());
    straight->setTotalSteps(steps + 10);
    straight->runSteps(10);
    json longer = mcConfigJson(steps + 10, 3);
    auto direct = makeCpuTrainer(parseConfig(longer));
    direct->runSteps(steps + 10);
    QVERIFY(sameBits(straight->parameters(), direct->parameters()));
    // A resume that changes the length is fine too.
    (void)resumeConfig(checkpoint, {"training.steps=80"});
}

void TestMcDropout::refusals() {
    const auto refused = [](const char* key, const json& value, const std::string& expectKey) {
        json root = mcConfigJson();
        const std::string k = key;
        const auto dot = k.find('.');
        root[k.substr(0, dot)][k.substr(dot + 1)] = value;
        expectConfigError([&] { (void)parseConfig(root); }, expectKey);
    };
    refused("model.dropout", 0.0, "model.dropout");
    refused("model.dropout", 1.0, "model.dropout");
    refused("model.dropout", -0.1, "model.dropout");
    refused("model.dropout", "0.1", "model.dropout");
    refused("ensemble.bootstrap", "resample", "ensemble.bootstrap");
    refused("ensemble.bootstrap", "poisson", "ensemble.bootstrap");
    refused("optimizer.lr", json{0.01, 0.02, 0.03, 0.04}, "optimizer.lr");
    refused("backend.mesh", json{{"ensemble", 2}, {"data", 1}}, "backend.mesh");
    // model.dropout applies only to mc_dropout.
    json independent = mcConfigJson();
    independent["ensemble"]["method"] = "independent";
    expectConfigError([&] { (void)parseConfig(independent); }, "model.dropout");
    independent["model"].erase("dropout");
    QCOMPARE(parseConfig(independent).model.dropout, 0.0);
    // The default rate.
    json byDefault = mcConfigJson();
    byDefault["model"].erase("dropout");
    QCOMPARE(parseConfig(byDefault).model.dropout, 0.1);
    // The data axis is fine.
    json data = mcConfigJson();
    data["backend"]["mesh"] = json{{"ensemble", 1}, {"data", 2}};
    (void)parseConfig(data);

    // Live: one learning rate for the one network applies; a per-member list does not.
    auto t = makeCpuTrainer(parseConfig(mcConfigJson()));
    t->runSteps(3);
    t->changeHyperparameters({{"optimizer.lr", 0.01}});
    QCOMPARE(t->rules().size(), std::size_t{4});
    try {
        t->changeHyperparameters({{"optimizer.lr", json::array({0.01, 0.02, 0.03, 0.04})}});
        QFAIL("per-member lr accepted");
    } catch (const ConfigError& e) {
        QVERIFY2(std::string(e.what()).find("optimizer.lr") != std::string::npos, e.what());
    }
}

QTEST_GUILESS_MAIN(TestMcDropout)

#include "tst_mc_dropout.moc"
