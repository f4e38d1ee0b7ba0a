#pragma once

// What the CUDA backend runs, written once as plain C++17 (no CUDA header) so the host tests
// can check it: the cuBLAS arguments of every batched product, where each workspace buffer
// lives, how much device memory a run needs, and the sequence of operations of one training
// step and of one prediction chunk. CudaBackend executes the sequence with kernels and cuBLAS;
// tst_cuda_plan executes the same sequence with host loops over step_elements.h and a
// reference column-major strided-batched GEMM, and compares with CpuBackend.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "backend/cuda/step_elements.h"
#include "math/activations.h"
#include "model/mlp.h"
#include "optim/update_rules.h"
#include "sampling/batch_plan.h"

namespace ensemble::gpu {

// --- batched GEMM arguments -----------------------------------------------------------------
//
// Arguments of one cublasSgemmStridedBatched call computing, for every batch entry p,
//   C_p = op(A_p) * op(B_p) + beta * C_p   (alpha = 1; beta = 0 does not read C)
// with column-major A_p = A + p * strideA (lda), op(A_p) m x k; op(B_p) k x n; C_p m x n.
//
// Our matrices are row-major. A row-major r x c matrix M with leading dimension c is, read
// column-major with the same pointer and ld, the c x r matrix M^T. So a row-major product
// P = X Y is computed as the column-major product P^T = Y^T X^T, i.e. the operands swap.
struct GemmArgs {
    bool transA = false;
    bool transB = false;
    int m = 0;
    int n = 0;
    int k = 0;
    int lda = 0;
    int ldb = 0;
    int ldc = 0;
    int64_t strideA = 0;
    int64_t strideB = 0;
    int64_t strideC = 0;
    int batchCount = 0;
    float beta = 0.0f;  // 1: add the product to C (the adversarial pass's gradient)
};

// The same product added to what C holds.
inline GemmArgs accumulating(GemmArgs g) {
    g.beta = 1.0f;
    return g;
}

// Forward of one layer for all members: Z_k = X_k W_k^T (row-major: X_k rows x in,
// W_k out x in, Z_k rows x out). Column-major: Z_k^T (out x rows, ld out) = W_k X_k^T, where
//   A = W buffer: column-major it is W_k^T (in x out, ld in); op = T gives W_k (out x in);
//   B = X buffer: column-major it is X_k^T (in x rows, ld in); op = N;
//   m = out, n = rows, k = in.
// Strides: out*in per member for W (stacked layout), rows*in for X, or 0 when every member
// reads the same X (the gathered batch under none/poisson, the grid in prediction).
inline GemmArgs forwardGemm(int in, int out, int rows, int members, bool sharedInput) {
    GemmArgs g;
    g.transA = true;
    g.transB = false;
    g.m = out;
    g.n = rows;
    g.k = in;
    g.lda = in;
    g.ldb = in;
    g.ldc = out;
    g.strideA = static_cast<int64_t>(out) * in;
    g.strideB = sharedInput ? 0 : static_cast<int64_t>(rows) * in;
    g.strideC = static_cast<int64_t>(rows) * out;
    g.batchCount = members;
    return g;
}

// Weight gradient: dW_k = dZ_k^T X_k (row-major out x in). Column-major:
// dW_k^T (in x out, ld in) = X_k^T dZ_k, where
//   A = X buffer: column-major X_k^T (in x rows, ld in); op = N;
//   B = dZ buffer: column-major dZ_k^T (out x rows, ld out); op = T gives dZ_k (rows x out);
//   m = in, n = out, k = rows.
// C strides by out*in: the gradient lands in the stacked [K][out][in] layout of the weights.
inline GemmArgs weightGradGemm(int in, int out, int rows, int members, bool sharedInput) {
    GemmArgs g;
    g.transA = false;
    g.transB = true;
    g.m = in;
    g.n = out;
    g.k = rows;
    g.lda = in;
    g.ldb = out;
    g.ldc = in;
    g.strideA = sharedInput ? 0 : static_cast<int64_t>(rows) * in;
    g.strideB = static_cast<int64_t>(rows) * out;
    g.strideC = static_cast<int64_t>(out) * in;
    g.batchCount = members;
    return g;
}

// Gradient w.r.t. the layer input: dX_k = dZ_k W_k (row-major rows x in). Column-major:
// dX_k^T (in x rows, ld in) = W_k^T dZ_k^T, where
//   A = W buffer: column-major W_k^T (in x out, ld in); op = N;
//   B = dZ buffer: column-major dZ_k^T (out x rows, ld out); op = N;
//   m = in, n = rows, k = out.
inline GemmArgs inputGradGemm(int in, int out, int rows, int members) {
    GemmArgs g;
    g.transA = false;
    g.transB = false;
    g.m = in;
    g.n = rows;
    g.k = out;
    g.lda = in;
    g.ldb = out;
    g.ldc = in;
    g.strideA = static_cast<int64_t>(out) * in;
    g.strideB = static_cast<int64_t>(rows) * out;
    g.strideC = static_cast<int64_t>(rows) * in;
    g.batchCount = members;
    return g;
}

// --- parameter segments ---------------------------------------------------------------------

// The 2 * L blocks of the stacked layout in address order (see memberOfParam).
inline std::vector<ParamSegment> paramSegments(const ParamLayout& layout) {
    std::vector<ParamSegment> segments;
    for (int l = 0; l < layout.layerCount(); ++l) {
        const LayerSlot& s = layout.layer(l);
        segments.push_back({s.weightOffset, static_cast<uint64_t>(s.out) * s.in, s.l2Gradient});
        segments.push_back({s.biasOffset, static_cast<uint64_t>(s.out), 0.0f});
    }
    return segments;
}

// --- workspaces -----------------------------------------------------------------------------

// Every float buffer starts on a 256-byte boundary (cuBLAS and coalescing like it).
constexpr std::size_t kArenaAlignFloats = 64;

inline std::size_t alignFloats(std::size_t n) {
    return (n + kArenaAlignFloats - 1) / kArenaAlignFloats * kArenaAlignFloats;
}

// Widest layer output (hidden widths and C): the width of every activation/delta buffer.
inline int maxOutputWidth(const ParamLayout& layout) {
    int w = 1;
    for (int l = 0; l < layout.layerCount(); ++l) {
        w = std::max(w, layout.layer(l).out);
    }
    return w;
}

// Offsets (in floats) of the training step's float buffers inside one arena, plus the int32
// row buffer, which lives apart. Sizes, K members, batch B, G = 1 (shared) or K (resample):
//   x [G][B][D], weights [K][B], rowLoss [K][B], pre_l [K][B][out_l] for every layer,
//   post_l [K][B][out_l] for hidden layers, delta and deltaPrev [K][B][maxOut] each;
//   with adversarial training also xAdv [K][B][D] (dLoss/dX, then the moved inputs: every
//   member its own) and lossAdv [K]; with dropout also mask_l [K][B][out_l] for hidden layers.
struct StepArena {
    int groups = 1;
    bool adversarial = false;
    bool dropout = false;
    std::vector<std::size_t> mask;  // dropout only: per hidden layer
    std::size_t xAdv = 0;
    std::size_t lossAdv = 0;
    std::size_t x = 0;
    std::size_t weights = 0;
    std::size_t rowLoss = 0;
    std::vector<std::size_t> pre;
    std::vector<std::size_t> post;  // only hidden layers have one
    std::size_t delta = 0;
    std::size_t deltaPrev = 0;
    std::size_t floats = 0;    // arena size
    std::size_t rowSlots = 0;  // int32 rows: K * B
};

inline StepArena planStepArena(const ParamLayout& layout, uint32_t batch, BootstrapMode mode,
                               bool adversarial = false, bool dropout = false) {
    StepArena a;
    a.adversarial = adversarial;
    a.dropout = dropout;
    const std::size_t k = static_cast<std::size_t>(layout.members());
    const std::size_t b = batch;
    a.groups = ownBatches(mode) ? layout.members() : 1;
    std::size_t at = 0;
    auto take = [&at](std::size_t n) {
        const std::size_t offset = at;
        at += alignFloats(n);
        return offset;
    };
    a.x = take(static_cast<std::size_t>(a.groups) * b * static_cast<std::size_t>(layout.inputs()));
    a.weights = take(k * b);
    a.rowLoss = take(k * b);
    for (int l = 0; l < layout.layerCount(); ++l) {
        const std::size_t n = k * b * static_cast<std::size_t>(layout.layer(l).out);
        a.pre.push_back(take(n));
        if (l + 1 < layout.layerCount()) {
            a.post.push_back(take(n));
        }
    }
    const std::size_t widest = k * b * static_cast<std::size_t>(maxOutputWidth(layout));
    a.delta = take(widest);
    a.deltaPrev = take(widest);
    if (adversarial) {
        a.xAdv = take(k * b * static_cast<std::size_t>(layout.inputs()));
        a.lossAdv = take(k);
    }
    if (dropout) {
        for (int l = 0; l + 1 < layout.layerCount(); ++l) {
            a.mask.push_back(take(k * b * static_cast<std::size_t>(layout.layer(l).out)));
        }
    }
    a.floats = at;
    a.rowSlots = k * b;
    return a;
}

// Prediction runs in chunks of `chunkRows` rows: x [P][D] (shared by all members, stride 0)
// and two ping-pong buffers [K][P][maxOut]; the last layer's buffer is log-softmaxed in place.
struct PredictArena {
    int64_t chunkRows = 0;
    std::size_t x = 0;
    std::size_t bufA = 0;
    std::size_t bufB = 0;
    std::size_t floats = 0;
};

// The prediction workspace is kept under `budgetBytes`, with 256 <= P <= 16384 rows.
constexpr std::size_t kPredictBudgetBytes = std::size_t{128} << 20;

inline PredictArena planPredictArena(const ParamLayout& layout,
                                     std::size_t budgetBytes = kPredictBudgetBytes) {
    PredictArena a;
    const std::size_t perRow =
        sizeof(float) * (static_cast<std::size_t>(layout.inputs()) +
                         2 * static_cast<std::size_t>(layout.members()) * maxOutputWidth(layout));
    const std::size_t rows = std::clamp<std::size_t>(budgetBytes / perRow, 256, 16384);
    a.chunkRows = static_cast<int64_t>(rows / 32 * 32);
    const std::size_t p = static_cast<std::size_t>(a.chunkRows);
    a.x = 0;
    a.bufA = alignFloats(p * static_cast<std::size_t>(layout.inputs()));
    const std::size_t buf =
        alignFloats(static_cast<std::size_t>(layout.members()) * p * maxOutputWidth(layout));
    a.bufB = a.bufA + buf;
    a.floats = a.bufB + buf;
    return a;
}

// --- memory estimate ------------------------------------------------------------------------

// Bytes a bound problem keeps on the device (K members, P = layout.size() parameters,
// N train rows, D inputs):
//   parameters     4 * P * 4            params, gradient, Adam m / momentum, Adam v
//   trainSet       N * D * 4 + N * 4    features and labels
//   stepWorkspace  StepArena floats * 4 + K * B * 4 (rows)      (0 without training data)
//   predict        PredictArena floats * 4
//   small          K * (2 * sizeof(OptimizerRule) + 1 + 4) + state + segments, 256-aligned
//   cublas         the cuBLAS workspace set on the handle (fixed, so graph capture never
//                  allocates)
// A run is refused when total + kDeviceReserveBytes exceeds cudaMemGetInfo's free bytes.
constexpr std::size_t kCublasWorkspaceBytes = std::size_t{32} << 20;
constexpr std::size_t kDeviceReserveBytes = std::size_t{64} << 20;

struct MemoryEstimate {
    std::size_t parameters = 0;
    std::size_t trainSet = 0;
    std::size_t stepWorkspace = 0;
    std::size_t predictWorkspace = 0;
    std::size_t small = 0;
    std::size_t cublasWorkspace = 0;
    std::size_t total() const {
        return parameters + trainSet + stepWorkspace + predictWorkspace + small + cublasWorkspace;
    }
};

inline std::size_t align256(std::size_t bytes) {
    return (bytes + 255) / 256 * 256;
}

inline MemoryEstimate estimateDeviceMemory(const ParamLayout& layout, int64_t trainRows,
                                           uint32_t batch, BootstrapMode mode,
                                           bool adversarial = false, bool dropout = false) {
    MemoryEstimate e;
    const std::size_t k = static_cast<std::size_t>(layout.members());
    const bool training = trainRows > 0 && batch > 0;
    e.parameters = 4 * align256(layout.size() * sizeof(float));
    if (training) {
        const std::size_t n = static_cast<std::size_t>(trainRows);
        e.trainSet = align256(n * static_cast<std::size_t>(layout.inputs()) * sizeof(float)) +
                     align256(n * sizeof(int32_t));
        const StepArena arena = planStepArena(layout, batch, mode, adversarial, dropout);
        e.stepWorkspace =
            align256(arena.floats * sizeof(float)) + align256(arena.rowSlots * sizeof(int32_t));
    }
    e.predictWorkspace = align256(planPredictArena(layout).floats * sizeof(float));
    e.small = 2 * align256(k * sizeof(OptimizerRule)) + align256(k) + align256(k * sizeof(float)) +
              align256(sizeof(DeviceStepState)) +
              align256(2 * static_cast<std::size_t>(layout.layerCount()) * sizeof(ParamSegment));
    e.cublasWorkspace = kCublasWorkspaceBytes;
    return e;
}

// --- the operation sequences ----------------------------------------------------------------

// Pointers of one bound problem (device pointers on the GPU, host pointers in the tests).
struct StepBuffers {
    float* params = nullptr;
    float* grad = nullptr;  // same stacked layout as params
    float* moment1 = nullptr;
    float* moment2 = nullptr;
    const float* trainX = nullptr;
    const int32_t* trainY = nullptr;
    const float* trainTargets = nullptr;  // regression heads: standardised targets
    int32_t* rows = nullptr;
    float* weights = nullptr;
    float* x = nullptr;
    std::vector<float*> pre;
    std::vector<float*> post;  // per layer; nullptr for the output layer
    float* delta = nullptr;
    float* deltaPrev = nullptr;
    float* rowLoss = nullptr;
    std::vector<float*> mask;         // dropout only: per hidden layer [K][B][out] (else empty)
    float* xAdv = nullptr;            // adversarial training only: [K][B][D]
    float* lossAdv = nullptr;         // adversarial training only: [K]
    float* loss = nullptr;            // [K]
    const uint8_t* active = nullptr;  // [K]
    const OptimizerRule* baseRules = nullptr;
    OptimizerRule* rules = nullptr;  // this step's, with bias corrections
    DeviceStepState* state = nullptr;
    const ParamSegment* segments = nullptr;
    int segmentCount = 0;
};

// Places the step buffers in a float arena and an int32 row buffer laid out by planStepArena.
inline void placeStepBuffers(const StepArena& arena, float* base, int32_t* rows, StepBuffers& b) {
    b.x = base + arena.x;
    b.weights = base + arena.weights;
    b.rowLoss = base + arena.rowLoss;
    b.pre.clear();
    b.post.clear();
    b.mask.clear();
    for (std::size_t offset : arena.mask) {
        b.mask.push_back(base + offset);
    }
    for (std::size_t l = 0; l < arena.pre.size(); ++l) {
        b.pre.push_back(base + arena.pre[l]);
        b.post.push_back(l < arena.post.size() ? base + arena.post[l] : nullptr);
    }
    b.delta = base + arena.delta;
    b.deltaPrev = base + arena.deltaPrev;
    b.xAdv = arena.adversarial ? base + arena.xAdv : nullptr;
    b.lossAdv = arena.adversarial ? base + arena.lossAdv : nullptr;
    b.rows = rows;
}

// A replica's share of every batch on the data axis (backend.h DataShard): batch rows
// [first, first + rows). rows 0: the whole batch (no data axis).
struct StepShard {
    uint32_t first = 0;
    uint32_t rows = 0;
};

// Training dropout (TrainingProblem::dropout, dropoutSeed): rate 0 is none, and then the
// programs enqueue exactly the operations they do without it.
struct StepDropout {
    float rate = 0.0f;
    uint64_t seed = 0;

