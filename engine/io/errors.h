#pragma once

#include <stdexcept>
#include <string>

namespace ensemble {

// The error kinds users' scripts can tell apart (they map to ensemble-cli's exit codes).

// A usage or configuration mistake: unknown key, wrong type, out-of-range value (exit code 2).
class ConfigError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// A data or weights file that cannot be read or is not what it claims to be (exit code 3).
class DataError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// A failure while running: backend unavailable, out of memory, I/O failure on write (exit 4).
class RuntimeError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

}  // namespace ensemble
