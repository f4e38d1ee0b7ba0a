// The CUDA backend's arithmetic, checked on the CPU (no CUDA runtime, no GPU needed).
//
// CudaBackend runs the operation sequence of backend/cuda/step_program.h with kernels whose
// bodies are the ENSEMBLE_HD functions of backend/cuda/step_elements.h, and with
// cublasSgemmStridedBatched fed by the GemmArgs of step_program.h. Here the same sequence runs
// on the host: the elements in plain loops, and every GEMM through a reference column-major
// strided-batched GEMM that follows cuBLAS's definition literally (and checks leading
// dimensions and buffer bounds as cuBLAS would need them). Comparing that emulation with
// CpuBackend tests, without a GPU, everything the GPU step does except the CUDA runtime
// itself: transposes, leading dimensions, strides (stride 0 for shared inputs), buffer
// placement, batch plans, gather, losses, backward, optimizer and counters. The emulation
// itself is cuda_emulation.h (tst_cuda_plan_dropout drives it too). One file of tests: each
// compares one part of the same emulated program.

#include <QtTest/QtTest>

#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "backend/cuda/conv_elements.h"
#include "backend/cuda/conv_program.h"
#include "backend/cuda/step_elements.h"
#include "backend/cuda/step_program.h"
#include "data/dataset.h"
#include "math/philox.h"
#include "model/mlp.h"
#include "support/backend_test_problem.h"
#include "support/cuda_emulation.h"

using namespace ensemble;
using ensemble::test::gridPoints;
using ensemble::test::initialParameters;
using ensemble::test::makeProblem;
using ensemble::test::nmse;
using ensemble::test::Problem;
using namespace ensemble::gpu;
using namespace ensemble::test::emulation;

class TestCudaPlan : public QObject {
    Q_OBJECT

  private Q_SLOTS:
    // Each GemmArgs, run through the reference column-major GEMM, gives exactly the row-major
    // product CpuBackend computes with Eigen, for shared (stride 0) and per-member inputs.
    void gemmArgumentsGiveTheRowMajorProducts_data();
    void gemmArgumentsGiveTheRowMajorProducts();
    void gemmStridesMatchTheStackedLayout();
    void memberOfParamCoversTheLayout();
    void stepArenaBuffersAreDisjointAndAligned();
    void predictArenaChunksWithinBudget();
    void memoryEstimateAddsUp();
    void planSlotsMatchPlanMember();
    void updateSkipsInactiveAndDivergedMembers();
    void biasCorrectionMatchesCpuFormula();
    // The full program, emulated, against CpuBackend.
    void emulatedStepMatchesCpuBackend_data();
    void emulatedStepMatchesCpuBackend();
    // The same for the regression heads (gaussian NLL, squared error) and their predictive.
    void emulatedRegressionStepMatchesCpuBackend_data();
    void emulatedRegressionStepMatchesCpuBackend();
    // CNN members (model.kind cnn): the conv program against ConvNetCpu, for each bootstrap
    // mode and optimizer and several layer stacks.
    void emulatedConvStepMatchesCpuBackend_data();
    void emulatedConvStepMatchesCpuBackend();
    void convArenaFitsEveryLayer();
    // The implicit-GEMM convolution's elements against im2col + a GEMM summing in the same
    // order (and col2im): equal up to rounding, for strides, paddings and shared inputs.
    void implicitConvMatchesIm2col_data();
    void implicitConvMatchesIm2col();
    // The data axis on the CUDA program: replicas of half the batch each, their gradients and
    // losses summed between the two phases, equal one full-batch step within rounding, and
    // the replicas hold the same bits.
    void emulatedDataAxisMatchesFullBatch_data();
    void emulatedDataAxisMatchesFullBatch();
};

void TestCudaPlan::gemmArgumentsGiveTheRowMajorProducts_data() {
    QTest::addColumn<int>("in");
    QTest::addColumn<int>("out");
    QTest::addColumn<int>("rows");
    QTest::addColumn<int>("members");
    QTest::addColumn<bool>("shared");
    for (bool shared : {false, true}) {
        const char* s = shared ? "shared" : "own";
        QTest::addRow("3x5 rows4 K3 %s", s) << 3 << 5 << 4 << 3 << shared;
        QTest::addRow("2x1 rows7 K2 %s", s) << 2 << 1 << 7 << 2 << shared;
        QTest::addRow("1x1 rows1 K1 %s", s) << 1 << 1 << 1 << 1 << shared;
        QTest::addRow("6x4 rows5 K4 %s", s) << 6 << 4 << 5 << 4 << shared;
        QTest::addRow("17x9 rows33 K5 %s", s) << 17 << 9 << 33 << 5 << shared;
    }
}

