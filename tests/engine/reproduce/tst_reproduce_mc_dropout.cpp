// MC dropout beside the UCI table (reproduce/uci_mc_dropout.h): Gal & Ghahramani 2016's
// column as the registry holds it (the test log-likelihood judged as the NLL, its sign
// flipped by hand here), the `mc-dropout-uci` row's plan (mc_dropout at each set's rate on
// deep-ensembles-uci's very splits), each table's published column beside the other's in the
// report, the CSV, the text table and the figure, and the row end to end on yacht.
#include <QtTest/QtTest>

#include <algorithm>
#include <cmath>
#include <iterator>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "reproduce/figure.h"
#include "reproduce/reproduce.h"
#include "reproduce/uci_mc_dropout.h"
#include "support/json_files.h"
#include "support/test_support.h"

using ensemble::test::readJson;
using nlohmann::json;
namespace rp = ensemble::reproduce;

namespace {

const rp::Reproduction& row(const char* id) {
    const rp::Reproduction* r = rp::findReproduction(id);
    if (r == nullptr) {
        throw std::logic_error(std::string("no reproduction ") + id);
    }
    return *r;
}

const rp::Check& checkOf(const rp::Reproduction& r, const std::string& level,
                         const std::string& figure) {
    for (const rp::Check& c : r.checks) {
        if (c.level == level && c.figure == figure) {
            return c;
        }
    }
    throw std::logic_error("no check " + level + " " + figure + " in " + r.id);
}

// A judged result of `r` on `levels`, two runs a level, every run's rmse and nll given.
rp::ReproductionResult handMade(const rp::Reproduction& r, const std::vector<std::string>& levels,
                                double rmse, double nll) {
    rp::ReproductionResult result;
    result.reproduction = &r;
    result.options.levels = levels;
    result.options.count = 2;
    result.plan = rp::planRuns(r, result.options);
    for (const rp::PlannedRun& p : result.plan) {
        rp::RunOutcome o;
        o.level = p.level;
        o.index = p.index;
        o.figures = {{"rmse", rmse + 0.01 * p.index}, {"nll", nll + 0.01 * p.index}};
        result.outcomes.push_back(o);
    }
    result.complete = true;
    rp::judge(result);
    return result;
}

}  // namespace

class TestReproduceMcDropout : public QObject {
    Q_OBJECT

  private Q_SLOTS:
    void negatedPrintedFlipsTheSignOnly();
    void galColumnAsPrintedAndConverted();
    void rowFollowsTheEnsembleRowsSplits();
    void eachTableBesideTheOther();
    void reportTableCsvAndFigureShowTheColumn();
    void cliRunsYachtUnderMcDropout();
};

void TestReproduceMcDropout::negatedPrintedFlipsTheSignOnly() {
    QCOMPARE(rp::negatedPrinted("-3.04"), std::string("3.04"));
    QCOMPARE(rp::negatedPrinted("0.95"), std::string("-0.95"));
    QCOMPARE(rp::negatedPrinted("0.00"), std::string("0.00"));  // no "-0.00"
    // The digits stay, so the judged spread floor (half the last digit) does too.
    QCOMPARE(rp::halfLastDigit(rp::negatedPrinted("-2.89")), rp::halfLastDigit("-2.89"));
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, rp::negatedPrinted("-"));
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, rp::negatedPrinted("+1.5"));
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, rp::negatedPrinted(""));
}

