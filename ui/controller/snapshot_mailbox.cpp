#include "controller/snapshot_mailbox.h"

#include <utility>

namespace ensemble::ui {

void SnapshotMailbox::put(SnapshotPtr snapshot) {
    std::lock_guard<std::mutex> lock(m_mutex);
    m_slot = std::move(snapshot);
    m_waiting.store(true, std::memory_order_release);
}

SnapshotPtr SnapshotMailbox::take() {
    std::lock_guard<std::mutex> lock(m_mutex);
    SnapshotPtr s = std::move(m_slot);
    m_slot.reset();
    m_waiting.store(false, std::memory_order_release);
    return s;
}

}  // namespace ensemble::ui
