#pragma once

// Shared helpers for the test suites: named tolerances and comparisons with readable messages.

#include <QtTest/QtTest>

#include <cmath>
#include <cstdlib>
#include <string>
#include <vector>

namespace ensemble::test {

// Tolerances, named for what they allow.
constexpr double kExactDouble = 1e-12;        // closed forms evaluated in double
constexpr double kFloatRounding = 1e-5;       // float arithmetic vs the same in double
constexpr double kFiniteDifference = 1e-6;    // relative error of central differences in double
constexpr double kStatistical = 0.01;         // Monte Carlo estimates over ~10^5 draws

inline std::string describe(double actual, double expected, double tolerance) {
    return "actual " + std::to_string(actual) + ", expected " + std::to_string(expected) +
           " (tolerance " + std::to_string(tolerance) + ")";
}

// |a - b| <= tol, with a message that shows the numbers.
#define ENSEMBLE_COMPARE_NEAR(actual, expected, tolerance)                                   \
    do {                                                                                     \
        const double a_ = (actual);                                                          \
        const double e_ = (expected);                                                        \
        const double t_ = (tolerance);                                                       \
        QVERIFY2(std::abs(a_ - e_) <= t_,                                                    \
                 ensemble::test::describe(a_, e_, t_).c_str());                              \
    } while (false)

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

// The ensemble-cli binary under test (set by CTest), for the CLI suites.
inline QString cliPath() {
    return QString::fromLocal8Bit(qgetenv("ENSEMBLE_CLI"));
}

inline QString sourceDir() {
    return QString::fromLocal8Bit(qgetenv("ENSEMBLE_SOURCE_DIR"));
}

}  // namespace ensemble::test
