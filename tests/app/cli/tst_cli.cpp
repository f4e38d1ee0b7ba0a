// ensemble-cli end to end: its commands, output formats and exit codes (a public contract:
// 0 ok, 2 usage/config, 3 bad data or weights file, 4 runtime failure).
#include <QtTest/QtTest>

#include "backend/auto_choice.h"
#include "backend/kernel_report.h"
#include "config/config.h"
#include "config/config_schema.h"
#include "io/model_io.h"
#include "registry/registry.h"
#include "support/test_support.h"
#include "sys/cpu_identity.h"

using ensemble::test::cliPath;
using ensemble::test::describe;
using ensemble::test::Run;
using ensemble::test::runCli;
using ensemble::test::writeBytes;

namespace {

const QStringList kSmallSpirals = {QStringLiteral("--config"), QStringLiteral("spirals"),
                                   QStringLiteral("--set"),    QStringLiteral("ensemble.members=3"),
                                   QStringLiteral("--set"),    QStringLiteral("dataset.n=200"),
                                   QStringLiteral("--set"),    QStringLiteral("backend.kind=cpu"),
                                   QStringLiteral("--quiet")};

}  // namespace

class TestCli : public QObject {
    Q_OBJECT

  private Q_SLOTS:
    void initTestCase();
    void usageErrorsExitTwo();
    void configErrorsExitTwoAndNameTheKey();
    void switchedOffMembersLeaveTheEnsemble();
    void badDataExitsThree();
    void badWeightsExitThree();
    void cudaWithoutDeviceExitsFour();
    void trainExportPredictRoundTrip();
    void zeroStepsExportsInitialWeights();
    void datasetWritesTheSplit();
    void benchPrintsTheResultLine();
    void configPrintsTheKeysThatApply();
    void schemaPrintsTheReadmeTable();
    void presetsListsEveryPreset();
    void regressionTrainPredictEval();
    void regressionBadInput();

  private:
    QTemporaryDir m_dir;
};

void TestCli::initTestCase() {
    QVERIFY2(QFileInfo(cliPath()).isExecutable(), qPrintable(cliPath()));
    QVERIFY(m_dir.isValid());
}

void TestCli::usageErrorsExitTwo() {
    QCOMPARE(runCli({}).code, 2);
    const Run unknown = runCli({QStringLiteral("fly")});
    QCOMPARE(unknown.code, 2);
    QVERIFY(unknown.err.contains(QStringLiteral("unknown command 'fly'")));
    const Run flag =
        runCli({QStringLiteral("train"), QStringLiteral("--frobnicate"), QStringLiteral("1")});
    QCOMPARE(flag.code, 2);
    QVERIFY(flag.err.contains(QStringLiteral("--frobnicate")));
    const Run missing =
        runCli({QStringLiteral("predict"), QStringLiteral("--input"), QStringLiteral("x.csv")});
    QCOMPARE(missing.code, 2);
    QVERIFY2(missing.err.contains(QStringLiteral("--weights")), qPrintable(describe(missing)));
    QCOMPARE(runCli({QStringLiteral("--help")}).code, 0);
}

void TestCli::configErrorsExitTwoAndNameTheKey() {
    Run r = runCli({QStringLiteral("train"), QStringLiteral("--config"), QStringLiteral("spirals"),
                    QStringLiteral("--set"), QStringLiteral("model.hiden=[3]")});
    QCOMPARE(r.code, 2);
    QVERIFY2(r.err.contains(QStringLiteral("model.hiden: unknown key")), qPrintable(describe(r)));
    r = runCli({QStringLiteral("train"), QStringLiteral("--config"), QStringLiteral("nope")});
    QCOMPARE(r.code, 2);
    QVERIFY(r.err.contains(QStringLiteral("not a preset")));
    r = runCli(
        {QStringLiteral("train"), QStringLiteral("--set"), QStringLiteral("ensemble.members=-4")});
    QCOMPARE(r.code, 2);
    QVERIFY(r.err.contains(QStringLiteral("ensemble.members")));
    // A switched-off member that does not exist, directly or in a schedule entry.
    QStringList args = {QStringLiteral("train")};
    args << kSmallSpirals << QStringLiteral("--set") << QStringLiteral("ensemble.switched_off=[3]");
    r = runCli(args);
    QCOMPARE(r.code, 2);
    QVERIFY2(r.err.contains(QStringLiteral("ensemble.switched_off[0]: expected a member index in "
                                           "[0, 2]")),
             qPrintable(describe(r)));
    args = QStringList{QStringLiteral("train")}
           << kSmallSpirals << QStringLiteral("--set")
           << QStringLiteral(
                  R"(training.schedule=[{"step": 4, "set": {"ensemble.switched_off": [0, 7]}}])");
    r = runCli(args);
    QCOMPARE(r.code, 2);
    QVERIFY2(r.err.contains(QStringLiteral("training.schedule[0].set.ensemble.switched_off[1]")),
             qPrintable(describe(r)));
}

