// The active-learning reproduction (issue 50: gal-2017-active, Gal et al. 2017, Table 1):
// registered with the paper's eight numbers and its checks; planned as the mnist-active-cnn
// preset's study per acquisition function and seed; run on a tiny generated IDX MNIST
// (XDG_DATA_HOME points the engine at it) with a tiny network, its level figures set against a
// by-hand reading of the mean curve of the seeds' studies, the seeds' studies against the same
// study run alone and against `ensemble-cli active` (the same loop and the same reading), twice
// to the same bytes; the claims between levels judged on hand-made curves, passing and failing,
// with "not reached within the budget" kept apart from a number.
#include <QtTest/QtTest>

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "active/active_study.h"
#include "config/config.h"
#include "data/dataset.h"
#include "reproduce/figure.h"
#include "reproduce/reproduce.h"
#include "support/json_files.h"
#include "support/test_support.h"
#include "support/tiny_mnist.h"

using nlohmann::json;
namespace rp = ensemble::reproduce;

namespace {

constexpr int kTrainRows = ensemble::test::kTinyActiveTrainRows;
constexpr int kTestRows = ensemble::test::kTinyActiveTestRows;
const double kInf = std::numeric_limits<double>::infinity();

const std::vector<std::string> kTiny = ensemble::test::tinyActiveStudy();

const rp::Reproduction& galRow() {
    const rp::Reproduction* r = rp::findReproduction("gal-2017-active");
    if (r == nullptr) {
        throw std::logic_error("no reproduction gal-2017-active");
    }
    return *r;
}

const rp::Check* checkOf(const rp::Reproduction& r, const std::string& level,
                         const std::string& figure, rp::VerdictKind kind) {
    for (const rp::Check& c : r.checks) {
        if (c.level == level && c.figure == figure && c.kind == kind) {
            return &c;
        }
    }
    return nullptr;
}

const rp::ResultRow* rowOf(const rp::ReproductionResult& result, const std::string& level,
                           const std::string& figure, rp::VerdictKind kind) {
    for (const rp::ResultRow& row : result.rows) {
        if (row.check->level == level && row.check->figure == figure && row.check->kind == kind) {
            return &row;
        }
    }
    return nullptr;
}

// The labels of the first round whose mean accuracy over `seeds` is >= `target`, or -1: the
// reading by hand, apart from the engine's.
double byHandReach(const std::vector<const std::vector<double>*>& accuracy,
                   const std::vector<double>& labels, double target) {
    for (std::size_t r = 0; r < labels.size(); ++r) {
        double sum = 0.0;
        for (const std::vector<double>* a : accuracy) {
            sum += (*a)[r];
        }
        if (sum / static_cast<double>(accuracy.size()) >= target) {
            return labels[r];
        }
    }
    return -1.0;
}

rp::RunOutcome handMade(const std::string& level, int index, const std::vector<double>& labels,
                        const std::vector<double>& accuracy) {
    rp::RunOutcome o;
    o.level = level;
    o.index = index;
    o.series["labels"] = labels;
    o.series["accuracy"] = accuracy;
    return o;
}

// Hand-made curves for every level, two seeds each, on labels 20..250.
rp::ReproductionResult handMadeResult(
    const std::vector<std::pair<std::string, std::vector<std::vector<double>>>>& levels) {
    const std::vector<double> labels = {20, 100, 120, 140, 200, 250};
    rp::ReproductionResult result;
    result.reproduction = &galRow();
    rp::ReproduceOptions options;
    options.count = 2;
    result.plan = rp::planRuns(galRow(), options);
    for (const auto& [level, seeds] : levels) {
        for (std::size_t s = 0; s < seeds.size(); ++s) {
            result.outcomes.push_back(handMade(level, static_cast<int>(s), labels, seeds[s]));
        }
    }
    result.complete = true;
    rp::judge(result);
    return result;
}

}  // namespace

class TestReproduceActive : public QObject {
    Q_OBJECT

  private:
    QTemporaryDir m_data;  // XDG_DATA_HOME with ensemblelab/mnist

  private slots:
    void initTestCase();
    void rowHoldsTable1();
    void planIsThePresetsStudy();
    void judgeAgainstIsAnInterval();
    void claimsBetweenLevelsOnHandMadeCurves();
    void runsOnTinyMnistAsTheCliReadsThem();
    void cliRunsTheQuickRow();
};

