#pragma once

// The vector instruction set the including translation unit is compiled for, read from the
// compiler's macros: the built-in CPU backend reports the engine's flags with it
// (kernel_report.cpp), a level object (backend/cpu/level_object.cpp) its own -march.

#include <Eigen/Core>

namespace ensemble {

// "AVX-512", "AVX2+FMA", "AVX", "SSE4.2", "SSE2", or "generic".
constexpr const char* compiledIsaName() {
#if defined(__AVX512F__)
    return "AVX-512";
#elif defined(__AVX2__) && defined(__FMA__)
    return "AVX2+FMA";
#elif defined(__AVX__)
    return "AVX";
#elif defined(__SSE4_2__)
    return "SSE4.2";
#elif defined(__SSE2__)
    return "SSE2";
#else
    return "generic";
#endif
}

// The x86-64 micro-architecture level the flags reach (1: baseline, 2, 3, 4), as -march
// x86-64-vN sets them.
constexpr int compiledX86Level() {
#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512DQ__) && defined(__AVX512VL__)
    return 4;
#elif defined(__AVX2__) && defined(__FMA__) && defined(__BMI2__)
    return 3;
#elif defined(__SSE4_2__) && defined(__POPCNT__)
    return 2;
#else
    return 1;
#endif
}

// That level's name: "x86-64", "x86-64-v2", "x86-64-v3", "x86-64-v4".
constexpr const char* compiledX86LevelName() {
    constexpr const char* names[] = {"x86-64", "x86-64-v2", "x86-64-v3", "x86-64-v4"};
    return names[compiledX86Level() - 1];
}

// Floats in one of Eigen's packets.
constexpr int compiledFloatLanes() {
    return Eigen::internal::packet_traits<float>::size;
}

}  // namespace ensemble
