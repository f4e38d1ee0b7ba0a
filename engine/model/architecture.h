#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/named_enum.h"
#include "core/shape.h"

namespace ensemble {

// A member's architecture as a stack of layers over an input of shape [channels, height,
// width] (a table row is [features, 1, 1]). Parameterised layers (conv, dense) are numbered in
// stack order: that number is the `l` of `layers.{l}.weight` in an export and of LayerSlot in
// ParamLayout. The output dense layer (one unit per output) is implicit, as for the MLP.
// A dropout layer has no parameters: inverted dropout of its own rate in training (every
// method), the identity at prediction and in the exports (math/dropout.h).
// A dense layer's "l2" c adds c * sum(W^2) over its weights (not its bias) to each member's
// loss, Keras's l2(c): the gradient 2c * W, added before every optimizer's rule
// (optim/update_rules.h, withL2). Training only: predictions and exports do not see it.

enum class LayerKind : uint8_t { Conv, Pool, Dense, Dropout };
enum class PoolKind : uint8_t { Avg, Max };
enum class Padding : uint8_t { Same, Valid };

// Their names in `model.layers` (the layer editor's lists read the same rows).
template <>
struct EnumNames<LayerKind> {
    static constexpr EnumName<LayerKind> table[] = {
        {LayerKind::Conv, "conv", "Convolution"},
        {LayerKind::Pool, "pool", "Pooling"},
        {LayerKind::Dense, "dense", "Dense"},
        {LayerKind::Dropout, "dropout", "Dropout"},
    };
};

template <>
struct EnumNames<PoolKind> {
    static constexpr EnumName<PoolKind> table[] = {
        {PoolKind::Avg, "avg", "Average"},
        {PoolKind::Max, "max", "Max"},
    };
};

template <>
struct EnumNames<Padding> {
    static constexpr EnumName<Padding> table[] = {
        {Padding::Same, "same", "Same"},
        {Padding::Valid, "valid", "Valid"},
    };
};

// One entry of `model.layers`, as written.
struct LayerSpec {
    LayerKind kind = LayerKind::Dense;
    int filters = 0;  // conv
    int kernel = 0;   // conv
    int stride = 1;   // conv
    Padding padding = Padding::Same;
    PoolKind pool = PoolKind::Avg;  // pool
    int size = 0;                   // pool: window and stride
    int units = 0;                  // dense
    double rate = 0.0;              // dropout: the probability of dropping, in [0, 1)
    double l2 = 0.0;                // dense: the L2 coefficient c of its weights, >= 0

    bool operator==(const LayerSpec&) const = default;
};

// Flax's MNIST CNN (seed 000): conv 32 3x3 same, avg-pool 2, conv 64 3x3 same, avg-pool 2,
// dense 256 (the output dense layer is implicit). The default of `model.layers`.
std::vector<LayerSpec> recipeLayers();
// Reads `model.layers` (`key` names it in errors). Throws ConfigError naming the layer's index
// and field ("model.layers[2].kernel") for an unknown type, a missing or non-integer field (a
// dropout's rate: a number in [0, 1); a dense layer's l2: a number >= 0), a value out of range
// or an unknown field (l2 on another layer than dense).
std::vector<LayerSpec> parseLayers(const nlohmann::json& value, const std::string& key);
nlohmann::json layersToJson(const std::vector<LayerSpec>& layers);

// A layer with its shapes resolved.
struct StackLayer {
    LayerKind kind = LayerKind::Dense;
    Shape in;
    Shape out;
    int kernel = 0;  // conv: k; pool: the window (= stride)
    int stride = 1;  // conv
    int padTop = 0;  // conv: rows of zeros above the input ("same": half the total, rounded down)
    int padLeft = 0;
    PoolKind pool = PoolKind::Avg;
    int param = -1;          // conv and dense: the index of its parameters
    bool activated = false;  // model.activation follows it (every conv and hidden dense)
    bool flattens = false;   // dense: its input is a conv/pool/dropout stack's [C, H, W] maps
    float rate = 0.0f;       // dropout
    double l2 = 0.0;         // dense: the L2 coefficient c of its weights (LayerSpec::l2)

    // Per member: conv [F, C, k, k] (PyTorch's layout), dense [out, in].
    int fanIn() const;
    int units() const { return static_cast<int>(out.channels); }
};

class Architecture {
  public:
    Architecture() = default;
    // Dense layers of widths [D, h_1, ..., h_L, C] on [D, 1, 1] inputs.
    static Architecture mlp(const std::vector<int>& widths);
    // The stack `layers` on `input`, then the output dense layer of `outputs` units. Throws
    // ConfigError naming `key`[i] and the field when a layer does not fit its input (the image
    // shrinks to nothing, a valid conv larger than its input, a conv or pool after a dense, a
    // dropout before any conv or dense layer or beyond its masks' counter).
    static Architecture stack(Shape input, const std::vector<LayerSpec>& layers, int outputs,
                              const std::string& key = "model.layers");

    const std::vector<StackLayer>& layers() const { return m_layers; }
    Shape input() const { return m_input; }
    int inputs() const { return static_cast<int>(m_input.size()); }
    int outputs() const { return m_layers.empty() ? 0 : m_layers.back().out.channels; }
    // Whether every layer is dense (the MLP fast path applies).
    bool denseOnly() const;
    // Whether the stack has a dropout layer.
    bool hasDropoutLayers() const;
    // Whether a layer has an L2 penalty (l2 > 0).
    bool hasL2() const;
    int paramLayers() const { return m_paramLayers; }
    // The parameterised layer `param` (its index in stack order among conv and dense).
    const StackLayer& paramLayer(int param) const;
    // Member-level weight shape of parameterised layer `param`: [F, C, k, k] or [out, in].
    std::vector<int64_t> weightShape(int param) const;
    // Multiply-adds of one forward pass of one member for one example.
    double forwardMacsPerExample() const;

  private:
    Shape m_input;
    std::vector<StackLayer> m_layers;
    int m_paramLayers = 0;
};

}  // namespace ensemble
