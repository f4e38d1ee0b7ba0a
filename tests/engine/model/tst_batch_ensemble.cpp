// BatchEnsemble (Wen et al. 2020; model/batch_ensemble.h, backend/batch_ensemble_backend.h): the
// chain rule against central finite differences of the members' mean loss (dense and conv
// layers, own bootstrap batches), the backends' gradient() against their own step, r = s = 1
// with equal biases equals K copies of one network, one trainer step against the update rule by
// hand, the export that stores the shared and fast weights (members expanded on reading,
// predict unchanged), a bit-exact resume and the refusals.
#include <QtTest/QtTest>

#include <algorithm>
#include <barrier>
#include <cmath>
#include <cstring>
#include <memory>
#include <thread>

#include "backend/batch_ensemble_backend.h"
#include "backend/cpu/cpu_backend.h"
#include "core/errors.h"
#include "io/checkpoint.h"
#include "io/model_io.h"
#include "io/safetensors.h"
#include "math/philox.h"
#include "model/batch_ensemble.h"
#include "optim/update_rules.h"
#include "support/backend_test_problem.h"
#include "support/engine_test_support.h"
#include "train/trainer.h"

using namespace ensemble;
using ensemble::test::conv;
using ensemble::test::dense;
using ensemble::test::expectConfigError;
using ensemble::test::makeCpuTrainer;
using ensemble::test::pool;
using ensemble::test::sameBits;
using ensemble::test::trainingStateDifference;
using nlohmann::json;

namespace {

// The suites' small spirals run (n = 200, a 12-10 MLP) as BatchEnsemble with resampled batches,
// at one learning rate with weight decay.
json beConfigJson(int64_t steps = 30, int members = 4) {
    json root = ensemble::test::smallSpiralsJson(
        R"({"dataset": {"n": 200}, "model": {"hidden": [12, 10]},
            "ensemble": {"method": "batchensemble", "bootstrap": "resample", "seed": 7},
            "optimizer": {"lr": 0.02, "weight_decay": 0.001}})");
    root["ensemble"]["members"] = members;
    root["training"]["steps"] = steps;
    return root;
}

float uniform(uint64_t i, float lo, float hi) {
    const Philox4x32 r = philoxDraw(99, RngPurpose::DataGen, 5, i);
    return lo + (hi - lo) * uniformFloat(r.v[0]);
}

// A K-member problem on random data: `rows` inputs of the architecture, `classes` labels.
struct RandomProblem {
    std::vector<float> x;
    std::vector<int32_t> y;
    TrainingProblem problem;
};

RandomProblem randomProblem(const ParamLayout& layout, int rows, BootstrapMode mode,
                            OptimizerRule rule) {
    RandomProblem p;
    const int d = layout.inputs();
    p.x.resize(static_cast<std::size_t>(rows) * d);
    for (std::size_t i = 0; i < p.x.size(); ++i) {
        p.x[i] = uniform(i, -1.0f, 1.0f);
    }
    for (int i = 0; i < rows; ++i) {
        p.y.push_back(static_cast<int32_t>(i % layout.classes()));
    }
    TrainingProblem& t = p.problem;
    t.layout = layout;
    t.activation = Activation::Tanh;
    t.trainX = p.x.data();
    t.trainY = p.y.data();
    t.trainRows = rows;
    t.plan.seed = 11;
    t.plan.rows = static_cast<uint32_t>(rows);
    t.plan.batch = 8;
    t.plan.mode = mode;
    t.rules.assign(static_cast<std::size_t>(layout.members()), rule);
    return p;
}

// Fast weights away from +-1 and biases that differ, so every factor of the chain rule counts.
std::vector<float> randomTheta(const BatchEnsembleLayout& be) {
    std::vector<float> theta(be.size());
    batchEnsembleInit(be, 5, theta.data());
    for (int l = 0; l < be.layerCount(); ++l) {
        const BatchEnsembleLayout::Layer& b = be.layer(l);
        const std::size_t fast = static_cast<std::size_t>(be.members()) * (b.inUnits + b.out);
        for (std::size_t i = 0; i < fast; ++i) {
            theta[b.fastIn + i] *= uniform(1000 + l * 100 + i, 0.5f, 1.5f);
        }
    }
    return theta;
}

}  // namespace

