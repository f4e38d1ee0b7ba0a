#pragma once

// The CPU backend's float fast path: one member's training step (gather, forward, softmax
// cross-entropy, backward, optimizer update) with the member's activations kept feature-major
// (features x batch, the batch padded to the SIMD width), so every small product is a register-
// blocked broadcast-FMA kernel along the batch, and the update of each layer is fused into the
// backward pass while its gradient is still in L1. Layers too large for that (MNIST's 784 x 256)
// go to Eigen's GEMM on the same buffers.
//
// The templated memberForward / memberForwardBackward in mlp_kernels.h stay the reference (and
// run in double for the gradient checks); the suite tst_cpu_kernels compares the two.
//
// Everything here is compiled with the engine's flags (-march=native), in fast_mlp.cpp (the
// passes, over the kernels of fast_kernels.h), fast_update.cpp and fast_workspace.cpp: no SIMD
// type appears in this header, so test code built with other flags can call it safely.
// All results depend only on (layout, member, inputs): never on the thread or on K.

#include <cstddef>
#include <cstdint>
#include <vector>

#include "math/activations.h"
#include "math/dropout.h"
#include "math/likelihood.h"
#include "model/mlp.h"
#include "optim/update_rules.h"

namespace ensemble {

// Floats per SIMD register the fast kernels were compiled for (16 with AVX-512, 8 with AVX).
int fastLanes();

// A float buffer aligned to 64 bytes whose allocation and release live in fast_workspace.cpp. Not
// an AlignedVector on purpose: Eigen's aligned_allocator picks malloc or its own aligned scheme by
// EIGEN_MAX_ALIGN_BYTES, which differs between code built with -march=native (the engine) and
// without (the tests), so a vector allocated on one side must never be freed on the other.
class FloatBuffer {
  public:
    FloatBuffer() = default;
    ~FloatBuffer();
    FloatBuffer(const FloatBuffer& other);
    FloatBuffer& operator=(const FloatBuffer& other);
    FloatBuffer(FloatBuffer&& other) noexcept;
    FloatBuffer& operator=(FloatBuffer&& other) noexcept;

    // n copies of value (reallocates only when n changes).
    void assign(std::size_t n, float value);
    float* data() { return m_data; }
    const float* data() const { return m_data; }
    std::size_t size() const { return m_size; }
    float& operator[](std::size_t i) { return m_data[i]; }
    float operator[](std::size_t i) const { return m_data[i]; }

  private:
    float* m_data = nullptr;
    std::size_t m_size = 0;
};

// A gathered batch in the layouts the fast kernels read: xb is B-major (paddedBatch x
// paddedInputs), xt feature-major (paddedInputs x paddedBatch); padding is zero.
struct FastBatch {
    int batch = 0;
    int paddedBatch = 0;
    int paddedInputs = 0;
    FloatBuffer xb;
    FloatBuffer xt;

    void resize(const ParamLayout& layout, int batch);
};

// Copies rows[0..batch) of `data` (rows x layout.inputs(), row-major) into `out`.
// Precondition: out.resize(layout, batch) was called with the same batch.
void fastGather(const ParamLayout& layout, const float* data, const int32_t* rows, int batch,
                FastBatch& out);

// Per-thread scratch of one member's step (or of one prediction chunk of `batch` rows).
struct FastWorkspace {
    int batch = 0;
    int paddedBatch = 0;
    std::vector<FloatBuffer> pre;   // per layer: out_p x Bp pre-activations
    std::vector<FloatBuffer> post;  // per hidden layer: out_p x Bp activations
    FloatBuffer batchMajor;         // Bp x maxWidth_p: a layer input or dZ, transposed
    FloatBuffer delta;              // maxWidth_p x Bp
    FloatBuffer deltaPrev;          // maxWidth_p x Bp
    FloatBuffer gradW;              // maxOut x maxIn_p: one layer's weight gradient
    FloatBuffer gradWT;             // in x out_p: dW^T of a layer with few inputs
    FloatBuffer gradB;              // maxOut (+ lanes): one layer's bias gradient
    FloatBuffer exampleWeights;     // Bp: weight_b / B, zero in the padding
    FloatBuffer exampleLabels;      // Bp: label_b as float (regression: 0), -1 in the padding
    FloatBuffer exampleTargets;     // Bp: regression targets, 0 in the padding
    FloatBuffer gemmA;              // Eigen GEMM packing buffers of the large layers
    FloatBuffer gemmB;
    FastBatch input;  // a member's own batch (resample, prediction)
    // Adversarial training only (resize's `adversarial`; empty otherwise):
    FloatBuffer inputGrad;        // paddedInputs x Bp: dLoss/dX of the batch, feature-major
    FloatBuffer gradSum;          // layout.perMember(): the clean batch's packed gradient
    FastBatch adversarial;        // the batch moved by eps * sign(inputGrad)
    std::vector<float> inputEps;  // one eps per input in place of the call's (empty: the call's)
    // Dropout only (resize's `dropout`; empty otherwise): per hidden layer out_p x Bp, the
    // step's mask (0 or 1 / (1 - rate), math/dropout.h; 0 in the padding). post then holds
    // the masked activations.
    std::vector<FloatBuffer> dropMask;

