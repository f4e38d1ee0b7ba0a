#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "math/activations.h"

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
};

// The stacked parameter layout of K identical MLPs with widths [D, h_1, ..., h_L, C].
class ParamLayout {
  public:
    ParamLayout() = default;
    ParamLayout(std::vector<int> widths, int members);

    int members() const { return m_members; }
    int layerCount() const { return static_cast<int>(m_layers.size()); }
    const LayerSlot& layer(int l) const { return m_layers[static_cast<std::size_t>(l)]; }
    const std::vector<int>& widths() const { return m_widths; }
    int inputs() const { return m_widths.front(); }
    int classes() const { return m_widths.back(); }
    int maxWidth() const;
    // Parameters of all members together, and of one member.
    std::size_t size() const { return m_size; }
    std::size_t perMember() const { return m_size / static_cast<std::size_t>(m_members); }

    std::size_t weightOffset(int l, int k) const {
        const LayerSlot& s = layer(l);
        return s.weightOffset + static_cast<std::size_t>(k) * s.out * s.in;
    }
    std::size_t biasOffset(int l, int k) const {
        const LayerSlot& s = layer(l);
        return s.biasOffset + static_cast<std::size_t>(k) * s.out;
    }

  private:
    std::vector<int> m_widths;
    int m_members = 0;
    std::vector<LayerSlot> m_layers;
    std::size_t m_size = 0;
};

// PyTorch's nn.Linear default initialisation: W and b ~ U(-1/sqrt(in), 1/sqrt(in)) (kaiming
// uniform with a = sqrt(5) reduces to this bound). Member k draws from its own Philox stream
// (seed, Init, k), so a member's weights do not depend on K or on any other member.
void initParameters(const ParamLayout& layout, uint64_t seed, float* params);

// Multiply-adds of one forward pass of one member for one example (for FLOP accounting).
double forwardMacsPerExample(const ParamLayout& layout);

}  // namespace ensemble
