// BatchBALD (active/batch_bald.h) and the labelled set's classes (active/class_balance.h): the
// joint mutual information against brute-force enumeration of every label configuration and
// member, the greedy order (the first pick is BALD's, a duplicate is passed over), the sampled
// estimator against the exact value, determinism; the class counts against a hand count and
// the class cap, alone and in the loop.
#include <QtTest/QtTest>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <numeric>
#include <vector>

#include <nlohmann/json.hpp>

#include "active/active_learning.h"
#include "active/batch_bald.h"
#include "active/class_balance.h"
#include "config/config.h"
#include "core/errors.h"
#include "math/philox.h"
#include "support/active_moons.h"
#include "train/trainer.h"

using namespace ensemble;
using nlohmann::json;

namespace {

using Probs = std::vector<std::vector<std::vector<double>>>;  // [member][row][class]

// Member predictions from probabilities probs[k][i][c], stored as the trainer gives them
// (log-probabilities in float); `stored` gets the distributions that float holds (normalised
// again, as batch_bald.cpp reads them), the numbers the references below must use.
MemberPredictions predictions(const Probs& probs, Probs* stored = nullptr) {
    MemberPredictions p;
    p.members = static_cast<int>(probs.size());
    p.rows = static_cast<int64_t>(probs[0].size());
    p.classes = static_cast<int>(probs[0][0].size());
    Probs back = probs;
    for (std::size_t k = 0; k < probs.size(); ++k) {
        for (std::size_t i = 0; i < probs[k].size(); ++i) {
            double sum = 0.0;
            for (std::size_t c = 0; c < probs[k][i].size(); ++c) {
                const float lp = static_cast<float>(std::log(probs[k][i][c]));
                p.logProbs.push_back(lp);
                back[k][i][c] = std::exp(static_cast<double>(lp));
                sum += back[k][i][c];
            }
            for (double& v : back[k][i]) {
                v /= sum;
            }
        }
    }
    if (stored != nullptr) {
        *stored = back;
    }
    return p;
}

// A member's distribution over C classes from Philox draws (normalised uniform draws, never 0).
Probs randomProbs(int members, int rows, int classes, uint64_t seed) {
    Probs out(static_cast<std::size_t>(members),
              std::vector<std::vector<double>>(static_cast<std::size_t>(rows),
                                               std::vector<double>(classes)));
    for (int k = 0; k < members; ++k) {
        for (int i = 0; i < rows; ++i) {
            double sum = 0.0;
            for (int c = 0; c < classes; ++c) {
                const Philox4x32 d = philoxDraw(seed, RngPurpose::DataGen, static_cast<uint32_t>(k),
                                                static_cast<uint64_t>(i * classes + c));
                // Cubed, so some members are confident and they disagree.
                const double u = 0.02 + d.v[0] / 4294967296.0;
                out[k][i][c] = u * u * u;
                sum += out[k][i][c];
            }
            for (double& v : out[k][i]) {
                v /= sum;
            }
        }
    }
    return out;
}

// I(y_rows; w) by enumeration of every configuration y of the rows' labels: the mixture's
// joint entropy less the mean of each member's joint entropy, each joint formed as the product
// of the rows' probabilities over the whole configuration (no use of the decomposition of the
// conditional entropy into per-row terms).
double bruteForceInformation(const Probs& probs, const std::vector<int>& rows) {
    const int K = static_cast<int>(probs.size());
    const int C = static_cast<int>(probs[0][0].size());
    int configurations = 1;
    for (std::size_t i = 0; i < rows.size(); ++i) {
        configurations *= C;
    }
    double mixture = 0.0;
    double members = 0.0;
    for (int y = 0; y < configurations; ++y) {
        std::vector<double> joint(static_cast<std::size_t>(K), 1.0);
        int rest = y;
        for (int r : rows) {
            const int label = rest % C;
            rest /= C;
            for (int k = 0; k < K; ++k) {
                joint[static_cast<std::size_t>(k)] *= probs[k][r][label];
            }
        }
        double mean = 0.0;
        for (double j : joint) {
            mean += j / K;
            members -= j > 0.0 ? j * std::log(j) / K : 0.0;
        }
        mixture -= mean > 0.0 ? mean * std::log(mean) : 0.0;
    }
    return mixture - members;
}

// A small 2-D experiment for the loop (as tst_active's): moons, K = 3, a tiny MLP, one thread.
json moonsConfig() {
    return ensemble::test::activeMoonsConfig();
}

// The learner's members' predictions on train rows `rows` (what scorePool scores).
MemberPredictions predictRows(ActiveLearner& learner, const std::vector<int64_t>& rows) {
    const Dataset& train = learner.data().train;
    std::vector<float> x;
    for (int64_t r : rows) {
        x.insert(x.end(), train.row(r), train.row(r) + train.features);
    }
    return learner.trainer()->predictRaw(x.data(), static_cast<int64_t>(rows.size()));
}

}  // namespace

