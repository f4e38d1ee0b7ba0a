// The library choice (backend.gemm), in the program only: the level objects take theirs from
// the program when they make a backend (cpu_level_abi.h), so they never resolve one.
#include "backend/gemm_library.h"

#include <cstdlib>
#include <exception>
#include <string>

#include "backend/compiled_isa.h"
#include "backend/cpu_dispatch.h"
#include "sys/cpu_identity.h"

namespace ensemble {

std::string gemmLibraryKey(GemmLibrary library) {
    return library == GemmLibrary::OpenBlas ? "openblas" : "eigen";
}

GemmResolution resolveGemm(GemmChoice requested, int engineFloatLanes) {
    GemmResolution r;
    GemmChoice choice = requested;
    r.request = toString(requested);
    std::string source = "backend.gemm=" + r.request;
    if (const char* env = std::getenv("ENSEMBLE_GEMM"); env != nullptr && *env != '\0') {
        if (GemmChoice parsed{}; enumFromName(env, parsed)) {
            choice = parsed;
            r.request = env;
            source = std::string("ENSEMBLE_GEMM=") + env;
        } else {
            r.note = std::string("ENSEMBLE_GEMM=") + env +
                     " is not auto, eigen or openblas: ignored, " + source + " applies";
        }
    }
    const int eigenBits = 32 * engineFloatLanes;
    const int cpuBits = cpuIdentity().vectorBits();
    const std::string unusable = openblasUnusableReason();
    switch (choice) {
        case GemmChoice::Eigen:
            r.library = GemmLibrary::Eigen;
            r.reason = source;
            break;
        case GemmChoice::OpenBlas:
            if (unusable.empty()) {
                r.library = GemmLibrary::OpenBlas;
                r.reason = source;
            } else {
                r.library = GemmLibrary::Eigen;
                r.reason = source + ", but " + unusable + ": Eigen";
                r.note = (r.note.empty() ? "" : r.note + "; ") + source + ": " + unusable +
                         "; the CPU backend's products use Eigen";
            }
            break;
        case GemmChoice::Auto:
            if (unusable.empty() && cpuBits > eigenBits) {
                r.library = GemmLibrary::OpenBlas;
                r.reason = source + ": OpenBLAS, the CPU backend's Eigen is built for " +
                           std::to_string(eigenBits) + "-bit vectors and this CPU has " +
                           std::to_string(cpuBits);
            } else {
                r.library = GemmLibrary::Eigen;
                r.reason = source + (unusable.empty() ? ": Eigen, built for this CPU's " +
                                                            std::to_string(cpuBits) + "-bit vectors"
                                                      : ": Eigen, " + unusable);
            }
            break;
    }
    return r;
}

GemmLibrary defaultGemmLibrary() {
    int lanes = compiledFloatLanes();
    try {
        // The level a CPU backend made now would run at (ENSEMBLE_CPU_ISA's pin included).
        lanes = chooseCpuLevel("auto").floatLanes;
    } catch (const std::exception&) {
        // A bad ENSEMBLE_CPU_ISA: the run that makes a backend reports it; the built-in level
        // stands in here.
    }
    return resolveGemm(GemmChoice::Auto, lanes).library;
}

}  // namespace ensemble
