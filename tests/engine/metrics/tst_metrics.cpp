// Tests of engine/metrics against hand-computed small cases. Every expected number is worked out
// in a comment next to the check; inputs are probabilities stored as float log-probabilities,
// so hand values are compared with kFloatInput.

#include <QTemporaryDir>
#include <QtTest>

#include <omp.h>

#include <cmath>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "core/errors.h"
#include "math/philox.h"
#include "metrics/calibration.h"
#include "metrics/grid.h"
#include "metrics/metrics.h"
#include "metrics/ood.h"
#include "metrics/out_of_bag.h"
#include "metrics/point_statistics.h"
#include "metrics/regression.h"
#include "metrics/report.h"
#include "metrics/size_curve.h"
#include "metrics/temperature.h"
#include "registry/registry.h"
#include "support/test_support.h"
#include "train/trainer_report.h"

using namespace ensemble;

namespace {

using test::kExactDouble;
using test::kFittedParameter;
using test::kFloatInput;

void compareMetrics(const ClassificationMetrics& a, const ClassificationMetrics& b, double tol) {
    QCOMPARE(a.rows, b.rows);
    ENSEMBLE_COMPARE_NEAR_SCALED(a.accuracy, b.accuracy, tol);
    ENSEMBLE_COMPARE_NEAR_SCALED(a.nll, b.nll, tol);
    ENSEMBLE_COMPARE_NEAR_SCALED(a.brier, b.brier, tol);
    ENSEMBLE_COMPARE_NEAR_SCALED(a.ece, b.ece, tol);
    ENSEMBLE_COMPARE_NEAR_SCALED(a.mce, b.mce, tol);
}

// Predictions from probabilities given member by member, row by row: probs[(k*N + i)*C + c].
MemberPredictions fromProbabilities(int members, int64_t rows, int classes,
                                    const std::vector<double>& probs) {
    MemberPredictions p;
    p.members = members;
    p.rows = rows;
    p.classes = classes;
    for (double v : probs) {
        p.logProbs.push_back(static_cast<float>(std::log(v)));
    }
    return p;
}

// Binary entropy in nats.
double h2(double q) {
    return -(q * std::log(q) + (1.0 - q) * std::log(1.0 - q));
}

// Random log-softmax rows from Philox logits of scale `scale`: reproducible test inputs.
MemberPredictions randomPredictions(int members, int64_t rows, int classes, uint64_t seed,
                                    double scale = 2.0) {
    MemberPredictions p;
    p.members = members;
    p.rows = rows;
    p.classes = classes;
    p.logProbs.resize(static_cast<std::size_t>(members) * rows * classes);
    std::vector<double> z(static_cast<std::size_t>(classes));
    for (int k = 0; k < members; ++k) {
        for (int64_t i = 0; i < rows; ++i) {
            double m = -1e300;
            for (int c = 0; c < classes; ++c) {
                const Philox4x32 d = philoxDraw(seed, RngPurpose::Subset, static_cast<uint32_t>(k),
                                                static_cast<uint64_t>(i), static_cast<uint32_t>(c));
                z[static_cast<std::size_t>(c)] =
                    scale * (2.0 * uniformOpenDouble(d.v[0], d.v[1]) - 1.0);
                m = std::max(m, z[static_cast<std::size_t>(c)]);
            }
            double s = 0.0;
            for (double v : z) {
                s += std::exp(v - m);
            }
            for (int c = 0; c < classes; ++c) {
                p.logProbs[(static_cast<std::size_t>(k) * rows + i) * classes + c] =
                    static_cast<float>(z[static_cast<std::size_t>(c)] - m - std::log(s));
            }
        }
    }
    return p;
}

std::vector<int32_t> randomLabels(int64_t rows, int classes, uint64_t seed) {
    std::vector<int32_t> y(static_cast<std::size_t>(rows));
    for (int64_t i = 0; i < rows; ++i) {
        const Philox4x32 d = philoxDraw(seed, RngPurpose::Split, 0, static_cast<uint64_t>(i));
        y[static_cast<std::size_t>(i)] =
            static_cast<int32_t>(uniformIndex(d.v[0], d.v[1], static_cast<uint32_t>(classes)));
    }
    return y;
}

// Case A: two members, two classes, four points.
//   member 0: [0.90 0.10] [0.54 0.46] [0.24 0.76] [0.30 0.70]
//   member 1: [0.52 0.48] [0.20 0.80] [0.10 0.90] [0.44 0.56]
//   labels:    0           1           1           0
//   ensemble: [0.71 0.29] [0.37 0.63] [0.17 0.83] [0.37 0.63]
//   predicted: 0           1           1           1   (correct: yes yes yes no)
// Every ensemble confidence (0.71, 0.63, 0.83) lies well inside a 1/15-wide bin.
MemberPredictions caseA() {
    return fromProbabilities(2, 4, 2,
                             {0.90, 0.10, 0.54, 0.46, 0.24, 0.76, 0.30, 0.70,  //
                              0.52, 0.48, 0.20, 0.80, 0.10, 0.90, 0.44, 0.56});
}
const std::vector<int32_t> kLabelsA = {0, 1, 1, 0};

// The CUDA backend's predictUncertainty, run on the host: the CPU backend's log-probabilities,
// then what uncertainty_kernels.cu does per entry and per point (every member's probability in
// double rounded to float; the measures with nothing stored per member, the second pass
// recomputing its exp). Counts its calls, so a test sees the grid took this path.
class EmulatedDeviceMeasures final : public Backend {
  public:
    explicit EmulatedDeviceMeasures(int* calls) : m_calls(calls) {}
    std::string name() const override { return "emulated " + m_cpu.name(); }
    void bind(const TrainingProblem& problem) override {
        m_classes = problem.layout.classes();
        m_members = problem.layout.members();
        m_cpu.bind(problem);
    }
    void setRules(const std::vector<OptimizerRule>& rules) override { m_cpu.setRules(rules); }
    void setParameters(const float* params) override { m_cpu.setParameters(params); }
    void parameters(float* out) override { m_cpu.parameters(out); }
    void step(uint64_t step, const uint8_t* active, float* losses) override {
        m_cpu.step(step, active, losses);
    }
    void predictLogProbs(const float* x, int64_t rows, float* out) override {
        m_cpu.predictLogProbs(x, rows, out);
    }
    bool measuresUncertainty() const override { return true; }
    bool predictUncertainty(const float* x, int64_t rows, const std::vector<int>& members,
                            PointUncertainties& out) override {
        ++*m_calls;
        const std::size_t c = static_cast<std::size_t>(m_classes);
        const std::size_t n = static_cast<std::size_t>(rows);
        std::vector<float> logProbs(static_cast<std::size_t>(m_members) * n * c);
        m_cpu.predictLogProbs(x, rows, logProbs.data());
        out.rows = rows;
        out.classes = m_classes;
        out.members = m_members;
        out.memberProbabilities.resize(logProbs.size());
        for (std::size_t j = 0; j < logProbs.size(); ++j) {
            out.memberProbabilities[j] =
                static_cast<float>(hd::exp(static_cast<double>(logProbs[j])));
        }
        out.probabilities.resize(n * c);
        out.points.resize(n);
        for (std::size_t i = 0; i < n; ++i) {
            const auto logProb = [&](int u, int k) {
                return logProbs
                    [(static_cast<std::size_t>(members[static_cast<std::size_t>(u)]) * n + i) * c +
                     static_cast<std::size_t>(k)];
            };
            const auto keep = [](int, int, double) {};
            const auto again = [&](int u, int k) {
                return hd::exp(static_cast<double>(logProb(u, k)));
            };
            out.points[i] = pointUncertainty(static_cast<int>(members.size()), m_classes, logProb,
                                             keep, again, out.probabilities.data() + i * c);
        }
        return true;
    }

  private:
    CpuBackend m_cpu{1};
    int* m_calls;
    int m_classes = 0;
    int m_members = 0;
};
}  // namespace

class TestMetrics : public QObject {
    Q_OBJECT

  private Q_SLOTS:
    void calibrationBinEdges();
    void perfectlyCalibratedBinsGiveZeroEce();
    void calibrationHandCase();
    void ensembleScoresHandCase();
    void memberScoresHandCase();
    void lossAndAccuracyHandCase();
    void uncertaintyHandCase();
    void positiveClassReliability();
    void gibbsAndDiversity();
    void diversityThreeMembers();
    void certainAndWrongMember();
    void stableEnsembleNll();
    void identicalMembersEqualAnyMember();
    void excludedMembersAreIgnored();
    void aurocAndFpr();
    void oodMetricsSeparated();
    void oobHandCase();
    void oobRowsAreExactlyMultiplicityZero();
    void sizeCurve();
    void temperatureHandCase();
    void temperatureKeepsAccuracyAndNll();
    void gridShapeAndBounds();
    void sameResultsForAnyThreadCount();
    void trainerReportAndGrid();
    void deviceStyleMeasuresEqualHostOnes();
    void gridTakesBackendMeasures();
    void reportLayout();
    void csvWriters();
    void regressionMixtureHandCase();
    void regressionMetricsMatchIndependentComputation();
    void regressionZeroSigmaGivesNulls();
    void regressionTrainerReport();
};

void TestMetrics::calibrationBinEdges() {
    // Bins (j/15, (j+1)/15]; 0 goes to the first bin, 1 to the last.
    QCOMPARE(calibrationBin(0.0, 15), 0);
    QCOMPARE(calibrationBin(1.0 / 15.0, 15), 0);  // upper edge belongs to the bin
    QCOMPARE(calibrationBin(std::nextafter(1.0 / 15.0, 1.0), 15), 1);
    QCOMPARE(calibrationBin(0.5, 15), 7);  // 7.5 / 15
    QCOMPARE(calibrationBin(14.0 / 15.0, 15), 13);
    QCOMPARE(calibrationBin(1.0, 15), 14);
    for (int j = 1; j <= 15; ++j) {
        const double edge = static_cast<double>(j) / 15.0;
        QCOMPARE(calibrationBin(edge, 15), j - 1);
    }
}

void TestMetrics::perfectlyCalibratedBinsGiveZeroEce() {
    // Ten points at confidence 0.7 with 7 correct, ten at 0.9 with 9 correct, four at 0.5 with
    // 2 correct: every bin's accuracy equals its confidence, so ECE = MCE = 0.
    std::vector<double> conf;
    std::vector<uint8_t> ok;
    for (int i = 0; i < 10; ++i) {
        conf.push_back(0.7);
        ok.push_back(i < 7);
        conf.push_back(0.9);
        ok.push_back(i < 9);
    }
    for (int i = 0; i < 4; ++i) {
        conf.push_back(0.5);
        ok.push_back(i < 2);
    }
    const Calibration c = calibrationFrom(conf, ok, 15);
    ENSEMBLE_COMPARE_NEAR_SCALED(c.ece, 0.0, kExactDouble);
    ENSEMBLE_COMPARE_NEAR_SCALED(c.mce, 0.0, kExactDouble);
    QCOMPARE(c.rows, int64_t{24});
    QCOMPARE(c.bins.size(), std::size_t{15});
    QCOMPARE(c.bins[10].count, int64_t{10});    // 0.7 in (10/15, 11/15]
    QCOMPARE(c.bins[13].count, int64_t{10});    // 0.9 in (13/15, 14/15]
    QCOMPARE(c.bins[7].count, int64_t{4});      // 0.5 in (7/15, 8/15]
    QVERIFY(std::isnan(c.bins[0].confidence));  // empty bins: NaN, count 0
    QCOMPARE(c.bins[0].count, int64_t{0});
}

