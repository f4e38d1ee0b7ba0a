// The reproductions (engine/reproduce/reproduce.h) and `ensemble-cli reproduce`: the registry
// (ids unique, every published number sourced and printed as a number), the protocol the UCI
// row plans (its configs, seeded disjoint splits, the training rows' standardisation), the
// aggregation and each verdict kind by hand, and the command end to end on yacht: the report's
// keys, a run redone by `ensemble-cli train` from --print-config, Ctrl-C's partial report.
// The figure (reproduce/figure.h) from hand-made results: well-formed XML, the paper's numbers
// where the axes put them, no "nan" from a diverged run, the same bytes again, escaped text;
// and `--figure` end to end on Figure 1.
#include <QtTest/QtTest>

#include <signal.h>

#include <algorithm>
#include <clocale>
#include <cmath>
#include <limits>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "config/config.h"
#include "core/errors.h"
#include "data/dataset.h"
#include "reproduce/figure.h"
#include "reproduce/reproduce.h"
#include "support/json_files.h"
#include "support/svg_elements.h"
#include "support/test_support.h"

using ensemble::test::AxisReading;
using ensemble::test::hasNonFiniteText;
using ensemble::test::ParsedSvg;
using ensemble::test::parseSvg;
using ensemble::test::readJson;
using ensemble::test::SvgElement;
using ensemble::test::textsOf;
using ensemble::test::yAxisOf;
using nlohmann::json;
namespace rp = ensemble::reproduce;

namespace {

// Every row of a table, as a vector of its features and target, sorted: the table as a
// multiset of rows, whatever their order.
std::vector<std::vector<float>> sortedRows(const std::vector<const ensemble::Dataset*>& parts) {
    std::vector<std::vector<float>> rows;
    for (const ensemble::Dataset* d : parts) {
        for (int64_t r = 0; r < d->rows; ++r) {
            std::vector<float> row(d->row(r), d->row(r) + d->features);
            row.push_back(d->target[static_cast<std::size_t>(r)]);
            rows.push_back(std::move(row));
        }
    }
    std::sort(rows.begin(), rows.end());
    return rows;
}

const rp::Reproduction& row(const char* id) {
    const rp::Reproduction* r = rp::findReproduction(id);
    if (r == nullptr) {
        throw std::logic_error(std::string("no reproduction ") + id);
    }
    return *r;
}

// A result of `r` over `levels`, `count` runs a level, each run's figures from `figures`
// (level, index) and judged.
template <typename Figures>
rp::ReproductionResult handMadeResult(const rp::Reproduction& r,
                                      const std::vector<std::string>& levels, int count,
                                      Figures figures) {
    rp::ReproductionResult result;
    result.reproduction = &r;
    result.options.levels = levels;
    result.options.count = count;
    result.plan = rp::planRuns(r, result.options);
    for (const rp::PlannedRun& p : result.plan) {
        rp::RunOutcome o;
        o.level = p.level;
        o.index = p.index;
        o.figures = figures(p.level, p.index);
        result.outcomes.push_back(o);
    }
    result.complete = true;
    result.backend = "cpu";
    rp::judge(result);
    return result;
}

}  // namespace

class TestReproduce : public QObject {
    Q_OBJECT

  private slots:
    void registryIdsAreUniqueAndNumbersSourced();
    void uciRowHoldsTheTable();
    void uciPlanIsThePapersProtocol();
    void plannedSplitsAreDisjointSeededAndStandardisedOnTrainRows();
    void aggregationByHand();
    void numericVerdictWithTheHalfDigitFloor();
    void bandAndClaimVerdicts();
    void judgeSkipsUnplannedLevelsAndCountsMissingFigures();
    void cliReproducesYachtAndReportHasItsKeys();
    void cliRunRedoneByTrain();
    void cliListsAndRefuses();
    void cliFigureOneWritesCurves();
    void cliMoonsJudgesTheBlobPerMethod();
    void cliInterruptWritesPartialReport();
    void figureDrawsTheUciTableWhereTheAxesSay();
    void figureDrawsBandsClaimsAndEscapedText();
    void figureLeavesOutNonFiniteValues();
    void figureIsTheSameBytesAgain();
    void figureWithNothingToPlotIsTheTable();
    void cliWritesFigureOneAndRecordsIt();
};

void TestReproduce::registryIdsAreUniqueAndNumbersSourced() {
    std::set<std::string> ids;
    QVERIFY(!rp::reproductions().empty());
    for (const rp::Reproduction& r : rp::reproductions()) {
        QVERIFY2(ids.insert(r.id).second, r.id.c_str());
        QCOMPARE(rp::findReproduction(r.id), &r);
        QVERIFY(!r.title.empty() && !r.paper.empty() && !r.cite.empty() && !r.where.empty());
        QVERIFY(!r.runs.empty() && !r.quickCuts.empty());
        QVERIFY(r.unit == "split" || r.unit == "seed");
        QCOMPARE(r.counts.size(), r.levels.size());
        QCOMPARE(r.quickCounts.size(), r.levels.size());
        // --quick may leave a level out (0 runs), not every level.
        int quickRuns = 0;
        for (std::size_t l = 0; l < r.levels.size(); ++l) {
            QVERIFY(r.counts[l] >= 1 && r.quickCounts[l] >= 0 && r.quickCounts[l] <= r.counts[l]);
            quickRuns += r.quickCounts[l];
        }
        QVERIFY2(quickRuns >= 1, r.id.c_str());
        // Measured (--quick at most the whole), or both 0 and said to be not measured.
        if (r.costSeconds == 0.0 || r.quickCostSeconds == 0.0) {
            QVERIFY2(r.costSeconds == 0.0 && r.quickCostSeconds == 0.0, r.id.c_str());
            QVERIFY2(r.costMeasuredOn.rfind("not measured", 0) == 0, r.id.c_str());
        } else {
            QVERIFY(r.costSeconds > 0.0 && r.quickCostSeconds > 0.0 &&
                    r.quickCostSeconds <= r.costSeconds);
        }
        QVERIFY(!r.checks.empty());
        for (const rp::Check& c : r.checks) {
            const std::string what = r.id + " " + c.level + " " + c.figure;
            QVERIFY2(std::find(r.levels.begin(), r.levels.end(), c.level) != r.levels.end(),
                     what.c_str());
            if (c.kind != rp::VerdictKind::Measurement) {
                QVERIFY2(!c.source.empty(), what.c_str());  // every published number or claim
            }
            if (c.kind == rp::VerdictKind::Numeric) {
                rp::printedNumber(c.printedValue);  // throws unless printed as a number
                QVERIFY(rp::printedNumber(c.printedSpread) >= 0.0);
            }
            if (c.kind == rp::VerdictKind::Claim) {
                QVERIFY2(!c.claim.empty(), what.c_str());
            }
            if (!c.versus.empty()) {  // a claim against another level of the same row
                QVERIFY2(
                    c.kind == rp::VerdictKind::Claim && c.versus != c.level &&
                        std::find(r.levels.begin(), r.levels.end(), c.versus) != r.levels.end(),
                    what.c_str());
            }
        }
        const bool mnist =
            r.runner == rp::RunnerKind::MnistSizeCurve || r.runner == rp::RunnerKind::MnistLenet ||
            r.runner == rp::RunnerKind::MnistShift || r.runner == rp::RunnerKind::MnistActive;
        std::string why;  // the build tree ships the UCI sets; MNIST: tst_reproduce_mnist
        QVERIFY2(mnist || rp::dataPresent(r, &why), why.c_str());
    }
    QCOMPARE(rp::findReproduction("no-such-row"), nullptr);
}

