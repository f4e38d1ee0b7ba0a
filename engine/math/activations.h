#pragma once

#include <cmath>
#include <cstdint>

#include "core/unreachable.h"
#include "math/hd.h"

namespace ensemble {

enum class Activation : uint32_t { Relu = 0, Tanh = 1, Gelu = 2 };

// f(z). GELU is the exact erf form (PyTorch's default, approximate='none').
template <typename T>
ENSEMBLE_HD inline T activate(Activation a, T z) {
    switch (a) {
        case Activation::Relu:
            return z > T(0) ? z : T(0);
        case Activation::Tanh:
            return hd::tanh(z);
        case Activation::Gelu:
            return T(0.5) * z * (T(1) + hd::erf(z * T(0.70710678118654752440)));
    }
    unreachableKind("Activation");
}

// f'(z) given the pre-activation z (and, for tanh, the output y = f(z), saving a tanh).
template <typename T>
ENSEMBLE_HD inline T activateGrad(Activation a, T z, T y) {
    switch (a) {
        case Activation::Relu:
            return z > T(0) ? T(1) : T(0);
        case Activation::Tanh:
            return T(1) - y * y;
        case Activation::Gelu: {
            const T cdf = T(0.5) * (T(1) + hd::erf(z * T(0.70710678118654752440)));
            const T pdf = T(0.39894228040143267794) * hd::exp(T(-0.5) * z * z);
            return cdf + z * pdf;
        }
    }
    unreachableKind("Activation");
}

}  // namespace ensemble
