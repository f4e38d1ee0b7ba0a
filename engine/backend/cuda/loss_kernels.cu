#include "backend/cuda/cuda_check.h"
#include "backend/cuda/kernel_launch.cuh"
#include "backend/cuda/loss_kernels.cuh"

namespace ensemble::gpu {

namespace {

__global__ void softmaxCrossEntropyKernel(const float* logits, const int32_t* trainY,
                                          const int32_t* rows, const float* weights, int batch,
                                          int classes, float* dLogits, float* rowLoss,
                                          int64_t slotCount) {
    for (int64_t r = firstThread(); r < slotCount; r += threadStride()) {
        softmaxCrossEntropyElement(r, logits, trainY, rows, weights, batch, classes, dLogits,
                                   rowLoss);
    }
}

__global__ void regressionLossKernel(const float* outputs, const float* trainTargets,
                                     const int32_t* rows, const float* weights, int batch,
                                     int outputCount, Likelihood likelihood, float* dOutputs,
                                     float* rowLoss, int64_t slotCount) {
    for (int64_t r = firstThread(); r < slotCount; r += threadStride()) {
        regressionLossElement(r, outputs, trainTargets, rows, weights, batch, outputCount,
                              likelihood, dOutputs, rowLoss);
    }
}

__global__ void headPredictiveKernel(float* z, int outputCount, Likelihood likelihood,
                                     int64_t rows) {
    for (int64_t r = firstThread(); r < rows; r += threadStride()) {
        headPredictiveElement(r, z, outputCount, likelihood);
    }
}

__global__ void memberLossKernel(const float* rowLoss, const uint8_t* active, int batch,
                                 float* loss, int64_t members) {
    for (int64_t k = firstThread(); k < members; k += threadStride()) {
        memberLossElement(k, rowLoss, active, batch, loss);
    }
}

__global__ void adversarialLossKernel(const float* lossAdv, float* loss, int64_t members) {
    for (int64_t k = firstThread(); k < members; k += threadStride()) {
        adversarialLossElement(k, lossAdv, loss);
    }
}

__global__ void logSoftmaxKernel(float* z, int classes, int64_t rows) {
    for (int64_t r = firstThread(); r < rows; r += threadStride()) {
        logSoftmaxElement(r, z, classes);
    }
}

}  // namespace

void launchSoftmaxCrossEntropy(const float* logits, const int32_t* trainY, const int32_t* rows,
                               const float* weights, int members, int batch, int classes,
                               float* dLogits, float* rowLoss, int normaliser,
                               cudaStream_t stream) {
    const int64_t slotCount = static_cast<int64_t>(members) * batch;
    softmaxCrossEntropyKernel<<<blocksFor(slotCount), kBlockThreads, 0, stream>>>(
        logits, trainY, rows, weights, normaliser, classes, dLogits, rowLoss, slotCount);
    ENSEMBLE_CUDA_CHECK_LAUNCH();
}

void launchRegressionLoss(const float* outputs, const float* trainTargets, const int32_t* rows,
                          const float* weights, int members, int batch, int outputCount,
                          Likelihood likelihood, float* dOutputs, float* rowLoss, int normaliser,
                          cudaStream_t stream) {
    const int64_t slotCount = static_cast<int64_t>(members) * batch;
    regressionLossKernel<<<blocksFor(slotCount), kBlockThreads, 0, stream>>>(
        outputs, trainTargets, rows, weights, normaliser, outputCount, likelihood, dOutputs,
        rowLoss, slotCount);
    ENSEMBLE_CUDA_CHECK_LAUNCH();
}

void launchHeadPredictive(float* z, int64_t rows, int outputCount, Likelihood likelihood,
                          cudaStream_t stream) {
    headPredictiveKernel<<<blocksFor(rows), kBlockThreads, 0, stream>>>(z, outputCount, likelihood,
                                                                        rows);
    ENSEMBLE_CUDA_CHECK_LAUNCH();
}

void launchMemberLoss(const float* rowLoss, const uint8_t* active, int members, int batch,
                      float* loss, cudaStream_t stream) {
    memberLossKernel<<<blocksFor(members), kBlockThreads, 0, stream>>>(rowLoss, active, batch, loss,
                                                                       members);
    ENSEMBLE_CUDA_CHECK_LAUNCH();
}

void launchAdversarialLoss(const float* lossAdv, int members, float* loss, cudaStream_t stream) {
    adversarialLossKernel<<<blocksFor(members), kBlockThreads, 0, stream>>>(lossAdv, loss, members);
    ENSEMBLE_CUDA_CHECK_LAUNCH();
}

void launchLogSoftmax(float* z, int64_t rows, int classes, cudaStream_t stream) {
    logSoftmaxKernel<<<blocksFor(rows), kBlockThreads, 0, stream>>>(z, classes, rows);
    ENSEMBLE_CUDA_CHECK_LAUNCH();
}

}  // namespace ensemble::gpu
