#include "metrics/ood.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <stdexcept>
#include <utility>

#include "metrics/metrics_detail.h"

namespace ensemble {

using detail::kNaN;

namespace {

// Both samples in one list of (score, is positive), sorted by score (ascending or descending).
std::vector<std::pair<double, uint8_t>> pooled(const std::vector<double>& positive,
                                               const std::vector<double>& negative,
                                               bool descending) {
    std::vector<std::pair<double, uint8_t>> all;
    all.reserve(positive.size() + negative.size());
    for (double s : positive) {
        all.emplace_back(s, 1);
    }
    for (double s : negative) {
        all.emplace_back(s, 0);
    }
    std::sort(all.begin(), all.end(), [descending](const auto& a, const auto& b) {
        return descending ? a.first > b.first : a.first < b.first;
    });
    return all;
}

}  // namespace

double auroc(const std::vector<double>& positive, const std::vector<double>& negative) {
    if (positive.empty() || negative.empty()) {
        return kNaN;
    }
    // Mann-Whitney: AUROC = (R+ - n+(n+ + 1)/2) / (n+ n-), R+ the sum of the positives' ranks
    // in the pooled sample, tied values sharing their mean rank.
    const std::vector<std::pair<double, uint8_t>> all = pooled(positive, negative, false);
    double rankSum = 0.0;
    std::size_t i = 0;
    while (i < all.size()) {
        std::size_t j = i;
        while (j < all.size() && all[j].first == all[i].first) {
            ++j;
        }
        // Ranks i+1 .. j (1-based) share their mean.
        const double meanRank = 0.5 * (static_cast<double>(i + 1) + static_cast<double>(j));
        for (std::size_t t = i; t < j; ++t) {
            if (all[t].second) {
                rankSum += meanRank;
            }
        }
        i = j;
    }
    const double np = static_cast<double>(positive.size());
    const double nn = static_cast<double>(negative.size());
    return (rankSum - np * (np + 1.0) / 2.0) / (np * nn);
}

double fprAtTpr(const std::vector<double>& positive, const std::vector<double>& negative,
                double tpr) {
    if (positive.empty() || negative.empty()) {
        return kNaN;
    }
    std::vector<double> pos = positive;
    std::sort(pos.begin(), pos.end(), std::greater<double>());
    // Positives needed: the smallest count reaching `tpr` (a tiny slack absorbs the rounding
    // of tpr * n, e.g. 0.95 * 20). The threshold is the needed-th largest positive score: no
    // larger threshold keeps that many.
    const double need = std::ceil(tpr * static_cast<double>(pos.size()) - 1e-9);
    const std::size_t k =
        static_cast<std::size_t>(std::clamp(need, 1.0, static_cast<double>(pos.size())));
    const double threshold = pos[k - 1];
    std::size_t falsePositives = 0;
    for (double s : negative) {
        falsePositives += s >= threshold;
    }
    return static_cast<double>(falsePositives) / static_cast<double>(negative.size());
}

double aupr(const std::vector<double>& positive, const std::vector<double>& negative) {
    if (positive.empty() || negative.empty()) {
        return kNaN;
    }
    const std::vector<std::pair<double, uint8_t>> all = pooled(positive, negative, true);
    // Walk the thresholds from the highest score down; a group of tied scores enters at once.
    const double np = static_cast<double>(positive.size());
    double truePositives = 0.0;
    double taken = 0.0;
    double area = 0.0;
    std::size_t i = 0;
    while (i < all.size()) {
        std::size_t j = i;
        double groupPositives = 0.0;
        while (j < all.size() && all[j].first == all[i].first) {
            groupPositives += all[j].second;
            ++j;
        }
        truePositives += groupPositives;
        taken += static_cast<double>(j - i);
        area += (groupPositives / np) * (truePositives / taken);
        i = j;
    }
    return area;
}

OodMetrics oodMetrics(const PointStatistics& in, const PointStatistics& out, int histogramBins) {
    if (in.classes != out.classes || histogramBins < 1) {
        throw std::invalid_argument("oodMetrics: class counts differ or histogramBins < 1");
    }
    OodMetrics m;
    m.inRows = in.rows;
    m.outRows = out.rows;
    auto negated = [](const std::vector<double>& v) {
        std::vector<double> r(v.size());
        std::transform(v.begin(), v.end(), r.begin(), [](double x) { return -x; });
        return r;
    };
    auto score = [](const std::vector<double>& pos, const std::vector<double>& neg) {
        return OodScore{auroc(pos, neg), fprAtTpr(pos, neg, 0.95), aupr(pos, neg)};
    };
    m.maxProbability = score(in.confidence, out.confidence);
    m.entropy = score(negated(in.total), negated(out.total));
    m.mutualInformation = score(negated(in.epistemic), negated(out.epistemic));

    const double top = std::log(static_cast<double>(std::max(in.classes, 2)));
    EntropyHistogram& h = m.entropyHistogram;
    h.edges.resize(static_cast<std::size_t>(histogramBins) + 1);
    for (int b = 0; b <= histogramBins; ++b) {
        h.edges[static_cast<std::size_t>(b)] = top * b / histogramBins;
    }
    auto fill = [&](const std::vector<double>& values, std::vector<int64_t>& counts) {
        counts.assign(static_cast<std::size_t>(histogramBins), 0);
        for (double v : values) {
            if (std::isnan(v)) {
                continue;
            }
            int b = static_cast<int>(std::floor(v / top * histogramBins));
            b = std::clamp(b, 0, histogramBins - 1);
            ++counts[static_cast<std::size_t>(b)];
        }
    };
    fill(in.total, h.in);
    fill(out.total, h.out);
    return m;
}

}  // namespace ensemble
