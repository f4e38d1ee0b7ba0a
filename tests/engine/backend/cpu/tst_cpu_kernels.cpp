// The CPU backend's fast paths against their definitions: the SIMD batch planner against
// planMember (bit for bit), the float SIMD kernels against the templated reference
// memberForwardBackward run in double, the vectorised optimizer update against applyUpdate.
#include <QtTest/QtTest>

#include <cmath>
#include <cstring>
#include <vector>

#include "backend/cpu/batch_plan_simd.h"
#include "backend/cpu/fast_mlp.h"
#include "backend/cpu/mlp_kernels.h"
#include "math/loss.h"
#include "math/philox.h"
#include "model/mlp.h"
#include "sampling/batch_plan.h"
#include "support/test_support.h"

using namespace ensemble;

class TestCpuKernels : public QObject {
    Q_OBJECT

  private Q_SLOTS:
    void simdPlanEqualsPlanMember_data();
    void simdPlanEqualsPlanMember();
    void simdPoissonWeightsEqualPoissonCount();
    void fastGradientMatchesReference_data();
    void fastGradientMatchesReference();
    void fastUpdateMatchesApplyUpdate_data();
    void fastUpdateMatchesApplyUpdate();
    void fastTrainMemberIsGradientThenUpdate();
    void fastPredictionMatchesReference();
    void fastRegressionGradientMatchesReference_data();
    void fastRegressionGradientMatchesReference();
    void fastRegressionPredictionMatchesReference();
    // training.adversarial_eps: the reference input gradient against finite differences, the
    // objective loss(x) + loss(x + eps sign(dloss/dx)) (sign held fixed) against finite
    // differences, the fast path against that reference; eps = 0 is the plain step, bit for bit.
    void adversarialGradientMatchesFiniteDifferences_data();
    void adversarialGradientMatchesFiniteDifferences();
    void adversarialZeroIsThePlainStep();
};

namespace {

double uniformAt(uint64_t seed, uint64_t i) {
    return uniformFloat(philoxDraw(seed, RngPurpose::DataGen, 0, i).v[0]);
}

// A member's problem: Philox-random parameters (scaled so every unit does something), inputs,
// labels and example weights (some 0 and 2, as under Poisson).
struct KernelCase {
    ParamLayout layout;
    int batch = 0;
    int member = 0;
    std::vector<float> params;
    std::vector<float> x;
    std::vector<int32_t> labels;
    std::vector<float> weights;

    KernelCase(std::vector<int> widths, int members, int rows, int k)
        : layout(std::move(widths), members), batch(rows), member(k) {
        params.resize(layout.size());
        initParameters(layout, 11, params.data());
        for (float& p : params) {
            p *= 2.0f;
        }
        const int inputs = layout.inputs();
        for (int i = 0; i < batch * inputs; ++i) {
            x.push_back(static_cast<float>(4.0 * uniformAt(3, static_cast<uint64_t>(i)) - 2.0));
        }
        for (int b = 0; b < batch; ++b) {
            labels.push_back(static_cast<int32_t>(b * 7 % layout.classes()));
            weights.push_back(static_cast<float>(b % 5 == 0 ? 0 : b % 3 == 0 ? 2 : 1));
        }
    }

    std::vector<double> toDouble(const std::vector<float>& v) const {
        return std::vector<double>(v.begin(), v.end());
    }

    // Reference loss and gradient, in double.
    double reference(Activation act, std::vector<double>& grad) const {
        const std::vector<double> pd = toDouble(params);
        const std::vector<double> xd = toDouble(x);
        const std::vector<double> wd = toDouble(weights);
        MemberWorkspace<double> ws;
        ws.resize(layout, batch);
        grad.assign(layout.perMember(), 0.0);
        return memberForwardBackward(layout, member, act, pd.data(), xd.data(), labels.data(),
                                     wd.data(), batch, ws, grad.data());
    }

