// Active learning (active/active_learning.h): the acquisition functions against hand-computed
// cases, the ranking and the balanced initial set, the loop's bookkeeping, warm and scratch
// retraining against trainers driven by hand, determinism, the saved state, the checkpoint's
// "active" metadata, and `ensemble-cli active` end to end on 2-D data.
#include <QtTest/QtTest>

#include <signal.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <numeric>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "active/active_learning.h"
#include "config/config.h"
#include "core/errors.h"
#include "io/checkpoint.h"
#include "metrics/metrics.h"
#include "registry/registry.h"
#include "support/active_moons.h"
#include "support/json_files.h"
#include "support/test_support.h"
#include "train/trainer.h"

using namespace ensemble;
using ensemble::test::kExactDouble;
using ensemble::test::kFloatInput;
using ensemble::test::readJson;
using ensemble::test::writeJson;
using nlohmann::json;

namespace {

// Member predictions from probabilities probs[k][i][c] (stored as log-probabilities in float,
// as the trainer gives them).
MemberPredictions predictions(const std::vector<std::vector<std::vector<double>>>& probs) {
    MemberPredictions p;
    p.members = static_cast<int>(probs.size());
    p.rows = static_cast<int64_t>(probs[0].size());
    p.classes = static_cast<int>(probs[0][0].size());
    for (const auto& member : probs) {
        for (const auto& row : member) {
            for (double v : row) {
                p.logProbs.push_back(static_cast<float>(std::log(v)));
            }
        }
    }
    return p;
}

// A small 2-D classification experiment for the loop: moons, K = 3, a tiny MLP on one thread.
json moonsLoopConfig() {
    json c = ensemble::test::activeMoonsConfig();
    c["active"]["rounds"] = 2;
    return c;
}

ExperimentConfig parsed(const json& c) {
    return parseConfig(c);
}

// Runs `rounds` acquisition rounds after the initial one.
void runLoop(ActiveLearner& learner, int rounds) {
    QVERIFY(learner.trainRound());
    for (int r = 0; r < rounds; ++r) {
        const PoolScores s = learner.scorePool();
        std::vector<double> scores;
        for (int64_t row : s.picks) {
            const auto it = std::lower_bound(s.rows.begin(), s.rows.end(), row);
            scores.push_back(s.scores[static_cast<std::size_t>(it - s.rows.begin())]);
        }
        learner.acquire(s.picks, scores);
        QVERIFY(learner.trainRound());
    }
}

std::vector<int64_t> allAcquired(const ActiveLearner& learner) {
    std::vector<int64_t> out;
    for (const ActiveRound& r : learner.rounds()) {
        out.insert(out.end(), r.acquired.begin(), r.acquired.end());
    }
    return out;
}

// A fresh trainer on rows `rows` of the learner's train split, the full split's normalisation.
std::unique_ptr<Trainer> trainerOn(const ActiveLearner& learner, const std::vector<int64_t>& rows) {
    DataSplit s = learner.data();
    s.train = selectRows(learner.data().train, rows);
    return std::make_unique<Trainer>(learner.config(), s,
                                     makeBackend(learner.config(), learner.data()).backend);
}

int lineCount(const QString& path) {
    QFile f(path);
    if (!f.open(QIODevice::ReadOnly)) {
        return -1;
    }
    return static_cast<int>(f.readAll().count('\n'));
}

}  // namespace

class TestActive : public QObject {
    Q_OBJECT

  private slots:
    void acquisitionHandComputed();
    void variationRatiosIsNotDisagreement();
    void baldIsZeroWhenMembersAgree();
    void randomScoresDependOnSeedRoundRow();
    void topScoringTiesByRowIndex();
    void initialSetBalancedAndSeeded();
    void configSection();
    void loopBookkeeping();
    void poolSubsetIsRedrawnEachRound();
    void scratchRoundIsAFreshTrainer();
    void warmRoundsContinueBitForBit();
    void sameSeedSameRows();
    void restoreRoundTrip();
    void restoreRejectsForeignStates();
    void checkpointKeepsActiveState();
    void cliEndToEnd();
    void cliLabelsAndRounds();
    void cliBadFlags();
    void cliInterruptKeepsFinishedRounds();
};