// Table 1's Deep Ensembles columns, as the issue quotes them.
void TestReproduce::uciRowHoldsTheTable() {
    const rp::Reproduction& r = row("deep-ensembles-uci");
    QCOMPARE(r.levels, (std::vector<std::string>{"concrete", "energy", "kin8nm", "naval", "power",
                                                 "protein", "wine", "yacht"}));
    QCOMPARE(r.checks.size(), std::size_t{16});
    for (const rp::Check& c : r.checks) {
        QCOMPARE(c.kind, rp::VerdictKind::Numeric);
    }
    const auto printed = [&](const std::string& level, const std::string& figure) {
        for (const rp::Check& c : r.checks) {
            if (c.level == level && c.figure == figure) {
                return c.printedValue + " ± " + c.printedSpread;
            }
        }
        return std::string("missing");
    };
    QCOMPARE(printed("concrete", "rmse"), std::string("6.03 ± 0.58"));
    QCOMPARE(printed("kin8nm", "nll"), std::string("-1.20 ± 0.02"));
    QCOMPARE(printed("naval", "rmse"), std::string("0.00 ± 0.00"));
    QCOMPARE(printed("naval", "nll"), std::string("-5.63 ± 0.05"));
    QCOMPARE(printed("protein", "nll"), std::string("2.83 ± 0.02"));
    QCOMPARE(printed("yacht", "rmse"), std::string("1.58 ± 0.48"));
    const auto protein = std::find(r.levels.begin(), r.levels.end(), "protein") - r.levels.begin();
    QCOMPARE(r.counts[static_cast<std::size_t>(protein)], 5);
    QCOMPARE(r.counts[0], 20);
}

void TestReproduce::uciPlanIsThePapersProtocol() {
    const rp::Reproduction& r = row("deep-ensembles-uci");
    rp::ReproduceOptions options;
    options.levels = {"yacht", "protein"};
    const std::vector<rp::PlannedRun> full = rp::planRuns(r, options);
    QCOMPARE(full.size(), std::size_t{25});  // 20 + 5, in the table's order
    QCOMPARE(full.front().level, std::string("protein"));
    QCOMPARE(full.back().level, std::string("yacht"));
    for (const rp::PlannedRun& p : full) {
        const json& c = p.config;
        QCOMPARE(c["dataset"]["kind"], json("uci"));
        QCOMPARE(c["dataset"]["uci_set"], json(p.level));
        QCOMPARE(c["dataset"]["test_fraction"].get<double>(), 0.1);
        QCOMPARE(c["dataset"]["seed"], json(p.index));
        QCOMPARE(c["ensemble"]["seed"], json(p.index));
        QCOMPARE(c["ensemble"]["members"], json(5));
        QCOMPARE(c["ensemble"]["bootstrap"], json("shuffle"));
        QCOMPARE(c["model"]["likelihood"], json("gaussian"));
        QCOMPARE(c["model"]["hidden"], json::array({p.level == "protein" ? 100 : 50}));
        QCOMPARE(c["training"]["epochs"].get<double>(), 40.0);
        QCOMPARE(c["training"]["batch_size"], json(100));
        QCOMPARE(c["training"]["adversarial_eps"].get<double>(), 0.01);
        QCOMPARE(c["training"]["adversarial_eps_unit"], json("range"));
        QCOMPARE(c["backend"]["kind"], json("cpu"));
        // Complete: parseConfig gives the same config back.
        QCOMPARE(ensemble::parseConfig(c).json, c);
    }
    options.quick = true;
    QCOMPARE(rp::planRuns(r, options).size(), std::size_t{6});  // 5 + 1
    options.count = 2;
    options.overrides = {"optimizer.lr=0.1"};
    const std::vector<rp::PlannedRun> two = rp::planRuns(r, options);
    QCOMPARE(two.size(), std::size_t{4});
    QCOMPARE(two[0].config["optimizer"]["lr"].get<double>(), 0.1);
    options.levels = {"boston"};
    QVERIFY_THROWS_EXCEPTION(ensemble::ConfigError, rp::planRuns(r, options));
    options.levels = {"yacht"};
    options.overrides = {"model.no_such_key=1"};
    QVERIFY_THROWS_EXCEPTION(ensemble::ConfigError, rp::planRuns(r, options));
}

