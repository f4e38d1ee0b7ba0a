#pragma once

// The bodies of the CUDA backend's kernels, one element (one thread's work) each, marked
// ENSEMBLE_HD. A kernel is only "i = global thread index; if (i < n) xxxElement(i, ...)"
// around these, and tst_cuda_plan runs the very same functions in plain loops on the host,
// so everything but the launch itself (and cuBLAS) is tested on the CPU.
//
// Plain C++17 with no CUDA header: included by the .cu files and by the host tests.
// Indices are int64_t: K * B * width can pass 2^31 for wide layers and large ensembles.
//
// Buffer layouts (all member-major, rows packed, row-major inside a member):
//   rows, weights, rowLoss:  [K][B]
//   x (gathered inputs):     [G][B][D], G = 1 when all members read the same rows
//                            (bootstrap none/poisson), G = K under resample
//   z, post, delta of layer: [K][B][out]   (member stride B * out)
//   bias of layer l:         params + layout.layer(l).biasOffset, [K][out]

#include <cstdint>

#include "math/activations.h"
#include "math/dropout.h"
#include "math/hd.h"
#include "math/likelihood.h"
#include "math/loss.h"
#include "optim/update_rules.h"
#include "sampling/batch_plan.h"

#if !defined(__CUDA_ARCH__)
#include <cmath>
#endif

