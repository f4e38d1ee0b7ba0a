// The shared per-element math (activations, loss, optimizer rules) and one member's forward /
// backward pass, checked against finite differences and hand-computed values in double.
#include <QtTest/QtTest>

#include <cfloat>
#include <cmath>
#include <vector>

#include "backend/cpu/mlp_kernels.h"
#include "math/activations.h"
#include "math/loss.h"
#include "math/philox.h"
#include "model/mlp.h"
#include "optim/update_rules.h"
#include "support/test_support.h"

using namespace ensemble;

class TestMath : public QObject {
    Q_OBJECT

  private Q_SLOTS:
    void activationGradientsMatchFiniteDifferences_data();
    void activationGradientsMatchFiniteDifferences();
    void activationValues();
    void crossEntropyHandComputed();
    void crossEntropyGradientMatchesFiniteDifferences();
    void layerGradientsMatchFiniteDifferences_data();
    void layerGradientsMatchFiniteDifferences();
    void regressionLossesHandComputed();
    void softplusIsAccurateInFloat();
    void regressionLossGradientsMatchFiniteDifferences_data();
    void regressionLossGradientsMatchFiniteDifferences();
    void regressionLayerGradientsMatchFiniteDifferences_data();
    void regressionLayerGradientsMatchFiniteDifferences();
    void floatKernelAgreesWithDouble();
    void adamMatchesHandComputedSteps();
    void adamwDecouplesWeightDecay();
    void sgdMomentumMatchesHandComputedSteps();
    void initialisationFollowsPyTorchBound();
};

void TestMath::activationGradientsMatchFiniteDifferences_data() {
    QTest::addColumn<int>("activation");
    QTest::newRow("relu") << static_cast<int>(Activation::Relu);
    QTest::newRow("tanh") << static_cast<int>(Activation::Tanh);
    QTest::newRow("gelu") << static_cast<int>(Activation::Gelu);
}

void TestMath::activationGradientsMatchFiniteDifferences() {
    QFETCH(int, activation);
    const auto a = static_cast<Activation>(activation);
    const double h = 1e-6;
    for (double z : {-2.5, -0.7, -0.1, 0.3, 1.1, 3.0}) {
        const double numeric = (activate(a, z + h) - activate(a, z - h)) / (2 * h);
        const double analytic = activateGrad(a, z, activate(a, z));
        ENSEMBLE_COMPARE_NEAR(analytic, numeric, 1e-8);
    }
}

void TestMath::activationValues() {
    // GELU(1) = 0.5 * (1 + erf(1/sqrt 2)) = 0.841344746068543 (exact erf form).
    ENSEMBLE_COMPARE_NEAR(activate(Activation::Gelu, 1.0), 0.8413447460685429, 1e-15);
    ENSEMBLE_COMPARE_NEAR(activate(Activation::Relu, -3.0), 0.0, 0.0);
    ENSEMBLE_COMPARE_NEAR(activate(Activation::Tanh, 0.5), std::tanh(0.5), 1e-15);
}

void TestMath::crossEntropyHandComputed() {
    // logits (0, ln 3): softmax = (1/4, 3/4); label 0, weight 2, scale 1/2:
    // loss = 2 * 1/2 * -ln(1/4) = ln 4; dlogits = 2 * 1/2 * (1/4 - 1, 3/4) = (-3/4, 3/4).
    const double logits[2] = {0.0, std::log(3.0)};
    double grad[2];
    const double loss = softmaxCrossEntropy(logits, 2, 0, 2.0, 0.5, grad);
    ENSEMBLE_COMPARE_NEAR(loss, std::log(4.0), test::kExactDouble);
    ENSEMBLE_COMPARE_NEAR(grad[0], -0.75, test::kExactDouble);
    ENSEMBLE_COMPARE_NEAR(grad[1], 0.75, test::kExactDouble);
    // A weight of 0 (Poisson out-of-bag) contributes nothing.
    ENSEMBLE_COMPARE_NEAR(softmaxCrossEntropy(logits, 2, 1, 0.0, 1.0, grad), 0.0, 0.0);
    ENSEMBLE_COMPARE_NEAR(grad[0], 0.0, 0.0);
    // Huge logits stay finite (log-sum-exp is shifted by the maximum).
    const double big[3] = {1000.0, 0.0, -1000.0};
    double bigGrad[3];
    ENSEMBLE_COMPARE_NEAR(softmaxCrossEntropy(big, 3, 0, 1.0, 1.0, bigGrad), 0.0, 1e-12);
}

