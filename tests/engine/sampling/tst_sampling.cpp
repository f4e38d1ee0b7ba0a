// Philox, the counter-based epoch permutations and the three ways members see the data.
#include <QtTest/QtTest>

#include <algorithm>
#include <cmath>
#include <set>
#include <vector>

#include "math/philox.h"
#include "sampling/batch_plan.h"
#include "support/test_support.h"

using namespace ensemble;

class TestSampling : public QObject {
    Q_OBJECT

  private Q_SLOTS:
    void philoxKnownAnswers();
    void uniformIndexStaysInRange();
    void permutationIsABijection_data();
    void permutationIsABijection();
    void noneGivesEveryMemberTheSameBatches();
    void everyEpochVisitsEveryRowOnce();
    void resampleCountsAreABootstrap();
    void resampleEpochVisitsTheMembersMultiset();
    void poissonWeightsHaveMeanOneAndAreStablePerRow();
    void planRowAgreesWithPlanMember();
    void shuffleGivesEachMemberItsOwnEpochOrder();
};

void TestSampling::philoxKnownAnswers() {
    // Known-answer vectors of Random123 (kat_vectors, philox4x32_10).
    const Philox4x32 zero = philox4x32_10(Philox4x32{{0, 0, 0, 0}}, 0, 0);
    QCOMPARE(zero.v[0], 0x6627e8d5u);
    QCOMPARE(zero.v[1], 0xe169c58du);
    QCOMPARE(zero.v[2], 0xbc57ac4cu);
    QCOMPARE(zero.v[3], 0x9b00dbd8u);
    const Philox4x32 ones = philox4x32_10(
        Philox4x32{{0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu}}, 0xffffffffu, 0xffffffffu);
    QCOMPARE(ones.v[0], 0x408f276du);
    QCOMPARE(ones.v[1], 0x41c83b0eu);
    QCOMPARE(ones.v[2], 0xa20bc7c6u);
    QCOMPARE(ones.v[3], 0x6d5451fdu);
    const Philox4x32 pi = philox4x32_10(
        Philox4x32{{0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u}}, 0xa4093822u, 0x299f31d0u);
    QCOMPARE(pi.v[0], 0xd16cfe09u);
    QCOMPARE(pi.v[1], 0x94fdccebu);
    QCOMPARE(pi.v[2], 0x5001e420u);
    QCOMPARE(pi.v[3], 0x24126ea1u);
}

void TestSampling::uniformIndexStaysInRange() {
    QCOMPARE(uniformIndex(0xffffffffu, 0xffffffffu, 10u), 9u);
    QCOMPARE(uniformIndex(0u, 0u, 10u), 0u);
    QCOMPARE(uniformIndex(0x80000000u, 0u, 10u), 5u);  // r = 2^63: exactly half of n
    // Roughly uniform: each of 7 buckets gets about 1/7 of 70000 draws.
    std::vector<int> hist(7, 0);
    for (uint64_t i = 0; i < 70000; ++i) {
        const Philox4x32 r = philoxDraw(3, RngPurpose::Resample, 0, i);
        ++hist[uniformIndex(r.v[0], r.v[1], 7)];
    }
    for (int h : hist) {
        QVERIFY(std::abs(h - 10000) < 400);  // ~4 standard deviations
    }
}

void TestSampling::permutationIsABijection_data() {
    QTest::addColumn<uint32_t>("n");
    for (uint32_t n : {1u, 2u, 3u, 7u, 16u, 100u, 1000u, 65537u}) {
        QTest::newRow(qPrintable(QString::number(n))) << n;
    }
}

void TestSampling::permutationIsABijection() {
    QFETCH(uint32_t, n);
    const Permutation p = makePermutation(11, 0, 0, n);
    std::vector<char> seen(n, 0);
    for (uint32_t i = 0; i < n; ++i) {
        const uint32_t y = p(i);
        QVERIFY(y < n);
        QVERIFY(!seen[y]);
        seen[y] = 1;
    }
    if (n >= 100) {
        // Not the identity, and a different epoch gives a different order.
        const Permutation q = makePermutation(11, 0, 1, n);
        int fixed = 0;
        int same = 0;
        for (uint32_t i = 0; i < n; ++i) {
            fixed += p(i) == i;
            same += p(i) == q(i);
        }
        QVERIFY(fixed < static_cast<int>(n) / 10);
        QVERIFY(same < static_cast<int>(n) / 10);
    }
}