void TestMetrics::calibrationHandCase() {
    // conf 0.95 correct, 0.95 wrong, 0.55 correct, 0.25 wrong.
    // bin 14 (0.9333, 1]: n 2, conf 0.95, acc 0.5, gap 0.45
    // bin 8 (0.5333, 0.6]: n 1, conf 0.55, acc 1, gap 0.45
    // bin 3 (0.2, 0.2667]: n 1, conf 0.25, acc 0, gap 0.25
    // ECE = 2/4*0.45 + 1/4*0.45 + 1/4*0.25 = 0.225 + 0.1125 + 0.0625 = 0.4; MCE = 0.45
    const Calibration c = calibrationFrom({0.95, 0.95, 0.55, 0.25}, {1, 0, 1, 0}, 15);
    ENSEMBLE_COMPARE_NEAR_SCALED(c.ece, 0.4, kExactDouble);
    ENSEMBLE_COMPARE_NEAR_SCALED(c.mce, 0.45, kExactDouble);
    QCOMPARE(c.bins[14].count, int64_t{2});
    ENSEMBLE_COMPARE_NEAR_SCALED(c.bins[14].accuracy, 0.5, kExactDouble);
    ENSEMBLE_COMPARE_NEAR_SCALED(c.bins[14].confidence, 0.95, kExactDouble);
    ENSEMBLE_COMPARE_NEAR_SCALED(c.bins[8].lower, 8.0 / 15.0, kExactDouble);
    ENSEMBLE_COMPARE_NEAR_SCALED(c.bins[8].upper, 9.0 / 15.0, kExactDouble);
    QCOMPARE(c.bins[3].count, int64_t{1});
}

void TestMetrics::ensembleScoresHandCase() {
    const MemberPredictions p = caseA();
    const ClassificationMetrics m = ensembleClassificationMetrics(p, kLabelsA, {});
    // accuracy: 3 of 4 correct.
    ENSEMBLE_COMPARE_NEAR_SCALED(m.accuracy, 0.75, kExactDouble);
    // NLL = -(ln .71 + ln .63 + ln .83 + ln .37)/4
    //     = (0.342490 + 0.462035 + 0.186330 + 0.994252)/4 = 0.496277
    ENSEMBLE_COMPARE_NEAR_SCALED(
        m.nll, -(std::log(0.71) + std::log(0.63) + std::log(0.83) + std::log(0.37)) / 4,
        kFloatInput);
    ENSEMBLE_COMPARE_NEAR_SCALED(m.nll, 0.496277, 1e-6);
    // Brier (sum over classes): 2*.29^2 + 2*.37^2 + 2*.17^2 + (.37-1)^2+.63^2
    //     = 0.1682 + 0.2738 + 0.0578 + 0.7938 = 1.2936; mean 0.3234
    ENSEMBLE_COMPARE_NEAR_SCALED(m.brier, 0.3234, kFloatInput);
    // ECE: bin 9 holds 0.63 (correct) and 0.63 (wrong): gap |0.5 - 0.63| = 0.13, weight 1/2;
    // bin 10 holds 0.71 correct: gap 0.29, weight 1/4; bin 12 holds 0.83 correct: gap 0.17.
    // ECE = 0.065 + 0.0725 + 0.0425 = 0.18; MCE = 0.29.
    ENSEMBLE_COMPARE_NEAR_SCALED(m.ece, 0.18, kFloatInput);
    ENSEMBLE_COMPARE_NEAR_SCALED(m.mce, 0.29, kFloatInput);
    // The loss and accuracy alone (what the trainer tracks): the same hand values.
    const SplitMetrics t = ensembleMetrics(p, kLabelsA, {1, 1});
    ENSEMBLE_COMPARE_NEAR_SCALED(t.loss, 0.496277, 1e-6);
    ENSEMBLE_COMPARE_NEAR_SCALED(t.accuracy, 0.75, kExactDouble);
}

void TestMetrics::memberScoresHandCase() {
    const MemberPredictions p = caseA();
    const ClassificationMetrics m0 = memberClassificationMetrics(p, kLabelsA, 0);
    // member 0 predicts 0 0 1 1: correct 1 0 1 0.
    ENSEMBLE_COMPARE_NEAR_SCALED(m0.accuracy, 0.5, kExactDouble);
    // NLL = -(ln .9 + ln .46 + ln .76 + ln .3)/4 = (0.105361+0.776529+0.274437+1.203973)/4
    //     = 0.590075
    ENSEMBLE_COMPARE_NEAR_SCALED(
        m0.nll, -(std::log(0.9) + std::log(0.46) + std::log(0.76) + std::log(0.3)) / 4,
        kFloatInput);
    // Brier: 2*.1^2 + 2*.54^2 + 2*.24^2 + 2*.7^2 = 0.02 + 0.5832 + 0.1152 + 0.98 = 1.6984
    // -> 0.4246 (a wrong point's error is its full probability mass off the label).
    ENSEMBLE_COMPARE_NEAR_SCALED(m0.brier, 0.4246, kFloatInput);
    // ECE: conf 0.9 ok (bin 13, gap 0.1), 0.54 wrong (bin 8, gap 0.54), 0.76 ok (bin 11, gap
    // 0.24), 0.7 wrong (bin 10, gap 0.7): (0.1 + 0.54 + 0.24 + 0.7)/4 = 0.395; MCE 0.7.
    ENSEMBLE_COMPARE_NEAR_SCALED(m0.ece, 0.395, kFloatInput);
    ENSEMBLE_COMPARE_NEAR_SCALED(m0.mce, 0.7, kFloatInput);
    const ClassificationMetrics m1 = memberClassificationMetrics(p, kLabelsA, 1);
    // member 1 predicts 0 1 1 1: correct 1 1 1 0; NLL = (0.653926+0.223144+0.105361+0.820981)/4
    ENSEMBLE_COMPARE_NEAR_SCALED(m1.accuracy, 0.75, kExactDouble);
    ENSEMBLE_COMPARE_NEAR_SCALED(m1.nll, 0.450853, 1e-6);
    // The loss and accuracy alone (what the trainer tracks): the same hand values.
    ENSEMBLE_COMPARE_NEAR_SCALED(memberMetrics(p, kLabelsA, 1).loss, 0.450853, 1e-6);
    ENSEMBLE_COMPARE_NEAR_SCALED(memberMetrics(p, kLabelsA, 1).accuracy, 0.75, kExactDouble);
    ENSEMBLE_COMPARE_NEAR_SCALED(memberMetrics(p, kLabelsA, 0).accuracy, 0.5, kExactDouble);
}

void TestMetrics::lossAndAccuracyHandCase() {
    // ensembleMetrics and memberMetrics (the trainer's loss and accuracy), hand-computed: two
    // members, two rows, two classes.
    MemberPredictions p;
    p.members = 2;
    p.rows = 2;
    p.classes = 2;
    // member 0: row 0 (0.9, 0.1), row 1 (0.4, 0.6); member 1: row 0 (0.5, 0.5), row 1 (0.2, 0.8)
    for (double v : {0.9, 0.1, 0.4, 0.6, 0.5, 0.5, 0.2, 0.8}) {
        p.logProbs.push_back(static_cast<float>(std::log(v)));
    }
    const std::vector<int32_t> labels{0, 1};
    // ensemble row 0: (0.7, 0.3) label 0; row 1: (0.3, 0.7) label 1. NLL = -ln 0.7, acc = 1.
    const SplitMetrics e = ensembleMetrics(p, labels, {1, 1});
    ENSEMBLE_COMPARE_NEAR_SCALED(e.loss, -std::log(0.7), 1e-6);
    ENSEMBLE_COMPARE_NEAR_SCALED(e.accuracy, 1.0, 0.0);
    // member 0 alone: NLL = -(ln 0.9 + ln 0.6)/2.
    const SplitMetrics m0 = memberMetrics(p, labels, 0);
    ENSEMBLE_COMPARE_NEAR_SCALED(m0.loss, -(std::log(0.9) + std::log(0.6)) / 2, 1e-6);
    // Leaving member 1 out gives member 0's numbers.
    const SplitMetrics only0 = ensembleMetrics(p, labels, {1, 0});
    ENSEMBLE_COMPARE_NEAR_SCALED(only0.loss, m0.loss, 1e-6);
    // Both at once; member 1 alone: NLL = -(ln 0.5 + ln 0.8)/2, rows 0 and 1 both correct
    // (0.5/0.5 is a tie, which goes to class 0).
    const SplitEvaluation split = evaluateSplit(p, labels, {1, 1});
    QCOMPARE(split.members.size(), std::size_t{2});
    ENSEMBLE_COMPARE_NEAR_SCALED(split.ensemble.loss, -std::log(0.7), 1e-6);
    ENSEMBLE_COMPARE_NEAR_SCALED(split.members[0].loss, m0.loss, 0.0);
    ENSEMBLE_COMPARE_NEAR_SCALED(split.members[1].loss, -(std::log(0.5) + std::log(0.8)) / 2, 1e-6);
    ENSEMBLE_COMPARE_NEAR_SCALED(split.members[1].accuracy, 1.0, 0.0);
}

