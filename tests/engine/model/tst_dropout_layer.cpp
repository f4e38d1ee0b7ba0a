// The dropout layer of model.layers ({"type": "dropout", "rate": p}): its parsing and shapes,
// a hand-computed network in training (inverted dropout: kept values scaled by 1/(1 - p)) and
// at evaluation (the identity), the CPU conv path's gradient against finite differences of an
// independent reference (plain loops in double under the same masks), the emulated CUDA
// program (conv_program.h in host loops) against the CPU backend, mc_dropout's folded members,
// and the preset mnist-active-cnn, which writes Gal et al.'s network with it.
#include <QtTest/QtTest>

#include <cmath>
#include <cstdint>
#include <vector>

#include "backend/cpu/conv_net.h"
#include "backend/cpu/cpu_backend.h"
#include "backend/cuda/conv_program.h"
#include "backend/cuda/step_elements.h"
#include "config/config.h"
#include "core/errors.h"
#include "math/dropout.h"
#include "math/philox.h"
#include "model/dropout_masks.h"
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
using test::dense;
using test::dropout;
using test::initialParameters;
using test::memberParams;
using test::pool;

namespace {

constexpr uint64_t kSeed = 0xD80F1A7Eull;

DropoutStep keyAt(float activationRate, uint64_t step, uint32_t member, uint32_t firstRow = 0) {
    DropoutStep d;
    d.rate = activationRate;
    d.seed = kSeed;
    d.step = step;
    d.member = member;
    d.firstRow = firstRow;
    return d;
}

// Inputs in [-2, 2), labels and example weights (some 0 and 2) for `batch` examples.
struct Batch {
    std::vector<float> x;
    std::vector<int32_t> y;
    std::vector<float> w;
};

Batch makeBatch(const Architecture& arch, int batch, uint64_t seed) {
    Batch b;
    for (int i = 0; i < batch * arch.inputs(); ++i) {
        b.x.push_back(
            4.0f * uniformFloat(
                       philoxDraw(seed, RngPurpose::DataGen, 0, static_cast<uint64_t>(i)).v[0]) -
            2.0f);
    }
    for (int r = 0; r < batch; ++r) {
        b.y.push_back(r * 7 % arch.outputs());
        b.w.push_back(static_cast<float>(r % 5 == 0 ? 0 : r % 3 == 0 ? 2 : 1));
    }
    return b;
}

// The reference's loss of one member under the step's masks: the activation masks (d.rate,
// when positive) and every dropout layer's at its own rate, example b at batch position b.
double maskedLoss(const Architecture& arch, Activation a, const std::vector<double>& p,
                  const Batch& batch, const DropoutStep& d) {
    const auto& layers = arch.layers();
    return test::referenceLoss(
        arch, a, p, batch.x, batch.y, batch.w,
        [&d](int b) -> test::UnitMask {
            if (!d.on()) {
                return {};
            }
            return [&d, b](int layer, int unit) {
                return static_cast<double>(
                    dropoutTrainingMask(d, d.firstRow + static_cast<uint32_t>(b), layer, unit));
            };
        },
        [&d, &layers](int b) -> test::UnitMask {
            return [&d, &layers, b](int layer, int position) {
                return static_cast<double>(dropoutLayerTrainingMask(
                    d, layers[static_cast<std::size_t>(layer)].rate,
                    d.firstRow + static_cast<uint32_t>(b), layer, position));
            };
        });
}

// `layers` without their dropout layers: the same parameters, the network at evaluation.
std::vector<LayerSpec> withoutDropout(const std::vector<LayerSpec>& layers) {
    std::vector<LayerSpec> out;
    for (const LayerSpec& s : layers) {
        if (s.kind != LayerKind::Dropout) {
            out.push_back(s);
        }
    }
    return out;
}

using ensemble::test::cpuRun;

}  // namespace

class TestDropoutLayer : public QObject {
    Q_OBJECT