void TestMath::crossEntropyGradientMatchesFiniteDifferences() {
    std::vector<double> z = {0.3, -1.2, 2.0, 0.4};
    std::vector<double> grad(4);
    softmaxCrossEntropy(z.data(), 4, 2, 1.5, 0.25, grad.data());
    std::vector<double> numeric(4);
    std::vector<double> scratch(4);
    const double h = 1e-6;
    for (int c = 0; c < 4; ++c) {
        std::vector<double> zp = z;
        std::vector<double> zm = z;
        zp[c] += h;
        zm[c] -= h;
        numeric[c] = (softmaxCrossEntropy(zp.data(), 4, 2, 1.5, 0.25, scratch.data()) -
                      softmaxCrossEntropy(zm.data(), 4, 2, 1.5, 0.25, scratch.data())) /
                     (2 * h);
    }
    QVERIFY(test::relativeDifference(grad, numeric) < test::kFiniteDifference);
}

void TestMath::layerGradientsMatchFiniteDifferences_data() {
    QTest::addColumn<int>("activation");
    QTest::newRow("relu") << static_cast<int>(Activation::Relu);
    QTest::newRow("tanh") << static_cast<int>(Activation::Tanh);
    QTest::newRow("gelu") << static_cast<int>(Activation::Gelu);
}

namespace {

// A 3-member 3-5-4-3 network in double with Philox-random parameters and inputs.
struct GradientCase {
    ParamLayout layout{{3, 5, 4, 3}, 3};
    int batch = 6;
    std::vector<double> params;
    std::vector<double> x;
    std::vector<int32_t> labels{0, 2, 1, 1, 0, 2};
    std::vector<double> weights{1.0, 2.0, 0.0, 1.0, 3.0, 1.0};  // Poisson-like

    GradientCase() {
        std::vector<float> p(layout.size());
        initParameters(layout, 42, p.data());
        params.assign(p.begin(), p.end());
        for (std::size_t i = 0; i < params.size(); ++i) {
            params[i] *= 3.0;  // larger weights: every unit does something
        }
        for (int i = 0; i < batch * 3; ++i) {
            const Philox4x32 r = philoxDraw(7, RngPurpose::DataGen, 0, static_cast<uint64_t>(i));
            x.push_back(4.0 * uniformFloat(r.v[0]) - 2.0);
        }
    }
};

}  // namespace

