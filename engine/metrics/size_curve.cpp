// The ensemble-size curve: every prefix of the members in order and of random permutations,
// evaluated incrementally (running sums), one permutation per thread.
#include "metrics/size_curve.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

#include "math/philox.h"
#include "metrics/metrics_detail.h"

namespace ensemble {

using detail::argmaxFirst;
using detail::checkLabels;
using detail::checkPredictions;
using detail::kNaN;
using detail::logAddExp;
using detail::memberRow;

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