  private Q_SLOTS:
    // {"type": "dropout", "rate": p} round-trips; a missing, non-numeric or out-of-range rate
    // and an unknown field are errors naming the field.
    void parsesAndWritesTheLayer();
    // Its shapes (out = in), where it may stand (not first; after a dense layer, not before a
    // conv there) and which dense layer flattens.
    void stackPlacesTheLayer();
    // 2 -> dense 2 (ReLU) -> dropout 0.5 -> dense 2 by hand: the loss and every gradient under
    // each of the four masks the steps draw, and the deterministic prediction.
    void handComputedNetwork();
    // At evaluation the layers are the identity: the same bits as the network without them.
    void evaluationIsTheIdentity();
    // The conv path's gradient against central differences of the masked reference, dropout
    // on maps (before a pool, after an average pool, twice in a row) and on a dense layer,
    // with and without mc_dropout's activation masks beside them.
    void gradientMatchesFiniteDifferences_data();
    void gradientMatchesFiniteDifferences();
    // The masks keep values at rate 1 - p and are reproducible for any thread count.
    void keepRateAndThreads();
    // The CUDA program's mask elements draw the CPU's masks into the channels-last layout.
    void cudaMaskElementsAreTheCpuDraw();
    // The emulated CUDA program trains and predicts as the CPU backend does.
    void emulatedCudaMatchesCpu_data();
    void emulatedCudaMatchesCpu();
    // mc_dropout: member k is the network under its own fixed masks at the dropout layers (no
    // activation masks), folded into the dense layer after each; a dropout layer before a pool
    // or conv is refused, naming it.
    void mcDropoutFoldsTheLayersMasks();
    // mnist-active-cnn parses to the paper's network and trains two steps.
    void presetTrainsTwoSteps();
};

void TestDropoutLayer::parsesAndWritesTheLayer() {
    const json layers = json::parse(R"([
        {"type": "conv", "filters": 4, "kernel": 3, "stride": 1, "padding": "valid"},
        {"type": "dropout", "rate": 0.25},
        {"type": "dense", "units": 8},
        {"type": "dropout", "rate": 0}])");
    const std::vector<LayerSpec> parsed = parseLayers(layers, "model.layers");
    QCOMPARE(parsed.size(), std::size_t{4});
    QVERIFY(parsed[1].kind == LayerKind::Dropout);
    QCOMPARE(parsed[1].rate, 0.25);
    QCOMPARE(parsed[3].rate, 0.0);
    QCOMPARE(layersToJson(parsed), layers);
    const auto refused = [](const char* text, const std::string& key) {
        test::expectConfigError(
            [text] {
                parseLayers(
                    json::parse(std::string(R"([{"type": "dense", "units": 4}, )") + text + "]"),
                    "model.layers");
            },
            key);
    };
    refused(R"({"type": "dropout"})", "model.layers[1].rate");
    refused(R"({"type": "dropout", "rate": 1})", "model.layers[1].rate");
    refused(R"({"type": "dropout", "rate": -0.1})", "model.layers[1].rate");
    refused(R"({"type": "dropout", "rate": "0.5"})", "model.layers[1].rate");
    refused(R"({"type": "dropout", "rate": 0.5, "units": 3})", "model.layers[1].units");
}

void TestDropoutLayer::stackPlacesTheLayer() {
    const Architecture a = Architecture::stack(
        {1, 8, 8}, {conv(4, 3), dropout(0.25), pool(PoolKind::Max, 2), dense(6), dropout(0.5)}, 3);
    const auto& s = a.layers();
    QCOMPARE(s.size(), std::size_t{6});
    QCOMPARE(s[1].in, (Shape{4, 8, 8}));
    QCOMPARE(s[1].out, (Shape{4, 8, 8}));
    QCOMPARE(s[1].rate, 0.25f);
    QCOMPARE(s[1].param, -1);
    QVERIFY(!s[1].activated);
    QVERIFY(s[3].flattens);   // the first dense reads the pool's maps
    QVERIFY(!s[5].flattens);  // the head reads the dropout's flat units
    QCOMPARE(s[4].out, (Shape{6, 1, 1}));
    QCOMPARE(a.paramLayers(), 3);
    QVERIFY(a.hasDropoutLayers());
    QVERIFY(!a.denseOnly());
    // conv -> dropout -> head: the head flattens the dropout's maps.
    QVERIFY(Architecture::stack({1, 6, 6}, {conv(2, 3), dropout(0.5)}, 3).layers()[2].flattens);
    test::expectConfigError(
        [] {
            Architecture::stack({1, 8, 8}, {dropout(0.5), conv(2, 3)}, 3);
        },
        "model.layers[0].type");
    test::expectConfigError(
        [] {
            Architecture::stack({1, 8, 8}, {dense(4), dropout(0.5), conv(2, 3)}, 3);
        },
        "model.layers[2].type");
}

