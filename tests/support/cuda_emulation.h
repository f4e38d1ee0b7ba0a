#pragma once

// The CUDA backend's step programs executed on the host (tst_cuda_plan, tst_cuda_plan_dropout):
// a reference column-major strided-batched GEMM with cuBLAS's semantics and bounds, an
// executor that runs every element function of step_elements.h and conv_elements.h in plain
// loops, the device state CudaBackend keeps (EmulatedCudaBackend for MLP members,
// EmulatedConvCudaBackend for CNN members, driven as CudaBackend drives them), and the runs
// that compare them with CpuBackend. One file: the executor, the emulated devices and the
// comparisons are one emulation, each part useless without the others.

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
#include "math/philox.h"
#include "model/mlp.h"
#include "support/backend_test_problem.h"
#include "support/test_support.h"

namespace ensemble::test::emulation {

using namespace ensemble::gpu;

inline std::vector<float> randomVector(std::size_t n, uint64_t seed) {
    std::vector<float> v(n);
    for (std::size_t i = 0; i < n; ++i) {
        v[i] = 2.0f * uniformFloat(philoxDraw(seed, RngPurpose::DataGen, 99, i).v[0]) - 1.0f;
    }
    return v;
}

// A host buffer the reference GEMM may touch: [begin, begin + size).
struct Region {
    const float* begin;
    std::size_t size;
};

// Reference strided-batched SGEMM with cuBLAS's semantics (column-major, alpha 1, beta 0 or 1;
// beta 0 never reads C):
//   C_p[i + j*ldc] = sum_l opA_p(i, l) * opB_p(l, j) (+ beta * C_p[i + j*ldc]),
//   opA_p(i, l) = transA ? A_p[l + i*lda] : A_p[i + l*lda]   (A_p = A + p*strideA),
//   opB_p(l, j) = transB ? B_p[j + l*ldb] : B_p[l + j*ldb].
// Returns an empty string, or what cuBLAS would reject or what would read or write outside
// the given regions.
inline std::string referenceGemm(const GemmArgs& g, Region a, Region b, float* c,
                                 std::size_t cSize) {
    if (g.m < 0 || g.n < 0 || g.k < 0 || g.batchCount < 0) {
        return "negative dimension";
    }
    // cuBLAS: lda >= max(1, rows of the stored A), likewise for B and C.
    const int aRows = g.transA ? g.k : g.m;
    const int aCols = g.transA ? g.m : g.k;
    const int bRows = g.transB ? g.n : g.k;
    const int bCols = g.transB ? g.k : g.n;
    if (g.lda < std::max(1, aRows) || g.ldb < std::max(1, bRows) || g.ldc < std::max(1, g.m)) {
        return "leading dimension too small";
    }
    auto extent = [&](int rows, int cols, int ld, int64_t stride) {
        return static_cast<int64_t>(g.batchCount - 1) * stride +
               static_cast<int64_t>(cols - 1) * ld + rows;
    };
    if (extent(aRows, aCols, g.lda, g.strideA) > static_cast<int64_t>(a.size) ||
        extent(bRows, bCols, g.ldb, g.strideB) > static_cast<int64_t>(b.size) ||
        extent(g.m, g.n, g.ldc, g.strideC) > static_cast<int64_t>(cSize)) {
        return "access outside the buffer";
    }
    // Output blocks of different batch entries must not overlap (cuBLAS would race).
    if (g.batchCount > 1 && g.strideC < static_cast<int64_t>(g.n - 1) * g.ldc + g.m) {
        return "output blocks overlap";
    }
    for (int p = 0; p < g.batchCount; ++p) {
        const float* ap = a.begin + p * g.strideA;
        const float* bp = b.begin + p * g.strideB;
        float* cp = c + p * g.strideC;
        for (int j = 0; j < g.n; ++j) {
            for (int i = 0; i < g.m; ++i) {
                float sum = 0.0f;
                for (int l = 0; l < g.k; ++l) {
                    const float av = g.transA ? ap[l + static_cast<int64_t>(i) * g.lda]
                                              : ap[i + static_cast<int64_t>(l) * g.lda];
                    const float bv = g.transB ? bp[j + static_cast<int64_t>(l) * g.ldb]
                                              : bp[l + static_cast<int64_t>(j) * g.ldb];
                    sum += av * bv;
                }
                float& out = cp[i + static_cast<int64_t>(j) * g.ldc];
                out = g.beta == 0.0f ? sum : sum + g.beta * out;
            }
        }
    }
    return {};
}

using RowMatrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using ConstMap = Eigen::Map<const RowMatrix>;

// Host execution of the step program: every element function in a loop, every GEMM through
// referenceGemm. Pointers are resolved to the region (arena) that holds them for the GEMM's
// bounds check; the first problem found is kept in `error`.
class HostExecutor {
  public:
    std::vector<Region> regions;
    std::string error;
    int64_t dropoutOperations = 0;  // dropout calls enqueued (none without dropout)

