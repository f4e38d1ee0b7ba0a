#pragma once

#include <cmath>
#include <cstdint>

#include "core/unreachable.h"
#include "math/hd.h"
#include "math/lane.h"

namespace ensemble {

enum class OptimizerKind : uint32_t { Adam = 0, AdamW = 1, Sgd = 2 };

// Hyperparameters of one member's optimizer. Elementwise products use the float fields (as
// PyTorch multiplies float32 tensors by float-cast scalars); the derived coefficients
// (1 - beta, step size, bias corrections) are computed in double and rounded once, as PyTorch
// does with its Python-float scalars, so float32 training follows torch.optim closely.
struct OptimizerRule {
    OptimizerKind kind = OptimizerKind::Adam;
    float lr = 1e-3f;
    float weightDecay = 0.0f;
    float momentum = 0.0f;
    float beta1 = 0.9f;
    float beta2 = 0.999f;
    float eps = 1e-8f;
    float oneMinusBeta1 = 0.1f;   // 1 - beta1
    float oneMinusBeta2 = 1e-3f;  // 1 - beta2
    float decayFactor = 1.0f;     // AdamW: 1 - lr * weight_decay
    // Set per update by prepareStep(): lr / (1 - beta1^t) and sqrt(1 - beta2^t).
    float stepSize = 1e-3f;
    float biasCorrection2Sqrt = 1.0f;
    // The double-precision originals the derived coefficients come from.
    double lrExact = 1e-3;
    double beta1Exact = 0.9;
    double beta2Exact = 0.999;
};

ENSEMBLE_HD inline OptimizerRule makeRule(OptimizerKind kind, double lr, double weightDecay,
                                          double momentum, double beta1 = 0.9, double beta2 = 0.999,
                                          double eps = 1e-8) {
    OptimizerRule r;
    r.kind = kind;
    r.lr = static_cast<float>(lr);
    r.weightDecay = static_cast<float>(weightDecay);
    r.momentum = static_cast<float>(momentum);
    r.beta1 = static_cast<float>(beta1);
    r.beta2 = static_cast<float>(beta2);
    r.eps = static_cast<float>(eps);
    r.oneMinusBeta1 = static_cast<float>(1.0 - beta1);
    r.oneMinusBeta2 = static_cast<float>(1.0 - beta2);
    r.decayFactor = static_cast<float>(1.0 - lr * weightDecay);
    r.stepSize = r.lr;
    r.lrExact = lr;
    r.beta1Exact = beta1;
    r.beta2Exact = beta2;
    return r;
}

// Sets the bias-corrected step size for update number `t` (1-based).
ENSEMBLE_HD inline void prepareStep(OptimizerRule& r, uint64_t t) {
    const double b1t = hd::pow(r.beta1Exact, static_cast<double>(t));
    const double b2t = hd::pow(r.beta2Exact, static_cast<double>(t));
    r.stepSize = static_cast<float>(r.lrExact / (1.0 - b1t));
    r.biasCorrection2Sqrt = static_cast<float>(hd::sqrt(1.0 - b2t));
}

// The coefficients of a rule as lanes, broadcast once per call rather than once per element
// (T(r.lr) etc. in the scalar form, one vector register each in the SIMD form).
template <typename L>
struct RuleLanes {
    L weightDecay, lr, momentum, decayFactor, beta1, beta2, oneMinusBeta1, oneMinusBeta2,
        biasCorrection2Sqrt, eps, stepSize;

