#pragma once

// The elementwise parts of a dense layer around the cuBLAS products: bias + activation
// forward, activation backward, and the bias gradient. Bodies in step_elements.h.

#include <cuda_runtime_api.h>

#include <cstdint>

#include "backend/cuda/step_elements.h"

namespace ensemble::gpu {

// z [K][rows][out] += bias [K][out]; post = f(z) when post != nullptr (hidden layers; post may
// be z itself). One thread per element of z.
void launchBiasActivate(float* z, float* post, const float* bias, int members, int rows, int out,
                        Activation act, cudaStream_t stream);

// delta[i] *= f'(pre[i]) for i < count (post: the stored f(pre), used by tanh).
void launchActivationBackward(float* delta, const float* pre, const float* post, int64_t count,
                              Activation act, cudaStream_t stream);

// gradBias [K][out] = sum over rows of delta [K][rows][out], in row order (deterministic).
// One thread per (k, o).
void launchBiasGradient(const float* delta, float* gradBias, int members, int rows, int out,
                        bool accumulate, cudaStream_t stream);

// Training dropout (step_elements.h, dropout*Element). mask [K][rows][units] of `layer` for the
// step in state->step (read on the device, as the batch plan reads it): members from
// key.member, examples at batch positions key.firstRow + b. One thread per four units.
void launchDropoutMask(const DropoutStep& key, const DeviceStepState* state, int members, int rows,
                       int units, int layer, float* mask, cudaStream_t stream);

// post [K][rows][plane][units] *= its mask value (plane 1: a dense layer). One thread per
// element.
void launchDropoutApply(float* post, const float* mask, int64_t count, int64_t plane, int units,
                        cudaStream_t stream);

// delta = (delta * mask) * f'(pre) over [K][rows][plane][units]. One thread per element.
void launchDropoutBackward(float* delta, const float* pre, const float* mask, int64_t count,
                           int64_t plane, int units, Activation act, cudaStream_t stream);

// A dropout layer's training masks [K][rows][plane][channels] (dropoutLayerMaskElement), keyed
// as launchDropoutMask's by its stack index `layer`. One thread per four positions.
void launchDropoutLayerMask(const DropoutStep& key, const DeviceStepState* state, int members,
                            int rows, int channels, int plane, int layer, float rate, float* mask,
                            cudaStream_t stream);

// out = x * mask, elementwise over `count` floats (a dropout layer, forward and backward).
void launchMaskMultiply(const float* x, const float* mask, int64_t count, float* out,
                        cudaStream_t stream);

}  // namespace ensemble::gpu