void TestDropoutLayer::handComputedNetwork() {
    const Architecture arch = Architecture::stack({2, 1, 1}, {dense(2), dropout(0.5)}, 2);
    const ParamLayout layout(arch, 1);
    std::vector<float> params(layout.size(), 0.0f);
    // W0 = I, W1 = [[1, 1], [0, 0]], biases 0.
    params[layout.weightOffset(0, 0) + 0] = 1.0f;
    params[layout.weightOffset(0, 0) + 3] = 1.0f;
    params[layout.weightOffset(1, 0) + 0] = 1.0f;
    params[layout.weightOffset(1, 0) + 1] = 1.0f;
    const std::vector<float> x = {1.0f, 2.0f};
    const int32_t label = 1;
    const float weight = 1.0f;

    ConvNetCpu net;
    net.bind(layout, Activation::Relu, 1, 1);
    // Evaluation: h = (1, 2), z = (3, 0), log p = z - log(e^3 + 1).
    std::vector<float> logp(2);
    net.predictLogProbs(params.data(), x.data(), 1, logp.data());
    const double lse = std::log(std::exp(3.0) + 1.0);
    QVERIFY(std::abs(logp[0] - (3.0 - lse)) < 1e-6);
    QVERIFY(std::abs(logp[1] - (-lse)) < 1e-6);

    // Training: h' = h * m with m_j in {0, 2}; z0 = h'_0 + h'_1, z1 = 0; CE for class 1 is
    // log(1 + e^z0); with s = sigmoid(z0): dz = (s, -s), dW1[o][j] = dz_o h'_j, and through
    // W1's first row and the mask dW0[j][i] = s m_j x_i (ReLU passes: h > 0).
    bool seen[2][2] = {};
    for (uint64_t step = 0; step < 24; ++step) {
        const DropoutStep d = keyAt(0.0f, step, 0);
        double m[2];
        for (int j = 0; j < 2; ++j) {
            m[j] = dropoutLayerTrainingMask(d, 0.5f, 0, 1, j);
            QVERIFY(m[j] == 0.0 || m[j] == 2.0);
        }
        seen[m[0] > 0][m[1] > 0] = true;
        const double hp[2] = {1.0 * m[0], 2.0 * m[1]};
        const double z0 = hp[0] + hp[1];
        const double s = 1.0 / (1.0 + std::exp(-z0));
        net.setDropoutStep(kSeed, step, 0, 0);
        std::vector<float> grad(layout.perMember());
        const ConvMemberBatch batch{x.data(), &label, &weight};
        const float loss = net.gradient(0, params.data(), batch, 1, grad.data());
        QVERIFY2(std::abs(loss - std::log1p(std::exp(z0))) < 1e-6,
                 qPrintable(QString::number(loss)));
        // Packed per layer: [W0 (2 x 2), b0 (2), W1 (2 x 2), b1 (2)].
        const double expected[12] = {
            s * m[0] * 1, s * m[0] * 2, s * m[1] * 1, s * m[1] * 2, s * m[0], s * m[1],
            s * hp[0],    s * hp[1],    -s * hp[0],   -s * hp[1],   s,        -s};
        for (int i = 0; i < 12; ++i) {
            QVERIFY2(std::abs(grad[static_cast<std::size_t>(i)] - expected[i]) < 1e-6,
                     qPrintable(QStringLiteral("step %1 gradient %2: %3, by hand %4")
                                    .arg(step)
                                    .arg(i)
                                    .arg(double(grad[static_cast<std::size_t>(i)]))
                                    .arg(expected[i])));
        }
    }
    // The steps drew all four masks (else the cases above would not tell them apart).
    QVERIFY(seen[0][0] && seen[0][1] && seen[1][0] && seen[1][1]);
}