void TestMetrics::uncertaintyHandCase() {
    const MemberPredictions p = caseA();
    const PointStatistics s = pointStatistics(p, std::vector<uint8_t>{}, kLabelsA);
    QCOMPARE(s.rows, int64_t{4});
    QCOMPARE(s.members, 2);
    QCOMPARE(s.predicted, (std::vector<int32_t>{0, 1, 1, 1}));
    // Point 0: H[p] = h2(0.71) = 0.602152; aleatoric = (h2(.9) + h2(.52))/2
    // = (0.325083 + 0.692347)/2 = 0.508715; epistemic = 0.093437.
    ENSEMBLE_COMPARE_NEAR_SCALED(s.total[0], h2(0.71), kFloatInput);
    ENSEMBLE_COMPARE_NEAR_SCALED(s.aleatoric[0], (h2(0.9) + h2(0.52)) / 2, kFloatInput);
    ENSEMBLE_COMPARE_NEAR_SCALED(s.epistemic[0], h2(0.71) - (h2(0.9) + h2(0.52)) / 2, kFloatInput);
    ENSEMBLE_COMPARE_NEAR_SCALED(s.epistemic[0], 0.093437, 1e-6);
    // Point 1: ensemble class 1; member 0 votes 0, member 1 votes 1: disagreement 0.5.
    ENSEMBLE_COMPARE_NEAR_SCALED(s.disagreement[0], 0.0, kExactDouble);
    ENSEMBLE_COMPARE_NEAR_SCALED(s.disagreement[1], 0.5, kExactDouble);
    ENSEMBLE_COMPARE_NEAR_SCALED(s.disagreement[2], 0.0, kExactDouble);
    ENSEMBLE_COMPARE_NEAR_SCALED(s.disagreement[3], 0.0, kExactDouble);
    // Std over members of P_k(ensemble class): |a - b|/2: 0.19, 0.17, 0.07, 0.07.
    ENSEMBLE_COMPARE_NEAR_SCALED(s.predictedStd[0], 0.19, kFloatInput);
    ENSEMBLE_COMPARE_NEAR_SCALED(s.predictedStd[1], 0.17, kFloatInput);
    ENSEMBLE_COMPARE_NEAR_SCALED(s.predictedStd[2], 0.07, kFloatInput);
    ENSEMBLE_COMPARE_NEAR_SCALED(s.predictedStd[3], 0.07, kFloatInput);
    // Point 3: H[p] = h2(.37); aleatoric (h2(.3) + h2(.44))/2.
    ENSEMBLE_COMPARE_NEAR_SCALED(s.total[3], h2(0.37), kFloatInput);
    ENSEMBLE_COMPARE_NEAR_SCALED(s.aleatoric[3], (h2(0.3) + h2(0.44)) / 2, kFloatInput);
    // Summaries are plain means.
    const UncertaintySummary u = summarizeUncertainty(s);
    ENSEMBLE_COMPARE_NEAR_SCALED(u.disagreementMean, 0.125, kExactDouble);
    ENSEMBLE_COMPARE_NEAR_SCALED(u.entropyMean, (h2(0.71) + h2(0.63) + h2(0.83) + h2(0.37)) / 4,
                                 kFloatInput);
    ENSEMBLE_COMPARE_NEAR_SCALED(u.predictedStdMean, (0.19 + 0.17 + 0.07 + 0.07) / 4, kFloatInput);
    // Mutual information is never negative and total = aleatoric + epistemic.
    for (int i = 0; i < 4; ++i) {
        QVERIFY(s.epistemic[static_cast<std::size_t>(i)] >= 0.0);
        ENSEMBLE_COMPARE_NEAR_SCALED(
            s.total[static_cast<std::size_t>(i)],
            s.aleatoric[static_cast<std::size_t>(i)] + s.epistemic[static_cast<std::size_t>(i)],
            kExactDouble);
    }
}

void TestMetrics::positiveClassReliability() {
    const MemberPredictions p = caseA();
    const PointStatistics s = pointStatistics(p, std::vector<uint8_t>{}, kLabelsA);
    // p(class 1) = 0.29 (y=0), 0.63 (y=1), 0.83 (y=1), 0.63 (y=0).
    // bin 4 (0.2667, 0.3333]: 0.29, freq 0 -> gap 0.29
    // bin 9 (0.6, 0.6667]: 0.63 twice, freq 0.5 -> gap 0.13
    // bin 12 (0.8, 0.8667]: 0.83, freq 1 -> gap 0.17
    // ECE = 0.29/4 + 0.13/2 + 0.17/4 = 0.0725 + 0.065 + 0.0425 = 0.18; MCE 0.29
    const Calibration c = positiveClassCalibration(s, kLabelsA);
    QCOMPARE(c.bins[4].count, int64_t{1});
    QCOMPARE(c.bins[9].count, int64_t{2});
    QCOMPARE(c.bins[12].count, int64_t{1});
    ENSEMBLE_COMPARE_NEAR_SCALED(c.bins[9].accuracy, 0.5, kExactDouble);
    ENSEMBLE_COMPARE_NEAR_SCALED(c.ece, 0.18, kFloatInput);
    ENSEMBLE_COMPARE_NEAR_SCALED(c.mce, 0.29, kFloatInput);
}

void TestMetrics::gibbsAndDiversity() {
    const MemberPredictions p = caseA();
    // Gibbs = (0.590075 + 0.450853)/2 = 0.520464 >= ensemble NLL 0.496277.
    const double g = gibbsNll(p, kLabelsA, {});
    ENSEMBLE_COMPARE_NEAR_SCALED(g, (0.590075 + 0.450853) / 2, 1e-6);
    QVERIFY(g >= ensembleClassificationMetrics(p, kLabelsA, {}).nll);
    // The two members' predictions (0 0 1 1 vs 0 1 1 1) differ on one point in four.
    ENSEMBLE_COMPARE_NEAR_SCALED(diversity(p, {}), 0.25, kExactDouble);
    ENSEMBLE_COMPARE_NEAR_SCALED(diversity(p, {1, 0}), 0.0, kExactDouble);  // one member: no pairs
}

void TestMetrics::diversityThreeMembers() {
    // Three members, three classes, three points; member votes per point:
    //   point 0: 0 0 1 -> pairs (01 same, 02 differ, 12 differ) = 2/3
    //   point 1: 0 1 2 -> 3/3 = 1
    //   point 2: 2 2 2 -> 0
    // diversity = (2/3 + 1 + 0)/3 = 5/9.
    auto onehot = [](int c) {
        std::vector<double> r(3, 0.1);
        r[static_cast<std::size_t>(c)] = 0.8;
        return r;
    };
    const int votes[3][3] = {{0, 0, 2}, {0, 1, 2}, {1, 2, 2}};  // [member][point]
    std::vector<double> probs;
    for (int k = 0; k < 3; ++k) {
        for (int i = 0; i < 3; ++i) {
            const std::vector<double> r = onehot(votes[k][i]);
            probs.insert(probs.end(), r.begin(), r.end());
        }
    }
    const MemberPredictions p = fromProbabilities(3, 3, 3, probs);
    ENSEMBLE_COMPARE_NEAR_SCALED(diversity(p, {}), 5.0 / 9.0, kExactDouble);
    const PointStatistics s = pointStatistics(p, std::vector<uint8_t>{});
    // Point 0: ensemble p = (0.8+0.8+0.1, 0.1+0.1+0.1, 0.1+0.1+0.8)/3 -> class 0; 2 of 3 vote it.
    QCOMPARE(s.predicted[0], 0);
    ENSEMBLE_COMPARE_NEAR_SCALED(s.disagreement[0], 1.0 / 3.0, kExactDouble);
    // Point 1: p = (0.8+0.1+0.1)/3 = 1/3 each class: the first class wins the tie by
    // convention (floating sums may break it; either way one member votes it).
    ENSEMBLE_COMPARE_NEAR_SCALED(s.disagreement[1], 2.0 / 3.0, kExactDouble);
}

void TestMetrics::certainAndWrongMember() {
    // Label 0. Member 0 is certain of class 1: log P_0 = [-100, ~0]; member 1: [0.8, 0.2].
    // Member 0's NLL is 100; the ensemble hedges: p(0) = (e^-100 + 0.8)/2 = 0.4, NLL = -ln 0.4
    // = 0.916291; Gibbs = (100 + 0.223144)/2 = 50.111572.
    MemberPredictions p;
    p.members = 2;
    p.rows = 1;
    p.classes = 2;
    p.logProbs = {-100.0f, static_cast<float>(-std::exp(-100.0)), static_cast<float>(std::log(0.8)),
                  static_cast<float>(std::log(0.2))};
    const std::vector<int32_t> y = {0};
    ENSEMBLE_COMPARE_NEAR_SCALED(memberClassificationMetrics(p, y, 0).nll, 100.0, kFloatInput);
    QCOMPARE(memberClassificationMetrics(p, y, 0).accuracy, 0.0);
    const ClassificationMetrics e = ensembleClassificationMetrics(p, y, {});
    ENSEMBLE_COMPARE_NEAR_SCALED(e.nll, -std::log(0.4), kFloatInput);
    QCOMPARE(e.accuracy, 0.0);  // p = [0.4, 0.6]
    ENSEMBLE_COMPARE_NEAR_SCALED(gibbsNll(p, y, {}), (100.0 - std::log(0.8)) / 2, kFloatInput);
    // Excluding the certain member leaves member 1 alone: NLL -ln 0.8 = 0.223144.
    ENSEMBLE_COMPARE_NEAR_SCALED(ensembleClassificationMetrics(p, y, {0, 1}).nll, -std::log(0.8),
                                 kFloatInput);
}

void TestMetrics::stableEnsembleNll() {
    // Both members give the label a probability below double's range: log P = -1000, -1010.
    // Averaging probabilities would give -ln 0 = inf; the stable form gives
    // -(logsumexp(-1000, -1010) - ln 2) = 1000 - ln(1 + e^-10) + ln 2 = 1000.693102.
    MemberPredictions p;
    p.members = 2;
    p.rows = 1;
    p.classes = 2;
    p.logProbs = {-1000.0f, 0.0f, -1010.0f, 0.0f};
    const std::vector<int32_t> y = {0};
    const ClassificationMetrics e = ensembleClassificationMetrics(p, y, {});
    ENSEMBLE_COMPARE_NEAR_SCALED(e.nll, 1000.0 - std::log1p(std::exp(-10.0)) + std::log(2.0),
                                 kExactDouble);
    ENSEMBLE_COMPARE_NEAR_SCALED(e.brier, 2.0, kExactDouble);
    const std::vector<SizeCurvePoint> curve = ensembleSizeCurve(p, y, {}, 3, 1);
    ENSEMBLE_COMPARE_NEAR_SCALED(curve[1].first.nll, e.nll, kExactDouble);
}

void TestMetrics::identicalMembersEqualAnyMember() {
    // Three copies of one random member (3 classes, 60 points).
    const MemberPredictions one = randomPredictions(1, 60, 3, 11);
    MemberPredictions p = one;
    p.members = 3;
    for (int k = 1; k < 3; ++k) {
        p.logProbs.insert(p.logProbs.end(), one.logProbs.begin(), one.logProbs.end());
    }
    const std::vector<int32_t> y = randomLabels(60, 3, 5);
    const ClassificationMetrics member = memberClassificationMetrics(p, y, 2);
    const ClassificationMetrics ens = ensembleClassificationMetrics(p, y, {});
    compareMetrics(ens, member, kExactDouble);
    const PointStatistics s = pointStatistics(p, std::vector<uint8_t>{}, y);
    const PointStatistics m = pointStatistics(one, std::vector<uint8_t>{}, y);
    for (int64_t i = 0; i < 60; ++i) {
        const std::size_t u = static_cast<std::size_t>(i);
        ENSEMBLE_COMPARE_NEAR_SCALED(s.epistemic[u], 0.0, kExactDouble);  // mutual information 0
        QCOMPARE(s.disagreement[u], 0.0);
        ENSEMBLE_COMPARE_NEAR_SCALED(s.predictedStd[u], 0.0, kExactDouble);
        ENSEMBLE_COMPARE_NEAR_SCALED(s.total[u], m.total[u], kExactDouble);
        ENSEMBLE_COMPARE_NEAR_SCALED(s.aleatoric[u], m.total[u], kExactDouble);
        QCOMPARE(s.predicted[u], m.predicted[u]);
    }
    QCOMPARE(diversity(p, {}), 0.0);
    ENSEMBLE_COMPARE_NEAR_SCALED(gibbsNll(p, y, {}), member.nll, kExactDouble);
    const Calibration a = topLabelCalibration(s);
    const Calibration b = topLabelCalibration(m);
    for (std::size_t j = 0; j < a.bins.size(); ++j) {
        QCOMPARE(a.bins[j].count, b.bins[j].count);
    }
}

