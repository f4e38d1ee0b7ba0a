#include "backend/cuda/batch_kernels.cuh"
#include "backend/cuda/cuda_check.h"
#include "backend/cuda/kernel_launch.cuh"

namespace ensemble::gpu {

namespace {

__global__ void planBatchKernel(BatchPlanParams plan, int64_t slotCount,
                                const DeviceStepState* state, int32_t* rows, float* weights,
                                uint32_t first, uint32_t n) {
    const uint64_t step = state->step;
    for (int64_t i = firstThread(); i < slotCount; i += threadStride()) {
        planSlotElement(i, plan, step, rows, weights, first, n);
    }
}

__global__ void gatherRowsKernel(const float* trainX, int features, const int32_t* rows,
                                 int64_t count, float* x) {
    for (int64_t i = firstThread(); i < count; i += threadStride()) {
        gatherElement(i, trainX, features, rows, x);
    }
}

__global__ void adversarialInputsKernel(const float* x, bool shared, int batch, int features,
                                        float eps, int64_t count, float* xAdv) {
    for (int64_t i = firstThread(); i < count; i += threadStride()) {
        adversarialInputElement(i, x, shared, batch, features, eps, xAdv);
    }
}

}  // namespace

void launchAdversarialInputs(const float* x, bool shared, int members, int batch, int features,
                             float eps, float* xAdv, cudaStream_t stream) {
    const int64_t count = static_cast<int64_t>(members) * batch * features;
    adversarialInputsKernel<<<blocksFor(count), kBlockThreads, 0, stream>>>(
        x, shared, batch, features, eps, count, xAdv);
    ENSEMBLE_CUDA_CHECK_LAUNCH();
}

void launchPlanBatch(const BatchPlanParams& plan, int members, const DeviceStepState* state,
                     int32_t* rows, float* weights, uint32_t first, uint32_t n,
                     cudaStream_t stream) {
    const int64_t slotCount = static_cast<int64_t>(members) * n;
    planBatchKernel<<<blocksFor(slotCount), kBlockThreads, 0, stream>>>(plan, slotCount, state,
                                                                        rows, weights, first, n);
    ENSEMBLE_CUDA_CHECK_LAUNCH();
}

void launchGatherRows(const float* trainX, int features, const int32_t* rows, int64_t slotCount,
                      float* x, cudaStream_t stream) {
    const int64_t count = slotCount * features;
    gatherRowsKernel<<<blocksFor(count), kBlockThreads, 0, stream>>>(trainX, features, rows, count,
                                                                     x);
    ENSEMBLE_CUDA_CHECK_LAUNCH();
}

bool kernelsRunnable(std::string& reason) {
    cudaFuncAttributes attributes{};
    const cudaError_t error = cudaFuncGetAttributes(&attributes, planBatchKernel);
    if (error != cudaSuccess) {
        reason = std::string("the CUDA backend's kernels cannot run on this device: ") +
                 cudaGetErrorString(error);
        (void)cudaGetLastError();
        return false;
    }
    return true;
}

}  // namespace ensemble::gpu
