#pragma once

#include <cstddef>

namespace ensemble {

// Built-in presets, compiled in from resources/presets/*.json (see engine/CMakeLists.txt), so
// `--config spirals` works wherever the binary is, installed or not.
struct EmbeddedPreset {
    const char* name;
    const char* text;
};

// Defined in the generated presets_embedded.cpp.
const EmbeddedPreset* embeddedPresets(std::size_t& count);

}  // namespace ensemble