void TestMath::layerGradientsMatchFiniteDifferences() {
    QFETCH(int, activation);
    const auto act = static_cast<Activation>(activation);
    GradientCase c;
    MemberWorkspace<double> ws;
    ws.resize(c.layout, c.batch);
    const int k = 1;  // a member in the middle: offsets must be right
    std::vector<double> grad(c.layout.perMember());
    memberForwardBackward(c.layout, k, act, c.params.data(), c.x.data(), c.labels.data(),
                          c.weights.data(), c.batch, ws, grad.data());

    // Numeric gradient of the same loss w.r.t. each of member k's parameters, in the packed
    // order [W_0, b_0, W_1, b_1, ...].
    std::vector<double> numeric;
    std::vector<double> scratch(c.layout.perMember());
    const double h = 1e-6;
    auto lossAt = [&](std::vector<double>& p) {
        return memberForwardBackward(c.layout, k, act, p.data(), c.x.data(), c.labels.data(),
                                     c.weights.data(), c.batch, ws, scratch.data());
    };
    for (int l = 0; l < c.layout.layerCount(); ++l) {
        const LayerSlot& s = c.layout.layer(l);
        std::vector<std::size_t> indices;
        for (int i = 0; i < s.out * s.in; ++i) {
            indices.push_back(c.layout.weightOffset(l, k) + static_cast<std::size_t>(i));
        }
        for (int i = 0; i < s.out; ++i) {
            indices.push_back(c.layout.biasOffset(l, k) + static_cast<std::size_t>(i));
        }
        for (std::size_t index : indices) {
            std::vector<double> p = c.params;
            p[index] += h;
            const double up = lossAt(p);
            p[index] -= 2 * h;
            const double down = lossAt(p);
            numeric.push_back((up - down) / (2 * h));
        }
    }
    QCOMPARE(numeric.size(), grad.size());
    const double error = test::relativeDifference(grad, numeric);
    QVERIFY2(error < (act == Activation::Relu ? 1e-5 : test::kFiniteDifference),
             qPrintable(QStringLiteral("relative gradient error %1").arg(error)));
}

void TestMath::regressionLossesHandComputed() {
    // Gaussian: raw = ln(e - 1) gives softplus = 1, so sigma^2 = 1 + 1e-6; mu 0.5, y 2.5,
    // weight 2, scale 1/4: loss = 1/2 (1/2 ln s + 4 / (2 s)).
    const double s = 1.0 + 1e-6;
    const double out[2] = {0.5, std::log(std::exp(1.0) - 1.0)};
    double grad[2];
    const double loss = regressionLoss(Likelihood::Gaussian, out, 2.5, 2.0, 0.25, grad);
    ENSEMBLE_COMPARE_NEAR(loss, 0.5 * (0.5 * std::log(s) + 4.0 / (2.0 * s)), test::kExactDouble);
    // dmu = 1/2 (mu - y) / s; draw = 1/2 (1 - 4/s) / (2 s) sigmoid(raw), sigmoid = 1 - 1/e.
    ENSEMBLE_COMPARE_NEAR(grad[0], 0.5 * -2.0 / s, test::kExactDouble);
    ENSEMBLE_COMPARE_NEAR(grad[1], 0.5 * (1.0 - 4.0 / s) / (2.0 * s) * (1.0 - std::exp(-1.0)),
                          test::kExactDouble);
    ENSEMBLE_COMPARE_NEAR(gaussianVariance(out[1]), s, test::kExactDouble);
    // The variance floor: a very negative raw output gives 1e-6, not 0.
    ENSEMBLE_COMPARE_NEAR(gaussianVariance(-80.0), 1e-6, 1e-15);
    // A huge raw output stays finite: softplus(x) = x for large x.
    ENSEMBLE_COMPARE_NEAR(gaussianVariance(500.0), 500.0 + 1e-6, 1e-9);
    // MSE: weight 3, scale 1/3, mu 1, y -1: loss 4, dmu = 2 (mu - y) = 4.
    double g = 0.0;
    const double mu = 1.0;
    ENSEMBLE_COMPARE_NEAR(regressionLoss(Likelihood::Mse, &mu, -1.0, 3.0, 1.0 / 3.0, &g), 4.0,
                          test::kExactDouble);
    ENSEMBLE_COMPARE_NEAR(g, 4.0, test::kExactDouble);
    // Weight 0 contributes nothing.
    ENSEMBLE_COMPARE_NEAR(regressionLoss(Likelihood::Gaussian, out, 2.5, 0.0, 1.0, grad), 0.0, 0.0);
    ENSEMBLE_COMPARE_NEAR(grad[0], 0.0, 0.0);
    // The predictive: [mu, softplus(raw) + 1e-6]; mse leaves [mu] as it is.
    double pred[2] = {0.5, out[1]};
    headPredictiveInPlace(Likelihood::Gaussian, pred, 2);
    ENSEMBLE_COMPARE_NEAR(pred[0], 0.5, 0.0);
    ENSEMBLE_COMPARE_NEAR(pred[1], s, test::kExactDouble);
}

