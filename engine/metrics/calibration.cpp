// Reliability diagrams: the bins (settled against their edges as reported), ECE and MCE.
#include "metrics/calibration.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "metrics/metrics_detail.h"

namespace ensemble {

using detail::kNaN;

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

}  // namespace ensemble
