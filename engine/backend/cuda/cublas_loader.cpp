#include "backend/cuda/cublas_loader.h"

#include <dlfcn.h>

#include <atomic>
#include <mutex>
#include <string>

#include "core/errors.h"

namespace ensemble::gpu {

namespace {

std::atomic<bool> g_loaded{false};

#ifndef ENSEMBLE_CUDA_LIBRARY_DIR
#define ENSEMBLE_CUDA_LIBRARY_DIR ""
#endif

// The loader's search path first (LD_LIBRARY_PATH, ld.so.conf: a distribution's cuBLAS), then
// the toolkit's library folder of the build machine. The CUDA runtime is linked in statically,
// so there is no libcudart whose folder would say where the toolkit is.
void* openCublas() {
    const std::string name = "libcublas.so." + std::to_string(CUBLAS_VER_MAJOR);
    std::string tried = name;
    std::string reason;
    // RTLD_LOCAL: cuBLAS's symbols stay out of the global namespace; we only dlsym them.
    if (void* h = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL)) {
        return h;
    }
    reason = dlerror();
    const std::string folder = ENSEMBLE_CUDA_LIBRARY_DIR;
    if (!folder.empty()) {
        const std::string path = folder + "/" + name;
        tried += ", " + path;
        if (void* h = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL)) {
            return h;
        }
        reason = dlerror();
    }
    throw RuntimeError(
        ErrorKind::BackendMissing,
        "cannot load cuBLAS (tried " + tried + "): " + reason +
            ". Install the CUDA toolkit's cuBLAS or put its folder on LD_LIBRARY_PATH.");
}

template <typename Fn>
void resolve(void* library, const char* symbol, Fn& out) {
    void* address = dlsym(library, symbol);
    if (address == nullptr) {
        throw RuntimeError(std::string("cuBLAS has no symbol ") + symbol +
                           " (a cuBLAS older than the headers built against?)");
    }
    out = reinterpret_cast<Fn>(address);
}

CublasApi load() {
    void* library = openCublas();
    CublasApi api;
    try {
        resolve(library, "cublasCreate_v2", api.create);
        resolve(library, "cublasDestroy_v2", api.destroy);
        resolve(library, "cublasSetStream_v2", api.setStream);
        resolve(library, "cublasSetWorkspace_v2", api.setWorkspace);
        resolve(library, "cublasSetMathMode", api.setMathMode);
        resolve(library, "cublasSgemmStridedBatched", api.sgemmStridedBatched);
        resolve(library, "cublasGetStatusName", api.statusName);
        resolve(library, "cublasGetStatusString", api.statusString);
    } catch (...) {
        dlclose(library);
        throw;
    }
    return api;  // the library stays open for the life of the process
}

}  // namespace

const CublasApi& cublas() {
    static std::mutex mutex;
    static CublasApi api;
    std::lock_guard<std::mutex> lock(mutex);
    if (!g_loaded.load()) {
        api = load();  // throws: nothing is cached, a later call tries again
        g_loaded.store(true);
    }
    return api;
}

bool cublasLoaded() {
    return g_loaded.load();
}

}  // namespace ensemble::gpu
