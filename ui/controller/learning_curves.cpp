#include "controller/learning_curves.h"

namespace ensemble::ui {

LearningCurves::LearningCurves(int members, bool regression)
    : m_members(members),
      m_regression(regression),
      m_stores(static_cast<std::size_t>(members + 1) * 4) {}

LearningCurves LearningCurves::fromHistory(
    int members, bool regression, const std::vector<std::shared_ptr<const HistoryPoint>>& h) {
    LearningCurves curves(members, regression);
    for (const auto& point : h) {
        curves.append(*point);
    }
    return curves;
}

void thinCurvePoints(std::vector<std::shared_ptr<const HistoryPoint>>& history, std::size_t limit) {
    if (history.size() <= limit) {
        return;
    }
    // Every other point, the first and the last kept: the spacing doubles, the span stays.
    std::vector<std::shared_ptr<const HistoryPoint>> kept;
    kept.reserve(history.size() / 2 + 2);
    for (std::size_t i = 0; i + 1 < history.size(); i += 2) {
        kept.push_back(history[i]);
    }
    kept.push_back(history.back());
    history = std::move(kept);
}

std::size_t LearningCurves::index(int member, CurveSplit split, CurveFigure figure) const {
    return static_cast<std::size_t>(member + 1) * 4 + (split == CurveSplit::Test ? 2 : 0) +
           (figure == CurveFigure::Second ? 1 : 0);
}

const CurveStore& LearningCurves::curve(int member, CurveSplit split, CurveFigure figure) const {
    return m_stores[index(member, split, figure)];
}

void LearningCurves::append(const HistoryPoint& point) {
    auto add = [&](int member, CurveSplit split, const SplitMetrics& m) {
        m_stores[index(member, split, CurveFigure::Loss)].append(point.step, m.loss);
        m_stores[index(member, split, CurveFigure::Second)].append(
            point.step, m_regression ? m.rmse : m.accuracy);
    };
    add(-1, CurveSplit::Train, point.ensembleTrain);
    add(-1, CurveSplit::Test, point.ensembleTest);
    for (int k = 0; k < m_members; ++k) {
        const auto u = static_cast<std::size_t>(k);
        if (u < point.memberTrain.size()) {
            add(k, CurveSplit::Train, point.memberTrain[u]);
        }
        if (u < point.memberTest.size()) {
            add(k, CurveSplit::Test, point.memberTest[u]);
        }
    }
    ++m_points;
    m_lastStep = point.step;
}

}  // namespace ensemble::ui
