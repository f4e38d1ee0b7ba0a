#pragma once

// cuBLAS is opened on first use with dlopen, not linked. libcublas pulls in libcublasLt, whose
// relocations the dynamic loader writes at start-up: linked, every start of ensemble-cli and
// ensemble-lab paid about 200 MB of resident memory and 0.2 s for it, CPU runs and `--help`
// included. Now only a run that creates a CUDA backend loads it.

#include <cublas_v2.h>

#include <string>

namespace ensemble::gpu {

// The entry points the backend uses (the *_v2 names cublas_v2.h maps the plain ones to).
struct CublasApi {
    decltype(&cublasCreate_v2) create = nullptr;
    decltype(&cublasDestroy_v2) destroy = nullptr;
    decltype(&cublasSetStream_v2) setStream = nullptr;
    decltype(&cublasSetWorkspace_v2) setWorkspace = nullptr;
    decltype(&cublasSetMathMode) setMathMode = nullptr;
    decltype(&cublasSgemmStridedBatched) sgemmStridedBatched = nullptr;
    decltype(&cublasGetStatusName) statusName = nullptr;
    decltype(&cublasGetStatusString) statusString = nullptr;
};

// Loads cuBLAS once (thread-safe) and returns its entry points: libcublas.so.<major of the
// headers built against> from the library search path, else from the folder libcudart was
// loaded from (the toolkit keeps them together). Throws RuntimeError naming what it tried and
// dlerror()'s reason when the library or a symbol is missing.
const CublasApi& cublas();

// Whether cuBLAS is loaded in this process (without loading it).
bool cublasLoaded();

}  // namespace ensemble::gpu
