#include "model/feature_maps.h"

#include <algorithm>
#include <cstddef>

namespace ensemble {

FirstConv firstConvOf(const ParamLayout& layout, const float* params) {
    FirstConv out;
    const auto& layers = layout.architecture().layers();
    if (layers.empty() || layers.front().kind != LayerKind::Conv) {
        return out;
    }
    out.layer = layers.front();
    out.members = layout.members();
    const int l = out.layer.param;
    const LayerSlot& slot = layout.layer(l);
    const std::size_t perWeights = static_cast<std::size_t>(slot.out) * slot.in;
    out.weights.resize(perWeights * static_cast<std::size_t>(out.members));
    out.bias.resize(static_cast<std::size_t>(slot.out) * static_cast<std::size_t>(out.members));
    for (int k = 0; k < out.members; ++k) {
        std::copy_n(params + layout.weightOffset(l, k), perWeights,
                    out.weights.data() + perWeights * static_cast<std::size_t>(k));
        std::copy_n(params + layout.biasOffset(l, k), slot.out,
                    out.bias.data() + static_cast<std::size_t>(slot.out) * k);
    }
    return out;
}

std::vector<float> firstConvFeatureMaps(const FirstConv& conv, Activation activation,
                                        const float* image) {
    if (conv.empty()) {
        return {};
    }
    const StackLayer& s = conv.layer;
    const int F = s.out.channels;
    const int C = s.in.channels;
    const int H = s.in.height;
    const int W = s.in.width;
    const int OH = s.out.height;
    const int OW = s.out.width;
    const int k = s.kernel;
    const std::size_t kernelSize = static_cast<std::size_t>(C) * k * k;
    std::vector<float> out(static_cast<std::size_t>(conv.members) * F * OH * OW);
    for (int m = 0; m < conv.members; ++m) {
        for (int f = 0; f < F; ++f) {
            const std::size_t filter = static_cast<std::size_t>(m) * F + f;
            const float* w = conv.weights.data() + filter * kernelSize;
            const float b = conv.bias[filter];
            float* dst = out.data() + filter * OH * OW;
            for (int oy = 0; oy < OH; ++oy) {
                for (int ox = 0; ox < OW; ++ox) {
                    // Summed in (channel, row, column) order, as a GEMM over im2col columns.
                    float sum = 0.0f;
                    for (int c = 0; c < C; ++c) {
                        for (int i = 0; i < k; ++i) {
                            const int y = oy * s.stride - s.padTop + i;
                            if (y < 0 || y >= H) {
                                continue;
                            }
                            for (int j = 0; j < k; ++j) {
                                const int x = ox * s.stride - s.padLeft + j;
                                if (x >= 0 && x < W) {
                                    sum += w[(static_cast<std::size_t>(c) * k + i) * k + j] *
                                           image[(static_cast<std::size_t>(c) * H + y) * W + x];
                                }
                            }
                        }
                    }
                    dst[oy * OW + ox] = activate(activation, sum + b);
                }
            }
        }
    }
    return out;
}

}  // namespace ensemble