void TestActive::acquisitionHandComputed() {
    // Two members, two classes. Row 0: the members disagree completely; row 1: they agree;
    // row 2: they agree on the class, not the probabilities.
    const MemberPredictions p = predictions({
        {{0.9, 0.1}, {0.7, 0.3}, {0.6, 0.4}},
        {{0.1, 0.9}, {0.7, 0.3}, {0.8, 0.2}},
    });
    const std::vector<int64_t> rows = {0, 1, 2};
    const auto entropy = acquisitionScores(Acquisition::Entropy, p, {}, rows, 0, 0);
    const auto bald = acquisitionScores(Acquisition::Bald, p, {}, rows, 0, 0);
    const auto vr = acquisitionScores(Acquisition::VariationRatios, p, {}, rows, 0, 0);
    const auto margin = acquisitionScores(Acquisition::Margin, p, {}, rows, 0, 0);
    // H[p] = -sum p ln p of the mean: (0.5, 0.5), (0.7, 0.3), (0.7, 0.3).
    ENSEMBLE_COMPARE_NEAR(entropy[0], 0.6931471805599453, kFloatInput);
    ENSEMBLE_COMPARE_NEAR(entropy[1], 0.6108643020548935, kFloatInput);
    ENSEMBLE_COMPARE_NEAR(entropy[2], 0.6108643020548935, kFloatInput);
    // BALD = H[p] - (H[P_1] + H[P_2]) / 2: ln 2 - H(0.9, 0.1); 0; H(0.7) - (H(0.6) + H(0.8)) / 2.
    ENSEMBLE_COMPARE_NEAR(bald[0], 0.3680642071684971, kFloatInput);
    ENSEMBLE_COMPARE_NEAR(bald[1], 0.0, kFloatInput);
    ENSEMBLE_COMPARE_NEAR(bald[2], 0.02415725678117131, kFloatInput);
    // Votes (0, 1): a tie, the modal class is 0 with one vote of two; then two votes for 0.
    QCOMPARE(vr[0], 0.5);
    QCOMPARE(vr[1], 0.0);
    QCOMPARE(vr[2], 0.0);
    // -(p_(1) - p_(2)).
    ENSEMBLE_COMPARE_NEAR(margin[0], 0.0, kFloatInput);
    ENSEMBLE_COMPARE_NEAR(margin[1], -0.4, kFloatInput);
    ENSEMBLE_COMPARE_NEAR(margin[2], -0.4, kFloatInput);

    // Member 1 switched off: member 0 alone, whose entropy is H(0.9, 0.1) and BALD 0.
    const std::vector<uint8_t> first = {1, 0};
    ENSEMBLE_COMPARE_NEAR(acquisitionScores(Acquisition::Entropy, p, first, rows, 0, 0)[0],
                          0.3250829733914482, kFloatInput);
    QCOMPARE(acquisitionScores(Acquisition::Bald, p, first, rows, 0, 0)[0], 0.0);
    // No member: no preference (NaN, ranked last by row).
    const auto none = acquisitionScores(Acquisition::Bald, p, {0, 0}, rows, 0, 0);
    QVERIFY(std::isnan(none[0]) && std::isnan(none[2]));
}

void TestActive::variationRatiosIsNotDisagreement() {
    // Three members vote 0, 0, 1, but the third is sure: the ensemble's mean picks class 1.
    // disagreement = 1 - (votes for the ensemble's class 1) / 3 = 2/3; variation ratios =
    // 1 - (votes for the modal class 0) / 3 = 1/3.
    const MemberPredictions p = predictions({{{0.51, 0.49}}, {{0.51, 0.49}}, {{0.01, 0.99}}});
    const double vr = acquisitionScores(Acquisition::VariationRatios, p, {}, {0}, 0, 0)[0];
    ENSEMBLE_COMPARE_NEAR(vr, 1.0 / 3.0, kExactDouble);
    // Four members, three classes, votes 2 / 0 / 2: the modal class is the lowest (0).
    const MemberPredictions q =
        predictions({{{0.5, 0.2, 0.3}}, {{0.6, 0.1, 0.3}}, {{0.2, 0.1, 0.7}}, {{0.3, 0.2, 0.5}}});
    ENSEMBLE_COMPARE_NEAR(acquisitionScores(Acquisition::VariationRatios, q, {}, {0}, 0, 0)[0], 0.5,
                          kExactDouble);
}

void TestActive::baldIsZeroWhenMembersAgree() {
    std::vector<std::vector<double>> rows = {
        {0.2, 0.3, 0.5}, {0.98, 0.01, 0.01}, {1.0 / 3, 1.0 / 3, 1.0 / 3}, {0.5, 0.5, 1e-9}};
    const MemberPredictions p = predictions({rows, rows, rows, rows});
    const auto bald = acquisitionScores(Acquisition::Bald, p, {}, {0, 1, 2, 3}, 0, 0);
    const auto entropy = acquisitionScores(Acquisition::Entropy, p, {}, {0, 1, 2, 3}, 0, 0);
    for (std::size_t i = 0; i < bald.size(); ++i) {
        ENSEMBLE_COMPARE_NEAR(bald[i], 0.0, kExactDouble);
        QVERIFY(entropy[i] > 0.0);  // what is left is aleatoric
    }
}

