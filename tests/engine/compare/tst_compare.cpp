// The methods' comparison (compare/compare.h): the report's keys and ranges, the
// parameter count against the architecture's widths, the numbers against what `train
// --metrics`, `eval --ood` and the shift report give for the same config, the method list and
// its errors, cancelling between methods, and `ensemble-cli compare` end to end (report, CSV,
// Ctrl-C). The methods come from the registry, so the suite covers each method added there.
#include <QtTest/QtTest>

#include <signal.h>

#include <atomic>
#include <cmath>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "compare/compare.h"
#include "compare/peak_memory.h"
#include "config/config.h"
#include "config/config_schema.h"
#include "core/errors.h"
#include "data/dataset.h"
#include "io/model_io.h"
#include "registry/registry.h"
#include "shift/shift_report.h"
#include "support/json_files.h"
#include "support/test_support.h"
#include "train/trainer.h"
#include "train/trainer_report.h"

using namespace ensemble;
using ensemble::test::readJson;
using ensemble::test::writeJson;
using nlohmann::json;

namespace {

// A small 2-D experiment: spirals, K = 3, an MLP 2-8-8-2 on one thread, 60 steps.
constexpr int kMembers = 3;
const std::vector<int> kHidden = {8, 8};

json compareConfig() {
    json c = defaultConfigJson();
    c["dataset"]["kind"] = "spirals";
    c["dataset"]["n"] = 200;
    c["model"]["hidden"] = kHidden;
    c["ensemble"]["members"] = kMembers;
    c["ensemble"]["seed"] = 11;
    c["training"]["steps"] = 60;
    c["training"]["batch_size"] = 32;
    c["training"]["eval_every"] = 20;
    c["backend"] = {{"kind", "cpu"}, {"threads", 1}};
    return c;
}

// Fast options: the prediction timing needs 1,000 rows, not a fifth of a second.
CompareOptions fastOptions() {
    CompareOptions o;
    o.predictSeconds = 0.0;
    return o;
}

const std::set<std::string>& reportKeys() {
    static const std::set<std::string> keys = {
        "accuracy",     "nll",           "brier",
        "ece",          "ood_auroc",     "shift_nll",
        "parameters",   "train_seconds", "predict_seconds_per_1000",
        "peak_rss_mib", "ood_mean_mi",   "diverged_members"};
    return keys;
}

QStringList readLines(const QString& path) {
    QFile f(path);
    if (!f.open(QIODevice::ReadOnly)) {
        return {};
    }
    return QString::fromUtf8(f.readAll()).split(QLatin1Char('\n'), Qt::SkipEmptyParts);
}

// The trainer of `config` run to its end, as `ensemble-cli train` runs it.
std::unique_ptr<Trainer> trained(const ExperimentConfig& config) {
    std::unique_ptr<Trainer> t = makeTrainer(config, nullptr);
    t->run({}, {});
    return t;
}

}  // namespace

class TestCompare : public QObject {
    Q_OBJECT

  private slots:
    void methodListComesFromTheRegistry();
    void unknownMethodIsAUsageError();
    void methodConfigSetsOnlyTheMethod();
    void reportHasExactlyTheKeysInRange();
    void independentEqualsTrainMetrics();
    void oodAndShiftEqualEvalAndShiftReport();
    void everyRegistryMethodRuns();
    void divergedMethodIsReportedAndTheOthersGoOn();
    void gridsShareOneBox();
    void cancelKeepsFinishedMethods();
    void refusesRegressionAndShiftsThatDoNotApply();
    void peakMemorySeesAnAllocation();
    void cliEndToEnd();
    void cliUnknownMethodExits2();
    void cliInterruptKeepsWhatIsDone();
};

void TestCompare::methodListComesFromTheRegistry() {
    const std::vector<EnsembleMethod> all = allEnsembleMethods();
    QCOMPARE(all.size(), std::size(EnumNames<EnsembleMethod>::table));
    std::string text;
    for (std::size_t i = 0; i < all.size(); ++i) {
        QVERIFY(all[i] == EnumNames<EnsembleMethod>::table[i].value);
        text += (i == 0 ? "" : ",") + std::string(toString(all[i]));
    }
    QVERIFY(parseMethodList(text) == all);
}

