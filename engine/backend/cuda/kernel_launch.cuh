#pragma once

// Launch helpers shared by the kernel families (.cu files only). Every kernel is a
// grid-stride loop over its elements, so the grid may be capped without losing any.

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

namespace ensemble::gpu {

constexpr int kBlockThreads = 256;
// 2^20 blocks of 256 threads: far more than any GPU runs at once; larger n loops.
constexpr int64_t kMaxBlocks = int64_t{1} << 20;

// Blocks for n elements (at least 1; the kernel checks i < n).
inline unsigned blocksFor(int64_t n) {
    const int64_t blocks = (n + kBlockThreads - 1) / kBlockThreads;
    return static_cast<unsigned>(std::clamp<int64_t>(blocks, 1, kMaxBlocks));
}

__device__ inline int64_t firstThread() {
    return static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
}

__device__ inline int64_t threadStride() {
    return static_cast<int64_t>(gridDim.x) * blockDim.x;
}

}  // namespace ensemble::gpu
