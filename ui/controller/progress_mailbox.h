#pragma once

// Progress from the engine thread to the GUI thread, coalesced. An engine computation may report
// after every step, thousands of times a second; queueing each report would flood the GUI
// thread's event queue and draw progress bars nobody can read. The mailbox keeps only the latest
// report and tells the reporter when a delivery must be queued: at most one waits at a time.

#include <cstdint>
#include <mutex>
#include <optional>
#include <utility>

namespace ensemble::ui {

// The progress of a job that counts its work (rows predicted, steps trained).
struct JobProgress {
    int64_t done = 0;
    int64_t total = 0;
};

template <typename Progress>
class ProgressMailbox {
  public:
    // Reporting thread: `p` replaces the report that waits. True when no delivery is queued: the
    // caller queues one, which take()s the latest report when it runs.
    bool put(const Progress& p) {
        const std::lock_guard lock(m_mutex);
        m_latest = p;
        return !std::exchange(m_posted, true);
    }

    // Receiving thread, in the queued delivery: the report that waits (none when an earlier
    // delivery took it), and the next put() queues a delivery again.
    std::optional<Progress> take() {
        const std::lock_guard lock(m_mutex);
        m_posted = false;
        return std::exchange(m_latest, std::nullopt);
    }

  private:
    std::mutex m_mutex;
    std::optional<Progress> m_latest;
    bool m_posted = false;  // a delivery is queued
};

}  // namespace ensemble::ui