void TestReproduceActive::initTestCase() {
    QVERIFY(m_data.isValid());
    QVERIFY(ensemble::test::writeTinyMnistFolder(
        m_data.filePath(QStringLiteral("ensemblelab/mnist")), kTrainRows, kTestRows));
    qputenv("XDG_DATA_HOME", QFile::encodeName(m_data.path()));
}

void TestReproduceActive::rowHoldsTable1() {
    const rp::Reproduction& r = galRow();
    QCOMPARE(r.runner, rp::RunnerKind::MnistActive);
    QCOMPARE(r.unit, std::string("seed"));
    QCOMPARE(r.levels, (std::vector<std::string>{"bald", "variation_ratios", "entropy", "random",
                                                 "batchbald"}));
    QCOMPARE(r.counts, (std::vector<int>{3, 3, 3, 3, 3}));
    QCOMPARE(r.quickCounts, (std::vector<int>{1, 0, 0, 1, 0}));
    QCOMPARE(r.costSeconds, 0.0);  // not measured
    // Table 1's eight numbers, each the published side of a level figure.
    const struct {
        const char* level;
        const char* to90;
        const char* to95;
    } table[] = {{"bald", "145", "335"},
                 {"variation_ratios", "120", "295"},
                 {"entropy", "165", "355"},
                 {"random", "255", "835"}};
    for (const auto& t : table) {
        for (const auto& [figure, printed] :
             {std::pair{"labels_to_90", t.to90}, std::pair{"labels_to_95", t.to95}}) {
            const rp::Check* c = nullptr;
            for (const rp::Check& check : r.checks) {
                if (check.level == t.level && check.figure == figure &&
                    !check.printedValue.empty()) {
                    c = &check;
                }
            }
            QVERIFY2(c != nullptr, t.level);
            QCOMPARE(c->printedValue, std::string(printed));
            QCOMPARE(c->of, rp::FigureOf::Level);
            QVERIFY(c->source.find("Table 1") != std::string::npos);
        }
    }
    const rp::Check* band = checkOf(r, "bald", "labels_to_90", rp::VerdictKind::Band);
    QVERIFY(band != nullptr);
    QCOMPARE(band->low, 145.0 / 1.5);
    QCOMPARE(band->high, 145.0 * 1.5);
    for (const char* level : {"bald", "variation_ratios"}) {
        const rp::Check* c = checkOf(r, level, "labels_to_90", rp::VerdictKind::Claim);
        QVERIFY(c != nullptr);
        QCOMPARE(c->versus, std::string("random"));
        QCOMPARE(c->factor, 0.7);
        QCOMPARE(c->test, rp::ClaimTest::AtMost);
    }
    const rp::Check* batch = checkOf(r, "batchbald", "labels_to_90", rp::VerdictKind::Claim);
    QVERIFY(batch != nullptr);
    QCOMPARE(batch->versus, std::string("bald"));
    QCOMPARE(batch->factor, 1.0);
    // Kirsch et al.'s figures are beside ours, never the published side that is judged.
    const rp::Check* batch90 =
        checkOf(r, "batchbald", "labels_to_90", rp::VerdictKind::Measurement);
    QVERIFY(batch90 != nullptr && batch90->printedValue.empty());
    QCOMPARE(batch90->beside.size(), std::size_t{1});
    QCOMPARE(batch90->beside[0].printedValue, std::string("90"));
    QVERIFY(!r.deviations.empty());
}

void TestReproduceActive::planIsThePresetsStudy() {
    const rp::Reproduction& r = galRow();
    const json preset = ensemble::loadConfigJson("mnist-active-cnn");
    const std::vector<rp::PlannedRun> full = rp::planRuns(r, {});
    QCOMPARE(full.size(), std::size_t{15});
    for (const rp::PlannedRun& p : full) {
        const json& c = p.config;
        QCOMPARE(c["active"]["acquisition"], json(p.level));
        QCOMPARE(c["model"]["layers"], preset["model"]["layers"]);
        QCOMPARE(c["ensemble"]["members"], preset["ensemble"]["members"]);
        QCOMPARE(c["ensemble"]["seed"].get<int>(), preset["ensemble"]["seed"].get<int>() + p.index);
        QCOMPARE(c["backend"]["kind"], json("cpu"));
        const int labels = c["active"]["initial"].get<int>() +
                           c["active"]["rounds"].get<int>() * c["active"]["per_round"].get<int>();
        QCOMPARE(labels, 1000);
        QCOMPARE(ensemble::parseConfig(c).json, c);  // complete
    }
    rp::ReproduceOptions quick;
    quick.quick = true;
    const std::vector<rp::PlannedRun> plan = rp::planRuns(r, quick);
    QCOMPARE(plan.size(), std::size_t{2});
    QCOMPARE(plan[0].level, std::string("bald"));
    QCOMPARE(plan[1].level, std::string("random"));
    for (const rp::PlannedRun& p : plan) {
        QCOMPARE(p.config["ensemble"]["seed"].get<int>(), 1);
        QCOMPARE(p.config["active"]["initial"].get<int>() +
                     p.config["active"]["rounds"].get<int>() *
                         p.config["active"]["per_round"].get<int>(),
                 250);
    }
}