void TestActive::randomScoresDependOnSeedRoundRow() {
    const MemberPredictions none;
    const auto a = acquisitionScores(Acquisition::Random, none, {}, {3, 7, 11}, 42, 2);
    const auto b = acquisitionScores(Acquisition::Random, none, {}, {11, 3}, 42, 2);
    QCOMPARE(a.size(), std::size_t(3));
    QCOMPARE(a[0], b[1]);  // row 3 scores the same whatever else is scored
    QCOMPARE(a[2], b[0]);
    for (double v : a) {
        QVERIFY(v >= 0.0 && v < 1.0);
    }
    QVERIFY(acquisitionScores(Acquisition::Random, none, {}, {3}, 42, 3)[0] != a[0]);
    QVERIFY(acquisitionScores(Acquisition::Random, none, {}, {3}, 43, 2)[0] != a[0]);
    // Uniform: the mean of many draws is near 1/2.
    std::vector<int64_t> many(20000);
    std::iota(many.begin(), many.end(), int64_t{0});
    const auto u = acquisitionScores(Acquisition::Random, none, {}, many, 1, 0);
    double sum = 0.0;
    for (double v : u) {
        sum += v;
    }
    ENSEMBLE_COMPARE_NEAR(sum / static_cast<double>(u.size()), 0.5, ensemble::test::kStatistical);
}

void TestActive::topScoringTiesByRowIndex() {
    const double nan = std::numeric_limits<double>::quiet_NaN();
    const std::vector<double> scores = {0.5, 0.7, 0.5, nan, 0.7};
    const std::vector<int64_t> rows = {10, 4, 2, 1, 8};
    QCOMPARE(topScoring(scores, rows, 5), (std::vector<int64_t>{4, 8, 2, 10, 1}));
    QCOMPARE(topScoring(scores, rows, 3), (std::vector<int64_t>{4, 8, 2}));
    QCOMPARE(topScoring(scores, rows, 9), (std::vector<int64_t>{4, 8, 2, 10, 1}));
    QCOMPARE(topScoring(scores, rows, 0), std::vector<int64_t>{});
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, topScoring({1.0}, {1, 2}, 1));
}

void TestActive::initialSetBalancedAndSeeded() {
    // Classes of 10, 10 and 3 rows.
    Dataset d;
    d.features = 1;
    for (int i = 0; i < 23; ++i) {
        d.y.push_back(i < 20 ? i % 2 : 2);
        d.x.push_back(static_cast<float>(i));
    }
    d.rows = 23;
    const auto perClass = [&](const std::vector<int64_t>& rows) {
        std::vector<int> n(3, 0);
        for (int64_t r : rows) {
            ++n[static_cast<std::size_t>(d.y[static_cast<std::size_t>(r)])];
        }
        return n;
    };
    // 9 = 3 per class.
    const auto nine = initialLabelledRows(d, 3, 9, 7);
    QCOMPARE(perClass(nine), (std::vector<int>{3, 3, 3}));
    QVERIFY(std::is_sorted(nine.begin(), nine.end()));
    QCOMPARE(std::set<int64_t>(nine.begin(), nine.end()).size(), nine.size());
    // 10: 4, 3, 3 (the remainder to the lowest class).
    QCOMPARE(perClass(initialLabelledRows(d, 3, 10, 7)), (std::vector<int>{4, 3, 3}));
    // 12 = 4 each, but class 2 has only 3 rows: the one missing goes to class 0: 5, 4, 3; 14:
    // 5, 5, 4 less one of class 2, the missing one round the others from class 0: 6, 5, 3.
    QCOMPARE(perClass(initialLabelledRows(d, 3, 12, 7)), (std::vector<int>{5, 4, 3}));
    QCOMPARE(perClass(initialLabelledRows(d, 3, 14, 7)), (std::vector<int>{6, 5, 3}));
    // Everything.
    QCOMPARE(initialLabelledRows(d, 3, 23, 7).size(), std::size_t(23));
    // The seed decides: the same seed the same rows, another seed other rows.
    QCOMPARE(initialLabelledRows(d, 3, 9, 7), nine);
    bool differs = false;
    for (uint64_t seed = 8; seed < 12; ++seed) {
        differs = differs || initialLabelledRows(d, 3, 9, seed) != nine;
    }
    QVERIFY(differs);
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, initialLabelledRows(d, 3, 24, 7));
}