class TestBatchEnsemble : public QObject {
    Q_OBJECT

    QTemporaryDir m_dir;

  private slots:
    void layoutCountsOneNetworkPlusFastWeights();
    void chainRuleMatchesFiniteDifferences_data();
    void chainRuleMatchesFiniteDifferences();
    void gradientIsWhatTheStepUses_data();
    void gradientIsWhatTheStepUses();
    void unitFastWeightsAreCopiesOfOneNetwork();
    void trainerStepIsTheRuleOnTheChainRule();
    void membersDifferAndLearn();
    void exportStoresSharedAndFastWeights();
    void resumeIsBitExact();
    void dataAxisReplicasAgreeWithOneProcess();
    void refusals();
};

void TestBatchEnsemble::layoutCountsOneNetworkPlusFastWeights() {
    // 2 -> 12 -> 10 -> 3, K = 4: one network's weights, per member in + 2 out per layer.
    const BatchEnsembleLayout be(ParamLayout(std::vector<int>{2, 12, 10, 3}, 4));
    const std::size_t weights = 2 * 12 + 12 * 10 + 10 * 3;
    const std::size_t perMember = (2 + 2 * 12) + (12 + 2 * 10) + (10 + 2 * 3);
    QCOMPARE(be.size(), weights + 4 * perMember);
    // A conv's fast weights are per channel: [K, C_in] and [K, F].
    const Architecture arch =
        Architecture::stack({2, 6, 6}, {conv(3, 3), pool(PoolKind::Avg, 2), dense(5)}, 4);
    const BatchEnsembleLayout cnn(ParamLayout(arch, 2));
    QCOMPARE(cnn.layer(0).inUnits, 2);
    QCOMPARE(cnn.layer(0).unitSpan, 9);
    QCOMPARE(cnn.layer(1).inUnits, 3 * 3 * 3);  // the flattened [3, 3, 3] positions
    const std::vector<TrainedTensor> tensors = batchEnsembleTensors(cnn);
    QCOMPARE(tensors.size(), std::size_t{12});
    QVERIFY((tensors[0].shape == std::vector<int64_t>{3, 2, 3, 3}));
    QVERIFY((tensors[1].shape == std::vector<int64_t>{2, 2}));
    QVERIFY((tensors[2].shape == std::vector<int64_t>{2, 3}));
    QVERIFY((tensors[3].shape == std::vector<int64_t>{2, 3}));
    std::size_t total = 0;
    for (const TrainedTensor& t : tensors) {
        QCOMPARE(t.offset, total);
        total += t.count;
    }
    QCOMPARE(total, cnn.size());
}

void TestBatchEnsemble::chainRuleMatchesFiniteDifferences_data() {
    QTest::addColumn<int>("shape");
    QTest::newRow("mlp, resample") << 0;
    QTest::newRow("cnn, poisson") << 1;
}