void TestReproduceActive::judgeAgainstIsAnInterval() {
    const auto at = [](double v) {
        rp::Aggregate a;
        a.n = 3;
        a.level = true;
        a.mean = v;
        a.se = std::nan("");
        return a;
    };
    const auto beyond = [&](double budget) {
        rp::Aggregate a = at(kInf);
        a.beyond = budget;
        return a;
    };
    using rp::ClaimTest;
    QCOMPARE(rp::judgeAgainst(ClaimTest::AtMost, 0.7, at(140), at(200)).verdict, rp::Verdict::Pass);
    QCOMPARE(rp::judgeAgainst(ClaimTest::AtMost, 0.7, at(141), at(200)).verdict, rp::Verdict::Fail);
    // The other side not reached within 250: more than 250, so <= 175 holds, above undetermined.
    QCOMPARE(rp::judgeAgainst(ClaimTest::AtMost, 0.7, at(175), beyond(250)).verdict,
             rp::Verdict::Pass);
    const rp::Judgement open = rp::judgeAgainst(ClaimTest::AtMost, 0.7, at(180), beyond(250));
    QCOMPARE(open.verdict, rp::Verdict::Fail);
    QVERIFY2(open.why.find("undetermined") != std::string::npos, open.why.c_str());
    QVERIFY2(open.why.find("> 250") != std::string::npos, open.why.c_str());
    // Ours not reached: never shown to be at most anything.
    QCOMPARE(rp::judgeAgainst(ClaimTest::AtMost, 1.0, beyond(250), at(240)).verdict,
             rp::Verdict::Fail);
    QCOMPARE(rp::judgeAgainst(ClaimTest::AtMost, 1.0, beyond(250), beyond(250)).verdict,
             rp::Verdict::Fail);
    QCOMPARE(rp::judgeAgainst(ClaimTest::AtLeast, 1.0, beyond(250), at(240)).verdict,
             rp::Verdict::Pass);
    QCOMPARE(rp::judgeAgainst(ClaimTest::AtMost, 1.0, at(std::nan("")), at(240)).verdict,
             rp::Verdict::Fail);
    // A band on a figure not reached fails, whatever the budget.
    QCOMPARE(rp::judgeBand(96.0, 218.0, beyond(150)).verdict, rp::Verdict::Fail);
}

