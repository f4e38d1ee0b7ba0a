#pragma once

// mc_dropout's members (Gal & Ghahramani 2016): member k is the trained network under one fixed
// dropout mask over its hidden units (dense) and channels (conv), the same for every input row,
// drawn from member k's Philox stream (dropoutMemberMask, math/dropout.h). The mask is folded
// into the weights of the next parameterised layer, so each member is a plain network of the
// architecture and every prediction path (each backend, the exports) runs it unchanged.

#include <cstdint>
#include <string>
#include <vector>

#include "model/architecture.h"

namespace ensemble {

// Member `member`'s masks: one vector per parameterised layer (StackLayer::param order), the
// mask of each output unit or channel (0, or 1 / (1 - rate) when kept) for an activated layer,
// empty for the output layer. Throws ConfigError (key model.dropout) for a rate outside [0, 1)
// or a layer beyond the masks' counter (kDropoutMaxLayers, kDropoutMaxUnits).
std::vector<std::vector<float>> dropoutMemberMasks(const Architecture& architecture, float rate,
                                                   uint64_t seed, uint32_t member);

// Dropout layers (model.layers' "dropout") and mc_dropout: when the stack has any, they are
// where mc_dropout drops, in training and in the members' fixed masks, each at its own rate;
// the global rate (model.dropout, after every activation) is then not applied, so the network
// is the one written in model.layers. activationDropoutRate gives the rate after every
// activation: `rate`, or 0 for a stack with dropout layers.
float activationDropoutRate(const Architecture& architecture, double rate);

// A member's fixed mask at a dropout layer is one value per position of the layer's input, so
// it folds only into a dense layer reading those positions: after a dropout layer the next
// layer other than dropout must be a dense one (the implicit output layer counts). Throws
// ConfigError naming `key`[i] (the dropout layer) otherwise.
void checkDropoutLayersFold(const Architecture& architecture,
                            const std::string& key = "model.layers");

// Member `member`'s masks over each parameterised layer's inputs (StackLayer::param order;
// empty where nothing is masked): without dropout layers the activation mask of the layer
// below (dropoutMemberMasks; a conv's per channel, read by `span` = in / size columns each),
// with them the product of the dropout layers' masks (dropoutLayerMemberMask, math/dropout.h)
// between the layer below and this dense layer, one value per input column.
std::vector<std::vector<float>> dropoutInputMasks(const Architecture& architecture, float rate,
                                                  uint64_t seed, uint32_t member);

// `members` mc_dropout members from one trained network: `params` one member's parameters in
// ParamLayout(architecture, 1)'s order; returns ParamLayout(architecture, members)'s buffer, in
// which member k (global member memberOffset + k) is the network with dropoutMemberMasks(...,
// memberOffset + k) applied after each activated layer (or at each dropout layer: see
// dropoutInputMasks). Each mask value multiplies the next parameterised layer's weights that
// read the unit: column j of a dense layer after a dense one, input channel c ([F, C, k, k]'s
// c) of a conv after a conv, and the flattened positions [c * H * W, (c + 1) * H * W) of a
// dense layer after a conv/pool stack (average and max pooling commute with a non-negative
// per-channel scale). Biases are copied.
std::vector<float> foldDropoutMasks(const Architecture& architecture, const float* params,
                                    float rate, uint64_t seed, int members,
                                    uint32_t memberOffset = 0);

}  // namespace ensemble