void TestMetrics::excludedMembersAreIgnored() {
    // A diverged member (NaN) excluded: the ensemble equals the other members' ensemble.
    MemberPredictions p = caseA();
    MemberPredictions withNaN = p;
    withNaN.members = 3;
    withNaN.logProbs.insert(withNaN.logProbs.end(), 8, std::numeric_limits<float>::quiet_NaN());
    compareMetrics(ensembleClassificationMetrics(withNaN, kLabelsA, {1, 1, 0}),
                   ensembleClassificationMetrics(p, kLabelsA, {}), 0.0);
    QCOMPARE(diversity(withNaN, {1, 1, 0}), diversity(p, {}));
    QVERIFY(std::isnan(ensembleClassificationMetrics(withNaN, kLabelsA, {0, 0, 0}).nll));
    QVERIFY(std::isnan(memberClassificationMetrics(withNaN, kLabelsA, 2).nll));
}

void TestMetrics::aurocAndFpr() {
    // Perfectly separated: 1; identical: 0.5; reversed: 0.
    QCOMPARE(auroc({0.9, 0.8, 0.7}, {0.1, 0.2}), 1.0);
    QCOMPARE(auroc({0.5, 0.5, 0.5}, {0.5, 0.5}), 0.5);
    QCOMPARE(auroc({0.1}, {0.9, 0.8}), 0.0);
    // pos {0.9, 0.4}, neg {0.5, 0.1}: pairs 0.9>0.5, 0.9>0.1, 0.4<0.5, 0.4>0.1 -> 3/4.
    ENSEMBLE_COMPARE_NEAR_SCALED(auroc({0.9, 0.4}, {0.5, 0.1}), 0.75, kExactDouble);
    // A tie counts 1/2: pos {0.5}, neg {0.5, 0.2} -> (0.5 + 1)/2 = 0.75.
    ENSEMBLE_COMPARE_NEAR_SCALED(auroc({0.5}, {0.5, 0.2}), 0.75, kExactDouble);
    // FPR at 95% TPR. Positives 1..20: 19 of 20 needed, threshold = 19th largest = 2.
    // Negatives {1.5, 2, 3, 0}: two are >= 2 -> 0.5.
    std::vector<double> pos;
    for (int i = 1; i <= 20; ++i) {
        pos.push_back(i);
    }
    ENSEMBLE_COMPARE_NEAR_SCALED(fprAtTpr(pos, {1.5, 2.0, 3.0, 0.0}), 0.5, kExactDouble);
    QCOMPARE(fprAtTpr({0.9, 0.8, 0.7}, {0.1, 0.2}), 0.0);
    QCOMPARE(fprAtTpr({0.5, 0.5}, {0.5, 0.5, 0.5}), 1.0);
    QVERIFY(std::isnan(auroc({}, {0.1})));
}

void TestMetrics::oodMetricsSeparated() {
    // In-distribution: confident members that agree; out: uniform members -> every score
    // separates perfectly (with the in = positive, higher = in-distribution convention).
    const MemberPredictions in = fromProbabilities(
        2, 3, 2, {0.95, 0.05, 0.9, 0.1, 0.05, 0.95, 0.9, 0.1, 0.95, 0.05, 0.1, 0.9});
    const MemberPredictions out =
        fromProbabilities(2, 2, 2, {0.5, 0.5, 0.8, 0.2, 0.5, 0.5, 0.2, 0.8});
    const PointStatistics a = pointStatistics(in, std::vector<uint8_t>{});
    const PointStatistics b = pointStatistics(out, std::vector<uint8_t>{});
    const OodMetrics m = oodMetrics(a, b, 10);
    QCOMPARE(m.maxProbability.auroc, 1.0);
    QCOMPARE(m.entropy.auroc, 1.0);
    QCOMPARE(m.maxProbability.fprAt95Tpr, 0.0);
    // Out point 1: members 0.8/0.2 and 0.2/0.8 disagree: large mutual information.
    QVERIFY(m.mutualInformation.auroc >= 0.5);
    QCOMPARE(m.inRows, int64_t{3});
    QCOMPARE(m.outRows, int64_t{2});
    // Histogram over [0, ln 2]: out points have H = ln 2 (last bin).
    QCOMPARE(m.entropyHistogram.edges.size(), std::size_t{11});
    ENSEMBLE_COMPARE_NEAR_SCALED(m.entropyHistogram.edges.back(), std::log(2.0), kExactDouble);
    QCOMPARE(m.entropyHistogram.out[9], int64_t{2});
    int64_t inTotal = 0;
    for (int64_t c : m.entropyHistogram.in) {
        inTotal += c;
    }
    QCOMPARE(inTotal, int64_t{3});
}

void TestMetrics::oobHandCase() {
    // Case A as train rows, multiplicities: member 0 [1 0 2 0], member 1 [0 0 1 1].
    // Row 0 OOB for member 1, row 1 for both, row 2 for none (skipped), row 3 for member 0.
    const MemberPredictions p = caseA();
    const std::vector<int32_t> counts = {1, 0, 2, 0, 0, 0, 1, 1};
    const OobMetrics o = outOfBagMetrics(p, kLabelsA, counts, {});
    QVERIFY(o.available);
    // Member 0 on rows 1, 3: predicts 0 (y 1) and 1 (y 0): accuracy 0;
    // NLL = -(ln .46 + ln .3)/2 = (0.776529 + 1.203973)/2 = 0.990251.
    QCOMPARE(o.members[0].rows, int64_t{2});
    ENSEMBLE_COMPARE_NEAR_SCALED(o.members[0].accuracy, 0.0, kExactDouble);
    ENSEMBLE_COMPARE_NEAR_SCALED(o.members[0].nll, -(std::log(0.46) + std::log(0.3)) / 2,
                                 kFloatInput);
    // Member 1 on rows 0, 1: both correct; NLL = -(ln .52 + ln .8)/2 = 0.438535.
    QCOMPARE(o.members[1].rows, int64_t{2});
    ENSEMBLE_COMPARE_NEAR_SCALED(o.members[1].accuracy, 1.0, kExactDouble);
    ENSEMBLE_COMPARE_NEAR_SCALED(o.members[1].nll, -(std::log(0.52) + std::log(0.8)) / 2,
                                 kFloatInput);
    // Ensemble: row 0 member 1 alone [.52 .48] -> 0 correct; row 1 both [.37 .63] -> 1
    // correct; row 3 member 0 alone [.3 .7] -> 1 wrong. 2/3; NLL = -(ln .52 + ln .63 + ln .3)/3.
    QCOMPARE(o.ensembleRows, int64_t{3});
    QCOMPARE(o.skippedRows, int64_t{1});
    ENSEMBLE_COMPARE_NEAR_SCALED(o.ensembleAccuracy, 2.0 / 3.0, kExactDouble);
    ENSEMBLE_COMPARE_NEAR_SCALED(
        o.ensembleNll, -(std::log(0.52) + std::log(0.63) + std::log(0.3)) / 3, kFloatInput);
    // No bootstrap: nothing is out of bag.
    const OobMetrics none = outOfBagMetrics(p, kLabelsA, {}, {});
    QVERIFY(!none.available);
    QCOMPARE(none.ensembleRows, int64_t{0});
    const OobMetrics ones = outOfBagMetrics(p, kLabelsA, std::vector<int32_t>(8, 1), {});
    QVERIFY(!ones.available);
    QCOMPARE(ones.skippedRows, int64_t{4});
}

void TestMetrics::oobRowsAreExactlyMultiplicityZero() {
    // Random multiplicities; the in-bag rows' predictions are poisoned with NaN: the OOB
    // numbers stay finite and equal a direct computation over the rows with multiplicity 0.
    const int k = 4;
    const int64_t n = 200;
    const int c = 3;
    MemberPredictions p = randomPredictions(k, n, c, 21);
    const std::vector<int32_t> y = randomLabels(n, c, 22);
    std::vector<int32_t> counts(static_cast<std::size_t>(k) * n);
    for (std::size_t j = 0; j < counts.size(); ++j) {
        const Philox4x32 d = philoxDraw(3, RngPurpose::Poisson, 0, j);
        counts[j] = static_cast<int32_t>(uniformIndex(d.v[0], d.v[1], 3));  // 0, 1 or 2
    }
    const MemberPredictions clean = p;
    for (int m = 0; m < k; ++m) {
        for (int64_t i = 0; i < n; ++i) {
            if (counts[static_cast<std::size_t>(m) * n + i] != 0) {
                for (int cc = 0; cc < c; ++cc) {
                    p.logProbs[(static_cast<std::size_t>(m) * n + i) * c + cc] =
                        std::numeric_limits<float>::quiet_NaN();
                }
            }
        }
    }
    const OobMetrics o = outOfBagMetrics(p, y, counts, {});
    for (int m = 0; m < k; ++m) {
        std::vector<int64_t> rows;
        for (int64_t i = 0; i < n; ++i) {
            if (counts[static_cast<std::size_t>(m) * n + i] == 0) {
                rows.push_back(i);
            }
        }
        QCOMPARE(o.members[static_cast<std::size_t>(m)].rows, static_cast<int64_t>(rows.size()));
        double nll = 0.0;
        for (int64_t i : rows) {
            nll -= clean.logProbs[(static_cast<std::size_t>(m) * n + i) * c +
                                  static_cast<std::size_t>(y[static_cast<std::size_t>(i)])];
        }
        ENSEMBLE_COMPARE_NEAR_SCALED(o.members[static_cast<std::size_t>(m)].nll, nll / rows.size(),
                                     kExactDouble);
        QVERIFY(std::isfinite(o.members[static_cast<std::size_t>(m)].accuracy));
    }
    QVERIFY(std::isfinite(o.ensembleNll));
    QVERIFY(std::isfinite(o.ensembleAccuracy));
    int64_t skipped = 0;
    for (int64_t i = 0; i < n; ++i) {
        bool any = false;
        for (int m = 0; m < k; ++m) {
            any = any || counts[static_cast<std::size_t>(m) * n + i] == 0;
        }
        skipped += !any;
    }
    QCOMPARE(o.skippedRows, skipped);
    QCOMPARE(o.ensembleRows, n - skipped);
}

