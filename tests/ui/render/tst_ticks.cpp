// The app's one tick generator (ui/render/ticks.h) and the Qt Charts axes built on it: 1-2-5
// steps, whole-number axes for counts and sizes, labels that tell neighbours apart, SI suffixes
// for large step counts (the long runs' cases: K = 4 sizes, NLL near 2.3 at step 0, 200000 steps).
#include <QCategoryAxis>
#include <QtTest>

#include <cmath>
#include <vector>

#include "render/chart_axes.h"
#include "render/ticks.h"

using ensemble::ui::axisTicks;
using ensemble::ui::decadeRange;
using ensemble::ui::LogRange;
using ensemble::ui::niceStep;
using ensemble::ui::niceTicks;
using ensemble::ui::TickKind;
using ensemble::ui::tickLabels;

namespace {

QString joined(const QStringList& labels) {
    return labels.join(QLatin1Char(' '));
}

bool allDistinct(const QStringList& labels) {
    QStringList copy = labels;
    return copy.removeDuplicates() == 0;
}

}  // namespace

class TestTicks : public QObject {
    Q_OBJECT

  private Q_SLOTS:
    void stepsAreOneTwoFive();
    void aRangeGetsTwoTicksAndOneTickItsDigits();
    void ensembleSizeAxisIsWholeNumbers();
    void nllAtStepZeroTellsTicksApart();
    void largeStepCountsUseSiSuffixes();
    void fractionalSteps();
    void chartAxisCarriesTheLabels();
    void logAxesSpanWholeDecades();
};

void TestTicks::stepsAreOneTwoFive() {
    // (hi - lo) / target, rounded up to 1, 2 or 5 x 10^n (hand-computed).
    QCOMPARE(niceStep(0, 1, 5), 0.2);
    QCOMPARE(niceStep(0, 1, 4), 0.5);
    QCOMPARE(niceStep(0, 10, 5), 2.0);
    QCOMPARE(niceStep(0, 30, 5), 10.0);
    QCOMPARE(niceStep(0, 200000, 6), 50000.0);
    QCOMPARE(niceStep(0, 0.7, 5), 0.2);
    QCOMPARE(niceStep(1, 1, 5), 0.0);
    QCOMPARE(niceStep(0, std::nan(""), 5), 0.0);
    for (double hi : {0.37, 1.0, 3.3, 47.0, 1234.0, 987654.0}) {
        const double step = niceStep(0, hi, 5);
        const double mantissa = step / std::pow(10.0, std::floor(std::log10(step) + 1e-9));
        QVERIFY2(std::abs(mantissa - 1) < 1e-9 || std::abs(mantissa - 2) < 1e-9 ||
                     std::abs(mantissa - 5) < 1e-9,
                 qPrintable(QString::number(step)));
        const auto n = niceTicks(0, hi, 5).size();
        QVERIFY(n >= 3 && n <= 11);
    }
}

// The ensemble-size chart for K = 4 read "1, 1, 2, 3, 4": whole numbers on whole ticks.
void TestTicks::ensembleSizeAxisIsWholeNumbers() {
    const auto k4 = axisTicks(1, 4, 6, TickKind::Integer);
    QCOMPARE(k4.values, (std::vector<double>{1, 2, 3, 4}));
    QCOMPARE(joined(k4.labels), QStringLiteral("1 2 3 4"));
    QCOMPARE(k4.lo, 1.0);
    QCOMPARE(k4.hi, 4.0);
    // K = 2: never a half member.
    QCOMPARE(joined(axisTicks(1, 2, 6, TickKind::Integer).labels), QStringLiteral("1 2"));
    // K = 16: steps of 2 or 5, all whole.
    const auto k16 = axisTicks(1, 16, 6, TickKind::Integer);
    for (double v : k16.values) {
        QCOMPARE(v, std::round(v));
    }
    QVERIFY(allDistinct(k16.labels));
}

// At step 0 on mnist-cnn the NLL of every ensemble size is about ln 10 = 2.3026: five labels
// read "2.3". The labels carry the digits that tell the ticks apart.
void TestTicks::nllAtStepZeroTellsTicksApart() {
    const auto t = axisTicks(2.3021, 2.3034, 5);
    QCOMPARE(t.step, 0.0005);
    QCOMPARE(joined(t.labels), QStringLiteral("2.3020 2.3025 2.3030 2.3035"));
    QVERIFY(t.lo <= 2.3021 && t.hi >= 2.3034);
    // Unequal spacing (a clamped axis) still gives distinct labels.
    QVERIFY(allDistinct(tickLabels({2.30, 2.302, 2.304, 2.306})));
    QCOMPARE(joined(tickLabels({2.30, 2.302, 2.304, 2.306})),
             QStringLiteral("2.300 2.302 2.304 2.306"));
}

// Curve x labels read "200…" past 100,000 steps.
void TestTicks::largeStepCountsUseSiSuffixes() {
    const auto steps = axisTicks(0, 200000, 6, TickKind::Integer, 0.0);
    QCOMPARE(joined(steps.labels), QStringLiteral("0 50k 100k 150k 200k"));
    QCOMPARE(joined(tickLabels(niceTicks(0, 1.5e6, 3, true))), QStringLiteral("0 0.5M 1M 1.5M"));
    QCOMPARE(joined(tickLabels({1.2e6, 1.25e6, 1.3e6})), QStringLiteral("1.2M 1.25M 1.3M"));
    QCOMPARE(joined(tickLabels({0, 2e9, 4e9})), QStringLiteral("0 2G 4G"));
    QCOMPARE(joined(tickLabels({-20000, 0, 20000})), QStringLiteral("-20k 0 20k"));
    // Under 10^4 the plain number is short enough.
    QCOMPARE(joined(axisTicks(0, 3000, 6, TickKind::Integer).labels),
             QStringLiteral("0 500 1000 1500 2000 2500 3000"));
    // No label longer than five characters on a step axis up to 10^9.
    for (double hi : {1e4, 3.3e4, 1e5, 2.5e5, 1e6, 7e6, 1e8, 1e9}) {
        for (const QString& l : axisTicks(0, hi, 6, TickKind::Integer).labels) {
            QVERIFY2(l.size() <= 5, qPrintable(l));
        }
    }
}

