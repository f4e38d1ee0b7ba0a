#include "runs/run_curves.h"

#include <algorithm>
#include <cmath>

namespace ensemble::runs {

void RunCurves::add(const Evaluation& e) {
    const std::array<double, kSeries.size()> values = {
        e.ensembleTrain.loss,    e.ensembleTest.loss,  e.ensembleTrain.accuracy,
        e.ensembleTest.accuracy, e.ensembleTrain.rmse, e.ensembleTest.rmse};
    // A regression head's accuracy is NaN, which the curve store skips; a classifier's RMSE
    // is SplitMetrics' default 0, which is no curve.
    const bool regression = std::isnan(e.ensembleTest.accuracy);
    for (std::size_t i = 0; i < kSeries.size(); ++i) {
        const bool rmse = i >= 4;
        if (rmse && !regression) {
            continue;
        }
        m_series[i].append(e.step, values[i]);
    }
}

bool RunCurves::empty() const {
    return std::all_of(m_series.begin(), m_series.end(),
                       [](const CurveStore& s) { return s.empty(); });
}

nlohmann::json RunCurves::json() const {
    nlohmann::json out = nlohmann::json::object();
    for (std::size_t i = 0; i < kSeries.size(); ++i) {
        if (m_series[i].empty()) {
            continue;
        }
        nlohmann::json points = nlohmann::json::array();
        for (const CurvePoint& p : m_series[i].points(kMaxPoints)) {
            points.push_back({p.step, p.value});
        }
        out[kSeries[i]] = std::move(points);
    }
    return out;
}

}  // namespace ensemble::runs
