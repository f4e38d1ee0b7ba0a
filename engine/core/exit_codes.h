#pragma once

// The process exit codes of ensemble-cli and ensemble-lab. They are a public contract: users'
// scripts test them, so a value never changes meaning; a new kind of failure gets a new value.
//
//   code     ExitCode    when                                                  thrown as
//   0        Ok          success
//   2        Usage       a usage or config mistake: unknown command or flag,   ConfigError
//                        missing value, unknown/mistyped/out-of-range key
//   3        BadInput    a data or weights file that cannot be read or is      DataError
//                        not what it claims to be
//   4        Runtime     any other failure while running: backend missing,     RuntimeError,
//                        out of memory, a write that failed                    any other exception
//   128 + N  SignalBase  ended by signal N: 129 SIGHUP, 130 SIGINT (Ctrl-C),
//                        143 SIGTERM (app/cli/interrupt.h)
//
// exitCodeFor() is the one mapping from an error to its code: the exception's class decides
// (core/errors.h); its ErrorKind refines the message and the app's advice, never the code.

#include <csignal>
#include <exception>

#include "core/errors.h"

namespace ensemble {

enum class ExitCode : int {
    Ok = 0,
    Usage = 2,
    BadInput = 3,
    Runtime = 4,
    SignalBase = 128,
};

// The value a process returns from main() or passes to exit().
constexpr int exitStatus(ExitCode code) {
    return static_cast<int>(code);
}

// 128 + signal: the code of a process ended by `signal` (SIGINT gives 130).
constexpr ExitCode signalExitCode(int signal) {
    return static_cast<ExitCode>(exitStatus(ExitCode::SignalBase) + signal);
}

inline ExitCode exitCodeFor(const std::exception& error) {
    if (dynamic_cast<const ConfigError*>(&error) != nullptr) {
        return ExitCode::Usage;
    }
    if (dynamic_cast<const DataError*>(&error) != nullptr) {
        return ExitCode::BadInput;
    }
    return ExitCode::Runtime;
}

// The table above for help texts, the values read from the enum: "0 ok, 2 usage/config error".
struct ExitCodeRow {
    int status;
    const char* meaning;
};

inline constexpr ExitCodeRow kExitCodeTable[] = {
    {exitStatus(ExitCode::Ok), "ok"},
    {exitStatus(ExitCode::Usage), "usage/config error"},
    {exitStatus(ExitCode::BadInput), "bad data or weights file"},
    {exitStatus(ExitCode::Runtime), "runtime failure"},
    {exitStatus(signalExitCode(SIGINT)), "interrupted by Ctrl-C (SIGINT)"},
    {exitStatus(signalExitCode(SIGTERM)), "by SIGTERM"},
};

}  // namespace ensemble
