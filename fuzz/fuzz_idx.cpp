// Fuzzes the IDX reader, raw and gzip (zlib detects which). One input holds both files of a
// pair: the first two bytes (little-endian) say how many of the rest belong to the images file;
// the labels file is what follows. Both are read in memory (parseIdxPair), through the same
// code as files.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "data/dataset.h"
#include "fuzz_support.h"

using namespace ensemble;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
    if (size < 2) {
        return 0;
    }
    const std::size_t rest = size - 2;
    const std::size_t split = std::min<std::size_t>(data[0] | (std::size_t{data[1]} << 8), rest);
    const std::string_view bytes(reinterpret_cast<const char*>(data) + 2, rest);
    try {
        int width = 0;
        int height = 0;
        const Dataset d = parseIdxPair(bytes.substr(0, split), bytes.substr(split),
                                       "images-idx3-ubyte", "labels-idx1-ubyte", width, height);
        fuzz::check(width > 0 && height > 0 && d.features == width * height,
                    "features are width x height");
        fuzz::check(
            d.x.size() == static_cast<std::size_t>(d.rows) * static_cast<std::size_t>(d.features),
            "x is rows x features");
        fuzz::check(d.y.size() == static_cast<std::size_t>(d.rows), "one label per image");
    } catch (const Error&) {
    }
    return 0;
}
