// What the Boundary view's canvas reads under the pointer: the ensemble's and the members'
// probabilities at a point, its uncertainty split into aleatoric and epistemic parts, and the
// text of the read-out (BoundaryCanvas::readoutAt, readout).
#include "views/boundary_view.h"

#include <QStringList>

#include <algorithm>
#include <cmath>

#include "render/plot_helpers.h"

namespace ensemble::ui {

BoundaryReadout BoundaryCanvas::readoutAt(const QPointF& pos) const {
    BoundaryReadout r;
    if (!m_snapshot || !m_snapshot->hasGrid) {
        return r;
    }
    const Snapshot& s = *m_snapshot;
    const QRectF plot = plotRect();
    if (!plot.contains(pos)) {
        return r;
    }
    const GridBounds& b = s.run->bounds;
    const GridBounds v = viewBounds();
    r.x = v.xMin + (pos.x() - plot.left()) / plot.width() * (v.xMax - v.xMin);
    r.y = v.yMax - (pos.y() - plot.top()) / plot.height() * (v.yMax - v.yMin);
    const int g = s.run->gridSize;
    r.column = std::clamp(static_cast<int>((r.x - b.xMin) / (b.xMax - b.xMin) * g), 0, g - 1);
    r.row = std::clamp(static_cast<int>((b.yMax - r.y) / (b.yMax - b.yMin) * g), 0, g - 1);
    r.point = static_cast<std::size_t>(r.row) * static_cast<std::size_t>(g) +
              static_cast<std::size_t>(r.column);
    r.valid = true;
    r.hasEnsemble = s.hasEnsemble;
    if (!s.hasEnsemble) {
        return r;
    }
    if (s.run->regression) {
        const RegressionPoints& e = s.gridRegression;
        if (r.point < e.mean.size()) {
            r.regression = true;
            r.mean = e.mean[r.point];
            r.totalStd = std::sqrt(std::max(0.0, e.variance[r.point]));
            r.aleatoricStd = std::sqrt(std::max(0.0, e.aleatoric[r.point]));
            r.epistemicStd = std::sqrt(std::max(0.0, e.epistemic[r.point]));
        }
        return r;
    }
    const int classes = s.run->classes;
    const std::size_t cu = static_cast<std::size_t>(classes);
    const PointStatistics& e = s.grid.ensemble;
    for (int c = 0; c < classes; ++c) {
        r.probabilities.push_back(e.probabilities[r.point * cu + static_cast<std::size_t>(c)]);
    }
    r.predicted = e.predicted[r.point];
    r.entropy = e.total[r.point];
    r.aleatoric = e.aleatoric[r.point];
    r.mutualInformation = e.epistemic[r.point];
    r.disagreement = e.disagreement[r.point];
    // Each included member's vote: the argmax of its own probabilities at the cell.
    r.votes.assign(cu, 0);
    const std::size_t cells = static_cast<std::size_t>(g) * static_cast<std::size_t>(g);
    for (int k = 0; k < s.grid.members; ++k) {
        const std::size_t ku = static_cast<std::size_t>(k);
        const float* pk = s.grid.memberProbabilities.data() + (ku * cells + r.point) * cu;
        if (k == selectedMember()) {
            r.selectedMember = k;
            r.selectedProbabilities.assign(pk, pk + cu);
        }
        if (ku < s.included.size() && s.included[ku]) {
            ++r.votes[static_cast<std::size_t>(std::max_element(pk, pk + cu) - pk)];
        }
    }
    return r;
}

QString BoundaryCanvas::readout(const QPointF& pos) const {
    const BoundaryReadout r = readoutAt(pos);
    if (!r.valid) {
        return {};
    }
    QStringList lines;
    lines << tr("x = %1, y = %2").arg(r.x, 0, 'f', 3).arg(r.y, 0, 'f', 3);
    if (!r.hasEnsemble) {
        lines << tr("no member switched on");
        return lines.join(QLatin1Char('\n'));
    }
    if (r.regression) {
        lines << tr("ensemble mean μ = %1").arg(formatValue(r.mean));
        lines << tr("total std σ = %1 (aleatoric %2, epistemic %3)")
                     .arg(formatValue(r.totalStd), formatValue(r.aleatoricStd),
                          formatValue(r.epistemicStd));
        return lines.join(QLatin1Char('\n'));
    }
    QStringList probs;
    QStringList votes;
    for (std::size_t c = 0; c < r.probabilities.size(); ++c) {
        probs << QString::number(r.probabilities[c], 'f', 3);
        votes << QStringLiteral("%1: %2").arg(c).arg(r.votes[c]);
    }
    lines << tr("ensemble p(class) = (%1) → class %2")
                 .arg(probs.join(QStringLiteral(", ")))
                 .arg(r.predicted);
    // The members' spread of the predicted class's probability.
    if (const SnapshotPtr& snap = m_snapshot; snap) {
        const std::size_t cu = r.probabilities.size();
        const int g = snap->run->gridSize;
        const std::size_t cells = static_cast<std::size_t>(g) * static_cast<std::size_t>(g);
        double lo = 1.0;
        double hi = 0.0;
        for (int k = 0; k < snap->grid.members; ++k) {
            const std::size_t ku = static_cast<std::size_t>(k);
            if (ku < snap->included.size() && snap->included[ku]) {
                const double v =
                    snap->grid.memberProbabilities[(ku * cells + r.point) * cu +
                                                   static_cast<std::size_t>(r.predicted)];
                lo = std::min(lo, v);
                hi = std::max(hi, v);
            }
        }
        lines << tr("members p(class %1): %2 … %3, std %4")
                     .arg(r.predicted)
                     .arg(lo, 0, 'f', 3)
                     .arg(hi, 0, 'f', 3)
                     .arg(snap->grid.ensemble.predictedStd[r.point], 0, 'f', 3);
    }
    lines << tr("entropy H[p] = %1 nats (aleatoric %2)")
                 .arg(r.entropy, 0, 'f', 3)
                 .arg(r.aleatoric, 0, 'f', 3);
    lines << tr("mutual information = %1 nats").arg(r.mutualInformation, 0, 'f', 3);
    lines << tr("member votes: %1 (disagreement %2)")
                 .arg(votes.join(QStringLiteral(", ")))
                 .arg(r.disagreement, 0, 'f', 3);
    if (r.selectedMember >= 0) {
        QStringList mp;
        for (double v : r.selectedProbabilities) {
            mp << QString::number(v, 'f', 3);
        }
        lines << tr("member #%1 p = (%2)").arg(r.selectedMember).arg(mp.join(QStringLiteral(", ")));
    }
    return lines.join(QLatin1Char('\n'));
}

}  // namespace ensemble::ui