void TestActive::configSection() {
    const ExperimentConfig c = parsed(moonsLoopConfig());
    QCOMPARE(c.active.initial, 6);
    QCOMPARE(c.active.perRound, 4);
    QCOMPARE(c.active.steps, int64_t(40));
    QVERIFY(c.active.retrain == ActiveRetrain::Scratch);
    QVERIFY(c.active.acquisition == Acquisition::Bald);
    QCOMPARE(c.json["active"]["pool_subset"], json(0));
    // Defaults fill the section for classification data ...
    const json defaults = defaultConfigJson();
    QCOMPARE(defaults["active"]["initial"], json(20));
    QCOMPARE(defaults["active"]["per_round"], json(10));
    QCOMPARE(defaults["active"]["retrain"], json("scratch"));
    QCOMPARE(defaults["active"]["acquisition"], json("bald"));
    // ... and regression configs have none and refuse it.
    const json sine = json::parse(R"({"dataset": {"kind": "sine"},
                                      "model": {"likelihood": "gaussian"}})");
    QVERIFY(!parseConfig(sine).json.contains("active"));
    json emptySection = sine;  // what a form that writes every section gives
    emptySection["active"] = json::object();
    QCOMPARE(parseConfig(emptySection).json, parseConfig(sine).json);
    json bad = sine;
    bad["active"] = {{"initial", 10}};
    try {
        parseConfig(bad);
        QFAIL("expected a ConfigError");
    } catch (const ConfigError& e) {
        QCOMPARE(e.key(), std::string("active.initial"));
        QVERIFY2(std::string(e.what()).find("model.likelihood") != std::string::npos, e.what());
    }
    json acquisition = moonsLoopConfig();
    acquisition["active"]["acquisition"] = "dropout";
    QVERIFY_THROWS_EXCEPTION(ConfigError, parseConfig(acquisition));
    acquisition["active"]["acquisition"] = "variation_ratios";
    QVERIFY(parseConfig(acquisition).active.acquisition == Acquisition::VariationRatios);
    // The learner refuses regression data and sets larger than the train split.
    ExperimentConfig regression = parseConfig(sine);
    QVERIFY_THROWS_EXCEPTION(
        ConfigError,
        ActiveLearner(regression, loadDataSplit(regression.dataset), Acquisition::Bald));
    json big = moonsLoopConfig();
    big["active"]["initial"] = 100000;
    const ExperimentConfig tooBig = parseConfig(big);
    QVERIFY_THROWS_EXCEPTION(
        ConfigError, ActiveLearner(tooBig, loadDataSplit(tooBig.dataset), Acquisition::Bald));
}

void TestActive::loopBookkeeping() {
    const ExperimentConfig c = parsed(moonsLoopConfig());
    ActiveLearner learner(c, loadDataSplit(c.dataset), Acquisition::Entropy);
    const int64_t n = learner.data().train.rows;
    QCOMPARE(learner.labelled(), learner.initial());
    QCOMPARE(learner.initial().size(), std::size_t(6));
    QVERIFY_THROWS_EXCEPTION(std::logic_error, learner.scorePool());
    runLoop(learner, 3);
    QCOMPARE(learner.round(), 4);
    const std::vector<ActiveRound>& rounds = learner.rounds();
    for (std::size_t r = 0; r < rounds.size(); ++r) {
        QCOMPARE(rounds[r].labels, int64_t(6 + 4 * r));
        QVERIFY(rounds[r].accuracy >= 0.0 && rounds[r].accuracy <= 1.0);
        QVERIFY(std::isfinite(rounds[r].nll) && std::isfinite(rounds[r].ece));
        QCOMPARE(rounds[r].acquired.size(), r + 1 < rounds.size() ? std::size_t(4) : 0);
        QCOMPARE(rounds[r].acquiredScores.size(), rounds[r].acquired.size());
    }
    // No row twice; initial + acquired = labelled; labelled and pool partition the train split.
    std::vector<int64_t> all = learner.initial();
    const std::vector<int64_t> acquired = allAcquired(learner);
    all.insert(all.end(), acquired.begin(), acquired.end());
    std::sort(all.begin(), all.end());
    QVERIFY(std::adjacent_find(all.begin(), all.end()) == all.end());
    QCOMPARE(learner.labelled(), all);
    const std::vector<int64_t> pool = learner.pool();
    QCOMPARE(static_cast<int64_t>(pool.size() + all.size()), n);
    std::vector<int64_t> everything = pool;
    everything.insert(everything.end(), all.begin(), all.end());
    std::sort(everything.begin(), everything.end());
    for (int64_t i = 0; i < n; ++i) {
        QCOMPARE(everything[static_cast<std::size_t>(i)], i);
    }
    // The picks are the pool's top scores, which are the entropy of the members' predictions.
    const PoolScores s = learner.scorePool();
    QCOMPARE(s.rows, pool);
    QCOMPARE(s.picks, topScoring(s.scores, s.rows, 4));
    std::vector<float> x;
    for (int64_t r : s.rows) {
        const float* row = learner.data().train.row(r);
        x.insert(x.end(), row, row + learner.data().train.features);
    }
    const MemberPredictions p = learner.trainer()->predictRaw(x.data(), int64_t(s.rows.size()));
    QCOMPARE(s.scores, acquisitionScores(Acquisition::Entropy, p, {}, s.rows, 5, 3));
    // A row acquired twice, or a labelled one, is refused and changes nothing.
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, learner.acquire({pool[0], pool[0]}, {}));
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, learner.acquire({all[0]}, {}));
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, learner.acquire({n}, {}));
    QCOMPARE(learner.labelled(), all);
    // A person's pick: NaN score.
    learner.acquire({pool[1]}, {});
    QVERIFY(std::isnan(learner.rounds().back().acquiredScores.back()));
    // A cancelled round appends nothing.
    std::atomic<bool> cancel{true};
    QVERIFY(!learner.trainRound({}, &cancel));
    QCOMPARE(learner.round(), 4);
}