// The column as Gal & Ghahramani print it, and as the row judges it: RMSE as printed, NLL the
// negated test log-likelihood with the same standard error.
void TestReproduceMcDropout::galColumnAsPrintedAndConverted() {
    const rp::Reproduction& r = row("mc-dropout-uci");
    QCOMPARE(r.cite, std::string("Gal & Ghahramani 2016"));
    QCOMPARE(r.where, std::string("Table 1"));
    QCOMPARE(r.checks.size(), std::size_t{16});
    for (const rp::Check& c : r.checks) {
        QCOMPARE(c.kind, rp::VerdictKind::Numeric);
        QVERIFY(c.source.find("Gal & Ghahramani 2016, Table 1") != std::string::npos);
    }
    // Hand-copied from the table: (set, RMSE, se, test LL, se) -> the NLL judged.
    struct Expected {
        const char* set;
        const char* rmse;
        const char* rmseSe;
        const char* nll;
        const char* nllSe;
        const char* printedAs;
    };
    const Expected expected[] = {
        {"concrete", "5.23", "0.12", "3.04", "0.02", "test log-likelihood -3.04 ± 0.02"},
        {"energy", "1.66", "0.04", "1.99", "0.02", "test log-likelihood -1.99 ± 0.02"},
        {"kin8nm", "0.10", "0.00", "-0.95", "0.01", "test log-likelihood 0.95 ± 0.01"},
        {"naval", "0.01", "0.00", "-3.80", "0.01", "test log-likelihood 3.80 ± 0.01"},
        {"power", "4.02", "0.04", "2.80", "0.01", "test log-likelihood -2.80 ± 0.01"},
        {"protein", "4.36", "0.01", "2.89", "0.00", "test log-likelihood -2.89 ± 0.00"},
        {"wine", "0.62", "0.01", "0.93", "0.01", "test log-likelihood -0.93 ± 0.01"},
        {"yacht", "1.11", "0.09", "1.55", "0.03", "test log-likelihood -1.55 ± 0.03"},
    };
    for (const Expected& e : expected) {
        const rp::Check& rmse = checkOf(r, e.set, "rmse");
        QCOMPARE(rmse.printedValue, std::string(e.rmse));
        QCOMPARE(rmse.printedSpread, std::string(e.rmseSe));
        QVERIFY(rmse.printedAs.empty());
        const rp::Check& nll = checkOf(r, e.set, "nll");
        QCOMPARE(nll.printedValue, std::string(e.nll));
        QCOMPARE(nll.printedSpread, std::string(e.nllSe));
        QCOMPARE(nll.printedAs, std::string(e.printedAs));
    }
    // Judged on the NLL's side: ours at Gal's NLL passes, ours at Gal's log-likelihood fails
    // (concrete: 3.04 against -3.04, 6.08 apart against a limit of 2 x 0.02).
    const rp::ReproductionResult same = handMade(r, {"concrete"}, 5.23, 3.035);
    const rp::ReproductionResult flipped = handMade(r, {"concrete"}, 5.23, -3.045);
    QCOMPARE(same.rows[1].judgement.verdict, rp::Verdict::Pass);
    QCOMPARE(flipped.rows[1].judgement.verdict, rp::Verdict::Fail);
    QCOMPARE(same.rows[1].judgement.paper, 3.04);
    // protein's "± 0.00" is judged as half its last digit.
    QCOMPARE(handMade(r, {"protein"}, 4.36, 2.89).rows[1].judgement.paperSe, 0.005);
}