void TestCompare::unknownMethodIsAUsageError() {
    try {
        parseMethodList("independent,deep_gp");
        QFAIL("an unknown method was accepted");
    } catch (const ConfigError& e) {
        const std::string what = e.what();
        QVERIFY2(what.find("--methods") != std::string::npos, e.what());
        QVERIFY2(what.find("'deep_gp'") != std::string::npos, e.what());
        for (EnsembleMethod m : allEnsembleMethods()) {
            QVERIFY2(what.find(toString(m)) != std::string::npos, e.what());
        }
    }
    QVERIFY_THROWS_EXCEPTION(ConfigError, parseMethodList("independent,independent"));
    QVERIFY_THROWS_EXCEPTION(ConfigError, parseMethodList(""));
    QVERIFY_THROWS_EXCEPTION(ConfigError, parseMethodList("independent,"));
    QVERIFY_THROWS_EXCEPTION(ConfigError, compareMethods(parseConfig(compareConfig()), {}));
}

void TestCompare::methodConfigSetsOnlyTheMethod() {
    const ExperimentConfig base = parseConfig(compareConfig());
    for (EnsembleMethod m : allEnsembleMethods()) {
        const ExperimentConfig c = methodConfig(base, m);
        QVERIFY(c.ensemble.method == m);
        QCOMPARE(c.json["ensemble"]["method"], json(toString(m)));
        // The same data, K, steps and seed as the base: only the method and its own keys move.
        QCOMPARE(c.json["dataset"], base.json["dataset"]);
        QCOMPARE(c.ensemble.members, base.ensemble.members);
        QCOMPARE(c.ensemble.seed, base.ensemble.seed);
        QCOMPARE(c.training.steps, base.training.steps);
        for (const std::string& key : changedKeys(base.json, c.json)) {
            const KeySpec& spec = keySpec(key);
            QVERIFY2(key == "ensemble.method" || !keyApplies(spec, base.json), key.c_str());
        }
    }
}

void TestCompare::reportHasExactlyTheKeysInRange() {
    const ExperimentConfig base = parseConfig(compareConfig());
    const CompareResult r = compareMethods(base, {EnsembleMethod::Independent}, fastOptions());
    QVERIFY(r.complete);
    QCOMPARE(r.methods.size(), std::size_t{1});
    const json j = compareReportJson(r);
    QCOMPARE(j["config"], base.json);
    QCOMPARE(j["methods"].size(), std::size_t{1});
    const json& m = j["methods"]["independent"];
    std::set<std::string> keys;
    for (const auto& [key, value] : m.items()) {
        keys.insert(key);
    }
    QCOMPARE(keys, reportKeys());
    const double accuracy = m["accuracy"].get<double>();
    QVERIFY(accuracy >= 0.0 && accuracy <= 1.0);
    const double ece = m["ece"].get<double>();
    QVERIFY(ece >= 0.0 && ece <= 1.0);
    QVERIFY(m["nll"].get<double>() >= 0.0);
    const double brier = m["brier"].get<double>();
    QVERIFY(brier >= 0.0 && brier <= 2.0);
    const double auroc = m["ood_auroc"].get<double>();
    QVERIFY(auroc >= 0.0 && auroc <= 1.0);
    QVERIFY(m["shift_nll"].get<double>() >= 0.0);
    QVERIFY(m["train_seconds"].get<double>() > 0.0);
    QVERIFY(m["predict_seconds_per_1000"].get<double>() > 0.0);
    QVERIFY(m["peak_rss_mib"].get<double>() > 0.0);
    // K networks 2-8-8-2: per layer in x out weights and out biases, from the widths alone.
    std::vector<int> widths = {2};
    widths.insert(widths.end(), kHidden.begin(), kHidden.end());
    widths.push_back(2);
    int64_t perNetwork = 0;
    for (std::size_t l = 0; l + 1 < widths.size(); ++l) {
        perNetwork += int64_t{widths[l]} * widths[l + 1] + widths[l + 1];
    }
    QCOMPARE(perNetwork, int64_t{2 * 8 + 8 + 8 * 8 + 8 + 8 * 2 + 2});
    QCOMPARE(m["parameters"].get<int64_t>(), kMembers * perNetwork);
    // The stated shift and OOD set.
    QCOMPARE(j["shift"]["kind"], json("noise"));
    QCOMPARE(j["shift"]["level"], json(0.3));
    QCOMPARE(j["ood"]["set"], json("ring"));
    QCOMPARE(j["split"], json("test"));
    QCOMPARE(j["complete"], json(true));
    const QStringList csv =
        QString::fromStdString(compareCsv(r)).split(QLatin1Char('\n'), Qt::SkipEmptyParts);
    QCOMPARE(csv.size(), 2);
    QCOMPARE(csv[0], QStringLiteral("method,accuracy,nll,brier,ece,ood_auroc,shift_nll,parameters,"
                                    "train_seconds,predict_seconds_per_1000,peak_rss_mib,"
                                    "ood_mean_mi"));
    QVERIFY(csv[1].startsWith(QStringLiteral("independent,")));
}