class TestBatchBald : public QObject {
    Q_OBJECT

  private slots:
    void jointInformationMatchesEnumeration();
    void greedyJointIsEnumeratedJoint();
    void firstPickIsBaldsTop();
    void duplicateIsPassedOver();
    void sampledEstimateConvergesToExact();
    void seededAndDeterministic();
    void loopAcquiresTheGreedyBatch();
    void classCountsByHand();
    void capHolds();
    void capHoldsInTheLoop();
};

void TestBatchBald::jointInformationMatchesEnumeration() {
    for (int K : {2, 3}) {
        for (int C : {2, 3}) {
            for (int n : {2, 3}) {
                Probs stored;
                const MemberPredictions p = predictions(
                    randomProbs(K, 5, C, static_cast<uint64_t>(100 * K + 10 * C + n)), &stored);
                std::vector<int> rows;
                std::vector<int64_t> rows64;
                for (int i = 0; i < n; ++i) {
                    rows.push_back(4 - 2 * i);  // rows 4, 2, 0: not in table order
                    rows64.push_back(4 - 2 * i);
                }
                const double reference = bruteForceInformation(stored, rows);
                const double got = jointMutualInformation(p, {}, rows64);
                QVERIFY2(std::abs(got - reference) < 1e-12,
                         qPrintable(QStringLiteral("K=%1 C=%2 n=%3: %4 vs %5")
                                        .arg(K)
                                        .arg(C)
                                        .arg(n)
                                        .arg(got, 0, 'g', 17)
                                        .arg(reference, 0, 'g', 17)));
                // Bounded by log K (the members are K equally likely models).
                QVERIFY(got <= std::log(static_cast<double>(K)) + 1e-12);
            }
        }
    }
    // Excluding a member: the joint over the others.
    Probs stored;
    const MemberPredictions p = predictions(randomProbs(3, 4, 3, 7), &stored);
    Probs two = {stored[0], stored[2]};
    QVERIFY(std::abs(jointMutualInformation(p, {1, 0, 1}, {0, 3}) -
                     bruteForceInformation(two, {0, 3})) < 1e-12);
}

void TestBatchBald::greedyJointIsEnumeratedJoint() {
    // Every greedy step's joint information is the enumerated one of the picks so far, and each
    // pick beats every other candidate at its step.
    Probs stored;
    const MemberPredictions p = predictions(randomProbs(3, 8, 3, 11), &stored);
    const BatchBaldResult b = batchBald(p, {}, 3);
    QCOMPARE(b.picks.size(), std::size_t(3));
    std::vector<int> so;
    double before = 0.0;
    for (std::size_t t = 0; t < 3; ++t) {
        for (int i = 0; i < 8; ++i) {
            if (std::find(so.begin(), so.end(), i) != so.end()) {
                continue;
            }
            std::vector<int> with = so;
            with.push_back(i);
            QVERIFY(bruteForceInformation(stored, with) <= b.joint[t] + 1e-12);
        }
        so.push_back(static_cast<int>(b.picks[t]));
        const double joint = bruteForceInformation(stored, so);
        QVERIFY(std::abs(b.joint[t] - joint) < 1e-12);
        QVERIFY(std::abs(b.gains[t] - (joint - before)) < 1e-12);
        QCOMPARE(b.sampled[t], uint8_t(0));
        before = joint;
    }
}

