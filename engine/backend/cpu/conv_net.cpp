// The CPU's batched conv members: forward, backward (with dropout's masks where asked) and the
// update over tiles of examples. One piece, over 600 lines, because the forward and backward
// walks mirror each other layer by layer and slice by slice (a pool fused into its conv in one
// must be skipped in the other) and the update sums what the backward tasks left; the
// workspace and the slice and fusion rules are conv_workspace.h, the element kernels
// conv_kernels.h.
#include "backend/cpu/conv_net.h"

#include <omp.h>

#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <cstring>

#include "backend/cpu/conv_kernels.h"
#include "backend/cpu/conv_workspace.h"
#include "backend/cpu/gemm.h"
#include "math/loss.h"

namespace ensemble {

namespace {

using Eigen::ColMajor;
using Eigen::RowMajor;

using conv::activate;
using conv::activateGrad;
using conv::applyDropout;
using conv::channelMajor;
using conv::col2im;
using conv::dropoutActivateGrad;
using conv::fillDropoutMask;
using conv::fillLayerDropoutMask;
using conv::im2col;
using conv::keepsSignsOnly;
using conv::keepWherePositive;
using conv::markPositive;
using conv::poolBackward;
using conv::pooledByConvBelow;
using conv::poolForward;
using conv::poolFused;
using conv::rowSum;

// Floats of a parameter update handed to one thread: a multiple of every SIMD width, so the
// split does not change which elements fastApplyUpdate treats as its scalar tail.
constexpr std::size_t kUpdateChunk = 1 << 14;

// Offsets of each layer's [W, b] in a packed member gradient.
std::vector<std::size_t> packedOffsets(const ParamLayout& layout) {
    std::vector<std::size_t> offsets;
    std::size_t offset = 0;
    for (int l = 0; l < layout.layerCount(); ++l) {
        offsets.push_back(offset);
        offset += static_cast<std::size_t>(layout.layer(l).out) * (layout.layer(l).in + 1);
    }
    return offsets;
}

// Whether layer i's input is flat ([n][features]) rather than maps ([C][n][H W]): a dense
// layer below it, through dropout layers only.
bool flatInput(const std::vector<StackLayer>& layers, std::size_t i) {
    while (i-- > 0) {
        if (layers[i].kind != LayerKind::Dropout) {
            return layers[i].kind == LayerKind::Dense;
        }
    }
    return true;
}

}  // namespace

namespace {

// A conv slice's columns and their row stride: examples [first, first + count) of the n in
// `in`. A shared batch's first layer reads the columns made once for every member (`shared`,
// row stride sharedStride); else they are in `cols` already when `made`, or made there now.
struct SliceColumns {
    const float* data;
    Eigen::Index stride;
};

SliceColumns sliceColumns(const StackLayer& s, const float* in, int n, int first, int count,
                          const float* shared, std::size_t sharedStride, bool made, float* cols) {
    const Eigen::Index at = static_cast<Eigen::Index>(s.out.plane()) * first;
    const Eigen::Index width = static_cast<Eigen::Index>(s.out.plane()) * count;
    if (shared != nullptr) {
        return {shared + at, static_cast<Eigen::Index>(sharedStride)};
    }
    if (!made) {
        im2col(s, in, n, first, count, cols, static_cast<std::size_t>(width));
    }
    return {cols, width};
}

// Forward pass of member k over n examples; returns the logits (n x outputs). sharedCols, when
// not null, holds the first conv's columns for these examples with row stride colsStride.
// dropout.on(): every activated layer's output is masked (the masks kept in ws.dropMask), the
// examples at batch positions dropout.firstRow + b. `training`: dropout layers mask their input
// under the same key (else they pass it on as it is).
const float* forward(const ParamLayout& layout, int k, Activation act, const float* params,
                     const float* x, int n, const float* sharedCols, std::size_t colsStride,
                     ConvNetCpu::Workspace& ws, const DropoutStep& dropout = DropoutStep{},
                     bool training = false) {
    const Architecture& a = layout.architecture();
    const auto& layers = a.layers();
    // A first dense layer reads the rows as they are: (channel, row, column) is the flatten order.
    const float* in = layers.front().kind == LayerKind::Dense ? x : channelMajor(a, x, n, ws.input);
    for (std::size_t i = 0; i < layers.size(); ++i) {
        const StackLayer& s = layers[i];
        float* out = ws.post[i].data();
        switch (s.kind) {
            case LayerKind::Dropout: {
                const std::size_t count = static_cast<std::size_t>(s.out.size()) * n;
                if (!training) {
                    std::copy_n(in, count, out);  // the identity: inverted dropout needs no scale
                    break;
                }
                float* mask = ws.dropMask[i].data();
                fillLayerDropoutMask(dropout, s.rate, static_cast<int>(i), s.in, n,
                                     flatInput(layers, i), mask);
                for (std::size_t j = 0; j < count; ++j) {
                    out[j] = in[j] * mask[j];
                }
                break;
            }
            case LayerKind::Conv: {
                const int l = s.param;
                const Eigen::Index fan = s.fanIn();
                const Eigen::Index filters = s.out.channels;
                const Eigen::Index plane = s.out.plane();
                const Eigen::Index cols = plane * n;
                const float* weights = params + layout.weightOffset(l, k);
                const float* bias = params + layout.biasOffset(l, k);
                float* pre = ws.pre[i].data();
                const bool fused = poolFused(layers, i, dropout);
                const bool signsOnly = keepsSignsOnly(layers, i, act, dropout);
                // Slice by slice of examples, each slice's columns made and used while in cache:
                // pre = b, then += W cols, then activated (and pooled, when fused).
                const int slice = ws.slice(s, n);
                for (int first = 0; first < n; first += slice) {
                    const int count = std::min(slice, n - first);
                    const Eigen::Index at = plane * first;
                    const Eigen::Index width = plane * count;
                    const SliceColumns columns =
                        sliceColumns(s, in, n, first, count, i == 0 ? sharedCols : nullptr,
                                     colsStride, false, ws.cols[i].data());
                    // The slice's pre-activations and outputs: [f][width] rows of stride
                    // `rowStride`, in the layer's buffers or the slice's own.
                    float* slicePre = signsOnly ? ws.slicePre.data() : pre + at;
                    float* sliceOut = signsOnly ? ws.slicePost.data() : out + at;
                    const Eigen::Index rowStride = signsOnly ? width : cols;
                    for (Eigen::Index f = 0; f < filters; ++f) {
                        std::fill_n(slicePre + f * rowStride, width, bias[f]);
                    }
                    cpu::gemmAccumulate<RowMajor, RowMajor>(
                        filters, width, fan, weights, fan, columns.data, columns.stride, slicePre,
                        rowStride, ws.gemmA.data(), ws.gemmB.data());
                    for (Eigen::Index f = 0; f < filters; ++f) {
                        activate(act, slicePre + f * rowStride, sliceOut + f * rowStride,
                                 static_cast<std::size_t>(width));
                        if (signsOnly) {
                            markPositive(slicePre + f * rowStride,
                                         ws.positive[i].data() + f * cols + at,
                                         static_cast<std::size_t>(width));
                        }
                    }
                    if (fused) {
                        // Filter f's planes of the slice: planes f n + first.. of the pool.
                        const StackLayer& p = layers[i + 1];
                        const std::size_t pooled = static_cast<std::size_t>(p.out.plane());
                        for (Eigen::Index f = 0; f < filters; ++f) {
                            const std::size_t planeAt = static_cast<std::size_t>(f) * n + first;
                            poolForward(p, sliceOut + f * rowStride, count,
                                        ws.post[i + 1].data() + planeAt * pooled,
                                        p.pool == PoolKind::Max
                                            ? ws.argmax[i + 1].data() + planeAt * pooled
                                            : nullptr);
                        }
                    }
                }
                if (dropout.on()) {
                    float* mask = ws.dropMask[i].data();
                    fillDropoutMask(dropout, l, s.out.channels, n, 1, static_cast<std::size_t>(n),
                                    mask);
                    applyDropout(out, mask, static_cast<std::size_t>(s.out.channels) * n,
                                 static_cast<std::size_t>(s.out.plane()));
                }
                break;
            }
            case LayerKind::Pool:
                if (!pooledByConvBelow(layers, i, dropout)) {
                    poolForward(s, in, s.in.channels * n, out,
                                s.pool == PoolKind::Max ? ws.argmax[i].data() : nullptr);
                }
                break;
            case LayerKind::Dense: {
                const int l = s.param;
                const Eigen::Index features = s.in.channels;
                const float* aIn = in;
                if (s.flattens) {
                    // Flatten [C][n][H W] into n x (C H W), PyTorch's (channel, row, column).
                    const Shape sp = layers[i - 1].out;
                    const std::size_t plane = static_cast<std::size_t>(sp.plane());
                    for (int b = 0; b < n; ++b) {
                        for (int c = 0; c < sp.channels; ++c) {
                            std::copy_n(in + (static_cast<std::size_t>(c) * n + b) * plane, plane,
                                        ws.flat.data() + static_cast<std::size_t>(b) * features +
                                            c * plane);
                        }
                    }
                    aIn = ws.flat.data();
                }
                const Eigen::Index units = s.out.channels;
                // pre = b, then += A W^T.
                float* pre = ws.pre[i].data();
                const float* bias = params + layout.biasOffset(l, k);
                for (int b = 0; b < n; ++b) {
                    std::copy_n(bias, units, pre + b * units);
                }
                cpu::gemmAccumulate<RowMajor, ColMajor>(
                    n, units, features, aIn, features, params + layout.weightOffset(l, k), features,
                    pre, units, ws.gemmA.data(), ws.gemmB.data());
                if (s.activated) {
                    activate(act, pre, out, static_cast<std::size_t>(n) * units);
                    if (dropout.on()) {
                        float* mask = ws.dropMask[i].data();
                        fillDropoutMask(dropout, l, static_cast<int>(units), n,
                                        static_cast<std::size_t>(units), 1, mask);
                        applyDropout(out, mask, static_cast<std::size_t>(n) * units, 1);
                    }
                } else {
                    std::copy_n(pre, static_cast<std::size_t>(n) * units, out);
                }
                break;
            }
        }
        in = out;
    }
    return ws.post.back().data();
}

// Forward and backward of member k over n examples (the group of a batch of batchSize): adds
// nothing, writes the group's gradient (packed) to grad and returns the group's part of the
// loss, sum_b weight_b CE_b / batchSize. Not finite: the gradient is not computed.
float groupGradient(const ParamLayout& layout, int k, Activation act, const float* params,
                    const float* x, const int32_t* labels, const float* weights, int n,
                    int batchSize, const float* sharedCols, std::size_t colsStride,
                    const std::vector<std::size_t>& offsets, ConvNetCpu::Workspace& ws, float* grad,
                    const DropoutStep& dropout) {
    const Architecture& a = layout.architecture();
    const auto& layers = a.layers();
    const int classes = a.outputs();
    const float* logits =
        forward(layout, k, act, params, x, n, sharedCols, colsStride, ws, dropout, true);

    const float scale = 1.0f / static_cast<float>(batchSize);
    float loss = 0.0f;
    float* dLogits = ws.dLogits.data();
    for (int b = 0; b < n; ++b) {
        loss += softmaxCrossEntropy(logits + static_cast<std::size_t>(b) * classes, classes,
                                    static_cast<int>(labels[b]), weights[b], scale,
                                    dLogits + static_cast<std::size_t>(b) * classes);
    }
    if (!std::isfinite(loss)) {
        return loss;
    }

    // delta: the gradient of layer i's output; it becomes that of layer i - 1's output.
    float* delta = ws.delta.data();
    float* deltaPrev = ws.deltaPrev.data();
    std::copy_n(dLogits, static_cast<std::size_t>(n) * classes, delta);
    const float* input = layers.front().kind == LayerKind::Dense ? x : ws.input.data();
    if (a.input().channels == 1) {
        input = x;  // forward() read x in place
    }
    for (std::size_t ii = layers.size(); ii-- > 0;) {
        const StackLayer& s = layers[ii];
        const float* in = ii > 0 ? ws.post[ii - 1].data() : input;
        const std::size_t outSize = static_cast<std::size_t>(s.out.size()) * n;
        if (pooledByConvBelow(layers, ii, dropout)) {
            continue;  // the conv below takes delta, the pool's output gradient, as it is
        }
        // A conv with its pooling fused applies its activation's gradient slice by slice.
        const bool fused = poolFused(layers, ii, dropout);
        if (s.activated && dropout.on()) {
            // A mask per channel plane of an example (conv) or per unit (dense).
            const std::size_t span =
                s.kind == LayerKind::Conv ? static_cast<std::size_t>(s.out.plane()) : 1;
            dropoutActivateGrad(act, ws.pre[ii].data(), ws.dropMask[ii].data(), delta,
                                outSize / span, span);
        } else if (s.activated && !fused) {
            activateGrad(act, ws.pre[ii].data(), ws.post[ii].data(), delta, outSize);
        }
        switch (s.kind) {
            case LayerKind::Dense: {
                const int l = s.param;
                const Eigen::Index features = s.in.channels;
                const Eigen::Index units = s.out.channels;
                const bool flattened = s.flattens;
                const float* aIn = flattened ? ws.flat.data() : in;
                float* gw = grad + offsets[static_cast<std::size_t>(l)];
                float* gb = gw + units * features;
                // dW = dZ^T A, db = sum over the examples of dZ.
                cpu::gemm<ColMajor, RowMajor>(units, features, n, delta, units, aIn, features, gw,
                                              features, ws.gemmA.data(), ws.gemmB.data());
                for (Eigen::Index u = 0; u < units; ++u) {
                    gb[u] = 0.0f;
                }
                for (int b = 0; b < n; ++b) {
                    for (Eigen::Index u = 0; u < units; ++u) {
                        gb[u] += delta[b * units + u];
                    }
                }
                if (ii == 0) {
                    break;
                }
                // dA = dZ W, then unflattened to [C][n][H W] below a spatial layer.
                float* dA = flattened ? ws.flat.data() : deltaPrev;
                cpu::gemm<RowMajor, RowMajor>(n, features, units, delta, units,
                                              params + layout.weightOffset(l, k), features, dA,
                                              features, ws.gemmA.data(), ws.gemmB.data());
                if (flattened) {
                    const Shape sp = layers[ii - 1].out;
                    const std::size_t plane = static_cast<std::size_t>(sp.plane());
                    for (int b = 0; b < n; ++b) {
                        for (int c = 0; c < sp.channels; ++c) {
                            std::copy_n(
                                ws.flat.data() + static_cast<std::size_t>(b) * features + c * plane,
                                plane, deltaPrev + (static_cast<std::size_t>(c) * n + b) * plane);
                        }
                    }
                }
                break;
            }
            case LayerKind::Pool:
                poolBackward(s, delta, s.pool == PoolKind::Max ? ws.argmax[ii].data() : nullptr,
                             s.in.channels * n, deltaPrev);
                break;
            case LayerKind::Dropout: {
                // d(x * mask)/dx = mask: the same masks, in the same layout.
                const float* mask = ws.dropMask[ii].data();
                for (std::size_t j = 0; j < outSize; ++j) {
                    deltaPrev[j] = delta[j] * mask[j];
                }
                break;
            }
            case LayerKind::Conv: {
                const int l = s.param;
                const Eigen::Index fan = s.fanIn();
                const Eigen::Index filters = s.out.channels;
                const Eigen::Index plane = s.out.plane();
                const Eigen::Index cols = plane * n;
                const bool signsOnly = keepsSignsOnly(layers, ii, act, dropout);
                const float* filterWeights = params + layout.weightOffset(l, k);
                float* gw = grad + offsets[static_cast<std::size_t>(l)];
                float* gb = gw + filters * fan;
                // Slice by slice as forward() made them: the slice's output gradient dY (with
                // the pooling fused, made here from delta, the pool's output gradient, and the
                // activation's), the slice's columns again (forward()'s are still there when one
                // slice holds the task), dW (+)= dY cols^T, db (+)= dY's row sums, and below the
                // first layer dCols = W^T dY (into the columns, no longer needed), then col2im
                // into the slice's examples of deltaPrev.
                const int slice = ws.slice(s, n);
                for (int first = 0; first < n; first += slice) {
                    const int count = std::min(slice, n - first);
                    const Eigen::Index at = plane * first;
                    const Eigen::Index width = plane * count;
                    const float* dY = delta + at;
                    Eigen::Index dYStride = cols;
                    if (fused) {
                        const StackLayer& p = layers[ii + 1];
                        const std::size_t pooled = static_cast<std::size_t>(p.out.plane());
                        float* d = ws.sliceDelta.data();
                        for (Eigen::Index f = 0; f < filters; ++f) {
                            const std::size_t planeAt = static_cast<std::size_t>(f) * n + first;
                            poolBackward(p, delta + planeAt * pooled,
                                         p.pool == PoolKind::Max
                                             ? ws.argmax[ii + 1].data() + planeAt * pooled
                                             : nullptr,
                                         count, d + f * width);
                            if (signsOnly) {
                                keepWherePositive(ws.positive[ii].data() + f * cols + at,
                                                  d + f * width, static_cast<std::size_t>(width));
                            } else if (s.activated) {
                                activateGrad(act, ws.pre[ii].data() + f * cols + at,
                                             ws.post[ii].data() + f * cols + at, d + f * width,
                                             static_cast<std::size_t>(width));
                            }
                        }
                        dY = d;
                        dYStride = width;
                    }
                    const SliceColumns columns =
                        sliceColumns(s, in, n, first, count, ii == 0 ? sharedCols : nullptr,
                                     colsStride, slice >= n, ws.cols[ii].data());
                    if (first == 0) {
                        cpu::gemm<RowMajor, ColMajor>(filters, fan, width, dY, dYStride,
                                                      columns.data, columns.stride, gw, fan,
                                                      ws.gemmA.data(), ws.gemmB.data());
                    } else {
                        cpu::gemmAccumulate<RowMajor, ColMajor>(
                            filters, fan, width, dY, dYStride, columns.data, columns.stride, gw,
                            fan, ws.gemmA.data(), ws.gemmB.data());
                    }
                    for (Eigen::Index f = 0; f < filters; ++f) {
                        const float sum =
                            rowSum(dY + f * dYStride, static_cast<std::size_t>(width));
                        gb[f] = first == 0 ? sum : gb[f] + sum;
                    }
                    if (ii == 0) {
                        continue;
                    }
                    float* dCols = ws.cols[ii].data();
                    cpu::gemm<ColMajor, RowMajor>(fan, width, filters, filterWeights, fan, dY,
                                                  dYStride, dCols, width, ws.gemmA.data(),
                                                  ws.gemmB.data());
                    col2im(s, dCols, n, first, count, deltaPrev);
                }
                break;
            }
        }
        std::swap(delta, deltaPrev);
    }
    return loss;
}

}  // namespace

ConvNetCpu::ConvNetCpu() = default;
ConvNetCpu::~ConvNetCpu() = default;

void ConvNetCpu::bind(const ParamLayout& layout, Activation activation, int batch, int threads,
                      int normaliser, float dropout) {
    m_layout = layout;
    m_dropout = DropoutStep{};
    m_dropout.rate = dropout;
    m_offsets = packedOffsets(layout);
    m_activation = activation;
    m_batch = std::max(batch, 1);
    m_normaliser = normaliser > 0 ? normaliser : m_batch;
    m_reduce.clear();
    m_threads = std::max(threads, 1);
    m_groups = (m_batch + kConvGroup - 1) / kConvGroup;
    m_workspaces.assign(static_cast<std::size_t>(m_threads), Workspace{});
    for (Workspace& ws : m_workspaces) {
        ws.resize(layout.architecture(), kConvGroup, dropout > 0.0f, m_sliceFloats);
    }
    m_partials.assign(static_cast<std::size_t>(layout.members()) * m_groups * layout.perMember(),
                      0.0f);
    m_partialLoss.assign(static_cast<std::size_t>(layout.members()) * m_groups, 0.0f);
    const StackLayer& first = layout.architecture().layers().front();
    if (first.kind == LayerKind::Conv) {
        m_sharedCols.assign(static_cast<std::size_t>(first.fanIn()) * first.out.plane() * m_batch,
                            0.0f);
    } else {
        m_sharedCols.assign(0, 0.0f);
    }
}

std::size_t ConvNetCpu::workspaceBytes(const ParamLayout& layout, int batch, int threads,
                                       bool dropout) {
    Workspace ws;
    ws.resize(layout.architecture(), kConvGroup, dropout, kSliceFloats);
    const std::size_t groups = static_cast<std::size_t>((batch + kConvGroup - 1) / kConvGroup);
    const StackLayer& first = layout.architecture().layers().front();
    std::size_t shared = 0;
    if (first.kind == LayerKind::Conv) {
        shared = static_cast<std::size_t>(first.fanIn()) * first.out.plane() * batch;
    }
    return ws.bytes() * static_cast<std::size_t>(std::max(threads, 1)) +
           sizeof(float) *
               (static_cast<std::size_t>(layout.members()) * groups * layout.perMember() + shared);
}

void ConvNetCpu::train(const ConvMemberBatch* batches, bool sharedInput, const uint8_t* active,
                       const OptimizerRule* rules, bool firstUpdate, float* params, float* moment1,
                       float* moment2, float* losses,
                       const std::function<void(float*, std::size_t)>* replicaSum) {
    const ParamLayout& layout = m_layout;
    const Architecture& a = layout.architecture();
    const int members = layout.members();
    const int groups = m_groups;
    const std::size_t perMember = layout.perMember();
    const std::vector<std::size_t>& offsets = m_offsets;
    const StackLayer& first = a.layers().front();

    // A shared batch's first-layer columns, once for every member (parallel over groups: each
    // group's columns are a separate block of every row).
    const bool sharedCols = sharedInput && first.kind == LayerKind::Conv;
    const std::size_t colsStride =
        sharedCols ? static_cast<std::size_t>(first.out.plane()) * m_batch : 0;
    int firstActive = 0;
    while (firstActive < members && !active[firstActive]) {
        ++firstActive;
    }
    if (firstActive == members) {
        std::fill(losses, losses + members, 0.0f);
        return;
    }
    if (sharedCols) {
        const float* x = batches[firstActive].x;
#pragma omp parallel for num_threads(std::min(m_threads, groups)) schedule(static, 1)
        for (int g = 0; g < groups; ++g) {
            Workspace& ws = m_workspaces[static_cast<std::size_t>(omp_get_thread_num())];
            const int begin = g * kConvGroup;
            const int n = std::min(kConvGroup, m_batch - begin);
            const float* in =
                channelMajor(a, x + static_cast<std::size_t>(begin) * a.inputs(), n, ws.input);
            im2col(first, in, n, 0, n,
                   m_sharedCols.data() + static_cast<std::size_t>(begin) * first.out.plane(),
                   colsStride);
        }
    }

    // Tasks: (member, group). Each writes only its own partial gradient and loss.
    std::vector<int> tasks;
    tasks.reserve(static_cast<std::size_t>(members) * groups);
    for (int k = 0; k < members; ++k) {
        if (active[k]) {
            for (int g = 0; g < groups; ++g) {
                tasks.push_back(k * groups + g);
            }
        }
    }
    const int taskCount = static_cast<int>(tasks.size());
#pragma omp parallel for num_threads(std::min(m_threads, taskCount)) schedule(dynamic, 1)
    for (int t = 0; t < taskCount; ++t) {
        Workspace& ws = m_workspaces[static_cast<std::size_t>(omp_get_thread_num())];
        const int k = tasks[static_cast<std::size_t>(t)] / groups;
        const int g = tasks[static_cast<std::size_t>(t)] % groups;
        const int begin = g * kConvGroup;
        const int n = std::min(kConvGroup, m_batch - begin);
        const ConvMemberBatch& batch = batches[k];
        const std::size_t slot = static_cast<std::size_t>(k) * groups + g;
        m_partialLoss[slot] = groupGradient(
            layout, k, m_activation, params, batch.x + static_cast<std::size_t>(begin) * a.inputs(),
            batch.labels + begin, batch.weights + begin, n, m_normaliser,
            sharedCols ? m_sharedCols.data() + static_cast<std::size_t>(begin) * first.out.plane()
                       : nullptr,
            colsStride, offsets, ws, m_partials.data() + slot * perMember, groupDropout(k, begin));
    }

    // Each member's loss and gradient: its groups summed in order.
    for (int k = 0; k < members; ++k) {
        float loss = 0.0f;
        for (int g = 0; g < groups && active[k]; ++g) {
            loss += m_partialLoss[static_cast<std::size_t>(k) * groups + g];
        }
        losses[k] = loss;
    }
    if (replicaSum != nullptr || rules == nullptr) {
        // The data axis: this replica's gradients (its groups summed in order) and losses,
        // added up over the replicas; the update below then reads the sums. Without rules
        // (gradients only) the sums are what the caller reads (packedGradients()).
        const std::size_t total = perMember * static_cast<std::size_t>(members);
        m_reduce.resize(total + static_cast<std::size_t>(members));
        const int chunks = static_cast<int>((perMember + kUpdateChunk - 1) / kUpdateChunk);
        const int sumTasks = members * chunks;
#pragma omp parallel for num_threads(std::max(1, std::min(m_threads, sumTasks))) \
    schedule(dynamic, 1)
        for (int t = 0; t < sumTasks; ++t) {
            const int k = t / chunks;
            const std::size_t begin = static_cast<std::size_t>(t % chunks) * kUpdateChunk;
            const std::size_t count = std::min(kUpdateChunk, perMember - begin);
            float* out = m_reduce.data() + static_cast<std::size_t>(k) * perMember + begin;
            if (!active[k]) {
                std::fill(out, out + count, 0.0f);
                continue;
            }
            const float* part =
                m_partials.data() + static_cast<std::size_t>(k) * groups * perMember + begin;
            std::copy(part, part + count, out);
            for (int g = 1; g < groups; ++g) {
                const float* next = part + static_cast<std::size_t>(g) * perMember;
                for (std::size_t i = 0; i < count; ++i) {
                    out[i] += next[i];
                }
            }
        }
        std::copy(losses, losses + members, m_reduce.data() + total);
        if (replicaSum != nullptr) {
            (*replicaSum)(m_reduce.data(), m_reduce.size());
            std::copy_n(m_reduce.data() + total, members, losses);
        }
    }
    if (rules == nullptr) {
        return;
    }
    std::vector<uint8_t> update(static_cast<std::size_t>(members), 0);
    for (int k = 0; k < members; ++k) {
        update[static_cast<std::size_t>(k)] = active[k] && std::isfinite(losses[k]) ? 1 : 0;
    }

    // Sum the groups and update, in chunks of whole tensors' pieces: (member, layer, W or b,
    // chunk). Each element's sum runs over the groups in order whoever computes it.
    struct Piece {
        int k;
        std::size_t packed;  // offset in the packed gradient
        std::size_t param;   // offset in params / moments
        std::size_t count;
        float l2Gradient;  // the layer's 2c on its weights, 0 on biases (fastApplyUpdate)
    };
    std::vector<Piece> pieces;
    for (int k = 0; k < members; ++k) {
        if (!update[static_cast<std::size_t>(k)]) {
            continue;
        }
        for (int l = 0; l < layout.layerCount(); ++l) {
            const LayerSlot& s = layout.layer(l);
            const std::size_t w = static_cast<std::size_t>(s.out) * s.in;
            const std::size_t tensors[2][3] = {
                {offsets[static_cast<std::size_t>(l)], layout.weightOffset(l, k), w},
                {offsets[static_cast<std::size_t>(l)] + w, layout.biasOffset(l, k),
                 static_cast<std::size_t>(s.out)}};
            for (int t = 0; t < 2; ++t) {
                const std::size_t* tensor = tensors[t];
                for (std::size_t begin = 0; begin < tensor[2]; begin += kUpdateChunk) {
                    pieces.push_back({k, tensor[0] + begin, tensor[1] + begin,
                                      std::min(kUpdateChunk, tensor[2] - begin),
                                      t == 0 ? s.l2Gradient : 0.0f});
                }
            }
        }
    }
    const int pieceCount = static_cast<int>(pieces.size());
#pragma omp parallel for num_threads(std::max(1, std::min(m_threads, pieceCount))) \
    schedule(dynamic, 1)
    for (int p = 0; p < pieceCount; ++p) {
        const Piece& piece = pieces[static_cast<std::size_t>(p)];
        float* sum;
        if (replicaSum != nullptr) {
            sum = m_reduce.data() + static_cast<std::size_t>(piece.k) * perMember + piece.packed;
        } else {
            sum = m_partials.data() + static_cast<std::size_t>(piece.k) * groups * perMember +
                  piece.packed;
            for (int g = 1; g < groups; ++g) {
                const float* part = sum + static_cast<std::size_t>(g) * perMember;
                for (std::size_t i = 0; i < piece.count; ++i) {
                    sum[i] += part[i];
                }
            }
        }
        fastApplyUpdate(rules[piece.k], firstUpdate, params + piece.param, sum,
                        moment1 + piece.param, moment2 + piece.param, piece.count,
                        piece.l2Gradient);
    }
}

void ConvNetCpu::setDropoutStep(uint64_t seed, uint64_t step, uint32_t memberOffset,
                                uint32_t firstRow) {
    m_dropout.seed = seed;
    m_dropout.step = step;
    m_dropout.member = memberOffset;
    m_dropout.firstRow = firstRow;
}

DropoutStep ConvNetCpu::groupDropout(int k, int begin) const {
    DropoutStep d = m_dropout;
    d.member += static_cast<uint32_t>(k);
    d.firstRow += static_cast<uint32_t>(begin);
    return d;
}

float ConvNetCpu::gradient(int k, const float* params, const ConvMemberBatch& batch, int batchSize,
                           float* grad) {
    const ParamLayout& layout = m_layout;
    const std::vector<std::size_t>& offsets = m_offsets;
    const std::size_t perMember = layout.perMember();
    const int inputs = layout.inputs();
    std::vector<float> part(perMember);
    std::fill(grad, grad + perMember, 0.0f);
    float loss = 0.0f;
    for (int begin = 0; begin < batchSize; begin += kConvGroup) {
        const int n = std::min(kConvGroup, batchSize - begin);
        loss += groupGradient(
            layout, k, m_activation, params, batch.x + static_cast<std::size_t>(begin) * inputs,
            batch.labels + begin, batch.weights + begin, n, batchSize, nullptr, 0, offsets,
            m_workspaces.front(), begin == 0 ? grad : part.data(), groupDropout(k, begin));
        if (begin > 0) {
            for (std::size_t i = 0; i < perMember; ++i) {
                grad[i] += part[i];
            }
        }
    }
    return loss;
}

void ConvNetCpu::predictLogProbs(const float* params, const float* x, int64_t rows, float* out) {
    const ParamLayout& layout = m_layout;
    const int members = layout.members();
    const int classes = layout.classes();
    const int inputs = layout.inputs();
    const int chunk = kConvGroup;
    const int64_t chunks = (rows + chunk - 1) / chunk;
    const int64_t tasks = chunks * members;
#pragma omp parallel for num_threads(m_threads) schedule(dynamic, 1)
    for (int64_t task = 0; task < tasks; ++task) {
        Workspace& ws = m_workspaces[static_cast<std::size_t>(omp_get_thread_num())];
        const int k = static_cast<int>(task / chunks);
        const int64_t begin = (task % chunks) * chunk;
        const int n = static_cast<int>(std::min<int64_t>(chunk, rows - begin));
        const float* logits =
            forward(layout, k, m_activation, params, x + begin * inputs, n, nullptr, 0, ws);
        for (int b = 0; b < n; ++b) {
            const float* z = logits + static_cast<std::size_t>(b) * classes;
            const float lse = logSumExp(z, classes);
            float* dst = out + (static_cast<std::size_t>(k) * rows + begin + b) * classes;
            for (int c = 0; c < classes; ++c) {
                dst[c] = z[c] - lse;
            }
        }
    }
}

}  // namespace ensemble
