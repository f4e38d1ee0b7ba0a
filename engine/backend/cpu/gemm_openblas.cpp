// The GEMM library's process-wide state and OpenBLAS's calls: one of the CPU backend's sources,
// so each level object (ENSEMBLE_ISA_DISPATCH) has its own copy, set by the program when it
// makes a backend there (cpu_level_abi.h).
#include "backend/gemm_library.h"

#include <omp.h>

#include <atomic>
#include <mutex>
#include <stdexcept>
#include <string>

#if defined(ENSEMBLE_HAVE_OPENBLAS)
#include <cblas.h>
#include <dlfcn.h>
#endif

namespace ensemble {

namespace {

// OpenBLAS runs one thread per call, inside the engine's tasks, whichever of Debian's builds the
// alternatives (or LD_LIBRARY_PATH) load:
// - pthread build (openblas_get_parallel() == 1, Debian's default): openblas_set_num_threads(1)
//   once; its pool is never woken and OpenMP is not touched.
// - OpenMP build (== 2): 0.3.21's openblas_set_num_threads calls omp_set_num_threads (it would
//   change backend.threads = 0's team), and every call outside an active parallel region takes
//   its thread count from omp_get_max_threads() again (num_cpu_avail), so a product made by the
//   main thread or inside a team of one (backend.threads = 1) would fork a team whose split
//   changes the bits. So that build is never told a count: each call runs with the calling
//   task's nthreads ICV at 1 (omp_set_num_threads is per task), put back right after
//   (OneThreadCall); OpenBLAS then sees one thread and runs on the caller's. This assumes one
//   OpenMP runtime: the engine's libgomp (GCC) is the one Debian's OpenBLAS links; an engine
//   built against another runtime (clang's libomp) would set its own ICV, not OpenBLAS's, and
//   tst_gemm_library's OpenMP child would fail.
// - sequential build (0): nothing to do.
// tst_gemm_library checks both builds (it runs itself under each one's directory).
int openblasParallel() {
#if defined(ENSEMBLE_HAVE_OPENBLAS)
    static const int parallel = openblas_get_parallel();
    return parallel;
#else
    return 0;
#endif
}

void openblasOneThread() {
#if defined(ENSEMBLE_HAVE_OPENBLAS)
    static std::once_flag once;
    std::call_once(once, [] {
        if (openblasParallel() == 1) {
            openblas_set_num_threads(1);
        }
    });
#endif
}

// The OpenMP build's one thread for the span of one call: the calling task's nthreads ICV at 1.
class OneThreadCall {
  public:
    OneThreadCall() : m_saved(openblasParallel() == 2 ? omp_get_max_threads() : 1) {
        if (m_saved != 1) {
            omp_set_num_threads(1);
        }
    }
    ~OneThreadCall() {
        if (m_saved != 1) {
            omp_set_num_threads(m_saved);
        }
    }
    OneThreadCall(const OneThreadCall&) = delete;
    OneThreadCall& operator=(const OneThreadCall&) = delete;