// A member switched off during the run (a schedule entry) trains as before but leaves the
// ensemble: the train report, its summary and `eval` of the export leave it out alike.
void TestCli::switchedOffMembersLeaveTheEnsemble() {
    const QString on = m_dir.filePath(QStringLiteral("on.safetensors"));
    const QString off = m_dir.filePath(QStringLiteral("off.safetensors"));
    const QString metrics = m_dir.filePath(QStringLiteral("off.json"));
    QStringList args = {QStringLiteral("train")};
    args << kSmallSpirals << QStringLiteral("--set") << QStringLiteral("training.steps=40")
         << QStringLiteral("--export") << on;
    Run r = runCli(args);
    QVERIFY2(r.code == 0, qPrintable(describe(r)));
    args = QStringList{QStringLiteral("train")}
           << kSmallSpirals << QStringLiteral("--set") << QStringLiteral("training.steps=40")
           << QStringLiteral("--set")
           << QStringLiteral(
                  R"(training.schedule=[{"step": 20, "set": {"ensemble.switched_off": [1]}}])")
           << QStringLiteral("--export") << off << QStringLiteral("--metrics") << metrics;
    r = runCli(args);
    QVERIFY2(r.code == 0, qPrintable(describe(r)));
    const ensemble::LoadedEnsemble a = ensemble::importEnsemble(on.toStdString());
    const ensemble::LoadedEnsemble b = ensemble::importEnsemble(off.toStdString());
    QVERIFY(a.params == b.params);  // training is the same
    QFile mf(metrics);
    QVERIFY(mf.open(QIODevice::ReadOnly));
    const auto trained = nlohmann::json::parse(mf.readAll().toStdString());
    QVERIFY(!trained["members"][1]["switched_on"].get<bool>());
    QVERIFY(!trained["members"][1]["included"].get<bool>());
    QCOMPARE(trained["members_included"].get<int>(), 2);

    const auto evalReport = [&](const QString& weights, const char* name) {
        const QString report = m_dir.filePath(QString::fromLatin1(name));
        const Run e = runCli({QStringLiteral("eval"), QStringLiteral("--weights"), weights,
                              QStringLiteral("--report"), report});
        if (e.code != 0) {
            qWarning("%s", qPrintable(describe(e)));
            return std::pair{nlohmann::json(), e};
        }
        QFile f(report);
        f.open(QIODevice::ReadOnly);
        return std::pair{nlohmann::json::parse(f.readAll().toStdString()), e};
    };
    const auto [offEval, offRun] = evalReport(off, "off-eval.json");
    const auto [onEval, onRun] = evalReport(on, "on-eval.json");
    QVERIFY(!offEval.is_null() && !onEval.is_null());
    QVERIFY2(offRun.out.contains(QStringLiteral("member 1")) &&
                 offRun.out.contains(QStringLiteral("(switched off: left out)")),
             qPrintable(describe(offRun)));
    QVERIFY(!offEval["members"][1]["switched_on"].get<bool>());
    QVERIFY(!offEval["members"][1]["included"].get<bool>());
    QCOMPARE(offEval["members_included"].get<int>(), 2);
    QCOMPARE(onEval["members_included"].get<int>(), 3);
    QCOMPARE(offEval["ensemble"]["accuracy"], trained["ensemble"]["accuracy"]);
    ENSEMBLE_COMPARE_NEAR(offEval["ensemble"]["nll"].get<double>(),
                          trained["ensemble"]["nll"].get<double>(), 1e-6);
    QVERIFY(offEval["ensemble"]["nll"] != onEval["ensemble"]["nll"]);
}

