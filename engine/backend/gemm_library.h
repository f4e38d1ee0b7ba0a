#pragma once

// Which library computes the CPU backend's large products (backend/cpu/gemm.h: the MNIST MLP's
// layers, the CNN's im2col convolutions): Eigen's GEMM, built for the engine's ISA level, or
// OpenBLAS's cblas_sgemm, whose DYNAMIC_ARCH build picks its kernels (AVX2, AVX-512) by the
// CPU it runs on. Both run single-threaded inside the engine's own OpenMP tasks, so a result
// depends on the operands' sizes and the library, never on a thread count.
//
// The choice is process-wide (one run trains at a time; makeBackend sets it from
// backend.gemm). A build with level objects (backend/cpu_dispatch.h) holds one choice in the
// program and one in the loaded object (backend/cpu/gemm_openblas.cpp is one of the CPU
// backend's sources); the program hands its choice to the object with each backend it makes
// there. ENSEMBLE_GEMM=eigen|openblas|auto overrides the config, for tests and for
// bit-for-bit comparisons. OpenBLAS is linked only when CMake found it (ENSEMBLE_HAVE_OPENBLAS);
// a request for it otherwise falls back to Eigen with a note.

#include <cstdint>
#include <string>

#include "config/config_schema.h"

namespace ensemble {

enum class GemmLibrary { Eigen, OpenBlas };

// "eigen" or "openblas".
std::string gemmLibraryKey(GemmLibrary library);

// Whether this build links OpenBLAS.
bool openblasBuilt();
// Why OpenBLAS cannot compute the products here (no OpenBLAS in the build, or its OpenMP build
// beside an engine built on another OpenMP runtime); empty when it can.
std::string openblasUnusableReason();

struct GemmResolution {
    GemmLibrary library = GemmLibrary::Eigen;
    std::string request;  // what was asked: "auto", "eigen", "openblas" (ENSEMBLE_GEMM's if set)
    std::string reason;   // one sentence: why this library
    std::string note;     // non-empty when a request could not be honoured (print it once)
};

// The library `requested` (backend.gemm) resolves to on this build and CPU; ENSEMBLE_GEMM,
// when set to a valid value, takes its place. `auto`: OpenBLAS when the Eigen packets of the
// CPU backend that runs (engineFloatLanes floats: the dispatched level's, or the engine's own)
// are narrower than the CPU's vectors (a baseline x86-64 build without level objects on an AVX2
// or AVX-512 CPU, or a level pinned below the CPU's), Eigen otherwise (docs/performance.md has
// the figures behind the rule).
GemmResolution resolveGemm(GemmChoice requested, int engineFloatLanes);
// resolveGemm(auto) for the level a CPU backend made now runs at (chooseCpuLevel("auto")).
GemmLibrary defaultGemmLibrary();

// The process-wide library gemm.h uses. Until set: in the program, defaultGemmLibrary(); in a
// level object, Eigen.
GemmLibrary gemmLibrary();
void useGemmLibrary(GemmLibrary library);  // OpenBlas requires openblasUnusableReason() empty

// OpenBLAS's own report: "OpenBLAS 0.3.21 DYNAMIC_ARCH NO_AFFINITY SkylakeX MAX_THREADS=64;
// core SkylakeX, OpenMP build (/usr/lib/x86_64-linux-gnu/openblas-openmp/libopenblas.so.0)"
// (openblas_get_config, openblas_get_corename, openblas_get_parallel, the file loaded); empty
// when not built.
std::string openblasReport();
// The shared object cblas_sgemm was loaded from (Debian's alternatives, or LD_LIBRARY_PATH);
// empty when not built or unknown.
std::string openblasLibraryFile();
// The threads one of openblasGemm's calls runs on, as OpenBLAS reads them: 1 once the library
// was chosen (0 when not built). The pthread build's openblas_get_num_threads(); the OpenMP
// build's omp_get_max_threads() as it stands during a call.
int openblasThreads();

namespace cpu {

// res (rows x cols, row-major, stride resStride) = beta * res + lhs * rhs with OpenBLAS, one
// thread; lhsRowMajor / rhsRowMajor say how the operands are stored, with their outer strides
// (gemm.h's convention). Precondition: openblasBuilt().
void openblasGemm(bool lhsRowMajor, bool rhsRowMajor, std::int64_t rows, std::int64_t cols,
                  std::int64_t depth, const float* lhs, std::int64_t lhsStride, const float* rhs,
                  std::int64_t rhsStride, float* res, std::int64_t resStride, float beta);

}  // namespace cpu

}  // namespace ensemble