    std::vector<int32_t> identityRows() const {
        std::vector<int32_t> rows(static_cast<std::size_t>(batch));
        for (int b = 0; b < batch; ++b) {
            rows[static_cast<std::size_t>(b)] = b;
        }
        return rows;
    }
};

}  // namespace

void TestCpuKernels::simdPlanEqualsPlanMember_data() {
    QTest::addColumn<int>("mode");
    QTest::newRow("none") << static_cast<int>(BootstrapMode::None);
    QTest::newRow("resample") << static_cast<int>(BootstrapMode::Resample);
    QTest::newRow("poisson") << static_cast<int>(BootstrapMode::Poisson);
}

void TestCpuKernels::simdPlanEqualsPlanMember() {
    QFETCH(int, mode);
    // Row counts around powers of two (cycle walking), below the batch (several epochs in one
    // batch) and 1; batches that are and are not multiples of 16.
    for (uint32_t n : {1u, 2u, 3u, 7u, 16u, 31u, 800u, 1000u, 1024u, 1025u, 60000u}) {
        for (uint32_t batch : {1u, 5u, 16u, 32u, 33u, 100u}) {
            const BatchPlanParams params{0x1234567890ABCDEFull, n, batch,
                                         static_cast<BootstrapMode>(mode)};
            for (uint32_t member : {0u, 3u, 999u}) {
                for (uint64_t step :
                     {uint64_t{0}, uint64_t{1}, uint64_t{7}, uint64_t{31}, uint64_t{1000003}}) {
                    std::vector<uint32_t> rowsA(batch), rowsB(batch);
                    std::vector<float> wA(batch), wB(batch);
                    planMember(params, member, step, rowsA.data(), wA.data());
                    planMemberSimd(params, member, step, rowsB.data(), wB.data());
                    QVERIFY2(rowsA == rowsB,
                             qPrintable(QStringLiteral("n %1 batch %2 member %3 step %4")
                                            .arg(n)
                                            .arg(batch)
                                            .arg(member)
                                            .arg(step)));
                    QVERIFY(std::memcmp(wA.data(), wB.data(), sizeof(float) * batch) == 0);
                }
            }
        }
    }
}

void TestCpuKernels::simdPoissonWeightsEqualPoissonCount() {
    std::vector<uint32_t> rows;
    for (uint32_t i = 0; i < 77; ++i) {
        rows.push_back(i * 2654435761u % 100000u);
    }
    for (uint32_t member : {0u, 5u, 123u}) {
        std::vector<float> w(rows.size());
        poissonWeightsSimd(99, member, rows.data(), static_cast<int>(rows.size()), w.data());
        for (std::size_t b = 0; b < rows.size(); ++b) {
            QCOMPARE(w[b], static_cast<float>(poissonCount(99, member, rows[b])));
        }
    }
}

void TestCpuKernels::fastGradientMatchesReference_data() {
    QTest::addColumn<QVector<int>>("widths");
    QTest::addColumn<int>("batch");
    QTest::addColumn<int>("activation");
    // The spirals network; odd widths and a batch that is not a multiple of any SIMD width;
    // a layer large enough for the Eigen GEMM path next to small ones.
    QTest::newRow("2-32-32-2 relu")
        << QVector<int>{2, 32, 32, 2} << 32 << static_cast<int>(Activation::Relu);
    QTest::newRow("3-5-4-3 tanh") << QVector<int>{3, 5, 4, 3} << 6
                                  << static_cast<int>(Activation::Tanh);
    QTest::newRow("5-17-3 gelu") << QVector<int>{5, 17, 3} << 19
                                 << static_cast<int>(Activation::Gelu);
    QTest::newRow("2-100-7 relu") << QVector<int>{2, 100, 7} << 37
                                  << static_cast<int>(Activation::Relu);
    QTest::newRow("300-64-70-10 relu (GEMM path)")
        << QVector<int>{300, 64, 70, 10} << 64 << static_cast<int>(Activation::Relu);
}

