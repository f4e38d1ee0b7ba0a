#pragma once

#include <Eigen/Core>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "math/activations.h"
#include "math/loss.h"
#include "model/mlp.h"

namespace ensemble {

// One member's forward and backward pass over a batch, templated on the scalar so the CPU
// backend runs it in float and the gradient checks run the very same code in double.

// Buffers aligned for the widest SIMD Eigen uses. Alignment matters for determinism, not only
// speed: Eigen peels unaligned heads differently, which changes the order of a dot product's
// additions, so two buffers of different alignment would give different bits.
template <typename T>
using AlignedVector = std::vector<T, Eigen::aligned_allocator<T>>;

template <typename T>
struct MemberWorkspace {
    std::vector<AlignedVector<T>> pre;   // per layer: B x out pre-activations (last = logits)
    std::vector<AlignedVector<T>> post;  // per hidden layer: B x out activations
    AlignedVector<T> delta;              // B x maxWidth: dLoss/dZ of the current layer
    AlignedVector<T> deltaPrev;          // B x maxWidth

    void resize(const ParamLayout& layout, int batch) {
        const int layers = layout.layerCount();
        pre.resize(static_cast<std::size_t>(layers));
        post.resize(static_cast<std::size_t>(layers));
        for (int l = 0; l < layers; ++l) {
            const std::size_t n = static_cast<std::size_t>(batch) * layout.layer(l).out;
            pre[static_cast<std::size_t>(l)].resize(n);
            post[static_cast<std::size_t>(l)].resize(l + 1 < layers ? n : 0);
        }
        delta.resize(static_cast<std::size_t>(batch) * layout.maxWidth());
        deltaPrev.resize(delta.size());
    }
};

template <typename T>
using RowMatrixT = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

// Forward pass of member k for `batch` rows of x (row-major, batch x inputs): leaves the
// pre-activations and activations in ws; returns a pointer to the logits (batch x C).
template <typename T>
const T* memberForward(const ParamLayout& layout, int k, Activation act, const T* params,
                       const T* x, int batch, MemberWorkspace<T>& ws) {
    using ConstMap = Eigen::Map<const RowMatrixT<T>>;
    using Map = Eigen::Map<RowMatrixT<T>>;
    using ConstRow = Eigen::Map<const Eigen::Matrix<T, 1, Eigen::Dynamic>>;
    const int layers = layout.layerCount();
    const T* prev = x;
    for (int l = 0; l < layers; ++l) {
        const LayerSlot& s = layout.layer(l);
        ConstMap a(prev, batch, s.in);
        ConstMap w(params + layout.weightOffset(l, k), s.out, s.in);
        ConstRow bias(params + layout.biasOffset(l, k), s.out);
        T* zData = ws.pre[static_cast<std::size_t>(l)].data();
        Map z(zData, batch, s.out);
        z.noalias() = a * w.transpose();
        z.rowwise() += bias;
        if (l + 1 < layers) {
            T* post = ws.post[static_cast<std::size_t>(l)].data();
            for (std::size_t i = 0, n = static_cast<std::size_t>(batch) * s.out; i < n; ++i) {
                post[i] = activate(act, zData[i]);
            }
            prev = post;
        } else {
            prev = zData;
        }
    }
    return prev;
}

// Loss (mean over the batch of weight_b * loss_b) and the gradient of member k's parameters,
// packed per layer as [W_l (out x in) row-major, b_l (out)] into `grad` (layout.perMember()).
// The loss is the head's: softmax cross-entropy of `labels` (categorical) or regressionLoss
// (math/loss.h) of the standardised `targets` (gaussian, mse).
// Stops after the loss and returns it when it is not finite (grad is then unspecified).
// With `inputGrad` (batch x inputs, row-major) also dLoss/dX = dZ_0 W_0 (adversarial training).
template <typename T>
T memberForwardBackward(const ParamLayout& layout, int k, Activation act, Likelihood likelihood,
                        const T* params, const T* x, const int32_t* labels, const T* targets,
                        const T* weights, int batch, MemberWorkspace<T>& ws, T* grad,
                        T* inputGrad = nullptr) {
    using ConstMap = Eigen::Map<const RowMatrixT<T>>;
    using Map = Eigen::Map<RowMatrixT<T>>;
    using VecMap = Eigen::Map<Eigen::Matrix<T, Eigen::Dynamic, 1>>;
    const int layers = layout.layerCount();
    const int classes = layout.classes();
    const T* logits = memberForward(layout, k, act, params, x, batch, ws);

    const T scale = T(1) / static_cast<T>(batch);
    T loss = T(0);
    for (int b = 0; b < batch; ++b) {
        const T* out = logits + static_cast<std::size_t>(b) * classes;
        T* dOut = ws.delta.data() + static_cast<std::size_t>(b) * classes;
        loss += likelihood == Likelihood::Categorical
                    ? softmaxCrossEntropy(out, classes, labels[b], weights[b], scale, dOut)
                    : regressionLoss(likelihood, out, targets[b], weights[b], scale, dOut);
    }
    if (!(loss - loss == T(0))) {  // NaN or Inf: the caller freezes this member
        return loss;
    }

    // dW_l = dZ_l^T A_{l-1};  db_l = column sums of dZ_l;  dZ_{l-1} = (dZ_l W_l) .* f'(Z_{l-1}).
    std::size_t gradOffset = layout.perMember();
    for (int l = layers - 1; l >= 0; --l) {
        const LayerSlot& s = layout.layer(l);
        const T* aPrev = l > 0 ? ws.post[static_cast<std::size_t>(l - 1)].data() : x;
        ConstMap a(aPrev, batch, s.in);
        ConstMap dz(ws.delta.data(), batch, s.out);
        gradOffset -= static_cast<std::size_t>(s.out) * (s.in + 1);
        Map dw(grad + gradOffset, s.out, s.in);
        VecMap db(grad + gradOffset + static_cast<std::size_t>(s.out) * s.in, s.out);
        dw.noalias() = dz.transpose() * a;
        db.noalias() = dz.colwise().sum().transpose();
        if (l > 0) {
            ConstMap w(params + layout.weightOffset(l, k), s.out, s.in);
            Map dPrev(ws.deltaPrev.data(), batch, s.in);
            dPrev.noalias() = dz * w;
            const T* zp = ws.pre[static_cast<std::size_t>(l - 1)].data();
            const T* ap = ws.post[static_cast<std::size_t>(l - 1)].data();
            T* d = ws.deltaPrev.data();
            for (std::size_t i = 0, n = static_cast<std::size_t>(batch) * s.in; i < n; ++i) {
                d[i] *= activateGrad(act, zp[i], ap[i]);
            }
            std::swap(ws.delta, ws.deltaPrev);
        } else if (inputGrad != nullptr) {
            ConstMap w(params + layout.weightOffset(l, k), s.out, s.in);
            Map dx(inputGrad, batch, s.in);
            dx.noalias() = dz * w;
        }
    }
    return loss;
}

// The categorical head's form.
template <typename T>
T memberForwardBackward(const ParamLayout& layout, int k, Activation act, const T* params,
                        const T* x, const int32_t* labels, const T* weights, int batch,
                        MemberWorkspace<T>& ws, T* grad) {
    return memberForwardBackward<T>(layout, k, act, Likelihood::Categorical, params, x, labels,
                                    static_cast<const T*>(nullptr), weights, batch, ws, grad);
}

}  // namespace ensemble
