#pragma once

// Error checks for CUDA runtime and cuBLAS calls: a failure becomes ensemble::RuntimeError
// carrying the expression, file:line and the library's own error string. Host-side only
// (engine_cuda's .cpp and .cu files); public headers never include this.

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

namespace ensemble::gpu {

// Throw RuntimeError("<file>:<line>: <expr> failed: <name>: <description>"). The CUDA form
// first clears the runtime's last-error state (cudaGetLastError), so a non-sticky error does
// not resurface in an unrelated later call.
[[noreturn]] void throwCudaError(cudaError_t error, const char* expr, const char* file, int line);
[[noreturn]] void throwCublasError(cublasStatus_t status, const char* expr, const char* file,
                                   int line);

}  // namespace ensemble::gpu

#define ENSEMBLE_CUDA_CHECK(expr)                                                           \
    do {                                                                                    \
        const cudaError_t ensembleCudaError_ = (expr);                                      \
        if (ensembleCudaError_ != cudaSuccess) {                                            \
            ::ensemble::gpu::throwCudaError(ensembleCudaError_, #expr, __FILE__, __LINE__); \
        }                                                                                   \
    } while (0)

#define ENSEMBLE_CUBLAS_CHECK(expr)                                                              \
    do {                                                                                         \
        const cublasStatus_t ensembleCublasStatus_ = (expr);                                     \
        if (ensembleCublasStatus_ != CUBLAS_STATUS_SUCCESS) {                                    \
            ::ensemble::gpu::throwCublasError(ensembleCublasStatus_, #expr, __FILE__, __LINE__); \
        }                                                                                        \
    } while (0)

// After a kernel launch: reports launch-configuration errors at once (execution errors
// surface at the next synchronisation).
#define ENSEMBLE_CUDA_CHECK_LAUNCH() ENSEMBLE_CUDA_CHECK(cudaGetLastError())