void TestCli::badDataExitsThree() {
    const QString csv = m_dir.filePath(QStringLiteral("bad.csv"));
    QVERIFY(writeBytes(csv, "x0,x1,label\n0.5,1.0,0\n0.25,oops,1\n"));
    const Run r = runCli({QStringLiteral("train"), QStringLiteral("--set"),
                          QStringLiteral("dataset.kind=csv"), QStringLiteral("--set"),
                          QStringLiteral("dataset.path=") + csv});
    QCOMPARE(r.code, 3);
    QVERIFY2(r.err.contains(QStringLiteral("bad.csv:3")), qPrintable(describe(r)));
    const QString json = m_dir.filePath(QStringLiteral("bad.json"));
    // A config file is not data: not valid JSON, or a number beyond range, is a config error.
    QVERIFY(writeBytes(json, "{\"model\": ["));
    const Run notJson = runCli({QStringLiteral("train"), QStringLiteral("--config"), json});
    QCOMPARE(notJson.code, 2);
    QVERIFY2(notJson.err.contains(QStringLiteral("not valid JSON")), qPrintable(describe(notJson)));
    QVERIFY(writeBytes(json, "{\"ensemble\": {\"members\": 31e3092}}"));
    QCOMPARE(runCli({QStringLiteral("train"), QStringLiteral("--config"), json}).code, 2);
    QCOMPARE(runCli({QStringLiteral("train"), QStringLiteral("--set"),
                     QStringLiteral("ensemble.members=31e3092")})
                 .code,
             2);
}

void TestCli::badWeightsExitThree() {
    const QString junk = m_dir.filePath(QStringLiteral("junk.safetensors"));
    QVERIFY(writeBytes(junk, "definitely not safetensors"));
    const QString input = m_dir.filePath(QStringLiteral("in.csv"));
    QVERIFY(writeBytes(input, "x0,x1\n0,0\n"));
    const Run r = runCli({QStringLiteral("predict"), QStringLiteral("--weights"), junk,
                          QStringLiteral("--input"), input, QStringLiteral("--output"),
                          m_dir.filePath(QStringLiteral("p.csv"))});
    QCOMPARE(r.code, 3);
    QVERIFY(r.err.contains(QStringLiteral("junk.safetensors")));
    QVERIFY(!QFile::exists(m_dir.filePath(QStringLiteral("p.csv"))));
}

void TestCli::cudaWithoutDeviceExitsFour() {
    std::string reason;
    if (ensemble::cudaAvailable(0, reason)) {
        QSKIP("a CUDA device is present: this checks the no-device path");
    }
    QStringList args = {QStringLiteral("train")};
    args << kSmallSpirals << QStringLiteral("--set") << QStringLiteral("backend.kind=cuda");
    const Run r = runCli(args);
    QCOMPARE(r.code, 4);
    QVERIFY2(r.err.contains(QStringLiteral("CUDA")), qPrintable(describe(r)));
    // auto falls back to the CPU and says so once.
    args = QStringList{QStringLiteral("train")}
           << kSmallSpirals << QStringLiteral("--set") << QStringLiteral("backend.kind=auto")
           << QStringLiteral("--set") << QStringLiteral("training.steps=5");
    const Run fallback = runCli(args);
    QCOMPARE(fallback.code, 0);
    QCOMPARE(fallback.err.count(QStringLiteral("using the CPU")), 1);
}