void TestReproduceActive::claimsBetweenLevelsOnHandMadeCurves() {
    // bald: seed 0 reaches 90 % at 100, seed 1 at 200; their mean curve first at 120 (the mean
    // of the seeds' own readings would be 150). random at 200; variation_ratios at 200 too;
    // batchbald never within 250.
    const std::vector<double> random = {0.5, 0.6, 0.7, 0.8, 0.91, 0.93};
    const rp::ReproductionResult a = handMadeResult(
        {{"bald", {{0.5, 0.95, 0.95, 0.96, 0.97, 0.98}, {0.5, 0.84, 0.86, 0.88, 0.92, 0.95}}},
         {"variation_ratios", {random, random}},
         {"entropy", {random, random}},
         {"random", {random, random}},
         {"batchbald", {{0.5, 0.6, 0.7, 0.8, 0.85, 0.88}, {0.5, 0.6, 0.7, 0.8, 0.85, 0.89}}}});
    const rp::Aggregate& bald90 = a.levelFigures.at("bald").at("labels_to_90");
    QCOMPARE(bald90.mean, 120.0);
    QCOMPARE(bald90.n, 2);
    QVERIFY(bald90.level && std::isnan(bald90.se) && std::isnan(bald90.beyond));
    QCOMPARE(a.levelFigures.at("bald").at("labels_to_95").mean, 250.0);  // (0.98 + 0.95) / 2
    const rp::Aggregate& batch90 = a.levelFigures.at("batchbald").at("labels_to_90");
    QVERIFY(std::isinf(batch90.mean));
    QCOMPARE(batch90.beyond, 250.0);
    const auto verdict = [&](const rp::ReproductionResult& res, const char* level,
                             const char* figure, rp::VerdictKind kind) {
        const rp::ResultRow* row = rowOf(res, level, figure, kind);
        return row == nullptr ? rp::Verdict::None : row->judgement.verdict;
    };
    using K = rp::VerdictKind;
    QCOMPARE(verdict(a, "bald", "labels_to_90", K::Band), rp::Verdict::Pass);   // 120 in band
    QCOMPARE(verdict(a, "bald", "labels_to_90", K::Claim), rp::Verdict::Pass);  // 120 <= 140
    QCOMPARE(verdict(a, "variation_ratios", "labels_to_90", K::Claim), rp::Verdict::Fail);
    QCOMPARE(verdict(a, "batchbald", "labels_to_90", K::Claim), rp::Verdict::Fail);  // > 250
    // "> 250" in the table, the report and the CSV; never a number.
    const std::string table = rp::resultTable(a);
    QVERIFY2(table.find("> 250") != std::string::npos, table.c_str());
    QVERIFY2(table.find("no standard error") != std::string::npos, table.c_str());
    const json report = rp::reportJson(a);
    bool seen = false;
    for (const json& row : report["rows"]) {
        if (row["level"] == "batchbald" && row["figure"] == "labels_to_90" &&
            row["kind"] == "measurement") {
            seen = true;
            QVERIFY(row["ours"]["mean"].is_null());
            QCOMPARE(row["ours"]["not_reached_within"].get<double>(), 250.0);
            QCOMPARE(row["ours"]["of"], json("level"));
            QCOMPARE(row["beside"][0]["printed"], json("90"));
        }
    }
    QVERIFY(seen);
    QVERIFY(rp::resultCsvs(a).at("table.csv").find(",level,250") != std::string::npos);
    QVERIFY(rp::figureSvg(a).find("panel-active") != std::string::npos);

    // random not reached within 250: bald's 120 <= 0.7 x (> 250) holds; variation_ratios at 200
    // is above 175 and undetermined: it fails, saying so. bald not reached: its band fails.
    const std::vector<double> slow = {0.5, 0.6, 0.7, 0.8, 0.85, 0.88};
    const rp::ReproductionResult b = handMadeResult(
        {{"bald", {slow, slow}}, {"variation_ratios", {random, random}}, {"random", {slow, slow}}});
    QVERIFY(std::isinf(b.levelFigures.at("bald").at("labels_to_90").mean));
    QCOMPARE(verdict(b, "bald", "labels_to_90", K::Band), rp::Verdict::Fail);
    QCOMPARE(verdict(b, "bald", "labels_to_90", K::Claim), rp::Verdict::Fail);
    QCOMPARE(verdict(b, "variation_ratios", "labels_to_90", K::Claim), rp::Verdict::Fail);
    const rp::ResultRow* open = rowOf(b, "variation_ratios", "labels_to_90", K::Claim);
    QVERIFY(open != nullptr);
    QVERIFY2(open->judgement.why.find("undetermined") != std::string::npos,
             open->judgement.why.c_str());
    // A claim against a level with no finished run is not judged.
    QVERIFY(rowOf(b, "batchbald", "labels_to_90", K::Claim) == nullptr);
    const std::vector<double> fast = {0.5, 0.6, 0.7, 0.92, 0.93, 0.95};
    const rp::ReproductionResult c =
        handMadeResult({{"bald", {fast, fast}}, {"random", {slow, slow}}});
    QCOMPARE(verdict(c, "bald", "labels_to_90", K::Claim), rp::Verdict::Pass);  // 140 <= 175
    QCOMPARE(verdict(c, "bald", "labels_to_90", K::Band), rp::Verdict::Pass);
    // The mean curve holds the rounds every seed finished: one seed cut to 140 labels cuts it.
    rp::ReproductionResult d = handMadeResult({{"bald", {fast, fast}}, {"random", {slow}}});
    d.outcomes[1].series["labels"].resize(4);
    d.outcomes[1].series["accuracy"].resize(4);
    rp::judge(d);
    QCOMPARE(d.levelFigures.at("bald").at("labels_to_90").mean, 140.0);
    QCOMPARE(d.levelFigures.at("bald").at("labels_to_95").beyond, 140.0);
}

