#pragma once
// Shared by the fuzz targets. The contract every reader is held to: a bad input ends in an
// ensemble::Error (ConfigError, DataError, RuntimeError) with a message, nothing else. Any other
// exception escapes LLVMFuzzerTestOneInput, std::terminate aborts, and libFuzzer saves the input
// as a crash; so do ASan/UBSan reports, allocations above -malloc_limit_mb and time-outs.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <string_view>

#include "core/errors.h"

namespace ensemble::fuzz {

// Aborts with a message: an invariant of a successful parse does not hold.
[[noreturn]] inline void fail(const char* what) {
    std::fprintf(stderr, "fuzz invariant violated: %s\n", what);
    std::abort();
}

inline void check(bool ok, const char* what) {
    if (!ok) {
        fail(what);
    }
}

// A private folder for the readers that take a path (IDX through zlib, config files): made
// once per process with mkdtemp, removed at exit. Files in it are rewritten for every input.
class TempDir {
  public:
    TempDir() {
        std::string pattern = (std::filesystem::temp_directory_path() / "ensemble-fuzz-XXXXXX");
        if (mkdtemp(pattern.data()) == nullptr) {
            fail("mkdtemp");
        }
        m_path = pattern;
    }
    TempDir(const TempDir&) = delete;
    TempDir& operator=(const TempDir&) = delete;
    ~TempDir() {
        std::error_code ec;
        std::filesystem::remove_all(m_path, ec);
    }

    // Writes `bytes` to `name` in the folder and returns the file's path.
    std::string write(const std::string& name, std::string_view bytes) const {
        const std::string path = m_path + "/" + name;
        std::FILE* f = std::fopen(path.c_str(), "wb");
        if (f == nullptr || std::fwrite(bytes.data(), 1, bytes.size(), f) != bytes.size() ||
            std::fclose(f) != 0) {
            fail("cannot write the input to the temporary folder");
        }
        return path;
    }

  private:
    std::string m_path;
};

}  // namespace ensemble::fuzz
