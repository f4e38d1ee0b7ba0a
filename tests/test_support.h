#pragma once

// Shared helpers for the test suites: named tolerances and comparisons with readable messages.

#include <QtTest/QtTest>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <string>
#include <vector>

// ENSEMBLE_TEST_SANITIZED: built with ASan or TSan, by GCC (__SANITIZE_*__) or clang
// (__has_feature): measurements of memory or time would measure the sanitizer.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define ENSEMBLE_TEST_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define ENSEMBLE_TEST_SANITIZED 1
#endif
#endif

namespace ensemble::test {

// Tolerances, named for what they allow: the one set every suite uses.
// Double arithmetic: closed forms evaluated in double, or one quantity computed twice in double
// with a different summation order.
constexpr double kExactDouble = 1e-12;
// Values stored as float (relative error ~6e-8) against the same in double, on values of
// order 1: hand-computed results from float log-probabilities, generated float coordinates,
// one float update step.
constexpr double kFloatInput = 1e-6;
constexpr double kFloatRounding = 1e-5;     // float arithmetic vs the same in double
constexpr double kFiniteDifference = 1e-6;  // relative error of central differences in double
constexpr double kStatistical = 0.01;       // Monte Carlo estimates over ~10^5 draws
// Fitted parameters (the temperature's golden-section search stops at 1e-6 in log T).
constexpr double kFittedParameter = 1e-4;

// Backends against the CpuBackend oracle: parameters and log-probabilities by normalised MSE
// (nmse below), per-member batch losses relative to max(1, |loss|).
// The CUDA step program emulated on the host (tst_cuda_plan): it differs from CpuBackend only
// in the summation order of the matrix products (a plain k-loop there, Eigen's blocked kernels
// here).
constexpr double kEmulatedGemm = 1e-5;         // max |difference| of one small product
constexpr double kEmulatedParamNmse = 1e-8;    // after 40 steps
constexpr double kEmulatedLogProbNmse = 1e-8;  // grid predictions
constexpr double kEmulatedLoss = 1e-4;         // relative, per member and step
// The CUDA backend on a device (tst_cuda_parity): other kernels, other rounding.
constexpr double kDeviceParamNmse = 1e-6;    // after 50 steps
constexpr double kDeviceLogProbNmse = 1e-6;  // grid predictions
constexpr double kDeviceLoss = 1e-3;         // relative, per member and step
// Per-point uncertainty measures (entropies, std) computed on the device vs the host.
constexpr double kDeviceMeasure = 1e-4;

inline std::string describe(double actual, double expected, double tolerance) {
    return "actual " + std::to_string(actual) + ", expected " + std::to_string(expected) +
           " (tolerance " + std::to_string(tolerance) + ")";
}

// |a - b| <= tol, with a message that shows the numbers.
#define ENSEMBLE_COMPARE_NEAR(actual, expected, tolerance)                               \
    do {                                                                                 \
        const double a_ = (actual);                                                      \
        const double e_ = (expected);                                                    \
        const double t_ = (tolerance);                                                   \
        QVERIFY2(std::abs(a_ - e_) <= t_, ensemble::test::describe(a_, e_, t_).c_str()); \
    } while (false)

// |actual - expected| <= tol * max(1, |expected|): absolute near 0, relative for large values;
// NaN matches only NaN.
inline bool nearScaled(double actual, double expected, double tol) {
    if (std::isnan(expected)) {
        return std::isnan(actual);
    }
    return std::abs(actual - expected) <= tol * std::max(1.0, std::abs(expected));
}

// QFAILs unless nearScaled(actual, expected, tol), naming the expression and both numbers.
#define ENSEMBLE_COMPARE_NEAR_SCALED(actual, expected, tol)                        \
    do {                                                                           \
        const double a_ = (actual);                                                \
        const double e_ = (expected);                                              \
        if (!ensemble::test::nearScaled(a_, e_, (tol))) {                          \
            QFAIL(qPrintable(QStringLiteral("%1 = %2, expected %3 (tolerance %4)") \
                                 .arg(QString::fromLatin1(#actual))                \
                                 .arg(a_, 0, 'g', 17)                              \
                                 .arg(e_, 0, 'g', 17)                              \
                                 .arg((tol))));                                    \
        }                                                                          \
    } while (false)

// mse(reference - other) / mse(reference): scale-free closeness of two parameter or
// prediction vectors (plain mse when the reference is all zeros), as ggml's test-backend-ops.
inline double nmse(const std::vector<float>& reference, const std::vector<float>& other) {
    double diff = 0.0;
    double power = 0.0;
    for (std::size_t i = 0; i < reference.size(); ++i) {
        const double d = static_cast<double>(reference[i]) - other[i];
        diff += d * d;
        power += static_cast<double>(reference[i]) * reference[i];
    }
    return power > 0.0 ? diff / power : diff;
}

// ||g - h|| / ||g + h|| (mlpack's gradient-check measure): 0 for identical vectors.
inline double relativeDifference(const std::vector<double>& g, const std::vector<double>& h) {
    double diff = 0.0;
    double sum = 0.0;
    for (std::size_t i = 0; i < g.size(); ++i) {
        diff += (g[i] - h[i]) * (g[i] - h[i]);
        sum += (g[i] + h[i]) * (g[i] + h[i]);
    }
    return sum == 0.0 ? std::sqrt(diff) : std::sqrt(diff / sum);
}

// Keys every member of a run's report carries (metrics/report.h, reportJson with RunFacts),
// whether `ensemble-cli train --metrics` or the app's export wrote it.
inline const std::vector<std::string>& runReportMemberKeys() {
    static const std::vector<std::string> keys = {
        "index", "member",   "included",     "accuracy", "nll",         "brier", "ece", "mce",
        "lr",    "momentum", "weight_decay", "diverged", "switched_on", "train", "test"};
    return keys;
}

// The ensemble-cli binary under test (set by CTest), for the CLI suites.
inline QString cliPath() {
    return QString::fromLocal8Bit(qgetenv("ENSEMBLE_CLI"));
}

inline QString sourceDir() {
    return QString::fromLocal8Bit(qgetenv("ENSEMBLE_SOURCE_DIR"));
}

}  // namespace ensemble::test
