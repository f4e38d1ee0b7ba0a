// CurveStore (engine/metrics/curve_store.h), the bounded learning-curve store, against brute
// force over every appended point: what it draws are real points, in step order, within the
// budget; the extremes and the latest points survive; it stays bounded at 10^6 appends; a
// zoomed range is drawn from the finer stored buckets, exactly as M4 over the raw points.
#include <QTest>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <random>
#include <vector>

#include "metrics/curve_store.h"

using ensemble::CurvePoint;
using ensemble::CurveStore;

namespace {

// A noisy decreasing loss with a few spikes, one point every `every` steps.
std::vector<CurvePoint> lossCurve(int n, int64_t every, unsigned seed) {
    std::mt19937 rng(seed);
    std::normal_distribution<double> noise(0.0, 0.02);
    std::vector<CurvePoint> out;
    for (int i = 0; i < n; ++i) {
        double v = 1.0 / (1.0 + 0.01 * i) + noise(rng);
        if (i % 997 == 500) {
            v += 3.0;  // a spike
        }
        out.push_back({i * every, static_cast<float>(v)});
    }
    return out;
}

CurveStore fill(const std::vector<CurvePoint>& raw, int capacity = 64, int latest = 16) {
    CurveStore store(capacity, latest);
    for (const CurvePoint& p : raw) {
        store.append(p.step, p.value);
    }
    return store;
}

// M4 by brute force: for each window [k * width, (k + 1) * width) holding points of `raw`
// with steps in [firstWindow * width, lastWindow end), its first, lowest, highest and last
// point (earliest on ties), in step order, without repeats.
std::vector<CurvePoint> bruteM4(const std::vector<CurvePoint>& raw, int64_t width,
                                int64_t firstWindow, int64_t windows) {
    std::map<int64_t, std::vector<CurvePoint>> byWindow;
    for (const CurvePoint& p : raw) {
        const int64_t w = p.step / width;
        if (w >= firstWindow && w < firstWindow + windows) {
            byWindow[w].push_back(p);
        }
    }
    std::vector<CurvePoint> out;
    for (const auto& [w, points] : byWindow) {
        CurvePoint low = points.front();
        CurvePoint high = points.front();
        for (const CurvePoint& p : points) {
            if (p.value < low.value) {
                low = p;
            }
            if (p.value > high.value) {
                high = p;
            }
        }
        std::vector<CurvePoint> four{points.front(), low, high, points.back()};
        std::stable_sort(four.begin(), four.end(),
                         [](const CurvePoint& a, const CurvePoint& b) { return a.step < b.step; });
        for (const CurvePoint& p : four) {
            if (out.empty() || !(out.back() == p)) {
                out.push_back(p);
            }
        }
    }
    return out;
}

bool contains(const std::vector<CurvePoint>& points, const CurvePoint& p) {
    return std::find(points.begin(), points.end(), p) != points.end();
}

}  // namespace

class TestCurveStore : public QObject {
    Q_OBJECT

  private Q_SLOTS:
    void fewPointsAreKeptExactly() {
        const std::vector<CurvePoint> raw = lossCurve(12, 10, 1);
        const CurveStore store = fill(raw);
        QCOMPARE(store.points(1000), raw);
        QCOMPARE(store.appended(), int64_t{12});
    }

