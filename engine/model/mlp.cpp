#include "model/mlp.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "math/philox.h"

namespace ensemble {

ParamLayout::ParamLayout(std::vector<int> widths, int members)
    : m_widths(std::move(widths)), m_members(members) {
    if (m_widths.size() < 2 || members < 1) {
        throw std::invalid_argument("ParamLayout needs at least [inputs, classes] and K >= 1");
    }
    m_architecture = Architecture::mlp(m_widths);
    addSlots();
}

ParamLayout::ParamLayout(Architecture architecture, int members)
    : m_architecture(std::move(architecture)), m_members(members) {
    if (m_architecture.paramLayers() < 1 || members < 1) {
        throw std::invalid_argument("ParamLayout needs a parameterised layer and K >= 1");
    }
    m_mlp = m_architecture.denseOnly();
    if (m_mlp) {
        m_widths.push_back(m_architecture.inputs());
        for (const StackLayer& s : m_architecture.layers()) {
            m_widths.push_back(s.out.channels);
        }
    }
    addSlots();
}

void ParamLayout::addSlots() {
    std::size_t offset = 0;
    for (int l = 0; l < m_architecture.paramLayers(); ++l) {
        const StackLayer& layer = m_architecture.paramLayer(l);
        LayerSlot s;
        s.in = layer.fanIn();
        s.out = layer.out.channels;
        s.l2Gradient = static_cast<float>(2.0 * layer.l2);
        s.weightOffset = offset;
        offset += static_cast<std::size_t>(m_members) * s.out * s.in;
        s.biasOffset = offset;
        offset += static_cast<std::size_t>(m_members) * s.out;
        m_layers.push_back(s);
    }
    m_size = offset;
}

std::vector<int64_t> ParamLayout::weightShape(int l) const {
    std::vector<int64_t> shape{m_members};
    for (int64_t d : m_architecture.weightShape(l)) {
        shape.push_back(d);
    }
    return shape;
}

int ParamLayout::maxWidth() const {
    return m_widths.empty() ? 0 : *std::max_element(m_widths.begin(), m_widths.end());
}

void initParameters(const ParamLayout& layout, uint64_t seed, float* params,
                    uint32_t memberOffset) {
    for (int k = 0; k < layout.members(); ++k) {
        // One counter sequence per member over its parameters in layout order (W_0, b_0, ...).
        uint64_t draw = 0;
        for (int l = 0; l < layout.layerCount(); ++l) {
            const LayerSlot& s = layout.layer(l);
            const float bound = 1.0f / std::sqrt(static_cast<float>(s.in));
            auto fill = [&](float* dst, std::size_t count) {
                for (std::size_t i = 0; i < count; ++i, ++draw) {
                    const Philox4x32 r = philoxDraw(seed, RngPurpose::Init,
                                                    memberOffset + static_cast<uint32_t>(k), draw);
                    dst[i] = (2.0f * uniformFloat(r.v[0]) - 1.0f) * bound;
                }
            };
            fill(params + layout.weightOffset(l, k), static_cast<std::size_t>(s.out) * s.in);
            fill(params + layout.biasOffset(l, k), static_cast<std::size_t>(s.out));
        }
    }
}

double forwardMacsPerExample(const ParamLayout& layout) {
    return layout.architecture().forwardMacsPerExample();
}

}  // namespace ensemble