void TestCudaPlan::gemmArgumentsGiveTheRowMajorProducts() {
    QFETCH(int, in);
    QFETCH(int, out);
    QFETCH(int, rows);
    QFETCH(int, members);
    QFETCH(bool, shared);
    const std::size_t k = static_cast<std::size_t>(members);
    const std::size_t groups = shared ? 1 : k;
    const std::vector<float> x = randomVector(groups * rows * in, 1);  // [G][rows][in]
    const std::vector<float> w = randomVector(k * out * in, 2);        // [K][out][in]
    const std::vector<float> dz = randomVector(k * rows * out, 3);     // [K][rows][out]
    const std::size_t xStride = shared ? 0 : static_cast<std::size_t>(rows) * in;

    std::vector<float> z(k * rows * out), dw(k * out * in), dx(k * rows * in);
    QCOMPARE(referenceGemm(forwardGemm(in, out, rows, members, shared), {w.data(), w.size()},
                           {x.data(), x.size()}, z.data(), z.size()),
             std::string());
    QCOMPARE(referenceGemm(weightGradGemm(in, out, rows, members, shared), {x.data(), x.size()},
                           {dz.data(), dz.size()}, dw.data(), dw.size()),
             std::string());
    QCOMPARE(referenceGemm(inputGradGemm(in, out, rows, members), {w.data(), w.size()},
                           {dz.data(), dz.size()}, dx.data(), dx.size()),
             std::string());

    for (std::size_t m = 0; m < k; ++m) {
        // The products CpuBackend::trainMember computes.
        const ConstMap xm(x.data() + m * xStride, rows, in);
        const ConstMap wm(w.data() + m * out * in, out, in);
        const ConstMap dzm(dz.data() + m * rows * out, rows, out);
        const RowMatrix zRef = xm * wm.transpose();
        const RowMatrix dwRef = dzm.transpose() * xm;
        const RowMatrix dxRef = dzm * wm;
        const RowMatrix zGot = ConstMap(z.data() + m * rows * out, rows, out);
        const RowMatrix dwGot = ConstMap(dw.data() + m * out * in, out, in);
        const RowMatrix dxGot = ConstMap(dx.data() + m * rows * in, rows, in);
        QVERIFY2((zRef - zGot).cwiseAbs().maxCoeff() < test::kEmulatedGemm, "forward");
        QVERIFY2((dwRef - dwGot).cwiseAbs().maxCoeff() < test::kEmulatedGemm, "weight gradient");
        QVERIFY2((dxRef - dxGot).cwiseAbs().maxCoeff() < test::kEmulatedGemm, "input gradient");
    }
}

void TestCudaPlan::gemmStridesMatchTheStackedLayout() {
    // The weight operand and the weight gradient step by one member's out x in block, the
    // activations by one member's rows x width block, a shared input not at all.
    const GemmArgs f = forwardGemm(3, 5, 7, 4, true);
    QCOMPARE(f.strideA, int64_t{15});
    QCOMPARE(f.strideB, int64_t{0});
    QCOMPARE(f.strideC, int64_t{35});
    QCOMPARE(f.batchCount, 4);
    QCOMPARE(forwardGemm(3, 5, 7, 4, false).strideB, int64_t{21});
    const GemmArgs w = weightGradGemm(3, 5, 7, 4, false);
    QCOMPARE(w.strideA, int64_t{21});
    QCOMPARE(w.strideB, int64_t{35});
    QCOMPARE(w.strideC, int64_t{15});
    QCOMPARE(weightGradGemm(3, 5, 7, 4, true).strideA, int64_t{0});
    const GemmArgs d = inputGradGemm(3, 5, 7, 4);
    QCOMPARE(d.strideA, int64_t{15});
    QCOMPARE(d.strideB, int64_t{35});
    QCOMPARE(d.strideC, int64_t{21});
}

void TestCudaPlan::memberOfParamCoversTheLayout() {
    const ParamLayout layout({3, 4, 5, 2}, 3);
    const std::vector<ParamSegment> seg = paramSegments(layout);
    QCOMPARE(seg.size(), std::size_t{6});
    std::vector<int> owner(layout.size(), -1);
    for (int l = 0; l < layout.layerCount(); ++l) {
        const LayerSlot& s = layout.layer(l);
        for (int k = 0; k < layout.members(); ++k) {
            for (int i = 0; i < s.out * s.in; ++i) {
                owner[layout.weightOffset(l, k) + static_cast<std::size_t>(i)] = k;
            }
            for (int i = 0; i < s.out; ++i) {
                owner[layout.biasOffset(l, k) + static_cast<std::size_t>(i)] = k;
            }
        }
    }
    for (std::size_t i = 0; i < layout.size(); ++i) {
        QVERIFY(owner[i] >= 0);
        QCOMPARE(memberOfParam(i, seg.data(), static_cast<int>(seg.size())), owner[i]);
    }
}

