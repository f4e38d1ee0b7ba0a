#pragma once

// The CPU backend's float fast path: one member's training step (gather, forward, softmax
// cross-entropy, backward, optimizer update) with the member's activations kept feature-major
// (features x batch, the batch padded to the SIMD width), so every small product is a register-
// blocked broadcast-FMA kernel along the batch, and the update of each layer is fused into the
// backward pass while its gradient is still in L1. Layers too large for that (MNIST's 784 x 256)
// go to Eigen's GEMM on the same buffers.
//
// The templated memberForward / memberForwardBackward in mlp_kernels.h stay the reference (and
// run in double for the gradient checks); tests/tst_cpu_kernels.cpp compares the two.
//
// Everything here is compiled once, in fast_mlp.cpp, with the engine's flags (-march=native):
// no SIMD type appears in this header, so test code built with other flags can call it safely.
// All results depend only on (layout, member, inputs): never on the thread or on K.

#include <cstddef>
#include <cstdint>
#include <vector>

#include "backend/cpu/mlp_kernels.h"
#include "math/activations.h"
#include "math/optim_rules.h"
#include "model/mlp.h"

namespace ensemble {

// Floats per SIMD register the fast kernels were compiled for (16 with AVX-512, 8 with AVX).
int fastLanes();

// A gathered batch in the layouts the fast kernels read: xb is B-major (paddedBatch x
// paddedInputs), xt feature-major (paddedInputs x paddedBatch); padding is zero.
struct FastBatch {
    int batch = 0;
    int paddedBatch = 0;
    int paddedInputs = 0;
    AlignedVector<float> xb;
    AlignedVector<float> xt;

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
    std::vector<AlignedVector<float>> pre;   // per layer: out_p x Bp pre-activations
    std::vector<AlignedVector<float>> post;  // per hidden layer: out_p x Bp activations
    AlignedVector<float> batchMajor;         // Bp x maxWidth_p: a layer input, transposed
    AlignedVector<float> delta;              // maxWidth_p x Bp
    AlignedVector<float> deltaPrev;          // maxWidth_p x Bp
    AlignedVector<float> gradW;              // maxOut x maxIn_p: one layer's weight gradient
    AlignedVector<float> gradB;              // maxOut (+ lanes): one layer's bias gradient
    AlignedVector<float> exampleWeights;     // Bp: weight_b / B, zero in the padding
    AlignedVector<float> exampleLabels;      // Bp: label_b as float, -1 in the padding
    FastBatch input;                         // a member's own batch (resample, prediction)

    void resize(const ParamLayout& layout, int batch);
};

// One optimizer update of n contiguous parameters: applyUpdate (math/optim_rules.h) on each,
// vectorised. Precondition for Adam(W): prepareStep() has been applied to `rule`.
void fastApplyUpdate(const OptimizerRule& rule, bool firstUpdate, float* params,
                     const float* grad, float* moment1, float* moment2, std::size_t n);

// Member k's step: forward, loss (mean over the batch of weight_b * CE_b), backward and the
// update of its parameters (and optimizer moments, at the same offsets as in `params`) in
// place. Returns the loss; when it is not finite nothing is updated.
float fastTrainMember(const ParamLayout& layout, int k, Activation act, float* params,
                      float* moment1, float* moment2, const OptimizerRule& rule,
                      bool firstUpdate, const FastBatch& batch, const int32_t* labels,
                      const float* weights, FastWorkspace& ws);

// The same forward and backward, writing member k's gradient packed per layer as
// memberForwardBackward does ([W_l (out x in), b_l (out)], layout.perMember() floats).
float fastMemberGradient(const ParamLayout& layout, int k, Activation act, const float* params,
                         const FastBatch& batch, const int32_t* labels, const float* weights,
                         FastWorkspace& ws, float* grad);

// Log-probabilities of member k for `rows` inputs x (rows x inputs, row-major):
// out[i * classes + c]. Precondition: rows <= ws.batch.
void fastPredictLogProbs(const ParamLayout& layout, int k, Activation act, const float* params,
                         const float* x, int rows, FastWorkspace& ws, float* out);

}  // namespace ensemble