void TestActive::poolSubsetIsRedrawnEachRound() {
    json j = moonsLoopConfig();
    j["active"]["pool_subset"] = 50;
    const ExperimentConfig c = parsed(j);
    ActiveLearner learner(c, loadDataSplit(c.dataset), Acquisition::Random);
    QVERIFY(learner.trainRound());
    const PoolScores first = learner.scorePool();
    QCOMPARE(first.rows.size(), std::size_t(50));
    QVERIFY(std::is_sorted(first.rows.begin(), first.rows.end()));
    const std::vector<int64_t> pool = learner.pool();
    QVERIFY(std::includes(pool.begin(), pool.end(), first.rows.begin(), first.rows.end()));
    QCOMPARE(learner.scorePool().rows, first.rows);  // the same round: the same subset
    learner.acquire(first.picks, {});
    QVERIFY(learner.trainRound());
    const PoolScores second = learner.scorePool();
    QCOMPARE(second.rows.size(), std::size_t(50));
    QVERIFY(second.rows != first.rows);
}

void TestActive::scratchRoundIsAFreshTrainer() {
    const ExperimentConfig c = parsed(moonsLoopConfig());
    ActiveLearner learner(c, loadDataSplit(c.dataset), Acquisition::Bald);
    runLoop(learner, 1);
    // Round 1 trained from the seeds on the 10 labelled rows, exactly as a fresh trainer does.
    std::unique_ptr<Trainer> fresh = trainerOn(learner, learner.labelled());
    fresh->setTotalSteps(40);
    fresh->runSteps(40);
    QCOMPARE(learner.trainer()->step(), int64_t(40));
    QCOMPARE(learner.trainer()->parameters(), fresh->parameters());
    const ClassificationMetrics m = ensembleClassificationMetrics(
        fresh->predictTest(), learner.data().test.y, fresh->included());
    QCOMPARE(learner.rounds().back().accuracy, m.accuracy);
    QCOMPARE(learner.rounds().back().nll, m.nll);
    QCOMPARE(learner.rounds().back().ece, m.ece);
}

void TestActive::warmRoundsContinueBitForBit() {
    json j = moonsLoopConfig();
    j["active"]["retrain"] = "warm";
    const ExperimentConfig c = parsed(j);
    ActiveLearner learner(c, loadDataSplit(c.dataset), Acquisition::Bald);
    runLoop(learner, 1);
    QCOMPARE(learner.trainer()->step(), int64_t(80));
    // By hand: 40 steps on the initial rows, then the state carried to a trainer on the ten
    // labelled rows for 40 more.
    std::unique_ptr<Trainer> first = trainerOn(learner, learner.initial());
    first->setTotalSteps(40);
    first->runSteps(40);
    std::unique_ptr<Trainer> second = trainerOn(learner, learner.labelled());
    second->restoreTrainingState(first->trainingState());
    second->setTotalSteps(80);
    second->runSteps(40);
    QCOMPARE(learner.trainer()->parameters(), second->parameters());
    // Warm differs from scratch.
    ActiveLearner scratch(parsed(moonsLoopConfig()), learner.data(), Acquisition::Bald);
    runLoop(scratch, 1);
    QCOMPARE(scratch.rounds().front().accuracy, learner.rounds().front().accuracy);
    QVERIFY(scratch.trainer()->parameters() != learner.trainer()->parameters());
}

void TestActive::sameSeedSameRows() {
    const ExperimentConfig c = parsed(moonsLoopConfig());
    const DataSplit data = loadDataSplit(c.dataset);
    for (Acquisition a : {Acquisition::Bald, Acquisition::Random, Acquisition::Margin}) {
        ActiveLearner one(c, data, a);
        ActiveLearner two(c, data, a);
        runLoop(one, 3);
        runLoop(two, 3);
        QCOMPARE(allAcquired(one), allAcquired(two));
        QCOMPARE(one.toJson(true), two.toJson(true));
    }
    // Another seed: another initial set.
    ExperimentConfig other = c;
    other.ensemble.seed = 6;
    QVERIFY(ActiveLearner(other, data, Acquisition::Bald).initial() !=
            ActiveLearner(c, data, Acquisition::Bald).initial());
}