    void resize(const ParamLayout& layout, int batch, bool adversarial = false,
                bool dropout = false);
};

// One optimizer update of n contiguous parameters: applyUpdate (optim/update_rules.h) on each,
// vectorised. Precondition for Adam(W): prepareStep() has been applied to `rule`. A layer's
// weights with an L2 penalty pass its LayerSlot::l2Gradient (2c): each gradient is then
// withL2(grad, 2c, param) before the rule; 0 (no penalty) changes nothing.
void fastApplyUpdate(const OptimizerRule& rule, bool firstUpdate, float* params, const float* grad,
                     float* moment1, float* moment2, std::size_t n, float l2Gradient = 0.0f);

// Member k's step: forward, loss (mean over the batch of weight_b * CE_b), backward and the
// update of its parameters (and optimizer moments, at the same offsets as in `params`) in
// place. Returns the loss; when it is not finite nothing is updated. A regression head
// (`likelihood` gaussian or mse) reads the batch's standardised `targets` instead of `labels`
// and trains on its loss (math/loss.h: gaussianNllLanes, squaredErrorLanes).
//
// adversarialEps > 0 (training.adversarial_eps; ws resized with `adversarial`): the step's
// objective is loss(X) + loss(X'), X' = X + eps * sign(dloss(X)/dX) per example and feature
// (adversarialInput, math/loss.h) with the member's current parameters, so the update follows
// the sum of both gradients. The loss returned is still loss(X), the clean batch's (or
// loss(X') when that one is not finite, so the member is frozen either way).
//
// dropout.on() (ws resized with `dropout`): inverted dropout after every hidden activation, the
// mask of example b (batch position dropout.firstRow + b) drawn by math/dropout.h; the backward
// pass multiplies by the same mask. Off: today's step, untouched.
float fastTrainMember(const ParamLayout& layout, int k, Activation act, float* params,
                      float* moment1, float* moment2, const OptimizerRule& rule, bool firstUpdate,
                      const FastBatch& batch, const int32_t* labels, const float* weights,
                      FastWorkspace& ws, Likelihood likelihood = Likelihood::Categorical,
                      const float* targets = nullptr, float adversarialEps = 0.0f,
                      const DropoutStep& dropout = DropoutStep{});

// Asks the caches for member k's parameters and optimizer moments (the next member a thread
// will train): at large K they live in L3 or memory, in 18 short runs the hardware prefetcher
// does not follow in time.
void fastPrefetchMember(const ParamLayout& layout, int k, const float* params, const float* moment1,
                        const float* moment2);

// The same forward and backward, writing member k's gradient packed per layer as
// memberForwardBackward does ([W_l (out x in), b_l (out)], layout.perMember() floats). The loss
// and gradient are sums over the batch divided by `normaliser` (0: batch.batch, the mean): a
// data-axis shard of a batch of B rows passes B, so the shards' results sum to the whole
// batch's. When the loss is not finite the gradient is not written. adversarialEps > 0: the
// gradient of loss(X) + loss(X') as in fastTrainMember (X' depends on each example alone, so
// shards of a batch still add up to the whole batch's). dropout: as in fastTrainMember (a
// row's mask depends on its batch position alone, so shards add up too).
float fastMemberGradient(const ParamLayout& layout, int k, Activation act, const float* params,
                         const FastBatch& batch, const int32_t* labels, const float* weights,
                         FastWorkspace& ws, float* grad,
                         Likelihood likelihood = Likelihood::Categorical,
                         const float* targets = nullptr, int normaliser = 0,
                         float adversarialEps = 0.0f, const DropoutStep& dropout = DropoutStep{});

// Log-probabilities of member k for `rows` inputs x (rows x inputs, row-major):
// out[i * classes + c]; for a regression head its predictive instead (headPredictiveInPlace,
// math/loss.h). Precondition: rows <= ws.batch.
void fastPredictLogProbs(const ParamLayout& layout, int k, Activation act, const float* params,
                         const float* x, int rows, FastWorkspace& ws, float* out,
                         Likelihood likelihood = Likelihood::Categorical);

}  // namespace ensemble