void TestCli::trainExportPredictRoundTrip() {
    const QString weights = m_dir.filePath(QStringLiteral("w.safetensors"));
    const QString metrics = m_dir.filePath(QStringLiteral("m.json"));
    QStringList args = {QStringLiteral("train")};
    args << kSmallSpirals << QStringLiteral("--set") << QStringLiteral("training.steps=50")
         << QStringLiteral("--export") << weights << QStringLiteral("--metrics") << metrics;
    const Run train = runCli(args);
    QVERIFY2(train.code == 0, qPrintable(describe(train)));

    QFile mf(metrics);
    QVERIFY(mf.open(QIODevice::ReadOnly));
    const auto report = nlohmann::json::parse(mf.readAll().toStdString());
    QCOMPARE(report["step"].get<int>(), 50);
    QVERIFY(report["ensemble"]["test"].contains("accuracy"));
    QVERIFY(report["ensemble"]["train"].contains("loss"));
    QCOMPARE(report["members"].size(), std::size_t(3));
    for (const nlohmann::json& member : report["members"]) {
        for (const std::string& key : ensemble::test::runReportMemberKeys()) {
            QVERIFY2(member.contains(key), key.c_str());
        }
        QVERIFY(member["switched_on"].get<bool>());
    }
    QVERIFY(report.contains("epoch") && report.contains("dataset"));

    const QString input = m_dir.filePath(QStringLiteral("points.csv"));
    QVERIFY(writeBytes(input, "x0,label,x1\n0.1,1,0.2\n-0.5,0,0.4\n0.9,1,-0.9\n"));
    const QString output = m_dir.filePath(QStringLiteral("p.csv"));
    const Run predict =
        runCli({QStringLiteral("predict"), QStringLiteral("--weights"), weights,
                QStringLiteral("--input"), input, QStringLiteral("--output"), output});
    QVERIFY2(predict.code == 0, qPrintable(describe(predict)));
    QFile pf(output);
    QVERIFY(pf.open(QIODevice::ReadOnly));
    const QStringList lines = QString::fromUtf8(pf.readAll()).trimmed().split(QLatin1Char('\n'));
    QCOMPARE(lines.size(), 4);
    QCOMPARE(lines[0], QStringLiteral("ens_p0,ens_p1,m0_p0,m0_p1,m1_p0,m1_p1,m2_p0,m2_p1"));
    // The ensemble column is the mean of the member columns, and probabilities sum to 1.
    for (int i = 1; i < 4; ++i) {
        const QStringList v = lines[i].split(QLatin1Char(','));
        QCOMPARE(v.size(), 8);
        const double mean = (v[2].toDouble() + v[4].toDouble() + v[6].toDouble()) / 3.0;
        ENSEMBLE_COMPARE_NEAR(v[0].toDouble(), mean, 1e-6);
        ENSEMBLE_COMPARE_NEAR(v[0].toDouble() + v[1].toDouble(), 1.0, 1e-6);
    }
    // Against the engine directly: the same probabilities (the label column was ignored).
    const ensemble::LoadedEnsemble e = ensemble::importEnsemble(weights.toStdString());
    const float raw[2] = {0.1f, 0.2f};
    const std::vector<float> lp = ensemble::predictLogProbs(e, raw, 1, 1);
    ENSEMBLE_COMPARE_NEAR(lines[1].split(QLatin1Char(','))[2].toDouble(), std::exp(lp[0]), 1e-6);
}

void TestCli::zeroStepsExportsInitialWeights() {
    const QString weights = m_dir.filePath(QStringLiteral("init.safetensors"));
    QStringList args = {QStringLiteral("train")};
    args << kSmallSpirals << QStringLiteral("--set") << QStringLiteral("training.steps=0")
         << QStringLiteral("--export") << weights;
    const Run r = runCli(args);
    QVERIFY2(r.code == 0, qPrintable(describe(r)));
    const ensemble::LoadedEnsemble e = ensemble::importEnsemble(weights.toStdString());
    std::vector<float> expected(e.layout.size());
    ensemble::initParameters(e.layout, e.config.ensemble.seed, expected.data());
    QVERIFY(e.params == expected);
    QCOMPARE(e.step, int64_t(0));
}

void TestCli::datasetWritesTheSplit() {
    const QString out = m_dir.filePath(QStringLiteral("d.csv"));
    const Run r =
        runCli({QStringLiteral("dataset"), QStringLiteral("--config"), QStringLiteral("moons"),
                QStringLiteral("--set"), QStringLiteral("dataset.n=100"), QStringLiteral("--out"),
                out, QStringLiteral("--split"), QStringLiteral("test")});
    QVERIFY2(r.code == 0, qPrintable(describe(r)));
    QFile f(out);
    QVERIFY(f.open(QIODevice::ReadOnly));
    const QStringList lines = QString::fromUtf8(f.readAll()).trimmed().split(QLatin1Char('\n'));
    QCOMPARE(lines[0], QStringLiteral("x0,x1,label"));
    QCOMPARE(lines.size(), 1 + 20);  // test_fraction 0.2 of 100
    QCOMPARE(runCli({QStringLiteral("dataset"), QStringLiteral("--out"), out,
                     QStringLiteral("--split"), QStringLiteral("validation")})
                 .code,
             2);
}