// softplus in float against long double: a few ulps everywhere, the small values a well-fitted
// Gaussian head's variance takes included. log(1 + e^x) evaluated as written rounds 1 + e^x to
// float first and is off by up to half an ulp of 1 / e^x relative: 1e-3 at x = -10, which the
// ONNX export then "disagreed" with by more than its 1e-5 contract (tst_interop).
void TestMath::softplusIsAccurateInFloat() {
    const double bound = 8.0 * FLT_EPSILON;
    double worst = 0.0;
    for (int i = 0; i <= 2000; ++i) {
        const float x = -60.0f + 0.04f * static_cast<float>(i);  // -60 .. 20
        const long double exact = x > 0 ? x + std::log1p(std::exp(-static_cast<long double>(x)))
                                        : std::log1p(std::exp(static_cast<long double>(x)));
        const double got = softplusLanes<float>(x);
        const double error = std::abs(static_cast<double>((got - exact) / exact));
        worst = std::max(worst, error);
        QVERIFY2(error <= bound, qPrintable(QStringLiteral("softplus(%1) = %2, exact %3")
                                                .arg(static_cast<double>(x), 0, 'g', 9)
                                                .arg(got, 0, 'g', 9)
                                                .arg(static_cast<double>(exact), 0, 'g', 17)));
    }
    // log1pLanes alone, down to where 1 + t rounds to 1 (t = t + 0 to working precision).
    for (const float t : {0.0f, 1e-30f, 3e-8f, 6e-8f, 1e-7f, 1e-5f, 0.01f, 0.5f, 1.0f, 7.0f}) {
        const long double exact = std::log1p(static_cast<long double>(t));
        const double got = log1pLanes<float>(t);
        QVERIFY2(
            t == 0.0f ? got == 0.0 : std::abs(static_cast<double>((got - exact) / exact)) <= bound,
            qPrintable(QStringLiteral("log1p(%1) = %2").arg(static_cast<double>(t)).arg(got)));
    }
    // The double lane too: t = e^-30 is far below double's rounding of 1 + t; log1p(t) is
    // t - t^2 / 2 to double precision there.
    const double t30 = std::exp(-30.0);
    const double exact30 = t30 - t30 * t30 / 2;
    QVERIFY(std::abs(softplusLanes<double>(-30.0) - exact30) <= 4 * DBL_EPSILON * exact30);
    qInfo("softplus in float: worst relative error %.3g (%.2f ulp)", worst, worst / FLT_EPSILON);
}

void TestMath::regressionLossGradientsMatchFiniteDifferences_data() {
    QTest::addColumn<int>("likelihood");
    QTest::addColumn<double>("mean");
    QTest::addColumn<double>("raw");
    QTest::addColumn<double>("target");
    const int gaussian = static_cast<int>(Likelihood::Gaussian);
    QTest::newRow("gaussian near") << gaussian << 0.3 << 0.2 << 0.1;
    QTest::newRow("gaussian far, small variance") << gaussian << -1.0 << -3.0 << 2.0;
    QTest::newRow("gaussian large variance") << gaussian << 2.0 << 4.0 << -1.5;
    QTest::newRow("mse") << static_cast<int>(Likelihood::Mse) << 0.7 << 0.0 << -0.4;
}

