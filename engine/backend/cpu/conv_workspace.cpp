// ConvNetCpu::Workspace's sizing and the slice and fusion rules (conv_workspace.h).
#include "backend/cpu/conv_workspace.h"

#include <Eigen/Core>
#include <algorithm>

#include "backend/cpu/gemm.h"

namespace ensemble {

namespace conv {

int sliceExamples(const StackLayer& s, int n, std::size_t sliceFloats) {
    const std::size_t perExample =
        static_cast<std::size_t>(s.fanIn() + 2 * s.out.channels) * s.out.plane();
    return static_cast<int>(
        std::clamp<std::size_t>(sliceFloats / perExample, 1, static_cast<std::size_t>(n)));
}

bool poolFused(const std::vector<StackLayer>& layers, std::size_t i, const DropoutStep& dropout) {
    return layers[i].kind == LayerKind::Conv && i + 1 < layers.size() &&
           layers[i + 1].kind == LayerKind::Pool && !dropout.on();
}

bool pooledByConvBelow(const std::vector<StackLayer>& layers, std::size_t i,
                       const DropoutStep& dropout) {
    return layers[i].kind == LayerKind::Pool && i > 0 && poolFused(layers, i - 1, dropout);
}

bool keepsSignsOnly(const std::vector<StackLayer>& layers, std::size_t i, Activation act,
                    const DropoutStep& dropout) {
    return act == Activation::Relu && layers[i].activated && poolFused(layers, i, dropout);
}

}  // namespace conv

void ConvNetCpu::Workspace::resize(const Architecture& a, int n, bool dropout,
                                   std::size_t floatsPerSlice) {
    sliceFloats = floatsPerSlice;
    const auto& layers = a.layers();
    dropMask.assign(layers.size(), FloatBuffer{});
    for (std::size_t i = 0; i < layers.size(); ++i) {
        if (dropout && layers[i].activated) {
            dropMask[i].assign(static_cast<std::size_t>(layers[i].units()) * n, 0.0f);
        } else if (layers[i].kind == LayerKind::Dropout) {
            dropMask[i].assign(static_cast<std::size_t>(layers[i].out.size()) * n, 0.0f);
        }
    }
    pre.assign(layers.size(), FloatBuffer{});
    post.assign(layers.size(), FloatBuffer{});
    argmax.assign(layers.size(), {});
    positive.assign(layers.size(), {});
    cols.assign(layers.size(), FloatBuffer{});
    std::size_t widest = static_cast<std::size_t>(a.input().size());
    std::size_t flatSize = 0;
    std::size_t sliceDeltaSize = 0;
    for (std::size_t i = 0; i < layers.size(); ++i) {
        const StackLayer& s = layers[i];
        const std::size_t outSize = static_cast<std::size_t>(s.out.size()) * n;
        widest = std::max(widest, outSize / n);
        post[i].assign(outSize, 0.0f);
        if (s.param >= 0) {
            pre[i].assign(outSize, 0.0f);
        }
        if (s.kind == LayerKind::Conv) {
            positive[i].assign(outSize, 0);
            sliceDeltaSize = std::max(sliceDeltaSize, static_cast<std::size_t>(s.out.channels) *
                                                          s.out.plane() * slice(s, n));
            cols[i].assign(static_cast<std::size_t>(s.fanIn()) * s.out.plane() * slice(s, n), 0.0f);
        }
        if (s.kind == LayerKind::Pool && s.pool == PoolKind::Max) {
            argmax[i].assign(outSize, 0);
        }
        if (s.kind == LayerKind::Dense && flatSize == 0 && s.flattens) {
            flatSize = static_cast<std::size_t>(s.in.size()) * n;
        }
    }
    input.assign(static_cast<std::size_t>(a.input().size()) * n, 0.0f);
    flat.assign(std::max<std::size_t>(flatSize, 1), 0.0f);
    delta.assign(widest * n, 0.0f);
    deltaPrev.assign(widest * n, 0.0f);
    dLogits.assign(static_cast<std::size_t>(a.outputs()) * n, 0.0f);
    sliceDelta.assign(std::max<std::size_t>(sliceDeltaSize, 1), 0.0f);
    slicePre.assign(sliceDelta.size(), 0.0f);
    slicePost.assign(sliceDelta.size(), 0.0f);
    // Every product of a task of 1..n examples (the last group of a batch is smaller), a
    // conv's of slices of 1..sliceExamples examples.
    cpu::GemmBuffers buffers;
    for (int m = 1; m <= n; ++m) {
        for (const StackLayer& s : layers) {
            const Eigen::Index fan = s.fanIn();
            const Eigen::Index out = s.out.channels;
            if (s.kind == LayerKind::Conv) {
                if (m > slice(s, n)) {
                    continue;
                }
                const Eigen::Index cols = static_cast<Eigen::Index>(s.out.plane()) * m;
                buffers.need(out, cols, fan);  // forward
                buffers.need(out, fan, cols);  // dW
                buffers.need(fan, cols, out);  // dCols
            } else if (s.kind == LayerKind::Dense) {
                buffers.need(m, out, fan);  // forward
                buffers.need(out, fan, m);  // dW
                buffers.need(m, fan, out);  // dA
            }
        }
    }
    gemmA.assign(buffers.sizeA, 0.0f);
    gemmB.assign(buffers.sizeB, 0.0f);
}

std::size_t ConvNetCpu::Workspace::bytes() const {
    std::size_t total = input.size() + flat.size() + delta.size() + deltaPrev.size() +
                        dLogits.size() + 3 * sliceDelta.size() + gemmA.size() + gemmB.size();
    for (std::size_t i = 0; i < post.size(); ++i) {
        total += pre[i].size() + post[i].size() + cols[i].size() + argmax[i].size() +
                 dropMask[i].size() + (positive[i].size() + sizeof(float) - 1) / sizeof(float);
    }
    return total * sizeof(float);
}

}  // namespace ensemble
