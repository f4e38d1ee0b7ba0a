#pragma once

// ENSEMBLE_HD marks functions that compile for both host and device. Everything shared by the
// CPU backend and the CUDA kernels (activations, losses, optimizer rules, Philox, batch plans)
// carries it, so the CPU tests exercise the very formulas the GPU runs.
#if defined(__CUDACC__)
#define ENSEMBLE_HD __host__ __device__
#else
#define ENSEMBLE_HD
#endif