void TestCompare::independentEqualsTrainMetrics() {
    // The comparison's row of `independent` and the "ensemble" of the report `train --metrics`
    // writes (trainerReport) for the same config: the same training, the same summation, so
    // the same doubles.
    const ExperimentConfig base = parseConfig(compareConfig());
    const CompareResult r = compareMethods(base, {EnsembleMethod::Independent}, fastOptions());
    std::unique_ptr<Trainer> t = trained(methodConfig(base, EnsembleMethod::Independent));
    const json report = trainerReport(*t).json;
    const MethodComparison& m = r.methods.at(0);
    QCOMPARE(m.accuracy, report["ensemble"]["accuracy"].get<double>());
    QCOMPARE(m.nll, report["ensemble"]["nll"].get<double>());
    QCOMPARE(m.brier, report["ensemble"]["brier"].get<double>());
    QCOMPARE(m.ece, report["ensemble"]["ece"].get<double>());
    QCOMPARE(r.steps, t->step());
    QCOMPARE(m.parameters, static_cast<int64_t>(t->layout().size()));
}

void TestCompare::oodAndShiftEqualEvalAndShiftReport() {
    // ood_auroc and shift_nll against the shift report of the same trained ensemble loaded as
    // an export (its own prediction path, the CPU one of `eval` and `shift`), at the same level.
    const ExperimentConfig base = parseConfig(compareConfig());
    CompareOptions options = fastOptions();
    options.shiftLevel = 0.5;
    const CompareResult r = compareMethods(base, {EnsembleMethod::Independent}, options);
    std::unique_ptr<Trainer> t = trained(methodConfig(base, EnsembleMethod::Independent));
    const LoadedEnsemble loaded = importEnsemble(exportFile(*t));
    ShiftOptions so;
    so.kind = ShiftKind::Noise;
    so.levels = {0.5};
    so.seed = base.ensemble.seed;
    so.threads = 1;
    const ShiftReport shift = computeShiftReport(loaded, t->data(), so);
    QVERIFY(shift.ood.has_value());
    QCOMPARE(QString::fromStdString(shift.oodName), QString::fromStdString(r.oodName));
    const MethodComparison& m = r.methods.at(0);
    // Two prediction paths of the same weights (the trainer's backend, the export's CPU
    // predictor): float log-probabilities that may differ in the last bits.
    ENSEMBLE_COMPARE_NEAR_SCALED(m.shiftNll, shift.levels.at(0).ensemble.nll,
                                 ensemble::test::kFloatRounding);
    ENSEMBLE_COMPARE_NEAR(m.oodAuroc, shift.ood->mutualInformation.auroc, 1.0 / 200.0);
    QVERIFY(std::isfinite(m.shiftNll));
}

void TestCompare::everyRegistryMethodRuns() {
    // Each method of the registry compares on the same config with no change here.
    const ExperimentConfig base = parseConfig(compareConfig());
    const std::vector<EnsembleMethod> all = allEnsembleMethods();
    std::vector<CompareProgress> seen;
    const CompareResult r = compareMethods(base, all, fastOptions(),
                                           [&](const CompareProgress& p) { seen.push_back(p); });
    QVERIFY(r.complete);
    QCOMPARE(r.methods.size(), all.size());
    const json j = compareReportJson(r);
    for (std::size_t i = 0; i < all.size(); ++i) {
        QVERIFY(r.methods[i].method == all[i]);
        QVERIFY(j["methods"].contains(toString(all[i])));
        QVERIFY(r.methods[i].parameters > 0);
        QVERIFY(std::isfinite(r.methods[i].nll));
        // Each method reported its start and its measuring, in order.
        bool started = false;
        bool measured = false;
        for (const CompareProgress& p : seen) {
            if (p.method != static_cast<int>(i)) {
                continue;
            }
            QCOMPARE(p.methods, static_cast<int>(all.size()));
            QVERIFY(p.value == all[i]);
            started = started || (p.phase == ComparePhase::Training && p.step == 0);
            measured = measured || (p.phase == ComparePhase::Measuring && p.step == r.steps);
        }
        QVERIFY(started && measured);
    }
}

