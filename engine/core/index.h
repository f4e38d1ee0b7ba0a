#pragma once

// A signed row or element count (the engine's int64_t) as an index into a std::vector.

#include <cstddef>
#include <cstdint>

namespace ensemble {

constexpr std::size_t idx(int64_t i) {
    return static_cast<std::size_t>(i);
}

}  // namespace ensemble