void TestActive::restoreRoundTrip() {
    const ExperimentConfig c = parsed(moonsLoopConfig());
    ActiveLearner learner(c, loadDataSplit(c.dataset), Acquisition::Bald);
    runLoop(learner, 2);
    // The report's reading: round r lists what was labelled since round r - 1.
    const json report = learner.toJson();
    QCOMPARE(report["seed"], json(5));
    QCOMPARE(report["rounds"].size(), std::size_t(3));
    QCOMPARE(report["rounds"][0]["acquired"], json::array());
    QCOMPARE(report["rounds"][1]["acquired"], json(learner.rounds()[0].acquired));
    QCOMPARE(report["rounds"][2]["labels"], json(14));
    QVERIFY(!report.contains("pending"));
    QVERIFY(!report["rounds"][1].contains("scores"));
    // A pick not yet trained on (the app's) is "pending".
    const PoolScores s = learner.scorePool();
    learner.acquire({s.picks[0]}, {s.scores[0]});
    learner.acquire({s.picks[1]}, {});
    const json state = learner.toJson(true);
    QCOMPARE(state["pending"], json({s.picks[0], s.picks[1]}));
    QVERIFY(state["pending_scores"][1].is_null());

    ActiveLearner back(c, learner.data(), Acquisition::Bald);
    back.restore(state);
    QCOMPARE(back.toJson(true), state);
    QCOMPARE(back.labelled(), learner.labelled());
    QCOMPARE(back.pool(), learner.pool());
    QCOMPARE(back.initial(), learner.initial());
    QCOMPARE(back.round(), learner.round());
    QVERIFY(back.trainer() == nullptr);
    // The trainer from its saved state scores the pool as the original does.
    back.restoreTrainer(learner.trainer()->trainingState());
    QCOMPARE(back.trainer()->data().train.rows, int64_t(14));
    QCOMPARE(back.scorePool().scores, learner.scorePool().scores);
    // Without scores, restore() gives NaN for them.
    ActiveLearner plain(c, learner.data(), Acquisition::Bald);
    plain.restore(learner.toJson());
    QVERIFY(std::isnan(plain.rounds()[0].acquiredScores[0]));
    QCOMPARE(plain.rounds()[0].acquired, learner.rounds()[0].acquired);
}

void TestActive::restoreRejectsForeignStates() {
    const ExperimentConfig c = parsed(moonsLoopConfig());
    ActiveLearner learner(c, loadDataSplit(c.dataset), Acquisition::Bald);
    runLoop(learner, 1);
    const json good = learner.toJson();
    const auto rejected = [&](const json& state) {
        ActiveLearner other(c, learner.data(), Acquisition::Bald);
        try {
            other.restore(state);
        } catch (const DataError&) {
            return other.labelled() == other.initial() && other.round() == 0;  // unchanged
        }
        return false;
    };
    json wrongSeed = good;
    wrongSeed["seed"] = 6;
    QVERIFY(rejected(wrongSeed));
    json twice = good;
    twice["rounds"][1]["acquired"][0] = good["initial"][0];
    QVERIFY(rejected(twice));
    json outOfRange = good;
    outOfRange["rounds"][1]["acquired"][0] = 100000;
    QVERIFY(rejected(outOfRange));
    json badCount = good;
    badCount["rounds"][1]["labels"] = 11;
    QVERIFY(rejected(badCount));
    QVERIFY(rejected(json::array()));
}

void TestActive::checkpointKeepsActiveState() {
    const ExperimentConfig c = parsed(moonsLoopConfig());
    ActiveLearner learner(c, loadDataSplit(c.dataset), Acquisition::Bald);
    runLoop(learner, 1);
    QTemporaryDir dir;
    const std::string with = (dir.path() + QStringLiteral("/with.safetensors")).toStdString();
    const std::string without = (dir.path() + QStringLiteral("/without.safetensors")).toStdString();
    const json state = {{"acquisition", "bald"}, {"learner", learner.toJson(true)}};
    writeCheckpoint(with, *learner.trainer(), {}, nullptr, -1, state);
    writeCheckpoint(without, *learner.trainer(), {});
    const Checkpoint read = readCheckpoint(with);
    QCOMPARE(read.active, state);
    QCOMPARE(read.state.params, learner.trainer()->parameters());
    QVERIFY(readCheckpoint(without).active.is_null());
    // What the app does with it: the learner and its trainer back.
    ActiveLearner back(read.ensemble.config, learner.data(), Acquisition::Bald);
    back.restore(read.active["learner"]);
    back.restoreTrainer(read.state);
    QCOMPARE(back.scorePool().picks, learner.scorePool().picks);
}