void TestBatchBald::firstPickIsBaldsTop() {
    const MemberPredictions p = predictions(randomProbs(5, 40, 4, 3));
    std::vector<int64_t> rows(40);
    std::iota(rows.begin(), rows.end(), int64_t{0});
    const std::vector<double> bald = acquisitionScores(Acquisition::Bald, p, {}, rows, 0, 0);
    const BatchBaldResult b = batchBald(p, {}, 4);
    QCOMPARE(b.picks[0], topScoring(bald, rows, 1)[0]);
    QVERIFY(std::abs(b.gains[0] - bald[static_cast<std::size_t>(b.picks[0])]) < 1e-6);
    // `batchbald`'s score of a row alone is BALD's.
    QCOMPARE(acquisitionScores(Acquisition::BatchBald, p, {}, rows, 0, 0), bald);
}

void TestBatchBald::duplicateIsPassedOver() {
    // Four members. Rows 0 and 1 are the same point: members {0, 1} say class 0, {2, 3} class 1,
    // each sure of it. Row 2 splits the members the other way ({0, 2} against {1, 3}), less
    // sure; rows 3.. are points every member agrees on.
    const std::vector<double> zero = {0.99, 0.01};
    const std::vector<double> one = {0.01, 0.99};
    const std::vector<double> leanZero = {0.85, 0.15};
    const std::vector<double> leanOne = {0.15, 0.85};
    const std::vector<double> agree = {0.7, 0.3};
    Probs probs(4);
    for (int k = 0; k < 4; ++k) {
        const bool first = k < 2;
        const bool even = k % 2 == 0;
        probs[static_cast<std::size_t>(k)] = {first ? zero : one, first ? zero : one,
                                              even ? leanZero : leanOne, agree, agree};
    }
    const MemberPredictions p = predictions(probs);
    const std::vector<int64_t> rows = {0, 1, 2, 3, 4};
    const std::vector<double> bald = acquisitionScores(Acquisition::Bald, p, {}, rows, 0, 0);
    QVERIFY(bald[2] < bald[0]);
    QCOMPARE(topScoring(bald, rows, 2), (std::vector<int64_t>{0, 1}));  // the duplicates
    const BatchBaldResult b = batchBald(p, {}, 3);
    QCOMPARE(b.picks[0], int64_t(0));
    QCOMPARE(b.picks[1], int64_t(2));  // the duplicate would add almost nothing
    QCOMPARE(b.picks[2], int64_t(1));
    QVERIFY(b.gains[2] < 0.2 * b.gains[1]);
    // Two independent splits of the members: their information adds up (the mixture of the
    // two labels is uniform over the four configurations, log 4 nats).
    QVERIFY(std::abs(b.joint[1] - (bald[0] + bald[2])) < 1e-6);
    QVERIFY(b.joint[1] < std::log(4.0));
}

void TestBatchBald::sampledEstimateConvergesToExact() {
    // Three members, three classes, three rows: 27 configurations, small enough to enumerate.
    const MemberPredictions p = predictions(randomProbs(3, 3, 3, 21));
    const std::vector<int64_t> rows = {0, 1, 2};
    const double exact = jointMutualInformation(p, {}, rows);
    BatchBaldOptions o;
    o.exactLimit = 0;  // sampled configurations from the second row on
    const auto meanError = [&](int samples, int seeds) {
        double sum = 0.0;
        double bias = 0.0;
        for (int s = 0; s < seeds; ++s) {
            o.samples = samples;
            o.seed = static_cast<uint64_t>(s + 1);
            const double v = jointMutualInformation(p, {}, rows, o);
            sum += std::abs(v - exact);
            bias += v - exact;
        }
        return std::pair<double, double>{sum / seeds, bias / seeds};
    };
    const auto [small, smallBias] = meanError(30, 40);
    const auto [large, largeBias] = meanError(30000, 40);
    QVERIFY2(large < 0.1 * small,
             qPrintable(QStringLiteral("%1 at M = 30, %2 at M = 30000").arg(small).arg(large)));
    QVERIFY2(large < 5e-3, qPrintable(QString::number(large)));
    // Unbiased: the mean of 40 small estimates is close to the exact value (its standard error
    // is about small / sqrt(40)).
    QVERIFY2(std::abs(smallBias) < 0.6 * small, qPrintable(QString::number(smallBias)));
    QVERIFY(std::abs(largeBias) < 2e-3);
}

