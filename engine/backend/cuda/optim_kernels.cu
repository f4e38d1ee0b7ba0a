#include "backend/cuda/cuda_check.h"
#include "backend/cuda/kernel_launch.cuh"
#include "backend/cuda/optim_kernels.cuh"

namespace ensemble::gpu {

namespace {

__global__ void prepareRulesKernel(const OptimizerRule* base, OptimizerRule* rules, int64_t members,
                                   const DeviceStepState* state) {
    const DeviceStepState s = *state;
    for (int64_t k = firstThread(); k < members; k += threadStride()) {
        prepareRuleElement(k, base, rules, s);
    }
}

__global__ void applyUpdatesKernel(float* params, const float* grad, float* moment1, float* moment2,
                                   const ParamSegment* segments, int segmentCount,
                                   const OptimizerRule* rules, const uint8_t* active,
                                   const float* loss, const DeviceStepState* state, int64_t total) {
    const DeviceStepState s = *state;
    for (int64_t i = firstThread(); i < total; i += threadStride()) {
        updateElement(i, params, grad, moment1, moment2, segments, segmentCount, rules, active,
                      loss, s);
    }
}

__global__ void advanceStateKernel(DeviceStepState* state) {
    if (firstThread() == 0) {
        advanceStateElement(*state);
    }
}

}  // namespace

void launchPrepareRules(const OptimizerRule* base, OptimizerRule* rules, int members,
                        const DeviceStepState* state, cudaStream_t stream) {
    prepareRulesKernel<<<blocksFor(members), kBlockThreads, 0, stream>>>(base, rules, members,
                                                                         state);
    ENSEMBLE_CUDA_CHECK_LAUNCH();
}

void launchApplyUpdates(float* params, const float* grad, float* moment1, float* moment2,
                        const ParamSegment* segments, int segmentCount, const OptimizerRule* rules,
                        const uint8_t* active, const float* loss, const DeviceStepState* state,
                        int64_t total, cudaStream_t stream) {
    applyUpdatesKernel<<<blocksFor(total), kBlockThreads, 0, stream>>>(
        params, grad, moment1, moment2, segments, segmentCount, rules, active, loss, state, total);
    ENSEMBLE_CUDA_CHECK_LAUNCH();
}

void launchAdvanceState(DeviceStepState* state, cudaStream_t stream) {
    advanceStateKernel<<<1, 1, 0, stream>>>(state);
    ENSEMBLE_CUDA_CHECK_LAUNCH();
}

}  // namespace ensemble::gpu
