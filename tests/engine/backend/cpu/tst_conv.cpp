// Convolutional members (model.kind cnn): the im2col path of backend/cpu/conv_net.h against an
// independent direct-convolution reference in double (forward, and gradients by central finite
// differences), determinism across thread counts and K, the config contract for model.layers,
// and training plus export / import of a small CNN on synthetic images.

#include <QtTest/QtTest>

#include <cmath>
#include <memory>
#include <random>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "config/config.h"
#include "core/errors.h"
#include "io/model_io.h"
#include "io/safetensors.h"
#include "model/feature_maps.h"
#include "support/backend_test_problem.h"
#include "support/bar_images.h"
#include "support/reference_network.h"
#include "support/test_support.h"
#include "train/trainer.h"

using namespace ensemble;
using ensemble::test::barImages;
using ensemble::test::memberParams;
using ensemble::test::referenceForward;
using ensemble::test::referenceLoss;
using nlohmann::json;

namespace {

struct GradientCase {
    Architecture arch;
    ParamLayout layout;
    std::vector<float> params;
    std::vector<float> x;
    std::vector<int32_t> y;
    std::vector<float> w;
};

// A gradient check's batch (not test::makeProblem's training problem): K members of `layers` on
// `input` images, random inputs, labels and (Poisson-like) weights.
GradientCase makeGradientCase(Shape input, const std::vector<LayerSpec>& layers, int classes,
                              int members, int batch, uint64_t seed) {
    GradientCase p;
    p.arch = Architecture::stack(input, layers, classes);
    p.layout = ParamLayout(p.arch, members);
    p.params.resize(p.layout.size());
    initParameters(p.layout, seed, p.params.data());
    std::mt19937 rng(static_cast<uint32_t>(seed));
    std::normal_distribution<float> normal(0.0f, 1.0f);
    p.x.resize(static_cast<std::size_t>(batch) * p.arch.inputs());
    for (float& v : p.x) {
        v = normal(rng);
    }
    for (int b = 0; b < batch; ++b) {
        p.y.push_back(static_cast<int32_t>(rng() % static_cast<uint32_t>(classes)));
        p.w.push_back(static_cast<float>(rng() % 3));
    }
    return p;
}

using test::conv;
using test::dense;
using test::pool;

json cnnConfig() {
    return test::barCnnConfig(150);
}

}  // namespace

class TestConv : public QObject {
    Q_OBJECT

