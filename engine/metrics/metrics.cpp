// The classification metrics over K members' predictions: per-point statistics (the ensemble's
// mean, entropy, mutual information), calibration, per-member and ensemble figures, diversity,
// out-of-bag figures and the ensemble-size curve. One piece (~730 lines) because every figure
// reads the same per-point statistics and the same member selection (includedMembers); the
// regression metrics are their own file (regression.cpp).
#include "metrics/metrics.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <utility>

#include "math/philox.h"
#include "math/uncertainty.h"
#include "metrics/metrics_detail.h"

namespace ensemble {

using detail::argmaxFirst;
using detail::entropyOf;
using detail::idx;
using detail::kNaN;
using detail::logAddExp;
using detail::logSumExpD;
using detail::memberRow;

namespace {

void checkLabels(const MemberPredictions& p, const std::vector<int32_t>& labels,
                 const char* where) {
    if (labels.size() != idx(p.rows)) {
        throw std::invalid_argument(std::string(where) + ": " + std::to_string(labels.size()) +
                                    " labels for " + std::to_string(p.rows) + " rows");
    }
}

void checkPredictions(const MemberPredictions& p, const char* where) {
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

}  // namespace

namespace detail {

Calibration CalibrationAccumulator::finish() const {
    Calibration cal;
    const int bins = static_cast<int>(m_count.size());
    cal.rows = m_rows;
    cal.bins.resize(m_count.size());
    for (int b = 0; b < bins; ++b) {
        const std::size_t u = static_cast<std::size_t>(b);
        ReliabilityBin& bin = cal.bins[u];
        bin.lower = static_cast<double>(b) / bins;
        bin.upper = static_cast<double>(b + 1) / bins;
        bin.count = m_count[u];
        if (bin.count == 0) {
            bin.confidence = kNaN;
            bin.accuracy = kNaN;
            continue;
        }
        const double n = static_cast<double>(bin.count);
        bin.confidence = m_confidence[u] / n;
        bin.accuracy = m_outcome[u] / n;
        const double gap = std::abs(bin.accuracy - bin.confidence);
        cal.ece += n / static_cast<double>(m_rows) * gap;
        cal.mce = std::max(cal.mce, gap);
    }
    return cal;
}

}  // namespace detail

int calibrationBin(double confidence, int bins) {
    if (!(confidence > 0.0)) {
        return 0;
    }
    if (confidence >= 1.0) {
        return bins - 1;
    }
    int j = static_cast<int>(std::ceil(confidence * bins)) - 1;
    j = std::clamp(j, 0, bins - 1);
    // The product may round across an edge: settle against the edges as reported (j / B).
    while (j > 0 && confidence <= static_cast<double>(j) / bins) {
        --j;
    }
    while (j < bins - 1 && confidence > static_cast<double>(j + 1) / bins) {
        ++j;
    }
    return j;
}

Calibration calibrationFrom(const std::vector<double>& confidence,
                            const std::vector<uint8_t>& outcome, int bins) {
    if (confidence.size() != outcome.size() || bins < 1) {
        throw std::invalid_argument("calibrationFrom: sizes differ or bins < 1");
    }
    detail::CalibrationAccumulator acc(bins);
    for (std::size_t i = 0; i < confidence.size(); ++i) {
        acc.add(confidence[i], outcome[i] ? 1.0 : 0.0);
    }
    return acc.finish();
}

std::vector<int> includedMembers(const MemberPredictions& p, const std::vector<uint8_t>& include) {
    if (!include.empty() && include.size() != static_cast<std::size_t>(p.members)) {
        throw std::invalid_argument("includedMembers: include has " +
                                    std::to_string(include.size()) + " entries for " +
                                    std::to_string(p.members) + " members");
    }
    std::vector<int> members;
    for (int k = 0; k < p.members; ++k) {
        if (include.empty() || include[static_cast<std::size_t>(k)] != 0) {
            members.push_back(k);
        }
    }
    return members;
}

PointStatistics pointStatistics(const MemberPredictions& p, const std::vector<uint8_t>& include,
                                const std::vector<int32_t>& labels) {
    return pointStatistics(p, includedMembers(p, include), labels);
}

PointStatistics pointStatistics(const MemberPredictions& p, const std::vector<int>& members,
                                const std::vector<int32_t>& labels) {
    return detail::pointStatisticsInto(p, members, labels, nullptr);
}

namespace detail {

PointStatistics pointStatisticsInto(const MemberPredictions& p, const std::vector<int>& members,
                                    const std::vector<int32_t>& labels, float* memberProbOut) {
    checkPredictions(p, "pointStatistics");
    if (members.empty()) {
        throw std::invalid_argument("pointStatistics: no member is included");
    }
    const bool labelled = !labels.empty();
    if (labelled) {
        checkLabels(p, labels, "pointStatistics");
    }
    const int64_t n = p.rows;
    const int classes = p.classes;
    const int k = static_cast<int>(members.size());
    const double logK = std::log(static_cast<double>(k));

    PointStatistics s;
    s.rows = n;
    s.classes = classes;
    s.members = k;
    s.probabilities.resize(idx(n) * idx(classes));
    s.predicted.resize(idx(n));
    s.confidence.resize(idx(n));
    s.total.resize(idx(n));
    s.aleatoric.resize(idx(n));
    s.epistemic.resize(idx(n));
    s.disagreement.resize(idx(n));
    s.predictedStd.resize(idx(n));
    if (labelled) {
        s.nll.resize(idx(n));
        s.brier.resize(idx(n));
        s.correct.resize(idx(n));
    }

    // Offsets of the included members' blocks in p.logProbs (and memberProbOut).
    std::vector<std::size_t> memberBase(static_cast<std::size_t>(k));
    for (int u = 0; u < k; ++u) {
        memberBase[static_cast<std::size_t>(u)] =
            static_cast<std::size_t>(members[static_cast<std::size_t>(u)]) * idx(n) * idx(classes);
    }
#pragma omp parallel
    {
        std::vector<double> memberProb(static_cast<std::size_t>(k) * idx(classes));
        std::vector<double> labelLogs(static_cast<std::size_t>(k));
        const std::size_t stride = idx(classes);
        const std::size_t* base = memberBase.data();
        double* kept = memberProb.data();
#pragma omp for schedule(static)
        for (int64_t i = 0; i < n; ++i) {
            double* prob = s.probabilities.data() + idx(i) * idx(classes);
            const float* rows = p.logProbs.data() + idx(i) * idx(classes);
            const auto logProb = [&](int u, int c) { return rows[base[u] + idx(c)]; };
            const auto again = [&](int u, int c) {
                return kept[static_cast<std::size_t>(u) * stride + idx(c)];
            };
            PointUncertainty point;
            if (memberProbOut == nullptr) {
                const auto keep = [&](int u, int c, double pr) {
                    kept[static_cast<std::size_t>(u) * stride + idx(c)] = pr;
                };
                point = pointUncertainty(k, classes, logProb, keep, again, prob);
            } else {
                // One exp per entry serves the statistics and the grid's member images.
                float* out = memberProbOut + idx(i) * idx(classes);
                const auto keep = [&](int u, int c, double pr) {
                    kept[static_cast<std::size_t>(u) * stride + idx(c)] = pr;
                    out[base[u] + idx(c)] = static_cast<float>(pr);
                };
                point = pointUncertainty(k, classes, logProb, keep, again, prob);
            }
            const int yhat = point.predicted;
            s.predicted[idx(i)] = yhat;
            s.confidence[idx(i)] = point.confidence;
            s.total[idx(i)] = point.total;
            s.aleatoric[idx(i)] = point.aleatoric;
            s.epistemic[idx(i)] = point.epistemic;
            s.disagreement[idx(i)] = point.disagreement;
            s.predictedStd[idx(i)] = point.predictedStd;
            if (labelled) {
                const int y = labels[idx(i)];
                for (int u = 0; u < k; ++u) {
                    labelLogs[static_cast<std::size_t>(u)] =
                        memberRow(p, members[static_cast<std::size_t>(u)], i)[y];
                }
                s.nll[idx(i)] = detail::ensembleLabelNll(labelLogs.data(), k, logK);
                double brier = 0.0;
                for (int c = 0; c < classes; ++c) {
                    const double d = prob[c] - (c == y ? 1.0 : 0.0);
                    brier += d * d;
                }
                s.brier[idx(i)] = brier;
                s.correct[idx(i)] = yhat == y ? 1 : 0;
            }
        }
    }
    return s;
}

}  // namespace detail

PointStatistics pointStatisticsFrom(const std::vector<PointUncertainty>& points,
                                    std::vector<double> probabilities, int classes, int members) {
    const std::size_t n = points.size();
    if (classes < 1 || probabilities.size() != n * idx(classes)) {
        throw std::invalid_argument("pointStatisticsFrom: " + std::to_string(probabilities.size()) +
                                    " probabilities for " + std::to_string(n) + " points of " +
                                    std::to_string(classes) + " classes");
    }
    PointStatistics s;
    s.rows = static_cast<int64_t>(n);
    s.classes = classes;
    s.members = members;
    s.probabilities = std::move(probabilities);
    s.predicted.resize(n);
    s.confidence.resize(n);
    s.total.resize(n);
    s.aleatoric.resize(n);
    s.epistemic.resize(n);
    s.disagreement.resize(n);
    s.predictedStd.resize(n);
    for (std::size_t i = 0; i < n; ++i) {
        const PointUncertainty& u = points[i];
        s.predicted[i] = u.predicted;
        s.confidence[i] = u.confidence;
        s.total[i] = u.total;
        s.aleatoric[i] = u.aleatoric;
        s.epistemic[i] = u.epistemic;
        s.disagreement[i] = u.disagreement;
        s.predictedStd[i] = u.predictedStd;
    }
    return s;
}

UncertaintySummary summarizeUncertainty(const PointStatistics& s) {
    UncertaintySummary u;
    if (s.rows == 0) {
        return u;
    }
    u.entropyMean = orderedMean(s.total);
    u.aleatoricMean = orderedMean(s.aleatoric);
    u.epistemicMean = orderedMean(s.epistemic);
    u.disagreementMean = orderedMean(s.disagreement);
    u.predictedStdMean = orderedMean(s.predictedStd);
    return u;
}

Calibration topLabelCalibration(const PointStatistics& s, int bins) {
    if (s.correct.size() != idx(s.rows)) {
        throw std::invalid_argument("topLabelCalibration: the statistics are not labelled");
    }
    return calibrationFrom(s.confidence, s.correct, bins);
}

Calibration positiveClassCalibration(const PointStatistics& s, const std::vector<int32_t>& labels,
                                     int bins) {
    if (s.classes != 2 || labels.size() != idx(s.rows)) {
        throw std::invalid_argument(
            "positiveClassCalibration: needs two classes and one label per row");
    }
    detail::CalibrationAccumulator acc(bins);
    for (int64_t i = 0; i < s.rows; ++i) {
        acc.add(s.probabilities[idx(i) * 2 + 1], labels[idx(i)] == 1 ? 1.0 : 0.0);
    }
    return acc.finish();
}

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

OobMetrics outOfBagMetrics(const MemberPredictions& train, const std::vector<int32_t>& labels,
                           const std::vector<int32_t>& counts,
                           const std::vector<uint8_t>& include) {
    checkPredictions(train, "outOfBagMetrics");
    checkLabels(train, labels, "outOfBagMetrics");
    OobMetrics oob;
    const int kAll = train.members;
    const int64_t n = train.rows;
    const int classes = train.classes;
    oob.members.resize(static_cast<std::size_t>(kAll));
    for (OobMember& m : oob.members) {
        m.accuracy = m.nll = kNaN;
    }
    oob.ensembleAccuracy = oob.ensembleNll = kNaN;
    if (counts.empty()) {
        oob.skippedRows = n;
        return oob;
    }
    if (counts.size() != static_cast<std::size_t>(kAll) * idx(n)) {
        throw std::invalid_argument("outOfBagMetrics: counts has " + std::to_string(counts.size()) +
                                    " entries, expected members x rows = " +
                                    std::to_string(static_cast<int64_t>(kAll) * n));
    }
    auto count = [&](int k, int64_t i) {
        return counts[static_cast<std::size_t>(k) * idx(n) + idx(i)];
    };

#pragma omp parallel for schedule(static)
    for (int k = 0; k < kAll; ++k) {
        OobMember& m = oob.members[static_cast<std::size_t>(k)];
        int64_t rows = 0;
        int64_t correct = 0;
        double nll = 0.0;
        for (int64_t i = 0; i < n; ++i) {
            if (count(k, i) != 0) {
                continue;
            }
            const float* row = memberRow(train, k, i);
            const int y = labels[idx(i)];
            ++rows;
            nll -= row[y];
            correct += argmaxFirst(row, classes) == y;
        }
        m.rows = rows;
        if (rows > 0) {
            m.accuracy = static_cast<double>(correct) / static_cast<double>(rows);
            m.nll = nll / static_cast<double>(rows);
        }
    }
    for (const OobMember& m : oob.members) {
        oob.available = oob.available || m.rows > 0;
    }

    const std::vector<int> members = includedMembers(train, include);
    std::vector<int> used(idx(n), 0);
    std::vector<uint8_t> correct(idx(n), 0);
    std::vector<double> nll(idx(n), 0.0);
#pragma omp parallel
    {
        std::vector<double> prob(idx(classes));
        std::vector<double> labelLogs(members.size());
#pragma omp for schedule(static)
        for (int64_t i = 0; i < n; ++i) {
            std::fill(prob.begin(), prob.end(), 0.0);
            const int y = labels[idx(i)];
            int u = 0;
            for (int k : members) {
                if (count(k, i) != 0) {
                    continue;
                }
                const float* row = memberRow(train, k, i);
                for (int c = 0; c < classes; ++c) {
                    prob[idx(c)] += std::exp(static_cast<double>(row[c]));
                }
                labelLogs[static_cast<std::size_t>(u++)] = row[y];
            }
            used[idx(i)] = u;
            if (u > 0) {
                correct[idx(i)] = argmaxFirst(prob.data(), classes) == y ? 1 : 0;
                nll[idx(i)] = -(logSumExpD(labelLogs.data(), u) - std::log(static_cast<double>(u)));
            }
        }
    }
    int64_t rows = 0;
    int64_t hits = 0;
    double nllSum = 0.0;
    for (int64_t i = 0; i < n; ++i) {
        if (used[idx(i)] == 0) {
            continue;
        }
        ++rows;
        hits += correct[idx(i)];
        nllSum += nll[idx(i)];
    }
    oob.ensembleRows = rows;
    oob.skippedRows = n - rows;
    if (rows > 0) {
        oob.ensembleAccuracy = static_cast<double>(hits) / static_cast<double>(rows);
        oob.ensembleNll = nllSum / static_cast<double>(rows);
    }
    return oob;
}

std::vector<int> randomMemberPermutation(const std::vector<int>& members, uint64_t seed,
                                         int index) {
    std::vector<int> order = members;
    // Fisher-Yates: position j takes a uniform pick among positions 0..j.
    for (std::size_t j = order.size(); j-- > 1;) {
        const Philox4x32 d = philoxDraw(seed, RngPurpose::Subset, static_cast<uint32_t>(index), j);
        const uint32_t r = uniformIndex(d.v[0], d.v[1], static_cast<uint32_t>(j + 1));
        std::swap(order[j], order[r]);
    }
    return order;
}

namespace {

// Metrics of the prefixes 1..K' of `order`, evaluated incrementally: the running sums of the
// members' probabilities and the running log-sum-exp of their label log-probabilities.
// `memberProb` holds exp(logProbs) for every member when it was affordable (else empty).
std::vector<ClassificationMetrics> prefixMetrics(const MemberPredictions& p,
                                                 const std::vector<int32_t>& labels,
                                                 const std::vector<int>& order,
                                                 const std::vector<double>& memberProb, int bins) {
    const int64_t n = p.rows;
    const int classes = p.classes;
    std::vector<double> sums(idx(n) * idx(classes), 0.0);
    std::vector<double> lse(idx(n), -std::numeric_limits<double>::infinity());
    std::vector<double> prob(idx(classes));
    std::vector<ClassificationMetrics> out;
    out.reserve(order.size());
    for (std::size_t m = 1; m <= order.size(); ++m) {
        const int k = order[m - 1];
        const double md = static_cast<double>(m);
        const double logM = std::log(md);
        detail::CalibrationAccumulator cal(bins);
        int64_t hits = 0;
        double nll = 0.0;
        double brier = 0.0;
        for (int64_t i = 0; i < n; ++i) {
            const float* row = memberRow(p, k, i);
            double* sum = sums.data() + idx(i) * idx(classes);
            if (memberProb.empty()) {
                for (int c = 0; c < classes; ++c) {
                    sum[c] += std::exp(static_cast<double>(row[c]));
                }
            } else {
                const double* pk = memberProb.data() +
                                   (static_cast<std::size_t>(k) * idx(n) + idx(i)) * idx(classes);
                for (int c = 0; c < classes; ++c) {
                    sum[c] += pk[c];
                }
            }
            const int y = labels[idx(i)];
            lse[idx(i)] = logAddExp(lse[idx(i)], static_cast<double>(row[y]));
            for (int c = 0; c < classes; ++c) {
                prob[idx(c)] = sum[c] / md;
            }
            const int yhat = argmaxFirst(prob.data(), classes);
            double b = 0.0;
            for (int c = 0; c < classes; ++c) {
                const double d = prob[idx(c)] - (c == y ? 1.0 : 0.0);
                b += d * d;
            }
            hits += yhat == y;
            nll -= lse[idx(i)] - logM;
            brier += b;
            cal.add(prob[idx(yhat)], yhat == y ? 1.0 : 0.0);
        }
        ClassificationMetrics r;
        r.rows = n;
        const double nd = static_cast<double>(n);
        r.accuracy = n > 0 ? static_cast<double>(hits) / nd : kNaN;
        r.nll = n > 0 ? nll / nd : kNaN;
        r.brier = n > 0 ? brier / nd : kNaN;
        const Calibration c = cal.finish();
        r.ece = c.ece;
        r.mce = c.mce;
        out.push_back(r);
    }
    return out;
}

// Precomputed member probabilities above this many entries are computed on the fly instead.
constexpr std::size_t kMaxCachedProbabilities = std::size_t{32} << 20;  // 256 MiB of doubles

}  // namespace

std::vector<SizeCurvePoint> ensembleSizeCurve(const MemberPredictions& p,
                                              const std::vector<int32_t>& labels,
                                              const std::vector<uint8_t>& include, int subsets,
                                              uint64_t seed, int bins) {
    checkPredictions(p, "ensembleSizeCurve");
    checkLabels(p, labels, "ensembleSizeCurve");
    const std::vector<int> members = includedMembers(p, include);
    const int k = static_cast<int>(members.size());
    subsets = std::max(subsets, 0);
    if (k == 0) {
        return {};
    }
    std::vector<double> memberProb;
    if (p.logProbs.size() <= kMaxCachedProbabilities) {
        memberProb.resize(p.logProbs.size());
        const int64_t total = static_cast<int64_t>(p.logProbs.size());
#pragma omp parallel for schedule(static)
        for (int64_t j = 0; j < total; ++j) {
            memberProb[idx(j)] = std::exp(static_cast<double>(p.logProbs[idx(j)]));
        }
    }
    // Sequence 0 is the members in order; 1..subsets are random permutations. Each sequence
    // is evaluated by one thread, so the results do not depend on the thread count.
    std::vector<std::vector<ClassificationMetrics>> sequences(static_cast<std::size_t>(subsets) +
                                                              1);
#pragma omp parallel for schedule(dynamic, 1)
    for (int s = 0; s <= subsets; ++s) {
        const std::vector<int> order =
            s == 0 ? members : randomMemberPermutation(members, seed, s - 1);
        sequences[static_cast<std::size_t>(s)] = prefixMetrics(p, labels, order, memberProb, bins);
    }

    std::vector<SizeCurvePoint> curve(static_cast<std::size_t>(k));
    for (int m = 1; m <= k; ++m) {
        SizeCurvePoint& point = curve[static_cast<std::size_t>(m - 1)];
        point.members = m;
        point.first = sequences[0][static_cast<std::size_t>(m - 1)];
        point.randomMean.rows = point.randomStd.rows = p.rows;
        if (subsets == 0) {
            point.randomMean = point.first;
            continue;
        }
        auto field = [&](double ClassificationMetrics::*f) {
            double mean = 0.0;
            for (int s = 1; s <= subsets; ++s) {
                mean += sequences[static_cast<std::size_t>(s)][static_cast<std::size_t>(m - 1)].*f;
            }
            mean /= subsets;
            double var = 0.0;
            for (int s = 1; s <= subsets; ++s) {
                const double d =
                    sequences[static_cast<std::size_t>(s)][static_cast<std::size_t>(m - 1)].*f -
                    mean;
                var += d * d;
            }
            point.randomMean.*f = mean;
            point.randomStd.*f = std::sqrt(var / subsets);
        };
        field(&ClassificationMetrics::accuracy);
        field(&ClassificationMetrics::nll);
        field(&ClassificationMetrics::brier);
        field(&ClassificationMetrics::ece);
        field(&ClassificationMetrics::mce);
    }
    return curve;
}

}  // namespace ensemble