void TestCompare::divergedMethodIsReportedAndTheOthersGoOn() {
    // No member left in the ensemble (here all switched off; all diverged is the same case):
    // every metric is not measured (null in the report) and the next method still runs.
    json c = compareConfig();
    c["ensemble"]["switched_off"] = json::array({0, 1, 2});
    const CompareResult r = compareMethods(
        parseConfig(c), {EnsembleMethod::Independent, EnsembleMethod::Snapshot}, fastOptions());
    QVERIFY(r.complete);
    QCOMPARE(r.methods.size(), std::size_t{2});
    for (const MethodComparison& m : r.methods) {
        QVERIFY(std::isnan(m.nll) && std::isnan(m.accuracy) && std::isnan(m.oodAuroc));
        QVERIFY(m.parameters > 0);
        QCOMPARE(m.divergedMembers, 0);
    }
    QVERIFY(compareReportJson(r)["methods"]["independent"]["nll"].is_null());
    // A learning rate some members do not survive: they are counted, the rest measured.
    json wild = compareConfig();
    wild["optimizer"] = {{"kind", "sgd"}, {"lr", 10000.0}};
    const CompareResult w =
        compareMethods(parseConfig(wild), {EnsembleMethod::Independent}, fastOptions());
    const MethodComparison& m = w.methods.front();
    QVERIFY2(m.divergedMembers >= 1 && m.divergedMembers < kMembers,
             qPrintable(QString::number(m.divergedMembers)));
    QVERIFY(std::isfinite(m.nll));
    QCOMPARE(compareReportJson(w)["methods"]["independent"]["diverged_members"].get<int>(),
             m.divergedMembers);
}

void TestCompare::gridsShareOneBox() {
    // The Methods view's maps: every method on the same box, the ensemble the metrics measure,
    // equal to the trainer's own grid of that box.
    const ExperimentConfig base = parseConfig(compareConfig());
    CompareOptions options = fastOptions();
    options.gridSize = 16;
    options.gridMargin = 0.5;
    const CompareResult r = compareMethods(base, allEnsembleMethods(), options);
    const GridBounds box = gridBounds(loadDataSplit(base.dataset), 0.5);
    for (const MethodComparison& m : r.methods) {
        QVERIFY(m.grid.has_value());
        QCOMPARE(m.grid->size, 16);
        QCOMPARE(m.grid->bounds.xMin, box.xMin);
        QCOMPARE(m.grid->bounds.yMax, box.yMax);
        QCOMPARE(m.grid->ensemble.rows, int64_t{16 * 16});
    }
    std::unique_ptr<Trainer> t = trained(methodConfig(base, EnsembleMethod::Independent));
    const GridEvaluation own = evaluateGrid(*t, box, 16, t->included());
    QVERIFY(r.methods.at(0).grid->ensemble.epistemic == own.ensemble.epistemic);
    QVERIFY(r.methods.at(0).grid->ensemble.probabilities == own.ensemble.probabilities);
    // No grid unless asked for.
    QVERIFY(!compareMethods(base, {EnsembleMethod::Independent}, fastOptions())
                 .methods.at(0)
                 .grid.has_value());
}

