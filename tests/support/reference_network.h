#pragma once

// The reference network of the gradient checks (tst_conv, tst_dropout): one example through an
// Architecture with plain loops in double (a direct convolution, no im2col, no GEMM), so that
// the CPU backend's float forward pass and gradients are checked against code they do not
// share. Optional masks multiply each activated unit's output, as inverted dropout does, and
// each dropout layer's input values (tst_dropout_layer).

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

#include "math/activations.h"
#include "model/architecture.h"
#include "model/mlp.h"

namespace ensemble::test {

// Member k's parameters from the stacked layout, per layer [W (out x in), b (out)], in double.
inline std::vector<double> memberParams(const ParamLayout& layout, int k, const float* p) {
    std::vector<double> out;
    for (int l = 0; l < layout.layerCount(); ++l) {
        const LayerSlot& s = layout.layer(l);
        const float* w = p + layout.weightOffset(l, k);
        out.insert(out.end(), w, w + static_cast<std::size_t>(s.out) * s.in);
        const float* b = p + layout.biasOffset(l, k);
        out.insert(out.end(), b, b + s.out);
    }
    return out;
}

// mask(param layer, unit) of one example: what the activation of that unit is multiplied by
// (per channel of a conv, per unit of a dense layer). An empty mask keeps every unit as it is.
using UnitMask = std::function<double(int, int)>;

// One example through the architecture, parameters packed per layer ([W in PyTorch's layout
// W[f][c][ky][kx] or W[out][in], b]); each activated layer's outputs multiplied by `mask`, and
// the value at position j (the flatten order) of dropout layer i's input by dropMask(i, j) (a
// dropout layer without dropMask: the identity). Returns the logits.
inline std::vector<double> referenceForward(const Architecture& arch, Activation a,
                                            const std::vector<double>& p, const float* x,
                                            const UnitMask& mask = {},
                                            const UnitMask& dropMask = {}) {
    const auto scale = [&mask](int layer, int unit) { return mask ? mask(layer, unit) : 1.0; };
    std::vector<double> cur(x, x + arch.input().size());
    std::size_t offset = 0;
    int index = -1;  // the stack layer's
    for (const StackLayer& s : arch.layers()) {
        ++index;
        std::vector<double> next(static_cast<std::size_t>(s.out.size()), 0.0);
        const int H = s.in.height;
        const int W = s.in.width;
        if (s.kind == LayerKind::Dropout) {
            for (std::size_t j = 0; j < next.size(); ++j) {
                next[j] = cur[j] * (dropMask ? dropMask(index, static_cast<int>(j)) : 1.0);
            }
        } else if (s.kind == LayerKind::Conv) {
            const int C = s.in.channels;
            const int k = s.kernel;
            const double* w = p.data() + offset;
            const double* b = w + static_cast<std::size_t>(s.out.channels) * C * k * k;
            for (int f = 0; f < s.out.channels; ++f) {
                const double m = scale(s.param, f);
                for (int oy = 0; oy < s.out.height; ++oy) {
                    for (int ox = 0; ox < s.out.width; ++ox) {
                        double z = b[f];
                        for (int c = 0; c < C; ++c) {
                            for (int ky = 0; ky < k; ++ky) {
                                for (int kx = 0; kx < k; ++kx) {
                                    const int iy = oy * s.stride + ky - s.padTop;
                                    const int ix = ox * s.stride + kx - s.padLeft;
                                    if (iy >= 0 && iy < H && ix >= 0 && ix < W) {
                                        z += w[((f * C + c) * k + ky) * k + kx] *
                                             cur[(static_cast<std::size_t>(c) * H + iy) * W + ix];
                                    }
                                }
                            }
                        }
                        next[(static_cast<std::size_t>(f) * s.out.height + oy) * s.out.width + ox] =
                            activate(a, z) * m;
                    }
                }
            }
            offset += static_cast<std::size_t>(s.out.channels) * (C * k * k + 1);
        } else if (s.kind == LayerKind::Pool) {
            const int size = s.kernel;
            for (int c = 0; c < s.out.channels; ++c) {
                for (int oy = 0; oy < s.out.height; ++oy) {
                    for (int ox = 0; ox < s.out.width; ++ox) {
                        double acc = s.pool == PoolKind::Avg ? 0.0 : -INFINITY;
                        for (int dy = 0; dy < size; ++dy) {
                            for (int dx = 0; dx < size; ++dx) {
                                const double v =
                                    cur[(static_cast<std::size_t>(c) * H + oy * size + dy) * W +
                                        ox * size + dx];
                                acc = s.pool == PoolKind::Avg ? acc + v : std::max(acc, v);
                            }
                        }
                        next[(static_cast<std::size_t>(c) * s.out.height + oy) * s.out.width + ox] =
                            s.pool == PoolKind::Avg ? acc / (size * size) : acc;
                    }
                }
            }
        } else {
            const int in = static_cast<int>(s.in.size());
            const double* w = p.data() + offset;
            const double* b = w + static_cast<std::size_t>(s.out.channels) * in;
            for (int o = 0; o < s.out.channels; ++o) {
                double z = b[o];
                for (int i = 0; i < in; ++i) {
                    z += w[static_cast<std::size_t>(o) * in + i] * cur[static_cast<std::size_t>(i)];
                }
                next[static_cast<std::size_t>(o)] =
                    s.activated ? activate(a, z) * scale(s.param, o) : z;
            }
            offset += static_cast<std::size_t>(s.out.channels) * (in + 1);
        }
        cur = std::move(next);
    }
    return cur;
}

inline std::vector<double> logSoftmax(std::vector<double> z) {
    double m = z[0];
    for (double v : z) {
        m = std::max(m, v);
    }
    double sum = 0.0;
    for (double v : z) {
        sum += std::exp(v - m);
    }
    const double lse = m + std::log(sum);
    for (double& v : z) {
        v -= lse;
    }
    return z;
}

// Mean over the batch (the examples of x, one label each in y) of weight_b * CE_b, example b
// through the network with maskOf(b) and dropMaskOf(b) (none when empty).
inline double referenceLoss(const Architecture& arch, Activation a, const std::vector<double>& p,
                            const std::vector<float>& x, const std::vector<int32_t>& y,
                            const std::vector<float>& w,
                            const std::function<UnitMask(int)>& maskOf = {},
                            const std::function<UnitMask(int)>& dropMaskOf = {}) {
    const int n = static_cast<int>(y.size());
    double loss = 0.0;
    for (int b = 0; b < n; ++b) {
        const std::vector<double> lp = logSoftmax(referenceForward(
            arch, a, p, x.data() + static_cast<std::size_t>(b) * arch.inputs(),
            maskOf ? maskOf(b) : UnitMask{}, dropMaskOf ? dropMaskOf(b) : UnitMask{}));
        loss -= w[static_cast<std::size_t>(b)] *
                lp[static_cast<std::size_t>(y[static_cast<std::size_t>(b)])];
    }
    return loss / n;
}

}  // namespace ensemble::test