// The splits the plan makes are the engine's seeded 90/10 partitions: each a partition of the
// table, the same again for the same split, other rows for another; the standardisation is the
// training rows' (Normalization::fit on them), not the whole table's.
void TestReproduce::plannedSplitsAreDisjointSeededAndStandardisedOnTrainRows() {
    rp::ReproduceOptions options;
    options.levels = {"yacht"};
    options.count = 2;
    const std::vector<rp::PlannedRun> plan = rp::planRuns(row("deep-ensembles-uci"), options);
    const ensemble::Dataset all = ensemble::readUciSet(ensemble::UciSet::Yacht);
    const auto load = [](const rp::PlannedRun& p) {
        return ensemble::loadDataSplit(ensemble::parseConfig(p.config).dataset);
    };
    const ensemble::DataSplit a = load(plan[0]);
    const ensemble::DataSplit b = load(plan[1]);
    QCOMPARE(a.test.rows, int64_t{31});  // round(308 * 0.1)
    QCOMPARE(a.train.rows, int64_t{277});
    QVERIFY(sortedRows({&a.train, &a.test}) == sortedRows({&all}));  // a partition
    QVERIFY(sortedRows({&a.test}) != sortedRows({&b.test}));         // another split
    const ensemble::DataSplit again = load(plan[0]);
    QVERIFY(sortedRows({&again.test}) == sortedRows({&a.test}));  // seeded

    const ensemble::Normalization fitted = ensemble::Normalization::fit(a.train);
    QCOMPARE(a.normalization.mean, fitted.mean);
    QCOMPARE(a.normalization.std, fitted.std);
    // The target's mean and population std, by hand over the training rows.
    const auto meanOf = [](const std::vector<float>& v) {
        double sum = 0.0;
        for (float t : v) {
            sum += t;
        }
        return sum / static_cast<double>(v.size());
    };
    const double targetMean = meanOf(a.train.target);
    double squares = 0.0;
    for (float t : a.train.target) {
        squares += (t - targetMean) * (t - targetMean);
    }
    const double targetStd = std::sqrt(squares / static_cast<double>(a.train.rows));
    QVERIFY(std::abs(a.normalization.targetMean - targetMean) <= 1e-9 * std::abs(targetMean));
    QVERIFY(std::abs(a.normalization.targetStd - targetStd) <= 1e-9 * targetStd);
    QVERIFY(std::abs(a.normalization.targetMean - meanOf(all.target)) > 1e-6);
    QVERIFY(a.normalization.mean != ensemble::Normalization::fit(all).mean);
}

void TestReproduce::aggregationByHand() {
    const rp::Aggregate four = rp::aggregate({1.0, 2.0, 3.0, 4.0});
    QCOMPARE(four.n, 4);
    QCOMPARE(four.mean, 2.5);
    // Sample variance (1.5^2 + 0.5^2 + 0.5^2 + 1.5^2) / 3 = 5/3; se = sqrt(5/3) / 2.
    QVERIFY(std::abs(four.se - std::sqrt(5.0 / 3.0) / 2.0) < 1e-15);
    const rp::Aggregate two = rp::aggregate({6.0, 6.5});
    QCOMPARE(two.mean, 6.25);
    QVERIFY(std::abs(two.se - 0.25) < 1e-15);  // sd 0.353553.., / sqrt(2)
    const rp::Aggregate one = rp::aggregate({3.0});
    QCOMPARE(one.mean, 3.0);
    QVERIFY(std::isnan(one.se));
    QVERIFY(std::isnan(rp::aggregate({}).mean));
    QCOMPARE(rp::aggregate({}).n, 0);
    const double nan = std::numeric_limits<double>::quiet_NaN();
    QVERIFY(std::isnan(rp::aggregate({1.0, nan}).mean));  // a diverged run counts
}

void TestReproduce::numericVerdictWithTheHalfDigitFloor() {
    QCOMPARE(rp::halfLastDigit("0.00"), 0.005);
    QCOMPARE(rp::halfLastDigit("0.58"), 0.005);
    QCOMPARE(rp::halfLastDigit("0.5"), 0.05);
    QCOMPARE(rp::halfLastDigit("3"), 0.5);
    QCOMPARE(rp::printedNumber("-5.63"), -5.63);
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, rp::printedNumber("6.03 ± 0.58"));
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, rp::halfLastDigit(""));

    // "0.09 ± 0.00" is ± 0.005: ours 0.095 exactly (se 0) is 0.005 <= 2 * 0.005 away.
    rp::Aggregate ours{20, 0.095, 0.0};
    rp::Judgement j = rp::judgeNumeric("0.09", "0.00", ours);
    QCOMPARE(j.paperSe, 0.005);
    QCOMPARE(j.tolerance, 0.01);
    QCOMPARE(j.verdict, rp::Verdict::Pass);
    ours.mean = 0.1005;  // 0.0105 away
    QCOMPARE(rp::judgeNumeric("0.09", "0.00", ours).verdict, rp::Verdict::Fail);
    // Ours' standard error widens it: 2 sqrt(0.005^2 + 0.012^2) = 0.026.
    ours = {20, 0.115, 0.012};
    j = rp::judgeNumeric("0.09", "0.00", ours);
    QVERIFY(std::abs(j.tolerance - 0.026) < 1e-12);
    QVERIFY(std::abs(j.difference - 0.025) < 1e-12);
    QCOMPARE(j.verdict, rp::Verdict::Pass);
    // The reason as %g writes it in the C locale, whatever LC_NUMERIC the app runs under.
    QCOMPARE(j.why, std::string("|0.025| <= 2 sqrt(0.005^2 + 0.012^2) = 0.026"));
    // A printed spread above the floor is taken as printed: 2 sqrt(0.58^2 + 0) = 1.16.
    ours = {20, 6.03 + 1.17, 0.0};
    QCOMPARE(rp::judgeNumeric("6.03", "0.58", ours).verdict, rp::Verdict::Fail);
    ours.mean = 6.03 - 1.15;
    QCOMPARE(rp::judgeNumeric("6.03", "0.58", ours).verdict, rp::Verdict::Pass);
    // One run: no se of ours (NaN counts as 0).
    ours = {1, 3.1, std::numeric_limits<double>::quiet_NaN()};
    j = rp::judgeNumeric("3.06", "0.18", ours);
    QCOMPARE(j.tolerance, 0.36);
    QCOMPARE(j.verdict, rp::Verdict::Pass);
    // Not finite, or nothing run: a failure, never a pass.
    ours = {3, std::numeric_limits<double>::quiet_NaN(), 0.1};
    QCOMPARE(rp::judgeNumeric("3.06", "0.18", ours).verdict, rp::Verdict::Fail);
    QCOMPARE(rp::judgeNumeric("3.06", "0.18", rp::aggregate({})).verdict, rp::Verdict::Fail);
}

