#include "controller/snapshot_builder.h"

#include <QCoreApplication>

#include <algorithm>
#include <cmath>
#include <limits>

#include "render/colormap.h"
#include "render/contour.h"
#include "render/plot_helpers.h"

namespace ensemble::ui {

QString liveSubsetNote(const RunInfo& run, int64_t rows) {
    if (rows >= run.testRows) {
        return {};
    }
    return QCoreApplication::translate("Snapshot", "live: %1 test images").arg(formatCount(rows));
}

QString quantityLabel(HeatQuantity quantity) {
    switch (quantity) {
        case HeatQuantity::Probability:
            return QStringLiteral("Mean probability");
        case HeatQuantity::Total:
            return QStringLiteral("Total uncertainty H[p]");
        case HeatQuantity::Aleatoric:
            return QStringLiteral("Aleatoric E_k H[P_k]");
        case HeatQuantity::Epistemic:
            return QStringLiteral("Epistemic (mutual information)");
        case HeatQuantity::MemberStd:
            return QStringLiteral("Member std of p(ŷ)");
        case HeatQuantity::Disagreement:
            return QStringLiteral("Vote disagreement");
    }
    return {};
}

QString quantityKey(HeatQuantity quantity) {
    switch (quantity) {
        case HeatQuantity::Probability:
            return QStringLiteral("probability");
        case HeatQuantity::Total:
            return QStringLiteral("total");
        case HeatQuantity::Aleatoric:
            return QStringLiteral("aleatoric");
        case HeatQuantity::Epistemic:
            return QStringLiteral("epistemic");
        case HeatQuantity::MemberStd:
            return QStringLiteral("std");
        case HeatQuantity::Disagreement:
            return QStringLiteral("disagreement");
    }
    return {};
}

QString quantityUnit(HeatQuantity quantity) {
    switch (quantity) {
        case HeatQuantity::Total:
        case HeatQuantity::Aleatoric:
        case HeatQuantity::Epistemic:
            return QStringLiteral("nats");
        case HeatQuantity::Probability:
        case HeatQuantity::MemberStd:
        case HeatQuantity::Disagreement:
            return {};
    }
    return {};
}

QString regressionQuantityLabel(HeatQuantity quantity) {
    switch (quantity) {
        case HeatQuantity::Probability:
            return QStringLiteral("Predictive mean μ");
        case HeatQuantity::Total:
            return QStringLiteral("Total std σ");
        case HeatQuantity::Aleatoric:
            return QStringLiteral("Aleatoric std √E_k σ_k²");
        case HeatQuantity::Epistemic:
            return QStringLiteral("Epistemic std √Var_k μ_k");
        case HeatQuantity::MemberStd:
        case HeatQuantity::Disagreement:
            return {};  // no regression grid of these (regressionHasQuantity)
    }
    return {};
}

bool regressionHasQuantity(HeatQuantity quantity) {
    return static_cast<int>(quantity) <= static_cast<int>(HeatQuantity::Epistemic);
}

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// A sequential map of `values` from 0 to their maximum (at least `minHigh`, so a nearly
// constant map does not blow rounding noise up to the full colour range).
HeatImage sequentialImage(const std::vector<double>& values, int size, double minHigh) {
    HeatImage h;
    h.image = QImage(size, size, QImage::Format_RGB32);
    double lo = std::numeric_limits<double>::infinity();
    double hi = -std::numeric_limits<double>::infinity();
    for (double v : values) {
        if (std::isfinite(v)) {
            lo = std::min(lo, v);
            hi = std::max(hi, v);
        }
    }
    if (!(lo <= hi)) {
        lo = hi = 0.0;
    }
    h.dataMin = lo;
    h.dataMax = hi;
    h.low = 0.0;
    h.high = std::max(hi, minHigh);
    const double span = h.high - h.low;
    for (int r = 0; r < size; ++r) {
        auto* line = reinterpret_cast<QRgb*>(h.image.scanLine(r));
        for (int c = 0; c < size; ++c) {
            const double v = values[static_cast<std::size_t>(r) * size + c];
            line[c] = sequentialColor(span > 0 ? (v - h.low) / span : 0.0);
        }
    }
    return h;
}

// A sequential map of `values` over their own range [min, max] (a regression mean, which may
// be negative).
HeatImage rangeImage(const std::vector<double>& values, int size) {
    HeatImage h = sequentialImage(values, size, 0.0);
    double lo = h.dataMin;
    double hi = h.dataMax;
    if (!(hi > lo)) {
        hi = lo + 1.0;
    }
    h.low = lo;
    h.high = hi;
    for (int r = 0; r < size; ++r) {
        auto* line = reinterpret_cast<QRgb*>(h.image.scanLine(r));
        for (int c = 0; c < size; ++c) {
            const double v = values[static_cast<std::size_t>(r) * size + c];
            line[c] = sequentialColor((v - lo) / (hi - lo));
        }
    }
    return h;
}

std::vector<double> squareRoots(const std::vector<double>& v) {
    std::vector<double> out(v.size());
    for (std::size_t i = 0; i < v.size(); ++i) {
        out[i] = std::sqrt(std::max(0.0, v[i]));
    }
    return out;
}

std::vector<int> includedIndices(const std::vector<uint8_t>& included) {
    std::vector<int> members;
    for (std::size_t k = 0; k < included.size(); ++k) {
        if (included[k]) {
            members.push_back(static_cast<int>(k));
        }
    }
    return members;
}

// Member or ensemble class map: diverging p(class 1) for two classes, else class colour by
// confidence. `probs` points at the first class of point 0; points are `classes` apart.
template <typename T>
QImage classImage(const T* probs, int size, int classes) {
    QImage image(size, size, QImage::Format_RGB32);
    for (int r = 0; r < size; ++r) {
        auto* line = reinterpret_cast<QRgb*>(image.scanLine(r));
        for (int c = 0; c < size; ++c) {
            const T* p = probs + (static_cast<std::size_t>(r) * size + c) * classes;
            if (classes == 2) {
                line[c] = divergingColor(static_cast<double>(p[1]));
            } else {
                const int best = static_cast<int>(std::max_element(p, p + classes) - p);
                line[c] = classConfidenceColor(best, static_cast<double>(p[best]), classes);
            }
        }
    }
    return image;
}

}  // namespace