void TestCpuKernels::fastGradientMatchesReference() {
    QFETCH(QVector<int>, widths);
    QFETCH(int, batch);
    QFETCH(int, activation);
    const auto act = static_cast<Activation>(activation);
    const KernelCase c(std::vector<int>(widths.begin(), widths.end()), 3, batch, 1);
    std::vector<double> expected;
    const double loss = c.reference(act, expected);

    FastBatch in;
    in.resize(c.layout, batch);
    const std::vector<int32_t> rows = c.identityRows();
    fastGather(c.layout, c.x.data(), rows.data(), batch, in);
    FastWorkspace ws;
    ws.resize(c.layout, batch);
    std::vector<float> grad(c.layout.perMember());
    const float fastLoss = fastMemberGradient(c.layout, c.member, act, c.params.data(), in,
                                              c.labels.data(), c.weights.data(), ws, grad.data());
    ENSEMBLE_COMPARE_NEAR(fastLoss, loss, test::kFloatRounding * std::abs(loss));
    const double error = test::relativeDifference(c.toDouble(grad), expected);
    QVERIFY2(error < test::kFloatRounding,
             qPrintable(QStringLiteral("relative gradient error %1").arg(error)));
}

void TestCpuKernels::fastUpdateMatchesApplyUpdate_data() {
    QTest::addColumn<int>("kind");
    QTest::addColumn<double>("weightDecay");
    QTest::addColumn<double>("momentum");
    QTest::addColumn<bool>("first");
    QTest::newRow("adam") << static_cast<int>(OptimizerKind::Adam) << 0.0 << 0.0 << false;
    QTest::newRow("adam l2") << static_cast<int>(OptimizerKind::Adam) << 0.01 << 0.0 << false;
    QTest::newRow("adamw") << static_cast<int>(OptimizerKind::AdamW) << 0.05 << 0.0 << false;
    QTest::newRow("sgd") << static_cast<int>(OptimizerKind::Sgd) << 0.0 << 0.0 << false;
    QTest::newRow("sgd momentum first")
        << static_cast<int>(OptimizerKind::Sgd) << 0.01 << 0.9 << true;
    QTest::newRow("sgd momentum") << static_cast<int>(OptimizerKind::Sgd) << 0.01 << 0.9 << false;
}

void TestCpuKernels::fastUpdateMatchesApplyUpdate() {
    QFETCH(int, kind);
    QFETCH(double, weightDecay);
    QFETCH(double, momentum);
    QFETCH(bool, first);
    OptimizerRule rule = makeRule(static_cast<OptimizerKind>(kind), 0.01, weightDecay, momentum);
    prepareStep(rule, 3);
    const std::size_t n = 37;  // vectors and a scalar tail
    std::vector<float> p(n), g(n), m(n), v(n);
    for (std::size_t i = 0; i < n; ++i) {
        p[i] = static_cast<float>(uniformAt(1, i) - 0.5);
        g[i] = static_cast<float>(uniformAt(2, i) - 0.5);
        m[i] = static_cast<float>(0.1 * (uniformAt(4, i) - 0.5));
        v[i] = static_cast<float>(0.01 * uniformAt(5, i));
    }
    std::vector<float> p2 = p, m2 = m, v2 = v;
    fastApplyUpdate(rule, first, p.data(), g.data(), m.data(), v.data(), n);
    for (std::size_t i = 0; i < n; ++i) {
        applyUpdate(rule, first, p2[i], g[i], m2[i], v2[i]);
    }
    for (std::size_t i = 0; i < n; ++i) {
        // The same operations; only where the compiler fuses a multiply-add may differ.
        ENSEMBLE_COMPARE_NEAR(p[i], p2[i], test::kFloatInput * (std::abs(p2[i]) + 1e-3));
        ENSEMBLE_COMPARE_NEAR(m[i], m2[i], test::kFloatInput * (std::abs(m2[i]) + 1e-6));
        ENSEMBLE_COMPARE_NEAR(v[i], v2[i], test::kFloatInput * (std::abs(v2[i]) + 1e-9));
    }
}

