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

}  // namespace ensemble::gpu
