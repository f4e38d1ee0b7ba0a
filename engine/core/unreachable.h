#pragma once

// The end of a switch over a kind whose every case returns. Such switches have no `default:`,
// so -Wswitch-enum (an error on the engine targets) names the case a new kind forgot; a value
// outside the enum (a bad cast, corrupt memory) stops here instead of running some other kind's
// code.

#include "core/host_device.h"

#if !defined(__CUDA_ARCH__)
#include <cstdio>
#include <cstdlib>
#endif

namespace ensemble {

// `what` names the enum, for the message. On the device: a trap (the kernel fails with
// cudaErrorLaunchFailure, which the next CUDA check reports).
[[noreturn]] ENSEMBLE_HD inline void unreachableKind(const char* what) {
#if defined(__CUDA_ARCH__)
    (void)what;
    __trap();
    __builtin_unreachable();
#else
    std::fprintf(stderr, "EnsembleLab: a %s outside its kinds reached a switch\n", what);
    std::abort();
#endif
}

}  // namespace ensemble
