#include "backend/cpu_dispatch.h"

#include <dlfcn.h>

#include <array>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <system_error>
#include <vector>

#include "backend/compiled_isa.h"
#include "backend/cpu_level_abi.h"
#include "backend/gemm_library.h"
#include "core/errors.h"
#include "sys/cpu_identity.h"

namespace ensemble {

namespace {

constexpr std::array<const char*, 5> kCpuLevelNames = {"auto", "x86-64", "x86-64-v2", "x86-64-v3",
                                                       "x86-64-v4"};

std::string cpuLevelObjectFile(int level) {
    return "libensemble_cpu_" + cpuLevelName(level) + ".so";
}

// Where the level objects are looked for, in order.
std::vector<std::filesystem::path> cpuLevelSearchDirs() {
    namespace fs = std::filesystem;
    if (const char* dir = std::getenv("ENSEMBLE_CPU_LEVEL_DIR"); dir != nullptr && *dir != '\0') {
        return {fs::path(dir)};
    }
    std::vector<fs::path> dirs;
#if defined(ENSEMBLE_CPU_LEVEL_RELDIR) && defined(ENSEMBLE_CPU_LEVEL_BUILD_DIR)
    std::error_code error;
    const fs::path exe = fs::read_symlink("/proc/self/exe", error);
    if (!error) {
        // Installed: <prefix>/bin/ensemble-cli and <prefix>/<CMAKE_INSTALL_LIBDIR>/ensemblelab.
        dirs.push_back(exe.parent_path().parent_path() / ENSEMBLE_CPU_LEVEL_RELDIR);
        // A program of the build tree (tests, bench, the CLI before installing).
        const std::string build = ENSEMBLE_CPU_LEVEL_BUILD_DIR;
        const std::string root = fs::path(build).parent_path().parent_path().string() + "/";
        if (exe.string().rfind(root, 0) == 0) {
            dirs.emplace_back(build);
        }
    }
#endif
    return dirs;
}

std::string cpuLevelDirsText(const std::vector<std::filesystem::path>& dirs) {
    if (dirs.empty()) {
        return "(no folder)";
    }
    std::string text;
    for (const auto& dir : dirs) {
        text += (text.empty() ? "" : ", ") + dir.string();
    }
    return text;
}

struct LoadedCpuLevel {
    const EnsembleCpuLevel* entry = nullptr;
    std::string path;
    std::string failure;  // why it is not usable, when entry is null
};

// Level `level`'s object from the search folders. Opened with dlopen and never closed (its
// backends may live as long as the program); opening it again is the loader's reference count,
// not a second copy. Only the level asked for is opened.
LoadedCpuLevel loadCpuLevel(int level) {
    LoadedCpuLevel slot;
    const auto dirs = cpuLevelSearchDirs();
    for (const auto& dir : dirs) {
        const std::filesystem::path path = dir / cpuLevelObjectFile(level);
        std::error_code error;
        if (!std::filesystem::exists(path, error)) {
            continue;
        }
        void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
        if (handle == nullptr) {
            const char* why = dlerror();
            slot.failure = path.string() + " cannot be loaded: " + (why != nullptr ? why : "?");
            return slot;
        }
        using Entry = const EnsembleCpuLevel* (*)();
        const auto entry = reinterpret_cast<Entry>(dlsym(handle, ENSEMBLE_CPU_LEVEL_ENTRY));
        const EnsembleCpuLevel* info = entry != nullptr ? entry() : nullptr;
        if (info == nullptr || info->abi != cpuLevelAbi() || info->level != level) {
            slot.failure = path.string() + " is not this build's " + cpuLevelName(level) +
                           " object (another version or build)";
            dlclose(handle);
            return slot;
        }
        slot.entry = info;
        slot.path = path.string();
        return slot;
    }
    slot.failure = cpuLevelObjectFile(level) + " is not in " + cpuLevelDirsText(dirs);
    return slot;
}

CpuLevelChoice builtinCpuLevelChoice() {
    CpuLevelChoice c;
    c.level = compiledX86Level();
    c.isa = compiledIsaName();
    c.floatLanes = compiledFloatLanes();
    c.gemm = "Eigen " + std::to_string(EIGEN_WORLD_VERSION) + "." +
             std::to_string(EIGEN_MAJOR_VERSION) + "." + std::to_string(EIGEN_MINOR_VERSION) +
             " GEMM (single-threaded per task, the engine's own blocking)";
    return c;
}

}  // namespace

std::string cpuLevelName(int level) {
    if (level < 1 || level > 4) {
        return "x86-64-v?";
    }
    return kCpuLevelNames[static_cast<std::size_t>(level)];
}

int parseCpuLevel(const std::string& text) {
    for (std::size_t i = 0; i < kCpuLevelNames.size(); ++i) {
        if (text == kCpuLevelNames[i]) {
            return static_cast<int>(i);
        }
    }
    return -1;
}

bool cpuIsaDispatchBuilt() {
#if defined(ENSEMBLE_ISA_DISPATCH)
    return true;
#else
    return false;
#endif
}

int builtinCpuLevel() {
    return compiledX86Level();
}

namespace {

CpuLevelChoice chooseLevel(const std::string& pin, int reach, const EnsembleCpuLevel** chosen) {
    std::string source = "backend.cpu_isa";
    std::string asked = pin;
    int level = parseCpuLevel(pin);
    if (level == 0) {
        if (const char* env = std::getenv("ENSEMBLE_CPU_ISA"); env != nullptr && *env != '\0') {
            source = "ENSEMBLE_CPU_ISA";
            asked = env;
            level = parseCpuLevel(asked);
        }
    }
    if (level < 0) {
        throw ConfigError("backend.cpu_isa", source + " is \"" + asked +
                                                 "\", not one of auto, x86-64, x86-64-v2, "
                                                 "x86-64-v3, x86-64-v4");
    }
    const CpuIdentity& cpu = cpuIdentity();
    if (reach == 0) {
        reach = cpu.x86Level();
    }
    if (level > reach) {
        throw ConfigError("backend.cpu_isa", source + "=" + asked +
                                                 " asks for code this CPU cannot run: it reaches " +
                                                 cpuLevelName(reach) + " (" + cpu.describe() + ")");
    }
    const bool automatic = level == 0;
    const int wanted = automatic ? reach : level;
    if (!cpuIsaDispatchBuilt()) {
        if (!automatic && level != builtinCpuLevel()) {
            throw ConfigError("backend.cpu_isa",
                              source + "=" + asked +
                                  ": this build's CPU backend is built for one level, " +
                                  cpuLevelName(builtinCpuLevel()) +
                                  " (configured with ENSEMBLE_ISA_DISPATCH=OFF)");
        }
        return builtinCpuLevelChoice();
    }
    // auto: the highest level above the built-in one whose object loads, else the built-in
    // backend (a native build's is already the CPU's own level: nothing is loaded). A pin: that
    // level's object, or the built-in backend when the pin is its level or the object is missing.
    if (!automatic && level == builtinCpuLevel()) {
        return builtinCpuLevelChoice();
    }
    const int lowest = automatic ? builtinCpuLevel() + 1 : level;
    std::string failure;
    for (int l = wanted; l >= lowest; --l) {
        const LoadedCpuLevel loaded = loadCpuLevel(l);
        if (loaded.entry != nullptr) {
            CpuLevelChoice c;
            c.level = l;
            c.isa = loaded.entry->isa;
            c.floatLanes = loaded.entry->floatLanes;
            c.gemm = loaded.entry->gemm;
            c.object = loaded.path;
            *chosen = loaded.entry;
            if (!failure.empty()) {
                c.note = failure + ": the CPU backend runs at " + cpuLevelName(l);
            }
            return c;
        }
        if (failure.empty()) {
            failure = loaded.failure;
        }
        if (!automatic) {
            break;  // a pinned level falls back to the built-in backend, not to another level
        }
    }
    CpuLevelChoice c = builtinCpuLevelChoice();
    if (!failure.empty()) {
        c.note = failure + ": the built-in " + cpuLevelName(c.level) + " CPU backend runs";
    }
    return c;
}

}  // namespace

CpuLevelChoice chooseCpuLevel(const std::string& pin, int reach) {
    const EnsembleCpuLevel* entry = nullptr;
    return chooseLevel(pin, reach, &entry);
}

std::unique_ptr<Backend> makeDispatchedCpuBackend(int threads, const std::string& pin,
                                                  CpuLevelChoice* choice) {
    const EnsembleCpuLevel* entry = nullptr;
    CpuLevelChoice c = chooseLevel(pin, 0, &entry);
    std::unique_ptr<Backend> backend;
    if (entry == nullptr) {
        backend = makeCpuBackend(threads);
    } else {
        // The object holds its own copy of the GEMM choice: the program's goes with the call.
        backend.reset(entry->create(threads, static_cast<int>(gemmLibrary())));
    }
    if (choice != nullptr) {
        *choice = std::move(c);
    }
    return backend;
}

}  // namespace ensemble
