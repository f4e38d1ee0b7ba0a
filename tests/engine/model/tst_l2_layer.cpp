// A dense layer's L2 penalty ({"type": "dense", "units": U, "l2": c}, Keras's l2(c)): its
// parsing and refusals, the training gradient of the CPU conv path (recovered from one SGD
// step) against central differences in double of the reference loss plus c * sum(W^2), the
// MLP path's and the conv path's step against the same step without the penalty (2c * W on
// that layer's weights, nothing on its bias or elsewhere), the emulated CUDA program against
// the CPU backend with a penalty, and l2 = 0 training bit for bit as a layer without the key.
#include <QtTest/QtTest>

#include <cmath>
#include <cstdint>
#include <vector>

#include "backend/cpu/conv_net.h"
#include "backend/cpu/cpu_backend.h"
#include "backend/cuda/conv_program.h"
#include "config/config.h"
#include "core/errors.h"
#include "math/philox.h"
#include "model/mlp.h"
#include "support/backend_test_problem.h"
#include "support/cpu_run.h"
#include "support/cuda_emulation.h"
#include "support/engine_test_support.h"
#include "support/reference_network.h"
#include "support/test_support.h"

using namespace ensemble;
using namespace ensemble::gpu;
using namespace ensemble::test::emulation;
using nlohmann::json;
using test::conv;
using test::initialParameters;
using test::memberParams;
using test::pool;

namespace {

LayerSpec denseL2(int units, double l2) {
    LayerSpec s = test::dense(units);
    s.l2 = l2;
    return s;
}

using ensemble::test::cpuRun;

// `problem` with every member on plain SGD (no momentum, no weight decay) at `lr`.
TrainingProblem plainSgd(TrainingProblem problem, double lr) {
    for (OptimizerRule& r : problem.rules) {
        r = makeRule(OptimizerKind::Sgd, lr, 0.0, 0.0);
    }
    return problem;
}

}  // namespace

class TestL2Layer : public QObject {
    Q_OBJECT

  private Q_SLOTS:
    // "l2" round-trips on a dense layer (written only when > 0); a negative or non-numeric l2
    // names model.layers[i].l2; l2 on a conv, pool or dropout layer is an unknown field there;
    // batchensemble refuses it.
    void parsesAndRefuses();
    // The CPU conv path's training gradient (one SGD step, lr 1) against central differences
    // in double of the reference loss + c * sum(W^2) over the dense layer's weights.
    void gradientMatchesFiniteDifferences();
    // One SGD step with the penalty minus the same step without it: -lr * 2c * W on the
    // penalised weights, the very same bits everywhere else (MLP path and conv path).
    void stepAddsTwoCW_data();
    void stepAddsTwoCW();
    // The emulated CUDA program (step_elements.h's updateElement) follows the CPU backend.
    void emulatedCudaMatchesCpu();
    // l2 = 0 is the layer without the key: the same config and the same training, bit for bit.
    void zeroIsNoPenalty();
};

void TestL2Layer::parsesAndRefuses() {
    const json layers = json::parse(
        R"([{"type": "conv", "filters": 2, "kernel": 3}, {"type": "dense", "units": 4, "l2": 3.5},
            {"type": "dense", "units": 3}])");
    const std::vector<LayerSpec> parsed = parseLayers(layers, "model.layers");
    QCOMPARE(parsed[1].l2, 3.5);
    QCOMPARE(parsed[2].l2, 0.0);
    const json written = layersToJson(parsed);
    QCOMPARE(written[1]["l2"], json(3.5));
    QVERIFY(!written[2].contains("l2"));
    QCOMPARE(parseLayers(written, "model.layers"), parsed);
    const Architecture arch = Architecture::stack({1, 8, 8}, parsed, 3);
    QVERIFY(arch.hasL2());
    const ParamLayout layout(arch, 2);
    QCOMPARE(layout.layer(0).l2Gradient, 0.0f);
    QCOMPARE(layout.layer(1).l2Gradient, 7.0f);  // 2c
    QCOMPARE(layout.layer(2).l2Gradient, 0.0f);  // the implicit output layer

    for (const char* bad : {R"(-0.5)", R"("big")", R"(null)", R"(2e6)"}) {
        json l = layers;
        l[1]["l2"] = json::parse(bad);
        try {
            parseLayers(l, "model.layers");
            QFAIL(bad);
        } catch (const ConfigError& e) {
            QCOMPARE(e.key(), std::string("model.layers[1].l2"));
            QVERIFY2(std::string(e.what()).find("L2") != std::string::npos, e.what());
        }
    }
    for (const char* layer : {R"({"type": "conv", "filters": 2, "kernel": 3, "l2": 1})",
                              R"({"type": "pool", "kind": "max", "size": 2, "l2": 1})",
                              R"({"type": "dropout", "rate": 0.5, "l2": 1})"}) {
        json l = layers;
        l[0] = json::parse(layer);
        test::expectConfigError([&l] { parseLayers(l, "model.layers"); }, "model.layers[0].l2");
    }

    json config = loadConfigJson("mnist-active-cnn");
    QCOMPARE(parseConfig(config).model.layers[4].l2, 3.5);
    config["model"]["layers"][4]["l2"] = -1;
    test::expectConfigError([&config] { parseConfig(config); }, "model.layers[4].l2");
    config["model"]["layers"][4]["l2"] = 0.5;
    config["ensemble"]["method"] = "batchensemble";
    test::expectConfigError([&config] { parseConfig(config); }, "model.layers[4].l2");
}

