// Split conformal prediction, selective prediction, the Philox halves and AUPR
// (metrics/conformal.h, metrics/ood.h) against hand-computed cases, brute force and the
// coverage guarantee on synthetic exchangeable data.
#include <QtTest/QtTest>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>
#include <set>
#include <vector>

#include "metrics/conformal.h"
#include "metrics/ood.h"
#include "metrics/report.h"
#include "support/test_support.h"

using namespace ensemble;
using ensemble::test::kExactDouble;

namespace {

// A calibrated classifier's rows: p ~ Dirichlet(1, ..., 1) (normalised exponentials), the
// label drawn from p. Every row is i.i.d., hence exchangeable.
void drawRows(std::mt19937_64& rng, int rows, int classes, std::vector<double>& p,
              std::vector<int32_t>& y) {
    std::exponential_distribution<double> e(1.0);
    std::uniform_real_distribution<double> u(0.0, 1.0);
    p.assign(static_cast<std::size_t>(rows) * classes, 0.0);
    y.assign(static_cast<std::size_t>(rows), 0);
    for (int i = 0; i < rows; ++i) {
        double* row = p.data() + static_cast<std::size_t>(i) * classes;
        double sum = 0.0;
        for (int c = 0; c < classes; ++c) {
            row[c] = e(rng);
            sum += row[c];
        }
        double draw = u(rng) * sum;
        int label = classes - 1;
        for (int c = 0; c < classes; ++c) {
            row[c] /= sum;
        }
        for (int c = 0; c < classes; ++c) {
            draw -= row[c] * sum;
            if (draw <= 0.0) {
                label = c;
                break;
            }
        }
        y[static_cast<std::size_t>(i)] = label;
    }
}

// Brute-force AURC: for each m, the m most confident rows found by repeated search for the
// largest remaining confidence (ties: the lowest row), their error rate; the mean over m.
double bruteAurc(const std::vector<double>& confidence, const std::vector<uint8_t>& correct) {
    const std::size_t n = confidence.size();
    std::vector<uint8_t> taken(n, 0);
    double riskSum = 0.0;
    double errors = 0.0;
    for (std::size_t m = 1; m <= n; ++m) {
        std::size_t best = n;
        for (std::size_t i = 0; i < n; ++i) {
            if (!taken[i] && (best == n || confidence[i] > confidence[best])) {
                best = i;
            }
        }
        taken[best] = 1;
        errors += correct[best] ? 0.0 : 1.0;
        riskSum += errors / static_cast<double>(m);
    }
    return riskSum / static_cast<double>(n);
}

}  // namespace

class TestConformal : public QObject {
    Q_OBJECT

  private slots:
    void halvesArePermutation();
    void quantileRank();
    void scoresAndSetsHandCase();
    void setsBySize();
    void coverageInExpectation();
    void regressionCoverageInExpectation();
    void aurcHandCaseAndBruteForce();
    void auprHandCases();
    void evalReportBlocks();
};

void TestConformal::halvesArePermutation() {
    const RowHalves h = splitHalves(101, 7);
    QCOMPARE(h.calibration.size(), std::size_t{51});  // llround(50.5) = 51
    QCOMPARE(h.measure.size(), std::size_t{50});
    std::set<int64_t> all(h.calibration.begin(), h.calibration.end());
    all.insert(h.measure.begin(), h.measure.end());
    QCOMPARE(all.size(), std::size_t{101});
    QCOMPARE(*all.begin(), int64_t{0});
    QCOMPARE(*all.rbegin(), int64_t{100});
    QVERIFY(std::is_sorted(h.calibration.begin(), h.calibration.end()));
    // Deterministic in the seed, different for another seed, and not the first half.
    QCOMPARE(splitHalves(101, 7).calibration, h.calibration);
    QVERIFY(splitHalves(101, 8).calibration != h.calibration);
    std::vector<int64_t> firstHalf(51);
    std::iota(firstHalf.begin(), firstHalf.end(), int64_t{0});
    QVERIFY(h.calibration != firstHalf);
    // Each row lands in the calibration half about half the time over seeds (a fair split):
    // 400 seeds, sd sqrt(400 * 0.25) = 10 rows: within 5 sd.
    std::vector<int> hits(10, 0);
    for (uint64_t s = 0; s < 400; ++s) {
        for (int64_t r : splitHalves(10, s).calibration) {
            ++hits[static_cast<std::size_t>(r)];
        }
    }
    for (int c : hits) {
        QVERIFY2(std::abs(c - 200) <= 50, qPrintable(QString::number(c)));
    }
}

