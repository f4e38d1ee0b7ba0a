#pragma once

// The shape of one example's tensor, [channels, height, width]: images are [1, 28, 28], a row
// of d features is [d, 1, 1]. Shared by the data (an input's shape) and the models (each
// layer's).

#include <cstdint>

namespace ensemble {

struct Shape {
    int channels = 0;
    int height = 0;
    int width = 0;
    int64_t size() const { return int64_t{channels} * height * width; }
    int64_t plane() const { return int64_t{height} * width; }
    bool operator==(const Shape&) const = default;
};

}  // namespace ensemble
