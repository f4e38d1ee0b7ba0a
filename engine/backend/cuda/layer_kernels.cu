#include <limits>

#include "backend/cuda/cuda_check.h"
#include "backend/cuda/kernel_launch.cuh"
#include "backend/cuda/layer_kernels.cuh"

namespace ensemble::gpu {

namespace {

template <class I>
__global__ void biasActivateKernel(float* z, float* post, const float* bias, int rows, int out,
                                   Activation act, I count) {
    for (I i = static_cast<I>(firstThread()); i < count; i += static_cast<I>(threadStride())) {
        biasActivateElement(i, z, post, bias, rows, out, act);
    }
}

__global__ void activationBackwardKernel(float* delta, const float* pre, const float* post,
                                         int64_t count, Activation act) {
    for (int64_t i = firstThread(); i < count; i += threadStride()) {
        activationBackwardElement(i, delta, pre, post, act);
    }
}

__global__ void biasGradientKernel(const float* delta, float* gradBias, int rows, int out,
                                   bool accumulate, int64_t count) {
    for (int64_t j = firstThread(); j < count; j += threadStride()) {
        biasGradientElement(j, delta, gradBias, rows, out, accumulate);
    }
}

__global__ void dropoutMaskKernel(DropoutStep key, const DeviceStepState* state, int rows,
                                  int units, int layer, int64_t count, float* mask) {
    const uint64_t step = state->step;
    for (int64_t j = firstThread(); j < count; j += threadStride()) {
        dropoutMaskElement(j, key, step, rows, units, layer, mask);
    }
}

template <class I>
__global__ void dropoutApplyKernel(float* post, const float* mask, I plane, int units, I count) {
    for (I i = static_cast<I>(firstThread()); i < count; i += static_cast<I>(threadStride())) {
        dropoutApplyElement(i, post, mask, plane, units);
    }
}

template <class I>
__global__ void dropoutBackwardKernel(float* delta, const float* pre, const float* mask, I plane,
                                      int units, Activation act, I count) {
    for (I i = static_cast<I>(firstThread()); i < count; i += static_cast<I>(threadStride())) {
        dropoutBackwardElement(i, delta, pre, mask, plane, units, act);
    }
}

__global__ void dropoutLayerMaskKernel(DropoutStep key, const DeviceStepState* state, int rows,
                                       int channels, int plane, int layer, float rate,
                                       int64_t count, float* mask) {
    const uint64_t step = state->step;
    for (int64_t j = firstThread(); j < count; j += threadStride()) {
        dropoutLayerMaskElement(j, key, step, rows, channels, plane, layer, rate, mask);
    }
}

template <class I>
__global__ void maskMultiplyKernel(const float* x, const float* mask, float* out, I count) {
    for (I i = static_cast<I>(firstThread()); i < count; i += static_cast<I>(threadStride())) {
        maskMultiplyElement(i, x, mask, out);
    }
}

// Whether a grid-stride loop over `count` elements may index in 32 bits (i + the grid stride
// cannot wrap): 64-bit division is a long instruction sequence on the GPU.
bool fitsInt32(int64_t count) {
    return count <= std::numeric_limits<int32_t>::max() - kMaxBlocks * kBlockThreads;
}

}  // namespace

void launchDropoutMask(const DropoutStep& key, const DeviceStepState* state, int members, int rows,
                       int units, int layer, float* mask, cudaStream_t stream) {
    const int64_t count = static_cast<int64_t>(members) * rows * ((units + 3) / 4);
    dropoutMaskKernel<<<blocksFor(count), kBlockThreads, 0, stream>>>(key, state, rows, units,
                                                                      layer, count, mask);
    ENSEMBLE_CUDA_CHECK_LAUNCH();
}

void launchDropoutApply(float* post, const float* mask, int64_t count, int64_t plane, int units,
                        cudaStream_t stream) {
    if (fitsInt32(count)) {
        dropoutApplyKernel<int32_t><<<blocksFor(count), kBlockThreads, 0, stream>>>(
            post, mask, static_cast<int32_t>(plane), units, static_cast<int32_t>(count));
    } else {
        dropoutApplyKernel<int64_t>
            <<<blocksFor(count), kBlockThreads, 0, stream>>>(post, mask, plane, units, count);
    }
    ENSEMBLE_CUDA_CHECK_LAUNCH();
}

void launchDropoutBackward(float* delta, const float* pre, const float* mask, int64_t count,
                           int64_t plane, int units, Activation act, cudaStream_t stream) {
    if (fitsInt32(count)) {
        dropoutBackwardKernel<int32_t><<<blocksFor(count), kBlockThreads, 0, stream>>>(
            delta, pre, mask, static_cast<int32_t>(plane), units, act, static_cast<int32_t>(count));
    } else {
        dropoutBackwardKernel<int64_t><<<blocksFor(count), kBlockThreads, 0, stream>>>(
            delta, pre, mask, plane, units, act, count);
    }
    ENSEMBLE_CUDA_CHECK_LAUNCH();
}

void launchDropoutLayerMask(const DropoutStep& key, const DeviceStepState* state, int members,
                            int rows, int channels, int plane, int layer, float rate, float* mask,
                            cudaStream_t stream) {
    const int64_t count = static_cast<int64_t>(members) * rows * ((channels * plane + 3) / 4);
    dropoutLayerMaskKernel<<<blocksFor(count), kBlockThreads, 0, stream>>>(
        key, state, rows, channels, plane, layer, rate, count, mask);
    ENSEMBLE_CUDA_CHECK_LAUNCH();
}

void launchMaskMultiply(const float* x, const float* mask, int64_t count, float* out,
                        cudaStream_t stream) {
    if (fitsInt32(count)) {
        maskMultiplyKernel<int32_t><<<blocksFor(count), kBlockThreads, 0, stream>>>(
            x, mask, out, static_cast<int32_t>(count));
    } else {
        maskMultiplyKernel<int64_t>
            <<<blocksFor(count), kBlockThreads, 0, stream>>>(x, mask, out, count);
    }
    ENSEMBLE_CUDA_CHECK_LAUNCH();
}

void launchBiasActivate(float* z, float* post, const float* bias, int members, int rows, int out,
                        Activation act, cudaStream_t stream) {
    const int64_t count = static_cast<int64_t>(members) * rows * out;
    // 32-bit index arithmetic where i + the grid stride cannot wrap: a CNN's conv outputs are
    // tens of millions of elements, and 64-bit division dominated this kernel on the GPU.
    if (count <= std::numeric_limits<int32_t>::max() - kMaxBlocks * kBlockThreads) {
        biasActivateKernel<int32_t><<<blocksFor(count), kBlockThreads, 0, stream>>>(
            z, post, bias, rows, out, act, static_cast<int32_t>(count));
    } else {
        biasActivateKernel<int64_t>
            <<<blocksFor(count), kBlockThreads, 0, stream>>>(z, post, bias, rows, out, act, count);
    }
    ENSEMBLE_CUDA_CHECK_LAUNCH();
}

void launchActivationBackward(float* delta, const float* pre, const float* post, int64_t count,
                              Activation act, cudaStream_t stream) {
    activationBackwardKernel<<<blocksFor(count), kBlockThreads, 0, stream>>>(delta, pre, post,
                                                                             count, act);
    ENSEMBLE_CUDA_CHECK_LAUNCH();
}

void launchBiasGradient(const float* delta, float* gradBias, int members, int rows, int out,
                        bool accumulate, cudaStream_t stream) {
    // Adjacent threads own adjacent o, so each step of the row loop reads a coalesced run of
    // one delta row.
    const int64_t count = static_cast<int64_t>(members) * out;
    biasGradientKernel<<<blocksFor(count), kBlockThreads, 0, stream>>>(delta, gradBias, rows, out,
                                                                       accumulate, count);
    ENSEMBLE_CUDA_CHECK_LAUNCH();
}

}  // namespace ensemble::gpu