void TestConformal::quantileRank() {
    std::vector<double> s(9);
    std::iota(s.begin(), s.end(), 1.0);  // 1..9
    // (9 + 1)(1 - 0.1) = 9: the 9th smallest.
    QCOMPARE(conformalQuantile(s, 0.1), 9.0);
    // n = 8: ceil(9 * 0.9) = 9 > 8: no finite threshold.
    QVERIFY(std::isinf(conformalQuantile(std::vector<double>(s.begin(), s.end() - 1), 0.1)));
    // n = 19, alpha = 0.2: ceil(20 * 0.8) = 16.
    std::vector<double> t(19);
    std::iota(t.begin(), t.end(), 1.0);
    std::reverse(t.begin(), t.end());
    QCOMPARE(conformalQuantile(t, 0.2), 16.0);
    // alpha = 0.5 with n = 3: ceil(4 * 0.5) = 2.
    QCOMPARE(conformalQuantile({0.3, 0.1, 0.2}, 0.5), 0.2);
}

void TestConformal::scoresAndSetsHandCase() {
    const double p[] = {0.2, 0.5, 0.3};
    ENSEMBLE_COMPARE_NEAR(conformalScore(ConformalScore::Lac, p, 3, 0), 0.8, kExactDouble);
    // APS ranks 1 (0.5), 2 (0.3), 0 (0.2): cumulative 0.5, 0.8, 1.0.
    ENSEMBLE_COMPARE_NEAR(conformalScore(ConformalScore::Aps, p, 3, 1), 0.5, kExactDouble);
    ENSEMBLE_COMPARE_NEAR(conformalScore(ConformalScore::Aps, p, 3, 2), 0.8, kExactDouble);
    ENSEMBLE_COMPARE_NEAR(conformalScore(ConformalScore::Aps, p, 3, 0), 1.0, kExactDouble);
    // LAC at q = 0.6: {c : p_c >= 0.4} = {1}; at 0.75: {1, 2}.
    QCOMPARE(conformalSet(ConformalScore::Lac, p, 3, 0.6), (std::vector<uint8_t>{0, 1, 0}));
    QCOMPARE(conformalSet(ConformalScore::Lac, p, 3, 0.75), (std::vector<uint8_t>{0, 1, 1}));
    // APS takes classes in rank order while their cumulative mass is <= q: at q = 0.6 class 1
    // (0.5), not 2 (0.8); at 0.85 classes 1 and 2, not 0 (1.0); at 0.4 none.
    QCOMPARE(conformalSet(ConformalScore::Aps, p, 3, 0.6), (std::vector<uint8_t>{0, 1, 0}));
    QCOMPARE(conformalSet(ConformalScore::Aps, p, 3, 0.85), (std::vector<uint8_t>{0, 1, 1}));
    QCOMPARE(conformalSet(ConformalScore::Aps, p, 3, 0.4), (std::vector<uint8_t>{0, 0, 0}));
    // A tie ranks the lower index first.
    const double tie[] = {0.4, 0.4, 0.2};
    ENSEMBLE_COMPARE_NEAR(conformalScore(ConformalScore::Aps, tie, 3, 1), 0.8, kExactDouble);
}

