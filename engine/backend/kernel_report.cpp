#include "backend/kernel_report.h"

#include "backend/cpu_dispatch.h"
#include "backend/gemm_library.h"
#include "sys/cpu_identity.h"

namespace ensemble {

CpuKernels cpuKernels(const std::string& pin) {
    const CpuLevelChoice choice = chooseCpuLevel(pin);
    CpuKernels k;
    k.isa = choice.isa;
    k.floatLanes = choice.floatLanes;
    k.vectorBits = 32 * k.floatLanes;
    k.level = cpuLevelName(choice.level);
    k.object = choice.object;
    k.note = choice.note;
    const GemmLibrary library = gemmLibrary();
    k.gemmLibrary = gemmLibraryKey(library);
    k.openblas = openblasReport();
    k.gemm = library == GemmLibrary::OpenBlas
                 ? "OpenBLAS sgemm (single-threaded per task; " + k.openblas + ")"
                 : choice.gemm;
    return k;
}

std::string CpuKernels::describe() const {
    const std::string how =
        object.empty() ? (cpuIsaDispatchBuilt() ? ", built in" : "") : ", dispatched";
    std::string out = "GEMM " + gemmLibrary + ": " + gemm + ", built for " + isa + " (" + level +
                      how + "): " + std::to_string(floatLanes) + " floats (" +
                      std::to_string(vectorBits) + " bits) a vector; this CPU offers " +
                      std::to_string(cpuIdentity().vectorBits()) + " bits" +
                      (note.empty() ? "" : "; " + note);
    if (gemmLibrary != "openblas" && !openblas.empty()) {
        out += "; OpenBLAS available (backend.gemm=openblas): " + openblas;
    }
    return out;
}

}  // namespace ensemble