HeatImage sequentialHeatImage(const std::vector<double>& values, int size, double minHigh) {
    return sequentialImage(values, size, minHigh);
}

HeatImage rangeHeatImage(const std::vector<double>& values, int size) {
    return rangeImage(values, size);
}

void renderGrid(Snapshot& s) {
    const GridEvaluation& g = s.grid;
    const int size = g.size;
    const int classes = g.classes;
    const std::size_t cells = static_cast<std::size_t>(size) * size;
    if (s.hasEnsemble) {
        const PointStatistics& e = g.ensemble;
        HeatImage prob;
        prob.image = classImage(e.probabilities.data(), size, classes);
        prob.low = classes == 2 ? 0.0 : 1.0 / classes;
        prob.high = 1.0;
        if (classes == 2) {
            auto [mn, mx] = std::minmax_element(
                e.probabilities.begin(), e.probabilities.end());  // both classes: [1-max, max]
            prob.dataMin = *mn;
            prob.dataMax = *mx;
        } else {
            auto [mn, mx] = std::minmax_element(e.confidence.begin(), e.confidence.end());
            prob.dataMin = *mn;
            prob.dataMax = *mx;
        }
        s.heat[static_cast<int>(HeatQuantity::Probability)] = prob;
        const double logC = std::log(static_cast<double>(classes));
        s.heat[static_cast<int>(HeatQuantity::Total)] = sequentialImage(e.total, size, 0.05 * logC);
        s.heat[static_cast<int>(HeatQuantity::Aleatoric)] =
            sequentialImage(e.aleatoric, size, 0.05 * logC);
        s.heat[static_cast<int>(HeatQuantity::Epistemic)] =
            sequentialImage(e.epistemic, size, 0.01 * logC);
        s.heat[static_cast<int>(HeatQuantity::MemberStd)] =
            sequentialImage(e.predictedStd, size, 0.01);
        s.heat[static_cast<int>(HeatQuantity::Disagreement)] =
            sequentialImage(e.disagreement, size, 0.01);
        s.ensembleContour = joinSegments(decisionBoundary(e.probabilities.data(), size, classes));
    }
    s.memberImages.resize(static_cast<std::size_t>(g.members));
    s.memberContours.resize(static_cast<std::size_t>(g.members));
    for (int k = 0; k < g.members; ++k) {
        const float* probs =
            g.memberProbabilities.data() + static_cast<std::size_t>(k) * cells * classes;
        s.memberImages[static_cast<std::size_t>(k)] = classImage(probs, size, classes);
        if (!s.diverged[static_cast<std::size_t>(k)]) {
            s.memberContours[static_cast<std::size_t>(k)] =
                joinSegments(decisionBoundary(probs, size, classes));
        }
    }
}

void measureRegressionTest(Snapshot& s, const MemberPredictions& test) {
    s.regression = RegressionReport{};
    if (!s.hasEnsemble || test.rows == 0) {
        return;
    }
    s.regression = evaluateRegression(test, s.run->evalTest.target, s.included, s.run->targetMean,
                                      s.run->targetStd);
}