void TestTicks::fractionalSteps() {
    QCOMPARE(joined(axisTicks(0, 1, 5).labels), QStringLiteral("0.0 0.2 0.4 0.6 0.8 1.0"));
    QCOMPARE(joined(axisTicks(0.93, 0.99, 5, TickKind::Real, 0.0, 1.0).labels),
             QStringLiteral("0.92 0.94 0.96 0.98 1.00"));
    // 0.1 + 0.2 is not 0.3: ticks are i * step, labels are exact.
    QCOMPARE(joined(axisTicks(0, 0.5, 5).labels), QStringLiteral("0.0 0.1 0.2 0.3 0.4 0.5"));
    const auto neg = axisTicks(-1.3, 0.7, 4);
    QCOMPARE(neg.step, 0.5);
    QCOMPARE(joined(neg.labels), QStringLiteral("-1.5 -1.0 -0.5 0.0 0.5 1.0"));
    // Clamped: accuracy never past 1.
    const auto acc = axisTicks(0.55, 0.999, 5, TickKind::Real, 0.0, 1.0);
    QCOMPARE(acc.hi, 1.0);
    // Values under 10^-3: scientific, still distinct.
    const QStringList tiny = tickLabels({1e-4, 2e-4, 3e-4});
    QVERIFY(allDistinct(tiny));
    QVERIFY(tiny.front().contains(QLatin1Char('e')));
}

// Qt Charts axes show the generator's labels at its values (a QValueAxis cannot write "50k").
void TestTicks::chartAxisCarriesTheLabels() {
    QCategoryAxis* axis = ensemble::ui::makeNiceAxis();
    ensemble::ui::setNiceRange(axis, 0, 190000, 6, TickKind::Integer, 0.0);
    QCOMPARE(joined(axis->categoriesLabels()), QStringLiteral("0 50k 100k 150k 200k"));
    QCOMPARE(axis->endValue(QStringLiteral("150k")), 150000.0);
    QCOMPARE(axis->min(), 0.0);
    QCOMPARE(axis->max(), 200000.0);
    // A new range replaces the labels.
    ensemble::ui::setNiceRange(axis, 1, 4, 6, TickKind::Integer);
    QCOMPARE(joined(axis->categoriesLabels()), QStringLiteral("1 2 3 4"));
    delete axis;
}

void TestTicks::logAxesSpanWholeDecades() {
    // Within one decade: widened to it, so both ends carry a label.
    LogRange r = decadeRange(0.3, 0.7);
    QVERIFY(qFuzzyCompare(r.lo, 0.1));
    QVERIFY(qFuzzyCompare(r.hi, 1.0));
    // Across decades: out to the enclosing powers of ten.
    r = decadeRange(0.003, 0.03 * 1.5);
    QVERIFY(qFuzzyCompare(r.lo, 0.001));
    QVERIFY(qFuzzyCompare(r.hi, 0.1));
    // Two powers of ten inside (0.001, 0.01, 0.1): left as it is.
    r = decadeRange(0.0007, 0.14);
    QCOMPARE(r.lo, 0.0007);
    QCOMPARE(r.hi, 0.14);
    // Powers of ten stay where they are; a single value gets its decade.
    r = decadeRange(0.01, 1.0);
    QVERIFY(qFuzzyCompare(r.lo, 0.01));
    QVERIFY(qFuzzyCompare(r.hi, 1.0));
    r = decadeRange(1.0, 1.0);
    QVERIFY(qFuzzyCompare(r.lo, 1.0));
    QVERIFY(qFuzzyCompare(r.hi, 10.0));
    // Not a log range: unchanged.
    r = decadeRange(0.0, 2.0);
    QCOMPARE(r.lo, 0.0);
    QCOMPARE(r.hi, 2.0);
}

void TestTicks::aRangeGetsTwoTicksAndOneTickItsDigits() {
    // The random acquisition's colour bar, scores in [0.0001, 0.9999]: step 0.5 fits one
    // tick, which was labelled "1" half-way up. A finer step fits two or more.
    const std::vector<double> ticks = niceTicks(0.0001, 0.9999, 4);
    QVERIFY2(ticks.size() >= 2, qPrintable(QString::number(ticks.size())));
    QCOMPARE(ticks.front(), 0.2);
    QCOMPARE(tickLabels(ticks).front(), QStringLiteral("0.2"));
    // Whole numbers stay whole: [0.5, 1.5] has the one member index 1.
    QCOMPARE(niceTicks(0.5, 1.5, 4, true), std::vector<double>{1.0});
    // A single tick is labelled with its own digits.
    QCOMPARE(tickLabels({0.5}), QStringList{QStringLiteral("0.5")});
    QCOMPARE(tickLabels({3.0}), QStringList{QStringLiteral("3")});
    QCOMPARE(tickLabels({0.125}), QStringList{QStringLiteral("0.125")});
}

QTEST_MAIN(TestTicks)
#include "tst_ticks.moc"
