#pragma once

// The CNN members' layout kernels around the cuBLAS products (conv_program.h): im2col and its
// adjoint, pooling forward and backward, the flatten permutation and its inverse, and a fill.
// Bodies in conv_elements.h; `examples` counts images over all copies ([G][B] or [K][B]).
// Each kernel indexes in 32-bit arithmetic when its element count allows (64-bit division is
// a long instruction sequence on the GPU: measured, it made these kernels compute-bound).

#include <cuda_runtime_api.h>

#include <cstdint>

#include "backend/cuda/conv_elements.h"

namespace ensemble::gpu {

// cols holds `examples` images' columns, read from the `inExamples` images of `in` (example e
// reads image e % inExamples: copies of a shared batch).
void launchIm2col(const SpatialGeometry& g, const float* in, int64_t inExamples, int64_t examples,
                  float* cols, cudaStream_t stream);
void launchCol2im(const SpatialGeometry& g, const float* dCols, int64_t examples, float* dIn,
                  cudaStream_t stream);
void launchPoolForward(const SpatialGeometry& g, const float* in, int64_t examples, float* out,
                       cudaStream_t stream);
void launchPoolBackward(const SpatialGeometry& g, const float* in, const float* dOut,
                        int64_t examples, float* dIn, cudaStream_t stream);
void launchFlatten(int channels, int64_t plane, int64_t examples, const float* in, float* out,
                   cudaStream_t stream);
void launchUnflatten(int channels, int64_t plane, int64_t examples, const float* in, float* out,
                     cudaStream_t stream);
// out [K][n] = the sum over s of partial [K][S][n], in s order.
void launchSumPartials(const float* partial, int members, int splits, int64_t n, float* out,
                       cudaStream_t stream);
void launchFill(float* out, int64_t count, float value, cudaStream_t stream);

}  // namespace ensemble::gpu
