#include "model/batch_ensemble.h"

#include <algorithm>
#include <utility>

#include "math/philox.h"

namespace ensemble {

BatchEnsembleLayout::BatchEnsembleLayout(ParamLayout members) : m_members(std::move(members)) {
    const Architecture& a = m_members.architecture();
    const auto k = static_cast<std::size_t>(m_members.members());
    std::size_t offset = 0;
    for (int l = 0; l < m_members.layerCount(); ++l) {
        const LayerSlot& s = m_members.layer(l);
        const StackLayer& stack = a.paramLayer(l);
        Layer layer;
        layer.out = s.out;
        layer.in = s.in;
        if (stack.kind == LayerKind::Conv) {
            layer.inUnits = stack.in.channels;
            layer.unitSpan = stack.kernel * stack.kernel;
        } else {
            layer.inUnits = s.in;
            layer.unitSpan = 1;
        }
        layer.weight = offset;
        offset += static_cast<std::size_t>(s.out) * s.in;
        layer.fastIn = offset;
        offset += k * static_cast<std::size_t>(layer.inUnits);
        layer.fastOut = offset;
        offset += k * static_cast<std::size_t>(s.out);
        layer.bias = offset;
        offset += k * static_cast<std::size_t>(s.out);
        m_layers.push_back(layer);
    }
    m_size = offset;
}

std::vector<int64_t> BatchEnsembleLayout::weightShape(int l) const {
    return m_members.architecture().weightShape(l);
}

std::vector<BatchEnsembleTensor> batchEnsembleTensors(const BatchEnsembleLayout& layout) {
    const int64_t k = layout.members();
    std::vector<BatchEnsembleTensor> out;
    for (int l = 0; l < layout.layerCount(); ++l) {
        const BatchEnsembleLayout::Layer& b = layout.layer(l);
        const std::string prefix = std::to_string(l);
        out.push_back({prefix + ".weight", layout.weightShape(l), b.weight,
                       static_cast<std::size_t>(b.out) * b.in});
        out.push_back({prefix + ".fast_in",
                       {k, b.inUnits},
                       b.fastIn,
                       static_cast<std::size_t>(k) * b.inUnits});
        out.push_back(
            {prefix + ".fast_out", {k, b.out}, b.fastOut, static_cast<std::size_t>(k) * b.out});
        out.push_back({prefix + ".bias", {k, b.out}, b.bias, static_cast<std::size_t>(k) * b.out});
    }
    return out;
}

void batchEnsembleInit(const BatchEnsembleLayout& layout, uint64_t seed, float* theta,
                       uint32_t memberOffset) {
    const ParamLayout& members = layout.memberLayout();
    std::vector<float> initial(members.size());
    initParameters(members, seed, initial.data(), memberOffset);
    for (int l = 0; l < layout.layerCount(); ++l) {
        const BatchEnsembleLayout::Layer& b = layout.layer(l);
        const std::size_t w = static_cast<std::size_t>(b.out) * b.in;
        std::copy_n(initial.data() + members.weightOffset(l, 0), w, theta + b.weight);
        for (int k = 0; k < layout.members(); ++k) {
            const auto m = static_cast<std::size_t>(k);
            std::copy_n(initial.data() + members.biasOffset(l, k), b.out,
                        theta + b.bias + m * static_cast<std::size_t>(b.out));
            // One draw per unit: r's units, then s's, layer after layer.
            const uint32_t member = memberOffset + static_cast<uint32_t>(k);
            const auto sign = [&](int unit, bool output) {
                const Philox4x32 r = philoxDraw(seed, RngPurpose::BatchEnsembleSigns, member,
                                                static_cast<uint64_t>(unit),
                                                static_cast<uint32_t>(2 * l + (output ? 1 : 0)));
                return (r.v[0] & 1U) != 0 ? 1.0f : -1.0f;
            };
            for (int u = 0; u < b.inUnits; ++u) {
                theta[b.fastIn + m * static_cast<std::size_t>(b.inUnits) +
                      static_cast<std::size_t>(u)] = sign(u, false);
            }
            for (int o = 0; o < b.out; ++o) {
                theta[b.fastOut + m * static_cast<std::size_t>(b.out) +
                      static_cast<std::size_t>(o)] = sign(o, true);
            }
        }
    }
}

void batchEnsembleExpandMember(const BatchEnsembleLayout& layout, const float* theta, int k,
                               float* members) {
    const ParamLayout& ml = layout.memberLayout();
    const auto m = static_cast<std::size_t>(k);
    for (int l = 0; l < layout.layerCount(); ++l) {
        const BatchEnsembleLayout::Layer& b = layout.layer(l);
        const float* w = theta + b.weight;
        const float* r = theta + b.fastIn + m * static_cast<std::size_t>(b.inUnits);
        const float* s = theta + b.fastOut + m * static_cast<std::size_t>(b.out);
        float* dst = members + ml.weightOffset(l, k);
        for (int o = 0; o < b.out; ++o) {
            const std::size_t row = static_cast<std::size_t>(o) * b.in;
            for (int j = 0; j < b.in; ++j) {
                // (W s) r: the order the gradient's products use too.
                dst[row + j] = w[row + j] * s[o] * r[j / b.unitSpan];
            }
        }
        std::copy_n(theta + b.bias + m * static_cast<std::size_t>(b.out), b.out,
                    members + ml.biasOffset(l, k));
    }
}

void batchEnsembleExpand(const BatchEnsembleLayout& layout, const float* theta, float* members) {
    for (int k = 0; k < layout.members(); ++k) {
        batchEnsembleExpandMember(layout, theta, k, members);
    }
}

void batchEnsembleGradient(const BatchEnsembleLayout& layout, const float* theta,
                           const float* memberGrads, const uint8_t* include, float* thetaGrad) {
    const ParamLayout& ml = layout.memberLayout();
    std::fill(thetaGrad, thetaGrad + layout.size(), 0.0f);
    for (int l = 0; l < layout.layerCount(); ++l) {
        const BatchEnsembleLayout::Layer& b = layout.layer(l);
        const float* w = theta + b.weight;
        float* dw = thetaGrad + b.weight;
        // Members in order, so the shared weight's sum has one order on every backend.
        for (int k = 0; k < layout.members(); ++k) {
            if (include[k] == 0) {
                continue;
            }
            const auto m = static_cast<std::size_t>(k);
            const float* r = theta + b.fastIn + m * static_cast<std::size_t>(b.inUnits);
            const float* s = theta + b.fastOut + m * static_cast<std::size_t>(b.out);
            float* dr = thetaGrad + b.fastIn + m * static_cast<std::size_t>(b.inUnits);
            float* ds = thetaGrad + b.fastOut + m * static_cast<std::size_t>(b.out);
            const float* g = memberGrads + ml.weightOffset(l, k);
            for (int o = 0; o < b.out; ++o) {
                const std::size_t row = static_cast<std::size_t>(o) * b.in;
                double dsRow = 0.0;
                for (int j = 0; j < b.in; ++j) {
                    const float gw = g[row + j] * w[row + j];
                    const float rj = r[j / b.unitSpan];
                    dw[row + j] += g[row + j] * s[o] * rj;
                    dr[j / b.unitSpan] += gw * s[o];
                    dsRow += static_cast<double>(gw) * rj;
                }
                ds[o] = static_cast<float>(dsRow);
            }
            std::copy_n(memberGrads + ml.biasOffset(l, k), b.out,
                        thetaGrad + b.bias + m * static_cast<std::size_t>(b.out));
        }
    }
}

}  // namespace ensemble
