#include "model/batch_ensemble.h"

#include <algorithm>
#include <utility>

#include "math/philox.h"

namespace ensemble {

namespace {

// Values below which the expansion and the chain rule stay on one thread: a fork and join costs
// more than a small network's whole pass (and far more on a loaded machine).
constexpr std::size_t kParallelValues = std::size_t{1} << 17;

}  // namespace

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

std::vector<TrainedTensor> batchEnsembleTensors(const BatchEnsembleLayout& layout) {
    const int64_t k = layout.members();
    std::vector<TrainedTensor> out;
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
        const int span = b.unitSpan;
        for (int o = 0; o < b.out; ++o) {
            const std::size_t row = static_cast<std::size_t>(o) * b.in;
            const float so = s[o];
            // Input unit u covers columns [u * span, (u + 1) * span): no division per element.
            for (int u = 0; u < b.inUnits; ++u) {
                const float ru = r[u];
                const std::size_t at = row + static_cast<std::size_t>(u) * span;
                for (int t = 0; t < span; ++t) {
                    // (W s) r: the order the ONNX graph's products use too.
                    dst[at + t] = w[at + t] * so * ru;
                }
            }
        }
        std::copy_n(theta + b.bias + m * static_cast<std::size_t>(b.out), b.out,
                    members + ml.biasOffset(l, k));
    }
}

void batchEnsembleExpand(const BatchEnsembleLayout& layout, const float* theta, float* members) {
    const bool parallel = layout.memberLayout().size() >= kParallelValues;
#pragma omp parallel for schedule(static) if (parallel)
    for (int k = 0; k < layout.members(); ++k) {
        batchEnsembleExpandMember(layout, theta, k, members);
    }
}

namespace {

// sum_j a[j] * b[j] * c[j] in eight interleaved partial sums (a fixed order the compiler can
// vectorise: a float reduction in one accumulator cannot be reordered).
float tripleDot(const float* a, const float* b, const float* c, int n) {
    float lanes[8] = {};
    int j = 0;
    for (; j + 8 <= n; j += 8) {
        for (int q = 0; q < 8; ++q) {
            lanes[q] += a[j + q] * b[j + q] * c[j + q];
        }
    }
    float tail = 0.0f;
    for (; j < n; ++j) {
        tail += a[j] * b[j] * c[j];
    }
    return ((lanes[0] + lanes[1]) + (lanes[2] + lanes[3])) +
           ((lanes[4] + lanes[5]) + (lanes[6] + lanes[7])) + tail;
}

}  // namespace

void batchEnsembleGradient(const BatchEnsembleLayout& layout, const float* theta,
                           const float* memberGrads, const uint8_t* include, float* thetaGrad) {
    const ParamLayout& ml = layout.memberLayout();
    const int members = layout.members();
    std::fill(thetaGrad, thetaGrad + layout.size(), 0.0f);
    for (int l = 0; l < layout.layerCount(); ++l) {
        const BatchEnsembleLayout::Layer& b = layout.layer(l);
        const float* w = theta + b.weight;
        float* dw = thetaGrad + b.weight;
        const int span = b.unitSpan;
        const int in = b.in;
        // Member k's r and s in theta (and in its gradient).
        const auto fastIn = [&](int k) {
            return b.fastIn + static_cast<std::size_t>(k) * b.inUnits;
        };
        const auto fastOut = [&](int k) { return b.fastOut + static_cast<std::size_t>(k) * b.out; };
        // r_k spread over the weight's columns (column j reads unit j / span), so the loops
        // below run over the columns without a division.
        std::vector<float> columns(static_cast<std::size_t>(members) * in);
        for (int k = 0; k < members; ++k) {
            const float* r = theta + fastIn(k);
            float* c = columns.data() + static_cast<std::size_t>(k) * in;
            for (int u = 0; u < b.inUnits; ++u) {
                std::fill_n(c + static_cast<std::size_t>(u) * span, span, r[u]);
            }
        }
        const bool parallel = static_cast<std::size_t>(members) * b.out * b.in >= kParallelValues;
        // Rows in parallel: dW (the members in order, so the sum has one order whatever the
        // threads) and ds_k, each row's own.
#pragma omp parallel for schedule(static) if (parallel)
        for (int o = 0; o < b.out; ++o) {
            const std::size_t row = static_cast<std::size_t>(o) * in;
            const float* wRow = w + row;
            float* dwRow = dw + row;
            for (int k = 0; k < members; ++k) {
                if (include[k] == 0) {
                    continue;
                }
                const float* c = columns.data() + static_cast<std::size_t>(k) * in;
                const float so = theta[fastOut(k) + static_cast<std::size_t>(o)];
                const float* g = memberGrads + ml.weightOffset(l, k) + row;
                for (int j = 0; j < in; ++j) {
                    dwRow[j] += g[j] * so * c[j];
                }
                thetaGrad[fastOut(k) + static_cast<std::size_t>(o)] = tripleDot(g, wRow, c, in);
            }
        }
        // Members in parallel: dr_k (G_k W s_k summed over the rows in order, then over each
        // unit's columns), and the bias.
#pragma omp parallel for schedule(static) if (parallel)
        for (int k = 0; k < members; ++k) {
            if (include[k] == 0) {
                continue;
            }
            const float* s = theta + fastOut(k);
            const float* g = memberGrads + ml.weightOffset(l, k);
            std::vector<float> acc(static_cast<std::size_t>(in), 0.0f);
            for (int o = 0; o < b.out; ++o) {
                const std::size_t row = static_cast<std::size_t>(o) * in;
                const float so = s[o];
                for (int j = 0; j < in; ++j) {
                    acc[static_cast<std::size_t>(j)] += g[row + j] * w[row + j] * so;
                }
            }
            float* dr = thetaGrad + fastIn(k);
            for (int u = 0; u < b.inUnits; ++u) {
                float sum = 0.0f;
                for (int t = 0; t < span; ++t) {
                    sum += acc[static_cast<std::size_t>(u) * span + t];
                }
                dr[u] = sum;
            }
            std::copy_n(memberGrads + ml.biasOffset(l, k), b.out,
                        thetaGrad + b.bias + static_cast<std::size_t>(k) * b.out);
        }
    }
    // The mean of the members' losses: one scaling at the end, after every sum.
    const float mean = 1.0f / static_cast<float>(members);
    for (std::size_t i = 0; i < layout.size(); ++i) {
        thetaGrad[i] *= mean;
    }
}

}  // namespace ensemble