void measureRegressionCurve(Snapshot& s, const MemberPredictions& curve) {
    s.curveMembers = memberGaussians(curve, s.run->targetMean, s.run->targetStd);
    s.curve = RegressionPoints{};
    if (s.hasEnsemble) {
        s.curve = mixturePoints(s.curveMembers, includedIndices(s.included));
    }
}

void renderRegressionGrid(Snapshot& s, const MemberPredictions& grid) {
    const int size = s.run->gridSize;
    s.gridRegression = RegressionPoints{};
    if (!s.hasEnsemble) {
        return;
    }
    const MemberGaussians g = memberGaussians(grid, s.run->targetMean, s.run->targetStd);
    s.gridRegression = mixturePoints(g, includedIndices(s.included));
    const RegressionPoints& e = s.gridRegression;
    const std::vector<double> total = squareRoots(e.variance);
    // A floor for the std maps: a hundredth of the target's std, so a nearly flat map does not
    // blow rounding noise up to the whole colour range.
    const double floor = 0.01 * s.run->targetStd;
    s.heat[static_cast<int>(HeatQuantity::Probability)] = rangeImage(e.mean, size);
    s.heat[static_cast<int>(HeatQuantity::Total)] = sequentialImage(total, size, floor);
    s.heat[static_cast<int>(HeatQuantity::Aleatoric)] =
        sequentialImage(squareRoots(e.aleatoric), size, floor);
    s.heat[static_cast<int>(HeatQuantity::Epistemic)] =
        sequentialImage(squareRoots(e.epistemic), size, floor);
}

ClassificationMetrics meanOfMembers(const std::vector<ClassificationMetrics>& members,
                                    const std::vector<uint8_t>& included) {
    ClassificationMetrics m;
    int n = 0;
    for (std::size_t k = 0; k < members.size(); ++k) {
        if (k < included.size() && !included[k]) {
            continue;
        }
        const ClassificationMetrics& x = members[k];
        m.rows = x.rows;
        m.accuracy += x.accuracy;
        m.nll += x.nll;
        m.brier += x.brier;
        m.ece += x.ece;
        m.mce += x.mce;
        ++n;
    }
    if (n == 0) {
        m.accuracy = m.nll = m.brier = m.ece = m.mce = kNaN;
        return m;
    }
    m.accuracy /= n;
    m.nll /= n;
    m.brier /= n;
    m.ece /= n;
    m.mce /= n;
    return m;
}

void measureSizeCurve(Snapshot& s, const MemberPredictions& test,
                      const std::vector<int32_t>& labels, uint64_t seed) {
    s.sizeCurve.clear();
    s.sizeCurveStep = s.step;
    if (s.hasEnsemble && test.rows > 0) {
        // Fewer random subsets for large ensembles: the cost grows with K'^2.
        const int subsets = s.includedCount > 32 ? 6 : kSizeCurveSubsets;
        s.sizeCurve = ensembleSizeCurve(test, labels, s.included, subsets, seed);
    }
}

void measureTest(Snapshot& s, const MemberPredictions& test, const std::vector<int32_t>& labels) {
    const int members = test.members;
    const int classes = test.classes;
    const int64_t rows = test.rows;
    s.memberMetrics.resize(static_cast<std::size_t>(members));
    s.memberPredicted.assign(static_cast<std::size_t>(members) * rows, 0);
    for (int k = 0; k < members; ++k) {
        s.memberMetrics[static_cast<std::size_t>(k)] = memberClassificationMetrics(test, labels, k);
        const float* base = test.logProbs.data() + static_cast<std::size_t>(k) * rows * classes;
        int32_t* out = s.memberPredicted.data() + static_cast<std::size_t>(k) * rows;
        for (int64_t i = 0; i < rows; ++i) {
            const float* p = base + i * classes;
            out[i] = static_cast<int32_t>(std::max_element(p, p + classes) - p);
        }
    }
    s.meanMember = meanOfMembers(s.memberMetrics, s.included);
    s.confusion.assign(static_cast<std::size_t>(classes) * classes, 0);
    if (!s.hasEnsemble || rows == 0) {
        s.ensembleMetrics = ensembleClassificationMetrics(test, labels, s.included);
        return;
    }
    s.test = pointStatistics(test, s.included, labels);
    s.ensembleMetrics = classificationMetrics(s.test);
    s.reliability = topLabelCalibration(s.test);
    for (int64_t i = 0; i < rows; ++i) {
        const int y = labels[static_cast<std::size_t>(i)];
        const int p = s.test.predicted[static_cast<std::size_t>(i)];
        ++s.confusion[static_cast<std::size_t>(y) * classes + p];
    }
}

}  // namespace ensemble::ui