namespace ensemble::gpu {

// Counters the training step reads and advances on the device, so the captured graph can be
// replayed without the host writing anything in between (see CudaBackend::step).
struct DeviceStepState {
    uint64_t step = 0;     // global step index: selects the batch
    uint64_t updates = 0;  // updates since bind()/setParameters(): drives the bias corrections
};

// One contiguous block of the stacked parameter buffer holding `perMember` values of each of
// the K members back to back: layer l's weights [K][out][in] or biases [K][out].
struct ParamSegment {
    uint64_t begin = 0;
    uint64_t perMember = 1;
    // The layer's LayerSlot::l2Gradient (2c) on a weight segment with an L2 penalty, else 0.
    float l2Gradient = 0.0f;
};

ENSEMBLE_HD inline bool isFiniteHD(float v) {
#if defined(__CUDA_ARCH__)
    return isfinite(v);
#else
    return std::isfinite(v);
#endif
}

// The member owning parameter `i`. Segments are sorted by `begin`, cover [0, size) and there
// are 2 per layer, so a linear scan is cheaper than anything cleverer.
ENSEMBLE_HD inline int segmentOfParam(uint64_t i, const ParamSegment* segments, int count) {
    int s = 0;
    while (s + 1 < count && segments[s + 1].begin <= i) {
        ++s;
    }
    return s;
}

ENSEMBLE_HD inline int memberOfParam(uint64_t i, const ParamSegment* segments, int count) {
    const ParamSegment& s = segments[segmentOfParam(i, segments, count)];
    return static_cast<int>((i - s.begin) / s.perMember);
}

// --- optimizer ---------------------------------------------------------------------------

// Member k's rule for this step: prepareStep (optim/update_rules.h) sets the bias-corrected step
// size for update number t = updates + 1, in double, exactly as CpuBackend::step does.
ENSEMBLE_HD inline void prepareRuleElement(int64_t k, const OptimizerRule* base,
                                           OptimizerRule* rules, const DeviceStepState& state) {
    OptimizerRule r = base[k];
    prepareStep(r, state.updates + 1);
    rules[k] = r;
}

// Parameter i of the stacked buffer. Members that are inactive or whose batch loss is not
// finite keep their parameters and optimizer state (the caller freezes a diverged member). A
// weight segment with an L2 penalty adds its term to the gradient first.
ENSEMBLE_HD inline void updateElement(int64_t i, float* params, const float* grad, float* moment1,
                                      float* moment2, const ParamSegment* segments,
                                      int segmentCount, const OptimizerRule* rules,
                                      const uint8_t* active, const float* loss,
                                      const DeviceStepState& state) {
    const ParamSegment& segment =
        segments[segmentOfParam(static_cast<uint64_t>(i), segments, segmentCount)];
    const int k = static_cast<int>((static_cast<uint64_t>(i) - segment.begin) / segment.perMember);
    if (active[k] == 0 || !isFiniteHD(loss[k])) {
        return;
    }
    // A layer's L2 penalty (withL2) on its weights, as the CPU's fastApplyUpdate adds it.
    const float g =
        segment.l2Gradient != 0.0f ? withL2(grad[i], segment.l2Gradient, params[i]) : grad[i];
    applyUpdate(rules[k], state.updates == 0, params[i], g, moment1[i], moment2[i]);
}

ENSEMBLE_HD inline void advanceStateElement(DeviceStepState& state) {
    ++state.step;
    ++state.updates;
}

// --- batch plan and gather ----------------------------------------------------------------

// Slot i = k * n + j of a replica's n rows [first, first + n) of the batch (the data axis;
// first 0 and n = B without one): the row member k reads at (step, first + j) and its example
// weight (Poisson count under `poisson`, else 1), from the same planRow the CPU's planMember
// runs, so a row's draw does not depend on how the batch is shared.
ENSEMBLE_HD inline void planSlotElement(int64_t i, const BatchPlanParams& plan, uint64_t step,
                                        int32_t* rows, float* weights, uint32_t first, uint32_t n) {
    const uint32_t k = static_cast<uint32_t>(i / n);
    const uint32_t b = first + static_cast<uint32_t>(i % n);
    float w = 1.0f;
    rows[i] = static_cast<int32_t>(planRow(plan, plan.memberOffset + k, step, b, w));
    weights[i] = w;
}

// Element i of x [G][B][D]: feature i % D of the row slot i / D (= g * B + b) points to.
// With G = 1 only member 0's slots are read: under none/poisson every member has the same
// rows (planStream is the shared stream), which tst_cuda_plan checks.
ENSEMBLE_HD inline void gatherElement(int64_t i, const float* trainX, int features,
                                      const int32_t* rows, float* x) {
    const int64_t slot = i / features;
    const int64_t c = i % features;
    x[i] = trainX[static_cast<int64_t>(rows[slot]) * features + c];
}

// --- layers -------------------------------------------------------------------------------

// z[i] += bias; post[i] = f(z[i]) for hidden layers (post == nullptr for the output layer).
// `post` may equal `z` (prediction keeps no pre-activations), so no __restrict__ here.
// I: the index type (int32_t where the element count allows; see conv_kernels.cuh).
template <class I>
ENSEMBLE_HD inline void biasActivateElement(I i, float* z, float* post, const float* bias, int rows,
                                            int out, Activation act) {
    const I perMember = static_cast<I>(rows) * out;
    const I k = i / perMember;
    const I o = i % out;
    const float v = z[i] + bias[k * out + o];
    z[i] = v;
    if (post != nullptr) {
        post[i] = activate(act, v);
    }
}

// delta[i] *= f'(z[i]) (tanh uses the stored output).
ENSEMBLE_HD inline void activationBackwardElement(int64_t i, float* delta, const float* pre,
                                                  const float* post, Activation act) {
    delta[i] *= activateGrad(act, pre[i], post[i]);
}

// db[k][o] = sum_b delta[k][b][o], summed in b order (deterministic, no atomics); added to
// what gradBias holds when `accumulate` (the adversarial pass).
ENSEMBLE_HD inline void biasGradientElement(int64_t j, const float* delta, float* gradBias,
                                            int rows, int out, bool accumulate = false) {
    const int64_t k = j / out;
    const int64_t o = j % out;
    const float* d = delta + k * rows * out + o;
    float sum = 0.0f;
    for (int b = 0; b < rows; ++b) {
        sum += d[static_cast<int64_t>(b) * out];
    }
    gradBias[j] = accumulate ? gradBias[j] + sum : sum;
}

// --- dropout (math/dropout.h; TrainingProblem::dropout > 0 only) ----------------------------
//
// A layer's training masks are [K][B][units] (units: a dense layer's outputs, a conv's
// channels), drawn from the keys the CPU backend uses: (seed, step, member, batch position,
// layer, unit), so both devices drop the same units. Its activations [K][B][plane][units]
// (plane 1 for a dense layer, Ho Wo for a conv, channels-last) take one mask value per
// (member, example, unit).

// Group j of four units of mask [K][B][units] for `layer`: member k = j / (B * groups) is
// global member d.member + k, its example b at batch position d.firstRow + b. One Philox draw
// per group (as the CPU's fillDropoutMask); d.step is ignored, the step is the device's.
ENSEMBLE_HD inline void dropoutMaskElement(int64_t j, const DropoutStep& d, uint64_t step,
                                           int batch, int units, int layer, float* mask) {
    const int groups = (units + 3) / 4;
    const int64_t slot = j / groups;  // k * B + b
    const int g = static_cast<int>(j - slot * groups);
    const int64_t k = slot / batch;
    const uint32_t b = static_cast<uint32_t>(slot - k * batch);
    const Philox4x32 r = dropoutTrainingDrawLanes<uint32_t>(
        d.seed, step, d.member + static_cast<uint32_t>(k), d.firstRow + b, layer, 4 * g);
    const float scale = dropoutScale(d.rate);
    float* out = mask + slot * units;
    for (int w = 0; w < 4 && 4 * g + w < units; ++w) {
        out[4 * g + w] = dropoutMaskValue(r.v[w], d.rate, scale);
    }
}

// The mask value of activation i of [K][B][plane][units]: mask[(k B + b) units + u].
template <class I>
ENSEMBLE_HD inline I dropoutMaskIndex(I i, I plane, int units) {
    const I position = i / units;  // (k B + b) plane + p
    const I unit = i - position * units;
    return position / plane * units + unit;
}

// post[i] *= its mask value (post holds f(z); it then holds the masked activation).
template <class I>
ENSEMBLE_HD inline void dropoutApplyElement(I i, float* post, const float* mask, I plane,
                                            int units) {
    post[i] *= mask[dropoutMaskIndex(i, plane, units)];
}

// delta[i] = (delta[i] * mask) * f'(pre[i]) (dropoutActivationGrad: f' from z alone, since
// post holds the masked activation).
template <class I>
ENSEMBLE_HD inline void dropoutBackwardElement(I i, float* delta, const float* pre,
                                               const float* mask, I plane, int units,
                                               Activation act) {
    delta[i] =
        dropoutActivationGrad(act, delta[i], mask[dropoutMaskIndex(i, plane, units)], pre[i]);
}

// A dropout layer's training masks (model.layers' "dropout"; every method), in its input's
// layout [K][B][plane][channels] (channels-last maps; plane 1 and channels = units for a flat
// input). Group j of four positions of one example: member k = j / (B * groups), its example
// b at batch position d.firstRow + b; position p = c plane + q (the flatten order, as the
// CPU's fillLayerDropoutMask) lands at q channels + c. One Philox draw per group.
ENSEMBLE_HD inline void dropoutLayerMaskElement(int64_t j, const DropoutStep& d, uint64_t step,
                                                int batch, int channels, int plane, int layer,
                                                float rate, float* mask) {
    const int size = channels * plane;
    const int groups = (size + 3) / 4;
    const int64_t slot = j / groups;  // k * B + b
    const int g = static_cast<int>(j - slot * groups);
    const int64_t k = slot / batch;
    const uint32_t b = static_cast<uint32_t>(slot - k * batch);
    const Philox4x32 r = dropoutLayerDrawLanes<uint32_t>(
        d.seed, step, d.member + static_cast<uint32_t>(k), d.firstRow + b, layer, 4 * g);
    const float scale = dropoutScale(rate);
    float* out = mask + slot * size;
    for (int w = 0; w < 4 && 4 * g + w < size; ++w) {
        const int p = 4 * g + w;
        out[(p % plane) * channels + p / plane] = dropoutMaskValue(r.v[w], rate, scale);
    }
}

// out[i] = x[i] * mask[i]: a dropout layer's forward pass (x its input) and backward pass (x the
// gradient of its output), masks in the data's own layout.
template <class I>
ENSEMBLE_HD inline void maskMultiplyElement(I i, const float* x, const float* mask, float* out) {
    out[i] = x[i] * mask[i];
}

// --- adversarial training -----------------------------------------------------------------

// Element i of xAdv [K][B][D], which holds dLoss/dX on entry: member k's input moved by eps *
// sign(dX) (adversarialInput, math/loss.h), from x [G][B][D] (G = 1 when `shared`).
ENSEMBLE_HD inline void adversarialInputElement(int64_t i, const float* x, bool shared, int batch,
                                                int features, float eps, float* xAdv) {
    const int64_t perMember = static_cast<int64_t>(batch) * features;
    const float v = shared ? x[i % perMember] : x[i];
    xAdv[i] = adversarialInput(v, xAdv[i], eps);
}

// Member k: the reported loss stays the clean one unless the adversarial loss is not finite
// (then that one, so the update is skipped and the member frozen, as on the CPU).
ENSEMBLE_HD inline void adversarialLossElement(int64_t k, const float* lossAdv, float* loss) {
    if (!isFiniteHD(lossAdv[k])) {
        loss[k] = lossAdv[k];
    }
}

// --- loss ---------------------------------------------------------------------------------

// Slot r: weighted softmax cross-entropy of its logits (scale 1/batch, the whole batch's size
// even where a replica holds part of it), gradient into dLogits, the slot's loss into
// rowLoss[r].
ENSEMBLE_HD inline void softmaxCrossEntropyElement(int64_t r, const float* logits,
                                                   const int32_t* trainY, const int32_t* rows,
                                                   const float* weights, int batch, int classes,
                                                   float* dLogits, float* rowLoss) {
    const int label = trainY[rows[r]];
    const float scale = 1.0f / static_cast<float>(batch);
    rowLoss[r] = softmaxCrossEntropy(logits + r * classes, classes, label, weights[r], scale,
                                     dLogits + r * classes);
}

// Slot r = k * B + b of a regression head: its weighted loss (regressionLoss, math/loss.h;
// scale 1/B) of the outputs [K][B][O] against the standardised target trainTargets[rows[r]],
// the gradient into dOutputs, the slot's loss into rowLoss[r].
ENSEMBLE_HD inline void regressionLossElement(int64_t r, const float* outputs,
                                              const float* trainTargets, const int32_t* rows,
                                              const float* weights, int batch, int outputCount,
                                              Likelihood likelihood, float* dOutputs,
                                              float* rowLoss) {
    const float scale = 1.0f / static_cast<float>(batch);
    rowLoss[r] = regressionLoss(likelihood, outputs + r * outputCount, trainTargets[rows[r]],
                                weights[r], scale, dOutputs + r * outputCount);
}

// Member k's batch loss: the slot losses added in b order from 0, as CpuBackend adds them;
// 0 for an inactive member.
ENSEMBLE_HD inline void memberLossElement(int64_t k, const float* rowLoss, const uint8_t* active,
                                          int batch, float* loss) {
    if (active[k] == 0) {
        loss[k] = 0.0f;
        return;
    }
    float sum = 0.0f;
    const float* r = rowLoss + k * batch;
    for (int b = 0; b < batch; ++b) {
        sum += r[b];
    }
    loss[k] = sum;
}

// Row r of logits [rows][C], in place: z - logsumexp(z).
ENSEMBLE_HD inline void logSoftmaxElement(int64_t r, float* z, int classes) {
    float* row = z + r * classes;
    const float lse = logSumExp(row, classes);
    for (int c = 0; c < classes; ++c) {
        row[c] -= lse;
    }
}

// Row r of a head's outputs [rows][O], in place: its predictive (headPredictiveInPlace,
// math/loss.h): the gaussian's raw variance becomes sigma^2.
ENSEMBLE_HD inline void headPredictiveElement(int64_t r, float* z, int outputCount,
                                              Likelihood likelihood) {
    headPredictiveInPlace(likelihood, z + r * outputCount, outputCount);
}

}  // namespace ensemble::gpu
