#pragma once

// Shared helpers for the test suites: named tolerances and comparisons with readable messages,
// bit-for-bit comparisons, files written and read whole, child processes (ensemble-cli) and the
// command lines they are given, a button's job waited for, MNIST-format test data. Each helper
// is defined here once, with one meaning, so that every suite asserts the same thing by it.

#include <QtTest/QtTest>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <type_traits>
#include <utility>
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

// A wait for the engine's progress (snapshots, steps), in milliseconds: five times longer in a
// sanitized Debug build, as CTest's limits are (a K = 100 snapshot takes seconds there).
constexpr int progressWaitMs(int ms) {
#ifdef ENSEMBLE_TEST_SANITIZED
    return 5 * ms;
#else
    return ms;
#endif
}

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
// backend.math=tf32 (tst_cuda_parity's tf32 cases): the GEMMs' inputs rounded to a 10-bit
// mantissa (relative 2^-11 = 4.9e-4 each), so a product is off by about 1e-3 relative and the
// difference grows over the steps. Stated from that arithmetic, NOT yet measured on a device:
// the first GPU run reports the observed values (qInfo) and the bounds are tightened then.
constexpr double kDeviceTf32ParamNmse = 1e-3;    // after 30-50 steps
constexpr double kDeviceTf32LogProbNmse = 1e-3;  // predictions
constexpr double kDeviceTf32Loss = 5e-2;         // relative, per member and step
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

// Bit-for-bit equality, for what must be reproduced exactly (a resume, a replay, the engine's
// numbers shown by the app). Two meanings, two names, because an empty vector means different
// things to different callers:
// - sameBits: the same values to the bit; two empty vectors match (state a run may lack, such
//   as the trained network of a method that keeps none, is equal when both lack it);
// - sameBitsNonEmpty: the same, and not empty, where empty means the result never came (a
//   failed export, scores not computed): a missing result must not pass as a match.
template <typename T>
bool sameBits(const std::vector<T>& a, const std::vector<T>& b) {
    static_assert(std::is_floating_point_v<T>);
    return a.size() == b.size() &&
           (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0);
}

template <typename T>
bool sameBitsNonEmpty(const std::vector<T>& a, const std::vector<T>& b) {
    return !a.empty() && sameBits(a, b);
}