void TestBatchEnsemble::chainRuleMatchesFiniteDifferences() {
    QFETCH(int, shape);
    const ParamLayout layout =
        shape == 0 ? ParamLayout(std::vector<int>{3, 6, 5, 3}, 3)
                   : ParamLayout(Architecture::stack(
                                     {2, 6, 6}, {conv(3, 3), pool(PoolKind::Avg, 2), dense(4)}, 3),
                                 3);
    const BatchEnsembleLayout be(layout);
    RandomProblem p =
        randomProblem(layout, 24, shape == 0 ? BootstrapMode::Resample : BootstrapMode::Poisson,
                      makeRule(OptimizerKind::Sgd, 0.1, 0.0, 0.0));
    CpuBackend backend(2);
    backend.bind(p.problem);
    std::vector<float> theta = randomTheta(be);
    const std::vector<uint8_t> active(3, 1);
    std::vector<float> members(layout.size());
    std::vector<float> grads(layout.size());
    std::vector<float> losses(3);
    constexpr uint64_t step = 3;
    // The ensemble's loss at theta, the mean of the members', in double from the backend's floats.
    const auto loss = [&](const std::vector<float>& t) {
        batchEnsembleExpand(be, t.data(), members.data());
        backend.setParameters(members.data());
        backend.gradient(step, active.data(), grads.data(), losses.data());
        return (static_cast<double>(losses[0]) + losses[1] + losses[2]) / 3.0;
    };
    (void)loss(theta);
    std::vector<float> analytic(be.size());
    batchEnsembleGradient(be, theta.data(), grads.data(), active.data(), analytic.data());
    // Every fast weight and bias and a spread of shared weights.
    int checked = 0;
    double worst = 0.0;
    for (std::size_t i = 0; i < be.size(); i += (i % 7 == 0 ? 1 : 3)) {
        const float h = 1e-2f * std::max(1.0f, std::fabs(theta[i]));
        std::vector<float> plus = theta;
        std::vector<float> minus = theta;
        plus[i] += h;
        minus[i] -= h;
        const double fd = (loss(plus) - loss(minus)) / (static_cast<double>(plus[i]) - minus[i]);
        const double err = std::fabs(fd - analytic[i]) / std::max(0.05, std::fabs(fd));
        worst = std::max(worst, err);
        QVERIFY2(err < 2e-2, qPrintable(QString("theta[%1]: finite difference %2, chain rule %3")
                                            .arg(i)
                                            .arg(fd)
                                            .arg(analytic[i])));
        ++checked;
    }
    QVERIFY(checked > 50);
    qInfo("%d entries, worst relative error %.2e", checked, worst);
}

void TestBatchEnsemble::gradientIsWhatTheStepUses_data() {
    QTest::addColumn<int>("shape");
    QTest::newRow("mlp") << 0;
    QTest::newRow("cnn") << 1;
}

void TestBatchEnsemble::gradientIsWhatTheStepUses() {
    // SGD without momentum or decay: step() makes p - lr * g with the g gradient() gives, bit for
    // bit; member 1 inactive keeps its parameters and has a zero gradient.
    QFETCH(int, shape);
    const ParamLayout layout =
        shape == 0 ? ParamLayout(std::vector<int>{3, 7, 3}, 3)
                   : ParamLayout(Architecture::stack({1, 6, 6}, {conv(2, 3), dense(4)}, 3), 3);
    constexpr float lr = 0.25f;
    RandomProblem p = randomProblem(layout, 20, BootstrapMode::Resample,
                                    makeRule(OptimizerKind::Sgd, lr, 0.0, 0.0));
    CpuBackend a(2);
    CpuBackend b(1);
    a.bind(p.problem);
    b.bind(p.problem);
    std::vector<float> params(layout.size());
    initParameters(layout, 4, params.data());
    a.setParameters(params.data());
    b.setParameters(params.data());
    const uint8_t active[3] = {1, 0, 1};
    std::vector<float> grads(layout.size(), 7.0f);
    float gradLosses[3];
    float stepLosses[3];
    a.gradient(5, active, grads.data(), gradLosses);
    b.step(5, active, stepLosses);
    QVERIFY(std::memcmp(gradLosses, stepLosses, sizeof(gradLosses)) == 0);
    std::vector<float> after(layout.size());
    a.parameters(after.data());
    QVERIFY(sameBits(after, params));  // gradient() leaves the parameters
    QCOMPARE(a.optimizerState().updates, uint64_t{0});
    std::vector<float> expected = params;
    for (std::size_t i = 0; i < expected.size(); ++i) {
        expected[i] = expected[i] - lr * grads[i];
    }
    b.parameters(after.data());
    QVERIFY(sameBits(after, expected));
    for (int l = 0; l < layout.layerCount(); ++l) {
        const LayerSlot& s = layout.layer(l);
        for (int i = 0; i < s.out * s.in; ++i) {
            QCOMPARE(grads[layout.weightOffset(l, 1) + static_cast<std::size_t>(i)], 0.0f);
        }
    }
    // No member active: zero gradients and losses, nothing read from the (empty) packed sums.
    const uint8_t none[3] = {0, 0, 0};
    CpuBackend c(1);
    c.bind(p.problem);
    c.setParameters(params.data());
    std::fill(grads.begin(), grads.end(), 7.0f);
    c.gradient(5, none, grads.data(), gradLosses);
    QVERIFY(std::all_of(grads.begin(), grads.end(), [](float g) { return g == 0.0f; }));
    QCOMPARE(gradLosses[0] + gradLosses[1] + gradLosses[2], 0.0f);
}