void TestL2Layer::gradientMatchesFiniteDifferences() {
    const double c = 0.3;
    const Architecture arch =
        Architecture::stack({1, 8, 8}, {conv(3, 3), pool(PoolKind::Max, 2), denseL2(5, c)}, 3);
    const ParamLayout layout(arch, 2);
    std::vector<float> params = initialParameters(layout, 21);
    const int n = 37;  // two groups of the conv path (32 and 5)
    std::vector<float> x;
    std::vector<int32_t> y;
    std::vector<float> w;
    for (int i = 0; i < n * arch.inputs(); ++i) {
        x.push_back(
            4.0f *
                uniformFloat(philoxDraw(9, RngPurpose::DataGen, 0, static_cast<uint64_t>(i)).v[0]) -
            2.0f);
    }
    for (int r = 0; r < n; ++r) {
        y.push_back(r * 7 % 3);
        w.push_back(r % 5 == 0 ? 0.0f : 1.0f);
    }
    ConvNetCpu net;
    net.bind(layout, Activation::Tanh, n, 2);
    const std::vector<ConvMemberBatch> batches(2, ConvMemberBatch{x.data(), y.data(), w.data()});
    const std::vector<uint8_t> active = {1, 1};
    const std::vector<OptimizerRule> rules(2, makeRule(OptimizerKind::Sgd, 1.0, 0.0, 0.0));
    std::vector<float> after = params;
    std::vector<float> m1(params.size());
    std::vector<float> m2(params.size());
    std::vector<float> losses(2);
    net.train(batches.data(), false, active.data(), rules.data(), true, after.data(), m1.data(),
              m2.data(), losses.data());

    // Member 1, packed per layer [W_0, b_0, W_1, b_1, W_2, b_2]: the step moved it by -g.
    std::vector<double> p = memberParams(layout, 1, params.data());
    const std::vector<double> moved = memberParams(layout, 1, after.data());
    // The penalised block: layer 1's weights.
    std::size_t wBegin = 0;
    for (int l = 0; l < 1; ++l) {
        wBegin += static_cast<std::size_t>(layout.layer(l).out) * (layout.layer(l).in + 1);
    }
    const std::size_t wEnd =
        wBegin + static_cast<std::size_t>(layout.layer(1).out) * layout.layer(1).in;
    const auto loss = [&](const std::vector<double>& q) {
        double penalty = 0.0;
        for (std::size_t i = wBegin; i < wEnd; ++i) {
            penalty += q[i] * q[i];
        }
        return test::referenceLoss(arch, Activation::Tanh, q, x, y, w) + c * penalty;
    };
    double diff = 0.0;
    double diffWithout = 0.0;
    double norm = 0.0;
    const double h = 1e-6;
    for (std::size_t i = 0; i < p.size(); ++i) {
        const double g = p[i] - moved[i];
        const double keep = p[i];
        p[i] = keep + h;
        const double up = loss(p);
        p[i] = keep - h;
        const double down = loss(p);
        p[i] = keep;
        const double fd = (up - down) / (2 * h);
        const double penaltyTerm = i >= wBegin && i < wEnd ? 2.0 * c * keep : 0.0;
        diff += (g - fd) * (g - fd);
        diffWithout += (g - penaltyTerm - fd) * (g - penaltyTerm - fd);
        norm += fd * fd;
    }
    // The recovered gradient carries the float rounding of p - g (about 1e-7 of |p|).
    const double error = std::sqrt(diff / norm);
    QVERIFY2(error < 1e-4, qPrintable(QStringLiteral("relative gradient error %1").arg(error)));
    // The penalty is a large part of it: the step without it would be far off.
    const double without = std::sqrt(diffWithout / norm);
    QVERIFY2(without > 0.05, qPrintable(QString::number(without)));
}

void TestL2Layer::stepAddsTwoCW_data() {
    QTest::addColumn<bool>("withConv");
    QTest::newRow("dense only (the MLP path)") << false;
    QTest::newRow("conv, pool, dense (the conv path)") << true;
}