void TestConformal::setsBySize() {
    // Three rows, LAC at q = 0.57 ({c : p_c >= 0.43}): sets {0} (label 0, covered), {0, 1}
    // (label 2, missed), {} (label 1, missed): sizes 1, 2, 0.
    const std::vector<double> p = {0.9, 0.05, 0.05, 0.5, 0.45, 0.05, 0.4, 0.3, 0.3};
    ConformalThreshold t;
    t.threshold = 0.57;
    const ConformalSets s = conformalSets(t, p, 3, {0, 2, 1});
    QCOMPARE(s.rows, int64_t{3});
    ENSEMBLE_COMPARE_NEAR(s.coverage, 1.0 / 3.0, kExactDouble);
    ENSEMBLE_COMPARE_NEAR(s.setSizeMean, 1.0, kExactDouble);
    QCOMPARE(s.countBySize.size(), std::size_t{4});
    for (std::size_t k = 0; k < 4; ++k) {
        QCOMPARE(s.countBySize[k], int64_t{k < 3 ? 1 : 0});
    }
    QCOMPARE(s.coverageBySize[0], 0.0);
    QCOMPARE(s.coverageBySize[1], 1.0);
    QCOMPARE(s.coverageBySize[2], 0.0);
    QVERIFY(std::isnan(s.coverageBySize[3]));
}

void TestConformal::coverageInExpectation() {
    // With n exchangeable calibration rows and continuous scores, the coverage averaged over
    // calibration draws is exactly k / (n + 1), k = ceil((n + 1)(1 - alpha)): here n = 50,
    // alpha = 0.1, k = 46, 0.90196, inside [1 - alpha, 1 - alpha + 1/(n+1)] = [0.9, 0.91961].
    // Tolerance: one repeat's coverage has sd ~ sqrt(k(n+1-k)/((n+1)^2 (n+2))) = 0.041 from
    // the calibration draw plus sqrt(0.09 / 1000) = 0.0095 from the 1000 test rows, 0.042 in
    // all; the mean of 800 repeats has sd 0.0015, and 4 sd = 0.006 is allowed outside the
    // bounds. A quantile one rank too low (45 / 51 = 0.882) fails this.
    const int n = 50;
    const int test = 1000;
    const int repeats = 800;
    const int classes = 5;
    const double alpha = 0.1;
    const double slack = 0.006;
    for (ConformalScore score : {ConformalScore::Lac, ConformalScore::Aps}) {
        std::mt19937_64 rng(score == ConformalScore::Lac ? 1 : 2);
        double sum = 0.0;
        std::vector<double> calP, testP;
        std::vector<int32_t> calY, testY;
        for (int r = 0; r < repeats; ++r) {
            drawRows(rng, n, classes, calP, calY);
            drawRows(rng, test, classes, testP, testY);
            const ConformalThreshold t = calibrateConformal(score, calP, classes, calY, alpha);
            sum += conformalSets(t, testP, classes, testY).coverage;
        }
        const double mean = sum / repeats;
        QVERIFY2(mean >= 1.0 - alpha - slack && mean <= 1.0 - alpha + 1.0 / (n + 1) + slack,
                 qPrintable(QStringLiteral("%1 coverage %2").arg(toString(score)).arg(mean)));
    }
}

