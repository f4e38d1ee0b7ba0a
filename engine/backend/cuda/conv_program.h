#pragma once

// What the CUDA backend runs for members with conv and pool layers (model.kind cnn), written
// once as plain C++17 like step_program.h: the workspace plan, the memory estimate and the
// operation sequences of a training step and of a prediction chunk. CudaBackend executes them
// with kernels (conv_kernels.cu, the dense layer kernels) and cuBLAS; tst_cuda_plan executes
// them with host loops and compares with CpuBackend's ConvNetCpu.
//
// A conv layer is im2col + one strided-batched GEMM over the members: its rows are the
// B Ho Wo output positions of the batch, its columns the F filters, so activations are
// channels-last (conv_elements.h) and the dense layers' bias/activation kernels and GEMM
// argument builders (forwardGemm, weightGradGemm, inputGradGemm) apply with rows = B Ho Wo
// and in = C k k.
//
// A conv's weight and bias gradients are reductions over all B Ho Wo rows (100k in the
// recipe's first layer) into small F x C k k outputs. A strided-batched GEMM gives each
// member's product one or two thread blocks, which then run the whole reduction serially
// (measured on an H100: K = 4 stepped 10x slower than K = 1, where cuBLAS splits the
// reduction itself). So the rows are cut into S chunks of whole examples, each (member, chunk)
// product is a batch entry into a partial buffer, and a kernel adds the S partials in order:
// deterministic, and K * S blocks in flight. The bias gradient is the same product with a
// ones column as the input.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "backend/cuda/conv_elements.h"
#include "backend/cuda/step_program.h"
#include "model/architecture.h"