// The row plans deep-ensembles-uci's runs under mc_dropout: the same data, splits, network,
// optimiser and budget; one network, K masks, the set's rate, no adversarial training.
void TestReproduceMcDropout::rowFollowsTheEnsembleRowsSplits() {
    const rp::Reproduction& mc = row("mc-dropout-uci");
    const rp::Reproduction& de = row("deep-ensembles-uci");
    QCOMPARE(mc.levels, de.levels);
    QCOMPARE(mc.counts, de.counts);
    QCOMPARE(mc.quickCounts, de.quickCounts);
    QCOMPARE(mc.runner, de.runner);
    // Listed right after the ensemble's row.
    const auto& all = rp::reproductions();
    const auto at = std::find_if(
        all.begin(), all.end(), [](const rp::Reproduction& r) { return r.id == "mc-dropout-uci"; });
    QVERIFY(at != all.begin() && std::prev(at)->id == "deep-ensembles-uci");

    rp::ReproduceOptions options;
    options.count = 2;
    options.levels = {"yacht", "protein"};
    const std::vector<rp::PlannedRun> ours = rp::planRuns(mc, options);
    const std::vector<rp::PlannedRun> theirs = rp::planRuns(de, options);
    QCOMPARE(ours.size(), std::size_t{4});
    QCOMPARE(ours.size(), theirs.size());
    for (std::size_t i = 0; i < ours.size(); ++i) {
        const json& c = ours[i].config;
        const json& d = theirs[i].config;
        QCOMPARE(ours[i].level, theirs[i].level);
        QCOMPARE(ours[i].index, theirs[i].index);
        QCOMPARE(c["dataset"], d["dataset"]);  // the same set, split seed and test fraction
        QCOMPARE(c["ensemble"]["seed"], d["ensemble"]["seed"]);
        QCOMPARE(c["model"]["hidden"], d["model"]["hidden"]);
        QCOMPARE(c["model"]["likelihood"], json("gaussian"));
        QCOMPARE(c["optimizer"], d["optimizer"]);
        QCOMPARE(c["training"]["epochs"], d["training"]["epochs"]);
        QCOMPARE(c["training"]["batch_size"], d["training"]["batch_size"]);
        QCOMPARE(c["backend"]["kind"], json("cpu"));
        QCOMPARE(c["ensemble"]["method"], json("mc_dropout"));
        QCOMPARE(c["ensemble"]["bootstrap"], json("none"));
        QCOMPARE(c["ensemble"]["members"].get<int>(), rp::kMcDropoutUciMasks);
        QCOMPARE(c["training"]["adversarial_eps"].get<double>(), 0.0);
        QCOMPARE(d["ensemble"]["method"], json("independent"));
        const auto line =
            std::find_if(rp::galUciTable1().begin(), rp::galUciTable1().end(),
                         [&](const rp::GalUciLine& l) { return ours[i].level == l.set; });
        QVERIFY(line != rp::galUciTable1().end());
        QCOMPARE(c["model"]["dropout"].get<double>(), line->dropout);
    }
    // Gal's grid: every set's rate is one of 0.005, 0.01, 0.05, 0.1.
    for (const rp::GalUciLine& l : rp::galUciTable1()) {
        QVERIFY2(l.dropout == 0.005 || l.dropout == 0.01 || l.dropout == 0.05 || l.dropout == 0.1,
                 l.set);
    }
    // --set still wins over the row's rate.
    options.overrides = {"model.dropout=0.2"};
    QCOMPARE(rp::planRuns(mc, options)[0].config["model"]["dropout"].get<double>(), 0.2);
}

void TestReproduceMcDropout::eachTableBesideTheOther() {
    const rp::Reproduction& de = row("deep-ensembles-uci");
    const rp::Reproduction& mc = row("mc-dropout-uci");
    for (const rp::Check& c : de.checks) {
        QCOMPARE(c.beside.size(), std::size_t{1});
        const rp::Published& b = c.beside.front();
        QCOMPARE(b.label, std::string("MC dropout"));
        const rp::Check& gal = checkOf(mc, c.level, c.figure);
        QCOMPARE(b.printedValue, gal.printedValue);
        QCOMPARE(b.printedSpread, gal.printedSpread);
        QCOMPARE(b.printedAs, gal.printedAs);
        QCOMPARE(b.source, gal.source);
    }
    const rp::Published& concreteNll = checkOf(de, "concrete", "nll").beside.front();
    QCOMPARE(concreteNll.printedValue, std::string("3.04"));
    QCOMPARE(concreteNll.printedAs, std::string("test log-likelihood -3.04 ± 0.02"));
    for (const rp::Check& c : mc.checks) {
        QCOMPARE(c.beside.size(), std::size_t{1});
        QCOMPARE(c.beside.front().label, std::string("Deep Ensembles"));
        QCOMPARE(c.beside.front().printedValue, checkOf(de, c.level, c.figure).printedValue);
    }
    QCOMPARE(checkOf(mc, "naval", "nll").beside.front().printedValue, std::string("-5.63"));
    // The other rows have no column beside theirs (gal-2017-active's is Kirsch et al.'s
    // BatchBALD figures as context: tst_reproduce_active).
    for (const rp::Reproduction& r : rp::reproductions()) {
        if (r.id != de.id && r.id != mc.id && r.id != "gal-2017-active") {
            for (const rp::Check& c : r.checks) {
                QVERIFY2(c.beside.empty(), r.id.c_str());
            }
        }
    }
}

