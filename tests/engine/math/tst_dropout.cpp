// Inverted dropout (math/dropout.h, ensemble.method = mc_dropout): the CPU backend's dropout
// step against finite differences of an independent reference (plain loops in double applying
// the masks after each activation), for the MLP fast path and the conv path; keeping every unit
// without scaling is the plain network; the masks are reproducible, independent of the thread
// count and of how a batch is split, keep units at rate 1 - p; and the members folded by
// model/dropout_masks.h predict what the masked network computes.
#include <QtTest/QtTest>

#include <cmath>
#include <cstring>
#include <functional>
#include <vector>

#include "backend/backend.h"
#include "backend/cpu/conv_net.h"
#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/fast_mlp.h"
#include "core/errors.h"
#include "math/dropout.h"
#include "math/philox.h"
#include "model/dropout_masks.h"
#include "model/mlp.h"
#include "support/backend_test_problem.h"
#include "support/reference_network.h"
#include "support/test_support.h"

using namespace ensemble;
using test::conv;
using test::dense;
using test::logSoftmax;
using test::memberParams;
using test::pool;
using test::UnitMask;

namespace {

struct Case {
    Architecture arch;
    ParamLayout layout;
    std::vector<float> params;
    std::vector<float> x;
    std::vector<int32_t> y;
    std::vector<float> w;
    int batch = 0;
};

Case makeCase(const Architecture& arch, int members, int batch, uint64_t seed) {
    Case c;
    c.arch = arch;
    c.layout = ParamLayout(arch, members);
    c.batch = batch;
    c.params.resize(c.layout.size());
    initParameters(c.layout, seed, c.params.data());
    for (float& v : c.params) {
        v *= 2.0f;  // every unit does something
    }
    for (int i = 0; i < batch * arch.inputs(); ++i) {
        c.x.push_back(
            4.0f * uniformFloat(
                       philoxDraw(seed, RngPurpose::DataGen, 0, static_cast<uint64_t>(i)).v[0]) -
            2.0f);
    }
    for (int b = 0; b < batch; ++b) {
        c.y.push_back(b * 7 % arch.outputs());
        c.w.push_back(static_cast<float>(b % 5 == 0 ? 0 : b % 3 == 0 ? 2 : 1));
    }
    return c;
}

// The masked loss (mean of weight_b * CE_b) of one member, example b masked with the training
// masks of batch position b.
double maskedLoss(const Case& c, Activation a, const std::vector<double>& p, const DropoutStep& d) {
    return test::referenceLoss(c.arch, a, p, c.x, c.y, c.w, [&d](int b) -> test::UnitMask {
        return [&d, b](int layer, int unit) {
            return static_cast<double>(
                dropoutTrainingMask(d, d.firstRow + static_cast<uint32_t>(b), layer, unit));
        };
    });
}

// The float gradient against central differences of maskedLoss, over every `stride`-th
// parameter; the relative error of the whole vector.
double finiteDifferenceError(const Case& c, Activation a, int k, const std::vector<float>& grad,
                             const DropoutStep& d, std::size_t stride, double& lossOut) {
    std::vector<double> p = memberParams(c.layout, k, c.params.data());
    lossOut = maskedLoss(c, a, p, d);
    double diff = 0.0;
    double norm = 0.0;
    const double h = 1e-6;
    for (std::size_t i = 0; i < p.size(); i += stride) {
        const double keep = p[i];
        p[i] = keep + h;
        const double up = maskedLoss(c, a, p, d);
        p[i] = keep - h;
        const double down = maskedLoss(c, a, p, d);
        p[i] = keep;
        const double fd = (up - down) / (2 * h);
        diff += (grad[i] - fd) * (grad[i] - fd);
        norm += fd * fd;
    }
    return norm > 0.0 ? std::sqrt(diff / norm) : INFINITY;
}

DropoutStep dropoutAt(float rate, uint64_t step, uint32_t member, uint32_t firstRow = 0) {
    DropoutStep d;
    d.rate = rate;
    d.seed = 0xD80F0047ull;
    d.step = step;
    d.member = member;
    d.firstRow = firstRow;
    return d;
}

std::vector<int32_t> identityRows(int n, int first = 0) {
    std::vector<int32_t> rows;
    for (int b = 0; b < n; ++b) {
        rows.push_back(first + b);
    }
    return rows;
}

// The fast path's gradient of member k over examples [first, first + n) of the case.
float fastGradient(const Case& c, Activation a, int k, const DropoutStep& d, int first, int n,
                   int normaliser, std::vector<float>& grad, FastWorkspace* keep = nullptr) {
    FastBatch in;
    in.resize(c.layout, n);
    const std::vector<int32_t> rows = identityRows(n, first);
    fastGather(c.layout, c.x.data(), rows.data(), n, in);
    FastWorkspace local;
    FastWorkspace& ws = keep != nullptr ? *keep : local;
    ws.resize(c.layout, n, false, d.on());
    grad.assign(c.layout.perMember(), 0.0f);
    return fastMemberGradient(c.layout, k, a, c.params.data(), in, c.y.data() + first,
                              c.w.data() + first, ws, grad.data(), Likelihood::Categorical, nullptr,
                              normaliser, 0.0f, d);
}

// CpuBackend trained `steps` steps on spirals with dropout; its parameters.
std::vector<float> trainCpu(const ParamLayout& layout, const test::Problem& base, float rate,
                            int threads, int steps) {
    TrainingProblem tp = base.training;
    tp.layout = layout;
    tp.rules.assign(static_cast<std::size_t>(layout.members()), tp.rules.front());
    tp.dropout = rate;
    tp.dropoutSeed = 99;
    CpuBackend backend(threads);
    backend.bind(tp);
    std::vector<float> params(layout.size());
    initParameters(layout, 5, params.data());
    backend.setParameters(params.data());
    std::vector<uint8_t> active(static_cast<std::size_t>(layout.members()), 1);
    std::vector<float> losses(static_cast<std::size_t>(layout.members()));
    for (int s = 0; s < steps; ++s) {
        backend.step(static_cast<uint64_t>(s), active.data(), losses.data());
        for (float l : losses) {
            if (!std::isfinite(l)) {
                return {};
            }
        }
    }
    backend.parameters(params.data());
    return params;
}

}  // namespace