void TestCli::benchPrintsTheResultLine() {
    QStringList args = {QStringLiteral("bench")};
    args << QStringLiteral("--config") << QStringLiteral("spirals") << QStringLiteral("--set")
         << QStringLiteral("backend.kind=cpu") << QStringLiteral("--steps") << QStringLiteral("20")
         << QStringLiteral("--warmup") << QStringLiteral("2") << QStringLiteral("--repeat")
         << QStringLiteral("1");
    const Run r = runCli(args);
    QVERIFY2(r.code == 0, qPrintable(describe(r)));
    const QRegularExpression line(
        QStringLiteral("^RESULT steps_per_sec=[0-9.e+]+ member_steps_per_sec=[0-9.e+]+ "
                       "useful_gflops=[0-9.e+-]+$"),
        QRegularExpression::MultilineOption);
    QVERIFY2(line.match(r.out).hasMatch(), qPrintable(r.out));
    // The CPU the figures are from, by CPUID (family and model, not only the brand string).
    const QString cpu =
        QStringLiteral("cpu: ") + QString::fromStdString(ensemble::cpuModelName() + ", " +
                                                         ensemble::cpuIdentity().describe());
    QVERIFY2(r.out.contains(cpu), qPrintable(r.out));
    // Its vector width, and what computed the figures (issue 53).
    QVERIFY2(
        r.out.contains(
            cpu + QStringLiteral(", %1-bit vectors\n").arg(ensemble::cpuIdentity().vectorBits())),
        qPrintable(r.out));
    QVERIFY2(r.out.contains(QStringLiteral("kernels: ") +
                            QString::fromStdString(ensemble::cpuKernels().describe())),
             qPrintable(r.out));
}

void TestCli::configPrintsTheKeysThatApply() {
    const Run ok =
        runCli({QStringLiteral("config"), QStringLiteral("--config"), QStringLiteral("moons"),
                QStringLiteral("--set"), QStringLiteral("ensemble.members=5")});
    QVERIFY2(ok.code == 0, qPrintable(describe(ok)));
    const nlohmann::json printed = nlohmann::json::parse(ok.out.toStdString());
    QCOMPARE(printed["ensemble"]["members"].get<int>(), 5);
    QCOMPARE(printed["training"]["steps"].get<int>(), 1500);  // the preset's
    QCOMPARE(printed["optimizer"]["eps"], ensemble::keySpec("optimizer.eps").defaultValue);
    QCOMPARE(printed["model"]["kind"].get<std::string>(), std::string("mlp"));
    // A key of the file that is wrong: exit 2, the file, line and column, the key.
    const QString path = m_dir.filePath(QStringLiteral("bad-config.json"));
    QVERIFY(writeBytes(path, "{\n  \"optimizer\": {\n    \"lr\": -2\n  }\n}\n"));
    const Run bad = runCli({QStringLiteral("config"), QStringLiteral("--config"), path});
    QCOMPARE(bad.code, 2);
    QVERIFY2(bad.err.contains(path + QStringLiteral(":3:5: optimizer.lr: expected a number")),
             qPrintable(describe(bad)));
    // Valid but unable to train: a warning on stderr, exit 0, the config printed.
    const Run still =
        runCli({QStringLiteral("config"), QStringLiteral("--config"), QStringLiteral("moons"),
                QStringLiteral("--set"), QStringLiteral("optimizer.lr=0")});
    QVERIFY2(still.code == 0, qPrintable(describe(still)));
    QVERIFY2(still.err.contains(QStringLiteral("warning: optimizer.lr: 0 cannot train: a learning "
                                               "rate of 0 leaves the member as initialised")),
             qPrintable(describe(still)));
    QCOMPARE(nlohmann::json::parse(still.out.toStdString())["optimizer"]["lr"].get<double>(), 0.0);
}

void TestCli::schemaPrintsTheReadmeTable() {
    const Run md = runCli({QStringLiteral("schema")});
    QVERIFY2(md.code == 0, qPrintable(describe(md)));
    QCOMPARE(md.out.toStdString(), ensemble::configTableMarkdown());
    const Run json =
        runCli({QStringLiteral("schema"), QStringLiteral("--format"), QStringLiteral("json")});
    QVERIFY2(json.code == 0, qPrintable(describe(json)));
    const nlohmann::json rows = nlohmann::json::parse(json.out.toStdString());
    QCOMPARE(rows.size(), ensemble::configSchema().size());
    const Run wrong =
        runCli({QStringLiteral("schema"), QStringLiteral("--format"), QStringLiteral("yaml")});
    QCOMPARE(wrong.code, 2);
}