void TestReproduceActive::runsOnTinyMnistAsTheCliReadsThem() {
    rp::ReproduceOptions options;
    options.count = 2;
    options.levels = {"bald", "random"};
    options.overrides = kTiny;
    const rp::ReproductionResult result = rp::runReproduction(galRow(), options, {});
    QVERIFY(result.complete);
    QCOMPARE(result.outcomes.size(), std::size_t{4});
    QCOMPARE(result.backend.empty(), false);
    const std::vector<double> labels = {20, 25, 30, 35};
    int reached = 0;
    for (const std::string level : {"bald", "random"}) {
        std::vector<const std::vector<double>*> accuracy;
        for (const rp::RunOutcome& o : result.outcomes) {
            if (o.level == level) {
                QVERIFY(o.series.at("labels") == labels);
                accuracy.push_back(&o.series.at("accuracy"));
                QCOMPARE(o.figures.at("final_accuracy_pct"), 100.0 * o.series.at("accuracy")[3]);
            }
        }
        QCOMPARE(accuracy.size(), std::size_t{2});
        for (const auto& [target, figure] :
             {std::pair{0.90, "labels_to_90"}, std::pair{0.95, "labels_to_95"}}) {
            const rp::Aggregate& got = result.levelFigures.at(level).at(figure);
            const double expected = byHandReach(accuracy, labels, target);
            QCOMPARE(got.n, 2);
            QVERIFY(got.level && std::isnan(got.se));
            if (expected < 0.0) {  // not reached within the 35 labels
                QVERIFY(std::isinf(got.mean));
                QCOMPARE(got.beyond, 35.0);
            } else {
                QCOMPARE(got.mean, expected);
                QVERIFY(std::isnan(got.beyond));
                ++reached;
            }
            const rp::ResultRow* row =
                rowOf(result, level, figure,
                      level == "bald" && std::string(figure) == "labels_to_90"
                          ? rp::VerdictKind::Band
                          : rp::VerdictKind::Measurement);
            QVERIFY(row != nullptr);
            QCOMPARE(row->ours.n, got.n);
            QCOMPARE(std::isinf(row->ours.mean), std::isinf(got.mean));
            if (std::isfinite(got.mean)) {
                QCOMPARE(row->ours.mean, got.mean);
            }
        }
    }
    QVERIFY(reached > 0);  // the reading of a reached figure is exercised, not only "> 35"
    // Each seed's study is the study run alone: an ActiveLearner of the planned config through
    // runActiveStudy, the loop ensemble-cli active runs.
    for (std::size_t i = 0; i < result.plan.size(); ++i) {
        const ensemble::ExperimentConfig config = ensemble::parseConfig(result.plan[i].config);
        const auto data =
            std::make_shared<const ensemble::DataSplit>(ensemble::loadDataSplit(config.dataset));
        ensemble::ActiveLearner learner(config, data, config.active.acquisition);
        QVERIFY(ensemble::runActiveStudy(learner, config.active.rounds));
        QCOMPARE(learner.rounds().size(), std::size_t{4});
        for (std::size_t r = 0; r < 4; ++r) {
            QCOMPARE(learner.rounds()[r].accuracy, result.outcomes[i].series.at("accuracy")[r]);
        }
    }
    // ensemble-cli active on the same config, both functions, seeds 1 and 2: the same rounds
    // and the same labels to reach 90 % and 95 %, read off its mean curve.
    QTemporaryDir dir;
    const QString config = ensemble::test::writeJson(dir.path(), "c.json", result.plan[0].config);
    const QString report = dir.filePath(QStringLiteral("a.json"));
    const ensemble::test::Run run =
        ensemble::test::runCli({"active", "--config", config, "--acquisition", "bald,random",
                                "--seeds", "2", "--report", report, "--no-record"});
    ENSEMBLE_VERIFY_RUN_OK(run);
    const json active = ensemble::test::readJson(report);
    for (const std::string level : {"bald", "random"}) {
        const json& a = active["acquisitions"][level];
        for (const auto& [key, figure] :
             {std::pair{"0.9", "labels_to_90"}, std::pair{"0.95", "labels_to_95"}}) {
            const rp::Aggregate& got = result.levelFigures.at(level).at(figure);
            if (a["labels_to_reach"][key].is_null()) {
                QVERIFY(std::isinf(got.mean));
            } else {
                QCOMPARE(a["labels_to_reach"][key].get<double>(), got.mean);
            }
        }
        int seed = 0;
        for (const rp::RunOutcome& o : result.outcomes) {
            if (o.level != level) {
                continue;
            }
            const json& rounds = a["seeds"][static_cast<std::size_t>(seed++)]["rounds"];
            QCOMPARE(rounds.size(), std::size_t{4});
            for (std::size_t r = 0; r < 4; ++r) {
                QCOMPARE(rounds[r]["accuracy"].get<double>(), o.series.at("accuracy")[r]);
            }
        }
    }
    // Deterministic: again, the same figures, table and figure.
    const rp::ReproductionResult again = rp::runReproduction(galRow(), options, {});
    QCOMPARE(again.outcomes.size(), result.outcomes.size());
    for (std::size_t i = 0; i < result.outcomes.size(); ++i) {
        QVERIFY(again.outcomes[i].series == result.outcomes[i].series);
        QVERIFY(again.outcomes[i].figures == result.outcomes[i].figures);
    }
    QCOMPARE(rp::resultTable(again), rp::resultTable(result));
    QCOMPARE(rp::figureSvg(again), rp::figureSvg(result));
}

