#include "backend/cpu/batch_plan_simd.h"

#include <algorithm>

#include "backend/cpu/simd_lanes.h"

namespace ensemble {

#if defined(ENSEMBLE_HAVE_WORD_LANES)

namespace {

// The permutation, Philox and the resample draw are sampling/batch_plan.h's and
// math/philox.h's own templates, instantiated for 16 positions at a time.
using simd::Words;
constexpr int kWidth = simd::kWordLanes;
using W = Lane<Words>;

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
            Words pos = simd::iota(position + done);
            if (lanes < static_cast<uint32_t>(kWidth)) {
                const Words last = W::broadcast(position + run - 1);
                pos = W::select(W::greaterEqual(pos, last), last, pos);
            }
            Words i = perm.permute(pos);
            if (params.mode == BootstrapMode::Resample) {
                i = resampleRowLanes(params.seed, member, i, n);
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
        Words index = W::broadcast(0);
        for (int l = 0; l < lanes; ++l) {
            index[l] = rows[done + l];
        }
        const Philox4x32Lanes<Words> r =
            philoxDrawLanes(seed, RngPurpose::Poisson, member, index, W::broadcast(0));
        for (int l = 0; l < lanes; ++l) {
            weights[done + l] =
                static_cast<float>(poissonOne(uniformOpenDouble(r.v[0][l], r.v[1][l])));
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
