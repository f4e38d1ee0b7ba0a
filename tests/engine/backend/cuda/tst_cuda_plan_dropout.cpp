// The CUDA backend's training dropout (ensemble.method = mc_dropout), checked on the CPU: the
// step programs of step_program.h and conv_program.h run with their dropout operations
// (dropoutMask/Apply/BackwardElement, step_elements.h) in host loops (cuda_emulation.h) and
// are compared with CpuBackend's dropout step, which tst_dropout checks against finite
// differences of an independent masked reference. Equal losses at every step and equal
// parameters after many steps mean the device draws the CPU's masks (same Philox keys: seed,
// step, member, batch position, layer, unit), applies them where the CPU does (after every
// hidden activation; per channel of a conv) and back-propagates through them as it does.

#include <QtTest/QtTest>

#include <cmath>
#include <cstdint>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "backend/cuda/conv_program.h"
#include "backend/cuda/step_elements.h"
#include "backend/cuda/step_program.h"
#include "math/dropout.h"
#include "model/mlp.h"
#include "support/backend_test_problem.h"
#include "support/cuda_emulation.h"
#include "support/test_support.h"

using namespace ensemble;
using namespace ensemble::gpu;
using namespace ensemble::test::emulation;
using ensemble::test::initialParameters;
using ensemble::test::makeProblem;
using ensemble::test::nmse;
using ensemble::test::Problem;

namespace {

constexpr uint64_t kDropoutSeed = 0x5eed'd80f;

// CpuBackend's parameters after `steps` steps of `problem` from `init` (every member active).
std::vector<float> cpuRun(const TrainingProblem& problem, const std::vector<float>& init,
                          const std::vector<uint64_t>& steps) {
    const auto cpu = cpuOracle(problem, init);
    std::vector<uint8_t> active(static_cast<std::size_t>(problem.layout.members()), 1);
    std::vector<float> loss(active.size());
    for (uint64_t s : steps) {
        cpu->step(s, active.data(), loss.data());
    }
    std::vector<float> out(init.size());
    cpu->parameters(out.data());
    return out;
}

}  // namespace

class TestCudaPlanDropout : public QObject {
    Q_OBJECT

  private Q_SLOTS:
    // The mask elements draw, per (member, example, unit), the shared scalar mask of
    // math/dropout.h (which tst_dropout checks the CPU's SIMD draw against), from the
    // program's first member and first row, with unit counts that are not multiples of 4.
    void maskElementsAreTheSharedDraw();
    // A conv's masks are per channel of an example: every position of the plane gets the
    // channel's value, forward and backward.
    void convMasksCoverTheirPlane();
    // The MLP program with dropout against CpuBackend's (bootstrap modes, activations,
    // optimizers, rates, adversarial training, an ensemble-axis member offset).
    void emulatedDropoutStepMatchesCpuBackend_data();
    void emulatedDropoutStepMatchesCpuBackend();
    // The CNN program with dropout against ConvNetCpu's, for the layer stacks of tst_cuda_plan
    // (im2col and the implicit GEMM).
    void emulatedDropoutConvStepMatchesCpuBackend_data();
    void emulatedDropoutConvStepMatchesCpuBackend();
    // Rate 0 enqueues exactly the program without dropout: no dropout operation, no mask
    // buffer; a positive rate adds one mask per hidden layer and nothing else to the arenas.
    void zeroRateIsTodaysProgram();
};

