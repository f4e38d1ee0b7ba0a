#pragma once

#include <cstdint>

#include "math/hd.h"
#include "math/lane.h"
#include "math/philox.h"

namespace ensemble {

// How ensemble members see the training data (config key `ensemble.bootstrap`).
enum class BootstrapMode : uint32_t {
    None = 0,      // every member gets the same batches
    Resample = 1,  // member k trains on its own bootstrap resample D_k of size N
    Poisson = 2,   // same batches, per-member Poisson(1) weight fixed per row (online bagging)
    Shuffle = 3,   // member k walks all N rows in its own permutation each epoch (Deep Ensembles)
};

// Whether member k's batches are its own (its own epoch order), not the ones every member
// shares: what decides whether a backend plans and gathers a batch per member or once.
ENSEMBLE_HD inline bool ownBatches(BootstrapMode mode) {
    return mode == BootstrapMode::Resample || mode == BootstrapMode::Shuffle;
}

// Member index used for streams shared by all members (the common batch order).
constexpr uint32_t kSharedStream = 0xFFFFFFFFu;

// The permutation's pieces are written once over a word lane type (math/lane.h): uint32_t for
// one position (planMember, the CUDA kernels), a SIMD vector of positions on the CPU
// (backend/cpu/batch_plan_simd.cpp).

// murmur3's 32-bit finaliser: a cheap, well-mixing round function for the Feistel network.
template <typename U>
ENSEMBLE_HD inline U mix32(U h) {
    h ^= h >> 16;
    h *= 0x85EBCA6Bu;
    h ^= h >> 13;
    h *= 0xC2B2AE35u;
    h ^= h >> 16;
    return h;
}

// A keyed bijection of [0, n): a 4-round Feistel network on the smallest even-bit power of
// two >= n, restricted to [0, n) by cycle walking (Black & Rogaway 2002). Nothing of size n is
// stored, so every member can walk its own epoch order for free.
struct Permutation {
    uint32_t n = 1;
    uint32_t halfBits = 0;
    uint32_t keys[4] = {0, 0, 0, 0};

    // The Feistel network on [0, 4^halfBits), in every lane.
    template <typename U>
    ENSEMBLE_HD U feistel(U x) const {
        const uint32_t mask = (1u << halfBits) - 1u;
        U left = x >> halfBits;
        U right = x & mask;
        for (int round = 0; round < 4; ++round) {
            const U next = left ^ (mix32<U>(right * 0x9E3779B1u ^ keys[round]) & mask);
            left = right;
            right = next;
        }
        return (left << halfBits) | right;
    }

    // p(i) in every lane; lanes walk their cycles until all are inside [0, n).
    // Precondition: every lane of i is < n.
    template <typename U>
    ENSEMBLE_HD U permute(U i) const {
        if (n <= 1) {
            return Lane<U>::broadcast(0);
        }
        U y = feistel(i);
        typename Lane<U>::Mask outside = Lane<U>::greaterEqual(y, Lane<U>::broadcast(n));
        while (Lane<U>::any(outside)) {
            y = Lane<U>::select(outside, feistel(y), y);
            outside = Lane<U>::greaterEqual(y, Lane<U>::broadcast(n));
        }
        return y;
    }