namespace ensemble::gpu {

inline SpatialGeometry spatialGeometry(const StackLayer& s) {
    SpatialGeometry g;
    g.inC = s.in.channels;
    g.inH = s.in.height;
    g.inW = s.in.width;
    g.outC = s.out.channels;
    g.outH = s.out.height;
    g.outW = s.out.width;
    g.kernel = s.kernel;
    g.stride = s.stride;
    g.padTop = s.padTop;
    g.padLeft = s.padLeft;
    g.maxPool = s.pool == PoolKind::Max;
    return g;
}

// Offsets (in floats) of the buffers of a CNN step or prediction chunk of `rows` examples in
// one arena. Per stack layer i: pre (conv, dense), post (every layer but the output one; for
// a pool its output), cols (conv; the input gradient's columns reuse it in the backward pass).
// `groups[i]`: how many distinct copies layer i's input has (1 where every member reads the
// same examples, up to and including the first parameterised layer's input; K after it).
struct ConvArena {
    static constexpr std::size_t kNone = ~std::size_t{0};
    int64_t rows = 0;
    int inputGroups = 1;
    std::size_t x = 0;            // [G][rows][D], the gathered (training) or uploaded (prediction)
    std::size_t xLast = kNone;    // [G][rows][H][W][C], when the input has C > 1 channels
    std::size_t weights = kNone;  // training: [K][rows]
    std::size_t rowLoss = kNone;  // training: [K][rows]
    std::vector<std::size_t> pre, post, cols;  // per stack layer (kNone where absent)
    std::vector<int> groups;                   // per stack layer: its input's copies
    std::vector<int> splits;  // per stack layer: a conv's gradient chunks S (else 1)
    // Per stack layer: the copies of a conv's columns. Training gives every member its own
    // (K) even where the input is shared: the weight gradient of shared columns would be K
    // separate products per chunk (measured: a third of the step at K = 16 on an H100), and
    // a copy of the first layer's small columns costs little. Prediction shares them.
    std::vector<int> colCopies;
    std::size_t flat = kNone;  // the first dense layer's flattened input [G][rows][C H W]
    std::size_t ones = kNone;  // [max B Ho Wo]: the conv bias gradient's ones vector
    std::size_t onesCount = 0;
    std::size_t partial = kNone;  // training: [K][S][F C k k + F], the split conv gradients
    std::size_t delta = kNone;    // training: two gradient buffers of the widest layer
    std::size_t deltaPrev = kNone;
    // Training with dropout: per stack layer, an activated layer's masks [K][rows][units]
    // (units: a conv's channels, a dense layer's outputs); a dropout layer's (always in
    // training) in its input's layout, [K][rows][H][W][C] or [K][rows][units]; kNone elsewhere,
    // empty without either.
    std::vector<std::size_t> mask;
    std::size_t floats = 0;
    std::size_t rowSlots = 0;  // training: int32 rows, K * B
    // The implicit-GEMM convolution (conv_elements.h, implicitConv*) instead of im2col + GEMM:
    // the products read the input directly and the columns stay unused (still planned, so the
    // memory estimate is unchanged). Off by default; CudaBackend sets it from
    // ENSEMBLE_CUDA_CONV=implicit.
    bool implicitGemm = false;
};

// Chunks S of a conv's gradient reduction over `batch` examples of `plane` output positions:
// the largest divisor of the batch up to 32 that leaves at least 1024 rows per chunk.
inline int convGradientSplits(int64_t batch, int64_t plane) {
    int best = 1;
    for (int s = 2; s <= 32 && s <= batch; ++s) {
        if (batch % s == 0 && batch / s * plane >= 1024) {
            best = s;
        }
    }
    return best;
}

inline ConvArena planConvArena(const ParamLayout& layout, int64_t rows, bool sharedInput,
                               bool training, bool dropout = false) {
    const Architecture& a = layout.architecture();
    const std::vector<StackLayer>& stack = a.layers();
    const std::size_t k = static_cast<std::size_t>(layout.members());
    const std::size_t b = static_cast<std::size_t>(rows);
    ConvArena arena;
    arena.rows = rows;
    arena.inputGroups = sharedInput ? 1 : layout.members();
    std::size_t at = 0;
    auto take = [&at](std::size_t n) {
        const std::size_t offset = at;
        at += alignFloats(n);
        return offset;
    };
    const std::size_t g0 = static_cast<std::size_t>(arena.inputGroups);
    arena.x = take(g0 * b * static_cast<std::size_t>(a.inputs()));
    if (a.input().channels > 1) {
        arena.xLast = take(g0 * b * static_cast<std::size_t>(a.inputs()));
    }
    if (training) {
        arena.weights = take(k * b);
        arena.rowLoss = take(k * b);
    }
    int groups = arena.inputGroups;
    std::size_t widest = 0;
    std::size_t partial = 0;
    for (std::size_t i = 0; i < stack.size(); ++i) {
        const StackLayer& s = stack[i];
        arena.groups.push_back(groups);
        const std::size_t outGroups = s.param >= 0 ? k : static_cast<std::size_t>(groups);
        const std::size_t out = outGroups * b * static_cast<std::size_t>(s.out.size());
        const bool last = i + 1 == stack.size();
        arena.pre.push_back(s.param >= 0 ? take(out) : ConvArena::kNone);
        arena.post.push_back(!last ? take(out) : ConvArena::kNone);
        if (s.kind == LayerKind::Conv) {
            const std::size_t positions = b * static_cast<std::size_t>(s.out.plane());
            const int copies = training ? layout.members() : groups;
            arena.colCopies.push_back(copies);
            arena.cols.push_back(take(static_cast<std::size_t>(copies) * positions *
                                      static_cast<std::size_t>(s.fanIn())));
            arena.onesCount = std::max(arena.onesCount, positions);
            const int splits = convGradientSplits(rows, s.out.plane());
            arena.splits.push_back(splits);
            partial = std::max(partial, k * static_cast<std::size_t>(splits) *
                                            static_cast<std::size_t>(s.out.channels) *
                                            static_cast<std::size_t>(s.fanIn() + 1));
        } else {
            arena.cols.push_back(ConvArena::kNone);
            arena.splits.push_back(1);
            arena.colCopies.push_back(0);
        }
        if (s.flattens) {
            arena.flat =
                take(static_cast<std::size_t>(groups) * b * static_cast<std::size_t>(s.in.size()));
        }
        widest = std::max({widest, k * b * static_cast<std::size_t>(s.out.size()),
                           k * b * static_cast<std::size_t>(s.in.size())});
        groups = static_cast<int>(outGroups);
    }
    if (training && arena.onesCount > 0) {
        arena.ones = take(arena.onesCount);
    }
    if (training) {
        if (partial > 0) {
            arena.partial = take(partial);
        }
        arena.delta = take(widest);
        arena.deltaPrev = take(widest);
        arena.rowSlots = k * b;
        if (dropout || a.hasDropoutLayers()) {
            for (const StackLayer& s : stack) {
                if (dropout && s.activated) {
                    arena.mask.push_back(take(k * b * static_cast<std::size_t>(s.units())));
                } else if (s.kind == LayerKind::Dropout) {
                    arena.mask.push_back(take(k * b * static_cast<std::size_t>(s.out.size())));
                } else {
                    arena.mask.push_back(ConvArena::kNone);
                }
            }
        }
    }
    arena.floats = at;
    return arena;
}

// Pointers into a ConvArena (device pointers on the GPU, host pointers in the tests).
struct ConvBuffers {
    float* x = nullptr;
    float* xLast = nullptr;
    std::vector<float*> pre, post, cols;
    float* flat = nullptr;
    float* ones = nullptr;
    std::size_t onesCount = 0;
    float* partial = nullptr;
    std::vector<float*> mask;  // per stack layer (nullptr where none); empty without dropout
};

inline ConvBuffers placeConvBuffers(const ConvArena& arena, float* base) {
    auto at = [base](std::size_t offset) {
        return offset == ConvArena::kNone ? nullptr : base + offset;
    };
    ConvBuffers c;
    c.x = at(arena.x);
    c.xLast = at(arena.xLast);
    for (std::size_t i = 0; i < arena.pre.size(); ++i) {
        c.pre.push_back(at(arena.pre[i]));
        c.post.push_back(at(arena.post[i]));
        c.cols.push_back(at(arena.cols[i]));
    }
    for (std::size_t offset : arena.mask) {
        c.mask.push_back(at(offset));
    }
    c.flat = at(arena.flat);
    c.ones = at(arena.ones);
    c.partial = at(arena.partial);
    c.onesCount = arena.onesCount;
    return c;
}

// A CNN step keeps the step's StepBuffers (parameters, optimizer state, rows, weights, losses,
// rules, counters; b.x, b.weights, b.rowLoss, b.delta, b.deltaPrev point into the conv arena)
// and the per-layer buffers here.
inline void placeConvStepBuffers(const ConvArena& arena, float* base, int32_t* rows, StepBuffers& b,
                                 ConvBuffers& c) {
    c = placeConvBuffers(arena, base);
    b.x = c.x;
    b.weights = base + arena.weights;
    b.rowLoss = base + arena.rowLoss;
    b.delta = base + arena.delta;
    b.deltaPrev = base + arena.deltaPrev;
    b.rows = rows;
    b.pre.clear();
    b.post.clear();
}

// Prediction chunks: at least 8 and at most 4096 examples, within `budgetBytes` (a CNN's
// per-example workspace is large: its columns and feature maps for every member).
constexpr std::size_t kConvPredictBudgetBytes = std::size_t{512} << 20;

inline int64_t convPredictChunkRows(const ParamLayout& layout,
                                    std::size_t budgetBytes = kConvPredictBudgetBytes) {
    const std::size_t perRow = planConvArena(layout, 1, true, false).floats * sizeof(float);
    const std::size_t rows =
        std::clamp<std::size_t>(budgetBytes / std::max<std::size_t>(perRow, 1), 8, 4096);
    return static_cast<int64_t>(rows / 8 * 8);
}

inline MemoryEstimate estimateConvDeviceMemory(const ParamLayout& layout, int64_t trainRows,
                                               uint32_t batch, BootstrapMode mode,
                                               int64_t predictRows, bool dropout = false) {
    MemoryEstimate e = estimateDeviceMemory(layout, 0, batch, mode);
    if (trainRows > 0 && batch > 0) {
        const std::size_t n = static_cast<std::size_t>(trainRows);
        e.trainSet = align256(n * static_cast<std::size_t>(layout.inputs()) * sizeof(float)) +
                     align256(n * sizeof(int32_t));
        const ConvArena arena = planConvArena(layout, batch, !ownBatches(mode), true, dropout);
        e.stepWorkspace =
            align256(arena.floats * sizeof(float)) + align256(arena.rowSlots * sizeof(int32_t));
    }
    e.predictWorkspace =
        align256(planConvArena(layout, predictRows, true, false).floats * sizeof(float));
    return e;
}

// The forward pass of every member over `rows` examples whose input (c.x, [G][rows][D] raw
// rows) is in place: leaves each layer's pre/post, returns the output layer's pre [K][rows][O].
// `dropout` (training only; c.mask holds the step's masks, drawn already): every activated
// layer's activations are multiplied by their masks. `training`: dropout layers multiply their
// input by their masks (also in c.mask); otherwise they are the identity and enqueue nothing.
template <class Exec>
float* enqueueConvForward(Exec& ex, const ParamLayout& layout, Activation act, const float* params,
                          const ConvArena& arena, const ConvBuffers& c, bool dropout = false,
                          bool training = false) {
    const Architecture& a = layout.architecture();
    const std::vector<StackLayer>& stack = a.layers();
    const int members = layout.members();
    const int rows = static_cast<int>(arena.rows);
    const float* input = c.x;
    if (c.xLast != nullptr) {
        ex.unflatten(a.input().channels, a.input().plane(),
                     static_cast<int64_t>(arena.inputGroups) * rows, c.x, c.xLast);
        input = c.xLast;
    }
    float* output = nullptr;
    for (std::size_t i = 0; i < stack.size(); ++i) {
        const StackLayer& s = stack[i];
        const int groups = arena.groups[i];
        const bool shared = groups == 1 && members > 1;
        const int64_t examples = static_cast<int64_t>(groups) * rows;
        if (s.kind == LayerKind::Pool) {
            ex.poolForward(spatialGeometry(s), input, examples, c.post[i]);
            output = c.post[i];
        } else if (s.kind == LayerKind::Dropout) {
            if (training) {
                ex.maskMultiply(input, c.mask[i], examples * s.out.size(), c.post[i]);
                output = c.post[i];
            } else {
                output = const_cast<float*>(input);  // read on as it is, never written
            }
        } else {
            const LayerSlot& slot = layout.layer(s.param);
            const float* operand = input;
            int gemmRows = rows;
            bool sharedOperand = shared;
            if (s.kind == LayerKind::Conv && arena.implicitGemm) {
                gemmRows = rows * static_cast<int>(s.out.plane());
                ex.implicitConvForward(spatialGeometry(s), input, examples, members, gemmRows,
                                       params + slot.weightOffset, c.pre[i]);
                operand = nullptr;  // no GEMM below
            } else if (s.kind == LayerKind::Conv) {
                const int copies = arena.colCopies[i];
                ex.im2col(spatialGeometry(s), input, examples, static_cast<int64_t>(copies) * rows,
                          c.cols[i]);
                operand = c.cols[i];
                sharedOperand = copies == 1 && members > 1;
                gemmRows = rows * static_cast<int>(s.out.plane());
            } else if (s.flattens) {
                // The dense layer's own input shape is already flat: the map is the layer's below.
                const Shape maps = stack[i - 1].out;
                ex.flatten(maps.channels, maps.plane(), examples, input, c.flat);
                operand = c.flat;
            }
            if (operand != nullptr) {
                ex.gemm(forwardGemm(slot.in, slot.out, gemmRows, members, sharedOperand),
                        params + slot.weightOffset, operand, c.pre[i]);
            }
            ex.biasActivate(c.pre[i], s.activated ? c.post[i] : nullptr, params + slot.biasOffset,
                            members, gemmRows, slot.out, act);
            if (s.activated && dropout) {
                ex.dropoutApply(c.post[i], c.mask[i],
                                static_cast<int64_t>(members) * gemmRows * slot.out, s.out.plane(),
                                slot.out);
            }
            output = s.activated ? c.post[i] : c.pre[i];
        }
        input = output;
    }
    return output;
}

// A conv's weight gradient dW_k = dY_k^T cols_k and bias gradient db_k = dY_k^T 1 over `rows`
// rows (B Ho Wo) in `splits` chunks: partials [K][S][F C k k] and [K][S][F], then summed.
// With the implicit GEMM (`implicit` set: the layer's geometry, its input and its images)
// the weight partials read the input directly and `cols` is not used.
struct ImplicitConvInput {
    const SpatialGeometry* geometry = nullptr;  // null: im2col + GEMM
    const float* input = nullptr;
    int64_t inExamples = 0;
};

template <class Exec>
void enqueueConvGradients(Exec& ex, const LayerSlot& slot, int members, int rows, int splits,
                          bool sharedCols, const float* cols, const float* delta,
                          const ConvBuffers& c, float* grad, ImplicitConvInput implicit = {}) {
    const int chunk = rows / splits;
    const int64_t weights = static_cast<int64_t>(slot.out) * slot.in;
    float* weightPartial = c.partial;
    float* biasPartial = c.partial + static_cast<int64_t>(members) * splits * weights;
    if (implicit.geometry != nullptr) {
        ex.implicitConvWeightGrad(*implicit.geometry, implicit.input, implicit.inExamples, delta,
                                  members, rows, splits, weightPartial);
    } else if (!sharedCols) {
        // Batch entry p = k S + s: member k's chunk s, contiguous in both operands.
        ex.gemm(weightGradGemm(slot.in, slot.out, chunk, members * splits, false), cols, delta,
                weightPartial);
    } else {
        // One columns buffer for every member: per chunk s, a batch over the members with the
        // columns' stride 0, dY's member stride and the partials' [K][S] layout.
        for (int s = 0; s < splits; ++s) {
            GemmArgs g = weightGradGemm(slot.in, slot.out, chunk, members, true);
            g.strideB = static_cast<int64_t>(rows) * slot.out;
            g.strideC = static_cast<int64_t>(splits) * weights;
            ex.gemm(g, cols + static_cast<int64_t>(s) * chunk * slot.in,
                    delta + static_cast<int64_t>(s) * chunk * slot.out,
                    weightPartial + static_cast<int64_t>(s) * weights);
        }
    }
    ex.gemm(weightGradGemm(1, slot.out, chunk, members * splits, true), c.ones, delta, biasPartial);
    ex.sumPartials(weightPartial, members, splits, weights, grad + slot.weightOffset);
    ex.sumPartials(biasPartial, members, splits, slot.out, grad + slot.biasOffset);
}

// One training step of all K CNN members; the same contract as enqueueTrainingStep (the
// categorical head: the CPU's ConvNetCpu trains classifiers).
// The arena is planned for the replica's rows (shard.rows, or the whole batch), and with
// `dropout` when dropout.on(): then every activated layer's output is masked per channel of
// an example (conv) or per unit (dense), as ConvNetCpu does, keyed by the parameterised
// layer's index. Dropout layers mask their input whatever `dropout` says, with the key's
// member, first row and the device's step (dropoutLayerMaskElement).
template <class Exec>
void enqueueConvTrainingStep(Exec& ex, const ParamLayout& layout, const BatchPlanParams& plan,
                             Activation act, const StepBuffers& b, const ConvArena& arena,
                             const ConvBuffers& c, StepShard shard = {},
                             StepPhase phase = StepPhase::All, StepDropout dropout = {}) {
    if (phase == StepPhase::Update) {
        ex.applyUpdates(b, static_cast<int64_t>(layout.size()));
        ex.advanceState(b.state);
        return;
    }
    const Architecture& a = layout.architecture();
    const std::vector<StackLayer>& stack = a.layers();
    const int members = layout.members();
    const int batch = static_cast<int>(shard.rows > 0 ? shard.rows : plan.batch);

    ex.prepareRules(b.baseRules, b.rules, members, b.state);
    ex.planBatch(plan, members, b.state, b.rows, b.weights, shard.first,
                 static_cast<uint32_t>(batch));
    ex.gatherRows(b.trainX, a.inputs(), b.rows, static_cast<int64_t>(arena.inputGroups) * batch,
                  c.x);
    if (c.ones != nullptr) {
        ex.fill(c.ones, static_cast<int64_t>(c.onesCount), 1.0f);
    }
    const DropoutStep key = dropout.key(plan, shard);
    for (std::size_t i = 0; i < stack.size(); ++i) {
        if (dropout.on() && stack[i].activated) {
            ex.dropoutMask(key, b.state, members, batch, stack[i].units(), stack[i].param,
                           c.mask[i]);
        } else if (stack[i].kind == LayerKind::Dropout) {
            ex.dropoutLayerMask(key, b.state, members, batch, stack[i].out.channels,
                                static_cast<int>(stack[i].out.plane()), static_cast<int>(i),
                                stack[i].rate, c.mask[i]);
        }
    }
    const float* logits =
        enqueueConvForward(ex, layout, act, b.params, arena, c, dropout.on(), true);
    ex.softmaxCrossEntropy(logits, b.trainY, b.rows, b.weights, members, batch, layout.classes(),
                           b.delta, b.rowLoss, static_cast<int>(plan.batch));
    ex.memberLoss(b.rowLoss, b.active, members, batch, b.loss);

    // The first parameterised layer: nothing below it needs a gradient.
    std::size_t firstParam = 0;
    while (stack[firstParam].param < 0) {
        ++firstParam;
    }
    const float* rawInput = c.xLast != nullptr ? c.xLast : c.x;
    float* delta = b.delta;  // the gradient of layer i's output
    float* deltaPrev = b.deltaPrev;
    for (std::size_t i = stack.size(); i-- > firstParam;) {
        const StackLayer& s = stack[i];
        const float* input = i > 0 ? c.post[i - 1] : rawInput;
        const int groups = arena.groups[i];
        const bool shared = groups == 1 && members > 1;
        const int64_t examples = static_cast<int64_t>(members) * batch;
        if (s.kind == LayerKind::Pool) {
            if (s.in.height % s.kernel != 0 || s.in.width % s.kernel != 0) {
                // Rows and columns outside every window get no gradient.
                ex.fill(deltaPrev, examples * s.in.size(), 0.0f);
            }
            ex.poolBackward(spatialGeometry(s), input, delta, examples, deltaPrev);
            std::swap(delta, deltaPrev);
            continue;
        }
        if (s.kind == LayerKind::Dropout) {
            ex.maskMultiply(delta, c.mask[i], examples * s.out.size(), deltaPrev);
            std::swap(delta, deltaPrev);
            continue;
        }
        const LayerSlot& slot = layout.layer(s.param);
        const bool conv = s.kind == LayerKind::Conv;
        const int gemmRows = conv ? batch * static_cast<int>(s.out.plane()) : batch;
        if (s.activated && dropout.on()) {
            ex.dropoutBackward(delta, c.pre[i], c.mask[i],
                               static_cast<int64_t>(members) * gemmRows * slot.out, s.out.plane(),
                               slot.out, act);
        } else if (s.activated) {
            ex.activationBackward(delta, c.pre[i], c.post[i],
                                  static_cast<int64_t>(members) * gemmRows * slot.out, act);
        }
        const bool flattened = !conv && s.flattens;
        const float* operand = conv ? c.cols[i] : flattened ? c.flat : input;
        const SpatialGeometry geometry = conv ? spatialGeometry(s) : SpatialGeometry{};
        if (conv) {
            const bool sharedCols = arena.colCopies[i] == 1 && members > 1;
            ImplicitConvInput implicit;
            if (arena.implicitGemm) {
                implicit.geometry = &geometry;
                implicit.input = input;
                implicit.inExamples = static_cast<int64_t>(groups) * batch;
            }
            enqueueConvGradients(ex, slot, members, gemmRows, arena.splits[i], sharedCols, operand,
                                 delta, c, b.grad, implicit);
        } else {
            ex.gemm(weightGradGemm(slot.in, slot.out, gemmRows, members, shared), operand, delta,
                    b.grad + slot.weightOffset);
            ex.biasGradient(delta, b.grad + slot.biasOffset, members, gemmRows, slot.out);
        }
        if (i == firstParam) {
            break;
        }
        if (conv && arena.implicitGemm) {
            ex.implicitConvInputGrad(geometry, delta, b.params + slot.weightOffset, batch, examples,
                                     deltaPrev);
            std::swap(delta, deltaPrev);
        } else if (conv) {
            // dCols = dY W into the columns (their forward values are no longer needed).
            ex.gemm(inputGradGemm(slot.in, slot.out, gemmRows, members),
                    b.params + slot.weightOffset, delta, c.cols[i]);
            ex.col2im(geometry, c.cols[i], examples, deltaPrev);
            std::swap(delta, deltaPrev);
        } else {
            ex.gemm(inputGradGemm(slot.in, slot.out, gemmRows, members),
                    b.params + slot.weightOffset, delta, deltaPrev);
            if (flattened) {
                // Back from (channel, row, column) to channels-last, into the free buffer.
                const Shape maps = stack[i - 1].out;
                ex.unflatten(maps.channels, maps.plane(), examples, deltaPrev, delta);
            } else {
                std::swap(delta, deltaPrev);
            }
        }
    }

    if (phase == StepPhase::All) {
        ex.applyUpdates(b, static_cast<int64_t>(layout.size()));
        ex.advanceState(b.state);
    }
}

// Log-probabilities [K][rows][C] of every member for the examples already in c.x ([rows][D],
// shared by all members); returns the buffer holding them.
template <class Exec>
float* enqueueConvPrediction(Exec& ex, const ParamLayout& layout, Activation act,
                             const float* params, const ConvArena& arena, const ConvBuffers& c) {
    float* logits = enqueueConvForward(ex, layout, act, params, arena, c);
    ex.logSoftmax(logits, static_cast<int64_t>(layout.members()) * arena.rows, layout.classes());
    return logits;
}

}  // namespace ensemble::gpu
