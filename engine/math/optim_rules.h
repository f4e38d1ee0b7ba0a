#pragma once

#include <cmath>
#include <cstdint>

#include "math/hd.h"

namespace ensemble {

enum class OptimizerKind : uint32_t { Adam = 0, AdamW = 1, Sgd = 2 };

// Hyperparameters of one member's optimizer at one step. `step` counts from 1.
struct OptimizerRule {
    OptimizerKind kind = OptimizerKind::Adam;
    float lr = 1e-3f;
    float weightDecay = 0.0f;
    float momentum = 0.0f;
    float beta1 = 0.9f;
    float beta2 = 0.999f;
    float eps = 1e-8f;
    // 1 - beta^step, precomputed once per step (PyTorch computes them the same way).
    float biasCorrection1 = 1.0f;
    float biasCorrection2 = 1.0f;
};

// One parameter's update, exactly as torch.optim.{Adam, AdamW, SGD} (PyTorch 1.13, foreach off,
// maximize off, amsgrad off, nesterov off, dampening 0):
//   Adam:  g += wd*p;  m = b1 m + (1-b1) g;  v = b2 v + (1-b2) g^2;
//          p -= lr/bc1 * m / (sqrt(v)/sqrt(bc2) + eps)
//   AdamW: p *= 1 - lr*wd; then Adam's moments and step without the L2 term
//   SGD:   g += wd*p;  buf = g at step 1, else momentum*buf + g;  p -= lr*buf
// `slot1` is m or the momentum buffer, `slot2` is v (unused by SGD).
template <typename T>
ENSEMBLE_HD inline void applyUpdate(const OptimizerRule& r, bool firstStep, T& param, T grad,
                                    T& slot1, T& slot2) {
    switch (r.kind) {
        case OptimizerKind::Sgd: {
            const T g = grad + T(r.weightDecay) * param;
            if (r.momentum != 0.0f) {
                slot1 = firstStep ? g : T(r.momentum) * slot1 + g;
                param -= T(r.lr) * slot1;
            } else {
                param -= T(r.lr) * g;
            }
            return;
        }
        case OptimizerKind::AdamW:
        case OptimizerKind::Adam:
        default: {
            T g = grad;
            if (r.kind == OptimizerKind::AdamW) {
                param *= T(1) - T(r.lr) * T(r.weightDecay);
            } else {
                g += T(r.weightDecay) * param;
            }
            slot1 = T(r.beta1) * slot1 + (T(1) - T(r.beta1)) * g;
            slot2 = T(r.beta2) * slot2 + (T(1) - T(r.beta2)) * g * g;
            const T stepSize = T(r.lr) / T(r.biasCorrection1);
            const T denom = hd::sqrt(slot2) / hd::sqrt(T(r.biasCorrection2)) + T(r.eps);
            param -= stepSize * slot1 / denom;
            return;
        }
    }
}

}  // namespace ensemble
