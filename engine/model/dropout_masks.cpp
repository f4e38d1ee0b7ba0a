#include "model/dropout_masks.h"

#include <algorithm>
#include <cstddef>
#include <string>
#include <utility>

#include "core/errors.h"
#include "math/dropout.h"
#include "model/mlp.h"

namespace ensemble {

std::vector<std::vector<float>> dropoutMemberMasks(const Architecture& architecture, float rate,
                                                   uint64_t seed, uint32_t member) {
    if (!(rate >= 0.0f && rate < 1.0f)) {
        throw ConfigError("model.dropout",
                          "the dropout rate must be in [0, 1), not " + std::to_string(rate));
    }
    std::vector<std::vector<float>> masks(static_cast<std::size_t>(architecture.paramLayers()));
    for (const StackLayer& layer : architecture.layers()) {
        if (!layer.activated) {
            continue;
        }
        if (layer.param >= kDropoutMaxLayers || layer.units() > kDropoutMaxUnits) {
            throw ConfigError("model.dropout", "dropout masks cover " +
                                                   std::to_string(kDropoutMaxLayers) +
                                                   " layers of at most " +
                                                   std::to_string(kDropoutMaxUnits) + " units");
        }
        std::vector<float>& mask = masks[static_cast<std::size_t>(layer.param)];
        for (int u = 0; u < layer.units(); ++u) {
            mask.push_back(dropoutMemberMask(seed, member, layer.param, u, rate));
        }
    }
    return masks;
}

float activationDropoutRate(const Architecture& architecture, double rate) {
    return architecture.hasDropoutLayers() ? 0.0f : static_cast<float>(rate);
}

void checkDropoutLayersFold(const Architecture& architecture, const std::string& key) {
    const std::vector<StackLayer>& layers = architecture.layers();
    for (std::size_t i = 0; i < layers.size(); ++i) {
        if (layers[i].kind != LayerKind::Dropout) {
            continue;
        }
        std::size_t next = i + 1;
        while (layers[next].kind == LayerKind::Dropout) {
            ++next;  // the output layer is dense: the walk ends
        }
        if (layers[next].kind != LayerKind::Dense) {
            throw ConfigError(key + "[" + std::to_string(i) + "]",
                              "mc_dropout folds a dropout layer's fixed masks into the dense "
                              "layer after it, but a " +
                                  std::string(toString(layers[next].kind)) +
                                  " layer follows; move the dropout layer before a dense one "
                                  "(or use another ensemble.method)");
        }
    }
}

std::vector<std::vector<float>> dropoutInputMasks(const Architecture& architecture, float rate,
                                                  uint64_t seed, uint32_t member) {
    std::vector<std::vector<float>> in(static_cast<std::size_t>(architecture.paramLayers()));
    if (!architecture.hasDropoutLayers()) {
        const std::vector<std::vector<float>> masks =
            dropoutMemberMasks(architecture, rate, seed, member);
        for (std::size_t l = 1; l < masks.size(); ++l) {
            in[l] = masks[l - 1];
        }
        return in;
    }
    checkDropoutLayersFold(architecture);
    const std::vector<StackLayer>& layers = architecture.layers();
    std::vector<float> pending;  // the dropout layers' product since the last dense layer
    for (std::size_t i = 0; i < layers.size(); ++i) {
        const StackLayer& s = layers[i];
        if (s.kind == LayerKind::Dropout) {
            pending.resize(static_cast<std::size_t>(s.in.size()), 1.0f);
            for (std::size_t p = 0; p < pending.size(); ++p) {
                pending[p] *= dropoutLayerMemberMask(seed, member, static_cast<int>(i),
                                                     static_cast<int>(p), s.rate);
            }
        } else if (s.param >= 0) {
            in[static_cast<std::size_t>(s.param)] = std::move(pending);
            pending.clear();
        }
    }
    return in;
}

std::vector<float> foldDropoutMasks(const Architecture& architecture, const float* params,
                                    float rate, uint64_t seed, int members, uint32_t memberOffset) {
    const ParamLayout one(architecture, 1);
    const ParamLayout all(architecture, members);
    std::vector<float> out(all.size());
    for (int k = 0; k < members; ++k) {
        const std::vector<std::vector<float>> masks =
            dropoutInputMasks(architecture, rate, seed, memberOffset + static_cast<uint32_t>(k));
        for (int l = 0; l < one.layerCount(); ++l) {
            const LayerSlot& s = one.layer(l);
            const float* w = params + one.weightOffset(l, 0);
            float* dst = out.data() + all.weightOffset(l, k);
            std::copy_n(params + one.biasOffset(l, 0), s.out, out.data() + all.biasOffset(l, k));
            // The masks over this layer's inputs: input unit (or channel) c covers the `span`
            // columns [c * span, (c + 1) * span).
            const std::vector<float>* below = &masks[static_cast<std::size_t>(l)];
            if (below->empty()) {
                std::copy_n(w, static_cast<std::size_t>(s.out) * s.in, dst);
                continue;
            }
            const int span = s.in / static_cast<int>(below->size());
            for (int o = 0; o < s.out; ++o) {
                for (int i = 0; i < s.in; ++i) {
                    const std::size_t at = static_cast<std::size_t>(o) * s.in + i;
                    dst[at] = w[at] * (*below)[static_cast<std::size_t>(i / span)];
                }
            }
        }
    }
    return out;
}

}  // namespace ensemble
