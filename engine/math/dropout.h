#pragma once

// Inverted dropout (Gal & Ghahramani 2016; ensemble.method = mc_dropout): after the activation
// of every hidden layer (StackLayer::activated) each unit of a dense layer, or each channel of a
// conv layer, is kept with probability 1 - rate and then scaled by 1 / (1 - rate), or zeroed.
//
// Every keep decision is a pure function of its key, drawn from Philox (math/philox.h), so the
// CPU and the CUDA kernels draw the same masks whatever the thread count, the batch tiling or
// the device:
//   training:   (seed, step, member, row, layer, unit); `row` the example's position in the
//               member's whole batch (not a replica's shard), `layer` the parameterised layer's
//               index (StackLayer::param, the layout's layer for an MLP).
//   prediction: (seed, member, layer, unit): member k of an mc_dropout ensemble is one fixed
//               mask, the same for every input row (model/dropout_masks.h folds it into the
//               weights).
// One Philox draw gives four words: the keep decisions of units 4g .. 4g+3 (a unit keeps when
// uniformFloat(word) >= rate, so rate 0 keeps every unit).

#include <cstdint>

#include "math/activations.h"
#include "math/hd.h"
#include "math/philox.h"

namespace ensemble {

// The counter keeps the layer in 8 bits and the unit's group of four in 16: the limits a
// dropout architecture must respect (checkTrainingProblem and dropoutMasks check them).
inline constexpr int kDropoutMaxLayers = 256;
inline constexpr int kDropoutMaxUnits = 4 * 65536;

// What the training masks of one member's step need besides the layer and unit.
struct DropoutStep {
    float rate = 0.0f;  // 0: no dropout (the step is today's)
    uint64_t seed = 0;
    uint64_t step = 0;
    uint32_t member = 0;    // the member's global index (plan.memberOffset + k)
    uint32_t firstRow = 0;  // the batch position of this replica's first row (data axis)

    bool on() const { return rate > 0.0f; }
};

// The scale of a kept unit, 1 / (1 - rate), in float: the same bits on every device.
ENSEMBLE_HD inline float dropoutScale(float rate) {
    return 1.0f / (1.0f - rate);
}

// The mask value of a unit whose draw is `bits`: 0 (dropped) or `scale` (kept).
ENSEMBLE_HD inline float dropoutMaskValue(uint32_t bits, float rate, float scale) {
    return uniformFloat(bits) >= rate ? scale : 0.0f;
}

ENSEMBLE_HD inline uint32_t dropoutSub(int layer, int unit) {
    return (static_cast<uint32_t>(layer) << 16) | (static_cast<uint32_t>(unit) >> 2);
}

// The training draw of units 4g .. 4g+3 (g = unit / 4) of `layer` for the examples at batch
// positions `row` (a lane type, math/lane.h: one row, or a SIMD vector of rows). The step's
// low word is in the counter, its high word folded into the key.
// Both training draws (the activations' and a dropout layer's) key the same way; `purpose`
// keeps their streams apart.
template <typename U>
ENSEMBLE_HD inline Philox4x32Lanes<U> dropoutStepDrawLanes(RngPurpose purpose, uint64_t seed,
                                                           uint64_t step, uint32_t member, U row,
                                                           int layer, int unit) {
    const uint64_t key = seed ^ (step >> 32 << 32);
    return philoxDrawLanes(key, purpose, member, row,
                           Lane<U>::broadcast(static_cast<uint32_t>(step)),
                           dropoutSub(layer, unit));
}

template <typename U>
ENSEMBLE_HD inline Philox4x32Lanes<U> dropoutTrainingDrawLanes(uint64_t seed, uint64_t step,
                                                               uint32_t member, U row, int layer,
                                                               int unit) {
    return dropoutStepDrawLanes(RngPurpose::Dropout, seed, step, member, row, layer, unit);
}

// The training mask of one unit of one example: 0 or dropoutScale(rate).
ENSEMBLE_HD inline float dropoutTrainingMask(const DropoutStep& d, uint32_t row, int layer,
                                             int unit) {
    const Philox4x32 r =
        dropoutTrainingDrawLanes<uint32_t>(d.seed, d.step, d.member, row, layer, unit);
    return dropoutMaskValue(r.v[unit & 3], d.rate, dropoutScale(d.rate));
}

// Member `member`'s prediction mask of one unit: 0 or dropoutScale(rate).
ENSEMBLE_HD inline float dropoutMemberMask(uint64_t seed, uint32_t member, int layer, int unit,
                                           float rate) {
    const Philox4x32 r =
        philoxDraw(seed, RngPurpose::DropoutMember, member, 0, dropoutSub(layer, unit));
    return dropoutMaskValue(r.v[unit & 3], rate, dropoutScale(rate));
}

// A dropout layer (model.layers' "dropout", StackLayer::rate), which drops at its own rate in
// training under every method: one keep decision per value of an example's input, at its
// position in the flatten order (c H W + y W + x of [C, H, W] maps; the unit of a flat input),
// keyed by the layer's index in the stack (StackLayer order, not the parameterised index) and
// drawn from purposes of their own, so they never meet the activation masks above:
//   training:   (seed, step, member, row, layer, position)  RngPurpose::DropoutLayer
//   prediction: (seed, member, layer, position)  RngPurpose::DropoutLayerMember (mc_dropout's
//               member k, folded into the next dense layer's weights by model/dropout_masks.h)
// As above, one draw gives positions 4g .. 4g+3.
template <typename U>
ENSEMBLE_HD inline Philox4x32Lanes<U> dropoutLayerDrawLanes(uint64_t seed, uint64_t step,
                                                            uint32_t member, U row, int layer,
                                                            int position) {
    return dropoutStepDrawLanes(RngPurpose::DropoutLayer, seed, step, member, row, layer, position);
}

// The training mask of one position of one example at a dropout layer of `rate` (d.rate is
// the activations' rate and is not read): 0 or dropoutScale(rate).
ENSEMBLE_HD inline float dropoutLayerTrainingMask(const DropoutStep& d, float rate, uint32_t row,
                                                  int layer, int position) {
    const Philox4x32 r =
        dropoutLayerDrawLanes<uint32_t>(d.seed, d.step, d.member, row, layer, position);
    return dropoutMaskValue(r.v[position & 3], rate, dropoutScale(rate));
}

// Member `member`'s prediction mask of one position at a dropout layer (mc_dropout).
ENSEMBLE_HD inline float dropoutLayerMemberMask(uint64_t seed, uint32_t member, int layer,
                                                int position, float rate) {
    const Philox4x32 r =
        philoxDraw(seed, RngPurpose::DropoutLayerMember, member, 0, dropoutSub(layer, position));
    return dropoutMaskValue(r.v[position & 3], rate, dropoutScale(rate));
}

// The backward pass through a masked activation a = f(z) * mask: dz = (da * mask) * f'(z).
// (f' from z alone: the stored activation is the masked one.)
template <typename T>
ENSEMBLE_HD inline T dropoutActivationGrad(Activation act, T delta, T mask, T z) {
    return delta * mask * activateGrad(act, z, activate(act, z));
}

}  // namespace ensemble