void TestBatchEnsemble::unitFastWeightsAreCopiesOfOneNetwork() {
    const ParamLayout layout(
        Architecture::stack({1, 6, 6}, {conv(3, 3), pool(PoolKind::Avg, 2), dense(5)}, 3), 4);
    const BatchEnsembleLayout be(layout);
    std::vector<float> theta = randomTheta(be);
    const ParamLayout one(layout.architecture(), 1);
    std::vector<float> network(one.size());
    for (int l = 0; l < be.layerCount(); ++l) {
        const BatchEnsembleLayout::Layer& b = be.layer(l);
        std::fill_n(theta.begin() + static_cast<std::ptrdiff_t>(b.fastIn),
                    static_cast<std::size_t>(4) * (b.inUnits + b.out), 1.0f);
        for (int k = 1; k < 4; ++k) {
            std::copy_n(theta.begin() + static_cast<std::ptrdiff_t>(b.bias), b.out,
                        theta.begin() + static_cast<std::ptrdiff_t>(b.bias) + k * b.out);
        }
        std::copy_n(theta.begin() + static_cast<std::ptrdiff_t>(b.weight),
                    static_cast<std::size_t>(b.out) * b.in,
                    network.begin() + static_cast<std::ptrdiff_t>(one.weightOffset(l, 0)));
        std::copy_n(theta.begin() + static_cast<std::ptrdiff_t>(b.bias), b.out,
                    network.begin() + static_cast<std::ptrdiff_t>(one.biasOffset(l, 0)));
    }
    std::vector<float> members(layout.size());
    batchEnsembleExpand(be, theta.data(), members.data());
    for (int k = 0; k < 4; ++k) {
        for (int l = 0; l < layout.layerCount(); ++l) {
            const LayerSlot& s = layout.layer(l);
            QVERIFY(std::memcmp(members.data() + layout.weightOffset(l, k),
                                network.data() + one.weightOffset(l, 0),
                                sizeof(float) * s.out * s.in) == 0);
        }
    }
    // And they predict as that network.
    const RandomProblem p =
        randomProblem(layout, 10, BootstrapMode::None, makeRule(OptimizerKind::Sgd, 0.1, 0, 0));
    CpuBackend k4(1);
    CpuBackend k1(1);
    TrainingProblem predict;
    predict.layout = layout;
    predict.activation = Activation::Tanh;
    predict.plan.batch = 1;
    predict.rules.assign(4, makeRule(OptimizerKind::Sgd, 0.1, 0, 0));
    k4.bind(predict);
    predict.layout = one;
    predict.rules.resize(1);
    k1.bind(predict);
    k4.setParameters(members.data());
    k1.setParameters(network.data());
    std::vector<float> out4(static_cast<std::size_t>(4) * 10 * 3);
    std::vector<float> out1(static_cast<std::size_t>(10) * 3);
    k4.predictLogProbs(p.x.data(), 10, out4.data());
    k1.predictLogProbs(p.x.data(), 10, out1.data());
    for (int k = 0; k < 4; ++k) {
        QVERIFY(std::memcmp(out4.data() + k * 30, out1.data(), 30 * sizeof(float)) == 0);
    }
}

