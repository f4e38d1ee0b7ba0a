// Read from the macros this file is built with: the engine's flags are the CPU backend's.
#include "backend/kernel_report.h"

#include <Eigen/Core>

#include "sys/cpu_identity.h"

namespace ensemble {

CpuKernels cpuKernels() {
    CpuKernels k;
#if defined(__AVX512F__)
    k.isa = "AVX-512";
#elif defined(__AVX2__) && defined(__FMA__)
    k.isa = "AVX2+FMA";
#elif defined(__AVX__)
    k.isa = "AVX";
#elif defined(__SSE4_2__)
    k.isa = "SSE4.2";
#elif defined(__SSE2__)
    k.isa = "SSE2";
#else
    k.isa = "generic";
#endif
    k.floatLanes = Eigen::internal::packet_traits<float>::size;
    k.vectorBits = 32 * k.floatLanes;
    k.gemm = "Eigen " + std::to_string(EIGEN_WORLD_VERSION) + "." +
             std::to_string(EIGEN_MAJOR_VERSION) + "." + std::to_string(EIGEN_MINOR_VERSION) +
             " GEMM (single-threaded per task, the engine's own blocking)";
    return k;
}

std::string CpuKernels::describe() const {
    return gemm + ", built for " + isa + ": " + std::to_string(floatLanes) + " floats (" +
           std::to_string(vectorBits) + " bits) a vector; this CPU offers " +
           std::to_string(cpuIdentity().vectorBits()) + " bits";
}

}  // namespace ensemble