class TestDropout : public QObject {
    Q_OBJECT

  private Q_SLOTS:
    void mlpGradientMatchesFiniteDifferences_data();
    void mlpGradientMatchesFiniteDifferences();
    void cnnGradientMatchesFiniteDifferences_data();
    void cnnGradientMatchesFiniteDifferences();
    void simdMasksAreTheSharedDraw();
    void shardsOfABatchAddUp();
    void keepingEveryUnitIsThePlainNetwork();
    void keepRateIsOneMinusP();
    void trainingIsReproducibleOverThreads();
    void foldedMembersPredictTheMaskedNetwork_data();
    void foldedMembersPredictTheMaskedNetwork();
    void invalidRatesAreRefused();
};

void TestDropout::mlpGradientMatchesFiniteDifferences_data() {
    QTest::addColumn<QVector<int>>("widths");
    QTest::addColumn<int>("batch");
    QTest::addColumn<int>("activation");
    QTest::addColumn<int>("stride");
    QTest::newRow("3-7-6-3 tanh") << QVector<int>{3, 7, 6, 3} << 19
                                  << static_cast<int>(Activation::Tanh) << 1;
    QTest::newRow("2-32-32-2 relu")
        << QVector<int>{2, 32, 32, 2} << 32 << static_cast<int>(Activation::Relu) << 1;
    QTest::newRow("5-17-9-3 gelu")
        << QVector<int>{5, 17, 9, 3} << 21 << static_cast<int>(Activation::Gelu) << 1;
    // Large enough for Eigen's GEMM in every product (a sample of the parameters).
    QTest::newRow("300-64-70-10 relu (GEMM path)")
        << QVector<int>{300, 64, 70, 10} << 64 << static_cast<int>(Activation::Relu) << 97;
}

