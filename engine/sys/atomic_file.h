#pragma once

#include <functional>
#include <iosfwd>
#include <string>

#include <string_view>
#include "core/errors.h"

namespace ensemble {

// Writes `bytes` to the output path `path`, by the one rule for every output path (exports,
// --metrics, reports, CSV outputs, the app's files):
//  - a regular file or a new name is replaced atomically: the bytes go to a temporary file in
//    the same directory (".<name>.tmp-<pid>-<random>", same file system, so the rename is
//    atomic), which is flushed to disk (fsync) and then renamed over the file. Readers see the
//    old file or the complete new one, never a mixture. A new file gets 0666 & ~umask; a
//    replaced file keeps its permission bits. Temporaries that a killed process left for the
//    same name (their pid no longer runs) are removed first.
//  - a symlink is followed and the rule applies to its target, so the link stays;
//  - a path that leads to one of this process's open file descriptors (/dev/stdout,
//    /dev/fd/N, /proc/self/fd/N, or a link to one) is written through that descriptor,
//    whatever it points to (`--output /dev/stdout >> log.csv` appends);
//  - a character device or a FIFO is opened and written directly, not atomically;
//  - anything else (a directory, a socket, a block device) is refused, nothing written.
// On failure RuntimeError (kind Io) names the path and why (strerror); an atomic write then
// leaves the old file untouched and removes its temporary file.
void writeFileAtomic(const std::string& path, std::string_view bytes);

// Same, streaming, for outputs too large to build in memory first: `write` fills the stream.
// If `write` throws, its exception propagates unchanged (after the temporary file is removed);
// if it leaves the stream failed (failbit/badbit), that is a RuntimeError.
void writeFileAtomic(const std::string& path, const std::function<void(std::ostream&)>& write);

// How writeFileAtomic will write `path` (the rule above), without writing anything.
struct OutputTarget {
    enum class Kind {
        Atomic,      // a regular file or a new name: temporary file + rename over `file`
        Descriptor,  // this process's open descriptor `fd`: written through it
        Direct,      // a character device or FIFO: `file` opened and written in place
    };
    Kind kind = Kind::Atomic;
    std::string file;  // the path written (symlinks followed); empty for Descriptor
    int fd = -1;       // Descriptor only
};
// Throws RuntimeError (kind Io) naming `path` for a path the rule refuses.
OutputTarget resolveOutputPath(const std::string& path);

// For a process that is about to end on a signal (the CLI's interrupt handling): removes the
// temporary file of every writeFileAtomic in flight and keeps any new one from being created
// or renamed into place (such calls block until the process ends). Returns how many it removed.
// Safe to call from any thread while others write; not from a signal handler.
int abandonTemporaryFiles();

// The whole file as bytes. DataError naming `path` if it is missing, a directory or unreadable,
// of `kind` (what the file is for: a CSV dataset, weights), so callers can advise.
std::string readFile(const std::string& path, ErrorKind kind = ErrorKind::General);

}  // namespace ensemble