// One double to the bit (NaN equals the same NaN; 0.0 and -0.0 differ).
inline bool sameBits(double a, double b) {
    return std::memcmp(&a, &b, sizeof a) == 0;
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

// The whole of the file at `path`; empty when it cannot be read (a missing file compares unequal
// to any content a test expects).
inline QByteArray fileBytes(const QString& path) {
    QFile f(path);
    return f.open(QIODevice::ReadOnly) ? f.readAll() : QByteArray();
}

// `bytes` as the whole of the file at `path` (created or replaced); false when it cannot be
// written in full. Callers QVERIFY it, so a setup that failed stops the test there.
inline bool writeBytes(const QString& path, const QByteArray& bytes) {
    QFile f(path);
    return f.open(QIODevice::WriteOnly | QIODevice::Truncate) && f.write(bytes) == bytes.size();
}

// The same for the suites that build paths and contents as std::string (binary bytes too).
inline bool writeBytes(const std::string& path, const std::string& bytes) {
    return writeBytes(QString::fromStdString(path), QByteArray::fromStdString(bytes));
}

// The raw float32 values (this machine's byte order) of the file at `path`, as the interop
// checkers write them (numpy's tofile(), a Float32Array's buffer); empty when it cannot be read.
inline std::vector<float> readFloats(const QString& path) {
    const QByteArray bytes = fileBytes(path);
    std::vector<float> v(static_cast<std::size_t>(bytes.size()) / sizeof(float));
    if (!v.empty()) {
        std::memcpy(v.data(), bytes.constData(), v.size() * sizeof(float));
    }
    return v;
}

// The numbers of the first line of `out` (ensemble-cli eval's table) that starts with `label`
// and a space; empty when no line does.
inline QList<double> numbersOf(const QString& out, const QString& label) {
    for (const QString& line : out.split(QLatin1Char('\n'))) {
        if (!line.startsWith(label + QLatin1Char(' '))) {
            continue;
        }
        QList<double> values;
        for (const QString& word :
             line.mid(label.size()).split(QLatin1Char(' '), Qt::SkipEmptyParts)) {
            bool ok = false;
            const double v = word.toDouble(&ok);
            if (ok) {
                values.push_back(v);
            }
        }
        return values;
    }
    return {};
}

// The ensemble-cli binary under test (set by CTest), for the CLI suites.
inline QString cliPath() {
    return QString::fromLocal8Bit(qgetenv("ENSEMBLE_CLI"));
}

inline QString sourceDir() {
    return QString::fromLocal8Bit(qgetenv("ENSEMBLE_SOURCE_DIR"));
}

// How long a child process may run before it counts as a hang (killed, and the run fails).
constexpr int kProcessDeadlineMs = 120000;

// How a child process ended: its exit code (-1 when it crashed, did not start or was killed at
// its deadline) and what it wrote.
struct Run {
    int code = -1;
    QString out;
    QString err;
};

inline QString describe(const Run& r) {
    return QStringLiteral("exit %1\nstdout: %2\nstderr: %3").arg(r.code).arg(r.out, r.err);
}

// QFAILs unless the child process's Run (an expression) exited 0, showing its exit code and
// what it wrote.
#define ENSEMBLE_VERIFY_RUN_OK(run)                                       \
    do {                                                                  \
        const ensemble::test::Run r_ = (run);                             \
        QVERIFY2(r_.code == 0, qPrintable(ensemble::test::describe(r_))); \
    } while (false)

// Waits for a started process to end. A hang is a failure, not a stuck job: past `timeoutMs`
// it is killed, and the run says so.
inline Run finish(QProcess& p, int timeoutMs = kProcessDeadlineMs) {
    Run r;
    if (!p.waitForFinished(timeoutMs)) {
        p.kill();
        p.waitForFinished();
        r.err = QStringLiteral("%1 timed out after %2 ms (a hang)").arg(p.program()).arg(timeoutMs);
        return r;
    }
    r.code = p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1;
    r.out = QString::fromUtf8(p.readAllStandardOutput());
    r.err = QString::fromUtf8(p.readAllStandardError());
    return r;
}

inline Run runProgram(const QString& program, const QStringList& args,
                      int timeoutMs = kProcessDeadlineMs,
                      const QProcessEnvironment& env = QProcessEnvironment::systemEnvironment()) {
    QProcess p;
    p.setProcessEnvironment(env);
    p.start(program, args);
    if (!p.waitForStarted()) {
        Run r;
        r.err = program + QStringLiteral(" did not start: ") + p.errorString();
        return r;
    }
    return finish(p, timeoutMs);
}

// ensemble-cli with `args`, to the end.
inline Run runCli(const QStringList& args, int timeoutMs = kProcessDeadlineMs) {
    return runProgram(cliPath(), args, timeoutMs);
}

// The same in the environment `env` (a fault-injection shim, MPI's settings).
inline Run runCli(const QStringList& args, const QProcessEnvironment& env,
                  int timeoutMs = kProcessDeadlineMs) {
    return runProgram(cliPath(), args, timeoutMs, env);
}

// The words of a command line as a POSIX shell splits them (what Copy as Command and
// trainCommandLine write, quoted by shellQuoted): blanks separate words, single quotes keep
// everything up to the next single quote, a backslash outside quotes escapes one character.
inline QStringList shellWords(const QString& line) {
    QStringList words;
    QString word;
    bool inWord = false;
    bool quoted = false;
    for (qsizetype i = 0; i < line.size(); ++i) {
        const QChar c = line[i];
        if (quoted) {
            if (c == QLatin1Char('\'')) {
                quoted = false;
            } else {
                word += c;
            }
        } else if (c == QLatin1Char('\'')) {
            quoted = true;
            inWord = true;
        } else if (c == QLatin1Char('\\') && i + 1 < line.size()) {
            word += line[++i];
            inWord = true;
        } else if (c == QLatin1Char(' ')) {
            if (inWord) {
                words << word;
                word.clear();
                inWord = false;
            }
        } else {
            word += c;
            inWord = true;
        }
    }
    if (inWord) {
        words << word;
    }
    return words;
}

// Clicks `button` and waits up to `timeoutMs` for `sender`'s `signal` (a job's end); the
// signal's first argument as T (the job's outcome), or T() when the signal did not come. The
// events the signal queued are delivered first, so the views have shown the outcome.
template <typename T, typename Button, typename Sender, typename Signal>
T clickAndWaitFor(Button* button, const Sender* sender, Signal signal, int timeoutMs) {
    QSignalSpy finished(sender, signal);
    button->click();
    if (!finished.wait(timeoutMs)) {
        return T();
    }
    QCoreApplication::processEvents();
    return finished.at(0).at(0).template value<T>();
}

// MNIST-format IDX files in `folder`: `count` 28x28 images whose class c = i mod 10 is a bright
// bar at rows 2c + 3 and 2c + 4 over faint noise, a pattern a tiny CNN learns in a few steps.
// From image `noisyFrom` on, every third label is shifted (wrong), so the first images are
// easier than the rest. False when a file cannot be written.
inline bool writeIdx(const QString& folder, const char* images, const char* labels, uint32_t count,
                     uint32_t seed, uint32_t noisyFrom = UINT32_MAX) {
    const auto be32 = [](uint32_t v) {
        QByteArray s(4, '\0');
        for (int i = 0; i < 4; ++i) {
            s[i] = static_cast<char>((v >> (24 - 8 * i)) & 0xff);
        }
        return s;
    };
    QByteArray pix = be32(0x00000803) + be32(count) + be32(28) + be32(28);
    QByteArray lab = be32(0x00000801) + be32(count);
    uint32_t state = seed;
    for (uint32_t i = 0; i < count; ++i) {
        const int c = static_cast<int>(i % 10);
        const int label = i >= noisyFrom && i % 3 == 0 ? (c + 1) % 10 : c;
        lab.append(static_cast<char>(label));
        for (int y = 0; y < 28; ++y) {
            for (int x = 0; x < 28; ++x) {
                state = state * 1664525u + 1013904223u;
                int v = static_cast<int>(state >> 27);  // 0..31
                if ((y == 2 * c + 3 || y == 2 * c + 4) && x >= 4 && x < 24) {
                    v = 200 + v;
                }
                pix.append(static_cast<char>(v));
            }
        }
    }
    for (const auto& [name, bytes] : {std::pair{images, pix}, std::pair{labels, lab}}) {
        QFile f(QDir(folder).filePath(QString::fromLatin1(name)));
        if (!f.open(QIODevice::WriteOnly) || f.write(bytes) != bytes.size()) {
            return false;
        }
    }
    return true;
}

// The main() of an interop suite: skipped (77) with `missing` when a tool is absent, a failure
// instead when ENSEMBLE_REQUIRE_INTEROP=1 (CI), else the suite run.
inline int runInteropSuite(QObject& suite, const QString& missing, int argc, char** argv) {
    if (!missing.isEmpty()) {
        if (qEnvironmentVariable("ENSEMBLE_REQUIRE_INTEROP") == QStringLiteral("1")) {
            std::printf("FAIL: ENSEMBLE_REQUIRE_INTEROP=1 but %s\n", qPrintable(missing));
            return 1;
        }
        std::printf("SKIP: %s\n", qPrintable(missing));
        return 77;
    }
    return QTest::qExec(&suite, argc, argv);
}

}  // namespace ensemble::test
