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
// The implicit-GEMM convolution (conv_elements.h, implicitConv*; ConvArena::implicitGemm):
// one thread per output element, each summing in the element's fixed order. A first,
// untiled version: the index arithmetic is tst_cuda_plan's, the speed is not measured yet (a
// tiled kernel that stages the gathered inputs and weights in shared memory is the next step).
// pre [K][rows][F] from `inExamples` images of `in` (member k's rows read image
// (k B + b) % inExamples), weights [K][F][C k k].
void launchImplicitConvForward(const SpatialGeometry& g, const float* in, int64_t inExamples,
                               int members, int64_t rows, const float* weights, float* pre,
                               cudaStream_t stream);
// dIn [K B][H][W][C] from dPre [K][B Ho Wo][F] and the weights.
void launchImplicitConvInputGrad(const SpatialGeometry& g, const float* dPre, const float* weights,
                                 int64_t examplesPerMember, int64_t examples, float* dIn,
                                 cudaStream_t stream);
// partial [K][S][F][C k k]: chunk s of `rows` rows per member.
void launchImplicitConvWeightGrad(const SpatialGeometry& g, const float* in, int64_t inExamples,
                                  const float* dPre, int members, int64_t rows, int splits,
                                  float* partial, cudaStream_t stream);

}  // namespace ensemble::gpu
