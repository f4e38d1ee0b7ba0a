#pragma once

// The process's peak resident memory over a stretch of work (compare/compare.h's
// peak_rss_mib). Linux keeps the peak in VmHWM of /proc/self/status and resets it to the
// current resident size when "5" is written to /proc/self/clear_refs (proc(5)); freed heap the
// allocator keeps (sys/allocator.h keeps up to 512 MiB) is handed back first, so one stretch's
// leftovers do not count in the next. Where that is not possible (another system, /proc not
// writable) the peak is getrusage's ru_maxrss: the whole process's peak so far, never reset.

#include <string>

namespace ensemble {

class PeakMemory {
  public:
    PeakMemory();
    // Starts a stretch: the peak from now on.
    void reset();
    // The peak resident memory since reset(), in MiB (getrusage: since the process started).
    double peakMib() const;
    // "VmHWM" when reset() resets the peak, else "getrusage".
    std::string source() const { return m_resettable ? "VmHWM" : "getrusage"; }

  private:
    bool m_resettable = false;
};

// VmHWM of /proc/self/status in MiB; NaN when it cannot be read.
double residentPeakMib();

}  // namespace ensemble