    void prepareRules(const OptimizerRule* base, OptimizerRule* rules, int members,
                      const DeviceStepState* state) {
        for (int64_t k = 0; k < members; ++k) {
            prepareRuleElement(k, base, rules, *state);
        }
    }
    void planBatch(const BatchPlanParams& plan, int members, const DeviceStepState* state,
                   int32_t* rows, float* weights, uint32_t first, uint32_t n) {
        for (int64_t i = 0; i < static_cast<int64_t>(members) * n; ++i) {
            planSlotElement(i, plan, state->step, rows, weights, first, n);
        }
    }
    void gatherRows(const float* trainX, int features, const int32_t* rows, int64_t slotCount,
                    float* x) {
        for (int64_t i = 0; i < slotCount * features; ++i) {
            gatherElement(i, trainX, features, rows, x);
        }
    }
    void gemm(const GemmArgs& g, const float* a, const float* b, float* c) {
        const Region ra = regionOf(a);
        const Region rb = regionOf(b);
        const Region rc = regionOf(c);
        const std::string e = referenceGemm(g, ra, rb, c, rc.size);
        if (!e.empty() && error.empty()) {
            error = e;
        }
    }
    void biasActivate(float* z, float* post, const float* bias, int members, int rows, int out,
                      Activation act) {
        for (int64_t i = 0; i < static_cast<int64_t>(members) * rows * out; ++i) {
            biasActivateElement(i, z, post, bias, rows, out, act);
        }
    }
    void softmaxCrossEntropy(const float* logits, const int32_t* trainY, const int32_t* rows,
                             const float* weights, int members, int batch, int classes,
                             float* dLogits, float* rowLoss, int normaliser) {
        for (int64_t r = 0; r < static_cast<int64_t>(members) * batch; ++r) {
            softmaxCrossEntropyElement(r, logits, trainY, rows, weights, normaliser, classes,
                                       dLogits, rowLoss);
        }
    }
    void regressionLoss(const float* outputs, const float* trainTargets, const int32_t* rows,
                        const float* weights, int members, int batch, int outputCount,
                        Likelihood likelihood, float* dOutputs, float* rowLoss, int normaliser) {
        for (int64_t r = 0; r < static_cast<int64_t>(members) * batch; ++r) {
            regressionLossElement(r, outputs, trainTargets, rows, weights, normaliser, outputCount,
                                  likelihood, dOutputs, rowLoss);
        }
    }
    void headPredictive(float* z, int64_t rows, int outputCount, Likelihood likelihood) {
        for (int64_t r = 0; r < rows; ++r) {
            headPredictiveElement(r, z, outputCount, likelihood);
        }
    }
    void memberLoss(const float* rowLoss, const uint8_t* active, int members, int batch,
                    float* loss) {
        for (int64_t k = 0; k < members; ++k) {
            memberLossElement(k, rowLoss, active, batch, loss);
        }
    }
    void biasGradient(const float* delta, float* gradBias, int members, int rows, int out,
                      bool accumulate = false) {
        for (int64_t j = 0; j < static_cast<int64_t>(members) * out; ++j) {
            biasGradientElement(j, delta, gradBias, rows, out, accumulate);
        }
    }
    void adversarialInputs(const float* x, bool shared, int members, int batch, int features,
                           float eps, float* xAdv) {
        for (int64_t i = 0; i < static_cast<int64_t>(members) * batch * features; ++i) {
            adversarialInputElement(i, x, shared, batch, features, eps, xAdv);
        }
    }
    void adversarialLoss(const float* lossAdv, int members, float* loss) {
        for (int64_t k = 0; k < members; ++k) {
            adversarialLossElement(k, lossAdv, loss);
        }
    }
    void activationBackward(float* delta, const float* pre, const float* post, int64_t count,
                            Activation act) {
        for (int64_t i = 0; i < count; ++i) {
            activationBackwardElement(i, delta, pre, post, act);
        }
    }
    void dropoutMask(const DropoutStep& key, const DeviceStepState* state, int members, int rows,
                     int units, int layer, float* mask) {
        ++dropoutOperations;
        const int64_t count = static_cast<int64_t>(members) * rows * ((units + 3) / 4);
        for (int64_t j = 0; j < count; ++j) {
            dropoutMaskElement(j, key, state->step, rows, units, layer, mask);
        }
    }
    void dropoutLayerMask(const DropoutStep& key, const DeviceStepState* state, int members,
                          int rows, int channels, int plane, int layer, float rate, float* mask) {
        ++dropoutOperations;
        const int64_t count = int64_t{members} * rows * ((channels * plane + 3) / 4);
        for (int64_t j = 0; j < count; ++j) {
            dropoutLayerMaskElement(j, key, state->step, rows, channels, plane, layer, rate, mask);
        }
    }
    void maskMultiply(const float* x, const float* mask, int64_t count, float* out) {
        ++dropoutOperations;
        for (int64_t i = 0; i < count; ++i) {
            maskMultiplyElement(i, x, mask, out);
        }
    }
    void dropoutApply(float* post, const float* mask, int64_t count, int64_t plane, int units) {
        ++dropoutOperations;
        for (int64_t i = 0; i < count; ++i) {
            dropoutApplyElement(i, post, mask, plane, units);
        }
    }
    void dropoutBackward(float* delta, const float* pre, const float* mask, int64_t count,
                         int64_t plane, int units, Activation act) {
        ++dropoutOperations;
        for (int64_t i = 0; i < count; ++i) {
            dropoutBackwardElement(i, delta, pre, mask, plane, units, act);
        }
    }
    void applyUpdates(const StepBuffers& b, int64_t total) {
        for (int64_t i = 0; i < total; ++i) {
            updateElement(i, b.params, b.grad, b.moment1, b.moment2, b.segments, b.segmentCount,
                          b.rules, b.active, b.loss, *b.state);
        }
    }
    void advanceState(DeviceStepState* state) { advanceStateElement(*state); }
    void logSoftmax(float* z, int64_t rows, int classes) {
        for (int64_t r = 0; r < rows; ++r) {
            logSoftmaxElement(r, z, classes);
        }
    }
    // CNN members (conv_program.h / conv_elements.h).
    void im2col(const SpatialGeometry& g, const float* in, int64_t inExamples, int64_t examples,
                float* cols) {
        const int64_t n = examples * g.outH * g.outW * g.inC;
        for (int64_t t = 0; t < n; ++t) {
            im2colPatchElement(t, g, in, cols, inExamples);
        }
    }
    void col2im(const SpatialGeometry& g, const float* dCols, int64_t examples, float* dIn) {
        for (int64_t i = 0; i < examples * g.inC * g.inH * g.inW; ++i) {
            col2imElement(i, g, dCols, dIn);
        }
    }
    void poolForward(const SpatialGeometry& g, const float* in, int64_t examples, float* out) {
        for (int64_t i = 0; i < examples * g.outC * g.outH * g.outW; ++i) {
            poolForwardElement(i, g, in, out);
        }
    }
    void poolBackward(const SpatialGeometry& g, const float* in, const float* dOut,
                      int64_t examples, float* dIn) {
        for (int64_t i = 0; i < examples * g.outC * g.outH * g.outW; ++i) {
            poolBackwardElement(i, g, in, dOut, dIn);
        }
    }
    void flatten(int channels, int64_t plane, int64_t examples, const float* in, float* out) {
        for (int64_t i = 0; i < examples * channels * plane; ++i) {
            flattenElement(i, channels, plane, in, out);
        }
    }
    void unflatten(int channels, int64_t plane, int64_t examples, const float* in, float* out) {
        for (int64_t i = 0; i < examples * channels * plane; ++i) {
            unflattenElement(i, channels, plane, in, out);
        }
    }
    void sumPartials(const float* partial, int members, int splits, int64_t n, float* out) {
        for (int64_t i = 0; i < static_cast<int64_t>(members) * n; ++i) {
            sumPartialsElement(i, partial, splits, n, out);
        }
    }
    void fill(float* out, int64_t count, float value) {
        for (int64_t i = 0; i < count; ++i) {
            fillElement(i, value, out);
        }
    }
    void implicitConvForward(const SpatialGeometry& g, const float* in, int64_t inExamples,
                             int members, int64_t rows, const float* weights, float* pre) {
        for (int64_t t = 0; t < members * rows * g.outC; ++t) {
            implicitConvForwardElement(t, g, in, inExamples, weights, rows, pre);
        }
    }
    void implicitConvInputGrad(const SpatialGeometry& g, const float* dPre, const float* weights,
                               int64_t examplesPerMember, int64_t examples, float* dIn) {
        for (int64_t i = 0; i < examples * g.inH * g.inW * g.inC; ++i) {
            implicitConvInputGradElement(i, g, dPre, weights, examplesPerMember, dIn);
        }
    }
    void implicitConvWeightGrad(const SpatialGeometry& g, const float* in, int64_t inExamples,
                                const float* dPre, int members, int64_t rows, int splits,
                                float* partial) {
        const int64_t width = int64_t{g.inC} * g.kernel * g.kernel;
        for (int64_t t = 0; t < int64_t{members} * splits * g.outC * width; ++t) {
            implicitConvWeightGradElement(t, g, in, inExamples, dPre, rows, splits, partial);
        }
    }

