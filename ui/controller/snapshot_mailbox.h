#pragma once

// The latest-wins handoff of snapshots from the engine thread to the GUI thread: one slot, so
// a slow GUI sees the latest state and never a backlog (EngineWorker puts, EngineController
// takes).

#include <atomic>
#include <mutex>

#include "controller/snapshot.h"

namespace ensemble::ui {

// One slot holding the latest published snapshot. The worker builds a new snapshot only when
// the GUI has taken the last one, so a slow GUI sees the latest state, never a backlog.
class SnapshotMailbox {
  public:
    // Worker: whether the GUI still has to take the last snapshot.
    bool waiting() const { return m_waiting.load(std::memory_order_acquire); }
    // Worker: publishes `snapshot`; the GUI is then told with a signal.
    void put(SnapshotPtr snapshot);
    // GUI: takes the snapshot (null when there is none) and lets the worker build the next.
    SnapshotPtr take();

  private:
    std::mutex m_mutex;
    SnapshotPtr m_slot;
    std::atomic<bool> m_waiting{false};
};

}  // namespace ensemble::ui
