#pragma once

// What the CPU backend computes with, for people reading a speed figure (ensemble-cli bench,
// the About box): the vector instruction set its kernels were built for, how wide Eigen's
// float packets are, and the GEMM behind its large products. Today the whole engine is built
// for one level (ENSEMBLE_NATIVE's -march, or baseline x86-64 in the package); where kernels
// are chosen at run time by the CPU's features, this is the one place that says which.

#include <string>

namespace ensemble {

struct CpuKernels {
    std::string isa;     // "AVX-512", "AVX2+FMA", "AVX", "SSE4.2", "SSE2", or "generic"
    int vectorBits = 0;  // the width of one of Eigen's float packets, in bits
    int floatLanes = 0;  // floats in that packet
    std::string gemm;    // "Eigen 3.4.0 (single-threaded, the engine's own blocking)"
    // "Eigen 3.4.0 GEMM (single-threaded, ...), built for AVX-512: 16 floats (512 bits) a
    // vector; this CPU offers 512"
    std::string describe() const;
};

// The CPU backend's kernels in this program.
CpuKernels cpuKernels();

}  // namespace ensemble