    // Precondition: i < n.
    ENSEMBLE_HD uint32_t operator()(uint32_t i) const { return permute(i); }
};

ENSEMBLE_HD inline Permutation makePermutation(uint64_t seed, uint32_t member, uint64_t epoch,
                                               uint32_t n) {
    Permutation p;
    p.n = n;
    uint32_t bits = 0;
    while (bits < 32 && (uint64_t{1} << bits) < n) {
        ++bits;
    }
    bits += bits & 1u;
    p.halfBits = bits / 2;
    const Philox4x32 r = philoxDraw(seed, RngPurpose::Permutation, member, epoch);
    for (int i = 0; i < 4; ++i) {
        p.keys[i] = r.v[i];
    }
    return p;
}

// Row j of member k's bootstrap resample D_k: uniform over [0, n), drawn from (seed, k, j).
template <typename U>
ENSEMBLE_HD inline U resampleRowLanes(uint64_t seed, uint32_t member, U j, uint32_t n) {
    const Philox4x32Lanes<U> r =
        philoxDrawLanes(seed, RngPurpose::Resample, member, j, Lane<U>::broadcast(0));
    return uniformIndexLanes(r.v[0], r.v[1], n);
}

ENSEMBLE_HD inline uint32_t resampleRow(uint64_t seed, uint32_t member, uint32_t j, uint32_t n) {
    return resampleRowLanes(seed, member, j, n);
}

// Poisson(1) draw by inverse CDF from one uniform; capped at 64 (P(X > 64) < 1e-89).
ENSEMBLE_HD inline uint32_t poissonOne(double u) {
    double p = 0.36787944117144233;  // e^-1 = P(X = 0)
    double cdf = p;
    uint32_t k = 0;
    while (u > cdf && k < 64) {
        ++k;
        p /= static_cast<double>(k);
        cdf += p;
    }
    return k;
}

// Member k's Poisson(1) multiplicity of train row `row`: fixed for the whole run.
ENSEMBLE_HD inline uint32_t poissonCount(uint64_t seed, uint32_t member, uint32_t row) {
    const Philox4x32 r = philoxDraw(seed, RngPurpose::Poisson, member, row);
    return poissonOne(uniformOpenDouble(r.v[0], r.v[1]));
}

struct BatchPlanParams {
    uint64_t seed = 0;
    uint32_t rows = 0;   // N, train rows
    uint32_t batch = 0;  // B
    BootstrapMode mode = BootstrapMode::None;
    // The global index of the backend's member 0: a backend bound to members [o, o + K) of a
    // larger ensemble (one MPI rank's share) keys member k's resample, Poisson weights and
    // batch order by o + k, so its trajectory is the one a single process computes.
    uint32_t memberOffset = 0;
};

// The training stream is continuous: step t, slot b reads sample p = t*B + b of the infinite
// sequence epoch 0, epoch 1, ...; epoch e = p / N visits all N positions once in a fresh
// permutation. Every batch is full and no row is dropped at an epoch's end.
struct PlanCursor {
    uint64_t epoch;
    uint32_t position;
};

ENSEMBLE_HD inline PlanCursor planCursor(const BatchPlanParams& params, uint64_t step, uint32_t b) {
    const uint64_t p = step * params.batch + b;
    return PlanCursor{p / params.rows, static_cast<uint32_t>(p % params.rows)};
}

// The row member k reads at (step, b), and its example weight. Uses the permutation `perm`,
// which the caller built for (seed, stream member, cursor.epoch) and may reuse within an epoch.
ENSEMBLE_HD inline uint32_t planRowWith(const BatchPlanParams& params, const Permutation& perm,
                                        uint32_t member, uint32_t position, float& weight) {
    weight = 1.0f;
    const uint32_t i = perm(position);
    if (params.mode == BootstrapMode::Resample) {
        return resampleRow(params.seed, member, i, params.rows);
    }
    if (params.mode == BootstrapMode::Poisson) {
        weight = static_cast<float>(poissonCount(params.seed, member, i));
    }
    return i;
}

// Which stream orders member k's epochs: its own under `resample` and `shuffle`, the shared
// one otherwise.
ENSEMBLE_HD inline uint32_t planStream(const BatchPlanParams& params, uint32_t member) {
    return ownBatches(params.mode) ? member : kSharedStream;
}

// Convenience form for one slot (the CUDA kernels use one thread per (k, b)).
ENSEMBLE_HD inline uint32_t planRow(const BatchPlanParams& params, uint32_t member, uint64_t step,
                                    uint32_t b, float& weight) {
    const PlanCursor c = planCursor(params, step, b);
    const Permutation perm =
        makePermutation(params.seed, planStream(params, member), c.epoch, params.rows);
    return planRowWith(params, perm, member, c.position, weight);
}

// Fill rows[0..B) and weights[0..B) for member k at step t, reusing the epoch's permutation.
inline void planMember(const BatchPlanParams& params, uint32_t member, uint64_t step,
                       uint32_t* rows, float* weights) {
    const uint32_t stream = planStream(params, member);
    Permutation perm;
    uint64_t permEpoch = ~uint64_t{0};
    for (uint32_t b = 0; b < params.batch; ++b) {
        const PlanCursor c = planCursor(params, step, b);
        if (c.epoch != permEpoch) {
            perm = makePermutation(params.seed, stream, c.epoch, params.rows);
            permEpoch = c.epoch;
        }
        rows[b] = planRowWith(params, perm, member, c.position, weights[b]);
    }
}

}  // namespace ensemble
