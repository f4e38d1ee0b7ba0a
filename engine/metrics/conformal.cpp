#include "metrics/conformal.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>
#include <string>

#include "math/philox.h"
#include "metrics/metrics_detail.h"

namespace ensemble {

using detail::kNaN;

namespace {

constexpr double kInfinity = std::numeric_limits<double>::infinity();

// Classes by descending probability, ties to the lower index (a stable order).
std::vector<int> rankClasses(const double* p, int classes) {
    std::vector<int> order(idx(classes));
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [p](int a, int b) { return p[a] > p[b]; });
    return order;
}

// The row's probability mass, to renormalise APS's cumulative sums: probabilities from float
// log-probabilities can sum to slightly more than 1 (a confident member's top class is exactly
// 1 in float), which would tie the scores of confident rows at or above 1 and make the sets of
// a threshold near 1 take almost every class.
double rowTotal(const double* p, int classes) {
    double total = 0.0;
    for (int c = 0; c < classes; ++c) {
        total += p[c];
    }
    return total > 0.0 ? total : 1.0;
}

void checkRows(const std::vector<double>& probabilities, int classes, std::size_t rows,
               const char* what) {
    if (classes < 1 || probabilities.size() != rows * idx(classes)) {
        throw std::invalid_argument(std::string(what) +
                                    ": probabilities must be rows x classes, labels rows long");
    }
}

}  // namespace

RowHalves splitHalves(int64_t rows, uint64_t seed, double calibrationFraction) {
    if (rows < 0 || !(calibrationFraction >= 0.0 && calibrationFraction <= 1.0)) {
        throw std::invalid_argument("splitHalves: rows >= 0 and 0 <= fraction <= 1");
    }
    std::vector<int64_t> order(idx(rows));
    std::iota(order.begin(), order.end(), int64_t{0});
    // Fisher-Yates from the end: swap i with a uniform j in [0, i], one Philox draw per i.
    for (int64_t i = rows - 1; i > 0; --i) {
        const Philox4x32 d = philoxDraw(seed, RngPurpose::Halves, 0, static_cast<uint64_t>(i));
        const auto j =
            static_cast<int64_t>(uniformIndex(d.v[0], d.v[1], static_cast<uint32_t>(i + 1)));
        std::swap(order[idx(i)], order[idx(j)]);
    }
    const auto nCal =
        static_cast<int64_t>(std::llround(calibrationFraction * static_cast<double>(rows)));
    RowHalves h;
    h.seed = seed;
    h.rows = rows;
    h.calibration.assign(order.begin(), order.begin() + nCal);
    h.measure.assign(order.begin() + nCal, order.end());
    std::sort(h.calibration.begin(), h.calibration.end());
    std::sort(h.measure.begin(), h.measure.end());
    return h;
}

MemberPredictions selectPredictionRows(const MemberPredictions& p,
                                       const std::vector<int64_t>& rows) {
    MemberPredictions out;
    out.members = p.members;
    out.classes = p.classes;
    out.rows = static_cast<int64_t>(rows.size());
    const std::size_t c = idx(p.classes);
    out.logProbs.resize(idx(p.members) * rows.size() * c);
    for (int k = 0; k < p.members; ++k) {
        for (std::size_t i = 0; i < rows.size(); ++i) {
            const float* from = detail::memberRow(p, k, rows[i]);
            std::copy(from, from + c, out.logProbs.data() + (idx(k) * rows.size() + i) * c);
        }
    }
    return out;
}

double conformalQuantile(std::vector<double> scores, double alpha) {
    if (!(alpha > 0.0 && alpha < 1.0)) {
        throw std::invalid_argument("conformalQuantile: alpha must be in (0, 1)");
    }
    const double n = static_cast<double>(scores.size());
    // A small slack keeps (n+1)(1-alpha) that is an integer in exact arithmetic (n = 9,
    // alpha = 0.1) from rounding up to the next rank.
    const double rank = std::ceil((n + 1.0) * (1.0 - alpha) - 1e-9);
    if (rank > n || scores.empty()) {
        return kInfinity;
    }
    const auto k = static_cast<std::size_t>(std::max(rank, 1.0)) - 1;
    std::nth_element(scores.begin(), scores.begin() + static_cast<std::ptrdiff_t>(k), scores.end());
    return scores[k];
}

double conformalScore(ConformalScore score, const double* p, int classes, int y) {
    switch (score) {
        case ConformalScore::Lac:
            return 1.0 - p[y];
        case ConformalScore::Aps: {
            const double total = rowTotal(p, classes);
            double mass = 0.0;
            for (int c : rankClasses(p, classes)) {
                mass += p[c] / total;
                if (c == y) {
                    break;
                }
            }
            return mass;
        }
    }
    return kNaN;
}