void TestCompare::cancelKeepsFinishedMethods() {
    const ExperimentConfig base = parseConfig(compareConfig());
    const std::vector<EnsembleMethod> all = allEnsembleMethods();
    // Two methods: the registry's first two, or the first twice while it has one.
    const std::vector<EnsembleMethod> two = {all[0], all.size() > 1 ? all[1] : all[0]};
    std::atomic<bool> cancel{false};
    const CompareResult r = compareMethods(
        base, two, fastOptions(),
        [&](const CompareProgress& p) {
            if (p.method == 1) {
                cancel = true;
            }
        },
        &cancel);
    QVERIFY(!r.complete);
    QCOMPARE(r.methods.size(), std::size_t{1});
    QVERIFY(r.methods[0].method == two[0]);
    // The finished method is the one an uncancelled comparison gives.
    const CompareResult whole = compareMethods(base, {two[0]}, fastOptions());
    QCOMPARE(r.methods[0].nll, whole.methods[0].nll);
    QCOMPARE(r.methods[0].accuracy, whole.methods[0].accuracy);
    QCOMPARE(compareReportJson(r)["complete"], json(false));

    // Cancelled in the middle of the first method's training: nothing finished.
    json longer = compareConfig();
    longer["training"]["steps"] = 100000;
    std::atomic<bool> stop{false};
    CompareOptions options = fastOptions();
    options.progressSeconds = 0.0;
    int64_t lastStep = 0;
    const CompareResult cut = compareMethods(
        parseConfig(longer), two, options,
        [&](const CompareProgress& p) {
            lastStep = p.step;
            if (p.step >= 64) {
                stop = true;
            }
        },
        &stop);
    QVERIFY(!cut.complete);
    QVERIFY(cut.methods.empty());
    QVERIFY2(lastStep < 1000, qPrintable(QString::number(lastStep)));
}

void TestCompare::refusesRegressionAndShiftsThatDoNotApply() {
    json regression = compareConfig();
    regression["dataset"] = {{"kind", "sine"}};
    regression["model"]["likelihood"] = "gaussian";
    QVERIFY_THROWS_EXCEPTION(
        ConfigError,
        compareMethods(parseConfig(regression), {EnsembleMethod::Independent}, fastOptions()));
    CompareOptions translate = fastOptions();
    translate.shiftKind = ShiftKind::Translate;  // images only
    translate.shiftLevel = 2;
    QVERIFY_THROWS_EXCEPTION(ConfigError, compareMethods(parseConfig(compareConfig()),
                                                         {EnsembleMethod::Independent}, translate));
    CompareOptions negative = fastOptions();
    negative.shiftLevel = -1.0;
    QVERIFY_THROWS_EXCEPTION(ConfigError, compareMethods(parseConfig(compareConfig()),
                                                         {EnsembleMethod::Independent}, negative));
}

void TestCompare::peakMemorySeesAnAllocation() {
    PeakMemory memory;
#ifdef ENSEMBLE_TEST_SANITIZED
    QSKIP("a sanitizer's allocator keeps its own pools");
#endif
    if (memory.source() != "VmHWM") {
        QSKIP("/proc/self/clear_refs cannot reset the peak here");
    }
    memory.reset();
    const double before = memory.peakMib();
    {
        // 64 MiB touched page by page: the peak rises by about that much.
        std::vector<char> block(64u << 20);
        for (std::size_t i = 0; i < block.size(); i += 4096) {
            block[i] = static_cast<char>(i);
        }
        QVERIFY(block[4096] != 1);
    }
    const double after = memory.peakMib();
    QVERIFY2(after - before >= 60.0, qPrintable(QStringLiteral("%1 -> %2").arg(before).arg(after)));
    // A reset after the block is freed forgets it.
    memory.reset();
    QVERIFY2(memory.peakMib() < after - 32.0,
             qPrintable(QStringLiteral("%1 after the reset").arg(memory.peakMib())));
}

