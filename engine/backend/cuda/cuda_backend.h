#pragma once

// The CUDA backend's public face: plain C++, no CUDA header, so the rest of the engine and
// the executables can use it without knowing CUDA. Implemented in cuda_backend.cpp,
// cuda_step.cpp and cuda_predict.cpp (target engine_cuda, built only when nvcc is found).

#include <memory>
#include <string>

#include "backend/backend.h"

namespace ensemble {

// Whether CUDA device `device` can be used; when not, `reason` carries the CUDA error string.
bool cudaDeviceUsable(int device, std::string& reason);

// The number of CUDA devices this process sees (0 when none, or no driver).
int cudaVisibleDevices();

// A backend on device `device`. Throws RuntimeError (with the CUDA error string) when the
// device cannot be used.
std::unique_ptr<Backend> makeCudaBackend(int device);

}  // namespace ensemble