  private:
    // The fast path's forward and gradient against the reference and its finite differences,
    // with the conv layers' slices as in use (these small images: one slice per task); then
    // with one-example slices (every slice's columns made again for the gradients, the pooling
    // fused per slice): the same forward and gradient up to the order of the sums over slices.
    void checkAgainstReference(Shape input, const std::vector<LayerSpec>& layers, Activation a,
                               int batch) {
        const int members = 2;
        GradientCase p = makeGradientCase(input, layers, 3, members, batch, 11);
        ConvNetCpu net;
        net.bind(p.layout, a, batch, 2);

        // Forward: log-probabilities of both members.
        std::vector<float> logProbs(static_cast<std::size_t>(members) * batch * 3);
        net.predictLogProbs(p.params.data(), p.x.data(), batch, logProbs.data());
        for (int k = 0; k < members; ++k) {
            const std::vector<double> mp = memberParams(p.layout, k, p.params.data());
            for (int b = 0; b < batch; ++b) {
                const std::vector<double> z = referenceForward(
                    p.arch, a, mp, p.x.data() + static_cast<std::size_t>(b) * p.arch.inputs());
                const double lse = std::log(std::exp(z[0]) + std::exp(z[1]) + std::exp(z[2]));
                for (int c = 0; c < 3; ++c) {
                    ENSEMBLE_COMPARE_NEAR_SCALED(
                        logProbs[(static_cast<std::size_t>(k) * batch + b) * 3 + c],
                        z[static_cast<std::size_t>(c)] - lse, test::kFloatRounding);
                }
            }
        }

        // Gradient of member 1 against central differences of the reference in double.
        const int k = 1;
        std::vector<float> grad(p.layout.perMember());
        const ConvMemberBatch mb{p.x.data(), p.y.data(), p.w.data()};
        const float loss = net.gradient(k, p.params.data(), mb, batch, grad.data());
        std::vector<double> mp = memberParams(p.layout, k, p.params.data());
        ENSEMBLE_COMPARE_NEAR_SCALED(loss, referenceLoss(p.arch, a, mp, p.x, p.y, p.w),
                                     test::kFloatRounding);
        double diff = 0.0;
        double norm = 0.0;
        const double h = 1e-6;
        for (std::size_t i = 0; i < mp.size(); ++i) {
            const double keep = mp[i];
            mp[i] = keep + h;
            const double up = referenceLoss(p.arch, a, mp, p.x, p.y, p.w);
            mp[i] = keep - h;
            const double down = referenceLoss(p.arch, a, mp, p.x, p.y, p.w);
            mp[i] = keep;
            const double fd = (up - down) / (2 * h);
            diff += (grad[i] - fd) * (grad[i] - fd);
            norm += fd * fd;
        }
        QVERIFY2(norm > 0.0, "the reference gradient is zero: the check would be empty");
        const double relative = std::sqrt(diff / norm);
        QVERIFY2(relative < 1e-4, qPrintable(QStringLiteral("relative gradient error %1 over %2 "
                                                            "parameters")
                                                 .arg(relative)
                                                 .arg(mp.size())));

        ConvNetCpu sliced;
        sliced.setSliceFloats(1);
        sliced.bind(p.layout, a, batch, 2);
        std::vector<float> slicedLogProbs(logProbs.size());
        sliced.predictLogProbs(p.params.data(), p.x.data(), batch, slicedLogProbs.data());
        for (std::size_t i = 0; i < logProbs.size(); ++i) {
            ENSEMBLE_COMPARE_NEAR_SCALED(slicedLogProbs[i], logProbs[i], test::kFloatRounding);
        }
        std::vector<float> slicedGrad(grad.size());
        const float slicedLoss = sliced.gradient(k, p.params.data(), mb, batch, slicedGrad.data());
        ENSEMBLE_COMPARE_NEAR_SCALED(slicedLoss, loss, test::kFloatRounding);
        double slicedDiff = 0.0;
        double gradNorm = 0.0;
        for (std::size_t i = 0; i < grad.size(); ++i) {
            slicedDiff +=
                (static_cast<double>(slicedGrad[i]) - grad[i]) * (slicedGrad[i] - grad[i]);
            gradNorm += static_cast<double>(grad[i]) * grad[i];
        }
        QVERIFY2(std::sqrt(slicedDiff / gradNorm) < 1e-5,
                 qPrintable(QStringLiteral("one-example slices: relative gradient difference %1")
                                .arg(std::sqrt(slicedDiff / gradNorm))));
    }

  private slots:
    void gradientConvAvgPoolDense() {
        // Two conv layers (same and valid, stride 1 and 2), both pools, two dense layers, over
        // two input channels: every branch of the forward and backward passes.
        checkAgainstReference(
            Shape{2, 9, 9},
            {conv(3, 3), pool(PoolKind::Avg, 2), conv(4, 2, 2, Padding::Valid), dense(5), dense(4)},
            Activation::Tanh, 37);
    }

    void gradientMaxPoolGelu() {
        checkAgainstReference(Shape{1, 8, 8}, {conv(4, 3), pool(PoolKind::Max, 2), conv(3, 3, 2)},
                              Activation::Gelu, 33);
    }

    void gradientReluRecipeShape() {
        // The recipe's structure, scaled down; a batch that is not a multiple of the group.
        checkAgainstReference(
            Shape{1, 12, 12},
            {conv(4, 3), pool(PoolKind::Avg, 2), conv(6, 3), pool(PoolKind::Avg, 2), dense(16)},
            Activation::Relu, 70);
    }