void TestCompare::cliEndToEnd() {
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const QString config = writeJson(dir.path(), "spirals.json", compareConfig());
    const QString report = dir.path() + QStringLiteral("/r.json");
    const QString csv = dir.path() + QStringLiteral("/tables");
    const QString metrics = dir.path() + QStringLiteral("/m.json");
    ensemble::test::Run r =
        ensemble::test::runCli({"compare", "--config", config, "--set", "training.steps=50",
                                "--report", report, "--csv", csv});
    QVERIFY2(r.code == 0, qPrintable(describe(r)));
    // One table: a header naming the stated shift, a row per registry method.
    QVERIFY2(r.out.contains(QStringLiteral("nll noise 0.3")), qPrintable(r.out));
    const std::vector<EnsembleMethod> all = allEnsembleMethods();
    const json j = readJson(report);
    QVERIFY(j.is_object());
    QCOMPARE(j["methods"].size(), all.size());
    for (EnsembleMethod m : all) {
        QVERIFY2(r.out.contains(QLatin1String(toString(m))), qPrintable(r.out));
        std::set<std::string> keys;
        for (const auto& [key, value] : j["methods"][toString(m)].items()) {
            keys.insert(key);
        }
        QCOMPARE(keys, reportKeys());
    }
    QCOMPARE(j["config"]["training"]["steps"], json(50));
    const QStringList lines = readLines(csv + QStringLiteral("/compare.csv"));
    QCOMPARE(lines.size(), static_cast<qsizetype>(all.size() + 1));
    QVERIFY(lines[0].startsWith(QStringLiteral("method,accuracy,nll,")));

    // `train --metrics` of the same config and --set: the same ensemble numbers, bit for bit
    // (both JSON files hold the doubles in full).
    r = ensemble::test::runCli({"train", "--config", config, "--set", "training.steps=50",
                                "--metrics", metrics, "--quiet"});
    QVERIFY2(r.code == 0, qPrintable(describe(r)));
    const json m = readJson(metrics);
    for (const char* key : {"accuracy", "nll", "brier", "ece"}) {
        QVERIFY2(j["methods"]["independent"][key] == m["ensemble"][key], key);
    }

    // --methods independent and another --shift with its --level.
    r = ensemble::test::runCli({"compare", "--config", config, "--methods", "independent",
                                "--shift", "rotate", "--level", "30", "--report", report});
    QVERIFY2(r.code == 0, qPrintable(describe(r)));
    QVERIFY2(r.out.contains(QStringLiteral("nll rotate 30")), qPrintable(r.out));
    QCOMPARE(readJson(report)["shift"]["level"], json(30.0));
    // Another --shift without its level, or one that does not apply, is a usage error.
    r = ensemble::test::runCli({"compare", "--config", config, "--shift", "rotate"});
    QVERIFY2(r.code == 2, qPrintable(describe(r)));
    r = ensemble::test::runCli(
        {"compare", "--config", config, "--shift", "translate", "--level", "2"});
    QVERIFY2(r.code == 2, qPrintable(describe(r)));
}

void TestCompare::cliUnknownMethodExits2() {
    const ensemble::test::Run r =
        ensemble::test::runCli({"compare", "--config", "spirals", "--methods", "independent,bnn"});
    QVERIFY2(r.code == 2, qPrintable(describe(r)));
    QVERIFY2(r.err.contains(QStringLiteral("'bnn'")), qPrintable(r.err));
    for (EnsembleMethod m : allEnsembleMethods()) {
        QVERIFY2(r.err.contains(QLatin1String(toString(m))), qPrintable(r.err));
    }
    QCOMPARE(ensemble::test::runCli({"compare"}).code, 2);  // --config is required
}

void TestCompare::cliInterruptKeepsWhatIsDone() {
    QTemporaryDir dir;
    json c = compareConfig();
    c["training"]["steps"] = 10000000;  // long enough to be interrupted in the first method
    const QString config = writeJson(dir.path(), "long.json", c);
    const QString report = dir.path() + QStringLiteral("/r.json");
    QProcess p;
    p.start(ensemble::test::cliPath(), {"compare", "--config", config, "--report", report});
    QVERIFY(p.waitForStarted());
    // Wait for the first progress line (after a second of training), then interrupt.
    QString err;
    QElapsedTimer clock;
    clock.start();
    while (!err.contains(QStringLiteral("method 1/")) && clock.elapsed() < 60000 &&
           p.state() != QProcess::NotRunning) {
        p.waitForReadyRead(50);
        err += QString::fromUtf8(p.readAllStandardError());
    }
    QVERIFY2(err.contains(QStringLiteral("method 1/")), qPrintable(err));
    QCOMPARE(::kill(static_cast<pid_t>(p.processId()), SIGINT), 0);
    const ensemble::test::Run r = ensemble::test::finish(p);
    QVERIFY2(r.code == 130, qPrintable(describe(r)));
    QVERIFY2(r.err.contains(QStringLiteral("interrupted")), qPrintable(r.err));
    const json j = readJson(report);
    QCOMPARE(j["complete"], json(false));
    QVERIFY(j["methods"].empty());  // the method cut short is not reported
    QCOMPARE(j["config"]["training"]["steps"], json(10000000));
}

QTEST_GUILESS_MAIN(TestCompare)
#include "tst_compare.moc"
