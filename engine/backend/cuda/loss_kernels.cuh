#pragma once

// Weighted softmax cross-entropy (per slot, then per member in a fixed order) and the
// log-softmax of prediction. Bodies in step_elements.h.

#include <cuda_runtime_api.h>

#include <cstdint>

#include "backend/cuda/step_elements.h"

namespace ensemble::gpu {

// Per slot r = k * n + j: rowLoss[r] and dLogits[r][:] from logits [K][n][C], the label
// trainY[rows[r]] and weight weights[r], scaled by 1 / normaliser (the whole batch's size).
// One thread per slot.
void launchSoftmaxCrossEntropy(const float* logits, const int32_t* trainY, const int32_t* rows,
                               const float* weights, int members, int batch, int classes,
                               float* dLogits, float* rowLoss, int normaliser, cudaStream_t stream);

// Per slot r: a regression head's rowLoss[r] and dOutputs[r][:] (regressionLossElement).
void launchRegressionLoss(const float* outputs, const float* trainTargets, const int32_t* rows,
                          const float* weights, int members, int batch, int outputCount,
                          Likelihood likelihood, float* dOutputs, float* rowLoss, int normaliser,
                          cudaStream_t stream);

// z [rows][O]: a regression head's predictive in place (headPredictiveElement).
void launchHeadPredictive(float* z, int64_t rows, int outputCount, Likelihood likelihood,
                          cudaStream_t stream);

// loss[k] = sum_b rowLoss[k][b] in b order (0 for inactive members). One thread per member:
// the same order as the CPU's sum, no atomics, so the result never depends on scheduling.
void launchMemberLoss(const float* rowLoss, const uint8_t* active, int members, int batch,
                      float* loss, cudaStream_t stream);

// z [rows][C] -= logsumexp per row, in place. One thread per row.
// Adversarial training, per member: loss[k] = lossAdv[k] when that is not finite.
void launchAdversarialLoss(const float* lossAdv, int members, float* loss, cudaStream_t stream);

void launchLogSoftmax(float* z, int64_t rows, int classes, cudaStream_t stream);

}  // namespace ensemble::gpu