void TestBatchBald::seededAndDeterministic() {
    const MemberPredictions p = predictions(randomProbs(4, 60, 3, 9));
    BatchBaldOptions o;
    o.samples = 50;  // sampled from the fifth pick on (its batch so far: 3^4 = 81 > 50)
    o.seed = 3;
    o.round = 2;
    const BatchBaldResult a = batchBald(p, {}, 8, o);
    const BatchBaldResult b = batchBald(p, {}, 8, o);
    QCOMPARE(a.picks, b.picks);
    QCOMPARE(a.joint, b.joint);
    QCOMPARE(a.sampled, (std::vector<uint8_t>{0, 0, 0, 0, 1, 1, 1, 1}));
    o.round = 3;  // another round draws other configurations
    const BatchBaldResult c = batchBald(p, {}, 8, o);
    QCOMPARE(std::vector<double>(c.joint.begin(), c.joint.begin() + 4),
             std::vector<double>(a.joint.begin(), a.joint.begin() + 4));
    QVERIFY(c.joint[4] != a.joint[4]);
    for (std::size_t t = 0; t < 4; ++t) {
        QVERIFY(a.joint[t] <= std::log(4.0) + 1e-12);  // exact: within the bound
    }
}

void TestBatchBald::loopAcquiresTheGreedyBatch() {
    json config = moonsConfig();
    config["active"]["pool_subset"] = 60;
    config["active"]["batchbald_samples"] = 3;  // sampled past the first two picks (2^2 > 3)
    const ExperimentConfig c = parseConfig(config);
    const auto data = std::make_shared<const DataSplit>(loadDataSplit(c.dataset));
    ActiveLearner learner(c, data, Acquisition::BatchBald);
    QVERIFY(learner.trainRound());
    const PoolScores s = learner.scorePool();
    BatchBaldOptions o;
    o.samples = 3;
    o.seed = 5;
    o.round = 0;
    const BatchBaldResult b =
        batchBald(predictRows(learner, s.rows), learner.trainer()->included(), 4, o);
    QCOMPARE(s.picks.size(), std::size_t(4));
    for (std::size_t i = 0; i < 4; ++i) {
        QCOMPARE(s.picks[i], s.rows[static_cast<std::size_t>(b.picks[i])]);
    }
    QCOMPARE(s.pickScores, b.gains);
    QCOMPARE(s.joint, b.joint);
    learner.acquire(s.picks, s.pickScores);
    QVERIFY(learner.trainRound());
    QCOMPARE(learner.rounds()[0].acquiredScores, b.gains);
    // A second learner of the same seed acquires the same rows.
    ActiveLearner again(c, data, Acquisition::BatchBald);
    QVERIFY(again.trainRound());
    QCOMPARE(again.scorePool().picks, s.picks);
}

void TestBatchBald::classCountsByHand() {
    const std::vector<int32_t> labels = {2, 0, 1, 2, 2, 0, 1, 3};
    QCOMPARE(classCounts(labels, {0, 3, 4, 6}, 4), (std::vector<int64_t>{0, 1, 3, 0}));
    QCOMPARE(classCounts(labels, {}, 3), (std::vector<int64_t>{0, 0, 0}));
    QCOMPARE(classCounts(labels, {7, 1}, 3), (std::vector<int64_t>{1, 0, 0}));  // 3: not counted
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, classCounts(labels, {8}, 4));
    // The loop's rounds: the initial set and every acquisition up to each round.
    const ExperimentConfig c = parseConfig(moonsConfig());
    ActiveLearner learner(c, loadDataSplit(c.dataset), Acquisition::Random);
    QVERIFY(learner.trainRound());
    learner.acquire(learner.scorePool().picks, {});
    QVERIFY(learner.trainRound());
    const auto& y = learner.data().train.y;
    std::vector<int64_t> rows = learner.initial();
    for (std::size_t r = 0; r < 2; ++r) {
        if (r > 0) {
            rows.insert(rows.end(), learner.rounds()[r - 1].acquired.begin(),
                        learner.rounds()[r - 1].acquired.end());
        }
        std::vector<int64_t> hand(2, 0);
        for (int64_t row : rows) {
            ++hand[static_cast<std::size_t>(y[static_cast<std::size_t>(row)])];
        }
        QCOMPARE(learner.rounds()[r].classCounts, hand);
        QCOMPARE(learner.toJson()["rounds"][r]["class_counts"], json(hand));
    }
    QCOMPARE(learner.rounds()[0].classCounts, (std::vector<int64_t>{3, 3}));  // balanced
    // A restored state counts them again from its rows.
    ActiveLearner back(c, learner.data(), Acquisition::Random);
    back.restore(learner.toJson());
    QCOMPARE(back.rounds()[1].classCounts, learner.rounds()[1].classCounts);
}