std::vector<uint8_t> conformalSet(ConformalScore score, const double* p, int classes,
                                  double threshold) {
    std::vector<uint8_t> in(idx(classes), 0);
    switch (score) {
        case ConformalScore::Lac:
            for (int c = 0; c < classes; ++c) {
                in[idx(c)] = 1.0 - p[c] <= threshold ? 1 : 0;
            }
            break;
        case ConformalScore::Aps: {
            const double total = rowTotal(p, classes);
            double mass = 0.0;  // the mass of the classes ranked up to and including this one
            for (int c : rankClasses(p, classes)) {
                mass += p[c] / total;
                if (!(mass <= threshold)) {
                    break;
                }
                in[idx(c)] = 1;
            }
            break;
        }
    }
    return in;
}

ConformalThreshold calibrateConformal(ConformalScore score,
                                      const std::vector<double>& probabilities, int classes,
                                      const std::vector<int32_t>& labels, double alpha) {
    checkRows(probabilities, classes, labels.size(), "calibrateConformal");
    std::vector<double> scores(labels.size());
    for (std::size_t i = 0; i < labels.size(); ++i) {
        scores[i] =
            conformalScore(score, probabilities.data() + i * idx(classes), classes, labels[i]);
    }
    ConformalThreshold t;
    t.score = score;
    t.alpha = alpha;
    t.calibrationRows = static_cast<int64_t>(labels.size());
    t.threshold = conformalQuantile(std::move(scores), alpha);
    return t;
}

ConformalSets conformalSets(const ConformalThreshold& threshold,
                            const std::vector<double>& probabilities, int classes,
                            const std::vector<int32_t>& labels) {
    checkRows(probabilities, classes, labels.size(), "conformalSets");
    ConformalSets s;
    s.rows = static_cast<int64_t>(labels.size());
    s.countBySize.assign(idx(classes) + 1, 0);
    std::vector<int64_t> coveredBySize(idx(classes) + 1, 0);
    int64_t covered = 0;
    int64_t sizeSum = 0;
    for (std::size_t i = 0; i < labels.size(); ++i) {
        const std::vector<uint8_t> in = conformalSet(
            threshold.score, probabilities.data() + i * idx(classes), classes, threshold.threshold);
        const auto size = static_cast<std::size_t>(std::count(in.begin(), in.end(), uint8_t{1}));
        const bool hit = in[idx(labels[i])] != 0;
        ++s.countBySize[size];
        coveredBySize[size] += hit ? 1 : 0;
        covered += hit ? 1 : 0;
        sizeSum += static_cast<int64_t>(size);
    }
    const double n = static_cast<double>(s.rows);
    s.coverage = s.rows > 0 ? static_cast<double>(covered) / n : kNaN;
    s.setSizeMean = s.rows > 0 ? static_cast<double>(sizeSum) / n : kNaN;
    for (std::size_t k = 0; k < s.countBySize.size(); ++k) {
        s.coverageBySize.push_back(s.countBySize[k] > 0 ? static_cast<double>(coveredBySize[k]) /
                                                              static_cast<double>(s.countBySize[k])
                                                        : kNaN);
    }
    return s;
}

ConformalReport conformalReport(const std::vector<double>& probabilities, int classes,
                                const std::vector<int32_t>& labels, const RowHalves& halves,
                                double alpha) {
    checkRows(probabilities, classes, idx(halves.rows), "conformalReport");
    if (labels.size() != idx(halves.rows)) {
        throw std::invalid_argument("conformalReport: labels must be halves.rows long");
    }
    const auto pick = [&](const std::vector<int64_t>& rows) {
        std::vector<double> out;
        out.reserve(rows.size() * idx(classes));
        for (int64_t r : rows) {
            const double* from = probabilities.data() + idx(r) * idx(classes);
            out.insert(out.end(), from, from + classes);
        }
        return out;
    };
    const std::vector<double> calP = pick(halves.calibration);
    const std::vector<double> measureP = pick(halves.measure);
    const std::vector<int32_t> calY = selectValues(labels, halves.calibration);
    const std::vector<int32_t> measureY = selectValues(labels, halves.measure);
    ConformalReport r;
    r.alpha = alpha;
    r.seed = halves.seed;
    r.calibrationRows = static_cast<int64_t>(halves.calibration.size());
    r.measureRows = static_cast<int64_t>(halves.measure.size());
    r.lacThreshold = calibrateConformal(ConformalScore::Lac, calP, classes, calY, alpha);
    r.apsThreshold = calibrateConformal(ConformalScore::Aps, calP, classes, calY, alpha);
    r.lac = conformalSets(r.lacThreshold, measureP, classes, measureY);
    r.aps = conformalSets(r.apsThreshold, measureP, classes, measureY);
    return r;
}

