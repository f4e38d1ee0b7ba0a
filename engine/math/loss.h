#pragma once

#include <cmath>
#include <cstdint>

#include "math/hd.h"
#include "math/lane.h"

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

}  // namespace ensemble