  private:
    // The rest of the region holding p (the GEMM may touch [p, region end)).
    Region regionOf(const float* p) {
        for (const Region& r : regions) {
            if (p >= r.begin && p < r.begin + r.size) {
                return {p, r.size - static_cast<std::size_t>(p - r.begin)};
            }
        }
        if (error.empty()) {
            error = "GEMM operand outside every known buffer";
        }
        return {p, 0};
    }
};

// What every emulated step program holds on the device, in host memory: parameters, gradient
// and Adam moments, the training split, the members' rules, flags and losses, wired into
// StepBuffers as CudaBackend wires its device buffers. The emulations add their arenas.
class EmulatedDevice {
  public:
    EmulatedDevice(const EmulatedDevice&) = delete;  // m_buffers points into this object
    EmulatedDevice& operator=(const EmulatedDevice&) = delete;

    const std::vector<float>& params() const { return m_params; }
    const std::string& error() const { return m_ex.error; }
    int64_t dropoutOperations() const { return m_ex.dropoutOperations; }

  protected:
    explicit EmulatedDevice(const TrainingProblem& problem) : m_problem(problem) {
        const ParamLayout& layout = problem.layout;
        const std::size_t size = layout.size();
        m_params.assign(size, 0.0f);
        m_grad.assign(size, 0.0f);
        m_moment1.assign(size, 0.0f);
        m_moment2.assign(size, 0.0f);
        m_trainX.assign(problem.trainX, problem.trainX + problem.trainRows * layout.inputs());
        if (isRegression(problem.likelihood)) {
            m_trainTargets.assign(problem.trainTargets, problem.trainTargets + problem.trainRows);
        } else {
            m_trainY.assign(problem.trainY, problem.trainY + problem.trainRows);
        }
        m_rules.resize(problem.rules.size());
        m_active.assign(problem.rules.size(), 1);
        m_loss.assign(problem.rules.size(), 0.0f);
        m_segments = paramSegments(layout);
        m_buffers.params = m_params.data();
        m_buffers.grad = m_grad.data();
        m_buffers.moment1 = m_moment1.data();
        m_buffers.moment2 = m_moment2.data();
        m_buffers.trainX = m_trainX.data();
        m_buffers.trainY = m_trainY.data();
        m_buffers.trainTargets = m_trainTargets.data();
        m_buffers.loss = m_loss.data();
        m_buffers.active = m_active.data();
        m_buffers.baseRules = m_problem.rules.data();
        m_buffers.rules = m_rules.data();
        m_buffers.state = &m_state;
        m_buffers.segments = m_segments.data();
        m_buffers.segmentCount = static_cast<int>(m_segments.size());
    }
    ~EmulatedDevice() = default;