void TestCpuKernels::fastTrainMemberIsGradientThenUpdate() {
    const KernelCase c({2, 32, 32, 2}, 4, 32, 2);
    OptimizerRule rule = makeRule(OptimizerKind::Adam, 0.01, 0.0, 0.0);
    prepareStep(rule, 1);
    FastBatch in;
    in.resize(c.layout, c.batch);
    const std::vector<int32_t> rows = c.identityRows();
    fastGather(c.layout, c.x.data(), rows.data(), c.batch, in);
    FastWorkspace ws;
    ws.resize(c.layout, c.batch);

    // Gradient, then the scalar update, member by member parameter.
    std::vector<float> grad(c.layout.perMember());
    fastMemberGradient(c.layout, c.member, Activation::Relu, c.params.data(), in, c.labels.data(),
                       c.weights.data(), ws, grad.data());
    std::vector<float> expected = c.params;
    std::vector<float> m1(c.layout.size(), 0.0f), m2(c.layout.size(), 0.0f);
    std::size_t g = 0;
    for (int l = 0; l < c.layout.layerCount(); ++l) {
        const LayerSlot& s = c.layout.layer(l);
        const std::size_t w = c.layout.weightOffset(l, c.member);
        for (int i = 0; i < s.out * s.in; ++i, ++g) {
            applyUpdate(rule, true, expected[w + i], grad[g], m1[w + i], m2[w + i]);
        }
        const std::size_t b = c.layout.biasOffset(l, c.member);
        for (int i = 0; i < s.out; ++i, ++g) {
            applyUpdate(rule, true, expected[b + i], grad[g], m1[b + i], m2[b + i]);
        }
    }

    std::vector<float> params = c.params;
    std::vector<float> n1(c.layout.size(), 0.0f), n2(c.layout.size(), 0.0f);
    fastTrainMember(c.layout, c.member, Activation::Relu, params.data(), n1.data(), n2.data(), rule,
                    true, in, c.labels.data(), c.weights.data(), ws);
    double worst = 0.0;
    for (std::size_t i = 0; i < params.size(); ++i) {
        worst = std::max(worst, std::abs(static_cast<double>(params[i]) - expected[i]));
    }
    QVERIFY2(worst < test::kFloatInput,
             qPrintable(QStringLiteral("largest difference %1").arg(worst)));
    // Other members are untouched.
    const std::size_t w0 = c.layout.weightOffset(0, 0);
    QCOMPARE(params[w0], c.params[w0]);
}

void TestCpuKernels::fastPredictionMatchesReference() {
    const KernelCase c({2, 32, 32, 3}, 3, 37, 2);
    FastWorkspace ws;
    ws.resize(c.layout, 64);
    std::vector<float> out(static_cast<std::size_t>(c.batch) * 3);
    fastPredictLogProbs(c.layout, c.member, Activation::Tanh, c.params.data(), c.x.data(), c.batch,
                        ws, out.data());

    const std::vector<double> pd = c.toDouble(c.params);
    const std::vector<double> xd = c.toDouble(c.x);
    MemberWorkspace<double> ref;
    ref.resize(c.layout, c.batch);
    const double* logits =
        memberForward(c.layout, c.member, Activation::Tanh, pd.data(), xd.data(), c.batch, ref);
    for (int i = 0; i < c.batch; ++i) {
        const double lse = logSumExp(logits + 3 * i, 3);
        for (int k = 0; k < 3; ++k) {
            ENSEMBLE_COMPARE_NEAR(out[static_cast<std::size_t>(3 * i + k)], logits[3 * i + k] - lse,
                                  test::kFloatRounding * (1.0 + std::abs(logits[3 * i + k] - lse)));
        }
    }
}