void TestDropout::mlpGradientMatchesFiniteDifferences() {
    QFETCH(QVector<int>, widths);
    QFETCH(int, batch);
    QFETCH(int, activation);
    QFETCH(int, stride);
    const auto a = static_cast<Activation>(activation);
    const Case c =
        makeCase(Architecture::mlp(std::vector<int>(widths.begin(), widths.end())), 3, batch, 11);
    const DropoutStep d = dropoutAt(0.3f, 17, 1);
    std::vector<float> grad;
    const float loss = fastGradient(c, a, 1, d, 0, batch, 0, grad);
    double refLoss = 0.0;
    const double error =
        finiteDifferenceError(c, a, 1, grad, d, static_cast<std::size_t>(stride), refLoss);
    ENSEMBLE_COMPARE_NEAR_SCALED(loss, refLoss, test::kFloatRounding);
    QVERIFY2(error < 1e-4, qPrintable(QStringLiteral("relative gradient error %1").arg(error)));
    // The masks matter: without them the loss is another one.
    std::vector<float> plain;
    const float plainLoss = fastGradient(c, a, 1, DropoutStep{}, 0, batch, 0, plain);
    QVERIFY(std::abs(plainLoss - loss) > 1e-3f * std::abs(loss));
}

void TestDropout::cnnGradientMatchesFiniteDifferences_data() {
    QTest::addColumn<int>("shape");
    QTest::addColumn<int>("activation");
    QTest::newRow("conv-avg-conv-dense-dense tanh") << 0 << static_cast<int>(Activation::Tanh);
    QTest::newRow("conv-max-conv relu") << 1 << static_cast<int>(Activation::Relu);
}

void TestDropout::cnnGradientMatchesFiniteDifferences() {
    QFETCH(int, shape);
    QFETCH(int, activation);
    const auto a = static_cast<Activation>(activation);
    const Architecture arch =
        shape == 0 ? Architecture::stack({2, 9, 9},
                                         {conv(3, 3), pool(PoolKind::Avg, 2),
                                          conv(4, 2, 2, Padding::Valid), dense(5), dense(4)},
                                         3)
                   : Architecture::stack({1, 8, 8},
                                         {conv(4, 3), pool(PoolKind::Max, 2), conv(3, 3, 2)}, 3);
    // 37 examples: two groups of the conv path (32 and 5), the second at batch position 32.
    const int batch = 37;
    const Case c = makeCase(arch, 2, batch, 13);
    ConvNetCpu net;
    net.bind(c.layout, a, batch, 2, 0, 0.4f);
    net.setDropoutStep(0xD80F0047ull, 23, 4, 0);
    std::vector<float> grad(c.layout.perMember());
    const ConvMemberBatch mb{c.x.data(), c.y.data(), c.w.data()};
    const float loss = net.gradient(1, c.params.data(), mb, batch, grad.data());
    double refLoss = 0.0;
    const double error = finiteDifferenceError(c, a, 1, grad, dropoutAt(0.4f, 23, 5), 1, refLoss);
    ENSEMBLE_COMPARE_NEAR_SCALED(loss, refLoss, test::kFloatRounding);
    QVERIFY2(error < 1e-4, qPrintable(QStringLiteral("relative gradient error %1").arg(error)));
}

void TestDropout::simdMasksAreTheSharedDraw() {
    // The fast path's masks (16 rows of SIMD words at a time) are dropoutTrainingMask's, the
    // host/device function the CUDA kernels call, at the examples' batch positions.
    const Case c = makeCase(Architecture::mlp({4, 37, 9, 2}), 2, 45, 3);
    const DropoutStep d = dropoutAt(0.25f, 0x123456789ull, 7, 90);
    std::vector<float> grad;
    FastWorkspace ws;
    fastGradient(c, Activation::Relu, 0, d, 0, c.batch, 0, grad, &ws);
    const int bp = ws.paddedBatch;
    int dropped = 0;
    for (int l = 0; l < 2; ++l) {
        const int units = c.layout.layer(l).out;
        for (int u = 0; u < units; ++u) {
            for (int b = 0; b < bp; ++b) {
                const float got =
                    ws.dropMask[static_cast<std::size_t>(l)][static_cast<std::size_t>(u) * bp + b];
                const float want = b < c.batch ? dropoutTrainingMask(d, 90u + b, l, u) : 0.0f;
                QCOMPARE(got, want);
                dropped += b < c.batch && want == 0.0f ? 1 : 0;
            }
        }
    }
    QVERIFY(dropped > 0);
}