void TestMetrics::sizeCurve() {
    const int k = 5;
    const MemberPredictions p = randomPredictions(k, 80, 3, 31);
    const std::vector<int32_t> y = randomLabels(80, 3, 32);
    const std::vector<SizeCurvePoint> curve = ensembleSizeCurve(p, y, {}, 20, 7);
    QCOMPARE(curve.size(), std::size_t{5});
    // m = K: the first K members and every random K-subset are the whole ensemble.
    const ClassificationMetrics full = ensembleClassificationMetrics(p, y, {});
    compareMetrics(curve.back().first, full, kExactDouble);
    compareMetrics(curve.back().randomMean, full, kExactDouble);
    ENSEMBLE_COMPARE_NEAR_SCALED(curve.back().randomStd.nll, 0.0, kExactDouble);
    // m = 1 "first" is member 0; m = 2 "first" is the ensemble of members 0 and 1.
    compareMetrics(curve[0].first, memberClassificationMetrics(p, y, 0), kExactDouble);
    compareMetrics(curve[1].first, ensembleClassificationMetrics(p, y, {1, 1, 0, 0, 0}),
                   kExactDouble);
    // The random mean at m = 2 is the mean over the 20 seeded subsets, recomputed directly.
    double meanNll = 0.0;
    double meanEce = 0.0;
    for (int s = 0; s < 20; ++s) {
        const std::vector<int> order = randomMemberPermutation({0, 1, 2, 3, 4}, 7, s);
        std::vector<uint8_t> inc(5, 0);
        inc[static_cast<std::size_t>(order[0])] = 1;
        inc[static_cast<std::size_t>(order[1])] = 1;
        const ClassificationMetrics m = ensembleClassificationMetrics(p, y, inc);
        meanNll += m.nll / 20;
        meanEce += m.ece / 20;
    }
    ENSEMBLE_COMPARE_NEAR_SCALED(curve[1].randomMean.nll, meanNll, kExactDouble);
    ENSEMBLE_COMPARE_NEAR_SCALED(curve[1].randomMean.ece, meanEce, kExactDouble);
    // A permutation of the members, reproducible from the seed, different across indices.
    std::vector<int> perm = randomMemberPermutation({0, 1, 2, 3, 4}, 7, 3);
    QCOMPARE(perm, randomMemberPermutation({0, 1, 2, 3, 4}, 7, 3));
    std::vector<int> sorted = perm;
    std::sort(sorted.begin(), sorted.end());
    QCOMPARE(sorted, (std::vector<int>{0, 1, 2, 3, 4}));
    // Excluded members are left out of the curve.
    const std::vector<SizeCurvePoint> part = ensembleSizeCurve(p, y, {1, 0, 1, 0, 1}, 4, 7);
    QCOMPARE(part.size(), std::size_t{3});
    compareMetrics(part.back().first, ensembleClassificationMetrics(p, y, {1, 0, 1, 0, 1}),
                   kExactDouble);
}

void TestMetrics::temperatureHandCase() {
    // One member predicting [0.9, 0.1] on ten points, seven of which are class 0. The NLL
    // -(7 ln s(a/T) + 3 ln(1 - s(a/T)))/10, a = ln 9, is minimised where s(a/T) = 0.7:
    // T* = ln 9 / ln(7/3) = 2.197225 / 0.847298 = 2.593213. NLL(T*) = h2(0.7) = 0.610864;
    // NLL(1) = -(7 ln .9 + 3 ln .1)/10 = 0.764528.
    std::vector<double> probs;
    for (int i = 0; i < 10; ++i) {
        probs.push_back(0.9);
        probs.push_back(0.1);
    }
    const MemberPredictions p = fromProbabilities(1, 10, 2, probs);
    const std::vector<int32_t> y = {0, 0, 0, 0, 0, 0, 0, 1, 1, 1};
    for (TemperatureMode mode : {TemperatureMode::Ensemble, TemperatureMode::Members}) {
        const TemperatureFit f = fitTemperature(p, y, {}, mode);
        ENSEMBLE_COMPARE_NEAR_SCALED(f.temperature, std::log(9.0) / std::log(7.0 / 3.0),
                                     kFittedParameter);
        ENSEMBLE_COMPARE_NEAR_SCALED(f.nllBefore, -(7 * std::log(0.9) + 3 * std::log(0.1)) / 10,
                                     kFloatInput);
        ENSEMBLE_COMPARE_NEAR_SCALED(f.nllAfter, h2(0.7), kFloatInput);
        QVERIFY(f.evaluations < 100);
    }
    // Already calibrated ([0.7, 0.3] with seven of ten class 0): T stays 1.
    std::vector<double> calibrated;
    for (int i = 0; i < 10; ++i) {
        calibrated.push_back(0.7);
        calibrated.push_back(0.3);
    }
    const TemperatureFit f1 = fitTemperature(fromProbabilities(1, 10, 2, calibrated), y, {});
    ENSEMBLE_COMPARE_NEAR_SCALED(f1.temperature, 1.0, kFittedParameter);
    QVERIFY(f1.nllAfter <= f1.nllBefore);
    // temperatureNll at T=1 is the ensemble NLL (up to renormalising the float inputs).
    ENSEMBLE_COMPARE_NEAR_SCALED(temperatureNll(p, y, {}, 1.0),
                                 ensembleClassificationMetrics(p, y, {}).nll, kFloatInput);
}

void TestMetrics::temperatureKeepsAccuracyAndNll() {
    // Overconfident members (logits scale 6) on random labels: T > 1 is expected.
    const MemberPredictions p = randomPredictions(4, 300, 3, 41, 6.0);
    const std::vector<int32_t> y = randomLabels(300, 3, 42);
    for (TemperatureMode mode : {TemperatureMode::Ensemble, TemperatureMode::Members}) {
        const TemperatureFit f = fitTemperature(p, y, {}, mode);
        QVERIFY(f.temperature > 1.0);
        QVERIFY(f.temperature >= kMinTemperature && f.temperature <= kMaxTemperature);
        QVERIFY(f.nllAfter <= f.nllBefore);
        ENSEMBLE_COMPARE_NEAR_SCALED(temperatureNll(p, y, {}, f.temperature, mode), f.nllAfter,
                                     kExactDouble);
        const MemberPredictions scaled = temperatureScaled(p, {}, f.temperature, mode);
        const ClassificationMetrics after = ensembleClassificationMetrics(scaled, y, {});
        ENSEMBLE_COMPARE_NEAR_SCALED(after.nll, f.nllAfter, kFloatInput);
        if (mode == TemperatureMode::Ensemble) {
            // A monotone map of each row: the same predicted class everywhere.
            const PointStatistics a = pointStatistics(p, std::vector<uint8_t>{}, y);
            const PointStatistics b = pointStatistics(scaled, std::vector<uint8_t>{}, y);
            QCOMPARE(a.predicted, b.predicted);
            QCOMPARE(after.accuracy, ensembleClassificationMetrics(p, y, {}).accuracy);
        }
    }
    // Members mode keeps accuracy when the members agree (identical members).
    const MemberPredictions one = randomPredictions(1, 100, 3, 43, 6.0);
    MemberPredictions same = one;
    same.members = 2;
    same.logProbs.insert(same.logProbs.end(), one.logProbs.begin(), one.logProbs.end());
    const std::vector<int32_t> y2 = randomLabels(100, 3, 44);
    const TemperatureFit f = fitTemperature(same, y2, {}, TemperatureMode::Members);
    const MemberPredictions scaled =
        temperatureScaled(same, {}, f.temperature, TemperatureMode::Members);
    QCOMPARE(ensembleClassificationMetrics(scaled, y2, {}).accuracy,
             ensembleClassificationMetrics(same, y2, {}).accuracy);
    // Underconfident members (scale 0.2) with labels equal to their argmax: T < 1.
    const MemberPredictions soft = randomPredictions(3, 200, 3, 45, 0.2);
    const PointStatistics sp = pointStatistics(soft, std::vector<uint8_t>{});
    const TemperatureFit under = fitTemperature(soft, sp.predicted, {});
    QVERIFY(under.temperature < 1.0);
    QVERIFY(under.nllAfter < under.nllBefore);
}

void TestMetrics::gridShapeAndBounds() {
    DataSplit data;
    data.classes = 2;
    data.train.rows = 2;
    data.train.features = 2;
    data.train.x = {0.0f, 0.0f, 1.0f, 2.0f};
    data.train.y = {0, 1};
    data.test.features = 2;
    // Box [0,1] x [0,2], margin 10% of each extent: x in [-0.1, 1.1], y in [-0.2, 2.2].
    const GridBounds b = gridBounds(data, 0.1);
    ENSEMBLE_COMPARE_NEAR_SCALED(b.xMin, -0.1, kExactDouble);
    ENSEMBLE_COMPARE_NEAR_SCALED(b.xMax, 1.1, kExactDouble);
    ENSEMBLE_COMPARE_NEAR_SCALED(b.yMin, -0.2, kExactDouble);
    ENSEMBLE_COMPARE_NEAR_SCALED(b.yMax, 2.2, kExactDouble);
    // G = 4: cell width 0.3 in x, 0.6 in y. Point 0 is the top-left cell centre
    // (-0.1 + 0.15, 2.2 - 0.3) = (0.05, 1.9); point 7 = row 1, col 3: (0.95, 1.3).
    const int g = 4;
    const std::vector<float> pts = gridPoints(b, g);
    QCOMPARE(pts.size(), std::size_t{32});
    ENSEMBLE_COMPARE_NEAR_SCALED(pts[0], 0.05, kFloatInput);
    ENSEMBLE_COMPARE_NEAR_SCALED(pts[1], 1.9, kFloatInput);
    ENSEMBLE_COMPARE_NEAR_SCALED(pts[14], 0.95, kFloatInput);
    ENSEMBLE_COMPARE_NEAR_SCALED(pts[15], 1.3, kFloatInput);
    // A fake two-member predictor: member 0 says class 1 where x > 0.5, member 1 where y > 1.
    MemberPredictor predict = [](const float* x, int64_t rows) {
        MemberPredictions p;
        p.members = 2;
        p.rows = rows;
        p.classes = 2;
        p.logProbs.resize(static_cast<std::size_t>(4 * rows));
        for (int64_t i = 0; i < rows; ++i) {
            const double a = x[2 * i] > 0.5 ? 0.9 : 0.2;
            const double c = x[2 * i + 1] > 1.0 ? 0.9 : 0.2;
            p.logProbs[static_cast<std::size_t>(2 * i)] = static_cast<float>(std::log(1 - a));
            p.logProbs[static_cast<std::size_t>(2 * i + 1)] = static_cast<float>(std::log(a));
            p.logProbs[static_cast<std::size_t>(2 * rows + 2 * i)] =
                static_cast<float>(std::log(1 - c));
            p.logProbs[static_cast<std::size_t>(2 * rows + 2 * i + 1)] =
                static_cast<float>(std::log(c));
        }
        return p;
    };
    const GridEvaluation e = evaluateGrid(predict, b, g, {});
    QCOMPARE(e.size, g);
    QCOMPARE(e.members, 2);
    QCOMPARE(e.memberProbabilities.size(), std::size_t{2 * 16 * 2});
    QCOMPARE(e.ensemble.rows, int64_t{16});
    QCOMPARE(e.ensemble.probabilities.size(), std::size_t{32});
    // Top-right cell (row 0, col 3): both members say class 1 with 0.9: no disagreement.
    ENSEMBLE_COMPARE_NEAR_SCALED(e.memberProbabilities[2 * 3 + 1], 0.9, kFloatInput);
    ENSEMBLE_COMPARE_NEAR_SCALED(e.ensemble.probabilities[2 * 3 + 1], 0.9, kFloatInput);
    ENSEMBLE_COMPARE_NEAR_SCALED(e.ensemble.epistemic[3], 0.0, kFloatInput);
    // Top-left cell (row 0, col 0): member 0 says 0.2, member 1 says 0.9 -> p1 = 0.55, the
    // members disagree, mutual information h2(.55) - (h2(.2) + h2(.9))/2 > 0.
    ENSEMBLE_COMPARE_NEAR_SCALED(e.ensemble.probabilities[1], 0.55, kFloatInput);
    ENSEMBLE_COMPARE_NEAR_SCALED(e.ensemble.disagreement[0], 0.5, kExactDouble);
    ENSEMBLE_COMPARE_NEAR_SCALED(e.ensemble.epistemic[0], h2(0.55) - (h2(0.2) + h2(0.9)) / 2,
                                 kFloatInput);
    // Excluding member 1 leaves member 0 alone.
    const GridEvaluation e0 = evaluateGrid(predict, b, g, {1, 0});
    ENSEMBLE_COMPARE_NEAR_SCALED(e0.ensemble.probabilities[1], 0.2, kFloatInput);
    // Not 2-D: refused.
    DataSplit three = data;
    three.train.features = 3;
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, gridBounds(three, 0.1));
}