    // The problem's dropout, as CudaBackend::enqueueStep passes it.
    StepDropout dropout() const { return {m_problem.dropout, m_problem.dropoutSeed}; }

    // The step index and the members' flags, as CudaBackend uploads them before a step.
    void beginStep(uint64_t step, const uint8_t* active) {
        m_state.step = step;
        for (std::size_t k = 0; k < m_active.size(); ++k) {
            m_active[k] = active[k] != 0 ? 1 : 0;
        }
    }

    TrainingProblem m_problem;
    std::vector<float> m_params, m_grad, m_moment1, m_moment2, m_trainX, m_trainTargets, m_loss;
    std::vector<int32_t> m_trainY, m_rows;
    std::vector<OptimizerRule> m_rules;
    std::vector<uint8_t> m_active;
    std::vector<ParamSegment> m_segments;
    DeviceStepState m_state;
    StepBuffers m_buffers;
    HostExecutor m_ex;
};

// What CudaBackend holds on the device, in host memory, driven like CudaBackend drives it.
class EmulatedCudaBackend : public EmulatedDevice {
  public:
    // `shard`: a data-axis replica's rows of every batch (rows 0: the whole batch).
    EmulatedCudaBackend(const TrainingProblem& problem, std::size_t predictBudget,
                        StepShard shard = {})
        : EmulatedDevice(problem), m_shard(shard) {
        const ParamLayout& layout = problem.layout;
        const uint32_t stepRows = shard.rows > 0 ? shard.rows : problem.plan.batch;
        const StepArena arena =
            planStepArena(layout, stepRows, problem.plan.mode, problem.adversarialEps > 0.0f,
                          problem.dropout > 0.0f);
        // Poison the arena: a buffer read before it is written shows up as NaN.
        m_arena.assign(arena.floats, std::nanf(""));
        m_rows.assign(arena.rowSlots, -1);
        m_predict = planPredictArena(layout, predictBudget);
        m_predictArena.assign(m_predict.floats, std::nanf(""));

        placeStepBuffers(arena, m_arena.data(), m_rows.data(), m_buffers);
        m_ex.regions = {{m_params.data(), m_params.size()},
                        {m_grad.data(), m_grad.size()},
                        {m_arena.data(), m_arena.size()},
                        {m_predictArena.data(), m_predictArena.size()}};
    }