void TestCudaPlanDropout::maskElementsAreTheSharedDraw() {
    const int members = 3;
    const int rows = 5;
    for (int units : {1, 4, 7, 10}) {
        DropoutStep key;
        key.rate = 0.4f;
        key.seed = kDropoutSeed;
        key.member = 2;                                  // the program's first global member
        key.firstRow = 6;                                // a replica's first batch position
        const uint64_t step = (uint64_t{3} << 32) + 11;  // a high word too
        const int layer = 2;
        const int groups = (units + 3) / 4;
        std::vector<float> mask(static_cast<std::size_t>(members) * rows * units, std::nanf(""));
        for (int64_t j = 0; j < int64_t{members} * rows * groups; ++j) {
            dropoutMaskElement(j, key, step, rows, units, layer, mask.data());
        }
        int kept = 0;
        for (int k = 0; k < members; ++k) {
            for (int b = 0; b < rows; ++b) {
                for (int u = 0; u < units; ++u) {
                    DropoutStep d = key;
                    d.step = step;
                    d.member = key.member + static_cast<uint32_t>(k);
                    const float expected =
                        dropoutTrainingMask(d, key.firstRow + static_cast<uint32_t>(b), layer, u);
                    const float got = mask[(static_cast<std::size_t>(k) * rows + b) * units + u];
                    QCOMPARE(got, expected);
                    kept += got != 0.0f ? 1 : 0;
                    QVERIFY(got == 0.0f || got == dropoutScale(key.rate));
                }
            }
        }
        if (units == 10) {
            // 150 draws at keep rate 0.6: both outcomes occur (else the comparison above
            // could not tell a mask from a constant).
            QVERIFY(kept > 0 && kept < members * rows * units);
        }
    }
}

void TestCudaPlanDropout::convMasksCoverTheirPlane() {
    // [K = 2][B = 3][plane = 4][F = 5] activations, masks [2][3][5] all distinct.
    const int members = 2, rows = 3, plane = 4, units = 5;
    const int64_t count = int64_t{members} * rows * plane * units;
    std::vector<float> mask(static_cast<std::size_t>(members) * rows * units);
    for (std::size_t m = 0; m < mask.size(); ++m) {
        mask[m] = 1.0f + static_cast<float>(m);
    }
    std::vector<float> post(static_cast<std::size_t>(count), 1.0f);
    std::vector<float> delta(static_cast<std::size_t>(count), 1.0f);
    std::vector<float> pre(static_cast<std::size_t>(count), 0.5f);  // relu' = 1
    for (int64_t i = 0; i < count; ++i) {
        dropoutApplyElement(i, post.data(), mask.data(), int64_t{plane}, units);
        dropoutBackwardElement(i, delta.data(), pre.data(), mask.data(), int64_t{plane}, units,
                               Activation::Relu);
    }
    for (int k = 0; k < members; ++k) {
        for (int b = 0; b < rows; ++b) {
            for (int p = 0; p < plane; ++p) {
                for (int f = 0; f < units; ++f) {
                    const std::size_t i =
                        ((static_cast<std::size_t>(k) * rows + b) * plane + p) * units + f;
                    const float m = mask[(static_cast<std::size_t>(k) * rows + b) * units + f];
                    QCOMPARE(post[i], m);
                    QCOMPARE(delta[i], m);
                }
            }
        }
    }
}

void TestCudaPlanDropout::emulatedDropoutStepMatchesCpuBackend_data() {
    QTest::addColumn<int>("mode");
    QTest::addColumn<int>("kind");
    QTest::addColumn<int>("activation");
    QTest::addColumn<double>("rate");
    QTest::addColumn<double>("eps");
    QTest::addColumn<int>("memberOffset");
    const Activation acts[] = {Activation::Relu, Activation::Tanh, Activation::Gelu};
    const OptimizerKind kinds[] = {OptimizerKind::Adam, OptimizerKind::Sgd, OptimizerKind::AdamW};
    int a = 0;
    for (BootstrapMode mode :
         {BootstrapMode::None, BootstrapMode::Resample, BootstrapMode::Poisson}) {
        for (double rate : {0.1, 0.5}) {
            const Activation act = acts[a % 3];
            const OptimizerKind kind = kinds[a % 3];
            ++a;
            QTest::addRow("%s %s act%d p%.1f", modeName(mode), kindName(kind),
                          static_cast<int>(act), rate)
                << static_cast<int>(mode) << static_cast<int>(kind) << static_cast<int>(act) << rate
                << 0.0 << 0;
        }
        // Both passes of adversarial training under the same masks.
        QTest::addRow("%s adam relu p0.3 adversarial", modeName(mode))
            << static_cast<int>(mode) << static_cast<int>(OptimizerKind::Adam)
            << static_cast<int>(Activation::Relu) << 0.3 << 0.05 << 0;
    }
    // Members 4.. of an ensemble axis: the masks' member is global.
    QTest::addRow("resample sgd tanh p0.2 members from 4")
        << static_cast<int>(BootstrapMode::Resample) << static_cast<int>(OptimizerKind::Sgd)
        << static_cast<int>(Activation::Tanh) << 0.2 << 0.0 << 4;
}