void TestMetrics::sameResultsForAnyThreadCount() {
    // Per-point loops are parallel, reductions serial in point order: bit-identical results
    // with one thread and with several.
    const MemberPredictions p = randomPredictions(7, 500, 4, 61);
    const std::vector<int32_t> y = randomLabels(500, 4, 62);
    auto run = [&](int threads) {
        omp_set_num_threads(threads);
        EvaluationInput in;
        in.predictions = &p;
        in.labels = &y;
        return evaluationReport(in).dump();
    };
    const int before = omp_get_max_threads();
    const std::string one = run(1);
    const std::string four = run(4);
    omp_set_num_threads(before);
    QCOMPARE(one, four);
}

void TestMetrics::trainerReportAndGrid() {
    // A small bootstrap ensemble trained for a few steps: the report's out-of-bag rows are
    // exactly the train rows with multiplicity 0 in Trainer::bootstrapCounts(), the size curve
    // ends at the full ensemble, and the grid covers the data.
    nlohmann::json cfg = defaultConfigJson();
    cfg["dataset"]["n"] = 300;
    cfg["ensemble"]["members"] = 4;
    cfg["ensemble"]["bootstrap"] = "resample";
    cfg["training"]["steps"] = 40;
    cfg["backend"]["kind"] = "cpu";
    std::unique_ptr<Trainer> trainer = makeTrainer(parseConfig(cfg), nullptr);
    trainer->runSteps(40);
    const nlohmann::json r = trainerReport(*trainer).json;
    const std::vector<int32_t> counts = trainer->bootstrapCounts();
    const int64_t n = trainer->data().train.rows;
    QVERIFY(r["oob"]["available"].get<bool>());
    int64_t skipped = 0;
    for (int64_t i = 0; i < n; ++i) {
        bool any = false;
        for (int k = 0; k < 4; ++k) {
            any = any || counts[static_cast<std::size_t>(k * n + i)] == 0;
        }
        skipped += !any;
    }
    for (int k = 0; k < 4; ++k) {
        const int64_t zeros =
            std::count(counts.begin() + k * n, counts.begin() + (k + 1) * n, int32_t{0});
        QCOMPARE(r["oob"]["members"][static_cast<std::size_t>(k)]["rows"].get<int64_t>(), zeros);
    }
    QCOMPARE(r["oob"]["ensemble"]["skipped_rows"].get<int64_t>(), skipped);
    QCOMPARE(r["size_curve"].size(), std::size_t{4});
    ENSEMBLE_COMPARE_NEAR_SCALED(r["size_curve"][3]["first"]["nll"].get<double>(),
                                 r["ensemble"]["nll"].get<double>(), kExactDouble);
    ENSEMBLE_COMPARE_NEAR_SCALED(r["size_curve"][3]["first"]["accuracy"].get<double>(),
                                 r["ensemble"]["accuracy"].get<double>(), kExactDouble);
    // The run's facts: the trainer's loss and accuracy (the same as the report's own ensemble
    // numbers on the test split), its step and every member's settings.
    const Evaluation e = trainer->evaluate();
    ENSEMBLE_COMPARE_NEAR_SCALED(r["ensemble"]["test"]["loss"].get<double>(), e.ensembleTest.loss,
                                 kExactDouble);
    ENSEMBLE_COMPARE_NEAR_SCALED(r["ensemble"]["test"]["loss"].get<double>(),
                                 r["ensemble"]["nll"].get<double>(), kExactDouble);
    ENSEMBLE_COMPARE_NEAR_SCALED(r["ensemble"]["test"]["accuracy"].get<double>(),
                                 r["ensemble"]["accuracy"].get<double>(), kExactDouble);
    ENSEMBLE_COMPARE_NEAR_SCALED(r["ensemble"]["train"]["loss"].get<double>(), e.ensembleTrain.loss,
                                 kExactDouble);
    QCOMPARE(r["step"].get<int64_t>(), int64_t{40});
    QCOMPARE(r["dataset"].get<std::string>(), trainer->data().name);
    ENSEMBLE_COMPARE_NEAR_SCALED(r["epoch"].get<double>(), trainer->epoch(), kExactDouble);
    for (int k = 0; k < 4; ++k) {
        const nlohmann::json& m = r["members"][static_cast<std::size_t>(k)];
        QCOMPARE(m["member"].get<int>(), k);
        QCOMPARE(m["index"].get<int>(), k);
        QVERIFY(m["switched_on"].get<bool>());
        QVERIFY(!m["diverged"].get<bool>());
        ENSEMBLE_COMPARE_NEAR_SCALED(m["lr"].get<double>(),
                                     trainer->config().optimizer.lr[static_cast<std::size_t>(k)],
                                     kExactDouble);
        QVERIFY(m.contains("momentum") && m.contains("weight_decay"));
        ENSEMBLE_COMPARE_NEAR_SCALED(m["test"]["loss"].get<double>(), m["nll"].get<double>(),
                                     kExactDouble);
        ENSEMBLE_COMPARE_NEAR_SCALED(m["train"]["accuracy"].get<double>(),
                                     e.members[static_cast<std::size_t>(k)].train.accuracy,
                                     kExactDouble);
    }
    // A member switched off (the app's switches) leaves the ensemble, not the report.
    const TrainerReport off = trainerReport(*trainer, {1, 0, 1, 1});
    QCOMPARE(off.json["members_included"].get<int>(), 3);
    QVERIFY(!off.json["members"][1]["switched_on"].get<bool>());
    QVERIFY(!off.json["members"][1]["included"].get<bool>());
    ENSEMBLE_COMPARE_NEAR_SCALED(off.json["ensemble"]["test"]["loss"].get<double>(),
                                 off.json["ensemble"]["nll"].get<double>(), kExactDouble);

    const GridEvaluation g = evaluateGrid(*trainer, 16);
    QCOMPARE(g.size, 16);
    QCOMPARE(g.members, 4);
    QCOMPARE(g.memberProbabilities.size(), std::size_t{4 * 256 * 2});
    QCOMPARE(g.ensemble.rows, int64_t{256});
    const GridBounds b = gridBounds(trainer->data());
    QCOMPARE(g.bounds.xMin, b.xMin);
    QCOMPARE(g.bounds.yMax, b.yMax);
    for (int64_t i = 0; i < trainer->data().train.rows; ++i) {
        const float* x = trainer->data().train.row(i);
        QVERIFY(x[0] > b.xMin && x[0] < b.xMax && x[1] > b.yMin && x[1] < b.yMax);
    }
    // Each member's probabilities sum to 1 at every grid point.
    for (std::size_t j = 0; j < g.memberProbabilities.size(); j += 2) {
        ENSEMBLE_COMPARE_NEAR_SCALED(g.memberProbabilities[j] + g.memberProbabilities[j + 1], 1.0,
                                     kFloatInput);
    }
}

void TestMetrics::deviceStyleMeasuresEqualHostOnes() {
    // The device computes the measures without storing member probabilities (it recomputes
    // the one exp per member its second pass needs): the same doubles as the host's path.
    const MemberPredictions p = randomPredictions(5, 200, 3, 71);
    const std::vector<int> members = {0, 2, 3, 4};
    const PointStatistics host = pointStatistics(p, members, {});
    std::vector<PointUncertainty> points(200);
    std::vector<double> prob(200 * 3);
    for (int64_t i = 0; i < 200; ++i) {
        const auto logProb = [&](int u, int c) {
            return p
                .logProbs[(static_cast<std::size_t>(members[static_cast<std::size_t>(u)]) * 200 +
                           static_cast<std::size_t>(i)) *
                              3 +
                          static_cast<std::size_t>(c)];
        };
        const auto again = [&](int u, int c) {
            return hd::exp(static_cast<double>(logProb(u, c)));
        };
        points[static_cast<std::size_t>(i)] = pointUncertainty(
            4, 3, logProb, [](int, int, double) {}, again, prob.data() + i * 3);
    }
    const PointStatistics device = pointStatisticsFrom(points, prob, 3, 4);
    QCOMPARE(device.rows, host.rows);
    QCOMPARE(device.members, 4);
    QVERIFY(device.probabilities == host.probabilities);
    QVERIFY(device.predicted == host.predicted);
    QVERIFY(device.confidence == host.confidence);
    QVERIFY(device.total == host.total);
    QVERIFY(device.aleatoric == host.aleatoric);
    QVERIFY(device.epistemic == host.epistemic);
    QVERIFY(device.disagreement == host.disagreement);
    QVERIFY(device.predictedStd == host.predictedStd);
    // Not vacuous: the points disagree and are uncertain.
    QVERIFY(summarizeUncertainty(device).disagreementMean > 0.05);
    QVERIFY(summarizeUncertainty(device).epistemicMean > 0.01);
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, pointStatisticsFrom(points, {}, 3, 4));
}