    ENSEMBLE_HD explicit RuleLanes(const OptimizerRule& r)
        : weightDecay(lane::broadcast<L>(r.weightDecay)),
          lr(lane::broadcast<L>(r.lr)),
          momentum(lane::broadcast<L>(r.momentum)),
          decayFactor(lane::broadcast<L>(r.decayFactor)),
          beta1(lane::broadcast<L>(r.beta1)),
          beta2(lane::broadcast<L>(r.beta2)),
          oneMinusBeta1(lane::broadcast<L>(r.oneMinusBeta1)),
          oneMinusBeta2(lane::broadcast<L>(r.oneMinusBeta2)),
          biasCorrection2Sqrt(lane::broadcast<L>(r.biasCorrection2Sqrt)),
          eps(lane::broadcast<L>(r.eps)),
          stepSize(lane::broadcast<L>(r.stepSize)) {}
};

// The update rules, exactly as torch.optim.{Adam, AdamW, SGD} (PyTorch 1.13, foreach off,
// maximize off, amsgrad off, nesterov off, dampening 0), written once over a lane type
// (math/lane.h) for the scalar loops, the CUDA kernels and the CPU's SIMD update:
//   SGD:   g += wd*p;  buf = g at step 1, else momentum*buf + g;  p -= lr*buf
//   Adam:  g += wd*p;  m = b1 m + (1-b1) g;  v = b2 v + (1-b2) g^2;
//          p -= lr/bc1 * m / (sqrt(v)/sqrt(bc2) + eps)
//   AdamW: p *= 1 - lr*wd; then Adam's moments and step without the L2 term
// `useMomentum` (momentum != 0), `firstStep` and `decoupled` (AdamW) are the same for all
// lanes. Precondition for Adam(W): prepareStep() has set the rule's step size and bias
// correction for this update.
template <typename L>
ENSEMBLE_HD inline void sgdLanes(const RuleLanes<L>& c, bool useMomentum, bool firstStep, L& param,
                                 L grad, L& buffer) {
    const L g = lane::add(grad, lane::mul(c.weightDecay, param));
    if (useMomentum) {
        buffer = firstStep ? g : lane::add(lane::mul(c.momentum, buffer), g);
        param = lane::sub(param, lane::mul(c.lr, buffer));
    } else {
        param = lane::sub(param, lane::mul(c.lr, g));
    }
}

template <typename L>
ENSEMBLE_HD inline void adamLanes(const RuleLanes<L>& c, bool decoupled, L& param, L grad, L& m,
                                  L& v) {
    L g = grad;
    if (decoupled) {
        param = lane::mul(param, c.decayFactor);
    } else {
        g = lane::add(g, lane::mul(c.weightDecay, param));
    }
    m = lane::dot2(c.beta1, m, c.oneMinusBeta1, g);
    v = lane::dot2(c.beta2, v, lane::mul(c.oneMinusBeta2, g), g);
    const L denom = lane::add(lane::div(lane::sqrt(v), c.biasCorrection2Sqrt), c.eps);
    param = lane::sub(param, lane::div(lane::mul(c.stepSize, m), denom));
}

// A layer's L2 penalty c * sum(w^2) (a dense layer's "l2" in model.layers, Keras's l2(c)) as
// the gradient term it adds: grad + twoC * param, twoC = 2c. It is part of the loss's gradient,
// so every rule sees it as such (Adam's moments and SGD's momentum include it, AdamW's decoupled
// decay does not replace it), unlike optimizer.weight_decay, which each rule applies itself.
// Callers apply it to a layer's weights only, and only when twoC != 0, so a run without a
// penalty computes exactly what it did before.
template <typename L>
ENSEMBLE_HD inline L withL2(L grad, L twoC, L param) {
    return lane::add(grad, lane::mul(twoC, param));
}

// One parameter's update by the rule's kind. `slot1` is m or the momentum buffer, `slot2` is v
// (unused by SGD).
template <typename T>
ENSEMBLE_HD inline void applyUpdate(const OptimizerRule& r, bool firstStep, T& param, T grad,
                                    T& slot1, T& slot2) {
    switch (r.kind) {
        case OptimizerKind::Sgd:
            sgdLanes(RuleLanes<T>(r), r.momentum != 0.0f, firstStep, param, grad, slot1);
            return;
        case OptimizerKind::AdamW:
        case OptimizerKind::Adam:
            adamLanes(RuleLanes<T>(r), r.kind == OptimizerKind::AdamW, param, grad, slot1, slot2);
            return;
    }
    unreachableKind("OptimizerKind");
}

}  // namespace ensemble
