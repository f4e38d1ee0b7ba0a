#pragma once

// Batch plan and gather: which rows every member reads this step, and copying them out of the
// resident train set. Bodies in step_elements.h (planSlotElement, gatherElement).

#include <cuda_runtime_api.h>

#include <cstdint>
#include <string>

#include "backend/cuda/step_elements.h"

namespace ensemble::gpu {

// rows, weights [K][n] for the step index in state->step (read on the device, so a captured
// graph sees the current value): each member's batch rows [first, first + n) (the whole batch:
// 0, B). One thread per slot (k, j).
// Preconditions: plan.batch > 0, plan.rows > 0, members > 0, first + n <= plan.batch.
void launchPlanBatch(const BatchPlanParams& plan, int members, const DeviceStepState* state,
                     int32_t* rows, float* weights, uint32_t first, uint32_t n,
                     cudaStream_t stream);

// x[s][c] = trainX[rows[s]][c] for s < slotCount (slotCount = G * B). One thread per element of x.
// Preconditions: features > 0, every rows[s] a valid train row.
void launchGatherRows(const float* trainX, int features, const int32_t* rows, int64_t slotCount,
                      float* x, cudaStream_t stream);

// Adversarial training: xAdv [K][B][D] holds dLoss/dX and becomes member k's inputs moved by
// eps * sign(dX), from x [G][B][D] (G = 1 when `shared`). One thread per element of xAdv.
void launchAdversarialInputs(const float* x, bool shared, int members, int batch, int features,
                             float eps, float* xAdv, cudaStream_t stream);

// Whether this binary holds code the current device can run (sm_80/sm_90 SASS, PTX 90);
// false with the CUDA error string in `reason` otherwise. Clears the error it provokes.
bool kernelsRunnable(std::string& reason);

}  // namespace ensemble::gpu