void TestDropout::shardsOfABatchAddUp() {
    // A data axis's replicas mask their rows at their batch positions: the halves' gradients,
    // each over the whole batch's size, add up to the whole batch's.
    const Case c = makeCase(Architecture::mlp({3, 12, 10, 3}), 1, 40, 5);
    const DropoutStep whole = dropoutAt(0.5f, 3, 0, 0);
    std::vector<float> all, first, second;
    const float loss = fastGradient(c, Activation::Tanh, 0, whole, 0, 40, 40, all);
    const float l0 =
        fastGradient(c, Activation::Tanh, 0, dropoutAt(0.5f, 3, 0, 0), 0, 20, 40, first);
    const float l1 =
        fastGradient(c, Activation::Tanh, 0, dropoutAt(0.5f, 3, 0, 20), 20, 20, 40, second);
    ENSEMBLE_COMPARE_NEAR_SCALED(l0 + l1, loss, test::kFloatRounding);
    std::vector<double> sum, expected;
    for (std::size_t i = 0; i < all.size(); ++i) {
        sum.push_back(static_cast<double>(first[i]) + second[i]);
        expected.push_back(all[i]);
    }
    QVERIFY(test::relativeDifference(sum, expected) < test::kFloatRounding);
}

void TestDropout::keepingEveryUnitIsThePlainNetwork() {
    // A rate so small that every draw keeps and the scale 1 / (1 - rate) rounds to 1: the
    // dropout path runs (masks drawn, multiplied, the backward through them) and must give
    // the plain network's bits.
    const float tiny = 1e-30f;
    QCOMPARE(dropoutScale(tiny), 1.0f);
    const DropoutStep d = dropoutAt(tiny, 4, 0);
    for (Activation a : {Activation::Relu, Activation::Tanh, Activation::Gelu}) {
        const Case c = makeCase(Architecture::mlp({3, 20, 11, 3}), 1, 33, 9);
        std::vector<float> masked, plain;
        FastWorkspace ws;
        const float lm = fastGradient(c, a, 0, d, 0, c.batch, 0, masked, &ws);
        const float lp = fastGradient(c, a, 0, DropoutStep{}, 0, c.batch, 0, plain);
        for (int l = 0; l < 2; ++l) {
            for (int u = 0; u < c.layout.layer(l).out; ++u) {
                for (int b = 0; b < c.batch; ++b) {
                    QCOMPARE(ws.dropMask[static_cast<std::size_t>(l)]
                                        [static_cast<std::size_t>(u) * ws.paddedBatch + b],
                             1.0f);
                }
            }
        }
        QCOMPARE(lm, lp);
        QVERIFY(std::memcmp(masked.data(), plain.data(), sizeof(float) * plain.size()) == 0);
    }
    // The conv path.
    const Case c =
        makeCase(Architecture::stack({1, 8, 8}, {conv(4, 3), pool(PoolKind::Max, 2), dense(6)}, 3),
                 1, 40, 9);
    const ConvMemberBatch mb{c.x.data(), c.y.data(), c.w.data()};
    ConvNetCpu masked;
    masked.bind(c.layout, Activation::Tanh, c.batch, 1, 0, tiny);
    masked.setDropoutStep(1, 2, 0, 0);
    ConvNetCpu plain;
    plain.bind(c.layout, Activation::Tanh, c.batch, 1);
    std::vector<float> gm(c.layout.perMember()), gp(c.layout.perMember());
    QCOMPARE(masked.gradient(0, c.params.data(), mb, c.batch, gm.data()),
             plain.gradient(0, c.params.data(), mb, c.batch, gp.data()));
    QVERIFY(std::memcmp(gm.data(), gp.data(), sizeof(float) * gp.size()) == 0);
    // mc_dropout's members with every unit kept and no scaling: K copies of the network.
    const std::vector<float> one(c.params.begin(), c.params.end());
    const std::vector<float> folded = foldDropoutMasks(c.arch, one.data(), 0.0f, 3, 4);
    const ParamLayout four(c.arch, 4);
    for (int k = 0; k < 4; ++k) {
        QCOMPARE(memberParams(four, k, folded.data()), memberParams(c.layout, 0, one.data()));
    }
}

