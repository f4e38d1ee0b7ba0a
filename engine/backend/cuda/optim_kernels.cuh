#pragma once

// The optimizer over all members in one launch, plus the two tiny kernels around it that keep
// the step's counters on the device. Bodies in step_elements.h.

#include <cuda_runtime_api.h>

#include <cstdint>

#include "backend/cuda/step_elements.h"

namespace ensemble::gpu {

// rules[k] = base[k] after prepareStep for update t = state->updates + 1. One thread per member.
void launchPrepareRules(const OptimizerRule* base, OptimizerRule* rules, int members,
                        const DeviceStepState* state, cudaStream_t stream);

// applyUpdate on every parameter of the stacked buffer (`total` = layout.size()), skipping
// members with active[k] == 0 or a non-finite loss[k]. One thread per parameter.
void launchApplyUpdates(float* params, const float* grad, float* moment1, float* moment2,
                        const ParamSegment* segments, int segmentCount, const OptimizerRule* rules,
                        const uint8_t* active, const float* loss, const DeviceStepState* state,
                        int64_t total, cudaStream_t stream);

// ++state->step, ++state->updates: the last node of the step graph.
void launchAdvanceState(DeviceStepState* state, cudaStream_t stream);

}  // namespace ensemble::gpu
