#include "cli/interrupt.h"

#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <thread>

#include "sys/atomic_file.h"

namespace ensemble::cli {

namespace {

std::atomic<bool> g_stop{false};
std::atomic<int> g_signal{0};
std::atomic<int> g_stopScopes{0};
const char* g_command = "";
// On a terminal the progress line is redrawn in place: a message starts on a line of its own.
const char* g_newline = "";

sigset_t handledSignals() {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGHUP);
    return set;
}

[[noreturn]] void waitForSignals() {
    const sigset_t set = handledSignals();
    for (;;) {
        int signal = 0;
        if (sigwait(&set, &signal) != 0) {
            continue;
        }
        int expected = 0;
        const bool first = g_signal.compare_exchange_strong(expected, signal);
        if (g_stopScopes.load() > 0) {
            g_stop.store(true);
            if (first) {
                std::fprintf(stderr, "%sensemble-cli %s: %s: stopping after the work in progress\n",
                             g_newline, g_command, signalName(signal));
            } else {
                std::fprintf(stderr,
                             "ensemble-cli %s: %s: already stopping; the files being written "
                             "are finished first\n",
                             g_command, signalName(signal));
            }
            continue;
        }
        // No command state to save: end now, without leaving a temporary file behind.
        const int removed = abandonTemporaryFiles();
        std::fprintf(stderr, "%sensemble-cli %s: interrupted by %s%s\n", g_newline, g_command,
                     signalName(signal),
                     removed > 0 ? "; the file being written was not replaced" : "");
        std::fflush(stderr);
        ::_exit(exitStatus(signalExitCode(signal)));
    }
}

// A signal delivered to a thread that does not block it (see installInterruptHandling): to the
// thread in sigwait (pthread_kill is async-signal-safe).
pthread_t g_waiter{};
void forwardToWaiter(int signal) {
    pthread_kill(g_waiter, signal);
}

}  // namespace

void installInterruptHandling(const char* command) {
    g_command = command;
    g_newline = ::isatty(STDERR_FILENO) != 0 ? "\n" : "";
    const sigset_t set = handledSignals();
    pthread_sigmask(SIG_BLOCK, &set, nullptr);
    std::thread waiter(waitForSignals);
    g_waiter = waiter.native_handle();
    waiter.detach();
    // Threads started before this do not block the signals: OpenBLAS's pthread build starts its
    // workers when the library is loaded, before main. The kernel may deliver a signal to one
    // of them; this handler, run there, hands it to the waiting thread.
    struct sigaction action {};
    action.sa_handler = forwardToWaiter;
    sigemptyset(&action.sa_mask);
    action.sa_flags = SA_RESTART;
    for (const int signal : {SIGINT, SIGTERM, SIGHUP}) {
        ::sigaction(signal, &action, nullptr);
    }
}

const std::atomic<bool>& stopRequested() {
    return g_stop;
}

int interruptSignal() {
    return g_signal.load();
}

ExitCode interruptExitCode() {
    return signalExitCode(g_signal.load());
}

const char* signalName(int signal) {
    switch (signal) {
        case SIGINT:
            return "SIGINT";
        case SIGTERM:
            return "SIGTERM";
        case SIGHUP:
            return "SIGHUP";
        default:
            return "a signal";
    }
}

StopOnInterrupt::StopOnInterrupt() {
    g_stopScopes.fetch_add(1);
}

StopOnInterrupt::~StopOnInterrupt() {
    g_stopScopes.fetch_sub(1);
}

}  // namespace ensemble::cli