void TestActive::cliEndToEnd() {
    QTemporaryDir dir;
    json config = moonsLoopConfig();
    const QString configPath = writeJson(dir.path(), "moons.json", config);
    const QString report = dir.path() + QStringLiteral("/r.json");
    const QString csv = dir.path() + QStringLiteral("/csv");
    const ensemble::test::Run r =
        ensemble::test::runCli({"active", "--config", configPath, "--acquisition", "bald,random",
                                "--seeds", "2", "--rounds", "2", "--report", report, "--csv", csv});
    QVERIFY2(r.code == 0, qPrintable(describe(r)));
    // One line per round: labels and a mean ± std per acquisition.
    for (const char* labels : {"\n     6  ", "\n    10  ", "\n    14  "}) {
        QVERIFY2(r.out.contains(QLatin1String(labels)), qPrintable(r.out));
    }
    QVERIFY2(r.out.contains(QStringLiteral("±")), qPrintable(r.out));

    const json j = readJson(report);
    QVERIFY(j.is_object() && j.size() == 1);
    const json& acquisitions = j["acquisitions"];
    QCOMPARE(acquisitions.size(), std::size_t(2));
    for (const char* name : {"bald", "random"}) {
        const json& a = acquisitions[name];
        QCOMPARE(a.size(), std::size_t(2));
        QCOMPARE(a["labels_to_reach"].size(), std::size_t(3));
        for (const char* key : {"0.8", "0.9", "0.95"}) {
            QVERIFY(a["labels_to_reach"][key].is_null() ||
                    a["labels_to_reach"][key].is_number_integer());
        }
        QCOMPARE(a["seeds"].size(), std::size_t(2));
        for (std::size_t s = 0; s < 2; ++s) {
            const json& seed = a["seeds"][s];
            QCOMPARE(seed.size(), std::size_t(3));  // seed, initial, rounds
            QCOMPARE(seed["seed"], json(5 + s));
            QCOMPARE(seed["initial"].size(), std::size_t(6));
            QCOMPARE(seed["rounds"].size(), std::size_t(3));
            // class_counts: the set each round trained on, counted by hand from its rows.
            const Dataset train = loadDataSplit(parsed(config).dataset).train;
            std::vector<int64_t> rows = seed["initial"].get<std::vector<int64_t>>();
            for (std::size_t k = 0; k < 3; ++k) {
                const json& round = seed["rounds"][k];
                QCOMPARE(round.size(), std::size_t(7));
                QVERIFY(round["steps"].is_number_integer());
                const auto acquired = round["acquired"].get<std::vector<int64_t>>();
                rows.insert(rows.end(), acquired.begin(), acquired.end());
                std::vector<int64_t> counted(2, 0);
                for (int64_t row : rows) {
                    ++counted[static_cast<std::size_t>(train.y[static_cast<std::size_t>(row)])];
                }
                QCOMPARE(round["class_counts"], json(counted));
                QCOMPARE(round["labels"], json(6 + 4 * k));
                QVERIFY(round["accuracy"].is_number() && round["nll"].is_number() &&
                        round["ece"].is_number());
                QCOMPARE(round["acquired"].size(), k == 0 ? std::size_t(0) : std::size_t(4));
            }
        }
    }
    // The CLI's rows are the engine's: an ActiveLearner of seed 6 acquires the same (the app
    // runs this same loop).
    ExperimentConfig six = parsed(config);
    six.ensemble.seed = 6;
    ActiveLearner learner(six, loadDataSplit(six.dataset), Acquisition::Bald);
    runLoop(learner, 2);
    QCOMPARE(acquisitions["bald"]["seeds"][1], learner.toJson());
    // labels_to_reach reads the mean curve: the first labels whose mean accuracy reaches 0.8.
    std::vector<ActiveRound> mean(3);
    for (std::size_t k = 0; k < 3; ++k) {
        const json& s = acquisitions["random"]["seeds"];
        mean[k].labels = s[0]["rounds"][k]["labels"].get<int64_t>();
        mean[k].accuracy = (s[0]["rounds"][k]["accuracy"].get<double>() +
                            s[1]["rounds"][k]["accuracy"].get<double>()) /
                           2.0;
    }
    const int64_t reach = labelsToReach(mean, 0.8);
    QCOMPARE(acquisitions["random"]["labels_to_reach"]["0.8"],
             reach < 0 ? json(nullptr) : json(reach));

    // CSV: a row per acquisition and round; a row per labelled row and seed.
    QCOMPARE(lineCount(csv + QStringLiteral("/active_curves.csv")), 1 + 2 * 3);
    QCOMPARE(lineCount(csv + QStringLiteral("/active_acquired.csv")), 1 + 2 * 2 * 14);
    // A row per acquisition, seed and round: the class counts of the report.
    QFile classes(csv + QStringLiteral("/active_classes.csv"));
    QVERIFY(classes.open(QIODevice::ReadOnly));
    const QStringList lines = QString::fromUtf8(classes.readAll()).split(QLatin1Char('\n'));
    QCOMPARE(lines[0], QStringLiteral("acquisition,seed,round,labels,class_0,class_1"));
    QCOMPARE(lines.size(), 1 + 2 * 2 * 3 + 1);  // and the empty string after the last newline
    const json last = acquisitions["random"]["seeds"][1]["rounds"][2]["class_counts"];
    QCOMPARE(lines[1 + 2 * 3 + 3 + 2], QStringLiteral("random,6,2,14,%1,%2")
                                           .arg(last[0].get<int64_t>())
                                           .arg(last[1].get<int64_t>()));
    QVERIFY2(r.out.contains(QStringLiteral("rarest and the commonest class")), qPrintable(r.out));
}