// `presets` (the bash completion reads it): every built-in preset, one a line, each a name
// --config accepts.
void TestCli::presetsListsEveryPreset() {
    const Run run = runCli({QStringLiteral("presets")});
    QVERIFY2(run.code == 0, qPrintable(describe(run)));
    QStringList expected;
    for (const std::string& name : ensemble::presetNames()) {
        expected << QString::fromStdString(name);
    }
    QVERIFY(expected.contains(QStringLiteral("spirals")));
    QCOMPARE(run.out.split(QLatin1Char('\n'), Qt::SkipEmptyParts), expected);
    const Run config =
        runCli({QStringLiteral("config"), QStringLiteral("--config"), expected.last()});
    QVERIFY2(config.code == 0, qPrintable(describe(config)));
    const Run wrong = runCli({QStringLiteral("presets"), QStringLiteral("--format")});
    QCOMPARE(wrong.code, 2);
}

void TestCli::regressionTrainPredictEval() {
    const QString weights = m_dir.filePath(QStringLiteral("cubic.safetensors"));
    const QString metrics = m_dir.filePath(QStringLiteral("cubic.json"));
    const Run train =
        runCli({QStringLiteral("train"), QStringLiteral("--config"), QStringLiteral("cubic"),
                QStringLiteral("--set"), QStringLiteral("backend.kind=cpu"),
                QStringLiteral("--export"), weights, QStringLiteral("--metrics"), metrics});
    QVERIFY2(train.code == 0, qPrintable(describe(train)));
    // The summary shows NLL and RMSE.
    QVERIFY2(train.out.contains(QStringLiteral("test nll")) &&
                 train.out.contains(QStringLiteral("test rmse")),
             qPrintable(describe(train)));
    QFile mf(metrics);
    QVERIFY(mf.open(QIODevice::ReadOnly));
    const nlohmann::json m = nlohmann::json::parse(mf.readAll().toStdString());
    QCOMPARE(m["task"].get<std::string>(), std::string("regression"));
    QCOMPARE(m["members"].size(), std::size_t{5});
    QVERIFY(m["ensemble"]["nll"].is_number());
    QVERIFY(m["ensemble"]["coverage"]["90"].is_number());
    QVERIFY(m["ensemble"]["calibration"]["mean_abs_gap"].is_number());

    // The export's metadata and target normalisation.
    const ensemble::LoadedEnsemble e = ensemble::importEnsemble(weights.toStdString());
    QCOMPARE(e.target, std::string("y"));
    QVERIFY(e.normalization.targetStd > 1.0);  // y = x^3 on [-4, 4]: a std of tens

    // predict on a file written by `dataset` (x0 and the target y): y is skipped.
    const QString data = m_dir.filePath(QStringLiteral("cubic.csv"));
    QCOMPARE(
        runCli({QStringLiteral("dataset"), QStringLiteral("--config"), QStringLiteral("cubic"),
                QStringLiteral("--split"), QStringLiteral("test"), QStringLiteral("--out"), data})
            .code,
        0);
    const QString out = m_dir.filePath(QStringLiteral("cubic-pred.csv"));
    const Run predict = runCli({QStringLiteral("predict"), QStringLiteral("--weights"), weights,
                                QStringLiteral("--input"), data, QStringLiteral("--output"), out});
    QVERIFY2(predict.code == 0, qPrintable(describe(predict)));
    QFile pf(out);
    QVERIFY(pf.open(QIODevice::ReadOnly));
    const QStringList lines = QString::fromUtf8(pf.readAll()).trimmed().split(QLatin1Char('\n'));
    QCOMPARE(lines.size(), 201);
    QVERIFY2(lines[0].startsWith(QStringLiteral(
                 "ens_mean,ens_std,ens_aleatoric_std,ens_epistemic_std,m0_mean,m0_std,m1_mean")),
             qPrintable(lines[0]));
    // std^2 = aleatoric^2 + epistemic^2 in every row.
    for (int i = 1; i < lines.size(); ++i) {
        const QStringList v = lines[i].split(QLatin1Char(','));
        QCOMPARE(v.size(), 4 + 2 * 5);
        const double total = v[1].toDouble();
        const double a = v[2].toDouble();
        const double b = v[3].toDouble();
        QVERIFY(std::abs(total * total - a * a - b * b) <= 1e-5 * (1 + total * total));
    }

    // eval writes the same report layout.
    const QString report = m_dir.filePath(QStringLiteral("cubic-eval.json"));
    const Run eval = runCli({QStringLiteral("eval"), QStringLiteral("--weights"), weights,
                             QStringLiteral("--report"), report, QStringLiteral("--csv"),
                             m_dir.filePath(QStringLiteral("cubic-csv"))});
    QVERIFY2(eval.code == 0, qPrintable(describe(eval)));
    QFile rf(report);
    QVERIFY(rf.open(QIODevice::ReadOnly));
    const nlohmann::json r = nlohmann::json::parse(rf.readAll().toStdString());
    QCOMPARE(r["size_curve"].size(), std::size_t{5});
    // The same weights and test split: the same ensemble NLL as train --metrics.
    QVERIFY(std::abs(r["ensemble"]["nll"].get<double>() - m["ensemble"]["nll"].get<double>()) <
            1e-6);
    QVERIFY(QFileInfo::exists(m_dir.filePath(QStringLiteral("cubic-csv/calibration.csv"))));
}