void TestBatchEnsemble::trainerStepIsTheRuleOnTheChainRule() {
    // One trainer step with SGD (no momentum, no decay): theta - lr * dtheta, dtheta the chain
    // rule of the members' gradients on their own (resampled) batches at step 0.
    json root = beConfigJson(1, 3);
    root["optimizer"] = json{{"kind", "sgd"}, {"lr", 0.5}, {"momentum", 0.0}};
    const ExperimentConfig config = parseConfig(root);
    auto t = makeCpuTrainer(config);
    const BatchEnsembleLayout be(t->layout());
    std::vector<float> theta(be.size());
    batchEnsembleInit(be, config.ensemble.seed, theta.data());
    QVERIFY(sameBits(t->trainedParameters(), theta));
    // The initial fast weights are random signs.
    int negative = 0;
    for (int l = 0; l < be.layerCount(); ++l) {
        const BatchEnsembleLayout::Layer& b = be.layer(l);
        for (std::size_t i = 0; i < static_cast<std::size_t>(3) * (b.inUnits + b.out); ++i) {
            const float v = theta[b.fastIn + i];
            QVERIFY(v == 1.0f || v == -1.0f);
            negative += v < 0.0f ? 1 : 0;
        }
    }
    QVERIFY(negative > 10);

    const DataSplit& data = t->data();
    const std::vector<float> x = data.normalization.apply(data.train);
    TrainingProblem p;
    p.layout = t->layout();
    p.activation = config.model.activation;
    p.trainX = x.data();
    p.trainY = data.train.y.data();
    p.trainRows = data.train.rows;
    p.plan.seed = config.ensemble.seed;
    p.plan.rows = static_cast<uint32_t>(data.train.rows);
    p.plan.batch = static_cast<uint32_t>(config.training.batchSize);
    p.plan.mode = BootstrapMode::Resample;
    p.rules.assign(3, makeRule(OptimizerKind::Sgd, 0.5, 0.0, 0.0));
    CpuBackend reference(1);
    reference.bind(p);
    std::vector<float> members(t->layout().size());
    batchEnsembleExpand(be, theta.data(), members.data());
    reference.setParameters(members.data());
    std::vector<float> grads(members.size());
    const std::vector<uint8_t> active(3, 1);
    std::vector<float> losses(3);
    reference.gradient(0, active.data(), grads.data(), losses.data());
    std::vector<float> dtheta(be.size());
    batchEnsembleGradient(be, theta.data(), grads.data(), active.data(), dtheta.data());
    for (std::size_t i = 0; i < theta.size(); ++i) {
        theta[i] = theta[i] - 0.5f * dtheta[i];
    }
    t->runSteps(1);
    QVERIFY(sameBits(t->trainedParameters(), theta));
    batchEnsembleExpand(be, theta.data(), members.data());
    QVERIFY(sameBits(t->parameters(), members));
}

void TestBatchEnsemble::membersDifferAndLearn() {
    auto t = makeCpuTrainer(parseConfig(beConfigJson(300, 4)));
    const Evaluation before = t->evaluate();
    t->runSteps(300);
    const Evaluation after = t->evaluate();
    QVERIFY2(after.ensembleTest.loss < 0.8 * before.ensembleTest.loss,
             qPrintable(QString("test NLL %1 -> %2")
                            .arg(before.ensembleTest.loss)
                            .arg(after.ensembleTest.loss)));
    QCOMPARE(static_cast<int>(after.members.size()), 4);
    const std::vector<float> p = t->predictTest().logProbs;
    const std::size_t block = static_cast<std::size_t>(t->data().test.rows) * t->layout().classes();
    for (int a = 0; a < 4; ++a) {
        for (int b = a + 1; b < 4; ++b) {
            QVERIFY(std::memcmp(p.data() + a * block, p.data() + b * block,
                                block * sizeof(float)) != 0);
        }
    }
}