    void drawsRealPointsInOrderWithinBudget() {
        const std::vector<CurvePoint> raw = lossCurve(20'000, 3, 2);
        const CurveStore store = fill(raw);
        for (int budget : {8, 40, 100, 333, 2000}) {
            const std::vector<CurvePoint> drawn = store.points(budget);
            QVERIFY(!drawn.empty());
            QVERIFY2(static_cast<int>(drawn.size()) <= std::max(8, budget),
                     qPrintable(QString::number(drawn.size())));
            for (std::size_t i = 0; i < drawn.size(); ++i) {
                QVERIFY(contains(raw, drawn[i]));
                if (i > 0) {
                    QVERIFY(drawn[i - 1].step <= drawn[i].step);
                }
            }
        }
    }

    void keepsTheExtremesAndTheEnds() {
        const std::vector<CurvePoint> raw = lossCurve(50'000, 7, 3);
        const CurveStore store = fill(raw);
        const auto [low, high] = std::minmax_element(
            raw.begin(), raw.end(),
            [](const CurvePoint& a, const CurvePoint& b) { return a.value < b.value; });
        for (int budget : {8, 64, 500}) {
            const std::vector<CurvePoint> drawn = store.points(budget);
            QVERIFY(contains(drawn, *low));
            QVERIFY(contains(drawn, *high));
            QCOMPARE(drawn.front(), raw.front());
            QCOMPARE(drawn.back(), raw.back());
        }
        // Every spike (a local extreme far above its neighbours) is still drawn when there are
        // more buckets than spikes.
        const std::vector<CurvePoint> drawn = fill(raw, 512, 16).points(1000);
        for (std::size_t i = 500; i < raw.size(); i += 997) {
            const bool spikeShown =
                std::any_of(drawn.begin(), drawn.end(), [&](const CurvePoint& p) {
                    return p.value > 2.5f && std::abs(p.step - raw[i].step) < 997 * 7;
                });
            QVERIFY2(spikeShown, qPrintable(QStringLiteral("spike at step %1").arg(raw[i].step)));
        }
    }

    void keepsTheLatestPointsExactly() {
        const std::vector<CurvePoint> raw = lossCurve(30'000, 1, 4);
        const CurveStore store = fill(raw, 64, 16);
        QCOMPARE(store.latestCount(), std::size_t{16});
        const std::vector<CurvePoint> drawn = store.points(400);
        const std::vector<CurvePoint> tail(drawn.end() - 16, drawn.end());
        QCOMPARE(tail, std::vector<CurvePoint>(raw.end() - 16, raw.end()));
    }

    void staysBoundedOverAMillionAppends() {
        CurveStore store(512, 32);
        std::mt19937 rng(5);
        std::uniform_real_distribution<double> u(0.0, 1.0);
        for (int64_t step = 0; step < 1'000'000; ++step) {
            store.append(step, u(rng));
            if (step % 100'003 == 0) {
                QVERIFY(store.bucketCount() <= 512);
            }
        }
        QCOMPARE(store.appended(), int64_t{1'000'000});
        QVERIFY(store.bucketCount() <= 512);
        QVERIFY(store.bucketCount() >= 256);  // merging halves it, never below half
        QCOMPARE(store.latestCount(), std::size_t{32});
        QVERIFY(store.points(600).size() <= 600);
        QCOMPARE(store.lastStep(), int64_t{999'999});
        QCOMPARE(store.firstStep(), int64_t{0});
    }

    void wholeRangeIsM4OfMergedBuckets() {
        const std::vector<CurvePoint> raw = lossCurve(40'000, 5, 6);
        const CurveStore store = fill(raw, 64, 16);
        const std::vector<CurvePoint> old(raw.begin(), raw.end() - 16);
        const int64_t width = store.bucketWidth();
        const int64_t stored = old.back().step / width + 1;
        const int budget = 4 * 8 + 16;  // 8 drawn buckets and the latest points
        const int64_t group = (stored + 7) / 8;
        std::vector<CurvePoint> expected = bruteM4(old, width * group, 0, stored);
        expected.insert(expected.end(), raw.end() - 16, raw.end());
        QCOMPARE(store.points(budget), expected);
    }

    void zoomRefinesFromTheStoredBuckets() {
        const std::vector<CurvePoint> raw = lossCurve(40'000, 5, 7);
        const CurveStore store = fill(raw, 256, 16);
        const int64_t width = store.bucketWidth();
        // A tenth of the run, well before the latest points: drawn from the stored buckets.
        const int64_t from = 50'000;
        const int64_t to = 70'000;
        const std::vector<CurvePoint> zoomed = store.points(from, to, 4000);
        const std::vector<CurvePoint> expected =
            bruteM4(raw, width, from / width, to / width - from / width + 1);
        QCOMPARE(zoomed, expected);
        // More detail in the range than the whole curve drawn with the same budget had there.
        const std::vector<CurvePoint> whole = store.points(400);
        const auto inRange = [&](const std::vector<CurvePoint>& v) {
            return std::count_if(v.begin(), v.end(), [&](const CurvePoint& p) {
                return p.step >= from && p.step <= to;
            });
        };
        QVERIFY(inRange(zoomed) > 2 * inRange(whole));
        QVERIFY(static_cast<int>(store.points(from, to, 100).size()) <= 100);
    }

    void ignoresNonFiniteAndStepsGoingBack() {
        CurveStore store(16, 4);
        store.append(10, 1.0);
        store.append(11, std::nan(""));
        store.append(12, INFINITY);
        store.append(5, 2.0);
        store.append(13, 0.5);
        QCOMPARE(store.appended(), int64_t{2});
        QCOMPARE(store.points(100), (std::vector<CurvePoint>{{10, 1.0f}, {13, 0.5f}}));
    }
};

QTEST_APPLESS_MAIN(TestCurveStore)
#include "tst_curve_store.moc"
