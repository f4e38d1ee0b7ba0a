#pragma once

#include <functional>
#include <iosfwd>
#include <string>

#include <string_view>
#include "core/errors.h"

namespace ensemble {

// Writes `bytes` to `path` atomically: readers see either the old file or the complete new
// one, never a partial write. The bytes go to a temporary file in the same directory
// (".<name>.tmp-<random>", same file system, so the rename is atomic), which is flushed to disk
// (fsync) and then renamed over `path`. A new file gets the usual 0666 & ~umask permissions; a
// replaced file keeps its permission bits. On failure the temporary file is removed, `path` is
// untouched, and RuntimeError names what failed and why (strerror).
// Note: a symlink at `path` is replaced by a regular file, not followed.
void writeFileAtomic(const std::string& path, std::string_view bytes);

// Same, streaming, for outputs too large to build in memory first: `write` fills the stream.
// If `write` throws, its exception propagates unchanged (after the temporary file is removed);
// if it leaves the stream failed (failbit/badbit), that is a RuntimeError.
void writeFileAtomic(const std::string& path, const std::function<void(std::ostream&)>& write);

// The whole file as bytes. DataError naming `path` if it is missing, a directory or unreadable,
// of `kind` (what the file is for: a CSV dataset, weights), so callers can advise.
std::string readFile(const std::string& path, ErrorKind kind = ErrorKind::General);

}  // namespace ensemble