void TestCudaPlan::stepArenaBuffersAreDisjointAndAligned() {
    for (BootstrapMode mode :
         {BootstrapMode::None, BootstrapMode::Resample, BootstrapMode::Poisson}) {
        for (bool adversarial : {false, true}) {
            const ParamLayout layout({5, 7, 3, 4}, 3);
            const uint32_t batch = 11;
            const StepArena a = planStepArena(layout, batch, mode, adversarial);
            const std::size_t k = 3;
            QCOMPARE(a.groups, mode == BootstrapMode::Resample ? 3 : 1);
            struct Span {
                std::size_t begin, size;
            };
            std::vector<Span> spans = {{a.x, static_cast<std::size_t>(a.groups) * batch * 5},
                                       {a.weights, k * batch},
                                       {a.rowLoss, k * batch},
                                       {a.delta, k * batch * 7},
                                       {a.deltaPrev, k * batch * 7}};
            if (adversarial) {  // every member's own moved inputs, and their losses
                spans.push_back({a.xAdv, k * batch * 5});
                spans.push_back({a.lossAdv, k});
            }
            QCOMPARE(a.pre.size(), std::size_t{3});
            QCOMPARE(a.post.size(), std::size_t{2});
            for (int l = 0; l < 3; ++l) {
                const std::size_t n = k * batch * static_cast<std::size_t>(layout.layer(l).out);
                spans.push_back({a.pre[static_cast<std::size_t>(l)], n});
                if (l < 2) {
                    spans.push_back({a.post[static_cast<std::size_t>(l)], n});
                }
            }
            for (std::size_t i = 0; i < spans.size(); ++i) {
                QCOMPARE(spans[i].begin % kArenaAlignFloats, std::size_t{0});
                QVERIFY(spans[i].begin + spans[i].size <= a.floats);
                for (std::size_t j = i + 1; j < spans.size(); ++j) {
                    const bool apart = spans[i].begin + spans[i].size <= spans[j].begin ||
                                       spans[j].begin + spans[j].size <= spans[i].begin;
                    QVERIFY2(apart, "two step buffers overlap");
                }
            }
            QCOMPARE(a.rowSlots, k * batch);
        }
    }
}

void TestCudaPlan::predictArenaChunksWithinBudget() {
    const ParamLayout small({2, 16, 16, 2}, 8);
    QCOMPARE(planPredictArena(small).chunkRows, int64_t{16384});   // capped
    QCOMPARE(planPredictArena(small, 1).chunkRows, int64_t{256});  // floor
    const ParamLayout wide({784, 1024, 1024, 10}, 16);
    const PredictArena a = planPredictArena(wide);
    QVERIFY(a.chunkRows > 256 && a.chunkRows < 16384 && a.chunkRows % 32 == 0);
    QVERIFY(a.floats * sizeof(float) <= kPredictBudgetBytes + 3 * 256 * sizeof(float));
    // x, bufA and bufB are disjoint and big enough.
    const std::size_t p = static_cast<std::size_t>(a.chunkRows);
    QVERIFY(a.x + p * 784 <= a.bufA);
    QVERIFY(a.bufA + 16 * p * 1024 <= a.bufB);
    QVERIFY(a.bufB + 16 * p * 1024 <= a.floats);
    // Too wide for the budget even at 256 rows: the floor wins over the budget.
    QCOMPARE(planPredictArena(ParamLayout({784, 1024, 1024, 10}, 64)).chunkRows, int64_t{256});
}

void TestCudaPlan::memoryEstimateAddsUp() {
    const ParamLayout layout({2, 32, 32, 2}, 8);
    const MemoryEstimate e = estimateDeviceMemory(layout, 1000, 64, BootstrapMode::Resample);
    QCOMPARE(e.parameters, 4 * align256(layout.size() * sizeof(float)));
    QCOMPARE(e.trainSet, align256(1000 * 2 * sizeof(float)) + align256(1000 * sizeof(int32_t)));
    const StepArena a = planStepArena(layout, 64, BootstrapMode::Resample);
    QCOMPARE(e.stepWorkspace, align256(a.floats * 4) + align256(a.rowSlots * 4));
    QCOMPARE(e.cublasWorkspace, kCublasWorkspaceBytes);
    QCOMPARE(e.total(), e.parameters + e.trainSet + e.stepWorkspace + e.predictWorkspace + e.small +
                            e.cublasWorkspace);
    // Predict-only binding keeps no train set or step workspace.
    const MemoryEstimate p = estimateDeviceMemory(layout, 0, 64, BootstrapMode::None);
    QCOMPARE(p.trainSet, std::size_t{0});
    QCOMPARE(p.stepWorkspace, std::size_t{0});
    // A run far beyond any GPU is estimated without overflow (the backend must refuse it).
    const ParamLayout huge({2, 100000, 100000, 2}, 64);
    const MemoryEstimate h = estimateDeviceMemory(huge, 1000, 64, BootstrapMode::None);
    QVERIFY(h.total() > (std::size_t{1} << 40));
}

void TestCudaPlan::planSlotsMatchPlanMember() {
    for (BootstrapMode mode :
         {BootstrapMode::None, BootstrapMode::Resample, BootstrapMode::Poisson}) {
        BatchPlanParams plan;
        plan.seed = 77;
        plan.rows = 37;
        plan.batch = 10;  // steps straddle epoch ends
        plan.mode = mode;
        const int members = 4;
        std::vector<int32_t> rows(static_cast<std::size_t>(members) * plan.batch);
        std::vector<float> weights(rows.size());
        for (uint64_t step : {uint64_t{0}, uint64_t{3}, uint64_t{11}, uint64_t{1000003}}) {
            for (int64_t i = 0; i < static_cast<int64_t>(rows.size()); ++i) {
                planSlotElement(i, plan, step, rows.data(), weights.data(), 0, plan.batch);
            }
            for (int k = 0; k < members; ++k) {
                std::vector<uint32_t> cpuRows(plan.batch);
                std::vector<float> cpuWeights(plan.batch);
                planMember(plan, static_cast<uint32_t>(k), step, cpuRows.data(), cpuWeights.data());
                for (uint32_t b = 0; b < plan.batch; ++b) {
                    const std::size_t i = static_cast<std::size_t>(k) * plan.batch + b;
                    QCOMPARE(static_cast<uint32_t>(rows[i]), cpuRows[b]);
                    QCOMPARE(weights[i], cpuWeights[b]);
                    if (mode != BootstrapMode::Resample) {
                        // One gather (member 0's rows) serves every member.
                        QCOMPARE(rows[i], rows[b]);
                    }
                    if (mode == BootstrapMode::Poisson) {
                        QCOMPARE(weights[i], static_cast<float>(poissonCount(
                                                 plan.seed, static_cast<uint32_t>(k), cpuRows[b])));
                    }
                }
            }
        }
    }
}