void TestReproduce::bandAndClaimVerdicts() {
    QCOMPARE(rp::judgeBand(1.0, 1.8, {5, 1.4, 0.1}).verdict, rp::Verdict::Pass);
    QCOMPARE(rp::judgeBand(1.0, 1.8, {5, 1.0, 0.1}).verdict, rp::Verdict::Pass);  // edges in
    QCOMPARE(rp::judgeBand(1.0, 1.8, {5, 1.8, 0.1}).verdict, rp::Verdict::Pass);
    QCOMPARE(rp::judgeBand(1.0, 1.8, {5, 1.81, 0.1}).verdict, rp::Verdict::Fail);
    QCOMPARE(rp::judgeBand(1.0, 1.8, {5, 1.81, 0.1}).why, std::string("1.81 outside [1, 1.8]"));
    QCOMPARE(rp::judgeBand(1.0, 1.8, {5, 0.99, 0.0}).verdict, rp::Verdict::Fail);
    QCOMPARE(rp::judgeBand(1.0, 1.8, rp::aggregate({})).verdict, rp::Verdict::Fail);

    rp::Judgement j = rp::judgeClaim(rp::ClaimTest::AtLeast, 2.0, {2.0, 3.5, 6.0});
    QCOMPARE(j.verdict, rp::Verdict::Pass);
    QCOMPARE(j.held, 3);
    j = rp::judgeClaim(rp::ClaimTest::AtLeast, 2.0, {2.5, 1.9, 6.0});  // one run against it
    QCOMPARE(j.verdict, rp::Verdict::Fail);
    QCOMPARE(j.held, 2);
    QCOMPARE(j.why, std::string("held in 2 of 3 runs (>= 2)"));
    QCOMPARE(rp::judgeClaim(rp::ClaimTest::AtMost, 0.5, {0.1, 0.5}).verdict, rp::Verdict::Pass);
    QCOMPARE(rp::judgeClaim(rp::ClaimTest::AtMost, 0.5, {0.6}).verdict, rp::Verdict::Fail);
    QCOMPARE(rp::judgeClaim(rp::ClaimTest::AtLeast, 0.0, {}).verdict, rp::Verdict::Fail);
    const double nan = std::numeric_limits<double>::quiet_NaN();
    QCOMPARE(rp::judgeClaim(rp::ClaimTest::AtLeast, 0.0, {1.0, nan}).verdict, rp::Verdict::Fail);
}

// judge() on hand-made outcomes: only the planned levels with finished runs get rows; a run
// without the figure counts as NaN (a failure), not as a missing run.
void TestReproduce::judgeSkipsUnplannedLevelsAndCountsMissingFigures() {
    const rp::Reproduction& r = row("deep-ensembles-uci");
    rp::ReproductionResult result;
    result.reproduction = &r;
    result.options.levels = {"wine"};
    result.options.count = 2;
    result.plan = rp::planRuns(r, result.options);
    rp::RunOutcome a;
    a.level = "wine";
    a.figures = {{"rmse", 0.62}, {"nll", 0.90}};
    rp::RunOutcome b = a;
    b.index = 1;
    b.figures = {{"rmse", 0.66}};
    result.outcomes = {a, b};
    rp::judge(result);
    QCOMPARE(result.rows.size(), std::size_t{2});
    QCOMPARE(result.rows[0].check->figure, std::string("rmse"));
    QVERIFY(std::abs(result.rows[0].ours.mean - 0.64) < 1e-12);
    QVERIFY(std::abs(result.rows[0].ours.se - 0.02) < 1e-12);
    QCOMPARE(result.rows[0].judgement.verdict, rp::Verdict::Pass);
    QCOMPARE(result.rows[1].ours.n, 2);
    QCOMPARE(result.rows[1].judgement.verdict, rp::Verdict::Fail);
    // A level planned but not reached (an interrupted run) has no rows, not failing ones.
    result.options.levels = {"wine", "yacht"};
    result.plan = rp::planRuns(r, result.options);
    rp::judge(result);
    QCOMPARE(result.rows.size(), std::size_t{2});
    const json report = rp::reportJson(result);
    QCOMPARE(report["summary"]["pass"], json(1));
    QCOMPARE(report["summary"]["fail"], json(1));
    QCOMPARE(report["rows"][1]["ours"]["mean"], json(nullptr));
}

void TestReproduce::cliReproducesYachtAndReportHasItsKeys() {
    QTemporaryDir dir;
    const QString report = dir.filePath(QStringLiteral("r.json"));
    const QString csv = dir.filePath(QStringLiteral("csv"));
    const ensemble::test::Run r =
        ensemble::test::runCli({"reproduce", "deep-ensembles-uci/yacht", "--splits", "2", "--quick",
                                "--report", report, "--csv", csv, "--no-record"});
    ENSEMBLE_VERIFY_RUN_OK(r);
    QVERIFY2(r.out.contains(QStringLiteral("1.58 ± 0.48")), qPrintable(r.out));
    const json j = readJson(report);
    for (const char* key :
         {"id", "title", "paper", "where", "runs_what", "unit", "count", "quick", "overrides",
          "complete", "backend", "cpu", "seconds", "deviations", "rows", "runs", "summary"}) {
        QVERIFY2(j.contains(key), key);
    }
    QCOMPARE(j["id"], json("deep-ensembles-uci"));
    QCOMPARE(j["complete"], json(true));
    QCOMPARE(j["quick"], json(true));
    QCOMPARE(j["count"], json(2));
    QVERIFY(j["backend"].get<std::string>().rfind("cpu", 0) == 0);
    QCOMPARE(j["rows"].size(), std::size_t{2});
    for (const json& row : j["rows"]) {
        QCOMPARE(row["level"], json("yacht"));
        QCOMPARE(row["kind"], json("numeric"));
        QCOMPARE(row["ours"]["n"], json(2));
        QVERIFY(row["ours"]["mean"].is_number() && row["ours"]["se"].is_number());
        QVERIFY(row["verdict"] == json("pass") || row["verdict"] == json("fail"));
        QVERIFY(row["paper"]["source"].get<std::string>().find("Table 1") != std::string::npos);
        QVERIFY(row["tolerance"].is_number() && row["difference"].is_number());
    }
    QCOMPARE(j["rows"][0]["paper"]["printed"], json("1.58 ± 0.48"));
    QCOMPARE(j["rows"][0]["paper"]["spread"].get<double>(), 0.48);
    QCOMPARE(j["runs"].size(), std::size_t{2});
    const double rmse0 = j["runs"][0]["figures"]["rmse"].get<double>();
    const double rmse1 = j["runs"][1]["figures"]["rmse"].get<double>();
    QVERIFY(std::isfinite(rmse0) && std::isfinite(rmse1));
    const double mean = j["rows"][0]["ours"]["mean"].get<double>();
    QVERIFY(std::abs(mean - (rmse0 + rmse1) / 2.0) < 1e-12);
    QVERIFY(std::abs(j["rows"][0]["ours"]["se"].get<double>() - std::abs(rmse0 - rmse1) / 2.0) <
            1e-12);
    QCOMPARE(j["summary"]["pass"].get<int>() + j["summary"]["fail"].get<int>(), 2);
    for (const char* name : {"runs.csv", "table.csv"}) {
        QVERIFY2(QFileInfo::exists(csv + QLatin1Char('/') + QLatin1String(name)), name);
    }
}