void TestCudaPlanDropout::emulatedDropoutStepMatchesCpuBackend() {
    QFETCH(int, mode);
    QFETCH(int, kind);
    QFETCH(int, activation);
    QFETCH(double, rate);
    QFETCH(double, eps);
    QFETCH(int, memberOffset);
    Problem p = makeProblem(static_cast<BootstrapMode>(mode), static_cast<OptimizerKind>(kind),
                            static_cast<Activation>(activation));
    TrainingProblem& problem = p.training;
    problem.adversarialEps = static_cast<float>(eps);
    problem.dropout = static_cast<float>(rate);
    problem.dropoutSeed = kDropoutSeed;
    problem.plan.memberOffset = static_cast<uint32_t>(memberOffset);
    const ParamLayout& layout = problem.layout;
    const std::vector<float> init = initialParameters(layout, 42);

    const auto cpu = cpuOracle(problem, init);
    EmulatedCudaBackend emu(problem, 1);
    emu.setParameters(init);

    // 40 steps: a jump in the step index (new masks from the device's counter), member 1
    // paused for a while.
    const std::vector<uint64_t> steps = stepsWithAJump();
    trainBoth(*cpu, emu, layout, init, steps, 1, 8, 14);
    if (QTest::currentTestFailed()) {
        return;
    }
    QVERIFY(emu.dropoutOperations() > 0);
    // The masks matter: without them the same steps end elsewhere, far outside the bound.
    TrainingProblem plain = problem;
    plain.dropout = 0.0f;
    const double fromPlain = nmse(cpuRun(plain, init, steps), emu.params());
    qInfo("dropout vs plain parameter nMSE %.3g", fromPlain);
    QVERIFY(fromPlain > 1e3 * test::kEmulatedParamNmse);
}

void TestCudaPlanDropout::emulatedDropoutConvStepMatchesCpuBackend_data() {
    QTest::addColumn<int>("mode");
    QTest::addColumn<int>("kind");
    QTest::addColumn<int>("activation");
    QTest::addColumn<int>("architecture");
    QTest::addColumn<bool>("implicitGemm");
    QTest::addColumn<double>("rate");
    const Activation acts[] = {Activation::Relu, Activation::Tanh, Activation::Gelu};
    const BootstrapMode modes[] = {BootstrapMode::None, BootstrapMode::Resample,
                                   BootstrapMode::Poisson};
    for (int arch = 0; arch < 4; ++arch) {
        for (bool implicit : {false, true}) {
            const int i = arch * 2 + (implicit ? 1 : 0);
            const BootstrapMode mode = modes[i % 3];
            const Activation act = acts[(i + i / 3) % 3];
            const OptimizerKind kind = i % 2 == 0 ? OptimizerKind::Adam : OptimizerKind::Sgd;
            const double rate = arch % 2 == 0 ? 0.25 : 0.5;
            QTest::addRow("%s %s act%d arch%d p%.2f%s", modeName(mode), kindName(kind),
                          static_cast<int>(act), arch, rate, implicit ? " implicit" : "")
                << static_cast<int>(mode) << static_cast<int>(kind) << static_cast<int>(act) << arch
                << implicit << rate;
        }
    }
}