  private:
    int m_saved;
};

std::atomic<int> g_library{-1};  // -1: not yet resolved

}  // namespace

bool openblasBuilt() {
#if defined(ENSEMBLE_HAVE_OPENBLAS)
    return true;
#else
    return false;
#endif
}

std::string openblasUnusableReason() {
    if (!openblasBuilt()) {
        return "this build was configured without OpenBLAS (libopenblas-dev)";
    }
#if defined(ENSEMBLE_HAVE_OPENBLAS)
    // One thread per call is the nthreads ICV of GCC's runtime, libgomp, which Debian's OpenMP
    // OpenBLAS links; an engine on clang's libomp (the sanitizer trees; it alone exports
    // __kmpc_fork_call) sets its own runtime's ICV, and OpenBLAS would fork libgomp teams
    // whose split changes the bits.
    if (openblasParallel() == 2 && dlsym(RTLD_DEFAULT, "__kmpc_fork_call") != nullptr) {
        return "the loaded OpenBLAS is its OpenMP build (libgomp), which an engine built on "
               "clang's OpenMP runtime (libomp) cannot keep to one thread per call";
    }
#endif
    return {};
}

GemmLibrary gemmLibrary() {
    int v = g_library.load(std::memory_order_acquire);
    if (v < 0) {
#if defined(ENSEMBLE_CPU_LEVEL)
        // A level object is told its library when the program makes a backend in it.
        useGemmLibrary(GemmLibrary::Eigen);
#else
        useGemmLibrary(defaultGemmLibrary());
#endif
        v = g_library.load(std::memory_order_acquire);
    }
    return static_cast<GemmLibrary>(v);
}

void useGemmLibrary(GemmLibrary library) {
    if (library == GemmLibrary::OpenBlas) {
        if (const std::string why = openblasUnusableReason(); !why.empty()) {
            throw std::logic_error("useGemmLibrary: " + why);
        }
        openblasOneThread();
    }
    g_library.store(static_cast<int>(library), std::memory_order_release);
}

std::string openblasReport() {
#if defined(ENSEMBLE_HAVE_OPENBLAS)
    const int parallel = openblas_get_parallel();
    const char* build = parallel == 2   ? "OpenMP build"
                        : parallel == 1 ? "pthread build"
                                        : "sequential build";
    std::string out =
        std::string(openblas_get_config()) + "; core " + openblas_get_corename() + ", " + build;
    if (const std::string file = openblasLibraryFile(); !file.empty()) {
        out += " (" + file + ")";
    }
    return out;
#else
    return {};
#endif
}

std::string openblasLibraryFile() {
#if defined(ENSEMBLE_HAVE_OPENBLAS)
    Dl_info info{};
    if (dladdr(reinterpret_cast<void*>(&cblas_sgemm), &info) != 0 && info.dli_fname != nullptr) {
        return info.dli_fname;
    }
    return {};
#else
    return {};
#endif
}

int openblasThreads() {
#if defined(ENSEMBLE_HAVE_OPENBLAS)
    if (openblasParallel() == 2) {
        // The OpenMP build's count is never set (see openblasOneThread): a call takes
        // omp_get_max_threads() as it stands inside OneThreadCall.
        const OneThreadCall oneThread;
        return omp_get_max_threads();
    }
    return openblas_get_num_threads();
#else
    return 0;
#endif
}

namespace cpu {

void openblasGemm(bool lhsRowMajor, bool rhsRowMajor, std::int64_t rows, std::int64_t cols,
                  std::int64_t depth, const float* lhs, std::int64_t lhsStride, const float* rhs,
                  std::int64_t rhsStride, float* res, std::int64_t resStride, float beta) {
#if defined(ENSEMBLE_HAVE_OPENBLAS)
    if (rows == 0 || cols == 0) {
        return;
    }
    const OneThreadCall oneThread;
    // In the row-major view a column-major operand is its transpose, stored row-major.
    cblas_sgemm(CblasRowMajor, lhsRowMajor ? CblasNoTrans : CblasTrans,
                rhsRowMajor ? CblasNoTrans : CblasTrans, static_cast<blasint>(rows),
                static_cast<blasint>(cols), static_cast<blasint>(depth), 1.0f, lhs,
                static_cast<blasint>(lhsStride), rhs, static_cast<blasint>(rhsStride), beta, res,
                static_cast<blasint>(resStride));
#else
    (void)lhsRowMajor, (void)rhsRowMajor, (void)rows, (void)cols, (void)depth, (void)lhs;
    (void)lhsStride, (void)rhs, (void)rhsStride, (void)res, (void)resStride, (void)beta;
    throw std::logic_error("openblasGemm: this build has no OpenBLAS");
#endif
}

}  // namespace cpu

}  // namespace ensemble
