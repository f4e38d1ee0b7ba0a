#pragma once

// The fast path's padding and its choice between its own kernels and Eigen's GEMM, shared by
// the passes (fast_mlp.cpp) and the workspace that sizes their buffers (fast_workspace.cpp).
// Include only from translation units built with the engine's flags (-march=native): the
// padding follows the SIMD width.

#include <cstddef>

#include "backend/cpu/simd_lanes.h"

namespace ensemble::fast {

using simd::kLanes;

// Layers with more multiply-adds than this per product go to Eigen's GEMM: its packing pays
// off there, while below it the per-call overhead (blocking, packing, zeroing) dominates.
inline constexpr std::size_t kEigenMacs = std::size_t{1} << 20;

inline int padded(int n) {
    return (n + kLanes - 1) / kLanes * kLanes;
}

// Whether dW is cheaper as (A^T dZ)^T, vectorised along the outputs: when padding the inputs
// to whole vectors would waste more than half of the lanes that padding the outputs would.
inline bool transposedWeightGradient(int in, int out) {
    return 2 * static_cast<long>(in) * padded(out) <= static_cast<long>(out) * padded(in);
}

inline bool useEigen(int in, int out, int batch) {
    return static_cast<std::size_t>(in) * static_cast<std::size_t>(out) *
               static_cast<std::size_t>(batch) >
           kEigenMacs;
}

}  // namespace ensemble::fast