void TestCudaPlan::updateSkipsInactiveAndDivergedMembers() {
    const ParamLayout layout({2, 3, 2}, 3);
    const std::vector<ParamSegment> seg = paramSegments(layout);
    std::vector<float> params(layout.size(), 1.0f), grad(layout.size(), 0.5f);
    std::vector<float> m1(layout.size(), 0.0f), m2(layout.size(), 0.0f);
    const std::vector<OptimizerRule> rules(3, makeRule(OptimizerKind::Sgd, 0.1, 0.0, 0.0));
    const uint8_t active[3] = {1, 0, 1};
    const float loss[3] = {0.5f, 0.5f, std::nanf("")};
    DeviceStepState state;
    for (int64_t i = 0; i < static_cast<int64_t>(layout.size()); ++i) {
        updateElement(i, params.data(), grad.data(), m1.data(), m2.data(), seg.data(),
                      static_cast<int>(seg.size()), rules.data(), active, loss, state);
    }
    for (int l = 0; l < layout.layerCount(); ++l) {
        for (int k = 0; k < 3; ++k) {
            const float expected = k == 0 ? 0.95f : 1.0f;
            QCOMPARE(params[layout.weightOffset(l, k)], expected);
            QCOMPARE(params[layout.biasOffset(l, k) + layout.layer(l).out - 1], expected);
        }
    }
    advanceStateElement(state);
    QCOMPARE(state.step, uint64_t{1});
    QCOMPARE(state.updates, uint64_t{1});
}

void TestCudaPlan::biasCorrectionMatchesCpuFormula() {
    // The device prepares update number updates + 1, as CpuBackend does from its own count.
    const OptimizerRule base = makeRule(OptimizerKind::Adam, 3e-3, 0.0, 0.0, 0.85, 0.995);
    for (uint64_t updates : {uint64_t{0}, uint64_t{1}, uint64_t{9}, uint64_t{12345}}) {
        DeviceStepState state;
        state.updates = updates;
        OptimizerRule r;
        prepareRuleElement(0, &base, &r, state);
        OptimizerRule expected = base;
        prepareStep(expected, updates + 1);
        QCOMPARE(r.stepSize, expected.stepSize);
        QCOMPARE(r.biasCorrection2Sqrt, expected.biasCorrection2Sqrt);
        QCOMPARE(r.lr, base.lr);
    }
}

void TestCudaPlan::emulatedStepMatchesCpuBackend_data() {
    QTest::addColumn<int>("mode");
    QTest::addColumn<int>("kind");
    QTest::addColumn<int>("activation");
    QTest::addColumn<double>("eps");  // training.adversarial_eps
    const Activation acts[] = {Activation::Relu, Activation::Tanh, Activation::Gelu};
    int a = 0;
    for (BootstrapMode mode :
         {BootstrapMode::None, BootstrapMode::Resample, BootstrapMode::Poisson}) {
        for (OptimizerKind kind : {OptimizerKind::Adam, OptimizerKind::Sgd, OptimizerKind::AdamW}) {
            const Activation act = acts[a++ % 3];
            QTest::addRow("%s %s act%d", modeName(mode), kindName(kind), static_cast<int>(act))
                << static_cast<int>(mode) << static_cast<int>(kind) << static_cast<int>(act) << 0.0;
        }
        // Adversarial training: the second pass on per-member inputs, gradients added.
        QTest::addRow("%s adam relu adversarial", modeName(mode))
            << static_cast<int>(mode) << static_cast<int>(OptimizerKind::Adam)
            << static_cast<int>(Activation::Relu) << 0.05;
    }
}

