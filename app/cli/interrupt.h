#pragma once

// Ctrl-C (SIGINT), SIGTERM and SIGHUP for ensemble-cli. The signals are blocked in every thread
// and taken by one thread of their own (sigwait), so what happens on one is ordinary code, not
// a signal handler:
//  - by default the process ends at once: the temporary file of any write in flight is removed
//    (sys/atomic_file.h: nothing half-written stays), one line says so on stderr, and the exit
//    code is 128 + the signal (130 for SIGINT, 143 for SIGTERM, 129 for SIGHUP);
//  - inside a StopOnInterrupt scope (train, around the training loop and the writes after it) a
//    signal only sets stopRequested(), which Trainer::run polls at each step boundary; the
//    command writes what it was asked for and returns interruptExitCode(). More signals there
//    are noted and do not cut a write short.
#include <atomic>

#include "core/exit_codes.h"

namespace ensemble::cli {

// Call first in main(), before any thread starts (threads inherit the blocked signals).
// `command` names the command in messages ("train").
void installInterruptHandling(const char* command);

// The flag a signal sets inside a StopOnInterrupt scope (for Trainer::run's `cancel`).
const std::atomic<bool>& stopRequested();

// The signal that arrived (SIGINT, ...), or 0 when none did.
int interruptSignal();
// 128 + interruptSignal() (core/exit_codes.h): the exit code of an interrupted command.
ExitCode interruptExitCode();
// "SIGINT", "SIGTERM", "SIGHUP".
const char* signalName(int signal);

class StopOnInterrupt {
  public:
    StopOnInterrupt();
    ~StopOnInterrupt();
    StopOnInterrupt(const StopOnInterrupt&) = delete;
    StopOnInterrupt& operator=(const StopOnInterrupt&) = delete;
};

}  // namespace ensemble::cli