void TestDropoutLayer::evaluationIsTheIdentity() {
    const std::vector<LayerSpec> layers = {conv(4, 3),   dropout(0.3), pool(PoolKind::Max, 2),
                                           dropout(0.1), dense(6),     dropout(0.5)};
    const Architecture with = Architecture::stack({1, 8, 8}, layers, 3);
    const Architecture without = Architecture::stack({1, 8, 8}, withoutDropout(layers), 3);
    const ParamLayout a(with, 2);
    const ParamLayout b(without, 2);
    QCOMPARE(a.size(), b.size());
    const std::vector<float> params = initialParameters(a, 3);
    const Batch batch = makeBatch(with, 40, 9);
    std::vector<float> outA(2 * 40 * 3);
    std::vector<float> outB(outA.size());
    ConvNetCpu netA;
    netA.bind(a, Activation::Relu, 40, 2);
    netA.predictLogProbs(params.data(), batch.x.data(), 40, outA.data());
    ConvNetCpu netB;
    netB.bind(b, Activation::Relu, 40, 2);
    netB.predictLogProbs(params.data(), batch.x.data(), 40, outB.data());
    QVERIFY(test::sameBits(outA, outB));
}

void TestDropoutLayer::gradientMatchesFiniteDifferences_data() {
    QTest::addColumn<int>("shape");
    QTest::addColumn<int>("activation");
    QTest::addColumn<double>("activationRate");
    QTest::newRow("conv-dropout-max-dense-dropout relu")
        << 0 << static_cast<int>(Activation::Relu) << 0.0;
    QTest::newRow("conv-avg-dropout-dropout-dense tanh, with activation masks")
        << 1 << static_cast<int>(Activation::Tanh) << 0.2;
}

void TestDropoutLayer::gradientMatchesFiniteDifferences() {
    QFETCH(int, shape);
    QFETCH(int, activation);
    QFETCH(double, activationRate);
    const auto a = static_cast<Activation>(activation);
    const Architecture arch =
        shape == 0
            ? Architecture::stack(
                  {1, 8, 8},
                  {conv(4, 3), dropout(0.3), pool(PoolKind::Max, 2), dense(6), dropout(0.5)}, 3)
            : Architecture::stack(
                  {2, 7, 7},
                  {conv(3, 3), pool(PoolKind::Avg, 2), dropout(0.25), dropout(0.4), dense(5)}, 3);
    const ParamLayout layout(arch, 2);
    std::vector<float> params = initialParameters(layout, 13);
    for (float& v : params) {
        v *= 2.0f;  // every unit does something
    }
    // 37 examples: two groups of the conv path (32 and 5), the second at batch position 32.
    const int n = 37;
    const Batch batch = makeBatch(arch, n, 13);
    ConvNetCpu net;
    const float rate = static_cast<float>(activationRate);
    net.bind(layout, a, n, 2, 0, rate);
    net.setDropoutStep(kSeed, 23, 4, 0);
    std::vector<float> grad(layout.perMember());
    const ConvMemberBatch mb{batch.x.data(), batch.y.data(), batch.w.data()};
    const float loss = net.gradient(1, params.data(), mb, n, grad.data());

    const DropoutStep d = keyAt(rate, 23, 5);  // member 1 of the net is global member 5
    std::vector<double> p = memberParams(layout, 1, params.data());
    const double refLoss = maskedLoss(arch, a, p, batch, d);
    ENSEMBLE_COMPARE_NEAR_SCALED(loss, refLoss, test::kFloatRounding);
    double diff = 0.0;
    double norm = 0.0;
    const double h = 1e-6;
    for (std::size_t i = 0; i < p.size(); ++i) {
        const double keep = p[i];
        p[i] = keep + h;
        const double up = maskedLoss(arch, a, p, batch, d);
        p[i] = keep - h;
        const double down = maskedLoss(arch, a, p, batch, d);
        p[i] = keep;
        const double fd = (up - down) / (2 * h);
        diff += (grad[i] - fd) * (grad[i] - fd);
        norm += fd * fd;
    }
    const double error = std::sqrt(diff / norm);
    QVERIFY2(error < 1e-4, qPrintable(QStringLiteral("relative gradient error %1").arg(error)));
    // The masks matter: without them the loss is another.
    const double plain = test::referenceLoss(arch, a, memberParams(layout, 1, params.data()),
                                             batch.x, batch.y, batch.w);
    QVERIFY(std::abs(plain - refLoss) > 1e-3);
}

