// The classification figures over K members' predictions: per-member and ensemble scores, the
// trainer's one-pass loss and accuracy (the report's to the bit), the Gibbs cross-entropy and
// diversity. The regression metrics are their own file (regression.cpp).
#include "metrics/metrics.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "metrics/metrics_detail.h"

namespace ensemble {

using detail::argmaxFirst;
using detail::checkLabels;
using detail::checkPredictions;
using detail::kNaN;
using detail::memberRow;
using detail::orderedMean;

ClassificationMetrics classificationMetrics(const PointStatistics& s, int bins) {
    ClassificationMetrics m;
    m.rows = s.rows;
    if (s.rows == 0) {
        m.accuracy = m.nll = m.brier = kNaN;
        return m;
    }
    m.accuracy = orderedMean(s.correct);
    m.nll = orderedMean(s.nll);
    m.brier = orderedMean(s.brier);
    const Calibration cal = topLabelCalibration(s, bins);
    m.ece = cal.ece;
    m.mce = cal.mce;
    return m;
}

ClassificationMetrics memberClassificationMetrics(const MemberPredictions& p,
                                                  const std::vector<int32_t>& labels, int k,
                                                  int bins) {
    if (k < 0 || k >= p.members) {
        throw std::invalid_argument("memberClassificationMetrics: no member " + std::to_string(k));
    }
    checkLabels(p, labels, "memberClassificationMetrics");
    return classificationMetrics(pointStatistics(p, std::vector<int>{k}, labels), bins);
}

ClassificationMetrics ensembleClassificationMetrics(const MemberPredictions& p,
                                                    const std::vector<int32_t>& labels,
                                                    const std::vector<uint8_t>& include, int bins) {
    checkLabels(p, labels, "ensembleClassificationMetrics");
    const std::vector<int> members = includedMembers(p, include);
    if (members.empty()) {
        ClassificationMetrics m;
        m.rows = p.rows;
        m.accuracy = m.nll = m.brier = m.ece = m.mce = kNaN;
        return m;
    }
    return classificationMetrics(pointStatistics(p, members, labels), bins);
}

SplitMetrics ensembleMetrics(const MemberPredictions& p, const std::vector<int32_t>& labels,
                             const std::vector<uint8_t>& include) {
    checkPredictions(p, "ensembleMetrics");
    checkLabels(p, labels, "ensembleMetrics");
    const std::vector<int> members = includedMembers(p, include);
    SplitMetrics m;
    if (p.rows == 0 || members.empty()) {
        m.loss = m.accuracy = kNaN;
        return m;
    }
    // The nll and correct of pointStatistics, without its other per-point measures: the sums
    // run in point order as orderedMean's do, so loss and accuracy are classificationMetrics'
    // to the bit.
    const int k = static_cast<int>(members.size());
    const double kD = static_cast<double>(k);
    const double logK = std::log(kD);
    std::vector<double> prob(idx(p.classes));
    std::vector<double> labelLogs(static_cast<std::size_t>(k));
    double nll = 0.0;
    double correct = 0.0;
    for (int64_t i = 0; i < p.rows; ++i) {
        const int y = labels[idx(i)];
        std::fill(prob.begin(), prob.end(), 0.0);
        for (int u = 0; u < k; ++u) {
            const float* row = memberRow(p, members[static_cast<std::size_t>(u)], i);
            for (int c = 0; c < p.classes; ++c) {
                prob[idx(c)] += std::exp(static_cast<double>(row[c]));
            }
            labelLogs[static_cast<std::size_t>(u)] = row[y];
        }
        for (double& v : prob) {
            v /= kD;
        }
        nll += detail::ensembleLabelNll(labelLogs.data(), k, logK);
        correct += argmaxFirst(prob.data(), p.classes) == y ? 1.0 : 0.0;
    }
    m.loss = nll / static_cast<double>(p.rows);
    m.accuracy = correct / static_cast<double>(p.rows);
    return m;
}

SplitMetrics memberMetrics(const MemberPredictions& p, const std::vector<int32_t>& labels, int k) {
    checkPredictions(p, "memberMetrics");
    checkLabels(p, labels, "memberMetrics");
    if (k < 0 || k >= p.members) {
        throw std::invalid_argument("memberMetrics: no member " + std::to_string(k));
    }
    SplitMetrics m;
    if (p.rows == 0) {
        return m;
    }
    double nll = 0.0;
    int64_t correct = 0;
    for (int64_t i = 0; i < p.rows; ++i) {
        const float* row = memberRow(p, k, i);
        const int y = labels[idx(i)];
        nll -= row[y];
        correct += argmaxFirst(row, p.classes) == y ? 1 : 0;
    }
    m.loss = nll / static_cast<double>(p.rows);
    m.accuracy = static_cast<double>(correct) / static_cast<double>(p.rows);
    return m;
}

SplitEvaluation evaluateSplit(const MemberPredictions& p, const std::vector<int32_t>& labels,
                              const std::vector<uint8_t>& include) {
    SplitEvaluation e;
    e.ensemble = ensembleMetrics(p, labels, include);
    e.members.reserve(static_cast<std::size_t>(p.members));
    for (int k = 0; k < p.members; ++k) {
        e.members.push_back(memberMetrics(p, labels, k));
    }
    return e;
}

double gibbsNll(const MemberPredictions& p, const std::vector<int32_t>& labels,
                const std::vector<uint8_t>& include) {
    checkPredictions(p, "gibbsNll");
    checkLabels(p, labels, "gibbsNll");
    const std::vector<int> members = includedMembers(p, include);
    if (members.empty() || p.rows == 0) {
        return kNaN;
    }
    std::vector<double> nll(members.size());
    const int count = static_cast<int>(members.size());
#pragma omp parallel for schedule(static)
    for (int u = 0; u < count; ++u) {
        double sum = 0.0;
        for (int64_t i = 0; i < p.rows; ++i) {
            sum -= memberRow(p, members[static_cast<std::size_t>(u)], i)[labels[idx(i)]];
        }
        nll[static_cast<std::size_t>(u)] = sum / static_cast<double>(p.rows);
    }
    return orderedMean(nll);
}

double diversity(const MemberPredictions& p, const std::vector<uint8_t>& include) {
    checkPredictions(p, "diversity");
    const std::vector<int> members = includedMembers(p, include);
    const int k = static_cast<int>(members.size());
    if (k < 2 || p.rows == 0) {
        return 0.0;
    }
    const double pairs = static_cast<double>(k) * static_cast<double>(k - 1);
    std::vector<double> perRow(idx(p.rows));
#pragma omp parallel
    {
        std::vector<int64_t> votes(idx(p.classes));
#pragma omp for schedule(static)
        for (int64_t i = 0; i < p.rows; ++i) {
            std::fill(votes.begin(), votes.end(), 0);
            for (int kk : members) {
                ++votes[idx(argmaxFirst(memberRow(p, kk, i), p.classes))];
            }
            int64_t same = 0;
            for (int64_t v : votes) {
                same += v * v;
            }
            // Ordered pairs (k, l), k != l, that disagree: K'^2 - sum_c n_c^2.
            perRow[idx(i)] = static_cast<double>(static_cast<int64_t>(k) * k - same) / pairs;
        }
    }
    return orderedMean(perRow);
}

}  // namespace ensemble