void TestCpuKernels::fastRegressionGradientMatchesReference_data() {
    QTest::addColumn<QVector<int>>("hidden");
    QTest::addColumn<int>("batch");
    QTest::addColumn<int>("likelihood");
    const int gaussian = static_cast<int>(Likelihood::Gaussian);
    const int mse = static_cast<int>(Likelihood::Mse);
    QTest::newRow("1-100-2 gaussian (cubic)") << QVector<int>{1, 100} << 20 << gaussian;
    QTest::newRow("3-5-4-2 gaussian") << QVector<int>{3, 5, 4} << 6 << gaussian;
    QTest::newRow("2-32-32-1 mse") << QVector<int>{2, 32, 32} << 37 << mse;
    QTest::newRow("5-1 mse (linear model)") << QVector<int>{5} << 19 << mse;
    QTest::newRow("300-64-2 gaussian (GEMM path)") << QVector<int>{300, 64} << 64 << gaussian;
}

void TestCpuKernels::fastRegressionGradientMatchesReference() {
    QFETCH(QVector<int>, hidden);
    QFETCH(int, batch);
    QFETCH(int, likelihood);
    const auto head = static_cast<Likelihood>(likelihood);
    std::vector<int> widths(hidden.begin(), hidden.end());
    widths.push_back(headOutputs(head, 0));
    const KernelCase c(widths, 3, batch, 1);
    std::vector<float> targets;
    for (int b = 0; b < batch; ++b) {
        targets.push_back(static_cast<float>(3.0 * uniformAt(17, static_cast<uint64_t>(b)) - 1.5));
    }
    const std::vector<double> pd = c.toDouble(c.params);
    const std::vector<double> xd = c.toDouble(c.x);
    const std::vector<double> wd = c.toDouble(c.weights);
    const std::vector<double> td = c.toDouble(targets);
    MemberWorkspace<double> ref;
    ref.resize(c.layout, batch);
    std::vector<double> expected(c.layout.perMember());
    const double loss = memberForwardBackward(c.layout, c.member, Activation::Tanh, head, pd.data(),
                                              xd.data(), static_cast<const int32_t*>(nullptr),
                                              td.data(), wd.data(), batch, ref, expected.data());

    FastBatch in;
    in.resize(c.layout, batch);
    const std::vector<int32_t> rows = c.identityRows();
    fastGather(c.layout, c.x.data(), rows.data(), batch, in);
    FastWorkspace ws;
    ws.resize(c.layout, batch);
    std::vector<float> grad(c.layout.perMember());
    const float fastLoss =
        fastMemberGradient(c.layout, c.member, Activation::Tanh, c.params.data(), in, nullptr,
                           c.weights.data(), ws, grad.data(), head, targets.data());
    ENSEMBLE_COMPARE_NEAR(fastLoss, loss, test::kFloatRounding * (1.0 + std::abs(loss)));
    const double error = test::relativeDifference(c.toDouble(grad), expected);
    QVERIFY2(error < test::kFloatRounding,
             qPrintable(QStringLiteral("relative gradient error %1").arg(error)));
}

