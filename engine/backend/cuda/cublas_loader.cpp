#include "backend/cuda/cublas_loader.h"

#include <cuda_runtime_api.h>
#include <dlfcn.h>

#include <atomic>
#include <mutex>
#include <string>

#include "core/errors.h"

namespace ensemble::gpu {

namespace {

std::atomic<bool> g_loaded{false};

// The folder of the libcudart this process runs with, with a trailing '/'; empty if unknown.
std::string cudartFolder() {
    Dl_info info{};
    if (dladdr(reinterpret_cast<const void*>(&cudaGetDeviceCount), &info) == 0 ||
        info.dli_fname == nullptr) {
        return {};
    }
    const std::string path = info.dli_fname;
    const std::size_t slash = path.rfind('/');
    return slash == std::string::npos ? std::string() : path.substr(0, slash + 1);
}

void* openCublas() {
    const std::string name = "libcublas.so." + std::to_string(CUBLAS_VER_MAJOR);
    std::string tried = name;
    std::string reason;
    // RTLD_LOCAL: cuBLAS's symbols stay out of the global namespace; we only dlsym them.
    if (void* h = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL)) {
        return h;
    }
    reason = dlerror();
    const std::string folder = cudartFolder();
    if (!folder.empty()) {
        const std::string path = folder + name;
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