void TestDropout::keepRateIsOneMinusP() {
    // Fixed seeds: the counts are what they are; the bound is 6 binomial standard deviations.
    for (float p : {0.1f, 0.5f, 0.8f}) {
        const double n = 64.0 * 50 * 100;
        double kept = 0.0;
        for (uint32_t row = 0; row < 64; ++row) {
            for (int unit = 0; unit < 50; ++unit) {
                for (uint64_t step = 0; step < 100; ++step) {
                    const float m = dropoutTrainingMask(dropoutAt(p, step, 3), row, unit % 2, unit);
                    QVERIFY(m == 0.0f || m == dropoutScale(p));
                    kept += m != 0.0f ? 1.0 : 0.0;
                }
            }
        }
        const double sd = std::sqrt(n * p * (1.0 - p));
        QVERIFY2(std::abs(kept - n * (1.0 - p)) < 6.0 * sd,
                 qPrintable(QStringLiteral("p %1: kept %2 of %3").arg(p).arg(kept).arg(n)));
        // Members' fixed masks: the same rate over members and units.
        double memberKept = 0.0;
        const double members = 400.0;
        const double units = 300.0;
        for (uint32_t k = 0; k < members; ++k) {
            for (int u = 0; u < units; ++u) {
                memberKept += dropoutMemberMask(77, k, 1, u, p) != 0.0f ? 1.0 : 0.0;
            }
        }
        const double m = members * units;
        QVERIFY(std::abs(memberKept - m * (1.0 - p)) < 6.0 * std::sqrt(m * p * (1.0 - p)));
    }
    // The two streams are different: a member's mask is not the training mask of step 0.
    int same = 0;
    for (int u = 0; u < 256; ++u) {
        same += dropoutMemberMask(5, 0, 0, u, 0.5f) ==
                        dropoutTrainingMask(dropoutAt(0.5f, 0, 0), 0, 0, u)
                    ? 1
                    : 0;
    }
    QVERIFY(same < 200);
}

void TestDropout::trainingIsReproducibleOverThreads() {
    test::ProblemShape shape;
    shape.members = 3;
    const test::Problem base =
        test::makeProblem(BootstrapMode::Resample, OptimizerKind::Adam, Activation::Relu, shape);
    const ParamLayout mlp({2, 16, 12, 2}, 3);
    const std::vector<float> a = trainCpu(mlp, base, 0.3f, 1, 20);
    QVERIFY(!a.empty());
    QCOMPARE(trainCpu(mlp, base, 0.3f, 2, 20), a);
    QCOMPARE(trainCpu(mlp, base, 0.3f, 1, 20), a);
    QVERIFY(trainCpu(mlp, base, 0.0f, 1, 20) != a);
    // A CNN on 2 x 1 "images" of the same spirals: one channel per coordinate.
    const ParamLayout cnn(Architecture::stack({2, 1, 1}, {conv(6, 1), dense(5)}, 2), 2);
    const std::vector<float> c = trainCpu(cnn, base, 0.3f, 1, 10);
    QVERIFY(!c.empty());
    QCOMPARE(trainCpu(cnn, base, 0.3f, 2, 10), c);
    QVERIFY(trainCpu(cnn, base, 0.0f, 2, 10) != c);
}

void TestDropout::foldedMembersPredictTheMaskedNetwork_data() {
    QTest::addColumn<int>("shape");
    QTest::newRow("mlp 3-9-7-3") << 0;
    QTest::newRow("conv-max-conv-avg-dense-dense") << 1;
    QTest::newRow("conv-conv") << 2;
}

