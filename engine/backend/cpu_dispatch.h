#pragma once

// Run-time dispatch of the CPU backend by the CPU's x86-64 level (docs/performance.md, "One
// binary, the best code for the CPU it runs on"). A build with ENSEMBLE_ISA_DISPATCH (the
// Debian package's) carries the CPU backend three more times, as shared objects built for
// x86-64-v2, v3 (AVX2, FMA) and v4 (AVX-512): libensemble_cpu_x86-64-vN.so, each exporting one
// function (cpu_level_abi.h). At the first CPU backend the highest level this CPU runs is
// chosen, unless backend.cpu_isa or ENSEMBLE_CPU_ISA pins one, and only that object is loaded
// (dlopen), so code for a newer CPU never runs, not even its static initialisers, on an older
// one. Without the objects (or with the option off) the built-in backend runs: the engine's
// own flags, baseline x86-64 in the package.

#include <memory>
#include <string>

#include "backend/backend.h"

namespace ensemble {

// "x86-64" (1), "x86-64-v2", "x86-64-v3", "x86-64-v4".
std::string cpuLevelName(int level);
// 0 for "auto", 1..4 for a level's name, -1 for anything else.
int parseCpuLevel(const std::string& text);

struct CpuLevelChoice {
    int level = 1;       // the level that runs
    std::string isa;     // its kernels' instruction set ("AVX-512", "AVX2+FMA", "SSE2")
    int floatLanes = 0;  // floats in one of its Eigen packets
    std::string gemm;    // its GEMM, as kernel_report.h words it
    std::string object;  // the level object's path; empty for the built-in backend
    // One line when what runs is not what was asked for (a level object missing or refused:
    // the next lower one, or the built-in backend, runs instead); empty otherwise.
    std::string note;
};

// Whether this build carries level objects (configured with ENSEMBLE_ISA_DISPATCH=ON).
bool cpuIsaDispatchBuilt();
// The level the built-in CPU backend is compiled for (the engine's flags).
int builtinCpuLevel();

// The level a CPU backend for `pin` runs at: `pin` ("auto" or a level name, backend.cpu_isa);
// for "auto" ENSEMBLE_CPU_ISA, when set, pins instead; then the highest level this CPU reaches.
// Loads that level's object (once per process). Throws ConfigError (key backend.cpu_isa) for a
// pin this CPU cannot run, a name that is no level, or, in a build without dispatch, a pin of
// a level other than the built-in one. A missing or unusable object is no error: the next lower
// level's (auto) or the built-in backend runs, and `note` says so. The objects are looked for
// in ENSEMBLE_CPU_LEVEL_DIR when it is set, else beside the program (../<libdir>/
// ensemblelab: CMAKE_INSTALL_LIBDIR, as installed) and, for programs of the build tree, in it.
// `reach`: the level the CPU reaches, 0 for this CPU's (tests pretend an older CPU).
CpuLevelChoice chooseCpuLevel(const std::string& pin = "auto", int reach = 0);

// The CPU backend of `threads` OpenMP threads (0: all cores) at chooseCpuLevel(pin)'s level;
// `choice`, when given, gets that choice. Its name() says the level in dispatching builds
// ("cpu x86-64-v3 (2 threads)").
std::unique_ptr<Backend> makeDispatchedCpuBackend(int threads, const std::string& pin = "auto",
                                                  CpuLevelChoice* choice = nullptr);

}  // namespace ensemble