    void sgdStepIsGradientStep() {
        // One plain SGD step through CpuBackend moves every parameter by -lr * gradient.
        // 70 rows in one batch: three groups of 32, 32 and 6 examples, summed in train().
        constexpr int kRows = 70;
        GradientCase p = makeGradientCase(
            Shape{1, 6, 6}, {conv(2, 3), pool(PoolKind::Max, 2), dense(4)}, 3, 1, kRows, 5);
        std::vector<int32_t> labels(kRows);
        for (int i = 0; i < kRows; ++i) {
            labels[static_cast<std::size_t>(i)] = i % 3;
        }
        TrainingProblem tp;
        tp.layout = p.layout;
        tp.activation = Activation::Relu;
        tp.trainX = p.x.data();
        tp.trainY = labels.data();
        tp.trainRows = kRows;
        tp.plan.seed = 1;
        tp.plan.rows = kRows;
        tp.plan.batch = kRows;
        tp.plan.mode = BootstrapMode::None;
        tp.rules = {makeRule(OptimizerKind::Sgd, 0.5, 0.0, 0.0, 0.9, 0.999, 1e-8)};
        CpuBackend backend(2);
        backend.bind(tp);
        backend.setParameters(p.params.data());
        const uint8_t active = 1;
        float loss = 0.0f;
        backend.step(0, &active, &loss);
        std::vector<float> after(p.layout.size());
        backend.parameters(after.data());

        // The batch of step 0 covers all rows once (an epoch permutation): the gradient does
        // not depend on their order up to rounding.
        std::vector<float> grad(p.layout.perMember());
        std::vector<float> ones(kRows, 1.0f);
        ConvNetCpu net;
        net.bind(p.layout, Activation::Relu, kRows, 1);
        net.gradient(0, p.params.data(), ConvMemberBatch{p.x.data(), labels.data(), ones.data()},
                     kRows, grad.data());
        std::size_t packed = 0;
        for (int l = 0; l < p.layout.layerCount(); ++l) {
            const LayerSlot& s = p.layout.layer(l);
            for (int i = 0; i < s.out * s.in; ++i, ++packed) {
                const std::size_t at = p.layout.weightOffset(l, 0) + static_cast<std::size_t>(i);
                ENSEMBLE_COMPARE_NEAR(after[at], p.params[at] - 0.5 * grad[packed], 1e-5);
            }
            for (int i = 0; i < s.out; ++i, ++packed) {
                const std::size_t at = p.layout.biasOffset(l, 0) + static_cast<std::size_t>(i);
                ENSEMBLE_COMPARE_NEAR(after[at], p.params[at] - 0.5 * grad[packed], 1e-5);
            }
        }
    }

    void deterministicAcrossThreadsAndK_data() {
        QTest::addColumn<int>("mode");
        QTest::newRow("none") << static_cast<int>(BootstrapMode::None);
        QTest::newRow("resample") << static_cast<int>(BootstrapMode::Resample);
        QTest::newRow("poisson") << static_cast<int>(BootstrapMode::Poisson);
    }

    void deterministicAcrossThreadsAndK() {
        QFETCH(int, mode);
        // The same run on 1 and 2 threads gives the same bits; member 0 of K = 3 is member 0 of
        // K = 1.
        const auto train = [&](int members, int threads) {
            json c = cnnConfig();
            c["ensemble"]["members"] = members;
            c["ensemble"]["bootstrap"] = toString(static_cast<BootstrapMode>(mode));
            c["training"]["steps"] = 6;
            c["backend"]["threads"] = threads;
            Trainer t(parseConfig(c), barImages(120, 20, 3), std::make_unique<CpuBackend>(threads));
            t.runSteps(6);
            return std::make_pair(t.layout(), t.parameters());
        };
        const auto [layout3, one] = train(3, 1);
        const auto [layout3b, two] = train(3, 2);
        QVERIFY(one == two);
        const auto [layout1, single] = train(1, 2);
        QCOMPARE(memberParams(layout1, 0, single.data()), memberParams(layout3, 0, one.data()));
    }

    void trainsAndRoundTripsThroughExport() {
        Trainer t(parseConfig(cnnConfig()), barImages(400, 200, 9),
                  std::make_unique<CpuBackend>(2));
        t.runSteps(t.totalSteps());
        const Evaluation e = t.evaluate();
        QVERIFY2(e.ensembleTest.accuracy > 0.95,
                 qPrintable(QString::number(e.ensembleTest.accuracy)));

        QTemporaryDir dir;
        const std::string path = dir.filePath("cnn.safetensors").toStdString();
        exportEnsemble(path, t);
        const SafetensorsFile file = readSafetensors(path);
        // PyTorch's layouts: conv [K, F, C, k, k], dense [K, out, in] after the flatten.
        QCOMPARE(file.get("layers.0.weight").shape, (std::vector<int64_t>{3, 4, 1, 3, 3}));
        QCOMPARE(file.get("layers.1.weight").shape, (std::vector<int64_t>{3, 8, 100}));
        QCOMPARE(file.get("layers.2.weight").shape, (std::vector<int64_t>{3, 2, 8}));
        const json model = json::parse(file.metadata.at("model"));
        QCOMPARE(model["kind"].get<std::string>(), std::string("cnn"));
        QCOMPARE(model["layers"].size(), std::size_t{3});

        const LoadedEnsemble loaded = importEnsemble(path);
        const std::vector<float> again =
            predictLogProbs(loaded, t.data().test.x.data(), t.data().test.rows, 1);
        const MemberPredictions direct = t.predictRaw(t.data().test.x.data(), t.data().test.rows);
        QCOMPARE(again.size(), direct.logProbs.size());
        for (std::size_t i = 0; i < again.size(); ++i) {
            ENSEMBLE_COMPARE_NEAR(again[i], direct.logProbs[i], test::kFloatInput);
        }

        // A conv tensor whose shape does not match the stored model: a Weights error naming it.
        SafetensorsFile broken = file;
        for (Tensor& tensor : broken.tensors) {
            if (tensor.name == "layers.0.weight") {
                tensor.shape = {3, 4, 3, 3, 1};
            }
        }
        broken.origin = "broken.safetensors";
        try {
            importEnsemble(broken);
            QFAIL("a mismatched conv tensor was accepted");
        } catch (const DataError& err) {
            QCOMPARE(err.kind(), ErrorKind::Weights);
            QVERIFY2(std::string(err.what()).find("layers.0.weight") != std::string::npos,
                     err.what());
        }
    }