void TestDropoutLayer::keepRateAndThreads() {
    for (float rate : {0.25f, 0.5f}) {
        int kept = 0;
        const int draws = 40000;
        for (int i = 0; i < draws; ++i) {
            const float m = dropoutLayerTrainingMask(keyAt(0.0f, 7, 1), rate,
                                                     static_cast<uint32_t>(i / 400), 3, i % 400);
            QVERIFY(m == 0.0f || m == dropoutScale(rate));
            kept += m > 0.0f ? 1 : 0;
        }
        // Binomial: within 5 standard deviations of (1 - p) draws.
        const double sd = std::sqrt(draws * rate * (1.0 - rate));
        QVERIFY2(std::abs(kept - draws * (1.0 - rate)) < 5 * sd, qPrintable(QString::number(kept)));
    }
    const ConvCase c{{1, 8, 8},
                     {conv(4, 3), dropout(0.3), pool(PoolKind::Max, 2), dense(5), dropout(0.5)}};
    const ImageProblem p = makeImageProblem(c.input, c.layers, BootstrapMode::Resample,
                                            OptimizerKind::Adam, Activation::Relu, 3);
    const std::vector<float> init = initialParameters(p.training.layout, 42);
    const std::vector<uint64_t> steps = stepRange(0, 6);
    QVERIFY(test::sameBits(cpuRun(p.training, init, steps, 1), cpuRun(p.training, init, steps, 2)));
}

void TestDropoutLayer::cudaMaskElementsAreTheCpuDraw() {
    const int members = 2, rows = 3, channels = 5, plane = 3, layer = 4;
    const float rate = 0.4f;
    DropoutStep key = keyAt(0.1f, 0, 6, 9);  // the program's first member and row
    const uint64_t step = (uint64_t{2} << 32) + 17;
    const int size = channels * plane;
    std::vector<float> mask(static_cast<std::size_t>(members) * rows * size, std::nanf(""));
    for (int64_t j = 0; j < int64_t{members} * rows * ((size + 3) / 4); ++j) {
        dropoutLayerMaskElement(j, key, step, rows, channels, plane, layer, rate, mask.data());
    }
    int kept = 0;
    for (int k = 0; k < members; ++k) {
        for (int b = 0; b < rows; ++b) {
            for (int c = 0; c < channels; ++c) {
                for (int q = 0; q < plane; ++q) {
                    DropoutStep d = key;
                    d.step = step;
                    d.member = key.member + static_cast<uint32_t>(k);
                    // Position c plane + q of the flatten order, stored channels-last.
                    const float expected = dropoutLayerTrainingMask(
                        d, rate, key.firstRow + static_cast<uint32_t>(b), layer, c * plane + q);
                    const float got =
                        mask[((static_cast<std::size_t>(k) * rows + b) * plane + q) * channels + c];
                    QCOMPARE(got, expected);
                    kept += got > 0.0f ? 1 : 0;
                }
            }
        }
    }
    QVERIFY(kept > 0 && kept < members * rows * size);
    std::vector<float> out(4);
    const std::vector<float> x = {1.0f, -2.0f, 3.0f, 4.0f};
    const std::vector<float> m = {0.0f, 2.0f, 2.0f, 0.0f};
    for (int i = 0; i < 4; ++i) {
        maskMultiplyElement(i, x.data(), m.data(), out.data());
    }
    QCOMPARE(out, (std::vector<float>{0.0f, -4.0f, 6.0f, 0.0f}));
}

