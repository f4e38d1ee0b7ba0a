#pragma once

// Lanes: the one vocabulary the shared math is written in, as Eigen writes a functor once for
// scalars and packets. A rule (Adam, softmax cross-entropy, Philox, the Feistel permutation) is
// a template over a lane type L and calls only the operations below, so the same source runs
// as one value per call (a CPU loop, a CUDA thread: L = float, double or uint32_t) or as a
// SIMD register of values (the CPU fast paths: backend/cpu/simd_lanes.h specialises Lane<> for
// an Eigen packet of floats and a GCC vector of 32-bit words).
//
// An operation is one rounding step (dot2: at most three): a rule spells out its order of
// operations, and every lane type performs exactly those, so the scalar and SIMD results differ
// only where the lane types' exp/log differ (libm vs Eigen's polynomials) or the host compiler
// fuses a multiply-add (GCC contracts a*b + c, -ffp-contract=fast; the CUDA target is built
// with --fmad=false). dot2 is one operation so that each lane type keeps the contraction it
// had before the rules were shared: GCC picks the product to fuse by statement order, which
// differs between a*x + b*y and nested calls.
//
// Float lanes:  broadcast, add, sub, mul, div, dot2 (a*x + b*y), sqrt, exp, log, max, equal,
//               selectOrZero (mask ? a : 0); a mask is Lane<L>::Mask (bool for scalars).
// Word lanes:   broadcast, mulHiLo (32 x 32 -> 64 bits), mulAddHi, greaterEqual, select, any; the
//               integer operators (+ ^ & | << >> *) are the language's own, by a scalar too.

#include <cstdint>

#include "math/hd.h"

namespace ensemble {

template <typename L>
struct Lane;

template <typename T>
struct ScalarFloatLane {
    using Mask = bool;
    using Scalar = T;
    static ENSEMBLE_HD T broadcast(T v) { return v; }
    static ENSEMBLE_HD T add(T a, T b) { return a + b; }
    static ENSEMBLE_HD T sub(T a, T b) { return a - b; }
    static ENSEMBLE_HD T mul(T a, T b) { return a * b; }
    static ENSEMBLE_HD T div(T a, T b) { return a / b; }
    static ENSEMBLE_HD T dot2(T a, T x, T b, T y) { return a * x + b * y; }
    static ENSEMBLE_HD T sqrt(T a) { return hd::sqrt(a); }
    static ENSEMBLE_HD T exp(T a) { return hd::exp(a); }
    static ENSEMBLE_HD T log(T a) { return hd::log(a); }
    // std::max(a, b)'s rule: a unless b is larger (a NaN in b is dropped).
    static ENSEMBLE_HD T max(T a, T b) { return b > a ? b : a; }
    static ENSEMBLE_HD bool equal(T a, T b) { return a == b; }
    static ENSEMBLE_HD T selectOrZero(bool m, T a) { return m ? a : T(0); }
};

template <>
struct Lane<float> : ScalarFloatLane<float> {};
template <>
struct Lane<double> : ScalarFloatLane<double> {};

template <>
struct Lane<uint32_t> {
    using Mask = bool;
    using Scalar = uint32_t;
    static ENSEMBLE_HD uint32_t broadcast(uint32_t v) { return v; }
    // hi:lo = a * x, the full 64-bit product.
    static ENSEMBLE_HD void mulHiLo(uint32_t a, uint32_t x, uint32_t& hi, uint32_t& lo) {
        const uint64_t p = static_cast<uint64_t>(a) * static_cast<uint64_t>(x);
        hi = static_cast<uint32_t>(p >> 32);
        lo = static_cast<uint32_t>(p);
    }
    // The high word of a * x + c (which never overflows 64 bits).
    static ENSEMBLE_HD uint32_t mulAddHi(uint32_t a, uint32_t x, uint32_t c) {
        return static_cast<uint32_t>((static_cast<uint64_t>(x) * a + c) >> 32);
    }
    static ENSEMBLE_HD bool greaterEqual(uint32_t a, uint32_t b) { return a >= b; }
    static ENSEMBLE_HD uint32_t select(bool m, uint32_t a, uint32_t b) { return m ? a : b; }
    static ENSEMBLE_HD bool any(bool m) { return m; }
};

// Free-function spelling of the operations, so rules read as formulas: lane::add(a, b).
namespace lane {

template <typename L>
ENSEMBLE_HD inline L broadcast(typename Lane<L>::Scalar v) {
    return Lane<L>::broadcast(v);
}
template <typename L>
ENSEMBLE_HD inline L add(L a, L b) {
    return Lane<L>::add(a, b);
}
template <typename L>
ENSEMBLE_HD inline L sub(L a, L b) {
    return Lane<L>::sub(a, b);
}
template <typename L>
ENSEMBLE_HD inline L mul(L a, L b) {
    return Lane<L>::mul(a, b);
}
template <typename L>
ENSEMBLE_HD inline L div(L a, L b) {
    return Lane<L>::div(a, b);
}
template <typename L>
ENSEMBLE_HD inline L dot2(L a, L x, L b, L y) {
    return Lane<L>::dot2(a, x, b, y);
}
template <typename L>
ENSEMBLE_HD inline L sqrt(L a) {
    return Lane<L>::sqrt(a);
}
template <typename L>
ENSEMBLE_HD inline L exp(L a) {
    return Lane<L>::exp(a);
}
template <typename L>
ENSEMBLE_HD inline L log(L a) {
    return Lane<L>::log(a);
}
template <typename L>
ENSEMBLE_HD inline L max(L a, L b) {
    return Lane<L>::max(a, b);
}
template <typename L>
ENSEMBLE_HD inline typename Lane<L>::Mask equal(L a, L b) {
    return Lane<L>::equal(a, b);
}
template <typename L>
ENSEMBLE_HD inline L selectOrZero(typename Lane<L>::Mask m, L a) {
    return Lane<L>::selectOrZero(m, a);
}

}  // namespace lane

}  // namespace ensemble
