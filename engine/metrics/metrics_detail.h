#pragma once

// Internals shared by the metrics sources (not a public API).

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/index.h"
#include "metrics/calibration.h"
#include "metrics/point_statistics.h"
#include "metrics/types.h"

namespace ensemble::detail {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

inline void checkLabels(const MemberPredictions& p, const std::vector<int32_t>& labels,
                        const char* where) {
    if (labels.size() != idx(p.rows)) {
        throw std::invalid_argument(std::string(where) + ": " + std::to_string(labels.size()) +
                                    " labels for " + std::to_string(p.rows) + " rows");
    }
}

inline void checkPredictions(const MemberPredictions& p, const char* where) {
    if (p.logProbs.size() != static_cast<std::size_t>(p.members) * idx(p.rows) * idx(p.classes)) {
        throw std::invalid_argument(std::string(where) + ": logProbs has the wrong size");
    }
}

// Mean of v in index order (NaN for an empty vector).
template <typename T>
double orderedMean(const std::vector<T>& v) {
    if (v.empty()) {
        return kNaN;
    }
    double s = 0.0;
    for (const T& x : v) {
        s += static_cast<double>(x);
    }
    return s / static_cast<double>(v.size());
}

// Member k's log-probabilities at row i (C of them).
inline const float* memberRow(const MemberPredictions& p, int k, int64_t i) {
    return p.logProbs.data() +
           (static_cast<std::size_t>(k) * idx(p.rows) + idx(i)) * idx(p.classes);
}

// log sum_i exp(v_i) in double; -inf when every term is -inf (or n == 0).
inline double logSumExpD(const double* v, int n) {
    double m = -std::numeric_limits<double>::infinity();
    for (int i = 0; i < n; ++i) {
        if (std::isnan(v[i])) {
            return v[i];
        }
        m = v[i] > m ? v[i] : m;
    }
    if (!std::isfinite(m)) {
        return m;  // -inf (every term -inf), +inf or NaN propagate
    }
    double s = 0.0;
    for (int i = 0; i < n; ++i) {
        s += std::exp(v[i] - m);
    }
    return m + std::log(s);
}

// The ensemble's NLL of one point from the K' included members' log-probabilities of its
// label: -log mean_k P_k(y|x) = -(logsumexp_k log P_k(y|x) - log K'). Written once for the
// per-point statistics and the trainer's loss (ensembleMetrics).
inline double ensembleLabelNll(const double* labelLogs, int members, double logMembers) {
    return -(logSumExpD(labelLogs, members) - logMembers);
}

// log(exp(a) + exp(b)), stable; handles -inf.
inline double logAddExp(double a, double b) {
    if (a < b) {
        std::swap(a, b);
    }
    if (b == -std::numeric_limits<double>::infinity()) {
        return a;
    }
    return a + std::log1p(std::exp(b - a));
}

// Index of the first maximum of v[0..n).
template <typename T>
inline int argmaxFirst(const T* v, int n) {
    int best = 0;
    for (int c = 1; c < n; ++c) {
        if (v[c] > v[best]) {
            best = c;
        }
    }
    return best;
}

// -sum p log p over a row of probabilities (0 log 0 = 0).
inline double entropyOf(const double* p, int n) {
    double h = 0.0;
    for (int c = 0; c < n; ++c) {
        if (p[c] > 0.0) {
            h -= p[c] * std::log(p[c]);
        }
    }
    return h;
}

// pointStatistics(p, members, labels), also writing every included member's probabilities
// (rounded to float) to memberProbOut at the positions of their log-probabilities, when it is
// not null: one exp per entry serves both (the grid's hot path).
PointStatistics pointStatisticsInto(const MemberPredictions& p, const std::vector<int>& members,
                                    const std::vector<int32_t>& labels, float* memberProbOut);

// Accumulates a reliability diagram point by point, in the caller's (fixed) order.
class CalibrationAccumulator {
  public:
    explicit CalibrationAccumulator(int bins)
        : m_count(static_cast<std::size_t>(bins), 0),
          m_confidence(static_cast<std::size_t>(bins), 0.0),
          m_outcome(static_cast<std::size_t>(bins), 0.0) {}

    void add(double confidence, double outcome) {
        const std::size_t b =
            static_cast<std::size_t>(calibrationBin(confidence, static_cast<int>(m_count.size())));
        ++m_count[b];
        m_confidence[b] += confidence;
        m_outcome[b] += outcome;
        ++m_rows;
    }

    Calibration finish() const;

  private:
    std::vector<int64_t> m_count;
    std::vector<double> m_confidence;
    std::vector<double> m_outcome;
    int64_t m_rows = 0;
};

}  // namespace ensemble::detail
