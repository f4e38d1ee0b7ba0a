#pragma once

namespace ensemble {

// Keeps freed heap memory in the process instead of handing it back to the kernel at once.
// The live view and `eval` allocate tens of MB per grid refresh (every member's probabilities
// at every grid point) and free them again; with glibc's default, adaptive thresholds whether
// those blocks come from mmap or are trimmed off the heap top depends on the order of unrelated
// small allocations, and when they are, every refresh faults all of them in again (measured:
// 7x the page faults and 1.6x the time of the per-point statistics at K = 100, 2 threads).
// Fixed thresholds make it predictable: blocks below 32 MiB come from the heap and up to
// 512 MiB of free heap top is kept. Call once at the start of main() of an executable (it
// changes process-wide allocator settings, so the library never calls it itself); a no-op where
// the C library has no mallopt.
void keepFreedMemoryForReuse();

}  // namespace ensemble