void TestBatchEnsemble::exportStoresSharedAndFastWeights() {
    auto t = makeCpuTrainer(parseConfig(beConfigJson(30, 4)));
    t->runSteps(30);
    const std::string path = m_dir.filePath("be.safetensors").toStdString();
    exportEnsemble(path, *t);
    const SafetensorsFile file = readSafetensors(path);
    QCOMPARE(file.metadata.at("method"), std::string("batchensemble"));
    QCOMPARE(file.metadata.at("format_version"), std::string("2"));
    QVERIFY((file.get("layers.0.weight").shape == std::vector<int64_t>{12, 2}));
    QVERIFY((file.get("layers.0.fast_in").shape == std::vector<int64_t>{4, 2}));
    QVERIFY((file.get("layers.0.fast_out").shape == std::vector<int64_t>{4, 12}));
    QVERIFY((file.get("layers.0.bias").shape == std::vector<int64_t>{4, 12}));
    QVERIFY((file.get("layers.2.weight").shape == std::vector<int64_t>{2, 10}));
    QVERIFY(file.find("trained.0.weight") == nullptr);

    const LoadedEnsemble e = importEnsemble(path);
    QVERIFY(e.method == EnsembleMethod::BatchEnsemble);
    QCOMPARE(e.layout.members(), 4);
    QVERIFY(sameBits(e.network, t->trainedParameters()));
    QVERIFY(sameBits(e.params, t->parameters()));
    const DataSplit& data = t->data();
    const std::vector<float> loaded = predictLogProbs(e, data.test.x.data(), data.test.rows);
    QVERIFY(loaded == t->predictRaw(data.test.x.data(), data.test.rows).logProbs);

    const std::string npz = m_dir.filePath("be.npz").toStdString();
    exportEnsemble(npz, *t);
    QVERIFY(QFileInfo(QString::fromStdString(npz)).size() > 0);

    // A fast tensor of the wrong shape is refused with its name.
    SafetensorsFile bad = file;
    for (Tensor& tensor : bad.tensors) {
        if (tensor.name == "layers.1.fast_in") {
            tensor.shape = {2, 24};
        }
    }
    try {
        (void)importEnsemble(bad);
        QFAIL("a wrong fast_in shape was read");
    } catch (const DataError& err) {
        QVERIFY2(std::string(err.what()).find("layers.1.fast_in") != std::string::npos, err.what());
    }
}

void TestBatchEnsemble::resumeIsBitExact() {
    constexpr int64_t steps = 30;
    const ExperimentConfig config = parseConfig(beConfigJson(steps, 3));
    auto straight = makeCpuTrainer(config);
    straight->runSteps(steps);

    auto first = makeCpuTrainer(config);
    first->runSteps(11);
    const std::string path = m_dir.filePath("be-ckpt.safetensors").toStdString();
    writeCheckpoint(path, *first, {});
    const Checkpoint checkpoint = readCheckpoint(path);
    QCOMPARE(checkpoint.state.step, int64_t(11));
    QVERIFY(sameBits(checkpoint.state.trained, first->trainedParameters()));
    auto resumed = makeCpuTrainer(resumeConfig(checkpoint, {}));
    resumeTrainer(*resumed, checkpoint);
    resumed->runSteps(steps);
    const std::string diff =
        trainingStateDifference(straight->trainingState(), resumed->trainingState());
    QVERIFY2(diff.empty(), diff.c_str());
    // Continue trains on.
    QVERIFY(straight->lengthChangeable());
}