void TestDropout::foldedMembersPredictTheMaskedNetwork() {
    QFETCH(int, shape);
    const Architecture arch =
        shape == 0   ? Architecture::mlp({3, 9, 7, 3})
        : shape == 1 ? Architecture::stack({2, 8, 8},
                                           {conv(3, 3), pool(PoolKind::Max, 2), conv(4, 3),
                                            pool(PoolKind::Avg, 2), dense(6), dense(5)},
                                           3)
                     : Architecture::stack({1, 6, 6}, {conv(3, 3), conv(4, 3, 2)}, 3);
    const int members = 5;
    const float rate = 0.35f;
    const uint64_t seed = 2024;
    const Case c = makeCase(arch, 1, 23, 17);
    const std::vector<float> folded =
        foldDropoutMasks(arch, c.params.data(), rate, seed, members, 10);

    // Every existing prediction path runs the folded members: CpuBackend's here.
    TrainingProblem tp;
    tp.layout = ParamLayout(arch, members);
    tp.activation = Activation::Tanh;
    tp.rules.assign(static_cast<std::size_t>(members), makeRule(OptimizerKind::Sgd, 0.1, 0, 0));
    CpuBackend backend(2);
    backend.bind(tp);
    backend.setParameters(folded.data());
    const int classes = arch.outputs();
    std::vector<float> logProbs(static_cast<std::size_t>(members) * c.batch * classes);
    backend.predictLogProbs(c.x.data(), c.batch, logProbs.data());

    const std::vector<double> p = memberParams(c.layout, 0, c.params.data());
    int differs = 0;
    for (int k = 0; k < members; ++k) {
        const std::vector<std::vector<float>> masks =
            dropoutMemberMasks(arch, rate, seed, 10u + static_cast<uint32_t>(k));
        const UnitMask mask = [&](int layer, int unit) {
            return static_cast<double>(
                masks[static_cast<std::size_t>(layer)][static_cast<std::size_t>(unit)]);
        };
        for (int b = 0; b < c.batch; ++b) {
            const float* x = c.x.data() + static_cast<std::size_t>(b) * arch.inputs();
            const std::vector<double> want =
                logSoftmax(test::referenceForward(arch, Activation::Tanh, p, x, mask));
            const std::vector<double> plain = logSoftmax(
                test::referenceForward(arch, Activation::Tanh, p, x, [](int, int) { return 1.0; }));
            for (int cl = 0; cl < classes; ++cl) {
                const float got =
                    logProbs[(static_cast<std::size_t>(k) * c.batch + b) * classes + cl];
                ENSEMBLE_COMPARE_NEAR_SCALED(got, want[static_cast<std::size_t>(cl)],
                                             test::kFloatRounding);
                differs += std::abs(want[static_cast<std::size_t>(cl)] -
                                    plain[static_cast<std::size_t>(cl)]) > 1e-3
                               ? 1
                               : 0;
            }
        }
    }
    QVERIFY2(differs > 0, "the members equal the plain network: the check would be empty");
    // Regenerated from the stored seed: the same members again.
    QCOMPARE(foldDropoutMasks(arch, c.params.data(), rate, seed, members, 10), folded);
}

void TestDropout::invalidRatesAreRefused() {
    test::Problem base =
        test::makeProblem(BootstrapMode::None, OptimizerKind::Adam, Activation::Relu);
    for (float bad : {-0.1f, 1.0f, 1.5f, NAN}) {
        base.training.dropout = bad;
        CpuBackend backend(1);
        try {
            backend.bind(base.training);
            QFAIL("bind accepted a dropout rate outside [0, 1)");
        } catch (const ConfigError& e) {
            QVERIFY(QString::fromStdString(e.what()).startsWith("model.dropout"));
        }
        QVERIFY_THROWS_EXCEPTION(ConfigError,
                                 dropoutMemberMasks(Architecture::mlp({2, 3, 2}), bad, 1, 0));
    }
}

QTEST_GUILESS_MAIN(TestDropout)
#include "tst_dropout.moc"