    void setParameters(const std::vector<float>& p) {
        m_params = p;
        std::fill(m_moment1.begin(), m_moment1.end(), 0.0f);
        std::fill(m_moment2.begin(), m_moment2.end(), 0.0f);
        m_state.updates = 0;
    }

    void step(uint64_t step, const uint8_t* active, float* losses) {
        beginStep(step, active);
        enqueueTrainingStep(m_ex, m_problem.layout, m_problem.plan, m_problem.activation, m_buffers,
                            m_problem.likelihood, m_problem.adversarialEps, {}, StepPhase::All,
                            dropout());
        std::copy(m_loss.begin(), m_loss.end(), losses);
    }

    // The data axis's two phases, as CudaBackend::step runs them around the host sum.
    void gradientPhase(uint64_t step, const uint8_t* active) {
        beginStep(step, active);
        enqueueTrainingStep(m_ex, m_problem.layout, m_problem.plan, m_problem.activation, m_buffers,
                            m_problem.likelihood, m_problem.adversarialEps, m_shard,
                            StepPhase::Gradient, dropout());
    }
    void updatePhase() {
        enqueueTrainingStep(m_ex, m_problem.layout, m_problem.plan, m_problem.activation, m_buffers,
                            m_problem.likelihood, m_problem.adversarialEps, m_shard,
                            StepPhase::Update, dropout());
    }
    std::vector<float>& grad() { return m_grad; }
    std::vector<float>& loss() { return m_loss; }

    // All members' log-probabilities [K][rows][C]; NaN where nothing was written.
    std::vector<float> predict(const float* x, int64_t rows) {
        const ParamLayout& layout = m_problem.layout;
        std::vector<float> out(static_cast<std::size_t>(layout.members()) *
                                   static_cast<std::size_t>(rows) *
                                   static_cast<std::size_t>(layout.classes()),
                               std::nanf(""));
        const std::size_t d = static_cast<std::size_t>(layout.inputs());
        const std::size_t c = static_cast<std::size_t>(layout.classes());
        float* arena = m_predictArena.data();
        for (int64_t begin = 0; begin < rows; begin += m_predict.chunkRows) {
            const int n = static_cast<int>(std::min<int64_t>(m_predict.chunkRows, rows - begin));
            std::copy(x + begin * static_cast<int64_t>(d),
                      x + (begin + n) * static_cast<int64_t>(d), arena + m_predict.x);
            const float* logProbs = enqueuePrediction(
                m_ex, layout, m_problem.activation, m_params.data(), arena + m_predict.x, n,
                arena + m_predict.bufA, arena + m_predict.bufB, m_problem.likelihood);
            const std::size_t block = static_cast<std::size_t>(n) * c;
            for (std::size_t k = 0; k < static_cast<std::size_t>(layout.members()); ++k) {
                std::copy(
                    logProbs + k * block, logProbs + (k + 1) * block,
                    out.begin() + static_cast<std::ptrdiff_t>((k * static_cast<std::size_t>(rows) +
                                                               static_cast<std::size_t>(begin)) *
                                                              c));
            }
        }
        return out;
    }