void TestReproduceActive::cliRunsTheQuickRow() {
    ensemble::test::Run run = ensemble::test::runCli({"reproduce", "--list"});
    ENSEMBLE_VERIFY_RUN_OK(run);
    QVERIFY2(run.out.contains(QStringLiteral("gal-2017-active")), qPrintable(run.out));
    QTemporaryDir dir;
    const QString report = dir.filePath(QStringLiteral("r.json"));
    const QString figure = dir.filePath(QStringLiteral("f.svg"));
    QStringList args = {"reproduce", "gal-2017-active", "--quick", "--report",
                        report,      "--figure",        figure,    "--no-record"};
    for (const std::string& o : kTiny) {
        args << "--set" << QString::fromStdString(o);
    }
    run = ensemble::test::runCli(args);
    ENSEMBLE_VERIFY_RUN_OK(run);
    QVERIFY2(run.out.contains(QStringLiteral("no standard error")), qPrintable(run.out));
    const json j = ensemble::test::readJson(report);
    rp::ReproduceOptions options;
    options.quick = true;
    options.overrides = kTiny;
    const rp::ReproductionResult result = rp::runReproduction(galRow(), options, {});
    QCOMPARE(j["runs"].size(), std::size_t{2});  // bald and random, seed 1
    QCOMPARE(j["rows"].size(), result.rows.size());
    for (std::size_t i = 0; i < result.rows.size(); ++i) {
        QCOMPARE(j["rows"][i]["verdict"].get<std::string>(),
                 std::string(result.rows[i].judgement.verdict == rp::Verdict::Pass   ? "pass"
                             : result.rows[i].judgement.verdict == rp::Verdict::Fail ? "fail"
                                                                                     : "none"));
        QCOMPARE(j["rows"][i]["why"].get<std::string>(), result.rows[i].judgement.why);
    }
    QFile svg(figure);
    QVERIFY(svg.open(QIODevice::ReadOnly));
    QVERIFY(svg.readAll().contains("panel-active"));

    // One step a round learns nothing: 90 % is not reached within the 35 labels, and the report
    // says so instead of a number.
    args << "--set"
         << "active.steps=1";
    run = ensemble::test::runCli(args);
    ENSEMBLE_VERIFY_RUN_OK(run);
    QVERIFY2(run.out.contains(QStringLiteral("> 35")), qPrintable(run.out));
    const json slow = ensemble::test::readJson(report);
    bool seen = false;
    for (const json& row : slow["rows"]) {
        if (row["level"] == "bald" && row["figure"] == "labels_to_90" && row["kind"] == "band") {
            seen = true;
            QVERIFY(row["ours"]["mean"].is_null());
            QCOMPARE(row["ours"]["not_reached_within"].get<double>(), 35.0);
            QCOMPARE(row["verdict"], json("fail"));
        }
    }
    QVERIFY(seen);
}

QTEST_GUILESS_MAIN(TestReproduceActive)
#include "tst_reproduce_active.moc"