// --print-config's configs are complete: `ensemble-cli train` on split 1's gives the RMSE the
// reproduction reported for it.
void TestReproduce::cliRunRedoneByTrain() {
    QTemporaryDir dir;
    const QString report = dir.filePath(QStringLiteral("r.json"));
    ensemble::test::Run r = ensemble::test::runCli(
        {"reproduce", "deep-ensembles-uci/yacht", "--splits", "2", "--print-config"});
    ENSEMBLE_VERIFY_RUN_OK(r);
    const json plan = json::parse(r.out.toStdString());
    QCOMPARE(plan.size(), std::size_t{2});
    QCOMPARE(plan[1]["split"], json(1));
    const QString config = ensemble::test::writeJson(dir.path(), "split1.json", plan[1]["config"]);
    r = ensemble::test::runCli({"reproduce", "deep-ensembles-uci/yacht", "--splits", "2",
                                "--report", report, "--no-record"});
    ENSEMBLE_VERIFY_RUN_OK(r);
    const QString metrics = dir.filePath(QStringLiteral("m.json"));
    r = ensemble::test::runCli(
        {"train", "--config", config, "--metrics", metrics, "--quiet", "--no-record"});
    ENSEMBLE_VERIFY_RUN_OK(r);
    const double trained = readJson(metrics)["ensemble"]["rmse"].get<double>();
    const double reproduced = readJson(report)["runs"][1]["figures"]["rmse"].get<double>();
    QVERIFY2(ensemble::test::sameBits(trained, reproduced),
             qPrintable(
                 QStringLiteral("%1 vs %2").arg(trained, 0, 'g', 17).arg(reproduced, 0, 'g', 17)));
}

void TestReproduce::cliListsAndRefuses() {
    ensemble::test::Run r = ensemble::test::runCli({"reproduce", "--list"});
    ENSEMBLE_VERIFY_RUN_OK(r);
    for (const rp::Reproduction& row : rp::reproductions()) {
        QVERIFY2(r.out.contains(QString::fromStdString(row.id)), qPrintable(r.out));
    }
    QVERIFY(r.out.contains(QStringLiteral("present")));
    QCOMPARE(ensemble::test::runCli({"reproduce"}).code, 2);  // no ID
    QCOMPARE(ensemble::test::runCli({"reproduce", "no-such-row"}).code, 2);
    QCOMPARE(ensemble::test::runCli({"reproduce", "deep-ensembles-uci/boston"}).code, 2);
    r = ensemble::test::runCli({"reproduce", "deep-ensembles-uci", "--seeds", "2"});
    QCOMPARE(r.code, 2);  // a split count is --splits
    QVERIFY2(r.err.contains(QStringLiteral("--splits")), qPrintable(r.err));
    QCOMPARE(ensemble::test::runCli({"reproduce", "deep-ensembles-uci", "--splits", "0"}).code, 2);
}

void TestReproduce::cliFigureOneWritesCurves() {
    QTemporaryDir dir;
    const QString report = dir.filePath(QStringLiteral("r.json"));
    const QString csv = dir.filePath(QStringLiteral("csv"));
    const ensemble::test::Run r =
        ensemble::test::runCli({"reproduce", "deep-ensembles-fig1/nll-adversarial-ensemble",
                                "--seeds", "1", "--report", report, "--csv", csv, "--no-record"});
    ENSEMBLE_VERIFY_RUN_OK(r);
    const QStringList curves = [&] {
        QFile f(csv + QStringLiteral("/curves.csv"));
        return f.open(QIODevice::ReadOnly)
                   ? QString::fromUtf8(f.readAll()).split(QLatin1Char('\n'), Qt::SkipEmptyParts)
                   : QStringList();
    }();
    QCOMPARE(curves.size(), 242);  // the header and x = -6, -5.95, ..., 6
    QCOMPARE(curves[0], QStringLiteral("panel,seed,x,mean,std,lower_3sd,upper_3sd"));
    QVERIFY(curves[1].startsWith(QStringLiteral("nll-adversarial-ensemble,0,-6,")));
    const json j = readJson(report);
    bool claimed = false;
    for (const json& row : j["rows"]) {
        if (row["kind"] == json("claim")) {
            claimed = true;
            QCOMPARE(row["figure"], json("band_ratio"));
            QVERIFY(row["verdict"] == json("pass") || row["verdict"] == json("fail"));
            QVERIFY(!row["paper"]["claim"].get<std::string>().empty());
        }
    }
    QVERIFY(claimed);
}

// The OOD row: a run's figures, and its claim judged per method.
void TestReproduce::cliMoonsJudgesTheBlobPerMethod() {
    QTemporaryDir dir;
    const QString report = dir.filePath(QStringLiteral("r.json"));
    const ensemble::test::Run r =
        ensemble::test::runCli({"reproduce", "two-moons-ood/mc_dropout", "--seeds", "1", "--report",
                                report, "--no-record"});
    ENSEMBLE_VERIFY_RUN_OK(r);
    const json j = readJson(report);
    QCOMPARE(j["runs"].size(), std::size_t{1});
    const json& figures = j["runs"][0]["figures"];
    for (const char* name :
         {"test_accuracy", "blob_confidence", "ood_auroc_mi", "ood_auroc_confidence"}) {
        QVERIFY2(figures[name].is_number(), name);
    }
    QVERIFY(figures["blob_confidence"].get<double>() >= 0.5 &&
            figures["blob_confidence"].get<double>() <= 1.0);
    int claims = 0;
    for (const json& row : j["rows"]) {
        QCOMPARE(row["level"], json("mc_dropout"));
        if (row["kind"] == json("claim")) {
            ++claims;
            const bool held = figures["blob_confidence"].get<double>() >= 0.9;
            QCOMPARE(row["verdict"], json(held ? "pass" : "fail"));
        }
    }
    QCOMPARE(claims, 1);
}