void TestCpuKernels::fastRegressionPredictionMatchesReference() {
    for (Likelihood head : {Likelihood::Gaussian, Likelihood::Mse}) {
        const int outputs = headOutputs(head, 0);
        const KernelCase c({2, 32, 32, outputs}, 3, 37, 2);
        FastWorkspace ws;
        ws.resize(c.layout, 64);
        std::vector<float> out(static_cast<std::size_t>(c.batch * outputs));
        fastPredictLogProbs(c.layout, c.member, Activation::Tanh, c.params.data(), c.x.data(),
                            c.batch, ws, out.data(), head);
        const std::vector<double> pd = c.toDouble(c.params);
        const std::vector<double> xd = c.toDouble(c.x);
        MemberWorkspace<double> ref;
        ref.resize(c.layout, c.batch);
        const double* z =
            memberForward(c.layout, c.member, Activation::Tanh, pd.data(), xd.data(), c.batch, ref);
        for (int i = 0; i < c.batch; ++i) {
            // mu, then sigma^2 = log(1 + e^raw) + 1e-6 (an independent spelling of softplus).
            const double mu = z[outputs * i];
            ENSEMBLE_COMPARE_NEAR(out[static_cast<std::size_t>(outputs * i)], mu,
                                  test::kFloatRounding * (1.0 + std::abs(mu)));
            if (head == Likelihood::Gaussian) {
                const double var = std::log1p(std::exp(z[outputs * i + 1])) + 1e-6;
                ENSEMBLE_COMPARE_NEAR(out[static_cast<std::size_t>(outputs * i + 1)], var,
                                      test::kFloatRounding * (1.0 + var));
            }
        }
    }
}

QTEST_APPLESS_MAIN(TestCpuKernels)
void TestCpuKernels::adversarialGradientMatchesFiniteDifferences_data() {
    QTest::addColumn<QVector<int>>("widths");  // the last one is the head's outputs
    QTest::addColumn<int>("batch");
    QTest::addColumn<int>("activation");
    QTest::addColumn<int>("likelihood");
    QTest::addColumn<double>("eps");
    const int relu = static_cast<int>(Activation::Relu);
    const int tanh = static_cast<int>(Activation::Tanh);
    const int gelu = static_cast<int>(Activation::Gelu);
    const int categorical = static_cast<int>(Likelihood::Categorical);
    const int gaussian = static_cast<int>(Likelihood::Gaussian);
    const int mse = static_cast<int>(Likelihood::Mse);
    QTest::newRow("2-32-32-2 relu categorical")
        << QVector<int>{2, 32, 32, 2} << 32 << relu << categorical << 0.1;
    QTest::newRow("3-5-4-3 tanh categorical")
        << QVector<int>{3, 5, 4, 3} << 6 << tanh << categorical << 0.3;
    QTest::newRow("1-100-2 tanh gaussian (cubic)")
        << QVector<int>{1, 100, 2} << 20 << tanh << gaussian << 0.05;
    QTest::newRow("2-16-1 gelu mse") << QVector<int>{2, 16, 1} << 19 << gelu << mse << 0.2;
    QTest::newRow("5-1 mse (linear model)") << QVector<int>{5, 1} << 19 << tanh << mse << 0.1;
    QTest::newRow("300-64-10 relu categorical (GEMM path)")
        << QVector<int>{300, 64, 10} << 64 << relu << categorical << 0.02;
}