void TestReproduceMcDropout::reportTableCsvAndFigureShowTheColumn() {
    const rp::ReproductionResult result =
        handMade(row("deep-ensembles-uci"), {"concrete", "naval"}, 5.5, 3.1);
    const json report = rp::reportJson(result);
    QCOMPARE(report["rows"].size(), std::size_t{4});
    const json& rmse = report["rows"][0];
    QCOMPARE(rmse["level"], json("concrete"));
    QCOMPARE(rmse["paper"]["printed"], json("6.03 ± 0.58"));  // the paper's own, unchanged
    QVERIFY(!rmse["paper"].contains("printed_as"));
    QCOMPARE(rmse["beside"].size(), std::size_t{1});
    QCOMPARE(rmse["beside"][0]["label"], json("MC dropout"));
    QCOMPARE(rmse["beside"][0]["printed"], json("5.23 ± 0.12"));
    QCOMPARE(rmse["beside"][0]["value"].get<double>(), 5.23);
    QCOMPARE(rmse["beside"][0]["spread"].get<double>(), 0.12);
    const json& nll = report["rows"][1];
    QCOMPARE(nll["beside"][0]["value"].get<double>(), 3.04);  // the negated -3.04
    QCOMPARE(nll["beside"][0]["printed_as"], json("test log-likelihood -3.04 ± 0.02"));
    QCOMPARE(report["rows"][2]["beside"][0]["spread"].get<double>(), 0.005);  // naval's 0.00

    const std::string table = rp::resultTable(result);
    QVERIFY2(table.find("MC dropout") != std::string::npos, table.c_str());
    QVERIFY2(table.find("6.03 ± 0.58    5.23 ± 0.12") != std::string::npos, table.c_str());
    QVERIFY2(table.find("3.04 ± 0.02") != std::string::npos, table.c_str());
    const std::string csv = rp::resultCsvs(result).at("table.csv");
    QVERIFY2(csv.rfind("level,figure,kind,n,ours_mean,ours_se,paper,verdict,beside\n", 0) == 0,
             csv.c_str());
    QVERIFY2(csv.find(",\"5.23 ± 0.12\"\n") != std::string::npos, csv.c_str());
    const std::string svg = rp::figureSvg(result);
    QVERIFY(svg.find("beside-MC_dropout-concrete-rmse") != std::string::npos);
    QVERIFY(svg.find("MC dropout: Gal &amp; Ghahramani 2016, Table 1") != std::string::npos);

    // A row without another column keeps its table and CSV as they were.
    rp::ReproductionResult fig1;
    fig1.reproduction = &row("whitney-2021");
    fig1.options.count = 1;
    fig1.plan = rp::planRuns(*fig1.reproduction, fig1.options);
    rp::judge(fig1);
    QVERIFY(rp::resultCsvs(fig1)
                .at("table.csv")
                .rfind("level,figure,kind,n,ours_mean,ours_se,paper,verdict\n", 0) == 0);
    QVERIFY(rp::resultTable(fig1).find("MC dropout") == std::string::npos);
}

// The row end to end: yacht's two quick splits under mc_dropout, judged against Gal's
// column, Deep Ensembles' beside it.
void TestReproduceMcDropout::cliRunsYachtUnderMcDropout() {
    QTemporaryDir dir;
    const QString report = dir.filePath(QStringLiteral("r.json"));
    const ensemble::test::Run r = ensemble::test::runCli(
        {"reproduce", "mc-dropout-uci/yacht", "--splits", "2", "--report", report, "--no-record"});
    ENSEMBLE_VERIFY_RUN_OK(r);
    QVERIFY2(r.out.contains(QStringLiteral("1.11 ± 0.09")), qPrintable(r.out));
    QVERIFY2(r.out.contains(QStringLiteral("1.58 ± 0.48")), qPrintable(r.out));  // beside
    const json j = readJson(report);
    QCOMPARE(j["id"], json("mc-dropout-uci"));
    QCOMPARE(j["rows"].size(), std::size_t{2});
    QCOMPARE(j["rows"][1]["paper"]["printed"], json("1.55 ± 0.03"));
    QCOMPARE(j["rows"][1]["paper"]["printed_as"], json("test log-likelihood -1.55 ± 0.03"));
    QCOMPARE(j["rows"][1]["beside"][0]["label"], json("Deep Ensembles"));
    for (const json& run : j["runs"]) {
        QVERIFY(std::isfinite(run["figures"]["rmse"].get<double>()));
        QVERIFY(std::isfinite(run["figures"]["nll"].get<double>()));
    }
}

QTEST_APPLESS_MAIN(TestReproduceMcDropout)
#include "tst_reproduce_mc_dropout.moc"