// Ctrl-C between runs: exit 130, a report of the runs that finished, complete false.
void TestReproduce::cliInterruptWritesPartialReport() {
    QTemporaryDir dir;
    const QString report = dir.filePath(QStringLiteral("r.json"));
    const QString figure = dir.filePath(QStringLiteral("f.svg"));
    QProcess p;
    p.start(ensemble::test::cliPath(), {"reproduce", "deep-ensembles-uci/yacht", "--splits", "2000",
                                        "--report", report, "--figure", figure, "--no-record"});
    QVERIFY(p.waitForStarted());
    QString out;
    QElapsedTimer clock;
    clock.start();
    while (!out.contains(QStringLiteral("[2/2000]")) && clock.elapsed() < 60000 &&
           p.state() != QProcess::NotRunning) {
        p.waitForReadyRead(50);
        out += QString::fromUtf8(p.readAllStandardOutput());
    }
    QVERIFY2(out.contains(QStringLiteral("[2/2000]")), qPrintable(out));
    QCOMPARE(::kill(static_cast<pid_t>(p.processId()), SIGINT), 0);
    const ensemble::test::Run r = ensemble::test::finish(p);
    QVERIFY2(r.code == 130, qPrintable(describe(r)));
    QVERIFY2(r.err.contains(QStringLiteral("interrupted")), qPrintable(r.err));
    const json j = readJson(report);
    QCOMPARE(j["complete"], json(false));
    QVERIFY(j["runs"].size() >= 2 && j["runs"].size() < 2000);
    QCOMPARE(j["rows"][0]["ours"]["n"], json(j["runs"].size()));
    // The figure too: of the runs that finished, saying so.
    QFile svgFile(figure);
    QVERIFY(svgFile.open(QIODevice::ReadOnly));
    const ParsedSvg svg = parseSvg(svgFile.readAll().toStdString());
    QVERIFY2(svg.error.isEmpty(), qPrintable(svg.error));
    QVERIFY(svg.byId(QStringLiteral("ours-yacht-rmse")) != nullptr);
    bool incomplete = false;
    for (const SvgElement& e : svg.elements) {
        incomplete = incomplete || e.text.contains(QStringLiteral("incomplete"));
    }
    QVERIFY(incomplete);
}

// Table 1's panels: the paper's marker sits where the panel's ticks put the printed value, ours
// where they put our mean; a failed verdict is marked in red and says "fail".
void TestReproduce::figureDrawsTheUciTableWhereTheAxesSay() {
    const rp::Reproduction& r = row("deep-ensembles-uci");
    const rp::ReproductionResult result =
        handMadeResult(r, {"concrete", "naval"}, 3, [](const std::string& level, int i) {
            const bool concrete = level == "concrete";
            return std::map<std::string, double>{
                {"rmse", concrete ? 5.8 + 0.1 * i : 0.0004 + 0.0001 * i},
                {"nll", concrete ? 4.5 + 0.01 * i : -5.6 + 0.01 * i}};  // concrete's NLL fails
        });
    const std::string text = rp::figureSvg(result);
    const ParsedSvg svg = parseSvg(text);
    QVERIFY2(svg.error.isEmpty(), qPrintable(svg.error));
    QCOMPARE(svg.root, QStringLiteral("svg"));
    const SvgElement& root = svg.elements.front();
    QVERIFY(root.attr("width").toDouble() > 0 && root.attr("height").toDouble() > 0);
    QCOMPARE(root.attr("viewBox"),
             QStringLiteral("0 0 %1 %2").arg(root.attr("width"), root.attr("height")));
    QCOMPARE(svg.elements[1].name, QStringLiteral("title"));
    QVERIFY(svg.elements[1].text.contains(QStringLiteral("Table 1")));
    QVERIFY(text.find("href") == std::string::npos);  // nothing external

    struct Expect {
        const char* key;
        double paper;
        double ours;
    };
    for (const Expect& e : {Expect{"concrete-rmse", 6.03, 5.9}, Expect{"concrete-nll", 3.06, 4.51},
                            Expect{"naval-rmse", 0.0, 0.0005}, Expect{"naval-nll", -5.63, -5.59}}) {
        const QString key = QLatin1String(e.key);
        const AxisReading axis = yAxisOf(svg, QStringLiteral("panel-") + key);
        QVERIFY2(axis.pixels.size() >= 2 && axis.pixels.size() == axis.values.size(), e.key);
        const SvgElement* paper = svg.byId(QStringLiteral("paper-") + key);
        const SvgElement* ours = svg.byId(QStringLiteral("ours-") + key);
        QVERIFY2(paper != nullptr && ours != nullptr, e.key);
        const double paperValue = axis.value(paper->attr("cy").toDouble());
        QVERIFY2(std::abs(paperValue - e.paper) <= axis.tolerance(),
                 qPrintable(QStringLiteral("%1: %2").arg(key).arg(paperValue)));
        QVERIFY2(std::abs(axis.value(ours->attr("cy").toDouble()) - e.ours) <= axis.tolerance(),
                 e.key);
    }
    // Concrete's NLL (4.51 against 3.06 ± 0.18) fails: red, and said.
    QCOMPARE(svg.byId(QStringLiteral("ours-concrete-nll"))->attr("fill"),
             QStringLiteral("#c0392b"));
    QVERIFY(textsOf(svg, QStringLiteral("panel-concrete-nll"), "verdict")
                .front()
                .startsWith(QStringLiteral("fail")));
    QVERIFY(textsOf(svg, QStringLiteral("panel-concrete-rmse"), "verdict")
                .front()
                .startsWith(QStringLiteral("pass")));
    // The source of the published numbers, in the caption.
    bool sourced = false;
    for (const SvgElement& e : svg.elements) {
        sourced =
            sourced || (e.attr("class") == QLatin1String("caption") &&
                        e.text.contains(QStringLiteral("Lakshminarayanan et al. 2017, Table 1")));
    }
    QVERIFY(sourced);
}

