#pragma once

// The CPU's SIMD lane types for the shared rules (math/lane.h): Eigen's widest float packet
// (16 floats with AVX-512, 8 with AVX) and 16 words in GCC/Clang vector extensions (one
// AVX-512 register, two AVX2 or four SSE ones, whatever the build targets). Included only by
// the fast paths' .cpp files, which are compiled with the engine's -march flags.

#include <Eigen/Core>
#include <cstdint>
#include <cstring>

#include "math/lane.h"

#if defined(__AVX2__) || defined(__AVX512F__)
#include <immintrin.h>
#endif

// Eigen's packet types are vector types with alignment attributes, which GCC drops (and warns
// about) when they are template arguments; Eigen silences the same warning internally.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wignored-attributes"
#endif

namespace ensemble {

namespace simd {

using Packet = Eigen::internal::packet_traits<float>::type;
constexpr int kLanes = Eigen::internal::unpacket_traits<Packet>::size;

#if defined(__GNUC__)
#define ENSEMBLE_HAVE_WORD_LANES 1
constexpr int kWordLanes = 16;
typedef uint32_t Words __attribute__((vector_size(64)));
typedef uint64_t Words64 __attribute__((vector_size(64)));

inline Words iota(uint32_t start) {
    return Words{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15} + start;
}
#endif

}  // namespace simd

// Float lanes: Eigen's packet math (pexp/plog are its polynomial approximations, not libm's).
template <>
struct Lane<simd::Packet> {
    using P = simd::Packet;
    using Mask = P;  // all-ones or all-zeros bits per lane
    using Scalar = float;
    static P broadcast(float v) { return Eigen::internal::pset1<P>(v); }
    static P add(P a, P b) { return Eigen::internal::padd(a, b); }
    static P sub(P a, P b) { return Eigen::internal::psub(a, b); }
    static P mul(P a, P b) { return Eigen::internal::pmul(a, b); }
    static P div(P a, P b) { return Eigen::internal::pdiv(a, b); }
    static P dot2(P a, P x, P b, P y) {
        return Eigen::internal::padd(Eigen::internal::pmul(a, x), Eigen::internal::pmul(b, y));
    }
    static P sqrt(P a) { return Eigen::internal::psqrt(a); }
    static P exp(P a) { return Eigen::internal::pexp(a); }
    static P log(P a) { return Eigen::internal::plog(a); }
    // std::max(a, b)'s rule, as the scalar lane (Eigen orders the instruction's operands so).
    static P max(P a, P b) { return Eigen::internal::pmax(a, b); }
    static Mask equal(P a, P b) { return Eigen::internal::pcmp_eq(a, b); }
    static P selectOrZero(Mask m, P a) { return Eigen::internal::pand(m, a); }
};

#if defined(ENSEMBLE_HAVE_WORD_LANES)

// Word lanes: the integer operators are the vector extension's own.
template <>
struct Lane<simd::Words> {
    using W = simd::Words;
    using W64 = simd::Words64;
    using Mask = W;  // all-ones or all-zeros per lane
    using Scalar = uint32_t;
    static W broadcast(uint32_t v) { return W{} + v; }
    // hi:lo = a * x in every lane, through the even and odd lanes' 64-bit products.
    static void mulHiLo(uint32_t a, W x, W& hi, W& lo) {
        const W64 low32 = W64{} + 0xFFFFFFFFull;
        const W64 m = W64{} + a;
        const W64 even = (reinterpret_cast<W64>(x) & low32) * m;
        const W64 odd = (reinterpret_cast<W64>(x) >> 32) * m;
        lo = reinterpret_cast<W>((even & low32) | (odd << 32));
        hi = reinterpret_cast<W>((even >> 32) | (odd & ~low32));
    }
    // The high word of a * x + c in every lane (which never overflows 64 bits).
    static W mulAddHi(uint32_t a, W x, W c) {
        const W64 low32 = W64{} + 0xFFFFFFFFull;
        const W64 m = W64{} + a;
        const W64 even =
            (reinterpret_cast<W64>(x) & low32) * m + (reinterpret_cast<W64>(c) & low32);
        const W64 odd = (reinterpret_cast<W64>(x) >> 32) * m + (reinterpret_cast<W64>(c) >> 32);
        return reinterpret_cast<W>((even >> 32) | (odd & ~low32));
    }
    static Mask greaterEqual(W a, W b) { return reinterpret_cast<W>(a >= b); }
    static W select(Mask m, W a, W b) { return (a & m) | (b & ~m); }
    static bool any(Mask m) {
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
        uint32_t bits = 0;
        for (int i = 0; i < simd::kWordLanes; ++i) {
            bits |= m[i];
        }
        return bits != 0;
#endif
    }
};

#endif

}  // namespace ensemble