void TestMath::regressionLossGradientsMatchFiniteDifferences() {
    QFETCH(int, likelihood);
    QFETCH(double, mean);
    QFETCH(double, raw);
    QFETCH(double, target);
    const auto head = static_cast<Likelihood>(likelihood);
    const int outputs = headOutputs(head, 0);
    std::vector<double> out = {mean, raw};
    std::vector<double> grad(2, 0.0);
    std::vector<double> scratch(2);
    regressionLoss(head, out.data(), target, 1.5, 0.25, grad.data());
    grad.resize(static_cast<std::size_t>(outputs));
    std::vector<double> numeric;
    const double h = 1e-6;
    for (int o = 0; o < outputs; ++o) {
        std::vector<double> up = out;
        std::vector<double> down = out;
        up[static_cast<std::size_t>(o)] += h;
        down[static_cast<std::size_t>(o)] -= h;
        numeric.push_back((regressionLoss(head, up.data(), target, 1.5, 0.25, scratch.data()) -
                           regressionLoss(head, down.data(), target, 1.5, 0.25, scratch.data())) /
                          (2 * h));
    }
    // An independent form of the loss: w s (1/2 log v + (y - mu)^2 / (2 v)), v = log(1 + e^r)
    // + 1e-6, or w s (mu - y)^2.
    const double v = std::log1p(std::exp(raw)) + 1e-6;
    const double expected =
        head == Likelihood::Gaussian
            ? 0.375 * (0.5 * std::log(v) + (target - mean) * (target - mean) / (2 * v))
            : 0.375 * (mean - target) * (mean - target);
    ENSEMBLE_COMPARE_NEAR(regressionLoss(head, out.data(), target, 1.5, 0.25, scratch.data()),
                          expected, 1e-12);
    const double error = test::relativeDifference(grad, numeric);
    QVERIFY2(error < test::kFiniteDifference,
             qPrintable(QStringLiteral("relative gradient error %1").arg(error)));
}

void TestMath::regressionLayerGradientsMatchFiniteDifferences_data() {
    QTest::addColumn<int>("likelihood");
    QTest::addColumn<int>("activation");
    QTest::newRow("gaussian tanh")
        << static_cast<int>(Likelihood::Gaussian) << static_cast<int>(Activation::Tanh);
    QTest::newRow("gaussian gelu")
        << static_cast<int>(Likelihood::Gaussian) << static_cast<int>(Activation::Gelu);
    QTest::newRow("mse tanh") << static_cast<int>(Likelihood::Mse)
                              << static_cast<int>(Activation::Tanh);
}

void TestMath::regressionLayerGradientsMatchFiniteDifferences() {
    QFETCH(int, likelihood);
    QFETCH(int, activation);
    const auto head = static_cast<Likelihood>(likelihood);
    const auto act = static_cast<Activation>(activation);
    // A 3-member 3-5-4-O network, as GradientCase but with a regression head.
    const ParamLayout layout({3, 5, 4, headOutputs(head, 0)}, 3);
    const int batch = 6;
    std::vector<float> pf(layout.size());
    initParameters(layout, 42, pf.data());
    std::vector<double> params(pf.begin(), pf.end());
    for (double& p : params) {
        p *= 3.0;
    }
    std::vector<double> x;
    for (int i = 0; i < batch * 3; ++i) {
        const Philox4x32 r = philoxDraw(7, RngPurpose::DataGen, 0, static_cast<uint64_t>(i));
        x.push_back(4.0 * uniformFloat(r.v[0]) - 2.0);
    }
    const std::vector<double> targets = {0.5, -1.0, 2.0, 0.0, -0.3, 1.2};
    const std::vector<double> weights = {1.0, 2.0, 0.0, 1.0, 3.0, 1.0};
    MemberWorkspace<double> ws;
    ws.resize(layout, batch);
    const int k = 1;
    std::vector<double> grad(layout.perMember());
    std::vector<double> scratch(layout.perMember());
    const auto lossAt = [&](const std::vector<double>& p, std::vector<double>& g) {
        return memberForwardBackward(layout, k, act, head, p.data(), x.data(),
                                     static_cast<const int32_t*>(nullptr), targets.data(),
                                     weights.data(), batch, ws, g.data());
    };
    lossAt(params, grad);
    std::vector<double> numeric;
    const double h = 1e-6;
    for (int l = 0; l < layout.layerCount(); ++l) {
        const LayerSlot& s = layout.layer(l);
        std::vector<std::size_t> indices;
        for (int i = 0; i < s.out * s.in; ++i) {
            indices.push_back(layout.weightOffset(l, k) + static_cast<std::size_t>(i));
        }
        for (int i = 0; i < s.out; ++i) {
            indices.push_back(layout.biasOffset(l, k) + static_cast<std::size_t>(i));
        }
        for (std::size_t index : indices) {
            std::vector<double> p = params;
            p[index] += h;
            const double up = lossAt(p, scratch);
            p[index] -= 2 * h;
            const double down = lossAt(p, scratch);
            numeric.push_back((up - down) / (2 * h));
        }
    }
    QCOMPARE(numeric.size(), grad.size());
    const double error = test::relativeDifference(grad, numeric);
    QVERIFY2(error < test::kFiniteDifference,
             qPrintable(QStringLiteral("relative gradient error %1").arg(error)));
}