    int64_t chunkRows() const { return m_predict.chunkRows; }

  private:
    StepShard m_shard;
    std::vector<float> m_arena, m_predictArena;
    PredictArena m_predict;
};

// What CudaBackend holds for CNN members, in host memory, driven like CudaBackend drives it.
class EmulatedConvCudaBackend : public EmulatedDevice {
  public:
    // `implicitGemm`: the implicit-GEMM convolution instead of im2col + GEMM (ConvArena).
    EmulatedConvCudaBackend(const TrainingProblem& problem, int64_t predictRows,
                            bool implicitGemm = false)
        : EmulatedDevice(problem) {
        const ParamLayout& layout = problem.layout;
        m_arena =
            planConvArena(layout, problem.plan.batch, problem.plan.mode != BootstrapMode::Resample,
                          true, problem.dropout > 0.0f);
        m_arena.implicitGemm = implicitGemm;
        // Poisoned: a buffer read before it is written shows up as NaN.
        m_arenaFloats.assign(m_arena.floats, std::nanf(""));
        m_rows.assign(m_arena.rowSlots, -1);
        placeConvStepBuffers(m_arena, m_arenaFloats.data(), m_rows.data(), m_buffers, m_conv);
        m_predict = planConvArena(layout, predictRows, true, false);
        m_predict.implicitGemm = implicitGemm;
        m_predictFloats.assign(m_predict.floats, std::nanf(""));
        m_predictBuffers = placeConvBuffers(m_predict, m_predictFloats.data());
        m_ex.regions = {{m_params.data(), m_params.size()},
                        {m_grad.data(), m_grad.size()},
                        {m_arenaFloats.data(), m_arenaFloats.size()},
                        {m_predictFloats.data(), m_predictFloats.size()}};
    }

    void setParameters(const std::vector<float>& p) { m_params = p; }

    void step(uint64_t step, const uint8_t* active, float* losses) {
        beginStep(step, active);
        enqueueConvTrainingStep(m_ex, m_problem.layout, m_problem.plan, m_problem.activation,
                                m_buffers, m_arena, m_conv, {}, StepPhase::All, dropout());
        std::copy(m_loss.begin(), m_loss.end(), losses);
    }

    // All members' log-probabilities [K][rows][C], in chunks as CudaBackend runs them.
    std::vector<float> predict(const float* x, int64_t rows) {
        const ParamLayout& layout = m_problem.layout;
        const std::size_t d = static_cast<std::size_t>(layout.inputs());
        const std::size_t c = static_cast<std::size_t>(layout.classes());
        const std::size_t k = static_cast<std::size_t>(layout.members());
        std::vector<float> out(k * static_cast<std::size_t>(rows) * c, std::nanf(""));
        for (int64_t begin = 0; begin < rows; begin += m_predict.rows) {
            const int64_t n = std::min<int64_t>(m_predict.rows, rows - begin);
            std::copy(x + begin * static_cast<int64_t>(d),
                      x + (begin + n) * static_cast<int64_t>(d), m_predictBuffers.x);
            ConvArena chunk = m_predict;
            chunk.rows = n;
            const float* logProbs = enqueueConvPrediction(m_ex, layout, m_problem.activation,
                                                          m_params.data(), chunk, m_predictBuffers);
            const std::size_t block = static_cast<std::size_t>(n) * c;
            for (std::size_t m = 0; m < k; ++m) {
                std::copy(
                    logProbs + m * block, logProbs + (m + 1) * block,
                    out.begin() + static_cast<std::ptrdiff_t>((m * static_cast<std::size_t>(rows) +
                                                               static_cast<std::size_t>(begin)) *
                                                              c));
            }
        }
        return out;
    }