void TestDropoutLayer::emulatedCudaMatchesCpu_data() {
    QTest::addColumn<int>("which");
    QTest::addColumn<bool>("implicitGemm");
    QTest::addColumn<double>("activationRate");
    QTest::newRow("paper's shape, none, adam") << 0 << false << 0.0;
    QTest::newRow("two-channel maps, implicit, with activation masks") << 1 << true << 0.3;
}

void TestDropoutLayer::emulatedCudaMatchesCpu() {
    QFETCH(int, which);
    QFETCH(bool, implicitGemm);
    QFETCH(double, activationRate);
    const ConvCase c =
        which == 0
            ? ConvCase{{1, 9, 9},
                       {conv(4, 3, 1, Padding::Valid), conv(4, 3, 1, Padding::Valid),
                        pool(PoolKind::Max, 2), dropout(0.25), dense(8), dropout(0.5)}}
            : ConvCase{{2, 6, 6}, {conv(3, 3), dropout(0.2), pool(PoolKind::Avg, 2), dropout(0.3)}};
    const BootstrapMode mode = which == 0 ? BootstrapMode::None : BootstrapMode::Poisson;
    const OptimizerKind kind = which == 0 ? OptimizerKind::Adam : OptimizerKind::Sgd;
    ImageProblem p =
        makeImageProblem(c.input, c.layers, mode, kind, Activation::Relu, /*members=*/3);
    p.training.dropout = static_cast<float>(activationRate);
    p.training.dropoutSeed = kSeed;
    const ParamLayout& layout = p.training.layout;
    const std::vector<float> init = initialParameters(layout, 42);

    const auto cpu = cpuOracle(p.training, init);
    EmulatedConvCudaBackend emu(p.training, 16, implicitGemm);
    emu.setParameters(init);
    const std::vector<uint64_t> steps = stepRange(0, 10);
    trainBoth(*cpu, emu, layout, init, steps, 1, 3, 6);
    if (QTest::currentTestFailed()) {
        return;
    }
    QVERIFY(emu.dropoutOperations() > 0);
    // At prediction both are the network without the layers.
    predictBoth(*cpu, emu, layout, p.x.data(), 40,
                [](std::size_t, float v) { return std::isfinite(v) && v <= 0.0f; });
    // The masks matter: the network without the layers, trained the same steps, ends elsewhere.
    TrainingProblem plain = p.training;
    plain.layout = ParamLayout(Architecture::stack(c.input, withoutDropout(c.layers), 3), 3);
    const double fromPlain = test::nmse(cpuRun(plain, init, steps), emu.params());
    QVERIFY2(fromPlain > 1e3 * test::kEmulatedParamNmse, qPrintable(QString::number(fromPlain)));
}