void TestCpuKernels::adversarialGradientMatchesFiniteDifferences() {
    QFETCH(QVector<int>, widths);
    QFETCH(int, batch);
    QFETCH(int, activation);
    QFETCH(int, likelihood);
    QFETCH(double, eps);
    const auto act = static_cast<Activation>(activation);
    const auto head = static_cast<Likelihood>(likelihood);
    const KernelCase c(std::vector<int>(widths.begin(), widths.end()), 3, batch, 1);
    const ParamLayout& layout = c.layout;
    const int inputs = layout.inputs();
    std::vector<float> targets;
    for (int b = 0; b < batch; ++b) {
        targets.push_back(static_cast<float>(3.0 * uniformAt(17, static_cast<uint64_t>(b)) - 1.5));
    }
    const bool regression = isRegression(head);
    const int32_t* labels = regression ? nullptr : c.labels.data();
    const std::vector<double> td = c.toDouble(targets);
    const std::vector<double> wd = c.toDouble(c.weights);
    MemberWorkspace<double> ref;
    ref.resize(layout, batch);
    // The reference loss (double) at parameters p and inputs x; its gradients if asked.
    const auto loss = [&](const std::vector<double>& p, const std::vector<double>& x,
                          double* grad = nullptr, double* inputGrad = nullptr) {
        std::vector<double> scratch(layout.perMember());
        return memberForwardBackward(layout, c.member, act, head, p.data(), x.data(), labels,
                                     regression ? td.data() : nullptr, wd.data(), batch, ref,
                                     grad != nullptr ? grad : scratch.data(), inputGrad);
    };
    const std::vector<double> pd = c.toDouble(c.params);
    const std::vector<double> xd = c.toDouble(c.x);
    std::vector<double> cleanGrad(layout.perMember());
    std::vector<double> dx(xd.size());
    const double cleanLoss = loss(pd, xd, cleanGrad.data(), dx.data());

    // 1. dloss/dx against central differences.
    const double h = 1e-6;
    std::vector<double> fdx, dxSample;
    const std::size_t xStride = std::max<std::size_t>(1, xd.size() / 300);  // a sample if large
    for (std::size_t i = 0; i < xd.size(); i += xStride) {
        std::vector<double> up = xd, down = xd;
        up[i] += h;
        down[i] -= h;
        fdx.push_back((loss(pd, up) - loss(pd, down)) / (2 * h));
        dxSample.push_back(dx[i]);
    }
    const double inputError = test::relativeDifference(fdx, dxSample);
    QVERIFY2(inputError < test::kFiniteDifference,
             qPrintable(QStringLiteral("input gradient error %1").arg(inputError)));
    // Examples of weight 0 do not move (sign 0); the others do in every feature.
    for (int b = 0; b < batch; ++b) {
        for (int f = 0; f < inputs; ++f) {
            const double g = dx[static_cast<std::size_t>(b * inputs + f)];
            QCOMPARE(g == 0.0, c.weights[static_cast<std::size_t>(b)] == 0.0f);
        }
    }

    // 2. The objective J(p) = loss(p, x) + loss(p, x'), x' = x + eps sign(dx) held fixed: its
    // gradient (the two reference gradients added) against central differences in p.
    std::vector<double> xAdv(xd.size());
    for (std::size_t i = 0; i < xd.size(); ++i) {
        xAdv[i] = adversarialInput(xd[i], dx[i], eps);
    }
    std::vector<double> advGrad(layout.perMember());
    loss(pd, xAdv, advGrad.data());
    std::vector<double> expected(layout.perMember());
    for (std::size_t i = 0; i < expected.size(); ++i) {
        expected[i] = cleanGrad[i] + advGrad[i];
    }
    // Member parameters in the packed gradient's order: per layer W (out x in), then b.
    std::vector<std::size_t> where;
    for (int l = 0; l < layout.layerCount(); ++l) {
        const LayerSlot& s = layout.layer(l);
        for (int i = 0; i < s.out * s.in; ++i) {
            where.push_back(layout.weightOffset(l, c.member) + static_cast<std::size_t>(i));
        }
        for (int o = 0; o < s.out; ++o) {
            where.push_back(layout.biasOffset(l, c.member) + static_cast<std::size_t>(o));
        }
    }
    QCOMPARE(where.size(), layout.perMember());
    const std::size_t stride = std::max<std::size_t>(1, where.size() / 300);  // a sample if large
    std::vector<double> fdSample, expectedSample;
    for (std::size_t j = 0; j < where.size(); j += stride) {
        std::vector<double> up = pd, down = pd;
        up[where[j]] += h;
        down[where[j]] -= h;
        fdSample.push_back((loss(up, xd) + loss(up, xAdv) - loss(down, xd) - loss(down, xAdv)) /
                           (2 * h));
        expectedSample.push_back(expected[j]);
    }
    const double objectiveError = test::relativeDifference(fdSample, expectedSample);
    QVERIFY2(objectiveError < test::kFiniteDifference,
             qPrintable(QStringLiteral("objective gradient error %1").arg(objectiveError)));
    QVERIFY(test::relativeDifference(advGrad, std::vector<double>(advGrad.size(), 0.0)) > 0.0);

    // 3. The fast float path (fastMemberGradient with eps) against the reference.
    FastBatch in;
    in.resize(layout, batch);
    const std::vector<int32_t> rows = c.identityRows();
    fastGather(layout, c.x.data(), rows.data(), batch, in);
    FastWorkspace ws;
    ws.resize(layout, batch, true);
    std::vector<float> grad(layout.perMember());
    const float fastLoss = fastMemberGradient(
        layout, c.member, act, c.params.data(), in, labels, c.weights.data(), ws, grad.data(), head,
        regression ? targets.data() : nullptr, 0, static_cast<float>(eps));
    // The loss reported is the clean batch's.
    ENSEMBLE_COMPARE_NEAR(fastLoss, cleanLoss, test::kFloatRounding * (1.0 + std::abs(cleanLoss)));
    const double fastError = test::relativeDifference(c.toDouble(grad), expected);
    QVERIFY2(fastError < test::kFloatRounding,
             qPrintable(QStringLiteral("fast adversarial gradient error %1").arg(fastError)));

    // 4. fastTrainMember with eps is that gradient, then the update.
    OptimizerRule rule = makeRule(OptimizerKind::Sgd, 0.1, 0.0, 0.0);
    prepareStep(rule, 1);
    std::vector<float> params = c.params;
    std::vector<float> m1(layout.size(), 0.0f), m2(layout.size(), 0.0f);
    fastTrainMember(layout, c.member, act, params.data(), m1.data(), m2.data(), rule, true, in,
                    labels, c.weights.data(), ws, head, regression ? targets.data() : nullptr,
                    static_cast<float>(eps));
    double worst = 0.0;
    for (std::size_t j = 0; j < where.size(); ++j) {
        const double stepped = static_cast<double>(c.params[where[j]]) - 0.1 * grad[j];
        worst = std::max(worst, std::abs(params[where[j]] - stepped));
    }
    QVERIFY2(worst < test::kFloatInput,
             qPrintable(QStringLiteral("largest update difference %1").arg(worst)));
}