// A band check's printed range as a band where the axis puts it, a claim's threshold and its
// verdict, a numeric check beside ours; a level named with & and < stays that text.
void TestReproduce::figureDrawsBandsClaimsAndEscapedText() {
    rp::Reproduction r;
    r.id = "hand-made";
    r.title = "Fish & <chips>: a \"test\" row";
    r.paper = "Nobody 2026";
    r.cite = "Nobody & co 2026";
    r.where = "Figure <2>";
    r.runner = rp::RunnerKind::MoonsOod;
    r.unit = "seed";
    r.levels = {"a & <b>", "plain"};
    r.counts = {2, 2};
    r.quickCounts = {1, 1};
    r.deviations = {"none & <all>"};
    rp::Check band;
    band.figure = "ratio";
    band.kind = rp::VerdictKind::Band;
    band.low = 1.0;
    band.high = 1.8;
    band.source = "Nobody 2026, Table <3> & text";
    rp::Check claim;
    claim.figure = "confidence";
    claim.kind = rp::VerdictKind::Claim;
    claim.claim = "stays above 0.9";
    claim.threshold = 0.9;
    claim.source = band.source;
    for (const std::string& level : r.levels) {
        band.level = claim.level = level;
        r.checks.push_back(band);
        r.checks.push_back(claim);
    }
    rp::ReproductionResult result;
    result.reproduction = &r;
    result.complete = true;
    for (int i = 0; i < 4; ++i) {
        rp::RunOutcome o;
        o.level = r.levels[static_cast<std::size_t>(i / 2)];
        o.index = i % 2;
        o.figures = {{"ratio", i < 2 ? 1.3 + 0.1 * i : 2.5}, {"confidence", i == 3 ? 0.8 : 0.95}};
        result.outcomes.push_back(o);
        rp::PlannedRun planned;
        planned.level = o.level;
        planned.index = o.index;
        result.plan.push_back(planned);
    }
    rp::judge(result);
    const ParsedSvg svg = parseSvg(rp::figureSvg(result));
    QVERIFY2(svg.error.isEmpty(), qPrintable(svg.error));
    QCOMPARE(svg.elements[1].text,
             QStringLiteral("Fish & <chips>: a \"test\" row (Nobody & co 2026, Figure <2>)"));
    QStringList texts;
    for (const SvgElement& e : svg.elements) {
        texts << e.text;
    }
    QVERIFY(texts.contains(QStringLiteral("a & <b>")));  // the tick label of the first level
    // The band: its rect's edges read back through the axis as the printed range.
    const AxisReading axis = yAxisOf(svg, QStringLiteral("panel-ratio"));
    QVERIFY(axis.pixels.size() >= 2 && axis.pixels.size() == axis.values.size());
    const SvgElement* rect = svg.byId(QStringLiteral("band-a____b_-ratio"));
    QVERIFY(rect != nullptr);
    const double top = rect->attr("y").toDouble();
    QVERIFY(std::abs(axis.value(top) - 1.8) <= axis.tolerance());
    QVERIFY(std::abs(axis.value(top + rect->attr("height").toDouble()) - 1.0) <=
            2.0 * axis.tolerance());
    QCOMPARE(textsOf(svg, QStringLiteral("panel-ratio"), "verdict"),
             (QStringList{QStringLiteral("pass"), QStringLiteral("fail")}));
    QCOMPARE(textsOf(svg, QStringLiteral("panel-confidence"), "verdict"),
             (QStringList{QStringLiteral("pass (2 of 2)"), QStringLiteral("fail (1 of 2)")}));
    bool sourced = false;
    for (const SvgElement& e : svg.elements) {
        sourced = sourced || e.text == QStringLiteral("Published: Nobody 2026, Table <3> & text.");
    }
    QVERIFY(sourced);
}

// A diverged run: NaN figures and NaN curve points are left out and said, never written.
void TestReproduce::figureLeavesOutNonFiniteValues() {
    const double nan = std::numeric_limits<double>::quiet_NaN();
    const rp::ReproductionResult uci =
        handMadeResult(row("deep-ensembles-uci"), {"wine"}, 2, [&](const std::string&, int i) {
            return std::map<std::string, double>{{"rmse", i == 0 ? nan : 0.6},
                                                 {"nll", std::numeric_limits<double>::infinity()}};
        });
    ParsedSvg svg = parseSvg(rp::figureSvg(uci));
    QVERIFY2(svg.error.isEmpty(), qPrintable(svg.error));
    QVERIFY(!hasNonFiniteText(svg));
    QVERIFY(svg.byId(QStringLiteral("paper-wine-rmse")) != nullptr);  // the paper's still drawn
    QVERIFY(svg.byId(QStringLiteral("ours-wine-rmse")) == nullptr);   // ours' mean is NaN
    QStringList notes;
    for (const SvgElement& e : svg.elements) {
        if (e.attr("class") == QLatin1String("caption") &&
            e.text.contains(QStringLiteral("not finite"))) {
            notes << e.text;
        }
    }
    QCOMPARE(notes.size(), 2);  // rmse 1 of 2, nll 2 of 2
    QVERIFY(notes.front().startsWith(QStringLiteral("wine rmse: 1 of 2")));

    // Figure 1: a run whose curves went NaN half way, and a NaN training point.
    const rp::Reproduction& fig1 = row("deep-ensembles-fig1");
    rp::ReproductionResult cubic =
        handMadeResult(fig1, {"nll-single"}, 1, [&](const std::string&, int) {
            return std::map<std::string, double>{{"sigma_inside", 2.0}, {"band_ratio", nan}};
        });
    std::vector<std::string>& curves = cubic.outcomes[0].csvLines["curves.csv"];
    for (int i = 0; i <= 240; ++i) {
        const double x = -6.0 + 0.05 * i;
        const std::string v = i > 120 ? "nan" : std::to_string(x * x * x);
        curves.push_back("nll-single,0," + std::to_string(x) + "," + v + ",1," + v + "," + v);
    }
    cubic.outcomes[0].csvLines["points.csv"] = {"nll-single,0,1,1", "nll-single,0,nan,2",
                                                "nll-single,0,2,-inf"};
    svg = parseSvg(rp::figureSvg(cubic));
    QVERIFY2(svg.error.isEmpty(), qPrintable(svg.error));
    QVERIFY(!hasNonFiniteText(svg));
    int points = 0;
    int polylines = 0;
    for (const SvgElement& e : svg.elements) {
        points += e.attr("class") == QLatin1String("train-point") ? 1 : 0;
        polylines += e.name == QLatin1String("polyline") ? 1 : 0;
    }
    QCOMPARE(points, 1);
    QCOMPARE(polylines, 2);  // our mean up to x = 0, and y = x^3
    QStringList notes2;
    for (const SvgElement& e : svg.elements) {
        if (e.text.contains(QStringLiteral("not finite"))) {
            notes2 << e.text;
        }
    }
    QVERIFY2(notes2.size() >= 3, qPrintable(notes2.join(QLatin1Char('\n'))));
}