void TestL2Layer::stepAddsTwoCW() {
    QFETCH(bool, withConv);
    const double c = 0.25;
    const double lr = 0.5;
    std::vector<LayerSpec> layers = {test::dense(6), test::dense(5)};
    if (withConv) {
        layers = {conv(2, 3), pool(PoolKind::Avg, 2), test::dense(6), test::dense(5)};
    }
    const ImageProblem plain = makeImageProblem({1, 8, 8}, layers, BootstrapMode::None,
                                                OptimizerKind::Sgd, Activation::Relu, 2);
    QCOMPARE(plain.training.layout.isMlp(), !withConv);
    layers[layers.size() - 1].l2 = c;  // the last hidden dense: param layer 1 or 2
    ImageProblem penalised = plain;
    penalised.training.layout =
        ParamLayout(Architecture::stack({1, 8, 8}, layers, 3), plain.training.layout.members());
    const int l = withConv ? 2 : 1;
    QCOMPARE(penalised.training.layout.layer(l).l2Gradient, static_cast<float>(2 * c));
    const std::vector<float> init = initialParameters(plain.training.layout, 4);
    const std::vector<float> a = cpuRun(plainSgd(plain.training, lr), init, {0});
    const std::vector<float> b = cpuRun(plainSgd(penalised.training, lr), init, {0});
    const ParamLayout& layout = plain.training.layout;
    const std::size_t wBegin = layout.layer(l).weightOffset;
    const std::size_t wEnd = layout.layer(l).biasOffset;
    int moved = 0;
    for (std::size_t i = 0; i < init.size(); ++i) {
        if (i >= wBegin && i < wEnd) {
            const double expected = -lr * 2.0 * c * init[i];
            const double got = static_cast<double>(b[i]) - a[i];
            QVERIFY2(
                std::abs(got - expected) <= 1e-6 * (1.0 + std::abs(a[i])),
                qPrintable(
                    QStringLiteral("weight %1: %2, expected %3").arg(i).arg(got).arg(expected)));
            moved += got != 0.0 ? 1 : 0;
        } else {
            QVERIFY2(
                test::sameBits(std::vector<float>{a[i]}, std::vector<float>{b[i]}),
                qPrintable(QStringLiteral("parameter %1 outside the penalised weights").arg(i)));
        }
    }
    QVERIFY(moved > static_cast<int>(wEnd - wBegin) / 2);
}

void TestL2Layer::emulatedCudaMatchesCpu() {
    const std::vector<LayerSpec> layers = {conv(4, 3, 1, Padding::Valid), pool(PoolKind::Max, 2),
                                           denseL2(8, 0.05)};
    const ImageProblem p = makeImageProblem({1, 9, 9}, layers, BootstrapMode::None,
                                            OptimizerKind::Adam, Activation::Relu, 3);
    const ParamLayout& layout = p.training.layout;
    const std::vector<float> init = initialParameters(layout, 42);
    const auto cpu = cpuOracle(p.training, init);
    EmulatedConvCudaBackend emu(p.training, 16, false);
    emu.setParameters(init);
    const std::vector<uint64_t> steps = stepRange(0, 10);
    trainBoth(*cpu, emu, layout, init, steps, 1, 3, 6);
    if (QTest::currentTestFailed()) {
        return;
    }
    // The penalty matters: without it the same steps end elsewhere.
    TrainingProblem without = p.training;
    std::vector<LayerSpec> plainLayers = layers;
    plainLayers.back().l2 = 0.0;
    without.layout = ParamLayout(Architecture::stack({1, 9, 9}, plainLayers, 3), 3);
    const double fromPlain = test::nmse(cpuRun(without, init, steps), emu.params());
    QVERIFY2(fromPlain > 1e3 * test::kEmulatedParamNmse, qPrintable(QString::number(fromPlain)));
}

void TestL2Layer::zeroIsNoPenalty() {
    json with = loadConfigJson("mnist-active-cnn");
    json without = with;
    with["model"]["layers"][4]["l2"] = 0;
    without["model"]["layers"][4].erase("l2");
    QCOMPARE(parseConfig(with).model.layers, parseConfig(without).model.layers);
    QCOMPARE(layersToJson(parseConfig(with).model.layers),
             layersToJson(parseConfig(without).model.layers));
    std::vector<LayerSpec> layers = {conv(2, 3), pool(PoolKind::Max, 2), denseL2(6, 0.0)};
    const ImageProblem p = makeImageProblem({1, 8, 8}, layers, BootstrapMode::None,
                                            OptimizerKind::Adam, Activation::Relu, 2);
    layers.back() = test::dense(6);
    TrainingProblem plain = p.training;
    plain.layout = ParamLayout(Architecture::stack({1, 8, 8}, layers, 3), 2);
    const std::vector<float> init = initialParameters(plain.layout, 7);
    const std::vector<uint64_t> steps = stepRange(0, 4);
    QVERIFY(test::sameBits(cpuRun(p.training, init, steps), cpuRun(plain, init, steps)));
}

QTEST_APPLESS_MAIN(TestL2Layer)
#include "tst_l2_layer.moc"
