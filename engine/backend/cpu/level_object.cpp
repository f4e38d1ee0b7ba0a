// The entry point of a CPU level object (cpu_level_abi.h): compiled only into
// libensemble_cpu_x86-64-vN.so, with the CPU backend's sources at -march=x86-64-vN, hidden
// visibility and a version script that exports ensemble_cpu_level() alone.

#include <string>

#include "backend/compiled_isa.h"
#include "backend/cpu/cpu_backend.h"
#include "backend/cpu_level_abi.h"
#include "backend/gemm_library.h"

#if !defined(ENSEMBLE_CPU_LEVEL)
#error "level_object.cpp is built only into the CPU level objects (ENSEMBLE_ISA_DISPATCH)"
#endif

static_assert(ENSEMBLE_CPU_LEVEL >= 2 && ENSEMBLE_CPU_LEVEL <= 4);
// The flags are the level's: -march=x86-64-vN reached this file.
static_assert(ensemble::compiledX86Level() == ENSEMBLE_CPU_LEVEL);

namespace {

ensemble::Backend* createCpuBackend(int threads, int gemmLibrary) {
    // The object's own copy of the choice (gemm_openblas.cpp), as the program resolved it.
    ensemble::useGemmLibrary(static_cast<ensemble::GemmLibrary>(gemmLibrary));
    return new ensemble::CpuBackend(threads);
}

const std::string& gemmText() {
    static const std::string text = "Eigen " + std::to_string(EIGEN_WORLD_VERSION) + "." +
                                    std::to_string(EIGEN_MAJOR_VERSION) + "." +
                                    std::to_string(EIGEN_MINOR_VERSION) +
                                    " GEMM (single-threaded per task, the engine's own blocking)";
    return text;
}

}  // namespace

extern "C" __attribute__((visibility("default"))) const EnsembleCpuLevel* ensemble_cpu_level() {
    static const EnsembleCpuLevel level{
        ensemble::cpuLevelAbi(),     ENSEMBLE_CPU_LEVEL, ensemble::compiledFloatLanes(),
        ensemble::compiledIsaName(), gemmText().c_str(), &createCpuBackend};
    return &level;
}
