#include "backend/cuda/cuda_check.h"

#include <string>

#include "backend/cuda/cublas_loader.h"
#include "core/errors.h"

namespace ensemble::gpu {

void throwCudaError(cudaError_t error, const char* expr, const char* file, int line) {
    (void)cudaGetLastError();
    throw RuntimeError(std::string(file) + ":" + std::to_string(line) + ": " + expr +
                       " failed: " + cudaGetErrorName(error) + ": " + cudaGetErrorString(error));
}

void throwCublasError(cublasStatus_t status, const char* expr, const char* file, int line) {
    throw RuntimeError(std::string(file) + ":" + std::to_string(line) + ": " + expr + " failed: " +
                       cublas().statusName(status) + ": " + cublas().statusString(status));
}

}  // namespace ensemble::gpu