void TestMath::floatKernelAgreesWithDouble() {
    GradientCase c;
    std::vector<float> pf(c.params.begin(), c.params.end());
    std::vector<float> xf(c.x.begin(), c.x.end());
    std::vector<float> wf(c.weights.begin(), c.weights.end());
    MemberWorkspace<double> wsd;
    MemberWorkspace<float> wsf;
    wsd.resize(c.layout, c.batch);
    wsf.resize(c.layout, c.batch);
    std::vector<double> gd(c.layout.perMember());
    std::vector<float> gf(c.layout.perMember());
    const double ld =
        memberForwardBackward(c.layout, 2, Activation::Tanh, c.params.data(), c.x.data(),
                              c.labels.data(), c.weights.data(), c.batch, wsd, gd.data());
    const float lf = memberForwardBackward(c.layout, 2, Activation::Tanh, pf.data(), xf.data(),
                                           c.labels.data(), wf.data(), c.batch, wsf, gf.data());
    ENSEMBLE_COMPARE_NEAR(lf, ld, test::kFloatRounding * std::abs(ld));
    QVERIFY(test::relativeDifference(std::vector<double>(gf.begin(), gf.end()), gd) <
            test::kFloatRounding);
}

void TestMath::adamMatchesHandComputedSteps() {
    // p = 1, lr = 0.1, betas (0.9, 0.999), eps 1e-8; gradients 0.5 then 0.25.
    // Step 1: m = 0.05, v = 0.00025; m^ = 0.5, v^ = 0.25: p = 1 - 0.1 * 0.5 / (0.5 + 1e-8).
    // Step 2: m = 0.07, v = 0.00031225; bc1 = 0.19, bc2 = 0.001999:
    //         p = 0.900000002 - 0.1 / 0.19 * 0.07 / (sqrt(0.00031225) / sqrt(0.001999) + 1e-8).
    // The rule holds its coefficients in float (as the backends use them), so agreement with
    // these double-precision values is to float precision.
    OptimizerRule r = makeRule(OptimizerKind::Adam, 0.1, 0.0, 0.0);
    double p = 1.0;
    double m = 0.0;
    double v = 0.0;
    prepareStep(r, 1);
    applyUpdate(r, true, p, 0.5, m, v);
    ENSEMBLE_COMPARE_NEAR(p, 0.900000002, 1e-7);
    ENSEMBLE_COMPARE_NEAR(m, 0.05, 1e-9);
    ENSEMBLE_COMPARE_NEAR(v, 0.00025, 1e-9);
    prepareStep(r, 2);
    applyUpdate(r, false, p, 0.25, m, v);
    ENSEMBLE_COMPARE_NEAR(p, 0.8067820404774624, 1e-6);
    // L2 weight decay (Adam, not AdamW) is added to the gradient: with wd = 1 and p = 1, a zero
    // gradient behaves like a gradient of 1.
    OptimizerRule l2 = makeRule(OptimizerKind::Adam, 0.1, 1.0, 0.0);
    double q = 1.0;
    double qm = 0.0;
    double qv = 0.0;
    prepareStep(l2, 1);
    applyUpdate(l2, true, q, 0.0, qm, qv);
    ENSEMBLE_COMPARE_NEAR(q, 1.0 - 0.1 * 1.0 / (1.0 + 1e-8), 1e-7);
}