// The same result gives the same bytes, under another LC_NUMERIC too (the app runs under the
// user's, where printf writes "0,5").
void TestReproduce::figureIsTheSameBytesAgain() {
    const auto figures = [](const std::string& level, int i) {
        const double base = level == "independent" ? 0.9 : 0.8;
        return std::map<std::string, double>{{"test_accuracy", base + 0.01 * i},
                                             {"blob_confidence", 0.95 + 0.01 * i},
                                             {"ood_auroc_mi", 0.125 * (i + 1)},
                                             {"ood_auroc_confidence", 0.1}};
    };
    const rp::ReproductionResult result = handMadeResult(row("two-moons-ood"), {}, 2, figures);
    const std::string first = rp::figureSvg(result);
    QCOMPARE(rp::figureSvg(result), first);
    const rp::ReproductionResult again = handMadeResult(row("two-moons-ood"), {}, 2, figures);
    QCOMPARE(rp::figureSvg(again), first);
    const std::string saved = std::setlocale(LC_NUMERIC, nullptr);
    for (const char* name : {"de_DE.UTF-8", "de_DE.utf8", "fr_FR.UTF-8"}) {
        if (std::setlocale(LC_NUMERIC, name) != nullptr) {
            const std::string there = rp::figureSvg(result);
            std::setlocale(LC_NUMERIC, saved.c_str());
            QCOMPARE(there, first);
            break;
        }
    }
    std::setlocale(LC_NUMERIC, saved.c_str());
    const ParsedSvg svg = parseSvg(first);
    QVERIFY2(svg.error.isEmpty(), qPrintable(svg.error));
    for (const char* panel :
         {"panel-test_accuracy", "panel-blob_confidence", "panel-ood_auroc_mi"}) {
        QVERIFY2(yAxisOf(svg, QLatin1String(panel)).pixels.size() >= 2, panel);
    }
    QVERIFY(svg.byId(QStringLiteral("ours-mc_dropout-ood_auroc_mi")) != nullptr);
}

// No run finished: the paper's numbers and "not run", as text rows, not an empty page.
void TestReproduce::figureWithNothingToPlotIsTheTable() {
    const rp::Reproduction& fig1 = row("deep-ensembles-fig1");
    rp::ReproductionResult result;
    result.reproduction = &fig1;
    result.plan = rp::planRuns(fig1, {});
    rp::judge(result);
    const ParsedSvg svg = parseSvg(rp::figureSvg(result));
    QVERIFY2(svg.error.isEmpty(), qPrintable(svg.error));
    QStringList texts;
    for (const SvgElement& e : svg.elements) {
        texts << e.text;
    }
    const QString all = texts.join(QLatin1Char('\n'));
    QVERIFY2(all.contains(QStringLiteral("Nothing to plot (no run finished)")), qPrintable(all));
    QVERIFY(texts.contains(QStringLiteral("≥ 2")));  // the claim's threshold, as a row
    QCOMPARE(texts.count(QStringLiteral("not run")), int(fig1.checks.size()) * 2);
    QVERIFY(all.contains(QStringLiteral("Published: Lakshminarayanan et al. 2017, Figure 1")));
}

// `reproduce --figure` on Figure 1: the four panels, the training points, the claim's verdict;
// the run entry names the file.
void TestReproduce::cliWritesFigureOneAndRecordsIt() {
    QTemporaryDir dir;
    const QString figure = dir.filePath(QStringLiteral("fig1.svg"));
    const QString store = dir.filePath(QStringLiteral("runs.sqlite"));
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.insert(QStringLiteral("ENSEMBLE_RUNS_DB"), store);
    ensemble::test::Run r = ensemble::test::runCli(
        {"reproduce", "deep-ensembles-fig1", "--seeds", "1", "--quick", "--figure", figure}, env);
    ENSEMBLE_VERIFY_RUN_OK(r);
    QFile file(figure);
    QVERIFY(file.open(QIODevice::ReadOnly));
    const ParsedSvg svg = parseSvg(file.readAll().toStdString());
    QVERIFY2(svg.error.isEmpty(), qPrintable(svg.error));
    QVERIFY(!hasNonFiniteText(svg));
    const rp::Reproduction& fig1 = row("deep-ensembles-fig1");
    int points = 0;
    for (const std::string& level : fig1.levels) {
        const QString panel = QStringLiteral("panel-") + QString::fromStdString(level);
        QVERIFY2(svg.byId(panel) != nullptr, qPrintable(panel));
        int polylines = 0;
        for (const SvgElement& e : svg.elements) {
            polylines += e.group == panel && e.name == QLatin1String("polyline") ? 1 : 0;
            points += e.group == panel && e.attr("class") == QLatin1String("train-point") ? 1 : 0;
        }
        QVERIFY2(polylines == 2, qPrintable(panel));  // our mean and y = x^3
    }
    QCOMPARE(points, 4 * 20);  // each panel's 20 training points
    const QStringList verdicts =
        textsOf(svg, QStringLiteral("panel-nll-adversarial-ensemble"), "verdict");
    QCOMPARE(verdicts.size(), 1);
    QVERIFY(verdicts.front().startsWith(QStringLiteral("paper ≥ 2: ")));
    r = ensemble::test::runCli({"runs", "list", "--format", "json", "--store", store});
    ENSEMBLE_VERIFY_RUN_OK(r);
    const json entries = json::parse(r.out.toStdString());
    QCOMPARE(entries.size(), std::size_t{1});
    bool recorded = false;
    for (const json& f : entries[0]["files"]) {
        recorded =
            recorded || (f["role"] == json("figure") &&
                         f["path"] == json(QFileInfo(figure).absoluteFilePath().toStdString()));
    }
    QVERIFY2(recorded, entries[0]["files"].dump().c_str());
}

QTEST_GUILESS_MAIN(TestReproduce)
#include "tst_reproduce.moc"
