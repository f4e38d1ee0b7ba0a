#pragma once

// Owning buffers for device memory (cudaMalloc) and page-locked host memory (cudaMallocHost).
// Move-only: copying device memory must be explicit (a cudaMemcpy at the call site), never an
// accident of passing a buffer by value.

#include <cuda_runtime_api.h>

#include <cstddef>
#include <utility>

#include "backend/cuda/cuda_check.h"

namespace ensemble::gpu {

namespace detail {
struct DeviceAllocator {
    static void* allocate(std::size_t bytes) {
        void* p = nullptr;
        ENSEMBLE_CUDA_CHECK(cudaMalloc(&p, bytes));
        return p;
    }
    static void release(void* p) noexcept { (void)cudaFree(p); }
};
struct PinnedAllocator {
    static void* allocate(std::size_t bytes) {
        void* p = nullptr;
        ENSEMBLE_CUDA_CHECK(cudaMallocHost(&p, bytes));
        return p;
    }
    static void release(void* p) noexcept { (void)cudaFreeHost(p); }
};
}  // namespace detail

template <typename T, typename Allocator>
class CudaBuffer {
  public:
    CudaBuffer() = default;
    // `count` elements, uninitialised. Throws RuntimeError when the allocation fails.
    explicit CudaBuffer(std::size_t count) : m_count(count) {
        if (count > 0) {
            m_data = static_cast<T*>(Allocator::allocate(count * sizeof(T)));
        }
    }
    ~CudaBuffer() { reset(); }

    CudaBuffer(const CudaBuffer&) = delete;
    CudaBuffer& operator=(const CudaBuffer&) = delete;
    CudaBuffer(CudaBuffer&& other) noexcept
        : m_data(std::exchange(other.m_data, nullptr)), m_count(std::exchange(other.m_count, 0)) {}
    CudaBuffer& operator=(CudaBuffer&& other) noexcept {
        if (this != &other) {
            reset();
            m_data = std::exchange(other.m_data, nullptr);
            m_count = std::exchange(other.m_count, 0);
        }
        return *this;
    }

    // Frees the memory (errors from the free are ignored: this runs in destructors).
    void reset() noexcept {
        if (m_data != nullptr) {
            Allocator::release(m_data);
        }
        m_data = nullptr;
        m_count = 0;
    }

    T* data() { return m_data; }
    const T* data() const { return m_data; }
    std::size_t size() const { return m_count; }
    std::size_t bytes() const { return m_count * sizeof(T); }
    bool empty() const { return m_count == 0; }

  private:
    T* m_data = nullptr;
    std::size_t m_count = 0;
};

// Device memory (cudaMalloc); freeing synchronises the device, as cudaFree does.
template <typename T>
using DeviceBuffer = CudaBuffer<T, detail::DeviceAllocator>;

// Page-locked host memory: the only host memory an async copy overlaps with, and the only
// kind a copy inside a captured graph may use.
template <typename T>
using PinnedBuffer = CudaBuffer<T, detail::PinnedAllocator>;

}  // namespace ensemble::gpu
