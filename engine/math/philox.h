#pragma once

#include <cstdint>

#include "math/hd.h"
#include "math/lane.h"

namespace ensemble {

// Philox-4x32-10 counter-based generator (Salmon et al., "Parallel random numbers: as easy as
// 1, 2, 3", SC 2011). A pure function of (counter, key): any draw can be computed independently,
// in any order, on any thread or device, which is what makes training bit-reproducible.
// Written once over a word lane type (math/lane.h): uint32_t for one draw, a SIMD vector of
// words for many counters at once (backend/cpu/simd_lanes.h). The key is the same in every lane.
template <typename U>
struct Philox4x32Lanes {
    U v[4];
};
using Philox4x32 = Philox4x32Lanes<uint32_t>;

template <typename U>
ENSEMBLE_HD inline Philox4x32Lanes<U> philox4x32_10(Philox4x32Lanes<U> ctr, uint32_t key0,
                                                    uint32_t key1) {
    constexpr uint32_t kMul0 = 0xD2511F53u;
    constexpr uint32_t kMul1 = 0xCD9E8D57u;
    constexpr uint32_t kWeyl0 = 0x9E3779B9u;
    constexpr uint32_t kWeyl1 = 0xBB67AE85u;
    for (int round = 0; round < 10; ++round) {
        U hi0, lo0, hi1, lo1;
        Lane<U>::mulHiLo(kMul0, ctr.v[0], hi0, lo0);
        Lane<U>::mulHiLo(kMul1, ctr.v[2], hi1, lo1);
        ctr = Philox4x32Lanes<U>{{hi1 ^ ctr.v[1] ^ key0, lo1, hi0 ^ ctr.v[3] ^ key1, lo0}};
        key0 += kWeyl0;
        key1 += kWeyl1;
    }
    return ctr;
}

// What a stream of draws is used for; part of the counter so streams never overlap.
enum class RngPurpose : uint32_t {
    Init = 1,
    Resample = 2,
    Permutation = 3,
    Poisson = 4,
    DataGen = 5,
    Split = 6,
    Subset = 7,
    Halves = 8,          // metrics/conformal.h: the fitting and measuring halves of evaluated rows
    Shift = 9,           // shift/transforms.h: noise shifts and OOD sets
    Active = 10,         // active/active_learning.h: initial set, pool subsets, `random` scores
    Dropout = 11,        // math/dropout.h: the training masks
    DropoutMember = 12,  // math/dropout.h: an mc_dropout member's fixed mask
    BatchEnsembleSigns = 13,  // model/batch_ensemble.h: the fast weights' initial signs
    DropoutLayer = 14,        // math/dropout.h: a dropout layer's training masks
    DropoutLayerMember = 15,  // math/dropout.h: an mc_dropout member's mask at a dropout layer
};

// Draw number `index` of stream (seed, purpose, member, sub): four independent 32-bit words,
// in every lane (index = indexHi:indexLo).
template <typename U>
ENSEMBLE_HD inline Philox4x32Lanes<U> philoxDrawLanes(uint64_t seed, RngPurpose purpose,
                                                      uint32_t member, U indexLo, U indexHi,
                                                      uint32_t sub = 0) {
    const Philox4x32Lanes<U> ctr{
        {indexLo, indexHi, Lane<U>::broadcast(member),
         Lane<U>::broadcast((static_cast<uint32_t>(purpose) << 24) ^ sub)}};
    return philox4x32_10(ctr, static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32));
}

ENSEMBLE_HD inline Philox4x32 philoxDraw(uint64_t seed, RngPurpose purpose, uint32_t member,
                                         uint64_t index, uint32_t sub = 0) {
    return philoxDrawLanes(seed, purpose, member, static_cast<uint32_t>(index),
                           static_cast<uint32_t>(index >> 32), sub);
}

// Uniform float in [0, 1) with 24 random bits (every value exactly representable).
ENSEMBLE_HD inline float uniformFloat(uint32_t bits) {
    return static_cast<float>(bits >> 8) * (1.0f / 16777216.0f);
}

// Uniform double in (0, 1): never 0, so log() is safe (Box-Muller, inverse CDFs).
ENSEMBLE_HD inline double uniformOpenDouble(uint32_t hi, uint32_t lo) {
    const uint64_t bits = (static_cast<uint64_t>(hi) << 21) ^ static_cast<uint64_t>(lo >> 11);
    return (static_cast<double>(bits & ((uint64_t{1} << 53) - 1)) + 0.5) *
           (1.0 / 9007199254740992.0);
}

// Uniform integer in [0, n) from 64 random bits by multiply-shift (Lemire 2019). The bias is
// at most n / 2^64, far below anything measurable for n < 2^32.
// floor(r * n / 2^64) for r = hi:lo, from two 32x32->64 products (no 128-bit type needed):
// the high word of hi * n + high(lo * n).
template <typename U>
ENSEMBLE_HD inline U uniformIndexLanes(U hi, U lo, uint32_t n) {
    return Lane<U>::mulAddHi(n, hi, Lane<U>::mulAddHi(n, lo, Lane<U>::broadcast(0)));
}

ENSEMBLE_HD inline uint32_t uniformIndex(uint32_t hi, uint32_t lo, uint32_t n) {
    return uniformIndexLanes(hi, lo, n);
}

}  // namespace ensemble
