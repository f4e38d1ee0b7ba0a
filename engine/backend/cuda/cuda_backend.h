#pragma once

// The CUDA backend's public face: plain C++, no CUDA header, so the rest of the engine and
// the executables can use it without knowing CUDA. Implemented in cuda_backend.cpp,
// cuda_step.cpp and cuda_predict.cpp (target engine_cuda, built only when nvcc is found).

#include <memory>
#include <string>

#include "backend/backend.h"
#include "config/config_schema.h"

namespace ensemble {

// Whether CUDA device `device` can be used; when not, `reason` carries the CUDA error string.
bool cudaDeviceUsable(int device, std::string& reason);

// The number of CUDA devices this process sees (0 when none, or no driver).
int cudaVisibleDevices();

// "<device name>, compute capability <major.minor>, driver <major.minor>": what the auto
// rule's calibration cache is keyed by. Precondition: cudaDeviceUsable(device).
std::string cudaDeviceSignature(int device);

// A backend on device `device` whose GEMMs multiply in `math` (backend.math: FP32, or TF32 on
// the tensor cores through cuBLAS's CUBLAS_TF32_TENSOR_OP_MATH). Throws RuntimeError (with the
// CUDA error string) when the device cannot be used.
std::unique_ptr<Backend> makeCudaBackend(int device, MathMode math = MathMode::Fp32);

}  // namespace ensemble
