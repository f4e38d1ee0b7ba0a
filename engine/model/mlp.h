#pragma once

// The parameter layout of an ensemble of any architecture (dense, conv and pool layers alike,
// not only MLPs, despite the file's name): where each member's weights and biases sit in the
// one flat buffer every backend, checkpoint and export reads, and their initialisation.

#include <cstddef>
#include <cstdint>
#include <vector>

#include "math/activations.h"
#include "model/architecture.h"

namespace ensemble {

// Where layer l's parameters live in the ensemble's single flat parameter buffer.
// The buffer is layer-major: [W_0 (K,out,in)] [b_0 (K,out)] [W_1 ...] ..., each tensor
// contiguous and member-major, so a layer's weights are one `[K, out, in]` block (exactly the
// safetensors tensor) and member k's weight matrix is a row-major out x in slice of it.
struct LayerSlot {
    int in = 0;
    int out = 0;
    std::size_t weightOffset = 0;  // of member 0; member k adds k * out * in
    std::size_t biasOffset = 0;    // of member 0; member k adds k * out
    // 2c for a dense layer with "l2" c (model.layers): the gradient of c * sum(W^2) is
    // l2Gradient * W on its weights (withL2, optim/update_rules.h); 0 without a penalty.
    float l2Gradient = 0.0f;
};

// The stacked parameter layout of K identical members. Layer l is the l-th parameterised layer
// of the architecture: a dense layer's `in` is its input width, a conv's is C * k * k, so a
// conv's [K, F, C, k, k] weights are the same contiguous [K, out, in] block.
class ParamLayout {
  public:
    ParamLayout() = default;
    // K MLPs with widths [D, h_1, ..., h_L, C].
    ParamLayout(std::vector<int> widths, int members);
    // K members of any architecture (conv, pool and dense layers).
    ParamLayout(Architecture architecture, int members);

    int members() const { return m_members; }
    int layerCount() const { return static_cast<int>(m_layers.size()); }
    const LayerSlot& layer(int l) const { return m_layers[static_cast<std::size_t>(l)]; }
    const Architecture& architecture() const { return m_architecture; }
    // Whether every layer is dense: the MLP paths (fast_mlp.h, the CUDA step program) apply.
    bool isMlp() const { return m_mlp; }
    // MLPs only: [D, h_1, ..., h_L, C].
    const std::vector<int>& widths() const { return m_widths; }
    int inputs() const { return m_architecture.inputs(); }
    int classes() const { return m_architecture.outputs(); }
    // MLPs only: the widest layer.
    int maxWidth() const;
    // Parameters of all members together, and of one member.
    std::size_t size() const { return m_size; }
    std::size_t perMember() const { return m_size / static_cast<std::size_t>(m_members); }

    // Layer l's weight tensor over the members: [K, out, in] for a dense layer, [K, F, C, k, k]
    // for a conv (PyTorch's layouts; the same floats as the [K, out, in] block).
    std::vector<int64_t> weightShape(int l) const;

    std::size_t weightOffset(int l, int k) const {
        const LayerSlot& s = layer(l);
        return s.weightOffset + static_cast<std::size_t>(k) * s.out * s.in;
    }
    std::size_t biasOffset(int l, int k) const {
        const LayerSlot& s = layer(l);
        return s.biasOffset + static_cast<std::size_t>(k) * s.out;
    }

  private:
    void addSlots();

    Architecture m_architecture;
    bool m_mlp = true;
    std::vector<int> m_widths;
    int m_members = 0;
    std::vector<LayerSlot> m_layers;
    std::size_t m_size = 0;
};

// PyTorch's nn.Linear and nn.Conv2d default initialisation: W and b ~ U(-1/sqrt(fan_in),
// 1/sqrt(fan_in)) with fan_in = in (C * k * k for a conv): kaiming uniform with a = sqrt(5)
// reduces to this bound. Member k draws from its own Philox stream
// (seed, Init, k), so a member's weights do not depend on K or on any other member. Layout
// member k is global member memberOffset + k (one MPI rank's share of a larger ensemble).
void initParameters(const ParamLayout& layout, uint64_t seed, float* params,
                    uint32_t memberOffset = 0);

// Multiply-adds of one forward pass of one member for one example (for FLOP accounting).
double forwardMacsPerExample(const ParamLayout& layout);

}  // namespace ensemble
