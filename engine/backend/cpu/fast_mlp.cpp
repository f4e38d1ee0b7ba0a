#include "backend/cpu/fast_mlp.h"

// The passes of the fast path: forward, loss, backward (with its sink: the fused update or the
// packed gradient), the adversarial objective, and prediction. The kernels they run are in
// fast_kernels.h and fast_layout.h, the update in fast_update.cpp, the buffers in
// fast_workspace.cpp.

#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <utility>

#include "backend/cpu/fast_kernels.h"
#include "math/loss.h"

namespace ensemble {

namespace {

using namespace fast;  // the kernels (fast_kernels.h, fast_layout.h), as if written here

// Forward pass of member k over the batch (feature-major): returns the logits, classes x Bp.
// With dropout on, every hidden activation is multiplied by its mask (kept in ws.dropMask).
const float* forward(const ParamLayout& layout, int k, Activation act, const float* params,
                     const FastBatch& in, int batch, int bp, FastWorkspace& ws,
                     const DropoutStep& dropout = DropoutStep{}) {
    const int layers = layout.layerCount();
    const int vectors = bp / kLanes;
    for (int l = 0; l < layers; ++l) {
        const LayerSlot& s = layout.layer(l);
        const float* w = params + layout.weightOffset(l, k);
        const float* bias = params + layout.biasOffset(l, k);
        float* z = ws.pre[static_cast<std::size_t>(l)].data();
        if (!useEigen(s.in, s.out, batch)) {
            const float* aT =
                l == 0 ? in.xt.data() : ws.post[static_cast<std::size_t>(l - 1)].data();
            smallProduct(s.out, vectors, s.in, w, s.in, 1, aT, bp, bias, z, bp);
        } else {
            // Z^T = W X^T (X batch-major) or W A^T, then + b.
            if (l == 0) {
                gemm<Eigen::RowMajor, Eigen::ColMajor>(s.out, bp, s.in, w, s.in, in.xb.data(),
                                                       in.paddedInputs, z, bp, ws);
            } else {
                gemm<Eigen::RowMajor, Eigen::RowMajor>(
                    s.out, bp, s.in, w, s.in, ws.post[static_cast<std::size_t>(l - 1)].data(), bp,
                    z, bp, ws);
            }
            StridedMap zm(z, s.out, bp, Eigen::OuterStride<>(bp));
            const Eigen::Map<const Eigen::VectorXf> bv(bias, s.out);
            zm.colwise() += bv;
        }
        if (l + 1 < layers) {
            float* post = ws.post[static_cast<std::size_t>(l)].data();
            activateRows(act, z, post, static_cast<std::size_t>(s.out) * bp);
            if (dropout.on()) {
                float* mask = ws.dropMask[static_cast<std::size_t>(l)].data();
                fillDropoutMask(dropout, l, s.out, batch, bp, mask);
                multiplyRows(post, mask, static_cast<std::size_t>(s.out) * bp);
            }
        }
    }
    return ws.pre[static_cast<std::size_t>(layers - 1)].data();
}

// Sum over the batch of weight_b * CE_b / normaliser (the batch size: the mean; a data-axis
// shard passes the whole batch's size) for logits (classes x bp, feature-major), and dLogits
// into delta (classes x bp, zero in the padding): softmaxCrossEntropyLanes of math/loss.h with
// one example per lane.
float crossEntropy(const float* logits, int classes, const int32_t* labels, const float* weights,
                   int batch, int normaliser, int bp, FastWorkspace& ws, float* delta) {
    float* ew = ws.exampleWeights.data();
    float* el = ws.exampleLabels.data();
    const float scale = 1.0f / static_cast<float>(normaliser);
    for (int b = 0; b < batch; ++b) {
        ew[b] = weights[b] * scale;
        el[b] = static_cast<float>(labels[b]);
    }
    Packet lossAcc = pset1<Packet>(0.0f);
    for (int v = 0; v < bp; v += kLanes) {
        const Packet label = pload<Packet>(el + v);
        // Padding lanes (label -1) contribute exactly 0, whatever their logits.
        const Packet real = pcmp_le(pset1<Packet>(0.0f), label);
        const auto logit = [&](int c) {
            return pload<Packet>(logits + static_cast<std::ptrdiff_t>(c) * bp + v);
        };
        const auto isLabel = [&](int c) {
            return pcmp_eq(label, pset1<Packet>(static_cast<float>(c)));
        };
        const auto grad = [&](int c, Packet g) {
            pstore(delta + static_cast<std::ptrdiff_t>(c) * bp + v, pand(real, g));
        };
        const Packet loss =
            softmaxCrossEntropyLanes(classes, logit, isLabel, pload<Packet>(ew + v), grad);
        lossAcc = padd(lossAcc, pand(real, loss));
    }
    return predux(lossAcc);
}

// Sum over the batch of weight_b * loss_b / normaliser of a regression head (outputs x bp,
// feature-major:
// row 0 the mean, row 1 the gaussian's raw variance) against the standardised targets, and
// dOutputs into delta: gaussianNllLanes / squaredErrorLanes of math/loss.h, one example per
// lane.
float regressionLoss(const float* outputs, Likelihood likelihood, const float* targets,
                     const float* weights, int batch, int normaliser, int bp, FastWorkspace& ws,
                     float* delta) {
    float* ew = ws.exampleWeights.data();
    float* el = ws.exampleLabels.data();
    float* et = ws.exampleTargets.data();
    const float scale = 1.0f / static_cast<float>(normaliser);
    for (int b = 0; b < batch; ++b) {
        ew[b] = weights[b] * scale;
        el[b] = 0.0f;  // real row (the padding keeps -1)
        et[b] = targets[b];
    }
    const bool gaussian = likelihood == Likelihood::Gaussian;
    Packet lossAcc = pset1<Packet>(0.0f);
    for (int v = 0; v < bp; v += kLanes) {
        const Packet real = pcmp_le(pset1<Packet>(0.0f), pload<Packet>(el + v));
        const Packet w = pload<Packet>(ew + v);
        const Packet t = pload<Packet>(et + v);
        const Packet mean = pload<Packet>(outputs + v);
        Packet gradMean;
        Packet loss;
        if (gaussian) {
            Packet gradRaw;
            loss = gaussianNllLanes(mean, pload<Packet>(outputs + bp + v), t, w, gradMean, gradRaw);
            pstore(delta + bp + v, pand(real, gradRaw));
        } else {
            loss = squaredErrorLanes(mean, t, w, gradMean);
        }
        pstore(delta + v, pand(real, gradMean));
        lossAcc = padd(lossAcc, pand(real, loss));
    }
    return predux(lossAcc);
}

// The shared backward pass: for each layer from the last, dW and db into ws.gradW / ws.gradB,
// dA of the layer below (with the old W), then sink(l, dW, db), which may update layer l (or
// change dW and db first: they are scratch). With `inputGrad` (paddedInputs x Bp, adversarial
// training only) also dLoss/dX^T = W_0^T dZ_0^T, before layer 0's sink.
// Returns the loss (not finite: stops before the backward pass).
template <typename Sink>
float forwardBackward(const ParamLayout& layout, int k, Activation act, const float* params,
                      const FastBatch& in, const int32_t* labels, const float* weights,
                      FastWorkspace& ws, Likelihood likelihood, const float* targets,
                      int normaliser, const DropoutStep& dropout, Sink&& sink,
                      float* inputGrad = nullptr) {
    const int batch = in.batch;
    const int bp = in.paddedBatch;
    const int layers = layout.layerCount();
    const int classes = layout.classes();
    if (dropout.on() && ws.dropMask.size() != static_cast<std::size_t>(layers)) {
        throw std::logic_error("dropout needs FastWorkspace::resize(layout, batch, _, true)");
    }
    const float* logits = forward(layout, k, act, params, in, batch, bp, ws, dropout);

    // Loss and dLogits: softmaxCrossEntropyLanes (math/loss.h) across the examples of the batch
    // (Eigen's pexp/plog instead of expf/logf).
    float* delta = ws.delta.data();
    float* deltaPrev = ws.deltaPrev.data();
    const float loss =
        likelihood == Likelihood::Categorical
            ? crossEntropy(logits, classes, labels, weights, batch, normaliser, bp, ws, delta)
            : regressionLoss(logits, likelihood, targets, weights, batch, normaliser, bp, ws,
                             delta);
    if (!std::isfinite(loss)) {
        return loss;
    }

    const int vectors = bp / kLanes;
    for (int l = layers - 1; l >= 0; --l) {
        const LayerSlot& s = layout.layer(l);
        const float* w = params + layout.weightOffset(l, k);
        float* dw = ws.gradW.data();
        float* db = ws.gradB.data();
        // dW = dZ^T A over the real rows only (padding never reaches a gradient).
        if (!useEigen(s.in, s.out, batch) && transposedWeightGradient(s.in, s.out)) {
            // Few inputs (the 2-D input layer): dW^T = A^T dZ, vectorised along the outputs
            // instead of along mostly-padding input lanes; then transposed into place.
            const int outP = padded(s.out);
            const float* aT =
                l == 0 ? in.xt.data() : ws.post[static_cast<std::size_t>(l - 1)].data();
            transposeBlocks(delta, outP, bp, bp, ws.batchMajor.data());
            float* dwt = ws.gradWT.data();
            smallProduct(s.in, outP / kLanes, batch, aT, bp, 1, ws.batchMajor.data(), outP, nullptr,
                         dwt, outP);
            for (int o = 0; o < s.out; ++o) {
                for (int i = 0; i < s.in; ++i) {
                    dw[static_cast<std::ptrdiff_t>(o) * s.in + i] =
                        dwt[static_cast<std::ptrdiff_t>(i) * outP + o];
                }
            }
        } else if (!useEigen(s.in, s.out, batch)) {
            const int inP = padded(s.in);
            const float* aB = in.xb.data();
            if (l > 0) {
                transposeBlocks(ws.post[static_cast<std::size_t>(l - 1)].data(), inP, bp, bp,
                                ws.batchMajor.data());
                aB = ws.batchMajor.data();
            }
            smallProduct(s.out, inP / kLanes, batch, delta, bp, 1, aB, inP, nullptr, dw, inP);
            if (inP != s.in) {  // compact the rows to stride `in` (moving data only down)
                for (int o = 1; o < s.out; ++o) {
                    std::memmove(dw + static_cast<std::ptrdiff_t>(o) * s.in,
                                 dw + static_cast<std::ptrdiff_t>(o) * inP,
                                 sizeof(float) * static_cast<std::size_t>(s.in));
                }
            }
        } else {
            // dW = dZ^T X (X batch-major) or dZ^T A, over the real rows.
            if (l == 0) {
                gemm<Eigen::RowMajor, Eigen::RowMajor>(s.out, s.in, batch, delta, bp, in.xb.data(),
                                                       in.paddedInputs, dw, s.in, ws);
            } else {
                gemm<Eigen::RowMajor, Eigen::ColMajor>(
                    s.out, s.in, batch, delta, bp, ws.post[static_cast<std::size_t>(l - 1)].data(),
                    bp, dw, s.in, ws);
            }
        }
        rowSums(delta, s.out, batch, bp, db);
        if (l > 0) {
            // dA^T = W^T dZ^T, then times f'(Z) of the layer below.
            if (!useEigen(s.in, s.out, batch)) {
                smallProduct(s.in, vectors, s.out, w, 1, s.in, delta, bp, nullptr, deltaPrev, bp);
            } else {
                gemm<Eigen::ColMajor, Eigen::RowMajor>(s.in, bp, s.out, w, s.in, delta, bp,
                                                       deltaPrev, bp, ws);
            }
            if (dropout.on()) {
                dropoutActivateGradRows(act, ws.pre[static_cast<std::size_t>(l - 1)].data(),
                                        ws.dropMask[static_cast<std::size_t>(l - 1)].data(),
                                        deltaPrev, static_cast<std::size_t>(s.in) * bp);
            } else {
                activateGradRows(act, ws.pre[static_cast<std::size_t>(l - 1)].data(),
                                 ws.post[static_cast<std::size_t>(l - 1)].data(), deltaPrev,
                                 static_cast<std::size_t>(s.in) * bp);
            }
        } else if (inputGrad != nullptr) {
            // dX^T = W^T dZ^T, as dA^T above (zero in the padding, since dZ is).
            if (!useEigen(s.in, s.out, batch)) {
                smallProduct(s.in, vectors, s.out, w, 1, s.in, delta, bp, nullptr, inputGrad, bp);
            } else {
                gemm<Eigen::ColMajor, Eigen::RowMajor>(s.in, bp, s.out, w, s.in, delta, bp,
                                                       inputGrad, bp, ws);
            }
        }
        sink(l, dw, db);
        std::swap(delta, deltaPrev);
    }
    return loss;
}

// out = in moved by eps * sign(inputGrad) (adversarialInput, math/loss.h), in both layouts;
// input f by inputEps[f] instead when inputEps is given. The padding of out stays zero.
// Precondition: out.resize(layout, in.batch) was called.
void adversarialBatch(const ParamLayout& layout, const FastBatch& in, const float* inputGrad,
                      float eps, const float* inputEps, FastBatch& out) {
    const int inputs = layout.inputs();
    const int bp = in.paddedBatch;
    const int ip = in.paddedInputs;
    const float* xb = in.xb.data();  // B-major: fastGather always fills it
    float* ob = out.xb.data();
    float* ot = out.xt.data();
    // As in fastGather: the feature-major copy only feeds the small-layer kernels.
    const bool transposed = !useEigen(inputs, layout.layer(0).out, in.batch);
    for (int b = 0; b < in.batch; ++b) {
        for (int f = 0; f < inputs; ++f) {
            const std::ptrdiff_t major = static_cast<std::ptrdiff_t>(b) * ip + f;
            const std::ptrdiff_t feature = static_cast<std::ptrdiff_t>(f) * bp + b;
            const float v = adversarialInput(xb[major], inputGrad[feature],
                                             inputEps != nullptr ? inputEps[f] : eps);
            ob[major] = v;
            if (transposed) {
                ot[feature] = v;
            }
        }
    }
}

// Offset of layer l in a member's packed gradient: the layers below, each [W (out x in), b].
std::size_t packedLayerOffset(const ParamLayout& layout, int l) {
    std::size_t offset = 0;
    for (int j = 0; j < l; ++j) {
        offset += static_cast<std::size_t>(layout.layer(j).out) * (layout.layer(j).in + 1);
    }
    return offset;
}

// forwardBackward of the adversarial objective loss(X) + loss(X'), X' = X + eps *
// sign(dloss(X)/dX), both with the current parameters: the clean pass keeps its gradient in
// ws.gradSum and dX in ws.inputGrad, the adversarial pass adds the clean gradient to its own
// before each sink(l, dW, db). Returns loss(X), or loss(X') when that one is not finite.
template <typename Sink>
float adversarialForwardBackward(const ParamLayout& layout, int k, Activation act,
                                 const float* params, const FastBatch& in, const int32_t* labels,
                                 const float* weights, FastWorkspace& ws, Likelihood likelihood,
                                 const float* targets, int normaliser, float eps,
                                 const DropoutStep& dropout, Sink&& sink) {
    if (ws.adversarial.batch != in.batch || ws.gradSum.size() != layout.perMember()) {
        throw std::logic_error("adversarial training needs FastWorkspace::resize(layout, " +
                               std::to_string(in.batch) + ", true)");
    }
    float* sum = ws.gradSum.data();
    const float clean = forwardBackward(
        layout, k, act, params, in, labels, weights, ws, likelihood, targets, normaliser, dropout,
        [&](int l, const float* dw, const float* db) {
            const LayerSlot& s = layout.layer(l);
            const std::size_t n = static_cast<std::size_t>(s.out) * s.in;
            float* dst = sum + packedLayerOffset(layout, l);
            std::copy(dw, dw + n, dst);
            std::copy(db, db + s.out, dst + n);
        },
        ws.inputGrad.data());
    if (!std::isfinite(clean)) {
        return clean;
    }
    adversarialBatch(layout, in, ws.inputGrad.data(), eps,
                     ws.inputEps.empty() ? nullptr : ws.inputEps.data(), ws.adversarial);
    const float adversarial =
        forwardBackward(layout, k, act, params, ws.adversarial, labels, weights, ws, likelihood,
                        targets, normaliser, dropout, [&](int l, float* dw, float* db) {
                            const LayerSlot& s = layout.layer(l);
                            const std::size_t n = static_cast<std::size_t>(s.out) * s.in;
                            const float* c = sum + packedLayerOffset(layout, l);
                            for (std::size_t i = 0; i < n; ++i) {
                                dw[i] = c[i] + dw[i];
                            }
                            for (int o = 0; o < s.out; ++o) {
                                db[o] = c[n + static_cast<std::size_t>(o)] + db[o];
                            }
                            sink(l, dw, db);
                        });
    return std::isfinite(adversarial) ? clean : adversarial;
}

}  // namespace

float fastTrainMember(const ParamLayout& layout, int k, Activation act, float* params,
                      float* moment1, float* moment2, const OptimizerRule& rule, bool firstUpdate,
                      const FastBatch& batch, const int32_t* labels, const float* weights,
                      FastWorkspace& ws, Likelihood likelihood, const float* targets,
                      float adversarialEps, const DropoutStep& dropout) {
    const auto update = [&](int l, const float* dw, const float* db) {
        const LayerSlot& s = layout.layer(l);
        const std::size_t wOff = layout.weightOffset(l, k);
        const std::size_t bOff = layout.biasOffset(l, k);
        fastApplyUpdate(rule, firstUpdate, params + wOff, dw, moment1 + wOff, moment2 + wOff,
                        static_cast<std::size_t>(s.out) * s.in, s.l2Gradient);
        fastApplyUpdate(rule, firstUpdate, params + bOff, db, moment1 + bOff, moment2 + bOff,
                        static_cast<std::size_t>(s.out));
    };
    if (adversarialEps > 0.0f) {
        return adversarialForwardBackward(layout, k, act, params, batch, labels, weights, ws,
                                          likelihood, targets, batch.batch, adversarialEps, dropout,
                                          update);
    }
    return forwardBackward(layout, k, act, params, batch, labels, weights, ws, likelihood, targets,
                           batch.batch, dropout, update);
}

float fastMemberGradient(const ParamLayout& layout, int k, Activation act, const float* params,
                         const FastBatch& batch, const int32_t* labels, const float* weights,
                         FastWorkspace& ws, float* grad, Likelihood likelihood,
                         const float* targets, int normaliser, float adversarialEps,
                         const DropoutStep& dropout) {
    const auto store = [&](int l, const float* dw, const float* db) {
        const std::size_t offset = packedLayerOffset(layout, l);
        const LayerSlot& s = layout.layer(l);
        const std::size_t n = static_cast<std::size_t>(s.out) * s.in;
        std::copy(dw, dw + n, grad + offset);
        std::copy(db, db + s.out, grad + offset + n);
    };
    const int divisor = normaliser > 0 ? normaliser : batch.batch;
    if (adversarialEps > 0.0f) {
        return adversarialForwardBackward(layout, k, act, params, batch, labels, weights, ws,
                                          likelihood, targets, divisor, adversarialEps, dropout,
                                          store);
    }
    return forwardBackward(layout, k, act, params, batch, labels, weights, ws, likelihood, targets,
                           divisor, dropout, store);
}

void fastPredictLogProbs(const ParamLayout& layout, int k, Activation act, const float* params,
                         const float* x, int rows, FastWorkspace& ws, float* out,
                         Likelihood likelihood) {
    const int inputs = layout.inputs();
    const int classes = layout.classes();
    const int bp = ws.paddedBatch;
    FastBatch& in = ws.input;
    // Inputs in both layouts; stale columns past `rows` are finite and never read back.
    for (int i = 0; i < rows; ++i) {
        const float* src = x + static_cast<std::ptrdiff_t>(i) * inputs;
        float* dst = in.xb.data() + static_cast<std::ptrdiff_t>(i) * in.paddedInputs;
        for (int f = 0; f < inputs; ++f) {
            dst[f] = src[f];
            in.xt[static_cast<std::size_t>(f) * bp + i] = src[f];
        }
    }
    const float* z = forward(layout, k, act, params, in, ws.batch, bp, ws);
    if (likelihood != Likelihood::Categorical) {
        // A regression head's predictive, row by row (headPredictiveInPlace, math/loss.h).
        for (int i = 0; i < rows; ++i) {
            float* o = out + static_cast<std::ptrdiff_t>(i) * classes;
            for (int c = 0; c < classes; ++c) {
                o[c] = z[static_cast<std::ptrdiff_t>(c) * bp + i];
            }
            headPredictiveInPlace(likelihood, o, classes);
        }
        return;
    }
    // log softmax down each column, one row per lane (logSumExpLanes, math/loss.h).
    const int used = padded(rows);
    float* lp = ws.deltaPrev.data();  // classes x bp scratch
    for (int v = 0; v < used; v += kLanes) {
        const Packet lse = logSumExpLanes<Packet>(classes, [&](int c) {
            return pload<Packet>(z + static_cast<std::ptrdiff_t>(c) * bp + v);
        });
        for (int c = 0; c < classes; ++c) {
            const std::ptrdiff_t o = static_cast<std::ptrdiff_t>(c) * bp + v;
            pstore(lp + o, psub(pload<Packet>(z + o), lse));
        }
    }
    for (int i = 0; i < rows; ++i) {
        for (int c = 0; c < classes; ++c) {
            out[static_cast<std::ptrdiff_t>(i) * classes + c] =
                lp[static_cast<std::ptrdiff_t>(c) * bp + i];
        }
    }
}

}  // namespace ensemble