    bool on() const { return rate > 0.0f; }
    // The masks' key for this program: members from plan.memberOffset, rows from the shard's
    // first (the step is the device's, DeviceStepState::step).
    DropoutStep key(const BatchPlanParams& plan, StepShard shard) const {
        DropoutStep d;
        d.rate = rate;
        d.seed = seed;
        d.member = plan.memberOffset;
        d.firstRow = shard.first;
        return d;
    }
};

// Which part of a step to enqueue. The data axis sums the gradients and losses of the replicas
// between the two (CudaBackend::step); without it a step is both, back to back.
enum class StepPhase : uint8_t { All, Gradient, Update };

// One training step of all K members, as a sequence of calls on `ex`, which provides
//   prepareRules(base, rules, K, state)            per member: bias corrections for this step
//   planBatch(plan, K, state, rows, weights, first, n)  per slot (k, b) of rows [first, first + n)
//   gatherRows(trainX, D, rows, slotCount, x)          per element of x; slotCount = G * B
//   gemm(args, A, B, C)                            C = op(A) op(B) (+ C when args.beta is 1)
//   biasActivate(z, post, bias, K, rows, out, act) per element of z
//   softmaxCrossEntropy(logits, trainY, rows, weights, K, n, C, dLogits, rowLoss, B)  per slot
//   regressionLoss(outputs, trainTargets, rows, weights, K, n, O, likelihood, dOutputs,
//                  rowLoss, B)                   per slot, instead, for a regression head
//   memberLoss(rowLoss, active, K, B, loss)        per member
//   biasGradient(delta, gradBias, K, rows, out, accumulate)  per (k, o)
//   activationBackward(delta, pre, post, count, act)  per element
//   adversarialInputs(x, shared, K, B, D, eps, xAdv)  per element of xAdv (adversarial only)
//   adversarialLoss(lossAdv, K, loss)              per member (adversarial only)
//   dropoutMask(key, state, K, rows, units, layer, mask)  per group of 4 units (dropout only)
//   dropoutApply(post, mask, count, plane, units)  per element (dropout only)
//   dropoutBackward(delta, pre, mask, count, plane, units, act)  per element (dropout only)
//   applyUpdates(buffers, total)                   per parameter
//   advanceState(state)                            once
// Everything stays on the device; the host reads only `loss` afterwards. Math per layer l
// (row-major, per member): Z_l = A_{l-1} W_l^T + b_l, A_l = f(Z_l); dZ_L = w/B (softmax - 1_y);
// dW_l = dZ_l^T A_{l-1}; db_l = sum_b dZ_l; dZ_{l-1} = (dZ_l W_l) .* f'(Z_{l-1}).
//
// adversarialEps > 0 (the arena planned with `adversarial`): the gradient is that of
// loss(X) + loss(X'), as CpuBackend trains it (fastTrainMember): the clean pass also computes
// dX = dZ_0 W_0 into xAdv, which becomes X' = X + eps * sign(dX) per member; a second forward
// and backward on X' adds its gradient to the clean one (GEMMs with beta 1, accumulated bias
// sums). `loss` stays the clean loss unless the adversarial one is not finite.
//
// With a shard, every buffer holds the replica's n rows and the losses are still scaled by the
// whole batch's 1/B, so the replicas' gradients and losses add up to the whole batch's.
//
// dropout.on() (the arena planned with `dropout`): inverted dropout after every hidden
// activation, as CpuBackend's fastTrainMember: the masks of the step are drawn once into
// b.mask (both passes of adversarial training use them, as the CPU redraws the same ones),
// post_l = f(Z_l) * mask_l, and the backward pass is dZ_l = (dA_l * mask_l) .* f'(Z_l).
template <class Exec>
void enqueueTrainingStep(Exec& ex, const ParamLayout& layout, const BatchPlanParams& plan,
                         Activation act, const StepBuffers& b,
                         Likelihood likelihood = Likelihood::Categorical,
                         float adversarialEps = 0.0f, StepShard shard = {},
                         StepPhase phase = StepPhase::All, StepDropout dropout = {}) {
    if (phase == StepPhase::Update) {
        ex.applyUpdates(b, static_cast<int64_t>(layout.size()));
        ex.advanceState(b.state);
        return;
    }
    const int members = layout.members();
    const int batch = static_cast<int>(shard.rows > 0 ? shard.rows : plan.batch);
    const int normaliser = static_cast<int>(plan.batch);
    const int layers = layout.layerCount();
    const bool shared = !ownBatches(plan.mode);
    const int groups = shared ? 1 : members;
    const bool adversarial = adversarialEps > 0.0f;

    ex.prepareRules(b.baseRules, b.rules, members, b.state);
    ex.planBatch(plan, members, b.state, b.rows, b.weights, shard.first,
                 static_cast<uint32_t>(batch));
    ex.gatherRows(b.trainX, layout.inputs(), b.rows, static_cast<int64_t>(groups) * batch, b.x);
    if (dropout.on()) {
        const DropoutStep key = dropout.key(plan, shard);
        for (int l = 0; l + 1 < layers; ++l) {
            ex.dropoutMask(key, b.state, members, batch, layout.layer(l).out, l,
                           b.mask[static_cast<std::size_t>(l)]);
        }
    }

    // Forward from `input` ([G][B][D], stride 0 when `sharedInput`), the loss into `loss`.
    const auto forwardAndLoss = [&](const float* input, bool sharedInput, float* loss) {
        const float* prev = input;
        for (int l = 0; l < layers; ++l) {
            const LayerSlot& s = layout.layer(l);
            const std::size_t li = static_cast<std::size_t>(l);
            ex.gemm(forwardGemm(s.in, s.out, batch, members, l == 0 && sharedInput),
                    b.params + s.weightOffset, prev, b.pre[li]);
            ex.biasActivate(b.pre[li], b.post[li], b.params + s.biasOffset, members, batch, s.out,
                            act);
            if (dropout.on() && l + 1 < layers) {
                ex.dropoutApply(b.post[li], b.mask[li],
                                static_cast<int64_t>(members) * batch * s.out, 1, s.out);
            }
            prev = b.post[li];
        }
        const std::size_t last = static_cast<std::size_t>(layers - 1);
        if (likelihood == Likelihood::Categorical) {
            ex.softmaxCrossEntropy(b.pre[last], b.trainY, b.rows, b.weights, members, batch,
                                   layout.classes(), b.delta, b.rowLoss, normaliser);
        } else {
            ex.regressionLoss(b.pre[last], b.trainTargets, b.rows, b.weights, members, batch,
                              layout.classes(), likelihood, b.delta, b.rowLoss, normaliser);
        }
        ex.memberLoss(b.rowLoss, b.active, members, batch, loss);
    };
    // Backward into the gradient (added to it when `accumulate`); dX into inputGrad if given.
    const auto backward = [&](const float* input, bool sharedInput, bool accumulate,
                              float* inputGrad) {
        float* delta = b.delta;
        float* deltaPrev = b.deltaPrev;
        for (int l = layers - 1; l >= 0; --l) {
            const LayerSlot& s = layout.layer(l);
            const float* a = l > 0 ? b.post[static_cast<std::size_t>(l - 1)] : input;
            const GemmArgs dw = weightGradGemm(s.in, s.out, batch, members, l == 0 && sharedInput);
            ex.gemm(accumulate ? accumulating(dw) : dw, a, delta, b.grad + s.weightOffset);
            ex.biasGradient(delta, b.grad + s.biasOffset, members, batch, s.out, accumulate);
            if (l > 0) {
                const std::size_t below = static_cast<std::size_t>(l - 1);
                ex.gemm(inputGradGemm(s.in, s.out, batch, members), b.params + s.weightOffset,
                        delta, deltaPrev);
                const int64_t count = static_cast<int64_t>(members) * batch * s.in;
                if (dropout.on()) {
                    ex.dropoutBackward(deltaPrev, b.pre[below], b.mask[below], count, 1, s.in, act);
                } else {
                    ex.activationBackward(deltaPrev, b.pre[below], b.post[below], count, act);
                }
                std::swap(delta, deltaPrev);
            } else if (inputGrad != nullptr) {
                ex.gemm(inputGradGemm(s.in, s.out, batch, members), b.params + s.weightOffset,
                        delta, inputGrad);
            }
        }
    };

    forwardAndLoss(b.x, shared, b.loss);
    backward(b.x, shared, false, adversarial ? b.xAdv : nullptr);
    if (adversarial) {
        ex.adversarialInputs(b.x, shared, members, batch, layout.inputs(), adversarialEps, b.xAdv);
        forwardAndLoss(b.xAdv, false, b.lossAdv);
        ex.adversarialLoss(b.lossAdv, members, b.loss);
        backward(b.xAdv, false, true, nullptr);
    }

    if (phase == StepPhase::All) {
        ex.applyUpdates(b, static_cast<int64_t>(layout.size()));
        ex.advanceState(b.state);
    }
}

// Log-probabilities of every member for `rows` inputs x [rows][D] (rows <= the arena's
// chunk): returns the buffer holding them as [K][rows][C]. A regression head's predictive
// instead (headPredictive: [mu, sigma^2] or [mu]), as Backend::predictLogProbs defines it.
template <class Exec>
float* enqueuePrediction(Exec& ex, const ParamLayout& layout, Activation act, const float* params,
                         const float* x, int rows, float* bufA, float* bufB,
                         Likelihood likelihood = Likelihood::Categorical) {
    const int members = layout.members();
    const int layers = layout.layerCount();
    const float* prev = x;
    float* dst = bufA;
    for (int l = 0; l < layers; ++l) {
        const LayerSlot& s = layout.layer(l);
        dst = (l % 2 == 0) ? bufA : bufB;
        ex.gemm(forwardGemm(s.in, s.out, rows, members, l == 0), params + s.weightOffset, prev,
                dst);
        ex.biasActivate(dst, l + 1 < layers ? dst : nullptr, params + s.biasOffset, members, rows,
                        s.out, act);
        prev = dst;
    }
    if (likelihood == Likelihood::Categorical) {
        ex.logSoftmax(dst, static_cast<int64_t>(members) * rows, layout.classes());
    } else {
        ex.headPredictive(dst, static_cast<int64_t>(members) * rows, layout.classes(), likelihood);
    }
    return dst;
}

}  // namespace ensemble::gpu