void TestConformal::regressionCoverageInExpectation() {
    // The same guarantee for intervals mu +- q sigma with a misspecified sigma (the model says
    // 1, the data have 2): normalised scores are still exchangeable. Same bounds and tolerance
    // as coverageInExpectation (continuous scores; 800 repeats of n = 50 and 1000 test rows).
    const int n = 50;
    const int test = 1000;
    const int repeats = 800;
    const double alpha = 0.1;
    std::mt19937_64 rng(3);
    std::normal_distribution<double> noise(0.0, 2.0);
    const auto draw = [&](int rows, std::vector<double>& mean, std::vector<double>& variance,
                          std::vector<float>& y) {
        mean.assign(static_cast<std::size_t>(rows), 1.0);
        variance.assign(static_cast<std::size_t>(rows), 1.0);
        y.resize(static_cast<std::size_t>(rows));
        for (float& v : y) {
            v = static_cast<float>(1.0 + noise(rng));
        }
    };
    double sum = 0.0;
    std::vector<double> m, v, tm, tv;
    std::vector<float> y, ty;
    for (int r = 0; r < repeats; ++r) {
        draw(n, m, v, y);
        draw(test, tm, tv, ty);
        const double q = calibrateIntervals(m, v, y, alpha);
        const ConformalIntervals iv = measureIntervals(q, alpha, n, tm, tv, ty);
        ENSEMBLE_COMPARE_NEAR(iv.widthMean, 2.0 * q, 1e-9);
        sum += iv.coverage;
    }
    const double mean = sum / repeats;
    QVERIFY2(mean >= 0.9 - 0.006 && mean <= 0.9 + 1.0 / 51 + 0.006,
             qPrintable(QString::number(mean)));
}

void TestConformal::aurcHandCaseAndBruteForce() {
    // Risks at m = 1..4: 0, 1/2, 1/3, 1/2; AURC their mean.
    const SelectiveCurve s = selectivePrediction({0.9, 0.8, 0.7, 0.6}, {1, 0, 1, 0});
    ENSEMBLE_COMPARE_NEAR(s.aurc, (0.0 + 0.5 + 1.0 / 3.0 + 0.5) / 4.0, kExactDouble);
    // 90% of 4 rows: ceil(3.6) = 4 rows, accuracy 1/2; 95%: also 4.
    ENSEMBLE_COMPARE_NEAR(s.accuracyAt90, 0.5, kExactDouble);
    QCOMPARE(s.coverage.back(), 1.0);
    QCOMPARE(s.risk.back(), 0.5);
    // Random cases with many ties (confidences on a coarse grid) against brute force.
    std::mt19937_64 rng(5);
    std::uniform_int_distribution<int> level(0, 6);
    std::bernoulli_distribution right(0.7);
    for (int trial = 0; trial < 20; ++trial) {
        const std::size_t n = 1 + static_cast<std::size_t>(trial) * 13;
        std::vector<double> c(n);
        std::vector<uint8_t> ok(n);
        for (std::size_t i = 0; i < n; ++i) {
            c[i] = level(rng) / 6.0;
            ok[i] = right(rng) ? 1 : 0;
        }
        const SelectiveCurve r = selectivePrediction(c, ok);
        ENSEMBLE_COMPARE_NEAR(r.aurc, bruteAurc(c, ok), kExactDouble);
        // Accuracy at 90%: the first ceil(0.9 n) rows of the brute-force order.
        std::vector<std::size_t> order(n);
        std::iota(order.begin(), order.end(), std::size_t{0});
        std::stable_sort(order.begin(), order.end(),
                         [&](std::size_t a, std::size_t b) { return c[a] > c[b]; });
        const auto m = static_cast<std::size_t>(std::ceil(0.9 * static_cast<double>(n) - 1e-9));
        double right90 = 0.0;
        for (std::size_t i = 0; i < m; ++i) {
            right90 += ok[order[i]];
        }
        ENSEMBLE_COMPARE_NEAR(r.accuracyAt90, right90 / static_cast<double>(m), kExactDouble);
    }
}