void TestSampling::noneGivesEveryMemberTheSameBatches() {
    BatchPlanParams plan{5, 100, 32, BootstrapMode::None};
    std::vector<uint32_t> rows0(32), rows3(32);
    std::vector<float> w0(32), w3(32);
    for (uint64_t step = 0; step < 10; ++step) {
        planMember(plan, 0, step, rows0.data(), w0.data());
        planMember(plan, 3, step, rows3.data(), w3.data());
        QCOMPARE(rows0, rows3);
        QVERIFY(std::all_of(w0.begin(), w0.end(), [](float w) { return w == 1.0f; }));
    }
}

void TestSampling::everyEpochVisitsEveryRowOnce() {
    // The stream is continuous: batches straddle epoch boundaries but each epoch's N consecutive
    // samples are a permutation of the rows (N = 100, B = 32: 25 steps = 8 epochs exactly).
    BatchPlanParams plan{9, 100, 32, BootstrapMode::None};
    std::vector<uint32_t> stream;
    std::vector<uint32_t> rows(32);
    std::vector<float> w(32);
    for (uint64_t step = 0; step < 25; ++step) {
        planMember(plan, 0, step, rows.data(), w.data());
        stream.insert(stream.end(), rows.begin(), rows.end());
    }
    for (int epoch = 0; epoch < 8; ++epoch) {
        std::vector<uint32_t> e(stream.begin() + epoch * 100, stream.begin() + (epoch + 1) * 100);
        std::sort(e.begin(), e.end());
        for (uint32_t i = 0; i < 100; ++i) {
            QCOMPARE(e[i], i);
        }
    }
}

void TestSampling::resampleCountsAreABootstrap() {
    // Each member's resample has size N; about 1 - 1/e = 63.2% of rows appear at least once;
    // members differ.
    const uint32_t n = 100000;
    std::vector<std::vector<int>> counts(3, std::vector<int>(n, 0));
    for (uint32_t k = 0; k < 3; ++k) {
        for (uint32_t j = 0; j < n; ++j) {
            ++counts[k][resampleRow(21, k, j, n)];
        }
        long total = 0;
        int distinct = 0;
        for (int c : counts[k]) {
            total += c;
            distinct += c > 0;
        }
        QCOMPARE(total, static_cast<long>(n));
        ENSEMBLE_COMPARE_NEAR(distinct / double(n), 1.0 - std::exp(-1.0), 0.005);
    }
    QVERIFY(counts[0] != counts[1]);
    QVERIFY(counts[1] != counts[2]);
}

void TestSampling::resampleEpochVisitsTheMembersMultiset() {
    // Over one epoch (N samples), member k reads each row exactly as often as D_k holds it.
    const uint32_t n = 96;
    BatchPlanParams plan{4, n, 32, BootstrapMode::Resample};
    for (uint32_t k : {0u, 5u}) {
        std::vector<int> expected(n, 0);
        for (uint32_t j = 0; j < n; ++j) {
            ++expected[resampleRow(plan.seed, k, j, n)];
        }
        std::vector<int> seen(n, 0);
        std::vector<uint32_t> rows(32);
        std::vector<float> w(32);
        for (uint64_t step = 0; step < 3; ++step) {
            planMember(plan, k, step, rows.data(), w.data());
            for (uint32_t r : rows) {
                ++seen[r];
            }
        }
        QCOMPARE(seen, expected);
    }
    // Different members read different rows.
    std::vector<uint32_t> a(32), b(32);
    std::vector<float> w(32);
    planMember(plan, 0, 0, a.data(), w.data());
    planMember(plan, 1, 0, b.data(), w.data());
    QVERIFY(a != b);
}

