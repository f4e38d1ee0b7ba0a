#pragma once

// What the CPU backend computes with, for people reading a speed figure (ensemble-cli bench,
// the About box): the vector instruction set its kernels were built for, how wide Eigen's
// float packets are, and the GEMM behind its large products (backend.gemm: Eigen or OpenBLAS,
// with OpenBLAS's own report of the kernel it picked). With ENSEMBLE_ISA_DISPATCH the kernels
// are chosen at run time by the CPU's x86-64 level (backend/cpu_dispatch.h): this is the one
// place that says which.

#include <string>

namespace ensemble {

struct CpuKernels {
    std::string isa;          // "AVX-512", "AVX2+FMA", "AVX", "SSE4.2", "SSE2", or "generic"
    int vectorBits = 0;       // the width of one of Eigen's float packets, in bits
    int floatLanes = 0;       // floats in that packet
    std::string gemm;         // "Eigen 3.4.0 GEMM (single-threaded, the engine's own blocking)"
                              // or "OpenBLAS sgemm (single-threaded per task; <openblas>)"
    std::string gemmLibrary;  // backend.gemm resolved: "eigen" or "openblas"
    std::string openblas;     // OpenBLAS's config, core and build; empty when not linked
    std::string level;        // the x86-64 level its code is built for: "x86-64-v3"
    std::string object;       // the level object it runs from; empty: built into the program
    std::string note;         // why it is not the level asked for, when it is not
    // "GEMM eigen: Eigen 3.4.0 GEMM (single-threaded, ...), built for AVX-512 (x86-64-v4,
    // dispatched): 16 floats (512 bits) a vector; this CPU offers 512[; OpenBLAS available
    // (backend.gemm=openblas): ...]"
    std::string describe() const;
};

// The CPU backend's kernels in this program: what a CPU backend made now with
// backend.cpu_isa `pin` runs (ENSEMBLE_CPU_ISA pins "auto"), with the GEMM library in use
// (gemmLibrary()). Throws ConfigError as
// chooseCpuLevel does.
CpuKernels cpuKernels(const std::string& pin = "auto");

}  // namespace ensemble
