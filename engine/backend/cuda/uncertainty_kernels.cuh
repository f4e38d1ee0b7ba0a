#pragma once

// The live view's per-point measures on the device: every member's probabilities and the
// ensemble's uncertainty (math/uncertainty.h, the formulas the CPU metrics use).

#include <cuda_runtime_api.h>

#include <cstdint>

#include "math/uncertainty.h"

namespace ensemble::gpu {

// probs[j] = exp(logProbs[j]) computed in double and rounded to float (as the host metrics do),
// for j < count. One thread per entry.
void launchMemberProbabilities(const float* logProbs, int64_t count, float* probs,
                               cudaStream_t stream);

// For each of `rows` points, the measures over the members listed in members[0..memberCount)
// (indices into logProbs [K][rows][C]): the ensemble's probabilities to prob [rows][C] and the
// measures to points[rows]. One thread per point.
void launchPointUncertainty(const float* logProbs, int64_t rows, int classes,
                            const int32_t* members, int memberCount, double* prob,
                            PointUncertainty* points, cudaStream_t stream);

}  // namespace ensemble::gpu