void TestCudaPlan::emulatedStepMatchesCpuBackend() {
    QFETCH(int, mode);
    QFETCH(int, kind);
    QFETCH(int, activation);
    QFETCH(double, eps);
    Problem p = makeProblem(static_cast<BootstrapMode>(mode), static_cast<OptimizerKind>(kind),
                            static_cast<Activation>(activation));
    p.training.adversarialEps = static_cast<float>(eps);
    const ParamLayout& layout = p.training.layout;
    const std::vector<float> init = initialParameters(layout, 42);

    const auto cpu = cpuOracle(p.training, init);
    // The smallest prediction chunk (256 rows), so the grid below takes several, the last
    // one partial.
    EmulatedCudaBackend emu(p.training, 1);
    QCOMPARE(emu.chunkRows(), int64_t{256});
    emu.setParameters(init);

    // 40 steps: a jump in the step index, and member 1 paused for a while.
    const std::vector<uint64_t> steps = stepsWithAJump();
    trainBoth(*cpu, emu, layout, init, steps, 1, 8, 14);
    if (QTest::currentTestFailed()) {
        return;
    }
    const int side = 23;  // 529 rows: chunks of 256, 256, 17
    const std::vector<float> grid = gridPoints(side);
    predictBoth(*cpu, emu, layout, grid.data(), int64_t{side} * side, logProbability);
}

void TestCudaPlan::emulatedRegressionStepMatchesCpuBackend_data() {
    QTest::addColumn<int>("mode");
    QTest::addColumn<int>("likelihood");
    QTest::addColumn<int>("activation");
    QTest::addColumn<double>("eps");  // training.adversarial_eps
    for (BootstrapMode mode :
         {BootstrapMode::None, BootstrapMode::Resample, BootstrapMode::Poisson}) {
        for (Likelihood l : {Likelihood::Gaussian, Likelihood::Mse}) {
            const Activation act = l == Likelihood::Gaussian ? Activation::Relu : Activation::Tanh;
            const char* head = l == Likelihood::Gaussian ? "gaussian" : "mse";
            for (double eps : {0.0, 0.1}) {
                QTest::addRow("%s %s%s", modeName(mode), head, eps > 0 ? " adversarial" : "")
                    << static_cast<int>(mode) << static_cast<int>(l) << static_cast<int>(act)
                    << eps;
            }
        }
    }
}

void TestCudaPlan::emulatedRegressionStepMatchesCpuBackend() {
    QFETCH(int, mode);
    QFETCH(int, likelihood);
    QFETCH(int, activation);
    QFETCH(double, eps);
    const auto head = static_cast<Likelihood>(likelihood);
    // A 2-D linear regression problem (targets roughly standard already), Adam.
    const Dataset data = makeLinear(250, 2, 0.3, 7);
    TrainingProblem problem;
    const int members = 5;
    problem.layout = ParamLayout({2, 16, 12, headOutputs(head, 0)}, members);
    problem.activation = static_cast<Activation>(activation);
    problem.likelihood = head;
    problem.trainX = data.x.data();
    problem.trainTargets = data.target.data();
    problem.trainRows = data.rows;
    problem.plan.seed = 99;
    problem.plan.rows = static_cast<uint32_t>(data.rows);
    problem.plan.batch = 24;
    problem.plan.mode = static_cast<BootstrapMode>(mode);
    problem.adversarialEps = static_cast<float>(eps);
    for (int k = 0; k < members; ++k) {
        problem.rules.push_back(makeRule(OptimizerKind::Adam, 0.004 * (1 + k % 3), 0.0, 0.0));
    }
    const ParamLayout& layout = problem.layout;
    const std::vector<float> init = initialParameters(layout, 42);

    const auto cpu = cpuOracle(problem, init);
    EmulatedCudaBackend emu(problem, 1);
    emu.setParameters(init);

    trainBoth(*cpu, emu, layout, init, stepRange(0, 30), 2, 5, 9);
    if (QTest::currentTestFailed()) {
        return;
    }
    const std::vector<float> grid = gridPoints(23);
    // The predictive: a mean, and with the Gaussian head a variance after it.
    predictBoth(*cpu, emu, layout, grid.data(), 23 * 23, [&](std::size_t i, float v) {
        return head != Likelihood::Gaussian || i % 2 == 0 || v >= 1e-6f;
    });
}

void TestCudaPlan::emulatedConvStepMatchesCpuBackend_data() {
    QTest::addColumn<int>("mode");
    QTest::addColumn<int>("kind");
    QTest::addColumn<int>("activation");
    QTest::addColumn<int>("architecture");
    QTest::addColumn<bool>("implicitGemm");
    const Activation acts[] = {Activation::Relu, Activation::Tanh, Activation::Gelu};
    int a = 0;
    for (BootstrapMode mode :
         {BootstrapMode::None, BootstrapMode::Resample, BootstrapMode::Poisson}) {
        for (OptimizerKind kind : {OptimizerKind::Adam, OptimizerKind::Sgd}) {
            const Activation act = acts[a % 3];
            const int arch = a % 4;
            ++a;
            for (bool implicit : {false, true}) {
                QTest::addRow("%s %s act%d arch%d%s", modeName(mode), kindName(kind),
                              static_cast<int>(act), arch, implicit ? " implicit" : "")
                    << static_cast<int>(mode) << static_cast<int>(kind) << static_cast<int>(act)
                    << arch << implicit;
            }
        }
    }
    // Every architecture under the shared batch, where the first layers' copies are shared.
    for (int arch = 0; arch < 4; ++arch) {
        for (bool implicit : {false, true}) {
            QTest::addRow("none adam relu arch%d shared%s", arch, implicit ? " implicit" : "")
                << static_cast<int>(BootstrapMode::None) << static_cast<int>(OptimizerKind::Adam)
                << static_cast<int>(Activation::Relu) << arch << implicit;
        }
    }  // Each member's own columns through the split gradient (one batched product).
    for (bool implicit : {false, true}) {
        QTest::addRow("resample adam relu arch0 split%s", implicit ? " implicit" : "")
            << static_cast<int>(BootstrapMode::Resample) << static_cast<int>(OptimizerKind::Adam)
            << static_cast<int>(Activation::Relu) << 0 << implicit;
    }
}

