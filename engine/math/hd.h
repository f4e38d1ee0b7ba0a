#pragma once

#include "core/host_device.h"

#include <math.h>

namespace ensemble::hd {

// Scalar math callable from host and device, overloaded for float and double so the shared
// templates run in float in the backends and in double in the gradient checks. (The C
// functions exist on both sides; std:: overloads are not guaranteed in device code.)
ENSEMBLE_HD inline float exp(float x) {
    return ::expf(x);
}
ENSEMBLE_HD inline double exp(double x) {
    return ::exp(x);
}
ENSEMBLE_HD inline float log(float x) {
    return ::logf(x);
}
ENSEMBLE_HD inline double log(double x) {
    return ::log(x);
}
ENSEMBLE_HD inline float tanh(float x) {
    return ::tanhf(x);
}
ENSEMBLE_HD inline double tanh(double x) {
    return ::tanh(x);
}
ENSEMBLE_HD inline float erf(float x) {
    return ::erff(x);
}
ENSEMBLE_HD inline double erf(double x) {
    return ::erf(x);
}
ENSEMBLE_HD inline double pow(double x, double y) {
    return ::pow(x, y);
}
ENSEMBLE_HD inline float sqrt(float x) {
    return ::sqrtf(x);
}
ENSEMBLE_HD inline double sqrt(double x) {
    return ::sqrt(x);
}

}  // namespace ensemble::hd
