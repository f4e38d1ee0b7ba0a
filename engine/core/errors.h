#pragma once

// The errors every engine folder may throw. Each carries, as fields, what a caller needs to act
// on it without reading the text: the config key, the file position, and a kind that says what
// the person can do about it (the app's advice, the CLI's exit code). The message (what())
// stays the full human sentence: "model.hiden: unknown key (known: activation, hidden)".

#include <cstdint>
#include <stdexcept>
#include <string>

namespace ensemble {

// What went wrong, as far as a person fixing it cares. The exception's class gives the exit
// code (core/exit_codes.h, exitCodeFor); the kind refines the message, not the code.
enum class ErrorKind {
    General,         // nothing more specific to say
    Config,          // a config key: unknown, wrong type, out of range, not applicable
    Csv,             // a CSV dataset file
    ImageData,       // MNIST / Fashion-MNIST IDX files (missing, truncated, corrupt)
    Weights,         // a safetensors file or the model it describes
    Json,            // a JSON document that does not parse
    BackendMissing,  // the backend asked for is not built or has no usable device (CUDA)
    Memory,          // the run does not fit in memory
    Io,              // writing or reading a file failed (permissions, disk full)
};

// Where in a file an error is: line and column are 1-based, 0 when unknown.
struct FilePosition {
    std::string file;
    int64_t line = 0;
    int64_t column = 0;
};

class Error : public std::runtime_error {
  public:
    Error(ErrorKind kind, const std::string& message)
        : std::runtime_error(message), m_kind(kind), m_reason(message) {}

    ErrorKind kind() const { return m_kind; }
    // The dotted config key the error is about ("ensemble.members", "model.hidden[1]"), or empty.
    const std::string& key() const { return m_key; }
    // The message without its "key: " prefix, for a form that shows it next to the key's field.
    const std::string& reason() const { return m_reason; }
    const FilePosition& position() const { return m_position; }

  protected:
    void setKey(std::string key, std::string reason) {
        m_key = std::move(key);
        m_reason = std::move(reason);
    }
    void setPosition(FilePosition position) { m_position = std::move(position); }

  private:
    ErrorKind m_kind;
    std::string m_key;
    std::string m_reason;
    FilePosition m_position;
};

// A usage or configuration mistake: unknown key, wrong type, out-of-range value, a key that does
// not apply (ExitCode::Usage).
class ConfigError : public Error {
  public:
    explicit ConfigError(const std::string& message) : Error(ErrorKind::Config, message) {}
    // "key: reason", with both kept as fields.
    ConfigError(const std::string& key, const std::string& reason)
        : Error(ErrorKind::Config, key + ": " + reason) {
        setKey(key, reason);
    }
    // A config document that is not what it must be (not JSON): `kind` says which problem.
    ConfigError(ErrorKind kind, FilePosition position, const std::string& message)
        : Error(kind, message) {
        setPosition(std::move(position));
    }
    // A key in a file: "file:line:column: key: reason".
    ConfigError(const std::string& key, const std::string& reason, FilePosition position)
        : Error(ErrorKind::Config, prefix(position) + key + ": " + reason) {
        setKey(key, reason);
        setPosition(std::move(position));
    }

  private:
    static std::string prefix(const FilePosition& p) {
        std::string out = p.file;
        if (p.line > 0) {
            out += ":" + std::to_string(p.line);
            if (p.column > 0) {
                out += ":" + std::to_string(p.column);
            }
        }
        return out.empty() ? out : out + ": ";
    }
};

// A data or weights file that cannot be read or is not what it claims to be (ExitCode::BadInput).
class DataError : public Error {
  public:
    explicit DataError(const std::string& message) : Error(ErrorKind::General, message) {}
    DataError(ErrorKind kind, const std::string& message) : Error(kind, message) {}
    DataError(ErrorKind kind, FilePosition position, const std::string& message)
        : Error(kind, message) {
        setPosition(std::move(position));
    }
};

// A failure while running: backend unavailable, out of memory, I/O failure on write
// (ExitCode::Runtime).
class RuntimeError : public Error {
  public:
    explicit RuntimeError(const std::string& message) : Error(ErrorKind::General, message) {}
    RuntimeError(ErrorKind kind, const std::string& message) : Error(kind, message) {}
};

}  // namespace ensemble