void TestDropoutLayer::mcDropoutFoldsTheLayersMasks() {
    const Architecture arch = Architecture::stack(
        {1, 8, 8}, {conv(4, 3), pool(PoolKind::Max, 2), dropout(0.25), dense(6), dropout(0.5)}, 3);
    QCOMPARE(activationDropoutRate(arch, 0.1), 0.0f);
    QCOMPARE(activationDropoutRate(Architecture::stack({1, 8, 8}, {conv(4, 3)}, 3), 0.1), 0.1f);
    const ParamLayout one(arch, 1);
    const ParamLayout three(arch, 3);
    std::vector<float> trained = initialParameters(one, 8);
    const uint64_t seed = 77;
    const std::vector<float> folded = foldDropoutMasks(arch, trained.data(), 0.1f, seed, 3, 2);
    // No activation masks: the conv's weights are the trained ones.
    QVERIFY(std::equal(trained.begin() + static_cast<std::ptrdiff_t>(one.weightOffset(0, 0)),
                       trained.begin() + static_cast<std::ptrdiff_t>(one.biasOffset(0, 0)),
                       folded.begin() + static_cast<std::ptrdiff_t>(three.weightOffset(0, 1))));
    const Batch batch = makeBatch(arch, 4, 5);
    const std::vector<double> p = memberParams(one, 0, trained.data());
    const auto& layers = arch.layers();
    for (int k = 0; k < 3; ++k) {
        const test::UnitMask mask = [&](int layer, int position) {
            return static_cast<double>(
                dropoutLayerMemberMask(seed, 2u + static_cast<uint32_t>(k), layer, position,
                                       layers[static_cast<std::size_t>(layer)].rate));
        };
        for (int b = 0; b < 4; ++b) {
            const float* x = batch.x.data() + static_cast<std::size_t>(b) * arch.inputs();
            const std::vector<double> expected =
                test::referenceForward(arch, Activation::Relu, p, x, {}, mask);
            const std::vector<double> got = test::referenceForward(
                arch, Activation::Relu, memberParams(three, k, folded.data()), x);
            for (std::size_t c = 0; c < got.size(); ++c) {
                QVERIFY(std::abs(got[c] - expected[c]) <= 1e-5 * (1.0 + std::abs(expected[c])));
            }
        }
    }
    test::expectConfigError(
        [] {
            checkDropoutLayersFold(Architecture::stack(
                {1, 8, 8}, {conv(4, 3), dropout(0.5), pool(PoolKind::Max, 2), dense(4)}, 3));
        },
        "model.layers[1]");
    json config = loadConfigJson("mnist-active-cnn");
    config["ensemble"]["method"] = "mc_dropout";
    QVERIFY(parseConfig(config).model.layers.size() == 6);  // the paper's network folds
    config["model"]["layers"] = json::parse(
        R"([{"type": "conv", "filters": 4, "kernel": 3}, {"type": "dropout", "rate": 0.5},
            {"type": "conv", "filters": 4, "kernel": 3}])");
    test::expectConfigError([&config] { parseConfig(config); }, "model.layers[1]");
}

void TestDropoutLayer::presetTrainsTwoSteps() {
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    QVERIFY(
        test::writeIdx(dir.path(), "train-images-idx3-ubyte", "train-labels-idx1-ubyte", 200, 1));
    QVERIFY(test::writeIdx(dir.path(), "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte", 50, 2));
    json root = loadConfigJson("mnist-active-cnn");
    root["dataset"]["path"] = dir.path().toStdString();
    root["training"]["steps"] = 2;
    root["backend"]["kind"] = "cpu";
    // Two members of batch 32: the network as written, at a quarter of a step's cost.
    root["ensemble"]["members"] = 2;
    root["training"]["batch_size"] = 32;
    const ExperimentConfig c = parseConfig(root);
    QCOMPARE(c.ensemble.seed, uint64_t{1});
    QCOMPARE(c.active.initial, 20);
    QCOMPARE(c.active.perRound, 10);
    QCOMPARE(c.active.poolSubset, int64_t{2000});
    QCOMPARE(c.active.initial + c.active.perRound * c.active.rounds, 1000);
    const Architecture arch = Architecture::stack({1, 28, 28}, c.model.layers, 10);
    // 28 -> 26 -> 24 -> max-pool 5 -> 4: 32 x 4 x 4 = 512 inputs to the dense 256.
    QCOMPARE(arch.layers()[4].in, (Shape{512, 1, 1}));
    QCOMPARE(arch.layers()[3].rate, 0.25f);
    QCOMPARE(arch.layers()[5].rate, 0.5f);
    auto trainer = test::makeCpuTrainer(c);
    const std::vector<float> before = trainer->parameters();
    trainer->runSteps(2);
    QCOMPARE(trainer->step(), int64_t{2});
    for (float loss : trainer->lastLosses()) {
        QVERIFY(std::isfinite(loss) && loss > 0.0f);
    }
    QVERIFY(!test::sameBits(before, trainer->parameters()));
}

QTEST_APPLESS_MAIN(TestDropoutLayer)
#include "tst_dropout_layer.moc"
