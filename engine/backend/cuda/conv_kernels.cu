#include <algorithm>
#include <limits>

#include "backend/cuda/conv_kernels.cuh"
#include "backend/cuda/cuda_check.h"
#include "backend/cuda/kernel_launch.cuh"

namespace ensemble::gpu {

namespace {

// Grid-stride loops in index type I: a 32-bit loop is used only where i + stride cannot wrap.
template <class I>
__device__ inline I first() {
    return static_cast<I>(firstThread());
}
template <class I>
__device__ inline I stride() {
    return static_cast<I>(threadStride());
}

template <class I>
__global__ void im2colKernel(SpatialGeometry g, const float* in, float* cols, I inExamples,
                             I count) {
    for (I t = first<I>(); t < count; t += stride<I>()) {
        im2colPatchElement(t, g, in, cols, inExamples);
    }
}

template <class I>
__global__ void col2imKernel(SpatialGeometry g, const float* dCols, float* dIn, I count) {
    for (I i = first<I>(); i < count; i += stride<I>()) {
        col2imElement(i, g, dCols, dIn);
    }
}

template <class I>
__global__ void poolForwardKernel(SpatialGeometry g, const float* in, float* out, I count) {
    for (I i = first<I>(); i < count; i += stride<I>()) {
        poolForwardElement(i, g, in, out);
    }
}

template <class I>
__global__ void poolBackwardKernel(SpatialGeometry g, const float* in, const float* dOut,
                                   float* dIn, I count) {
    for (I i = first<I>(); i < count; i += stride<I>()) {
        poolBackwardElement(i, g, in, dOut, dIn);
    }
}

template <class I>
__global__ void flattenKernel(int channels, I plane, const float* in, float* out, I count) {
    for (I i = first<I>(); i < count; i += stride<I>()) {
        flattenElement(i, channels, plane, in, out);
    }
}

template <class I>
__global__ void unflattenKernel(int channels, I plane, const float* in, float* out, I count) {
    for (I i = first<I>(); i < count; i += stride<I>()) {
        unflattenElement(i, channels, plane, in, out);
    }
}

template <class I>
__global__ void sumPartialsKernel(const float* partial, int splits, I n, float* out, I count) {
    for (I i = first<I>(); i < count; i += stride<I>()) {
        sumPartialsElement(i, partial, splits, n, out);
    }
}

template <class I>
__global__ void implicitConvForwardKernel(SpatialGeometry g, const float* in, I inExamples,
                                          const float* weights, I rows, float* pre, I count) {
    for (I t = first<I>(); t < count; t += stride<I>()) {
        implicitConvForwardElement(t, g, in, inExamples, weights, rows, pre);
    }
}

template <class I>
__global__ void implicitConvInputGradKernel(SpatialGeometry g, const float* dPre,
                                            const float* weights, I examplesPerMember, float* dIn,
                                            I count) {
    for (I i = first<I>(); i < count; i += stride<I>()) {
        implicitConvInputGradElement(i, g, dPre, weights, examplesPerMember, dIn);
    }
}

template <class I>
__global__ void implicitConvWeightGradKernel(SpatialGeometry g, const float* in, I inExamples,
                                             const float* dPre, I rows, int splits, float* partial,
                                             I count) {
    for (I t = first<I>(); t < count; t += stride<I>()) {
        implicitConvWeightGradElement(t, g, in, inExamples, dPre, rows, splits, partial);
    }
}

__global__ void fillKernel(float* out, float value, int64_t count) {
    for (int64_t i = firstThread(); i < count; i += threadStride()) {
        fillElement(i, value, out);
    }
}

// Whether `count` elements can be indexed in int32 with room for the grid stride (at most
// kMaxBlocks * kBlockThreads = 2^28) above the last index.
bool fits32(int64_t count) {
    return count <= std::numeric_limits<int32_t>::max() - kMaxBlocks * kBlockThreads;
}

// Launches kernel<int32_t> or kernel<int64_t>, the other arguments converted to the chosen
// index type by the caller's lambda; `extent` is the largest index any buffer is read or
// written at.
template <class Launch>
void launchIndexed(int64_t extent, Launch&& launch) {
    if (fits32(extent)) {
        launch(int32_t{0});
    } else {
        launch(int64_t{0});
    }
    ENSEMBLE_CUDA_CHECK_LAUNCH();
}

int64_t inputSize(const SpatialGeometry& g) {
    return static_cast<int64_t>(g.inC) * g.inH * g.inW;
}

}  // namespace

void launchIm2col(const SpatialGeometry& g, const float* in, int64_t inExamples, int64_t examples,
                  float* cols, cudaStream_t stream) {
    const int64_t count = examples * g.outH * g.outW * g.inC;  // (row, channel) patches
    const int64_t extent = std::max(count * g.kernel * g.kernel, inExamples * inputSize(g));
    launchIndexed(extent, [&](auto index) {
        using I = decltype(index);
        im2colKernel<I><<<blocksFor(count), kBlockThreads, 0, stream>>>(
            g, in, cols, static_cast<I>(inExamples), static_cast<I>(count));
    });
}

void launchCol2im(const SpatialGeometry& g, const float* dCols, int64_t examples, float* dIn,
                  cudaStream_t stream) {
    const int64_t count = examples * inputSize(g);
    const int64_t columns = examples * g.outH * g.outW * g.inC * g.kernel * g.kernel;
    launchIndexed(std::max(count, columns), [&](auto index) {
        using I = decltype(index);
        col2imKernel<I>
            <<<blocksFor(count), kBlockThreads, 0, stream>>>(g, dCols, dIn, static_cast<I>(count));
    });
}

void launchPoolForward(const SpatialGeometry& g, const float* in, int64_t examples, float* out,
                       cudaStream_t stream) {
    const int64_t count = examples * g.outC * g.outH * g.outW;
    launchIndexed(std::max(count, examples * inputSize(g)), [&](auto index) {
        using I = decltype(index);
        poolForwardKernel<I>
            <<<blocksFor(count), kBlockThreads, 0, stream>>>(g, in, out, static_cast<I>(count));
    });
}

void launchPoolBackward(const SpatialGeometry& g, const float* in, const float* dOut,
                        int64_t examples, float* dIn, cudaStream_t stream) {
    const int64_t count = examples * g.outC * g.outH * g.outW;  // one output window each
    launchIndexed(std::max(count, examples * inputSize(g)), [&](auto index) {
        using I = decltype(index);
        poolBackwardKernel<I><<<blocksFor(count), kBlockThreads, 0, stream>>>(
            g, in, dOut, dIn, static_cast<I>(count));
    });
}

void launchFlatten(int channels, int64_t plane, int64_t examples, const float* in, float* out,
                   cudaStream_t stream) {
    const int64_t count = examples * channels * plane;
    launchIndexed(count, [&](auto index) {
        using I = decltype(index);
        flattenKernel<I><<<blocksFor(count), kBlockThreads, 0, stream>>>(
            channels, static_cast<I>(plane), in, out, static_cast<I>(count));
    });
}

void launchUnflatten(int channels, int64_t plane, int64_t examples, const float* in, float* out,
                     cudaStream_t stream) {
    const int64_t count = examples * channels * plane;
    launchIndexed(count, [&](auto index) {
        using I = decltype(index);
        unflattenKernel<I><<<blocksFor(count), kBlockThreads, 0, stream>>>(
            channels, static_cast<I>(plane), in, out, static_cast<I>(count));
    });
}

void launchSumPartials(const float* partial, int members, int splits, int64_t n, float* out,
                       cudaStream_t stream) {
    const int64_t count = static_cast<int64_t>(members) * n;
    launchIndexed(count * splits, [&](auto index) {
        using I = decltype(index);
        sumPartialsKernel<I><<<blocksFor(count), kBlockThreads, 0, stream>>>(
            partial, splits, static_cast<I>(n), out, static_cast<I>(count));
    });
}

void launchImplicitConvForward(const SpatialGeometry& g, const float* in, int64_t inExamples,
                               int members, int64_t rows, const float* weights, float* pre,
                               cudaStream_t stream) {
    const int64_t count = static_cast<int64_t>(members) * rows * g.outC;
    const int64_t extent = std::max(count, inExamples * inputSize(g));
    launchIndexed(extent, [&](auto index) {
        using I = decltype(index);
        implicitConvForwardKernel<I><<<blocksFor(count), kBlockThreads, 0, stream>>>(
            g, in, static_cast<I>(inExamples), weights, static_cast<I>(rows), pre,
            static_cast<I>(count));
    });
}

void launchImplicitConvInputGrad(const SpatialGeometry& g, const float* dPre, const float* weights,
                                 int64_t examplesPerMember, int64_t examples, float* dIn,
                                 cudaStream_t stream) {
    const int64_t count = examples * inputSize(g);
    const int64_t rows = examples * g.outH * g.outW * g.outC;
    launchIndexed(std::max(count, rows), [&](auto index) {
        using I = decltype(index);
        implicitConvInputGradKernel<I><<<blocksFor(count), kBlockThreads, 0, stream>>>(
            g, dPre, weights, static_cast<I>(examplesPerMember), dIn, static_cast<I>(count));
    });
}

void launchImplicitConvWeightGrad(const SpatialGeometry& g, const float* in, int64_t inExamples,
                                  const float* dPre, int members, int64_t rows, int splits,
                                  float* partial, cudaStream_t stream) {
    const int64_t width = static_cast<int64_t>(g.inC) * g.kernel * g.kernel;
    const int64_t count = static_cast<int64_t>(members) * splits * g.outC * width;
    const int64_t extent =
        std::max({count, inExamples * inputSize(g), static_cast<int64_t>(members) * rows * g.outC});
    launchIndexed(extent, [&](auto index) {
        using I = decltype(index);
        implicitConvWeightGradKernel<I><<<blocksFor(count), kBlockThreads, 0, stream>>>(
            g, in, static_cast<I>(inExamples), dPre, static_cast<I>(rows), splits, partial,
            static_cast<I>(count));
    });
}

void launchFill(float* out, int64_t count, float value, cudaStream_t stream) {
    fillKernel<<<blocksFor(count), kBlockThreads, 0, stream>>>(out, value, count);
    ENSEMBLE_CUDA_CHECK_LAUNCH();
}

}  // namespace ensemble::gpu