double calibrateIntervals(const std::vector<double>& mean, const std::vector<double>& variance,
                          const std::vector<float>& targets, double alpha) {
    if (mean.size() != targets.size() || variance.size() != targets.size()) {
        throw std::invalid_argument("calibrateIntervals: mean, variance, targets differ in size");
    }
    std::vector<double> scores(targets.size());
    for (std::size_t i = 0; i < targets.size(); ++i) {
        const double err = std::abs(targets[i] - mean[i]);
        const double sigma = std::sqrt(std::max(variance[i], 0.0));
        scores[i] = sigma > 0.0 ? err / sigma : (err == 0.0 ? 0.0 : kInfinity);
    }
    return conformalQuantile(std::move(scores), alpha);
}

ConformalIntervals measureIntervals(double threshold, double alpha, int64_t calibrationRows,
                                    const std::vector<double>& mean,
                                    const std::vector<double>& variance,
                                    const std::vector<float>& targets) {
    if (mean.size() != targets.size() || variance.size() != targets.size()) {
        throw std::invalid_argument("measureIntervals: mean, variance, targets differ in size");
    }
    ConformalIntervals r;
    r.alpha = alpha;
    r.calibrationRows = calibrationRows;
    r.threshold = threshold;
    r.rows = static_cast<int64_t>(targets.size());
    int64_t covered = 0;
    double width = 0.0;
    for (std::size_t i = 0; i < targets.size(); ++i) {
        const double sigma = std::sqrt(std::max(variance[i], 0.0));
        const double half = threshold * sigma;
        covered += std::abs(targets[i] - mean[i]) <= half ? 1 : 0;
        width += 2.0 * half;
    }
    const double n = static_cast<double>(r.rows);
    r.coverage = r.rows > 0 ? static_cast<double>(covered) / n : kNaN;
    r.widthMean = r.rows > 0 ? width / n : kNaN;
    return r;
}

namespace {

// Rows by descending confidence, ties to the lower row index.
std::vector<std::size_t> confidenceOrder(const std::vector<double>& confidence) {
    std::vector<std::size_t> order(confidence.size());
    std::iota(order.begin(), order.end(), std::size_t{0});
    std::stable_sort(order.begin(), order.end(),
                     [&](std::size_t a, std::size_t b) { return confidence[a] > confidence[b]; });
    return order;
}

double accuracyOfFirst(const std::vector<std::size_t>& order, const std::vector<uint8_t>& correct,
                       double coverage) {
    const std::size_t n = order.size();
    if (n == 0) {
        return kNaN;
    }
    const auto m = static_cast<std::size_t>(std::clamp(
        std::ceil(coverage * static_cast<double>(n) - 1e-9), 1.0, static_cast<double>(n)));
    int64_t right = 0;
    for (std::size_t i = 0; i < m; ++i) {
        right += correct[order[i]];
    }
    return static_cast<double>(right) / static_cast<double>(m);
}

}  // namespace

double accuracyAtCoverage(const std::vector<double>& confidence,
                          const std::vector<uint8_t>& correct, double coverage) {
    if (confidence.size() != correct.size()) {
        throw std::invalid_argument("accuracyAtCoverage: confidence and correct differ in size");
    }
    return accuracyOfFirst(confidenceOrder(confidence), correct, coverage);
}

SelectiveCurve selectivePrediction(const std::vector<double>& confidence,
                                   const std::vector<uint8_t>& correct, int curvePoints) {
    if (confidence.size() != correct.size()) {
        throw std::invalid_argument("selectivePrediction: confidence and correct differ in size");
    }
    SelectiveCurve s;
    const std::size_t n = confidence.size();
    s.rows = static_cast<int64_t>(n);
    if (n == 0) {
        s.aurc = s.accuracyAt90 = s.accuracyAt95 = kNaN;
        return s;
    }
    const std::vector<std::size_t> order = confidenceOrder(confidence);
    // The curve's m values: about curvePoints of them, evenly spaced, always ending at n.
    std::vector<std::size_t> keep;
    const int points = std::max(curvePoints, 2);
    for (int j = 1; j <= points; ++j) {
        const auto m = static_cast<std::size_t>(
            std::ceil(static_cast<double>(j) * static_cast<double>(n) / points));
        if (m >= 1 && (keep.empty() || m > keep.back())) {
            keep.push_back(m);
        }
    }
    std::size_t next = 0;
    int64_t errors = 0;
    double riskSum = 0.0;
    for (std::size_t m = 1; m <= n; ++m) {
        errors += correct[order[m - 1]] ? 0 : 1;
        const double risk = static_cast<double>(errors) / static_cast<double>(m);
        riskSum += risk;
        if (next < keep.size() && keep[next] == m) {
            s.coverage.push_back(static_cast<double>(m) / static_cast<double>(n));
            s.risk.push_back(risk);
            ++next;
        }
    }
    s.aurc = riskSum / static_cast<double>(n);
    s.accuracyAt90 = accuracyOfFirst(order, correct, 0.90);
    s.accuracyAt95 = accuracyOfFirst(order, correct, 0.95);
    return s;
}

}  // namespace ensemble