void TestBatchEnsemble::dataAxisReplicasAgreeWithOneProcess() {
    // Two replicas of the data axis, each with half of every member's batch and the gradients
    // summed between them (as MpiCollective sums them, here in one process), train the same
    // shared and fast weights, identical on both replicas and equal to one process's up to the
    // order of the float sums.
    const ParamLayout layout(std::vector<int>{3, 8, 3}, 3);
    const BatchEnsembleLayout be(layout);
    RandomProblem p = randomProblem(layout, 40, BootstrapMode::Resample,
                                    makeRule(OptimizerKind::Adam, 0.01, 0.0, 0.0));
    const std::vector<float> theta = randomTheta(be);
    const std::vector<uint8_t> active(3, 1);
    constexpr int steps = 20;
    const auto train = [&](BatchEnsembleBackend& b) {
        std::vector<float> losses(3);
        for (int i = 0; i < steps; ++i) {
            b.step(static_cast<uint64_t>(i), active.data(), losses.data());
        }
        std::vector<float> out(be.size());
        b.parameters(out.data());
        return out;
    };
    BatchEnsembleBackend one(std::make_unique<CpuBackend>(1));
    one.bind(p.problem);
    one.setParameters(theta.data());
    const std::vector<float> reference = train(one);

    std::vector<float*> buffers(2);
    std::barrier sync(2);
    std::vector<float> replica[2];
    std::vector<std::thread> threads;
    for (int r = 0; r < 2; ++r) {
        threads.emplace_back([&, r] {
            TrainingProblem problem = p.problem;
            problem.shard.index = r;
            problem.shard.count = 2;
            problem.shard.sum = [&, r](float* values, std::size_t n) {
                buffers[static_cast<std::size_t>(r)] = values;
                sync.arrive_and_wait();
                std::vector<float> total(buffers[0], buffers[0] + n);
                for (std::size_t i = 0; i < n; ++i) {
                    total[i] += buffers[1][i];
                }
                sync.arrive_and_wait();
                std::copy(total.begin(), total.end(), values);
            };
            BatchEnsembleBackend b(std::make_unique<CpuBackend>(1));
            b.bind(problem);
            b.setParameters(theta.data());
            replica[r] = train(b);
        });
    }
    for (std::thread& t : threads) {
        t.join();
    }
    QVERIFY(sameBits(replica[0], replica[1]));
    QVERIFY(!sameBits(replica[0], theta));
    double worst = 0.0;
    for (std::size_t i = 0; i < reference.size(); ++i) {
        worst = std::max(worst, static_cast<double>(std::fabs(replica[0][i] - reference[i])));
    }
    qInfo("largest difference from one process after %d steps: %.2e", steps, worst);
    QVERIFY2(worst < 1e-4, qPrintable(QString::number(worst)));
}

void TestBatchEnsemble::refusals() {
    const auto refused = [](const char* key, const json& value, const std::string& expectKey) {
        json root = beConfigJson();
        const std::string k = key;
        const auto dot = k.find('.');
        root[k.substr(0, dot)][k.substr(dot + 1)] = value;
        expectConfigError([&] { (void)parseConfig(root); }, expectKey);
    };
    refused("optimizer.lr", json{0.01, 0.02, 0.03, 0.04}, "optimizer.lr");
    refused("optimizer.weight_decay", json{0.0, 0.1, 0.0, 0.0}, "optimizer.weight_decay");
    refused("backend.mesh", json{{"ensemble", 2}, {"data", 1}}, "backend.mesh");
    refused("model.dropout", 0.2, "model.dropout");
    // Every bootstrap mode applies: each member sees its own batches.
    for (const char* mode : {"none", "resample", "poisson"}) {
        json root = beConfigJson();
        root["ensemble"]["bootstrap"] = mode;
        QVERIFY(parseConfig(root).ensemble.method == EnsembleMethod::BatchEnsemble);
    }
    json data = beConfigJson();
    data["backend"]["mesh"] = json{{"ensemble", 1}, {"data", 2}};
    (void)parseConfig(data);
}

QTEST_GUILESS_MAIN(TestBatchEnsemble)

#include "tst_batch_ensemble.moc"