void TestCudaPlan::emulatedConvStepMatchesCpuBackend() {
    QFETCH(int, mode);
    QFETCH(int, kind);
    QFETCH(int, activation);
    QFETCH(int, architecture);
    QFETCH(bool, implicitGemm);
    const ConvCase c = convCase(architecture);
    const int members = 3;
    const ImageProblem p = makeImageProblem(c.input, c.layers, static_cast<BootstrapMode>(mode),
                                            static_cast<OptimizerKind>(kind),
                                            static_cast<Activation>(activation), members);
    const ParamLayout& layout = p.training.layout;
    QVERIFY(!layout.isMlp());
    if (architecture == 0) {
        QCOMPARE(planConvArena(layout, 32, true, true).splits.front(), 2);  // the split path
    }
    const std::vector<float> init = initialParameters(layout, 42);

    const auto cpu = cpuOracle(p.training, init);
    // Chunks of 16 rows: the 40 predicted rows take three, the last partial.
    EmulatedConvCudaBackend emu(p.training, 16, implicitGemm);
    emu.setParameters(init);

    trainBoth(*cpu, emu, layout, init, stepRange(0, 12), 1, 4, 7);
    if (QTest::currentTestFailed()) {
        return;
    }
    predictBoth(*cpu, emu, layout, p.x.data(), 40, logProbability);
}

void TestCudaPlan::implicitConvMatchesIm2col_data() {
    QTest::addColumn<int>("channels");
    QTest::addColumn<int>("side");
    QTest::addColumn<int>("filters");
    QTest::addColumn<int>("kernel");
    QTest::addColumn<int>("stride");
    QTest::addColumn<bool>("same");
    QTest::addColumn<bool>("shared");
    QTest::newRow("3x3 same, per-member inputs") << 2 << 7 << 4 << 3 << 1 << true << false;
    QTest::newRow("3x3 same, shared input") << 1 << 8 << 5 << 3 << 1 << true << true;
    QTest::newRow("3x3 stride 2 same") << 3 << 9 << 4 << 3 << 2 << true << false;
    QTest::newRow("2x2 valid (even kernel)") << 2 << 6 << 3 << 2 << 1 << false << true;
    QTest::newRow("5x5 stride 2 valid") << 1 << 11 << 2 << 5 << 2 << false << false;
    QTest::newRow("4x4 same (uneven padding)") << 2 << 5 << 3 << 4 << 1 << true << false;
}