    void configContract_data() {
        QTest::addColumn<QString>("patch");
        QTest::addColumn<QString>("key");
        const auto row = [](const char* name, const char* patch, const char* key) {
            QTest::newRow(name) << QString::fromUtf8(patch) << QString::fromUtf8(key);
        };
        row("kernel 0", R"({"model": {"layers": [{"type": "conv", "filters": 8, "kernel": 0}]}})",
            "model.layers[0].kernel");
        row("non-integer filters",
            R"({"model": {"layers": [{"type": "conv", "filters": 2.5, "kernel": 3}]}})",
            "model.layers[0].filters");
        row("unknown type", R"({"model": {"layers": [{"type": "batchnorm"}]}})",
            "model.layers[0].type");
        row("unknown field",
            R"({"model": {"layers": [{"type": "dense", "units": 4, "bias": false}]}})",
            "model.layers[0].bias");
        row("missing units", R"({"model": {"layers": [{"type": "dense"}]}})",
            "model.layers[0].units");
        row("shrinks to nothing",
            R"({"model": {"layers": [{"type": "pool", "kind": "avg", "size": 4},
                                    {"type": "pool", "kind": "max", "size": 4},
                                    {"type": "pool", "kind": "max", "size": 4}]}})",
            "model.layers[2].size");
        row("valid conv too large",
            R"({"model": {"layers": [{"type": "conv", "filters": 2, "kernel": 29,
                                      "padding": "valid"}]}})",
            "model.layers[0].kernel");
        row("conv after dense",
            R"({"model": {"layers": [{"type": "dense", "units": 4},
                                    {"type": "conv", "filters": 2, "kernel": 3}]}})",
            "model.layers[1].type");
        row("hidden next to cnn", R"({"model": {"hidden": [16]}})", "model.hidden");
        row("cnn on spirals", R"({"dataset": {"kind": "spirals"}})", "model.kind");
    }

    void configContract() {
        QFETCH(QString, patch);
        QFETCH(QString, key);
        json c = {{"dataset", {{"kind", "mnist"}}}, {"model", {{"kind", "cnn"}}}};
        c.merge_patch(json::parse(patch.toStdString()));
        try {
            parseConfig(c);
            QFAIL("accepted");
        } catch (const ConfigError& e) {
            QCOMPARE(QString::fromStdString(e.key()), key);
        }
    }

    void layersOnlyForCnn() {
        // model.layers next to kind mlp names the key; a cnn stores layers, not hidden.
        try {
            parseConfig(json{{"model", {{"kind", "mlp"}, {"layers", json::array()}}}});
            QFAIL("accepted");
        } catch (const ConfigError& e) {
            QCOMPARE(e.key(), std::string("model.layers"));
        }
        const ExperimentConfig c =
            parseConfig(json{{"dataset", {{"kind", "mnist"}}}, {"model", {{"kind", "cnn"}}}});
        QVERIFY(!c.json["model"].contains("hidden"));
        QCOMPARE(c.json["model"]["layers"], layersToJson(recipeLayers()));
        QCOMPARE(c.model.layers, recipeLayers());
        // The recipe's shapes: 28 -> 14 -> 7, 64 x 7 x 7 = 3136 inputs of the dense layer.
        const Architecture a = modelArchitecture(c.model, kImageInput, 10);
        QCOMPARE(a.paramLayers(), 4);
        QCOMPARE(a.paramLayer(2).in.channels, 3136);
        // About 9.3 MFLOP per image forward (4.6 M multiply-adds).
        QVERIFY(std::abs(a.forwardMacsPerExample() - 4.63e6) < 0.02e6);
    }

    void firstLayerFeatureMaps() {
        // The Filters view's maps, against hand-computed cases. One conv of 2 filters 3x3
        // "same" on a 5x5 image holding a single 1 at (2, 2): cross-correlation puts the kernel,
        // flipped, around that pixel: out[y][x] = W[3 - y][3 - x] + b for y, x in 1..3, b
        // elsewhere; ReLU clips filter 1's negative bias.
        LayerSpec conv;
        conv.kind = LayerKind::Conv;
        conv.filters = 2;
        conv.kernel = 3;
        const ParamLayout layout(Architecture::stack({1, 5, 5}, {conv}, 3), 2);
        std::vector<float> params(layout.size(), 0.0f);
        for (int k = 0; k < 2; ++k) {
            for (int f = 0; f < 2; ++f) {
                float* w = params.data() + layout.weightOffset(0, k) + f * 9;
                for (int i = 0; i < 9; ++i) {
                    w[i] = static_cast<float>((k + 1) * (f == 0 ? 1 : -1) * (i + 1));
                }
                params[layout.biasOffset(0, k) + f] = f == 0 ? 0.5f : -0.25f;
            }
        }
        const FirstConv first = firstConvOf(layout, params.data());
        QCOMPARE(first.members, 2);
        QCOMPARE(first.filters(), 2);
        QCOMPARE(first.kernel(), 3);
        QCOMPARE(first.weights[9 * 3 + 4], -10.0f);  // member 1, filter 1, centre: -2 * 5
        std::vector<float> image(25, 0.0f);
        image[2 * 5 + 2] = 1.0f;
        const std::vector<float> maps = firstConvFeatureMaps(first, Activation::Relu, image.data());
        QCOMPARE(maps.size(), std::size_t{2 * 2 * 25});
        for (int k = 0; k < 2; ++k) {
            for (int y = 0; y < 5; ++y) {
                for (int x = 0; x < 5; ++x) {
                    const bool inside = y >= 1 && y <= 3 && x >= 1 && x <= 3;
                    const float w =
                        inside ? static_cast<float>((k + 1) * ((3 - y) * 3 + (3 - x) + 1)) : 0.0f;
                    QCOMPARE(maps[((k * 2 + 0) * 5 + y) * 5 + x], w + 0.5f);
                    QCOMPARE(maps[((k * 2 + 1) * 5 + y) * 5 + x], 0.0f);  // relu(-w - 0.25)
                }
            }
        }
        // Stride 2, valid, tanh on a 5x5 ramp: 2x2 outputs, out[y][x] = tanh(sum of the 3x3
        // window at (2y, 2x) of W * image + b), here with W = 1 and b = 0.
        conv.stride = 2;
        conv.padding = Padding::Valid;
        conv.filters = 1;
        const ParamLayout strided(Architecture::stack({1, 5, 5}, {conv}, 2), 1);
        std::vector<float> p2(strided.size(), 0.0f);
        std::fill_n(p2.data() + strided.weightOffset(0, 0), 9, 1.0f);
        std::vector<float> ramp(25);
        for (int i = 0; i < 25; ++i) {
            ramp[i] = 0.01f * static_cast<float>(i);
        }
        const std::vector<float> m2 =
            firstConvFeatureMaps(firstConvOf(strided, p2.data()), Activation::Tanh, ramp.data());
        QCOMPARE(m2.size(), std::size_t{4});
        for (int y = 0; y < 2; ++y) {
            for (int x = 0; x < 2; ++x) {
                double sum = 0.0;
                for (int i = 0; i < 3; ++i) {
                    for (int j = 0; j < 3; ++j) {
                        sum += 0.01 * ((2 * y + i) * 5 + 2 * x + j);
                    }
                }
                QVERIFY(std::abs(m2[y * 2 + x] - std::tanh(sum)) < 1e-6);
            }
        }
        // An MLP has no first conv.
        QVERIFY(firstConvOf(ParamLayout(std::vector<int>{4, 3}, 1), params.data()).empty());
    }
};

QTEST_APPLESS_MAIN(TestConv)
#include "tst_conv.moc"
