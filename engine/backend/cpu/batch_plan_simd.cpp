#include "backend/cpu/batch_plan_simd.h"

#include <algorithm>
#include <cstring>

#if defined(__AVX2__) || defined(__AVX512F__)
#include <immintrin.h>
#endif

namespace ensemble {

#if defined(__GNUC__)

namespace {

// 16 lanes of 32 bits in GCC/Clang vector extensions: lowered to one AVX-512 register, two AVX2
// registers or four SSE ones, whatever the build targets.
constexpr int kWidth = 16;
typedef uint32_t U32 __attribute__((vector_size(64)));
typedef uint64_t U64 __attribute__((vector_size(64)));

inline U32 splat(uint32_t v) {
    return U32{} + v;
}

inline U32 iota(uint32_t start) {
    return U32{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15} + start;
}

inline bool anyLane(U32 m) {
#if defined(__AVX512F__)
    const __m512i v = reinterpret_cast<__m512i>(m);
    return _mm512_test_epi32_mask(v, v) != 0;
#elif defined(__AVX2__)
    __m256i lo, hi;
    std::memcpy(&lo, &m, sizeof(lo));
    std::memcpy(&hi, reinterpret_cast<const char*>(&m) + sizeof(lo), sizeof(hi));
    const __m256i both = _mm256_or_si256(lo, hi);
    return _mm256_testz_si256(both, both) == 0;
#else
    uint32_t any = 0;
    for (int i = 0; i < kWidth; ++i) {
        any |= m[i];
    }
    return any != 0;
#endif
}

// hi:lo = mul * x in every lane (philoxMulHiLo), through even and odd 64-bit products.
inline void mulHiLo(uint32_t mul, U32 x, U32& hi, U32& lo) {
    const U64 low32 = U64{} + 0xFFFFFFFFull;
    const U64 m = U64{} + mul;
    const U64 even = (((U64)x) & low32) * m;
    const U64 odd = (((U64)x) >> 32) * m;
    const U64 l = (even & low32) | (odd << 32);
    const U64 h = (even >> 32) | (odd & ~low32);
    lo = (U32)l;
    hi = (U32)h;
}

// philox4x32_10 with counter (index, 0, member, tag) in every lane: returns words 0 and 1.
inline void philoxLanes(U32 index, uint32_t member, uint32_t tag, uint64_t seed, U32& w0, U32& w1) {
    U32 c0 = index;
    U32 c1 = splat(0);
    U32 c2 = splat(member);
    U32 c3 = splat(tag);
    uint32_t key0 = static_cast<uint32_t>(seed);
    uint32_t key1 = static_cast<uint32_t>(seed >> 32);
    for (int round = 0; round < 10; ++round) {
        U32 hi0, lo0, hi1, lo1;
        mulHiLo(0xD2511F53u, c0, hi0, lo0);
        mulHiLo(0xCD9E8D57u, c2, hi1, lo1);
        c0 = hi1 ^ c1 ^ key0;
        c1 = lo1;
        c2 = hi0 ^ c3 ^ key1;
        c3 = lo0;
        key0 += 0x9E3779B9u;
        key1 += 0xBB67AE85u;
    }
    w0 = c0;
    w1 = c1;
}

// uniformIndex(hi, lo, n) in every lane.
inline U32 uniformIndexLanes(U32 hi, U32 lo, uint32_t n) {
    const U64 low32 = U64{} + 0xFFFFFFFFull;
    const U64 nv = U64{} + n;
    const U64 lowE = (((U64)lo) & low32) * nv;
    const U64 lowO = (((U64)lo) >> 32) * nv;
    const U64 highE = (((U64)hi) & low32) * nv + (lowE >> 32);
    const U64 highO = (((U64)hi) >> 32) * nv + (lowO >> 32);
    const U64 r = (highE >> 32) | (highO & ~low32);
    return (U32)r;
}

inline U32 mix32Lanes(U32 h) {
    h ^= h >> 16;
    h *= 0x85EBCA6Bu;
    h ^= h >> 13;
    h *= 0xC2B2AE35u;
    h ^= h >> 16;
    return h;
}

inline U32 feistelLanes(const Permutation& p, U32 x) {
    const uint32_t mask = (1u << p.halfBits) - 1u;
    U32 left = x >> p.halfBits;
    U32 right = x & mask;
    for (int round = 0; round < 4; ++round) {
        const U32 next = left ^ (mix32Lanes(right * 0x9E3779B1u ^ p.keys[round]) & mask);
        left = right;
        right = next;
    }
    return (left << p.halfBits) | right;
}

// p(i) in every lane; every lane must hold a valid position (< p.n).
inline U32 permuteLanes(const Permutation& p, U32 i) {
    if (p.n <= 1) {
        return splat(0);
    }
    U32 y = feistelLanes(p, i);
    U32 outside = (U32)(y >= p.n);
    while (anyLane(outside)) {
        const U32 next = feistelLanes(p, y);
        y = (next & outside) | (y & ~outside);
        outside = (U32)(y >= p.n);
    }
    return y;
}

constexpr uint32_t tagOf(RngPurpose purpose) {
    return static_cast<uint32_t>(purpose) << 24;
}

}  // namespace

void planMemberSimd(const BatchPlanParams& params, uint32_t member, uint64_t step, uint32_t* rows,
                    float* weights) {
    const uint32_t n = params.rows;
    const uint32_t stream = planStream(params, member);
    const uint64_t first = step * params.batch;
    uint64_t epoch = first / n;
    uint32_t position = static_cast<uint32_t>(first % n);
    uint32_t b = 0;
    while (b < params.batch) {
        // A run of slots within one epoch: consecutive positions of one permutation.
        const Permutation perm = makePermutation(params.seed, stream, epoch, n);
        const uint32_t run = std::min(params.batch - b, n - position);
        for (uint32_t done = 0; done < run; done += kWidth) {
            const uint32_t lanes = std::min<uint32_t>(kWidth, run - done);
            // Lanes past the run repeat a valid position (cycle walking needs one).
            U32 pos = iota(position + done);
            if (lanes < static_cast<uint32_t>(kWidth)) {
                const U32 last = splat(position + run - 1);
                const U32 past = (U32)(pos > last);
                pos = (last & past) | (pos & ~past);
            }
            U32 i = permuteLanes(perm, pos);
            if (params.mode == BootstrapMode::Resample) {
                U32 w0, w1;
                philoxLanes(i, member, tagOf(RngPurpose::Resample), params.seed, w0, w1);
                i = uniformIndexLanes(w0, w1, n);
            }
            for (uint32_t l = 0; l < lanes; ++l) {
                rows[b + done + l] = i[l];
                weights[b + done + l] = 1.0f;
            }
        }
        if (params.mode == BootstrapMode::Poisson) {
            poissonWeightsSimd(params.seed, member, rows + b, static_cast<int>(run), weights + b);
        }
        b += run;
        position += run;
        if (position == n) {
            position = 0;
            ++epoch;
        }
    }
}

void poissonWeightsSimd(uint64_t seed, uint32_t member, const uint32_t* rows, int count,
                        float* weights) {
    for (int done = 0; done < count; done += kWidth) {
        const int lanes = std::min(kWidth, count - done);
        U32 index = splat(0);
        for (int l = 0; l < lanes; ++l) {
            index[l] = rows[done + l];
        }
        U32 w0, w1;
        philoxLanes(index, member, tagOf(RngPurpose::Poisson), seed, w0, w1);
        for (int l = 0; l < lanes; ++l) {
            weights[done + l] = static_cast<float>(poissonOne(uniformOpenDouble(w0[l], w1[l])));
        }
    }
}

#else  // no vector extensions: the shared scalar definitions

void planMemberSimd(const BatchPlanParams& params, uint32_t member, uint64_t step, uint32_t* rows,
                    float* weights) {
    planMember(params, member, step, rows, weights);
}

void poissonWeightsSimd(uint64_t seed, uint32_t member, const uint32_t* rows, int count,
                        float* weights) {
    for (int b = 0; b < count; ++b) {
        weights[b] = static_cast<float>(poissonCount(seed, member, rows[b]));
    }
}

#endif

}  // namespace ensemble
