#pragma once

// mc_dropout's members (Gal & Ghahramani 2016): member k is the trained network under one fixed
// dropout mask over its hidden units (dense) and channels (conv), the same for every input row,
// drawn from member k's Philox stream (dropoutMemberMask, math/dropout.h). The mask is folded
// into the weights of the next parameterised layer, so each member is a plain network of the
// architecture and every prediction path (each backend, the exports) runs it unchanged.

#include <cstdint>
#include <vector>

#include "model/architecture.h"

namespace ensemble {

// Member `member`'s masks: one vector per parameterised layer (StackLayer::param order), the
// mask of each output unit or channel (0, or 1 / (1 - rate) when kept) for an activated layer,
// empty for the output layer. Throws ConfigError (key model.dropout) for a rate outside [0, 1)
// or a layer beyond the masks' counter (kDropoutMaxLayers, kDropoutMaxUnits).
std::vector<std::vector<float>> dropoutMemberMasks(const Architecture& architecture, float rate,
                                                   uint64_t seed, uint32_t member);

// `members` mc_dropout members from one trained network: `params` one member's parameters in
// ParamLayout(architecture, 1)'s order; returns ParamLayout(architecture, members)'s buffer, in
// which member k (global member memberOffset + k) is the network with dropoutMemberMasks(...,
// memberOffset + k) applied after each activated layer. Each mask value multiplies the next
// parameterised layer's weights that read the unit: column j of a dense layer after a dense
// one, input channel c ([F, C, k, k]'s c) of a conv after a conv, and the flattened positions
// [c * H * W, (c + 1) * H * W) of a dense layer after a conv/pool stack (average and max
// pooling commute with a non-negative per-channel scale). Biases are copied.
std::vector<float> foldDropoutMasks(const Architecture& architecture, const float* params,
                                    float rate, uint64_t seed, int members,
                                    uint32_t memberOffset = 0);

}  // namespace ensemble