void TestSampling::poissonWeightsHaveMeanOneAndAreStablePerRow() {
    const uint32_t n = 200000;
    double sum = 0.0;
    double sumSq = 0.0;
    int zeros = 0;
    for (uint32_t i = 0; i < n; ++i) {
        const double c = poissonCount(8, 2, i);
        sum += c;
        sumSq += c * c;
        zeros += c == 0;
    }
    const double mean = sum / n;
    ENSEMBLE_COMPARE_NEAR(mean, 1.0, test::kStatistical);
    ENSEMBLE_COMPARE_NEAR(sumSq / n - mean * mean, 1.0, 2 * test::kStatistical);  // Var = 1
    ENSEMBLE_COMPARE_NEAR(zeros / double(n), std::exp(-1.0), 0.005);              // P(0) = 1/e

    // The batches are shared (as with none), and a row's weight is the same in every epoch.
    BatchPlanParams plan{8, 50, 16, BootstrapMode::Poisson};
    std::vector<uint32_t> rows(16), other(16);
    std::vector<float> w(16), ow(16);
    for (uint64_t step = 0; step < 20; ++step) {
        planMember(plan, 2, step, rows.data(), w.data());
        planMember(plan, 6, step, other.data(), ow.data());
        QCOMPARE(rows, other);
        for (int b = 0; b < 16; ++b) {
            QCOMPARE(w[b], static_cast<float>(poissonCount(8, 2, rows[b])));
        }
    }
}

void TestSampling::planRowAgreesWithPlanMember() {
    // planRow (one slot, as a GPU thread computes it) and planMember (the CPU loop) agree.
    for (BootstrapMode mode : {BootstrapMode::None, BootstrapMode::Resample, BootstrapMode::Poisson,
                               BootstrapMode::Shuffle}) {
        BatchPlanParams plan{13, 37, 16, mode};
        std::vector<uint32_t> rows(16);
        std::vector<float> w(16);
        for (uint64_t step : {0ull, 1ull, 2ull, 7ull, 100ull}) {
            planMember(plan, 3, step, rows.data(), w.data());
            for (uint32_t b = 0; b < 16; ++b) {
                float weight = -1.0f;
                QCOMPARE(planRow(plan, 3, step, b, weight), rows[b]);
                QCOMPARE(weight, w[b]);
            }
        }
    }
}

// shuffle: every member walks all N rows once an epoch (weights 1, no resampling), each in its
// own order; member k's order is a function of (seed, k) alone, as resample's is.
void TestSampling::shuffleGivesEachMemberItsOwnEpochOrder() {
    QVERIFY(ownBatches(BootstrapMode::Shuffle) && ownBatches(BootstrapMode::Resample));
    QVERIFY(!ownBatches(BootstrapMode::None) && !ownBatches(BootstrapMode::Poisson));
    const auto streamOf = [](BootstrapMode mode, uint64_t seed, uint32_t member) {
        const BatchPlanParams plan{seed, 100, 32, mode};
        std::vector<uint32_t> stream;
        std::vector<uint32_t> rows(32);
        std::vector<float> w(32);
        for (uint64_t step = 0; step < 25; ++step) {  // 8 epochs exactly
            planMember(plan, member, step, rows.data(), w.data());
            for (float weight : w) {
                if (weight != 1.0f) {
                    return std::vector<uint32_t>{};
                }
            }
            stream.insert(stream.end(), rows.begin(), rows.end());
        }
        return stream;
    };
    std::vector<std::vector<uint32_t>> members;
    for (uint32_t k = 0; k < 3; ++k) {
        members.push_back(streamOf(BootstrapMode::Shuffle, 9, k));
        QCOMPARE(members.back().size(), std::size_t{800});
        for (int epoch = 0; epoch < 8; ++epoch) {
            std::vector<uint32_t> e(members.back().begin() + epoch * 100,
                                    members.back().begin() + (epoch + 1) * 100);
            std::sort(e.begin(), e.end());
            for (uint32_t i = 0; i < 100; ++i) {
                QCOMPARE(e[i], i);
            }
        }
    }
    QVERIFY(members[0] != members[1] && members[1] != members[2] && members[0] != members[2]);
    QVERIFY(members[0] != streamOf(BootstrapMode::None, 9, 0));
    QCOMPARE(streamOf(BootstrapMode::Shuffle, 9, 1), members[1]);
    QVERIFY(streamOf(BootstrapMode::Shuffle, 10, 1) != members[1]);
    // Its epoch order is resample's permutation (the member's stream) without the resample.
    const BatchPlanParams plan{9, 100, 32, BootstrapMode::Shuffle};
    const Permutation perm = makePermutation(9, 2, 0, 100);
    for (uint32_t b = 0; b < 32; ++b) {
        QCOMPARE(members[2][b], perm(b));
    }
    QCOMPARE(planStream(plan, 2), uint32_t{2});
}

QTEST_APPLESS_MAIN(TestSampling)
#include "tst_sampling.moc"
