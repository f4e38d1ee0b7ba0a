#pragma once

#include <cmath>
#include <cstdint>

#include "math/hd.h"
#include "math/lane.h"
#include "math/likelihood.h"

namespace ensemble {

// The losses, written once over a lane type (math/lane.h): one example per lane. `logit(c)`
// returns class c's logits as a lane; the scalar forms below pass a row, the CPU fast path a
// column block of its feature-major logits (backend/cpu/fast_mlp.cpp).

// Numerically stable log-sum-exp: m + log(sum_c exp(z_c - m)), m = max_c z_c, summed in c order.
template <typename L, typename Logit>
ENSEMBLE_HD inline L logSumExpLanes(int classes, const Logit& logit) {
    L maxLogit = logit(0);
    for (int c = 1; c < classes; ++c) {
        maxLogit = lane::max(maxLogit, logit(c));
    }
    L sum = lane::broadcast<L>(0);
    for (int c = 0; c < classes; ++c) {
        sum = lane::add(sum, lane::exp(lane::sub(logit(c), maxLogit)));
    }
    return lane::add(maxLogit, lane::log(sum));
}

// Weighted softmax cross-entropy, ws * (lse(z) - z[label]) with ws = w * scale, and its
// gradient w.r.t. the logits, ws * (softmax(z) - onehot(label)), handed to grad(c, value) for
// c = 0..classes-1. isLabel(c) is the mask of the lanes whose label is c.
template <typename L, typename Logit, typename IsLabel, typename Grad>
ENSEMBLE_HD inline L softmaxCrossEntropyLanes(int classes, const Logit& logit,
                                              const IsLabel& isLabel, L ws, const Grad& grad) {
    const L lse = logSumExpLanes<L>(classes, logit);
    const L one = lane::broadcast<L>(1);
    // z[label] as a sum with exact zeros elsewhere: one lane may hold any label.
    L zLabel = lane::broadcast<L>(0);
    for (int c = 0; c < classes; ++c) {
        const L z = logit(c);
        const typename Lane<L>::Mask label = isLabel(c);
        zLabel = lane::add(zLabel, lane::selectOrZero(label, z));
        const L p = lane::exp(lane::sub(z, lse));
        grad(c, lane::mul(ws, lane::sub(p, lane::selectOrZero(label, one))));
    }
    return lane::mul(ws, lane::sub(lse, zLabel));
}

// Numerically stable log-sum-exp of one row of logits.
template <typename T>
ENSEMBLE_HD inline T logSumExp(const T* logits, int classes) {
    return logSumExpLanes<T>(classes, [logits](int c) { return logits[c]; });
}

// Softmax in place: probabilities from logits.
template <typename T>
ENSEMBLE_HD inline void softmaxInPlace(T* logits, int classes) {
    const T lse = logSumExp(logits, classes);
    for (int c = 0; c < classes; ++c) {
        logits[c] = hd::exp(logits[c] - lse);
    }
}

// Weighted softmax cross-entropy of one example, -w * log softmax(z)[label] * scale, and its
// gradient w.r.t. the logits, w * scale * (softmax(z) - onehot(label)), written to dLogits.
// `scale` is 1/B: the loss is the mean over the batch of weighted per-example losses.
template <typename T>
ENSEMBLE_HD inline T softmaxCrossEntropy(const T* logits, int classes, int label, T weight, T scale,
                                         T* dLogits) {
    return softmaxCrossEntropyLanes<T>(
        classes, [logits](int c) { return logits[c]; }, [label](int c) { return c == label; },
        weight * scale, [dLogits](int c, T g) { dLogits[c] = g; });
}

// --- regression heads (math/likelihood.h) ----------------------------------------------------

// The variance floor of the gaussian head: sigma^2 = softplus(raw) + kMinVariance.
constexpr double kMinVariance = 1e-6;

// log(1 + t) for t >= 0 to a few ulps (Goldberg 1991, "What every computer scientist should
// know about floating-point arithmetic", theorem 4): u = 1 + t drops t's low bits, and
// log(u) * t / (u - 1) puts them back, where log(u) alone is off by up to half an ulp of 1 / t
// relative (1e-3 in float at t = 5e-5). Where u rounds to 1, log(1 + t) = t to working
// precision: the lanes have no select, so that case divides by 1 instead of 0 (log(1) = 0) and
// adds t.
template <typename L>
ENSEMBLE_HD inline L log1pLanes(L t) {
    const L one = lane::broadcast<L>(1);
    const L u = lane::add(one, t);
    const L d = lane::sub(u, one);
    const auto rounded = lane::equal(d, lane::broadcast<L>(0));
    return lane::add(
        lane::div(lane::mul(lane::log(u), t), lane::add(d, lane::selectOrZero(rounded, one))),
        lane::selectOrZero(rounded, t));
}

// softplus(x) = log(1 + e^x) in the stable form max(x, 0) + log1p(e^-|x|): no overflow for
// large x, and accurate to a few ulps for negative x, where softplus(x) ~ e^x is small (a
// Gaussian head's variance, sigma^2 = softplus(raw) + 1e-6, lives there once it fits well).
template <typename L>
ENSEMBLE_HD inline L softplusLanes(L x) {
    const L zero = lane::broadcast<L>(0);
    const L absX = lane::max(x, lane::sub(zero, x));
    return lane::add(lane::max(x, zero), log1pLanes(lane::exp(lane::sub(zero, absX))));
}

// Weighted Gaussian negative log-likelihood without the constant (PyTorch's GaussianNLLLoss),
// ws * (1/2 log s + (y - mu)^2 / (2 s)) with s = softplus(raw) + kMinVariance, and its
// gradient w.r.t. the two outputs:
//   dmu  = ws * (mu - y) / s
//   draw = ws * (1 - (y - mu)^2 / s) / (2 s) * sigmoid(raw),  sigmoid(raw) = e^(raw -
//   softplus(raw))
template <typename L>
ENSEMBLE_HD inline L gaussianNllLanes(L mean, L raw, L target, L ws, L& gradMean, L& gradRaw) {
    const L half = lane::broadcast<L>(0.5);
    const L sp = softplusLanes(raw);
    const L var = lane::add(sp, lane::broadcast<L>(kMinVariance));
    const L d = lane::sub(mean, target);
    const L r = lane::div(d, var);    // (mu - y) / s
    const L ratio = lane::mul(d, r);  // (mu - y)^2 / s
    gradMean = lane::mul(ws, r);
    const L sigmoid = lane::exp(lane::sub(raw, sp));
    gradRaw = lane::mul(
        ws, lane::mul(lane::mul(half, lane::div(lane::sub(lane::broadcast<L>(1), ratio), var)),
                      sigmoid));
    return lane::mul(ws, lane::mul(half, lane::add(lane::log(var), ratio)));
}

// Weighted squared error ws * (mu - y)^2 and its gradient 2 ws (mu - y).
template <typename L>
ENSEMBLE_HD inline L squaredErrorLanes(L mean, L target, L ws, L& gradMean) {
    const L d = lane::sub(mean, target);
    const L wd = lane::mul(ws, d);
    gradMean = lane::add(wd, wd);
    return lane::mul(wd, d);
}

// sigma^2 of a gaussian head's raw output.
template <typename T>
ENSEMBLE_HD inline T gaussianVariance(T raw) {
    return softplusLanes<T>(raw) + T(kMinVariance);
}

// One example of a regression head (gaussian: out = [mu, raw]; mse: out = [mu]): the weighted
// loss w * scale * loss(out, target) and its gradient w.r.t. the outputs into dOut.
template <typename T>
ENSEMBLE_HD inline T regressionLoss(Likelihood likelihood, const T* out, T target, T weight,
                                    T scale, T* dOut) {
    const T ws = weight * scale;
    if (likelihood == Likelihood::Gaussian) {
        return gaussianNllLanes<T>(out[0], out[1], target, ws, dOut[0], dOut[1]);
    }
    return squaredErrorLanes<T>(out[0], target, ws, dOut[0]);
}

// The predictive of one row of head outputs, in place: log-softmax (categorical), [mu, sigma^2]
// (gaussian), [mu] (mse).
template <typename T>
ENSEMBLE_HD inline void headPredictiveInPlace(Likelihood likelihood, T* out, int outputs) {
    if (likelihood == Likelihood::Gaussian) {
        out[1] = gaussianVariance(out[1]);
    } else if (likelihood == Likelihood::Categorical) {
        const T lse = logSumExp(out, outputs);
        for (int c = 0; c < outputs; ++c) {
            out[c] -= lse;
        }
    }
}

// The adversarial input of training.adversarial_eps (Goodfellow et al. 2015, as Deep
// Ensembles uses it): one input feature moved by eps against the loss, x + eps * sign(dLoss/dx).
// sign(0) = 0 (torch.sign): a feature the loss does not depend on (an example of weight 0) stays.
template <typename T>
ENSEMBLE_HD inline T adversarialInput(T x, T inputGrad, T eps) {
    return inputGrad > T(0) ? x + eps : inputGrad < T(0) ? x - eps : x;
}

}  // namespace ensemble