void TestCudaPlan::implicitConvMatchesIm2col() {
    QFETCH(int, channels);
    QFETCH(int, side);
    QFETCH(int, filters);
    QFETCH(int, kernel);
    QFETCH(int, stride);
    QFETCH(bool, same);
    QFETCH(bool, shared);
    const int members = 3;
    const int batch = 4;
    const Architecture a = Architecture::stack(
        {channels, side, side},
        {test::conv(filters, kernel, stride, same ? Padding::Same : Padding::Valid)}, 2);
    const SpatialGeometry g = spatialGeometry(a.layers().front());
    const int64_t plane = int64_t{g.outH} * g.outW;
    const int64_t rows = batch * plane;  // per member
    const int64_t width = int64_t{g.inC} * kernel * kernel;
    const int64_t inExamples = shared ? batch : int64_t{members} * batch;
    const int64_t image = int64_t{g.inH} * g.inW * g.inC;
    const std::vector<float> in = randomVector(static_cast<std::size_t>(inExamples * image), 4);
    const std::vector<float> w =
        randomVector(static_cast<std::size_t>(members * filters * width), 5);  // [K][F][Ckk]
    const std::vector<float> dPre =
        randomVector(static_cast<std::size_t>(members * rows * filters), 6);  // [K][R][F]

    // The reference: every member's columns (im2col), then each product summed in the order
    // the implicit elements use (j, f, rows ascending).
    const int64_t examples = int64_t{members} * batch;
    std::vector<float> cols(static_cast<std::size_t>(examples * plane * width), std::nanf(""));
    for (int64_t t = 0; t < examples * plane * g.inC; ++t) {
        im2colPatchElement(t, g, in.data(), cols.data(), inExamples);
    }
    std::vector<float> preRef(static_cast<std::size_t>(members * rows * filters));
    std::vector<float> dColsRef(cols.size());
    std::vector<float> dWRef(static_cast<std::size_t>(members * filters * width));
    for (int64_t k = 0; k < members; ++k) {
        const float* wk = w.data() + k * filters * width;
        for (int64_t r = 0; r < rows; ++r) {
            const float* col = cols.data() + (k * rows + r) * width;
            const float* d = dPre.data() + (k * rows + r) * filters;
            for (int f = 0; f < filters; ++f) {
                float sum = 0.0f;
                for (int64_t j = 0; j < width; ++j) {
                    sum += col[j] * wk[f * width + j];
                }
                preRef[static_cast<std::size_t>((k * rows + r) * filters + f)] = sum;
            }
            for (int64_t j = 0; j < width; ++j) {
                float sum = 0.0f;
                for (int f = 0; f < filters; ++f) {
                    sum += wk[f * width + j] * d[f];
                }
                dColsRef[static_cast<std::size_t>((k * rows + r) * width + j)] = sum;
            }
        }
    }
    std::vector<float> dInRef(static_cast<std::size_t>(examples * image));
    for (int64_t i = 0; i < examples * image; ++i) {
        col2imElement(i, g, dColsRef.data(), dInRef.data());
    }
    const int splits = 2;  // two chunks of whole examples
    std::vector<float> partialRef(static_cast<std::size_t>(members * splits * filters * width));
    for (int64_t k = 0; k < members; ++k) {
        for (int s = 0; s < splits; ++s) {
            for (int f = 0; f < filters; ++f) {
                for (int64_t j = 0; j < width; ++j) {
                    float sum = 0.0f;
                    for (int64_t r = s * rows / splits; r < (s + 1) * rows / splits; ++r) {
                        sum += cols[static_cast<std::size_t>((k * rows + r) * width + j)] *
                               dPre[static_cast<std::size_t>((k * rows + r) * filters + f)];
                    }
                    partialRef[static_cast<std::size_t>(((k * splits + s) * filters + f) * width +
                                                        j)] = sum;
                }
            }
        }
    }

    // The implicit elements, through the emulated executor (as the program calls them).
    HostExecutor ex;
    std::vector<float> pre(preRef.size(), std::nanf(""));
    ex.implicitConvForward(g, in.data(), inExamples, members, rows, w.data(), pre.data());
    std::vector<float> dIn(dInRef.size(), std::nanf(""));
    ex.implicitConvInputGrad(g, dPre.data(), w.data(), batch, examples, dIn.data());
    std::vector<float> partial(partialRef.size(), std::nanf(""));
    ex.implicitConvWeightGrad(g, in.data(), inExamples, dPre.data(), members, rows, splits,
                              partial.data());
    const auto agree = [](const std::vector<float>& got, const std::vector<float>& want,
                          const char* what) {
        for (std::size_t i = 0; i < want.size(); ++i) {
            if (!test::nearScaled(got[i], want[i], test::kEmulatedLoss)) {
                QFAIL(qPrintable(QStringLiteral("%1 [%2]: %3, expected %4")
                                     .arg(QLatin1String(what))
                                     .arg(i)
                                     .arg(double(got[i]))
                                     .arg(double(want[i]))));
            }
        }
    };
    agree(pre, preRef, "forward");
    agree(dIn, dInRef, "input gradient");
    agree(partial, partialRef, "weight gradient partials");
}

void TestCudaPlan::convArenaFitsEveryLayer() {
    // The recipe's buffers for K = 4, batch 128: every layer's output, columns and the flatten
    // are where the plan says, disjoint, aligned, and sized as the shapes require.
    const ParamLayout layout(Architecture::stack({1, 28, 28}, recipeLayers(), 10), 4);
    for (bool shared : {true, false}) {
        const ConvArena a = planConvArena(layout, 128, shared, true);
        struct Span {
            std::size_t begin, size;
        };
        std::vector<Span> spans;
        const std::vector<StackLayer>& stack = layout.architecture().layers();
        const std::size_t k = 4, b = 128;
        for (std::size_t i = 0; i < stack.size(); ++i) {
            const std::size_t out = k * b * static_cast<std::size_t>(stack[i].out.size());
            if (a.pre[i] != ConvArena::kNone) {
                spans.push_back({a.pre[i], out});
            }
            if (a.post[i] != ConvArena::kNone) {
                spans.push_back({a.post[i], out});
            }
            if (a.cols[i] != ConvArena::kNone) {
                const std::size_t g = static_cast<std::size_t>(a.groups[i]);
                spans.push_back({a.cols[i], g * b * static_cast<std::size_t>(stack[i].out.plane()) *
                                                static_cast<std::size_t>(stack[i].fanIn())});
            }
        }
        QCOMPARE(a.groups.front(), shared ? 1 : 4);
        QCOMPARE(a.groups.back(), 4);
        QCOMPARE(a.onesCount, b * 28 * 28);
        spans.push_back({a.x, (shared ? 1 : k) * b * 784});
        spans.push_back({a.flat, k * b * 64 * 7 * 7});
        spans.push_back({a.ones, a.onesCount});
        // Splits: 32 chunks of 4 examples (3136 rows) in conv 1, 16 of 8 (1568) in conv 2.
        QCOMPARE(a.splits[0], 32);
        QCOMPARE(a.splits[2], 16);
        spans.push_back({a.partial, std::max<std::size_t>(k * 32 * 32 * 10, k * 16 * 64 * 289)});
        spans.push_back({a.delta, k * b * 32 * 28 * 28});
        spans.push_back({a.deltaPrev, k * b * 32 * 28 * 28});
        std::sort(spans.begin(), spans.end(),
                  [](const Span& x, const Span& y) { return x.begin < y.begin; });
        for (std::size_t i = 0; i < spans.size(); ++i) {
            QCOMPARE(spans[i].begin % kArenaAlignFloats, std::size_t{0});
            const std::size_t end = spans[i].begin + spans[i].size;
            QVERIFY(end <= (i + 1 < spans.size() ? spans[i + 1].begin : a.floats));
        }
    }
    // Prediction chunks stay within their budget and keep at least 8 rows.
    const int64_t chunk = convPredictChunkRows(layout, std::size_t{64} << 20);
    QVERIFY(chunk >= 8 && chunk % 8 == 0);
    QVERIFY(planConvArena(layout, chunk, true, false).floats * sizeof(float) <=
            std::max<std::size_t>(std::size_t{64} << 20,
                                  planConvArena(layout, 8, true, false).floats * sizeof(float)));
}