  private:
    std::vector<float> m_arenaFloats, m_predictFloats;
    ConvArena m_arena, m_predict;
    ConvBuffers m_conv, m_predictBuffers;
};

// Small images whose class depends on where the bright pixels are (3 classes), so a CNN
// learns something in a few steps.
struct ImageProblem {
    std::vector<float> x;
    std::vector<int32_t> y;
    TrainingProblem training;
};

inline ImageProblem makeImageProblem(Shape input, const std::vector<LayerSpec>& layers,
                                     BootstrapMode mode, OptimizerKind kind, Activation act,
                                     int members) {
    ImageProblem p;
    const int rows = 150;
    const std::size_t d = static_cast<std::size_t>(input.size());
    p.x = randomVector(static_cast<std::size_t>(rows) * d, 17);
    for (int r = 0; r < rows; ++r) {
        const float* img = p.x.data() + static_cast<std::size_t>(r) * d;
        float left = 0.0f, right = 0.0f;
        for (std::size_t i = 0; i < d; ++i) {
            ((i % static_cast<std::size_t>(input.width)) * 2 < static_cast<std::size_t>(input.width)
                 ? left
                 : right) += img[i];
        }
        p.y.push_back(left > right + 1.0f ? 0 : right > left + 1.0f ? 1 : 2);
    }
    TrainingProblem& t = p.training;
    t.layout = ParamLayout(Architecture::stack(input, layers, 3), members);
    t.activation = act;
    t.trainX = p.x.data();
    t.trainY = p.y.data();
    t.trainRows = rows;
    t.plan.seed = 5;
    t.plan.rows = static_cast<uint32_t>(rows);
    // 32 examples of 8 x 8: the first conv's gradient is split in 2 chunks of 1024 rows.
    t.plan.batch = 32;
    t.plan.mode = mode;
    for (int k = 0; k < members; ++k) {
        const double lr = kind == OptimizerKind::Sgd ? 0.05 * (1 + k % 2) : 0.003 * (1 + k % 2);
        t.rules.push_back(makeRule(kind, lr, k % 3 == 2 ? 1e-3 : 0.0,
                                   kind == OptimizerKind::Sgd && k % 2 == 0 ? 0.9 : 0.0));
    }
    return p;
}

// The architectures the CNN emulation runs: the recipe's shape in small, strides and valid
// padding, a pool first (shared input copies up to the first conv) with a floor division and
// an even "same" kernel, and a two-channel input (the channels-last conversion).
struct ConvCase {
    Shape input;
    std::vector<LayerSpec> layers;
};

inline ConvCase convCase(int which) {
    switch (which) {
        case 0:
            return {{1, 8, 8},
                    {test::conv(4, 3, 1, Padding::Same), test::pool(PoolKind::Avg, 2),
                     test::conv(6, 3, 1, Padding::Valid), test::pool(PoolKind::Max, 2),
                     test::dense(5)}};
        case 1:
            return {{1, 9, 9},
                    {test::conv(3, 3, 2, Padding::Same), test::conv(4, 2, 1, Padding::Valid),
                     test::dense(7)}};
        case 2:
            return {
                {1, 8, 8},
                {test::pool(PoolKind::Max, 3), test::conv(5, 2, 1, Padding::Same), test::dense(6)}};
        default:
            return {{2, 6, 6}, {test::conv(3, 3, 1, Padding::Same), test::pool(PoolKind::Avg, 2)}};
    }
}

inline const char* modeName(BootstrapMode m) {
    return m == BootstrapMode::None       ? "none"
           : m == BootstrapMode::Resample ? "resample"
                                          : "poisson";
}

inline const char* kindName(OptimizerKind k) {
    return k == OptimizerKind::Adam ? "adam" : k == OptimizerKind::AdamW ? "adamw" : "sgd";
}

inline std::vector<uint64_t> stepRange(uint64_t from, uint64_t to) {
    std::vector<uint64_t> steps;
    for (uint64_t s = from; s < to; ++s) {
        steps.push_back(s);
    }
    return steps;
}

// The oracle: CpuBackend (one thread) bound to `problem`, at `init`.
inline std::unique_ptr<CpuBackend> cpuOracle(const TrainingProblem& problem,
                                             const std::vector<float>& init) {
    auto cpu = std::make_unique<CpuBackend>(1);
    cpu->bind(problem);
    cpu->setParameters(init.data());
    return cpu;
}

// The 40 step indices of the longer MLP comparisons: 0..19, then a jump to 100..119 (an index
// the program did not advance to itself, so new dropout masks come from the step counter).
inline std::vector<uint64_t> stepsWithAJump() {
    std::vector<uint64_t> steps = stepRange(0, 20);
    const std::vector<uint64_t> later = stepRange(100, 120);
    steps.insert(steps.end(), later.begin(), later.end());
    return steps;
}

// Trains CpuBackend and an emulated CUDA program, both at `init`, through the step indices
// `steps`, member `paused` switched off for the steps at positions [pauseFrom, pauseTo): every
// member's loss agrees at every step (kEmulatedLoss; a switched-off member's is 0), then the
// parameters (kEmulatedParamNmse), and they moved. Its QVERIFYs return from it only: callers
// check QTest::currentTestFailed() after it.
template <typename Emulated>
inline void trainBoth(CpuBackend& cpu, Emulated& emu, const ParamLayout& layout,
                      const std::vector<float>& init, const std::vector<uint64_t>& steps,
                      int paused, std::size_t pauseFrom, std::size_t pauseTo) {
    const std::size_t members = static_cast<std::size_t>(layout.members());
    std::vector<uint8_t> active(members, 1);
    std::vector<float> cpuLoss(members);
    std::vector<float> emuLoss(members);
    for (std::size_t i = 0; i < steps.size(); ++i) {
        active[static_cast<std::size_t>(paused)] = (i >= pauseFrom && i < pauseTo) ? 0 : 1;
        cpu.step(steps[i], active.data(), cpuLoss.data());
        emu.step(steps[i], active.data(), emuLoss.data());
        QVERIFY2(emu.error().empty(), emu.error().c_str());
        for (std::size_t k = 0; k < members; ++k) {
            const float c = cpuLoss[k];
            const float e = emuLoss[k];
            QVERIFY(std::isfinite(e));
            QVERIFY2(std::abs(c - e) <= test::kEmulatedLoss * std::max(1.0f, std::abs(c)),
                     qPrintable(QStringLiteral("step %1 member %2: cpu %3, emulated %4")
                                    .arg(steps[i])
                                    .arg(k)
                                    .arg(double(c))
                                    .arg(double(e))));
            if (active[k] == 0) {
                QCOMPARE(e, 0.0f);
            }
        }
    }
    std::vector<float> cpuParams(init.size());
    cpu.parameters(cpuParams.data());
    const double paramError = nmse(cpuParams, emu.params());
    qInfo("parameter nMSE %.3g", paramError);
    QVERIFY2(paramError < test::kEmulatedParamNmse, qPrintable(QString::number(paramError)));
    QVERIFY(nmse(init, emu.params()) > 1e-4);  // it did train
}

// Both predict `rows` rows of `x`: every emulated value passes `valid(index, value)`, and the
// two agree by kEmulatedLogProbNmse.
template <typename Emulated, typename Valid>
inline void predictBoth(CpuBackend& cpu, Emulated& emu, const ParamLayout& layout, const float* x,
                        int64_t rows, Valid valid) {
    std::vector<float> cpuOut(static_cast<std::size_t>(layout.members()) *
                              static_cast<std::size_t>(rows) *
                              static_cast<std::size_t>(layout.classes()));
    cpu.predictLogProbs(x, rows, cpuOut.data());
    const std::vector<float> emuOut = emu.predict(x, rows);
    QVERIFY2(emu.error().empty(), emu.error().c_str());
    QCOMPARE(emuOut.size(), cpuOut.size());
    for (std::size_t i = 0; i < emuOut.size(); ++i) {
        QVERIFY2(std::isfinite(emuOut[i]) && valid(i, emuOut[i]),
                 qPrintable(QStringLiteral("output %1: %2").arg(i).arg(double(emuOut[i]))));
    }
    const double predictError = nmse(cpuOut, emuOut);
    qInfo("prediction nMSE %.3g", predictError);
    QVERIFY2(predictError < test::kEmulatedLogProbNmse, qPrintable(QString::number(predictError)));
}

// A log-probability: at most 0, up to rounding.
inline bool logProbability(std::size_t /*index*/, float v) {
    return v <= 1e-6f;
}

}  // namespace ensemble::test::emulation