void TestMath::adamwDecouplesWeightDecay() {
    // AdamW, wd = 0.5: p *= 1 - lr*wd before the Adam step (values from the rule above).
    OptimizerRule r = makeRule(OptimizerKind::AdamW, 0.1, 0.5, 0.0);
    double p = 1.0;
    double m = 0.0;
    double v = 0.0;
    prepareStep(r, 1);
    applyUpdate(r, true, p, 0.5, m, v);
    ENSEMBLE_COMPARE_NEAR(p, 0.8500000019999999, 1e-7);
    prepareStep(r, 2);
    applyUpdate(r, false, p, 0.25, m, v);
    ENSEMBLE_COMPARE_NEAR(p, 0.7142820403774623, 1e-6);
}

void TestMath::sgdMomentumMatchesHandComputedSteps() {
    // lr 0.1, momentum 0.9, wd 0.1, p = 1, gradients 0.5 then 0.5:
    // step 1: g = 0.5 + 0.1 = 0.6, buf = 0.6, p = 0.94;
    // step 2: g = 0.5 + 0.094 = 0.594, buf = 0.54 + 0.594 = 1.134, p = 0.8266.
    OptimizerRule r = makeRule(OptimizerKind::Sgd, 0.1, 0.1, 0.9);
    double p = 1.0;
    double buf = 0.0;
    double unused = 0.0;
    applyUpdate(r, true, p, 0.5, buf, unused);
    ENSEMBLE_COMPARE_NEAR(p, 0.94, 1e-7);
    applyUpdate(r, false, p, 0.5, buf, unused);
    ENSEMBLE_COMPARE_NEAR(buf, 1.134, 1e-7);
    ENSEMBLE_COMPARE_NEAR(p, 0.8266, 1e-7);
    // Without momentum: plain gradient descent.
    r.momentum = 0.0f;
    r.weightDecay = 0.0f;
    double s = 2.0;
    applyUpdate(r, true, s, 3.0, buf, unused);
    ENSEMBLE_COMPARE_NEAR(s, 1.7, 1e-7);
}

void TestMath::initialisationFollowsPyTorchBound() {
    // nn.Linear default: U(-1/sqrt(in), 1/sqrt(in)) for weights and biases. Over many draws the
    // bound is nearly reached and the variance is bound^2 / 3.
    const ParamLayout layout({400, 300, 2}, 2);
    std::vector<float> p(layout.size());
    initParameters(layout, 5, p.data());
    const float bound = 1.0f / 20.0f;
    double sumSq = 0.0;
    float maxAbs = 0.0f;
    const std::size_t count = static_cast<std::size_t>(300) * 400;
    for (std::size_t i = 0; i < count; ++i) {
        const float w = p[layout.weightOffset(0, 1) + i];
        maxAbs = std::max(maxAbs, std::abs(w));
        sumSq += double(w) * w;
    }
    QVERIFY(maxAbs <= bound);
    QVERIFY(maxAbs > 0.999f * bound);
    ENSEMBLE_COMPARE_NEAR(sumSq / count, bound * bound / 3.0, 0.01 * bound * bound / 3.0);
    // Member 0 and member 1 draw from different streams; member 0 does not depend on K.
    QVERIFY(p[layout.weightOffset(0, 0)] != p[layout.weightOffset(0, 1)]);
    const ParamLayout single({400, 300, 2}, 1);
    std::vector<float> q(single.size());
    initParameters(single, 5, q.data());
    QCOMPARE(q[single.weightOffset(1, 0) + 17], p[layout.weightOffset(1, 0) + 17]);
}

QTEST_APPLESS_MAIN(TestMath)
#include "tst_math.moc"
