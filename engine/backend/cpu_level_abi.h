#pragma once

// The one entry point of a CPU level object (libensemble_cpu_x86-64-vN.so, built by
// ENSEMBLE_ISA_DISPATCH from the CPU backend's sources at -march=x86-64-vN; docs/performance.md,
// "One binary, the best code for the CPU it runs on"). The object exports this function and
// nothing else: every Eigen and std:: instantiation inside it is local, so nothing compiled for
// one level is merged with or interposed by code of another. What crosses is the Backend
// interface (virtual calls) and the types it passes (TrainingProblem, OptimizerState,
// PointUncertainties): standard containers and plain structs, no Eigen object, so their layout
// does not depend on the level.

#include <cstdint>

#include "backend/backend.h"

namespace ensemble {

// Bumped whenever Backend's virtual functions or the types they pass change.
inline constexpr uint64_t kCpuLevelAbiVersion = 2;

// The interface as the compiling side sees it: an object built from another tree (a stale
// install) is refused by the loader, not called.
constexpr uint64_t cpuLevelAbi() {
    return kCpuLevelAbiVersion ^ (uint64_t{sizeof(TrainingProblem)} << 8) ^
           (uint64_t{sizeof(OptimizerState)} << 24) ^ (uint64_t{sizeof(PointUncertainties)} << 32) ^
           (uint64_t{sizeof(ParamLayout)} << 40) ^ (uint64_t{sizeof(OptimizerRule)} << 48) ^
           (uint64_t{sizeof(DataShard)} << 56);
}

}  // namespace ensemble

extern "C" {

struct EnsembleCpuLevel {
    uint64_t abi;      // cpuLevelAbi() as the object was built
    int level;         // 2, 3 or 4: its -march=x86-64-vN
    int floatLanes;    // floats in one of its Eigen packets
    const char* isa;   // "AVX-512", "AVX2+FMA", "SSE4.2"
    const char* gemm;  // its GEMM, as kernel_report.h describes one
    // A new CpuBackend with `threads` OpenMP threads (0: all cores) whose large products go
    // through `gemmLibrary` (an ensemble::GemmLibrary: the program's backend.gemm, which the
    // object then holds for every backend in it); deleted through Backend's virtual
    // destructor, which runs in the object.
    ensemble::Backend* (*create)(int threads, int gemmLibrary);
};

}  // extern "C"

// The name of the exported function, `const EnsembleCpuLevel* ensemble_cpu_level()`.
#define ENSEMBLE_CPU_LEVEL_ENTRY "ensemble_cpu_level"
