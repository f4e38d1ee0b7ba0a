#pragma once
// Shared by the fuzz targets. The contract every reader is held to: a bad input ends in an
// ensemble::Error (ConfigError, DataError, RuntimeError) with a message, nothing else. Any other
// exception escapes LLVMFuzzerTestOneInput, std::terminate aborts, and libFuzzer saves the input
// as a crash; so do ASan/UBSan reports, allocations above -malloc_limit_mb and time-outs.
#include <cstdio>
#include <cstdlib>

#include "core/errors.h"

namespace ensemble::fuzz {

// Aborts with a message: an invariant of a successful parse does not hold.
[[noreturn]] inline void fail(const char* what) {
    std::fprintf(stderr, "fuzz invariant violated: %s\n", what);
    std::abort();
}

inline void check(bool ok, const char* what) {
    if (!ok) {
        fail(what);
    }
}

}  // namespace ensemble::fuzz