void TestMetrics::gridTakesBackendMeasures() {
    // evaluateGrid(trainer) takes a backend's own measures when it offers them (CUDA), and
    // they equal the host path's: the same trainer state, once through each.
    nlohmann::json cfg = defaultConfigJson();
    cfg["dataset"]["kind"] = "blobs";
    cfg["dataset"]["classes"] = 3;
    cfg["dataset"]["n"] = 300;
    cfg["ensemble"]["members"] = 5;
    cfg["training"]["steps"] = 30;
    cfg["backend"]["kind"] = "cpu";
    const ExperimentConfig config = parseConfig(cfg);
    int calls = 0;
    Trainer emulated(config, loadDataSplit(config.dataset),
                     std::make_unique<EmulatedDeviceMeasures>(&calls));
    Trainer host(config, loadDataSplit(config.dataset), std::make_unique<CpuBackend>(1));
    emulated.runSteps(30);
    host.runSteps(30);
    const GridEvaluation a = evaluateGrid(emulated, 24);
    QCOMPARE(calls, 1);
    const GridEvaluation b = evaluateGrid(host, 24);
    QCOMPARE(a.size, b.size);
    QCOMPARE(a.members, 5);
    QCOMPARE(a.classes, 3);
    QVERIFY(a.points == b.points);
    QCOMPARE(a.bounds.xMin, b.bounds.xMin);
    QCOMPARE(a.ensemble.members, b.ensemble.members);
    QVERIFY(a.ensemble.probabilities == b.ensemble.probabilities);
    QVERIFY(a.ensemble.predicted == b.ensemble.predicted);
    QVERIFY(a.ensemble.total == b.ensemble.total);
    QVERIFY(a.ensemble.epistemic == b.ensemble.epistemic);
    QVERIFY(a.ensemble.disagreement == b.ensemble.disagreement);
    QVERIFY(a.ensemble.predictedStd == b.ensemble.predictedStd);
    QVERIFY(a.memberProbabilities == b.memberProbabilities);
    QVERIFY(summarizeUncertainty(a.ensemble).entropyMean > 0.0);

    // With member 1 switched off (the app's member switches): the ensemble leaves it out on
    // both paths, and its probabilities are still there for its own image.
    const std::vector<uint8_t> include = {1, 0, 1, 1, 1};
    const GridEvaluation c = evaluateGrid(emulated, a.bounds, 24, include);
    QCOMPARE(calls, 2);
    const GridEvaluation d = evaluateGrid(host, a.bounds, 24, include);
    QCOMPARE(c.ensemble.members, 4);
    QVERIFY(c.ensemble.probabilities == d.ensemble.probabilities);
    QVERIFY(c.ensemble.epistemic == d.ensemble.epistemic);
    QVERIFY(c.ensemble.disagreement == d.ensemble.disagreement);
    QVERIFY(c.ensemble.probabilities != a.ensemble.probabilities);
    QCOMPARE(c.memberProbabilities.size(), d.memberProbabilities.size());
    for (std::size_t j = 0; j < c.memberProbabilities.size(); ++j) {
        ENSEMBLE_COMPARE_NEAR_SCALED(c.memberProbabilities[j], d.memberProbabilities[j],
                                     kFloatInput);
    }
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument,
                             evaluateGrid(host, a.bounds, 24, std::vector<uint8_t>{1, 1}));
}

void TestMetrics::reportLayout() {
    const MemberPredictions p = caseA();
    const std::vector<int32_t> counts = {1, 0, 2, 0, 0, 0, 1, 1};
    const MemberPredictions ood =
        fromProbabilities(2, 2, 2, {0.5, 0.5, 0.6, 0.4, 0.5, 0.5, 0.4, 0.6});
    EvaluationInput in;
    in.predictions = &p;
    in.labels = &kLabelsA;
    in.train = &p;
    in.trainLabels = &kLabelsA;
    in.counts = &counts;
    in.ood = &ood;
    in.oodName = "test-ood";
    EvaluationOptions opt;
    opt.positiveClassReliability = true;
    const nlohmann::json j = evaluationReport(in, opt);
    QCOMPARE(j["split"].get<std::string>(), std::string("test"));
    QCOMPARE(j["brier_definition"].get<std::string>(), std::string("sum over classes"));
    for (const char* key : {"accuracy", "nll", "brier", "ece", "mce", "entropy_mean",
                            "aleatoric_mean", "epistemic_mean", "disagreement_mean"}) {
        QVERIFY2(j["ensemble"].contains(key), key);
    }
    ENSEMBLE_COMPARE_NEAR_SCALED(j["ensemble"]["accuracy"].get<double>(), 0.75, kExactDouble);
    QCOMPARE(j["members"].size(), std::size_t{2});
    for (const char* key : {"accuracy", "nll", "brier", "ece"}) {
        QVERIFY2(j["members"][0].contains(key), key);
    }
    for (const char* key : {"gibbs_nll", "diversity", "reliability", "reliability_positive",
                            "size_curve", "oob", "ood", "temperature"}) {
        QVERIFY2(j.contains(key), key);
    }
    QCOMPARE(j["reliability"].size(), std::size_t{15});
    for (const char* key : {"lower", "upper", "count", "confidence", "accuracy"}) {
        QVERIFY2(j["reliability"][9].contains(key), key);
    }
    QVERIFY(j["reliability"][0]["confidence"].is_null());  // empty bin
    QCOMPARE(j["size_curve"].size(), std::size_t{2});
    QVERIFY(j["oob"]["available"].get<bool>());
    ENSEMBLE_COMPARE_NEAR_SCALED(j["oob"]["ensemble"]["accuracy"].get<double>(), 2.0 / 3.0,
                                 kExactDouble);
    QCOMPARE(j["ood"]["positive"].get<std::string>(), std::string("in-distribution"));
    QVERIFY(j["ood"]["max_prob"].contains("auroc"));
    QVERIFY(j["ood"]["max_prob"].contains("fpr_at_95_tpr"));
    QVERIFY(j["temperature"]["available"].get<bool>());
    QCOMPARE(j["temperature"]["validation_rows"].get<int>(), 2);
    QVERIFY(j["temperature"]["validation_nll_after"].get<double>() <=
            j["temperature"]["validation_nll_before"].get<double>());
    QCOMPARE(j["temperature"]["method"].get<std::string>(), std::string("pool-then-calibrate"));
    // Without OOD / train data those sections say so.
    EvaluationInput bare;
    bare.predictions = &p;
    bare.labels = &kLabelsA;
    const nlohmann::json k = evaluationReport(bare);
    QVERIFY(!k["oob"]["available"].get<bool>());
    QVERIFY(!k["ood"]["available"].get<bool>());
    QVERIFY(!k.contains("reliability_positive"));
    // Every member diverged: RuntimeError.
    EvaluationInput dead = bare;
    dead.include = {0, 0};
    QVERIFY_THROWS_EXCEPTION(RuntimeError, evaluateEnsemble(dead));
}

void TestMetrics::csvWriters() {
    const MemberPredictions p = caseA();
    EvaluationInput in;
    in.predictions = &p;
    in.labels = &kLabelsA;
    const EnsembleReport r = evaluateEnsemble(in);
    const std::string rel = reliabilityCsv(r.reliability);
    QCOMPARE(std::count(rel.begin(), rel.end(), '\n'), 16);  // header + 15 bins
    QVERIFY(rel.rfind("bin,lower,upper,count,confidence,accuracy\n", 0) == 0);
    const std::string curve = sizeCurveCsv(r.sizeCurve);
    QCOMPARE(std::count(curve.begin(), curve.end(), '\n'), 3);
    const std::string pts = pointsCsv(r.points, kLabelsA);
    QCOMPARE(std::count(pts.begin(), pts.end(), '\n'), 5);
    QVERIFY(pts.find("\n1,1,1,1,") != std::string::npos);  // row 1: label 1, predicted 1, correct
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const std::string sub = dir.path().toStdString() + "/csv/nested";
    writeReportCsvs(sub, r, kLabelsA);
    for (const char* name :
         {"reliability.csv", "size_curve.csv", "uncertainty.csv", "members.csv"}) {
        std::ifstream f(sub + "/" + name);
        QVERIFY2(f.good(), name);
        std::stringstream ss;
        ss << f.rdbuf();
        QVERIFY2(!ss.str().empty(), name);
    }
}

namespace {

// Two gaussian members on three points in standardised units, target mean 10 and std 2:
//   member 0: (mu, s^2) = (0, 1), (1, 0.25), (-1, 4)  -> raw mu 10, 12, 8;  sigma^2 4, 1, 16
//   member 1:             (1, 1), (1, 0.25), (0, 1)   -> raw mu 12, 12, 10; sigma^2 4, 1, 4
MemberPredictions twoGaussianMembers() {
    MemberPredictions p;
    p.members = 2;
    p.rows = 3;
    p.classes = 2;
    p.logProbs = {0, 1, 1, 0.25f, -1, 4, 1, 1, 1, 0.25f, 0, 1};
    return p;
}

const std::vector<float> kTargets = {11.5f, 13.0f, 5.0f};

// The normal CDF, written apart from the library's form.
double normalCdf(double z) {
    return 0.5 * (1.0 + std::erf(z / std::sqrt(2.0)));
}

// An independent reference: the mixture as E[sigma^2 + mu^2] - mu^2, NLL as -log of the
// density, coverage from the CDF interval, calibration by counting.
struct Reference {
    double rmse = 0, mae = 0, nll = 0, sharpness = 0, gap = 0;
    double coverage[3] = {0, 0, 0};
    std::vector<double> observed;
};

Reference reference(const std::vector<double>& mu, const std::vector<double>& var,
                    const std::vector<float>& y) {
    Reference r;
    const double n = static_cast<double>(y.size());
    const double ps[3] = {0.5, 0.9, 0.95};
    r.observed.assign(19, 0.0);
    for (std::size_t i = 0; i < y.size(); ++i) {
        const double d = y[i] - mu[i];
        const double sd = std::sqrt(var[i]);
        r.rmse += d * d / n;
        r.mae += std::abs(d) / n;
        const double density = std::exp(-d * d / (2 * var[i])) / std::sqrt(2 * M_PI * var[i]);
        r.nll += -std::log(density) / n;
        r.sharpness += sd / n;
        const double f = normalCdf(d / sd);
        for (int c = 0; c < 3; ++c) {
            r.coverage[c] += (f >= (1 - ps[c]) / 2 && f <= (1 + ps[c]) / 2) ? 1 / n : 0;
        }
        for (int j = 0; j < 19; ++j) {
            r.observed[static_cast<std::size_t>(j)] += f <= (j + 1) / 20.0 ? 1 / n : 0;
        }
    }
    r.rmse = std::sqrt(r.rmse);
    for (int j = 0; j < 19; ++j) {
        r.gap += std::abs(r.observed[static_cast<std::size_t>(j)] - (j + 1) / 20.0) / 19;
    }
    return r;
}

void compareToReference(const RegressionMetrics& m, const Reference& r) {
    ENSEMBLE_COMPARE_NEAR(m.rmse, r.rmse, 1e-12);
    ENSEMBLE_COMPARE_NEAR(m.mae, r.mae, 1e-12);
    ENSEMBLE_COMPARE_NEAR(m.nll, r.nll, 1e-12);
    ENSEMBLE_COMPARE_NEAR(m.sharpness, r.sharpness, 1e-12);
    for (int c = 0; c < 3; ++c) {
        ENSEMBLE_COMPARE_NEAR(m.coverage[static_cast<std::size_t>(c)], r.coverage[c], 1e-12);
    }
    QCOMPARE(m.calibrationObserved.size(), std::size_t{19});
    for (std::size_t j = 0; j < 19; ++j) {
        ENSEMBLE_COMPARE_NEAR(m.calibrationObserved[j], r.observed[j], 1e-12);
    }
    ENSEMBLE_COMPARE_NEAR(m.calibrationGap, r.gap, 1e-12);
}

}  // namespace