void TestCudaPlan::emulatedDataAxisMatchesFullBatch_data() {
    QTest::addColumn<int>("mode");
    QTest::addColumn<int>("replicas");
    QTest::addColumn<double>("dropout");  // model.dropout: a row's masks by its batch position
    QTest::newRow("none D2") << static_cast<int>(BootstrapMode::None) << 2 << 0.0;
    QTest::newRow("resample D2") << static_cast<int>(BootstrapMode::Resample) << 2 << 0.0;
    QTest::newRow("poisson D4") << static_cast<int>(BootstrapMode::Poisson) << 4 << 0.0;
    QTest::newRow("none D2 dropout") << static_cast<int>(BootstrapMode::None) << 2 << 0.3;
    QTest::newRow("poisson D4 dropout") << static_cast<int>(BootstrapMode::Poisson) << 4 << 0.5;
}

void TestCudaPlan::emulatedDataAxisMatchesFullBatch() {
    QFETCH(int, mode);
    QFETCH(int, replicas);
    QFETCH(double, dropout);
    Problem p =
        makeProblem(static_cast<BootstrapMode>(mode), OptimizerKind::Adam, Activation::Relu);
    p.training.dropout = static_cast<float>(dropout);
    p.training.dropoutSeed = 31;
    const ParamLayout& layout = p.training.layout;
    const int members = layout.members();
    const std::vector<float> init = initialParameters(layout, 42);

    EmulatedCudaBackend whole(p.training, 1);
    whole.setParameters(init);
    const uint32_t rows = p.training.plan.batch / static_cast<uint32_t>(replicas);
    QCOMPARE(rows * static_cast<uint32_t>(replicas), p.training.plan.batch);
    std::vector<std::unique_ptr<EmulatedCudaBackend>> shards;
    for (int d = 0; d < replicas; ++d) {
        shards.push_back(std::make_unique<EmulatedCudaBackend>(
            p.training, 1, StepShard{static_cast<uint32_t>(d) * rows, rows}));
        shards.back()->setParameters(init);
    }
    std::vector<uint8_t> active(static_cast<std::size_t>(members), 1);
    std::vector<float> wholeLoss(static_cast<std::size_t>(members));
    for (uint64_t step = 0; step < 30; ++step) {
        active[1] = (step >= 5 && step < 9) ? 0 : 1;
        whole.step(step, active.data(), wholeLoss.data());
        for (auto& r : shards) {
            r->gradientPhase(step, active.data());
            QVERIFY2(r->error().empty(), r->error().c_str());
        }
        // The host sum: every element added in replica order, the result given to all.
        std::vector<float> grad = shards[0]->grad();
        std::vector<float> loss = shards[0]->loss();
        for (int d = 1; d < replicas; ++d) {
            for (std::size_t i = 0; i < grad.size(); ++i) {
                grad[i] += shards[static_cast<std::size_t>(d)]->grad()[i];
            }
            for (std::size_t k = 0; k < loss.size(); ++k) {
                loss[k] += shards[static_cast<std::size_t>(d)]->loss()[k];
            }
        }
        for (auto& r : shards) {
            r->grad() = grad;
            r->loss() = loss;
            r->updatePhase();
        }
        for (int k = 0; k < members; ++k) {
            const float w = wholeLoss[static_cast<std::size_t>(k)];
            const float s = loss[static_cast<std::size_t>(k)];
            QVERIFY2(std::abs(w - s) <= test::kEmulatedLoss * std::max(1.0f, std::abs(w)),
                     qPrintable(QStringLiteral("step %1 member %2: whole batch %3, replicas %4")
                                    .arg(step)
                                    .arg(k)
                                    .arg(double(w))
                                    .arg(double(s))));
        }
    }
    for (int d = 1; d < replicas; ++d) {
        QVERIFY(shards[static_cast<std::size_t>(d)]->params() == shards[0]->params());
    }
    const double error = nmse(whole.params(), shards[0]->params());
    qInfo("data axis D = %d: parameter nMSE against the whole batch %.3g", replicas, error);
    QVERIFY2(error < test::kEmulatedParamNmse, qPrintable(QString::number(error)));
    QVERIFY(nmse(init, whole.params()) > 1e-4);  // it did train
}

QTEST_APPLESS_MAIN(TestCudaPlan)
#include "tst_cuda_plan.moc"
