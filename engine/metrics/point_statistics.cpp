// The ensemble's per-point statistics, from member log-probabilities (one exp per entry, the
// grid's member images written on the way when asked) or from a backend's own measures.
#include "metrics/point_statistics.h"

#include <cmath>
#include <stdexcept>
#include <string>
#include <utility>

#include "math/uncertainty.h"
#include "metrics/metrics_detail.h"

namespace ensemble {

using detail::checkLabels;
using detail::checkPredictions;
using detail::memberRow;
using detail::orderedMean;

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

}  // namespace ensemble
