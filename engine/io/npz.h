#pragma once

#include <cstdint>
#include <ostream>
#include <string>

#include "io/safetensors.h"

namespace ensemble {

// NumPy's .npz: a zip archive of .npy files (NumPy's format 1.0, or 2.0 for a header over
// 64 KiB), one per array, stored without compression, so `numpy.load(F, allow_pickle=False)`
// opens it. Every tensor of `file` becomes the entry "<name>.npy", the array of that name:
// same dtype (<f4, <i4, <f8, <i8, |u1), same shape, the same bytes. The safetensors
// __metadata__ string map becomes "__metadata__.npy", a 0-d unicode array (<U n, UTF-32) of
// one JSON object whose keys and values are exactly the map's strings.
//
// Zip64 records (zip64 extra fields, the zip64 end of central directory record and its
// locator) are written when the archive needs them: an entry or an offset past 4 GiB - 1, or
// more than 65534 entries.
struct NpzOptions {
    // Writes the zip64 records for every entry and the archive even when nothing needs them
    // (for tests of the zip64 path on small files; readers accept either form).
    bool forceZip64 = false;
};

// The archive's bytes, streamed to `out`.
void writeNpzTo(std::ostream& out, const SafetensorsFile& file, const NpzOptions& options = {});

// Writes the archive to `path` atomically (writeFileAtomic). RuntimeError on failure.
void writeNpz(const std::string& path, const SafetensorsFile& file, const NpzOptions& options = {});

// The .npy header of an array (magic, version, header length, the dict padded with spaces to
// a multiple of 64 bytes and ending in '\n').
std::string npyHeader(const std::string& descr, const std::vector<int64_t>& shape);

}  // namespace ensemble