void TestActive::cliLabelsAndRounds() {
    QTemporaryDir dir;
    const QString configPath = writeJson(dir.path(), "moons.json", moonsLoopConfig());
    const QString report = dir.path() + QStringLiteral("/r.json");
    // --labels 12: ceil((12 - 6) / 4) = 2 rounds, to 14 labels.
    ensemble::test::Run r =
        ensemble::test::runCli({"active", "--config", configPath, "--acquisition", "entropy",
                                "--seeds", "1", "--labels", "12", "--report", report});
    QVERIFY2(r.code == 0, qPrintable(describe(r)));
    json rounds = readJson(report)["acquisitions"]["entropy"]["seeds"][0]["rounds"];
    QCOMPARE(rounds.size(), std::size_t(3));
    QCOMPARE(rounds[2]["labels"], json(14));
    // Without --rounds or --labels: active.rounds (2 here; --set changes it).
    r = ensemble::test::runCli({"active", "--config", configPath, "--acquisition", "margin",
                                "--seeds", "1", "--set", "active.rounds=1", "--report", report});
    QVERIFY2(r.code == 0, qPrintable(describe(r)));
    rounds = readJson(report)["acquisitions"]["margin"]["seeds"][0]["rounds"];
    QCOMPARE(rounds.size(), std::size_t(2));
    // --rounds 0: the initial set's round alone.
    r = ensemble::test::runCli({"active", "--config", configPath, "--acquisition", "random",
                                "--seeds", "1", "--rounds", "0", "--report", report});
    QVERIFY2(r.code == 0, qPrintable(describe(r)));
    QCOMPARE(readJson(report)["acquisitions"]["random"]["seeds"][0]["rounds"].size(),
             std::size_t(1));
}

void TestActive::cliBadFlags() {
    QTemporaryDir dir;
    const QString configPath = writeJson(dir.path(), "moons.json", moonsLoopConfig());
    const struct {
        QStringList args;
        const char* message;
    } cases[] = {
        {{"--acquisition", "dropout"}, "--acquisition: 'dropout' is not an acquisition function"},
        {{"--acquisition", "bald,bald"}, "listed twice"},
        {{"--rounds", "2", "--labels", "20"}, "give one of them"},
        {{"--seeds", "0"}, "--seeds: expected an integer >= 1"},
        {{"--rounds", "-1"}, "--rounds: expected an integer >= 0"},
        {{"--labels", "3"}, "--labels: expected at least active.initial = 6"},
        {{"--bogus", "1"}, "--bogus"},
        {{"--set", "active.retrain=sometimes"}, "active.retrain"},
    };
    for (const auto& c : cases) {
        const ensemble::test::Run r =
            ensemble::test::runCli(QStringList{"active", "--config", configPath} + c.args);
        QVERIFY2(r.code == 2, qPrintable(describe(r)));
        QVERIFY2(r.err.contains(QLatin1String(c.message)), qPrintable(r.err));
    }
    // Regression data.
    const ensemble::test::Run sine =
        ensemble::test::runCli({"active", "--config", "sine", "--set", "active.initial=5"});
    QVERIFY2(sine.code == 2 && sine.err.contains(QStringLiteral("model.likelihood")),
             qPrintable(describe(sine)));
    const ensemble::test::Run sineBare = ensemble::test::runCli({"active", "--config", "sine"});
    QVERIFY2(sineBare.code == 2 && sineBare.err.contains(QStringLiteral("classification")),
             qPrintable(describe(sineBare)));
    // --config is required.
    const ensemble::test::Run none = ensemble::test::runCli({"active"});
    QVERIFY2(none.code == 2 && none.err.contains(QStringLiteral("--config")),
             qPrintable(describe(none)));
}

void TestActive::cliInterruptKeepsFinishedRounds() {
    QTemporaryDir dir;
    json config = moonsLoopConfig();
    config["active"]["steps"] = 4000;  // rounds long enough to be interrupted in one
    const QString configPath = writeJson(dir.path(), "moons.json", config);
    const QString report = dir.path() + QStringLiteral("/r.json");
    QProcess p;
    p.start(ensemble::test::cliPath(), {"active", "--config", configPath, "--acquisition", "random",
                                        "--seeds", "1", "--rounds", "40", "--report", report});
    QVERIFY(p.waitForStarted());
    // Wait for the line of round 1 (10 labels), then interrupt.
    QString out;
    QElapsedTimer clock;
    clock.start();
    while (!out.contains(QStringLiteral("\n    10  ")) && clock.elapsed() < 60000 &&
           p.state() != QProcess::NotRunning) {
        p.waitForReadyRead(50);
        out += QString::fromUtf8(p.readAllStandardOutput());
    }
    QVERIFY2(out.contains(QStringLiteral("\n    10  ")), qPrintable(out));
    QCOMPARE(::kill(static_cast<pid_t>(p.processId()), SIGINT), 0);
    const ensemble::test::Run r = ensemble::test::finish(p);
    QVERIFY2(r.code == 130, qPrintable(describe(r)));
    QVERIFY2(r.err.contains(QStringLiteral("interrupted")), qPrintable(r.err));
    const json seed = readJson(report)["acquisitions"]["random"]["seeds"][0];
    QVERIFY(seed["rounds"].size() >= 2 && seed["rounds"].size() < 41);
    QVERIFY(!seed.contains("pending"));  // the rows of the round cut short are not reported
    const std::size_t last = seed["rounds"].size() - 1;
    QCOMPARE(seed["rounds"][last]["labels"], json(6 + 4 * last));
}

QTEST_GUILESS_MAIN(TestActive)
#include "tst_active.moc"