void TestCudaPlanDropout::emulatedDropoutConvStepMatchesCpuBackend() {
    QFETCH(int, mode);
    QFETCH(int, kind);
    QFETCH(int, activation);
    QFETCH(int, architecture);
    QFETCH(bool, implicitGemm);
    QFETCH(double, rate);
    const ConvCase c = convCase(architecture);
    const int members = 3;
    ImageProblem p = makeImageProblem(c.input, c.layers, static_cast<BootstrapMode>(mode),
                                      static_cast<OptimizerKind>(kind),
                                      static_cast<Activation>(activation), members);
    p.training.dropout = static_cast<float>(rate);
    p.training.dropoutSeed = kDropoutSeed;
    const ParamLayout& layout = p.training.layout;
    const std::vector<float> init = initialParameters(layout, 42);

    const auto cpu = cpuOracle(p.training, init);
    EmulatedConvCudaBackend emu(p.training, 16, implicitGemm);
    emu.setParameters(init);

    const std::vector<uint64_t> steps = stepRange(0, 12);
    trainBoth(*cpu, emu, layout, init, steps, 1, 4, 7);
    if (QTest::currentTestFailed()) {
        return;
    }
    QVERIFY(emu.dropoutOperations() > 0);
    TrainingProblem plain = p.training;
    plain.dropout = 0.0f;
    const double fromPlain = nmse(cpuRun(plain, init, steps), emu.params());
    qInfo("dropout vs plain parameter nMSE %.3g", fromPlain);
    QVERIFY(fromPlain > 1e3 * test::kEmulatedParamNmse);
}

void TestCudaPlanDropout::zeroRateIsTodaysProgram() {
    // The MLP program.
    Problem p = makeProblem(BootstrapMode::Poisson, OptimizerKind::Adam, Activation::Relu);
    const ParamLayout& layout = p.training.layout;
    const StepArena plain = planStepArena(layout, 24, BootstrapMode::Poisson);
    const StepArena masked = planStepArena(layout, 24, BootstrapMode::Poisson, false, true);
    QVERIFY(plain.mask.empty());
    QCOMPARE(masked.mask.size(), std::size_t{2});  // the two hidden layers
    QCOMPARE(masked.floats, plain.floats + alignFloats(std::size_t{6} * 24 * 16) +
                                alignFloats(std::size_t{6} * 24 * 12));
    QCOMPARE(masked.pre, plain.pre);
    QCOMPARE(masked.delta, plain.delta);
    const std::vector<float> init = initialParameters(layout, 42);
    EmulatedCudaBackend emu(p.training, 1);  // dropout 0 (the default)
    emu.setParameters(init);
    std::vector<uint8_t> active(static_cast<std::size_t>(layout.members()), 1);
    std::vector<float> loss(active.size());
    emu.step(0, active.data(), loss.data());
    QCOMPARE(emu.dropoutOperations(), int64_t{0});

    // The conv program: masks only for activated layers, per channel.
    const ConvCase c = convCase(0);
    const ImageProblem images = makeImageProblem(c.input, c.layers, BootstrapMode::None,
                                                 OptimizerKind::Adam, Activation::Relu, 3);
    const ParamLayout& convLayout = images.training.layout;
    const ConvArena convPlain = planConvArena(convLayout, 32, true, true);
    const ConvArena convMasked = planConvArena(convLayout, 32, true, true, true);
    QVERIFY(convPlain.mask.empty());
    std::size_t added = 0;
    const auto& stack = convLayout.architecture().layers();
    QCOMPARE(convMasked.mask.size(), stack.size());
    for (std::size_t i = 0; i < stack.size(); ++i) {
        QCOMPARE(convMasked.mask[i] != ConvArena::kNone, stack[i].activated);
        if (stack[i].activated) {
            added += alignFloats(std::size_t{3} * 32 * static_cast<std::size_t>(stack[i].units()));
        }
    }
    QCOMPARE(convMasked.floats, convPlain.floats + added);
    QVERIFY(planConvArena(convLayout, 32, true, false, true).mask.empty());  // not in prediction
    EmulatedConvCudaBackend convEmu(images.training, 16);
    const std::vector<float> convInit = initialParameters(convLayout, 42);
    convEmu.setParameters(convInit);
    std::vector<uint8_t> convActive(3, 1);
    std::vector<float> convLoss(3);
    convEmu.step(0, convActive.data(), convLoss.data());
    QCOMPARE(convEmu.dropoutOperations(), int64_t{0});
}

QTEST_APPLESS_MAIN(TestCudaPlanDropout)
#include "tst_cuda_plan_dropout.moc"
