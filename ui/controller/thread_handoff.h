#pragma once

// ThreadSanitizer and Qt's event queue. A queued signal or QMetaObject::invokeMethod hands data
// to another thread through that thread's event queue, which Qt guards with a QMutex (a futex
// inside libQt6Core). Qt is not built with TSan here, so TSan never sees that lock and reports
// every object that crosses a queued connection (a config copied into the worker's command, a
// snapshot's QStrings) as a data race, although the queue orders the post before the delivery.
// These functions tell TSan about exactly that edge, the way the queue's lock makes it: a
// release on the posting thread before it posts, an acquire on the receiving thread before it
// delivers an event. One sync object stands for the queues (their locks order every post before
// the delivery that takes it). Without -fsanitize=thread they compile to nothing.
//
//   trackQueuedHandoffs()   once, on the GUI thread: every event delivery acquires
//   announceHandoff()       on the posting thread, right before a cross-thread post
//   announced(f)            `f` for invokeMethod, announcing as Qt stores it for posting
//   acceptHandoff()         on the receiving thread where Qt synchronised without an event
//                           (after QThread::wait)
//   announceSignal(s, sig)  the signal announces itself before its queued connections post
//                           (connected first, so it runs first, directly on the emitter)

#include <QObject>

#include <type_traits>
#include <utility>

#if defined(__SANITIZE_THREAD__)
#define ENSEMBLE_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define ENSEMBLE_TSAN 1
#endif
#endif

#ifdef ENSEMBLE_TSAN
extern "C" void __tsan_acquire(void* addr);
extern "C" void __tsan_release(void* addr);
#endif

namespace ensemble::ui {

#ifdef ENSEMBLE_TSAN

inline char g_queuedHandoff = 0;

inline void announceHandoff() {
    __tsan_release(&g_queuedHandoff);
}

inline void acceptHandoff() {
    __tsan_acquire(&g_queuedHandoff);
}

inline void trackQueuedHandoffs() {
    static const bool installed =
        QInternal::registerCallback(QInternal::EventNotifyCallback, [](void**) {
            __tsan_acquire(&g_queuedHandoff);
            return false;  // deliver the event as usual
        });
    (void)installed;
}

// A functor for QMetaObject::invokeMethod that announces the handoff when Qt moves it into the
// object it posts: the last write this thread makes before posting, so that the functor's own
// heap copy is covered too (announcing before invokeMethod would leave it out).
template <typename F>
struct Announced {
    F f;
    explicit Announced(F&& g) : f(std::move(g)) {}
    Announced(Announced&& other) noexcept : f(std::move(other.f)) { announceHandoff(); }
    Announced(const Announced& other) : f(other.f) { announceHandoff(); }
    Announced& operator=(const Announced&) = delete;
    // Qt reference-counts the object that holds the functor (atomics inside libQt6Core) and
    // frees it on whichever thread lets go last: the receiver's release after the call and the
    // acquire before destruction stand for that count.
    ~Announced() { acceptHandoff(); }
    void operator()() {
        f();
        announceHandoff();
    }
};

template <typename F>
Announced<std::decay_t<F>> announced(F&& f) {
    return Announced<std::decay_t<F>>(std::forward<F>(f));
}

// Connected before any other connection to `signal`, so that it runs first, on the emitter.
template <typename Sender, typename Signal>
void announceSignal(Sender* sender, Signal signal) {
    QObject::connect(
        sender, signal, sender, [] { announceHandoff(); }, Qt::DirectConnection);
}

#else

inline void announceHandoff() {}
inline void acceptHandoff() {}
inline void trackQueuedHandoffs() {}
template <typename Sender, typename Signal>
void announceSignal(Sender*, Signal) {}
template <typename F>
F&& announced(F&& f) {
    return std::forward<F>(f);
}

#endif

}  // namespace ensemble::ui
