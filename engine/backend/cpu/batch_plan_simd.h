#pragma once

// Batch plans for the CPU backend, computed 16 slots at a time. The same rows and weights as
// planMember() and poissonCount() in sampling/batch_plan.h, bit for bit (tst_cpu_kernels
// checks it): the Feistel permutation, the cycle walking and Philox-4x32-10 run lane-wise in
// SIMD registers, and a step's (epoch, position) cursor is advanced instead of divided out per
// slot. The shared header stays the definition; this is only a faster way to evaluate it.

#include <cstdint>

#include "sampling/batch_plan.h"

namespace ensemble {

// planMember(params, member, step, rows, weights), vectorised.
void planMemberSimd(const BatchPlanParams& params, uint32_t member, uint64_t step, uint32_t* rows,
                    float* weights);

// weights[b] = poissonCount(seed, member, rows[b]) for b < count, vectorised.
void poissonWeightsSimd(uint64_t seed, uint32_t member, const uint32_t* rows, int count,
                        float* weights);

}  // namespace ensemble