void TestCpuKernels::adversarialZeroIsThePlainStep() {
    // A workspace sized for adversarial training, eps 0: the same bits as the plain step.
    for (const bool large : {false, true}) {
        const KernelCase c(large ? std::vector<int>{300, 64, 10} : std::vector<int>{2, 32, 32, 2},
                           4, large ? 64 : 32, 2);
        FastBatch in;
        in.resize(c.layout, c.batch);
        const std::vector<int32_t> rows = c.identityRows();
        fastGather(c.layout, c.x.data(), rows.data(), c.batch, in);
        OptimizerRule rule = makeRule(OptimizerKind::Adam, 0.01, 0.0, 0.0);
        prepareStep(rule, 1);
        std::vector<float> results[2];
        for (int adversarialWorkspace = 0; adversarialWorkspace < 2; ++adversarialWorkspace) {
            FastWorkspace ws;
            ws.resize(c.layout, c.batch, adversarialWorkspace == 1);
            std::vector<float> params = c.params;
            std::vector<float> m1(c.layout.size(), 0.0f), m2(c.layout.size(), 0.0f);
            for (int step = 0; step < 3; ++step) {
                fastTrainMember(c.layout, c.member, Activation::Relu, params.data(), m1.data(),
                                m2.data(), rule, step == 0, in, c.labels.data(), c.weights.data(),
                                ws, Likelihood::Categorical, nullptr, 0.0f);
            }
            results[adversarialWorkspace] = params;
        }
        QVERIFY(results[0] != c.params);
        QVERIFY(std::memcmp(results[0].data(), results[1].data(),
                            results[0].size() * sizeof(float)) == 0);
    }
}

#include "tst_cpu_kernels.moc"
