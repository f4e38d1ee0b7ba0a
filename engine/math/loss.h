#pragma once

#include <cmath>
#include <cstdint>

#include "math/hd.h"

namespace ensemble {

// Numerically stable log-sum-exp of one row of logits.
template <typename T>
ENSEMBLE_HD inline T logSumExp(const T* logits, int classes) {
    T maxLogit = logits[0];
    for (int c = 1; c < classes; ++c) {
        maxLogit = logits[c] > maxLogit ? logits[c] : maxLogit;
    }
    T sum = T(0);
    for (int c = 0; c < classes; ++c) {
        sum += hd::exp(logits[c] - maxLogit);
    }
    return maxLogit + hd::log(sum);
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
    const T lse = logSumExp(logits, classes);
    const T ws = weight * scale;
    for (int c = 0; c < classes; ++c) {
        const T p = hd::exp(logits[c] - lse);
        dLogits[c] = ws * (p - (c == label ? T(1) : T(0)));
    }
    return ws * (lse - logits[label]);
}

}  // namespace ensemble