void TestCli::regressionBadInput() {
    const auto trainCsv = [&](const char* name, const QByteArray& text) -> Run {
        const QString csv = m_dir.filePath(QString::fromLatin1(name));
        if (!writeBytes(csv, text)) {
            QTest::qFail(qPrintable(QStringLiteral("cannot write ") + csv), __FILE__, __LINE__);
            return {};  // exit -1: no check of it passes
        }
        return runCli({QStringLiteral("train"), QStringLiteral("--set"),
                       QStringLiteral("dataset.kind=csv"), QStringLiteral("--set"),
                       QStringLiteral("dataset.path=") + csv, QStringLiteral("--set"),
                       QStringLiteral("dataset.task=regression"), QStringLiteral("--set"),
                       QStringLiteral("model.likelihood=gaussian"), QStringLiteral("--quiet")});
    };
    Run r = trainCsv("no-target.csv", "x0,z\n1,2\n2,3\n");
    QCOMPARE(r.code, 3);
    QVERIFY2(
        r.err.contains(QStringLiteral("no-target.csv:1:")) && r.err.contains(QStringLiteral("'y'")),
        qPrintable(describe(r)));
    r = trainCsv("text-target.csv", "x0,y\n1,2\n2,high\n");
    QCOMPARE(r.code, 3);
    QVERIFY2(r.err.contains(QStringLiteral("text-target.csv:3: column 2 ('y')")),
             qPrintable(describe(r)));
    r = trainCsv("nan-target.csv", "x0,y\n1,NaN\n2,3\n");
    QCOMPARE(r.code, 3);
    QVERIFY2(r.err.contains(QStringLiteral("nan-target.csv:2: column 2 ('y')")),
             qPrintable(describe(r)));
    r = trainCsv("inf-target.csv", "x0,y\n1,1\n2,inf\n");
    QCOMPARE(r.code, 3);
    r = trainCsv("flat-target.csv", "x0,y\n1,4\n2,4\n");
    QCOMPARE(r.code, 3);
    QVERIFY2(r.err.contains(QStringLiteral("constant")), qPrintable(describe(r)));
    // A likelihood that does not fit the task is a config error naming the key.
    r = runCli({QStringLiteral("train"), QStringLiteral("--config"), QStringLiteral("cubic"),
                QStringLiteral("--set"), QStringLiteral("model.likelihood=categorical")});
    QCOMPARE(r.code, 2);
    QVERIFY2(r.err.contains(QStringLiteral("model.likelihood")), qPrintable(describe(r)));
    r = runCli({QStringLiteral("train"), QStringLiteral("--config"), QStringLiteral("spirals"),
                QStringLiteral("--set"), QStringLiteral("model.likelihood=mse")});
    QCOMPARE(r.code, 2);
    QVERIFY2(r.err.contains(QStringLiteral("model.likelihood")), qPrintable(describe(r)));
    // dataset.target applies only to a regression csv.
    r = runCli({QStringLiteral("config"), QStringLiteral("--set"),
                QStringLiteral("dataset.target=price")});
    QCOMPARE(r.code, 2);
    QVERIFY2(r.err.contains(QStringLiteral("dataset.target")), qPrintable(describe(r)));
}

QTEST_GUILESS_MAIN(TestCli)
#include "tst_cli.moc"
