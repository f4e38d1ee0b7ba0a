#include "backend/cuda/cuda_check.h"
#include "backend/cuda/kernel_launch.cuh"
#include "backend/cuda/uncertainty_kernels.cuh"

namespace ensemble::gpu {

namespace {

__global__ void memberProbabilitiesKernel(const float* logProbs, float* probs, int64_t count) {
    for (int64_t j = firstThread(); j < count; j += threadStride()) {
        probs[j] = static_cast<float>(hd::exp(static_cast<double>(logProbs[j])));
    }
}

__global__ void pointUncertaintyKernel(const float* logProbs, int64_t rows, int classes,
                                       const int32_t* members, int memberCount, double* prob,
                                       PointUncertainty* points) {
    for (int64_t i = firstThread(); i < rows; i += threadStride()) {
        const auto logProb = [=](int u, int c) {
            return logProbs[(static_cast<int64_t>(members[u]) * rows + i) * classes + c];
        };
        // Nothing is stored per member (no scratch of K x C per thread): the second pass
        // recomputes the one exp it needs per member, which gives the same double.
        const auto keep = [](int, int, double) {};
        const auto again = [=](int u, int c) {
            return hd::exp(static_cast<double>(logProb(u, c)));
        };
        points[i] =
            pointUncertainty(memberCount, classes, logProb, keep, again, prob + i * classes);
    }
}

}  // namespace

void launchMemberProbabilities(const float* logProbs, int64_t count, float* probs,
                               cudaStream_t stream) {
    memberProbabilitiesKernel<<<blocksFor(count), kBlockThreads, 0, stream>>>(logProbs, probs,
                                                                              count);
    ENSEMBLE_CUDA_CHECK_LAUNCH();
}

void launchPointUncertainty(const float* logProbs, int64_t rows, int classes,
                            const int32_t* members, int memberCount, double* prob,
                            PointUncertainty* points, cudaStream_t stream) {
    pointUncertaintyKernel<<<blocksFor(rows), kBlockThreads, 0, stream>>>(
        logProbs, rows, classes, members, memberCount, prob, points);
    ENSEMBLE_CUDA_CHECK_LAUNCH();
}

}  // namespace ensemble::gpu