void TestBatchBald::capHolds() {
    QCOMPARE(classCapPicks(1.0, 10), 0);
    QCOMPARE(classCapPicks(0.2, 10), 2);
    QCOMPARE(classCapPicks(0.15, 10), 1);
    QCOMPARE(classCapPicks(0.01, 10), 1);
    QCOMPARE(classCapPicks(0.5, 4), 2);
    // Scores fall with the row; classes 0, 0, 0, 1, 0, 1, 2, 2.
    const std::vector<int64_t> rows = {10, 11, 12, 13, 14, 15, 16, 17};
    const std::vector<double> scores = {0.9, 0.8, 0.7, 0.6, 0.5, 0.4, 0.3, 0.2};
    const std::vector<int32_t> predicted = {0, 0, 0, 1, 0, 1, 2, 2};
    QCOMPARE(topScoringCapped(scores, rows, predicted, 5, 0), topScoring(scores, rows, 5));
    QCOMPARE(topScoringCapped(scores, rows, predicted, 5, 2),
             (std::vector<int64_t>{10, 11, 13, 15, 16}));
    QCOMPARE(topScoringCapped(scores, rows, predicted, 3, 1), (std::vector<int64_t>{10, 13, 16}));
    // Three classes at one each cannot fill four: the rest is the highest score left.
    QCOMPARE(topScoringCapped(scores, rows, predicted, 4, 1),
             (std::vector<int64_t>{10, 13, 16, 11}));
    // BatchBALD under the cap: no predicted class past it while the others can fill the batch.
    const MemberPredictions p = predictions(randomProbs(4, 50, 3, 17));
    const std::vector<int32_t> classes = predictedClasses(p, {});
    BatchBaldOptions o;
    o.predicted = classes;
    o.perClass = 2;
    const BatchBaldResult b = batchBald(p, {}, 6, o);
    std::map<int32_t, int> taken;
    for (int64_t i : b.picks) {
        ++taken[classes[static_cast<std::size_t>(i)]];
    }
    QCOMPARE(taken.size(), std::size_t(3));
    for (const auto& [cls, n] : taken) {
        QCOMPARE(n, 2);
    }
    QVERIFY(batchBald(p, {}, 6).picks != b.picks);  // the cap changed the batch
}

void TestBatchBald::capHoldsInTheLoop() {
    json config = moonsConfig();
    config["active"]["class_cap"] = 0.5;  // two of a round's four picks per predicted class
    const ExperimentConfig c = parseConfig(config);
    QCOMPARE(c.active.classCap, 0.5);
    const auto data = std::make_shared<const DataSplit>(loadDataSplit(c.dataset));
    for (Acquisition a : {Acquisition::Bald, Acquisition::Random, Acquisition::BatchBald}) {
        ActiveLearner learner(c, data, a);
        QVERIFY(learner.trainRound());
        for (int round = 0; round < 2; ++round) {
            const PoolScores s = learner.scorePool();
            // The classes of the rows scored, predicted as scorePool predicts them.
            const std::vector<int32_t> predicted =
                predictedClasses(predictRows(learner, s.rows), learner.trainer()->included());
            std::vector<int> taken(2, 0);
            for (int64_t row : s.picks) {
                const auto at = std::lower_bound(s.rows.begin(), s.rows.end(), row);
                ++taken[static_cast<std::size_t>(
                    predicted[static_cast<std::size_t>(at - s.rows.begin())])];
            }
            QCOMPARE(taken, (std::vector<int>{2, 2}));
            learner.acquire(s.picks, s.pickScores);
            QVERIFY(learner.trainRound());
        }
    }
    // Out of range: (0, 1].
    config["active"]["class_cap"] = 0.0;
    QVERIFY_THROWS_EXCEPTION(ConfigError, parseConfig(config));
    config["active"]["class_cap"] = 1.5;
    QVERIFY_THROWS_EXCEPTION(ConfigError, parseConfig(config));
}

QTEST_GUILESS_MAIN(TestBatchBald)
#include "tst_batch_bald.moc"