void TestConformal::auprHandCases() {
    // Positives 0.9, 0.6; negatives 0.8, 0.3. Thresholds down: 0.9 (+) recall 1/2 precision 1;
    // 0.8 (-); 0.6 (+) recall 1 precision 2/3. AP = 1/2 * 1 + 1/2 * 2/3.
    ENSEMBLE_COMPARE_NEAR(aupr({0.9, 0.6}, {0.8, 0.3}), 0.5 + 1.0 / 3.0, kExactDouble);
    ENSEMBLE_COMPARE_NEAR(aupr({0.9, 0.8}, {0.1, 0.2}), 1.0, kExactDouble);
    // A tie enters as one group: recall 1 at precision 1/2.
    ENSEMBLE_COMPARE_NEAR(aupr({0.5}, {0.5}), 0.5, kExactDouble);
    // Positives 3, 1 and negative 2, 2 tied with positive 2: thresholds 3 (P 1, R 1/3),
    // 2 (group of +,-,-: P 2/4, R 2/3), 1 (P 3/5, R 1): 1/3 (1 + 1/2 + 3/5).
    ENSEMBLE_COMPARE_NEAR(aupr({3, 2, 1}, {2, 2}), (1.0 + 0.5 + 0.6) / 3.0, kExactDouble);
    QVERIFY(std::isnan(aupr({}, {1.0})));
}

void TestConformal::evalReportBlocks() {
    // evaluateEnsemble with conformalAlpha: the report's "conformal" and "selective" blocks
    // as the shift report's contract spells them, on the same halves as the temperature fit.
    std::mt19937_64 rng(9);
    const int rows = 200;
    const int classes = 4;
    std::vector<double> p;
    std::vector<int32_t> y;
    drawRows(rng, rows, classes, p, y);
    MemberPredictions preds;
    preds.members = 1;
    preds.rows = rows;
    preds.classes = classes;
    for (double v : p) {
        preds.logProbs.push_back(static_cast<float>(std::log(std::max(v, 1e-12))));
    }
    EvaluationInput input;
    input.predictions = &preds;
    input.labels = &y;
    EvaluationOptions options;
    options.seed = 3;
    options.conformalAlpha = 0.2;
    const EnsembleReport r = evaluateEnsemble(input, options);
    const nlohmann::json j = reportJson(r);
    QCOMPARE(j["conformal"]["alpha"].get<double>(), 0.2);
    QCOMPARE(j["conformal"]["rows"]["calibration"].get<int>(), 100);
    QCOMPARE(j["conformal"]["rows"]["measure"].get<int>(), 100);
    for (const char* score : {"lac", "aps"}) {
        const nlohmann::json& b = j["conformal"][score];
        QVERIFY(b["coverage"].is_number());
        QVERIFY(b["set_size_mean"].is_number());
        QCOMPARE(b["coverage_by_size"].size(), std::size_t{classes + 1});
    }
    for (const char* ranking : {"max_prob", "mutual_information"}) {
        const nlohmann::json& b = j["selective"][ranking];
        for (const char* key : {"aurc", "accuracy_at_90", "accuracy_at_95"}) {
            QVERIFY2(b.contains(key), key);
        }
    }
    // The temperature's halves are the conformal ones.
    QCOMPARE(j["temperature"]["validation_rows"].get<int>(), 100);
    QCOMPARE(j["temperature"]["halves"]["seed"].get<int>(), 3);
    // Its numbers equal calibrating and measuring by hand on splitHalves(200, 3).
    const RowHalves h = splitHalves(rows, 3);
    std::vector<double> calP, measureP;
    for (int64_t i : h.calibration) {
        calP.insert(calP.end(), p.begin() + i * classes, p.begin() + (i + 1) * classes);
    }
    for (int64_t i : h.measure) {
        measureP.insert(measureP.end(), p.begin() + i * classes, p.begin() + (i + 1) * classes);
    }
    const ConformalThreshold t =
        calibrateConformal(ConformalScore::Lac, calP, classes, selectValues(y, h.calibration), 0.2);
    const ConformalSets s = conformalSets(t, measureP, classes, selectValues(y, h.measure));
    // The report's probabilities come from float log-probabilities: float rounding apart.
    ENSEMBLE_COMPARE_NEAR(r.conformal->lac.coverage, s.coverage, 0.011);
    ENSEMBLE_COMPARE_NEAR(r.conformal->lacThreshold.threshold, t.threshold, 1e-5);
}

QTEST_GUILESS_MAIN(TestConformal)
#include "tst_conformal.moc"
