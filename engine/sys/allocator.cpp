#include "sys/allocator.h"

#include <cstdlib>  // defines __GLIBC__ where the C library is glibc

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace ensemble {

void keepFreedMemoryForReuse() {
#if defined(__GLIBC__)
    constexpr int kMiB = 1 << 20;
    // Setting either threshold switches off glibc's adaptive adjustment of both, so both are
    // set; 32 MiB is the largest mmap threshold glibc accepts on 64-bit (a larger value is
    // refused and would leave the 128 KiB default in force, mmapping every large block).
    mallopt(M_MMAP_THRESHOLD, 32 * kMiB);
    mallopt(M_TRIM_THRESHOLD, 512 * kMiB);
#endif
}

}  // namespace ensemble
