#include "dist/collective.h"

#include <cstdlib>
#include <initializer_list>

namespace ensemble {

void Collective::abort(int code) {
    std::exit(code);
}

namespace {

int envInt(std::initializer_list<const char*> names, int fallback) {
    for (const char* name : names) {
        if (const char* v = std::getenv(name)) {
            return std::atoi(v);
        }
    }
    return fallback;
}

}  // namespace

int launcherRank() {
    return envInt({"OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK"}, -1);
}

int launcherSize() {
    if (launcherRank() < 0) {
        return 0;
    }
    // PMIx alone does not say the size in the environment: 1 stands for "unknown, launched".
    return envInt({"OMPI_COMM_WORLD_SIZE", "PMI_SIZE"}, 1);
}

Collective& singleProcess() {
    static Collective one;
    return one;
}

}  // namespace ensemble
