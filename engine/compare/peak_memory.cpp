// The peak resident memory of a stretch of work (compare/peak_memory.h).
#include "compare/peak_memory.h"

#include <sys/resource.h>

#include <cmath>
#include <cstdlib>  // defines __GLIBC__ where the C library is glibc
#include <fstream>
#include <limits>
#include <sstream>
#include <string>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace ensemble {

namespace {

bool clearPeak() {
    std::ofstream out("/proc/self/clear_refs");
    out << "5";
    out.flush();
    return static_cast<bool>(out);
}

}  // namespace

double residentPeakMib() {
    std::ifstream status("/proc/self/status");
    std::string line;
    while (std::getline(status, line)) {
        if (line.rfind("VmHWM:", 0) == 0) {
            std::istringstream fields(line.substr(6));
            double kib = 0.0;
            if (fields >> kib) {
                return kib / 1024.0;
            }
        }
    }
    return std::numeric_limits<double>::quiet_NaN();
}

PeakMemory::PeakMemory() {
    m_resettable = !std::isnan(residentPeakMib()) && clearPeak();
}

void PeakMemory::reset() {
    if (!m_resettable) {
        return;
    }
#if defined(__GLIBC__)
    malloc_trim(0);
#endif
    clearPeak();
}

double PeakMemory::peakMib() const {
    if (m_resettable) {
        return residentPeakMib();
    }
    rusage usage{};
    getrusage(RUSAGE_SELF, &usage);
    return static_cast<double>(usage.ru_maxrss) / 1024.0;  // ru_maxrss is in KiB on Linux
}

}  // namespace ensemble