void TestMetrics::regressionMixtureHandCase() {
    const MemberGaussians g = memberGaussians(twoGaussianMembers(), 10.0, 2.0);
    QCOMPARE(g.mean, (std::vector<double>{10, 12, 8, 12, 12, 10}));
    QCOMPARE(g.variance, (std::vector<double>{4, 1, 16, 4, 1, 4}));
    const RegressionPoints m = mixturePoints(g, {0, 1});
    // mu = 11, 12, 9; aleatoric = 4, 1, 10; epistemic = 1, 0, 1; sigma^2 = 5, 1, 11.
    QCOMPARE(m.mean, (std::vector<double>{11, 12, 9}));
    QCOMPARE(m.aleatoric, (std::vector<double>{4, 1, 10}));
    QCOMPARE(m.epistemic, (std::vector<double>{1, 0, 1}));
    QCOMPARE(m.variance, (std::vector<double>{5, 1, 11}));
    // The mixture's variance equals mean_k(sigma_k^2 + mu_k^2) - mu^2.
    for (int i = 0; i < 3; ++i) {
        const double second = (g.variance[i] + g.mean[i] * g.mean[i] + g.variance[3 + i] +
                               g.mean[3 + i] * g.mean[3 + i]) /
                              2;
        ENSEMBLE_COMPARE_NEAR(m.variance[i], second - m.mean[i] * m.mean[i], 1e-12);
    }
    // Against targets 11.5, 13, 5: errors 0.5, 1, -4.
    const RegressionMetrics r = regressionMetrics(m, kTargets);
    ENSEMBLE_COMPARE_NEAR(r.rmse, std::sqrt(17.25 / 3), 1e-12);
    ENSEMBLE_COMPARE_NEAR(r.mae, 5.5 / 3, 1e-12);
    // |d| <= z sigma: 50% (z 0.674) only the first point; 90% and 95% all three.
    ENSEMBLE_COMPARE_NEAR(r.coverage[0], 1.0 / 3, 1e-12);
    ENSEMBLE_COMPARE_NEAR(r.coverage[1], 1.0, 1e-12);
    ENSEMBLE_COMPARE_NEAR(r.coverage[2], 1.0, 1e-12);
    ENSEMBLE_COMPARE_NEAR(r.nll,
                          (0.5 * std::log(2 * M_PI * 5) + 0.25 / 10 + 0.5 * std::log(2 * M_PI) +
                           0.5 + 0.5 * std::log(2 * M_PI * 11) + 16.0 / 22) /
                              3,
                          1e-12);
    ENSEMBLE_COMPARE_NEAR(r.sharpness, (std::sqrt(5.0) + 1 + std::sqrt(11.0)) / 3, 1e-12);
    // F(y) = 0.588, 0.841, 0.114: below 0.05 and 0.10 none; 0.15 .. 0.55 one; 0.60 .. 0.80
    // two; 0.85 .. 0.95 three.
    for (int j = 0; j < 19; ++j) {
        const double p = (j + 1) * 0.05;
        const double expected = p < 0.11 ? 0 : p < 0.58 ? 1.0 / 3 : p < 0.84 ? 2.0 / 3 : 1.0;
        ENSEMBLE_COMPARE_NEAR(r.calibrationObserved[static_cast<std::size_t>(j)], expected, 1e-12);
    }
}

void TestMetrics::regressionMetricsMatchIndependentComputation() {
    const MemberPredictions p = twoGaussianMembers();
    const RegressionReport r = evaluateRegression(p, kTargets, {}, 10.0, 2.0);
    compareToReference(r.ensemble, reference({11, 12, 9}, {5, 1, 11}, kTargets));
    compareToReference(r.members[0], reference({10, 12, 8}, {4, 1, 16}, kTargets));
    compareToReference(r.members[1], reference({12, 12, 10}, {4, 1, 4}, kTargets));
    ENSEMBLE_COMPARE_NEAR(r.aleatoricStdMean, (2 + 1 + std::sqrt(10.0)) / 3, 1e-12);
    ENSEMBLE_COMPARE_NEAR(r.epistemicStdMean, 2.0 / 3, 1e-12);
    // The size curve: member 0 alone, then the ensemble.
    QCOMPARE(r.sizeCurve.size(), std::size_t{2});
    ENSEMBLE_COMPARE_NEAR(r.sizeCurve[0].nll, r.members[0].nll, 1e-12);
    ENSEMBLE_COMPARE_NEAR(r.sizeCurve[0].rmse, r.members[0].rmse, 1e-12);
    ENSEMBLE_COMPARE_NEAR(r.sizeCurve[1].nll, r.ensemble.nll, 1e-12);
    ENSEMBLE_COMPARE_NEAR(r.sizeCurve[1].rmse, r.ensemble.rmse, 1e-12);
    // Leaving member 1 out makes the ensemble member 0.
    const RegressionReport one = evaluateRegression(p, kTargets, {1, 0}, 10.0, 2.0);
    ENSEMBLE_COMPARE_NEAR(one.ensemble.nll, r.members[0].nll, 1e-12);
    QCOMPARE(one.points.members, 1);
    // The trainer's split loss: the NLL (gaussian), the RMSE, no accuracy.
    const SplitEvaluation s =
        evaluateRegressionSplit(p, kTargets, {}, Likelihood::Gaussian, 10.0, 2.0);
    ENSEMBLE_COMPARE_NEAR(s.ensemble.loss, r.ensemble.nll, 1e-12);
    ENSEMBLE_COMPARE_NEAR(s.ensemble.rmse, r.ensemble.rmse, 1e-12);
    QVERIFY(std::isnan(s.ensemble.accuracy));
    ENSEMBLE_COMPARE_NEAR(s.members[1].loss, r.members[1].nll, 1e-12);
    // The JSON: the keys of the contract.
    const nlohmann::json j = regressionReportJson(r);
    QCOMPARE(j["task"].get<std::string>(), std::string("regression"));
    QCOMPARE(j["likelihood"].get<std::string>(), std::string("gaussian"));
    for (const char* key : {"rmse", "mae", "nll", "coverage", "calibration", "sharpness"}) {
        QVERIFY2(j["ensemble"].contains(key), key);
        QVERIFY2(j["members"][0].contains(key), key);
    }
    ENSEMBLE_COMPARE_NEAR(j["ensemble"]["coverage"]["50"].get<double>(), 1.0 / 3, 1e-12);
    QCOMPARE(j["ensemble"]["calibration"]["observed"].size(), std::size_t{19});
    QCOMPARE(j["calibration_levels"].size(), std::size_t{19});
    QCOMPARE(j["size_curve"].size(), std::size_t{2});
}

void TestMetrics::regressionZeroSigmaGivesNulls() {
    // Two mse members (one output each): members have sigma 0; the ensemble's epistemic
    // variance is 0 where they agree (point 1), so its NLL is undefined too.
    MemberPredictions p;
    p.members = 2;
    p.rows = 3;
    p.classes = 1;
    p.logProbs = {0, 1, -1, 1, 1, 0};
    const RegressionReport r = evaluateRegression(p, kTargets, {}, 10.0, 2.0);
    QVERIFY(std::isnan(r.members[0].nll));
    QVERIFY(std::isnan(r.members[0].coverage[1]));
    QVERIFY(std::isnan(r.members[0].calibrationGap));
    ENSEMBLE_COMPARE_NEAR(r.members[0].rmse, std::sqrt((2.25 + 1 + 9) / 3), 1e-12);
    ENSEMBLE_COMPARE_NEAR(r.members[0].sharpness, 0.0, 0.0);
    QVERIFY(std::isnan(r.ensemble.nll));
    ENSEMBLE_COMPARE_NEAR(r.points.epistemic[0], 1.0, 1e-12);
    ENSEMBLE_COMPARE_NEAR(r.points.aleatoric[0], 0.0, 0.0);
    const nlohmann::json j = regressionReportJson(r);
    QVERIFY(j["members"][0]["nll"].is_null());
    QVERIFY(j["members"][0]["coverage"].is_null());
    QVERIFY(j["members"][0]["calibration"].is_null());
    QVERIFY(j["ensemble"]["nll"].is_null());
    QVERIFY(j["ensemble"]["rmse"].is_number());
    // Where the members disagree everywhere the mse ensemble has an NLL: the mixture's.
    MemberPredictions q = p;
    q.logProbs = {0, 1, -1, 1, 0.5f, 0};
    const RegressionReport e = evaluateRegression(q, kTargets, {}, 10.0, 2.0);
    QVERIFY(std::isfinite(e.ensemble.nll));
    compareToReference(e.ensemble, reference({11, 11.5, 9}, {1, 0.25, 1}, kTargets));
    // The mse split loss is the mean squared error.
    const SplitEvaluation s = evaluateRegressionSplit(q, kTargets, {}, Likelihood::Mse, 10.0, 2.0);
    ENSEMBLE_COMPARE_NEAR(s.ensemble.loss, (0.25 + 2.25 + 16) / 3.0, 1e-12);
}

void TestMetrics::regressionTrainerReport() {
    ExperimentConfig config =
        parseConfig(nlohmann::json{{"dataset", {{"kind", "sine"}, {"n", 300}}},
                                   {"model", {{"hidden", {16}}, {"likelihood", "gaussian"}}},
                                   {"ensemble", {{"members", 3}}},
                                   {"training", {{"steps", 50}, {"batch_size", 32}}},
                                   {"backend", {{"kind", "cpu"}, {"threads", 1}}}});
    std::unique_ptr<Trainer> trainer = makeTrainer(config, nullptr);
    trainer->runSteps(50);
    const TrainerReport report = trainerReport(*trainer);
    QVERIFY(report.regression.has_value());
    const nlohmann::json& j = report.json;
    QCOMPARE(j["task"].get<std::string>(), std::string("regression"));
    QCOMPARE(j["members"].size(), std::size_t{3});
    QVERIFY(j["ensemble"]["test"].contains("rmse"));
    QVERIFY(!j["ensemble"]["test"].contains("accuracy"));
    // The split loss the trainer tracks equals the report's NLL on the same split.
    ENSEMBLE_COMPARE_NEAR(j["ensemble"]["test"]["loss"].get<double>(),
                          j["ensemble"]["nll"].get<double>(), 1e-9);
    ENSEMBLE_COMPARE_NEAR(j["members"][1]["test"]["rmse"].get<double>(),
                          j["members"][1]["rmse"].get<double>(), 1e-9);
}

QTEST_APPLESS_MAIN(TestMetrics)
#include "tst_metrics.moc"
