// ensemble-cli's runs store end to end: the parser's subcommands and positional arguments, the
// commands that record their runs, and `runs list / show / diff / tag / note / rm / export`
// against the store read in-process (engine/runs/run_store.h) and a brute-force filter.
#include <QtTest/QtTest>

#include <csignal>
#include <map>
#include <random>
#include <set>

#include <nlohmann/json.hpp>

#include "runs/run_fields.h"
#include "runs/run_store.h"
#include "support/test_support.h"

using ensemble::runs::RunEntry;
using ensemble::runs::RunState;
using ensemble::runs::RunStore;
using ensemble::test::cliPath;
using ensemble::test::describe;
using ensemble::test::Run;
using ensemble::test::runCli;
using nlohmann::json;

namespace {

const QStringList kTinySpirals = {QStringLiteral("--config"), QStringLiteral("spirals"),
                                  QStringLiteral("--set"),    QStringLiteral("ensemble.members=3"),
                                  QStringLiteral("--set"),    QStringLiteral("dataset.n=200"),
                                  QStringLiteral("--set"),    QStringLiteral("training.steps=40"),
                                  QStringLiteral("--set"),    QStringLiteral("backend.kind=cpu")};

QString fileText(const QString& path) {
    QFile f(path);
    return f.open(QIODevice::ReadOnly) ? QString::fromUtf8(f.readAll()) : QString();
}

}  // namespace

class TestCliRuns : public QObject {
    Q_OBJECT

  private Q_SLOTS:
    void initTestCase();
    void subcommandsAndPositionalArguments();
    void commandsRecordTheirRuns();
    void recordingCanBeTurnedOff();
    void filtersAndSortAgreeWithABruteForceCheck();
    void showDiffTagNoteRemove();
    void exportWritesTheTable();
    void concurrentCommandsAllRecord();
    void aResumedRunNamesTheRunItContinues();
    void anInterruptedOrKilledRunSaysSo();
    void anUnwritableStoreWarnsOnceAndTheRunTrains();

  private:
    // A fresh store file in the temporary folder, and the environment that points at it.
    QString freshStore(const QString& name);
    QProcessEnvironment envFor(const QString& store) const;
    Run cli(const QString& store, const QStringList& args) const;
    json listJson(const QString& store, const QStringList& filters = {}) const;

    QTemporaryDir m_dir;
};

void TestCliRuns::initTestCase() {
    QVERIFY2(QFileInfo(cliPath()).isExecutable(), qPrintable(cliPath()));
    QVERIFY(m_dir.isValid());
}

QString TestCliRuns::freshStore(const QString& name) {
    const QString path = m_dir.filePath(name + QStringLiteral(".sqlite"));
    QFile::remove(path);
    return path;
}

QProcessEnvironment TestCliRuns::envFor(const QString& store) const {
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.insert(QString::fromUtf8(ensemble::runs::kRunsDbVariable), store);
    return env;
}

Run TestCliRuns::cli(const QString& store, const QStringList& args) const {
    return runCli(args, envFor(store));
}

json TestCliRuns::listJson(const QString& store, const QStringList& filters) const {
    const Run r = cli(store, QStringList{QStringLiteral("runs"), QStringLiteral("list"),
                                         QStringLiteral("--format"), QStringLiteral("json")} +
                                 filters);
    if (r.code != 0) {
        // Fails the calling test function (which goes on, as after a QVERIFY in a helper).
        QTest::qFail(qPrintable(QStringLiteral("runs list failed: ") + describe(r)), __FILE__,
                     __LINE__);
        return json::array();
    }
    return json::parse(r.out.toStdString());
}

void TestCliRuns::subcommandsAndPositionalArguments() {
    const QString store = freshStore(QStringLiteral("parser"));
    const auto expectUsage = [&](const QStringList& args, const QString& says) {
        const Run r = cli(store, args);
        QVERIFY2(r.code == 2 && r.err.contains(says),
                 qPrintable(args.join(' ') + QStringLiteral(": ") + describe(r)));
    };
    // A command of flags takes no positional argument, and says so.
    expectUsage({QStringLiteral("train"), QStringLiteral("spirals")},
                QStringLiteral("unexpected argument 'spirals' for train, which takes flags only"));
    expectUsage({QStringLiteral("runs")}, QStringLiteral("usage: ensemble-cli runs <subcommand>"));
    expectUsage({QStringLiteral("runs"), QStringLiteral("fly")},
                QStringLiteral("unknown subcommand 'fly'"));
    expectUsage({QStringLiteral("runs"), QStringLiteral("show")}, QStringLiteral("missing ID"));
    expectUsage(
        {QStringLiteral("runs"), QStringLiteral("show"), QStringLiteral("1"), QStringLiteral("2")},
        QStringLiteral("unexpected argument '2'"));
    expectUsage({QStringLiteral("runs"), QStringLiteral("show"), QStringLiteral("one")},
                QStringLiteral("expected a run id"));
    expectUsage({QStringLiteral("runs"), QStringLiteral("diff"), QStringLiteral("1")},
                QStringLiteral("missing B"));
    expectUsage({QStringLiteral("runs"), QStringLiteral("tag"), QStringLiteral("1")},
                QStringLiteral("missing TAG"));
    expectUsage({QStringLiteral("runs"), QStringLiteral("show"), QStringLiteral("7")},
                QStringLiteral("no run 7 in"));
    expectUsage({QStringLiteral("runs"), QStringLiteral("list"), QStringLiteral("colour=red")},
                QStringLiteral("colour"));
    expectUsage({QStringLiteral("runs"), QStringLiteral("list"), QStringLiteral("--store"),
                 m_dir.filePath(QStringLiteral("mistyped.sqlite"))},
                QStringLiteral("--store: no runs store at"));
    // Help: the overview names runs; runs --help each subcommand; a subcommand its synopsis.
    const Run overview = runCli({QStringLiteral("--help")});
    QVERIFY(overview.out.contains(QStringLiteral("\n  runs ")));
    const Run runsHelp = cli(store, {QStringLiteral("runs"), QStringLiteral("--help")});
    QCOMPARE(runsHelp.code, 0);
    for (const char* sub : {"list", "show", "diff", "tag", "note", "rm", "export"}) {
        QVERIFY2(runsHelp.out.contains(QStringLiteral("\n  %1 ").arg(QString::fromUtf8(sub))), sub);
    }
    const Run showHelp =
        cli(store, {QStringLiteral("runs"), QStringLiteral("show"), QStringLiteral("--help")});
    QCOMPARE(showHelp.code, 0);
    QVERIFY(showHelp.out.startsWith(QStringLiteral("usage: ensemble-cli runs show ID")));
    // "--" ends the flags: what follows is positional even when it starts with '-'.
    expectUsage({QStringLiteral("runs"), QStringLiteral("show"), QStringLiteral("--"),
                 QStringLiteral("-3")},
                QStringLiteral("expected a run id"));
}

void TestCliRuns::commandsRecordTheirRuns() {
    const QString store = freshStore(QStringLiteral("record"));
    const QString weights = m_dir.filePath(QStringLiteral("record.safetensors"));
    const QString metrics = m_dir.filePath(QStringLiteral("record-metrics.json"));
    Run r =
        cli(store, QStringList{QStringLiteral("train")} + kTinySpirals +
                       QStringList{QStringLiteral("--export"), weights, QStringLiteral("--metrics"),
                                   metrics, QStringLiteral("--quiet")});
    QVERIFY2(r.code == 0, qPrintable(describe(r)));
    QVERIFY2(!r.err.contains(QStringLiteral("warning")), qPrintable(r.err));
    r = cli(store, {QStringLiteral("shift"), QStringLiteral("--weights"), weights,
                    QStringLiteral("--shift"), QStringLiteral("noise"), QStringLiteral("--levels"),
                    QStringLiteral("0,0.5")});
    QVERIFY2(r.code == 0, qPrintable(describe(r)));
    r = cli(store, QStringList{QStringLiteral("compare"), QStringLiteral("--methods"),
                               QStringLiteral("independent,snapshot")} +
                       kTinySpirals);
    QVERIFY2(r.code == 0, qPrintable(describe(r)));

    const json entries = listJson(store);
    QCOMPARE(entries.size(), std::size_t(3));
    // Newest first.
    QCOMPARE(entries[0]["kind"].get<std::string>(), std::string("compare"));
    QCOMPARE(entries[1]["kind"].get<std::string>(), std::string("shift"));
    const json& train = entries[2];
    QCOMPARE(train["kind"].get<std::string>(), std::string("train"));
    QCOMPARE(train["program"].get<std::string>(), std::string("ensemble-cli"));
    QCOMPARE(train["state"].get<std::string>(), std::string("finished"));
    QCOMPARE(train["preset"].get<std::string>(), std::string("spirals"));
    QCOMPARE(train["dataset"].get<std::string>(), std::string("spirals"));
    QCOMPARE(train["members"].get<int>(), 3);
    QCOMPARE(train["config"]["ensemble"]["members"].get<int>(), 3);
    QVERIFY(train["backend"].get<std::string>().rfind("cpu", 0) == 0);
    QVERIFY(train["ended"].get<double>() >= train["started"].get<double>());
    // The figures are those of the metrics file the run wrote.
    const json report = json::parse(fileText(metrics).toStdString());
    const double accuracy = train["figures"]["test_accuracy"].get<double>();
    QVERIFY(accuracy > 0.3 && accuracy <= 1.0);
    QVERIFY(train["figures"].contains("test_nll"));
    QVERIFY(train["figures"].contains("test_ece"));
    QVERIFY(report.dump().find("accuracy") != std::string::npos);
    // Its curves, its files (absolute) and the command that reproduces it.
    QVERIFY(train["curves"].contains("test_loss"));
    QVERIFY(!train["curves"]["test_loss"].empty());
    std::vector<std::string> roles;
    for (const json& f : train["files"]) {
        roles.push_back(f["role"].get<std::string>());
        QVERIFY(QFileInfo(QString::fromStdString(f["path"].get<std::string>())).isAbsolute());
    }
    QCOMPARE(roles, (std::vector<std::string>{"report", "export"}));
    QCOMPARE(QString::fromStdString(train["files"][1]["path"].get<std::string>()),
             QFileInfo(weights).absoluteFilePath());
    const std::string command = train["command"].get<std::string>();
    QVERIFY2(command.find("ensemble-cli train --config spirals") != std::string::npos,
             command.c_str());
    // The shift run names the weights it measured, the run that wrote them, and its figures
    // per level.
    QCOMPARE(entries[1]["files"][0]["role"].get<std::string>(), std::string("weights"));
    QCOMPARE(entries[1]["parent"].get<std::int64_t>(), train["id"].get<std::int64_t>());
    QCOMPARE(entries[1]["relation"].get<std::string>(), std::string("measured"));
    QVERIFY(entries[1]["figures"].contains("0.5.accuracy"));
    // The comparison's figures per method.
    QVERIFY(entries[0]["figures"].contains("independent.test_nll"));
    QVERIFY(entries[0]["figures"].contains("snapshot.test_nll"));

    // The same store read in-process gives the same entries.
    const RunStore read = RunStore::open(store.toStdString());
    const std::vector<RunEntry> listed = read.list({});
    QCOMPARE(listed.size(), std::size_t(3));
    QCOMPARE(listed[2].id, train["id"].get<std::int64_t>());
    QCOMPARE(listed[2].figures.at("test_accuracy"), accuracy);
}

void TestCliRuns::recordingCanBeTurnedOff() {
    const QString store = freshStore(QStringLiteral("off"));
    Run r = cli(store, QStringList{QStringLiteral("train")} + kTinySpirals +
                           QStringList{QStringLiteral("--quiet"), QStringLiteral("--no-record")});
    QVERIFY2(r.code == 0, qPrintable(describe(r)));
    QVERIFY(listJson(store).empty());
    // ENSEMBLE_RUNS_DB=off: nothing recorded, nothing said.
    r = runCli(QStringList{QStringLiteral("train")} + kTinySpirals +
                   QStringList{QStringLiteral("--quiet")},
               envFor(QStringLiteral("off")));
    QVERIFY2(r.code == 0 && r.err.isEmpty(), qPrintable(describe(r)));
    const Run list =
        runCli({QStringLiteral("runs"), QStringLiteral("list")}, envFor(QStringLiteral("off")));
    QCOMPARE(list.code, 2);
    QVERIFY2(list.err.contains(QStringLiteral("--store")), qPrintable(describe(list)));
}

// Entries with random figures and config values, inserted as they are; then every filter the
// CLI takes against the same predicate computed here.
void TestCliRuns::filtersAndSortAgreeWithABruteForceCheck() {
    const QString store = freshStore(QStringLiteral("filters"));
    std::vector<RunEntry> made;
    {
        RunStore writer = RunStore::open(store.toStdString());
        std::mt19937 random(7);
        const char* presets[] = {"spirals", "moons", "circles"};
        for (int i = 0; i < 120; ++i) {
            RunEntry e;
            e.program = "ensemble-cli";
            e.kind = i % 3 == 0 ? "compare" : "train";
            e.state = RunState::Finished;
            e.preset = presets[random() % 3];
            e.started = 1.7e9 + i * 60.0;
            e.ended = e.started + 5.0;
            e.wallSeconds = 5.0;
            e.members = 1 + static_cast<int>(random() % 20);
            e.config = {{"ensemble", {{"members", e.members}}},
                        {"optimizer", {{"lr", 0.001 * (1 + random() % 50)}}}};
            if (random() % 4 != 0) {  // some entries have no NLL at all
                e.figures["test_nll"] = std::uniform_real_distribution<double>(0.05, 1.5)(random);
            }
            e.figures["test_accuracy"] = std::uniform_real_distribution<double>(0.5, 1.0)(random);
            made.push_back(e);
        }
        const std::vector<std::int64_t> ids = writer.insert(made);
        for (std::size_t i = 0; i < made.size(); ++i) {
            made[i].id = ids[i];
        }
    }
    const auto check = [&](const QStringList& filters, const QString& sort,
                           const std::function<bool(const RunEntry&)>& keep,
                           const std::function<bool(const RunEntry&, const RunEntry&)>& before) {
        std::vector<RunEntry> expected;
        for (const RunEntry& e : made) {
            if (keep(e)) {
                expected.push_back(e);
            }
        }
        std::stable_sort(expected.begin(), expected.end(), before);
        const Run r = cli(store, QStringList{QStringLiteral("runs"), QStringLiteral("list"),
                                             QStringLiteral("--format"), QStringLiteral("csv"),
                                             QStringLiteral("--columns"), QStringLiteral("id"),
                                             QStringLiteral("--sort"), sort} +
                                     filters);
        QVERIFY2(r.code == 0, qPrintable(describe(r)));
        QStringList lines = r.out.split('\n', Qt::SkipEmptyParts);
        QCOMPARE(lines.takeFirst(), QStringLiteral("id"));
        QStringList want;
        for (const RunEntry& e : expected) {
            want << QString::number(e.id);
        }
        QVERIFY2(lines == want, qPrintable(filters.join(' ') + QStringLiteral(" sorted by ") +
                                           sort + QStringLiteral(":\n got ") + lines.join(',') +
                                           QStringLiteral("\nwant ") + want.join(',')));
    };
    const auto byId = [](const RunEntry& a, const RunEntry& b) { return a.id < b.id; };
    check(
        {QStringLiteral("preset=moons")}, QStringLiteral("id"),
        [](const RunEntry& e) { return e.preset == "moons"; }, byId);
    check(
        {QStringLiteral("figure.test_nll<0.5"), QStringLiteral("kind=train")},
        QStringLiteral("figure.test_nll"),
        [](const RunEntry& e) {
            return e.kind == "train" && e.figures.count("test_nll") > 0 &&
                   e.figures.at("test_nll") < 0.5;
        },
        [](const RunEntry& a, const RunEntry& b) {
            return a.figures.at("test_nll") < b.figures.at("test_nll");
        });
    check(
        {QStringLiteral("config.optimizer.lr>=0.02"), QStringLiteral("members<=10")},
        QStringLiteral("-figure.test_accuracy"),
        [](const RunEntry& e) {
            return e.config["optimizer"]["lr"].get<double>() >= 0.02 && e.members <= 10;
        },
        [](const RunEntry& a, const RunEntry& b) {
            return a.figures.at("test_accuracy") > b.figures.at("test_accuracy");
        });
    check(
        {QStringLiteral("preset~IRC"), QStringLiteral("preset!=spirals")}, QStringLiteral("id"),
        [](const RunEntry& e) { return e.preset == "circles"; }, byId);
    // The table: a header, one line per entry, the newest 50 unless asked.
    const Run table = cli(store, {QStringLiteral("runs"), QStringLiteral("list")});
    QVERIFY2(table.code == 0, qPrintable(describe(table)));
    QVERIFY2(table.out.trimmed().startsWith(QStringLiteral("id")), qPrintable(table.out));
    QCOMPARE(table.out.count('\n'), 51);
    QVERIFY2(table.err.contains(QStringLiteral("50 of 120 runs")), qPrintable(table.err));
}

void TestCliRuns::showDiffTagNoteRemove() {
    const QString store = freshStore(QStringLiteral("edit"));
    const QString file = m_dir.filePath(QStringLiteral("edit-export.safetensors"));
    ensemble::test::writeBytes(file, QByteArray("not really weights"));
    std::int64_t a = 0;
    std::int64_t b = 0;
    {
        RunStore writer = RunStore::open(store.toStdString());
        RunEntry one;
        one.program = "ensemble-cli";
        one.kind = "train";
        one.state = RunState::Finished;
        one.started = 1.7e9;
        one.config = {{"optimizer", {{"lr", 0.01}}}, {"model", {{"hidden", {32, 32}}}}};
        one.figures = {{"test_nll", 0.25}, {"test_accuracy", 0.9}};
        one.files = {{file.toStdString(), "export"}};
        RunEntry two = one;
        two.config["optimizer"]["lr"] = 0.02;
        two.config["training"] = {{"steps", 500}};
        two.figures = {{"test_nll", 0.3}};
        two.files = {};
        const std::vector<std::int64_t> ids = writer.insert({one, two});
        a = ids[0];
        b = ids[1];
    }
    const QString idA = QString::number(a);
    const QString idB = QString::number(b);
    // diff: the keys that differ, and every figure side by side.
    Run r = cli(store, {QStringLiteral("runs"), QStringLiteral("diff"), idA, idB,
                        QStringLiteral("--format"), QStringLiteral("json")});
    QVERIFY2(r.code == 0, qPrintable(describe(r)));
    std::map<std::string, std::pair<json, json>> diff;
    const json parsed = json::parse(r.out.toStdString());
    for (const json& d : parsed["differences"]) {
        diff[d["field"].get<std::string>()] = {d["a"], d["b"]};
    }
    QVERIFY2(diff.size() == 4, qPrintable(r.out));
    QCOMPARE(diff["config.optimizer.lr"].first.get<std::string>(), std::string("0.01"));
    QCOMPARE(diff["config.optimizer.lr"].second.get<std::string>(), std::string("0.02"));
    QVERIFY(diff["config.training.steps"].first.is_null());
    QCOMPARE(diff["figure.test_nll"].second.get<std::string>(), std::string("0.3"));
    QVERIFY(diff["figure.test_accuracy"].second.is_null());
    QVERIFY(diff.count("config.model.hidden") == 0);
    const Run text = cli(store, {QStringLiteral("runs"), QStringLiteral("diff"), idA, idB});
    QVERIFY(text.out.contains(QStringLiteral("config.optimizer.lr")));
    // tag, note, and the filters that find them.
    QCOMPARE(cli(store, {QStringLiteral("runs"), QStringLiteral("tag"), idA,
                         QStringLiteral("baseline"), QStringLiteral("sweep")})
                 .code,
             0);
    QCOMPARE(cli(store, {QStringLiteral("runs"), QStringLiteral("note"), idB,
                         QStringLiteral("lower learning rate next")})
                 .code,
             0);
    QCOMPARE(listJson(store, {QStringLiteral("tag=sweep")}).size(), std::size_t(1));
    QCOMPARE(listJson(store, {QStringLiteral("learning")})[0]["id"].get<std::int64_t>(), b);
    QCOMPARE(cli(store, {QStringLiteral("runs"), QStringLiteral("tag"), idA,
                         QStringLiteral("sweep"), QStringLiteral("--remove")})
                 .code,
             0);
    QVERIFY(listJson(store, {QStringLiteral("tag=sweep")}).empty());
    QCOMPARE(
        cli(store, {QStringLiteral("runs"), QStringLiteral("tag"), idA, QStringLiteral("two,tags")})
            .code,
        2);
    // show: the fields a person reads.
    r = cli(store, {QStringLiteral("runs"), QStringLiteral("show"), idA});
    QVERIFY2(r.code == 0, qPrintable(describe(r)));
    QVERIFY(r.out.contains(QStringLiteral("baseline")));
    QVERIFY(r.out.contains(file));
    // rm: a mistyped id among them removes nothing; --files deletes what the run wrote.
    r = cli(store, {QStringLiteral("runs"), QStringLiteral("rm"), idA, QStringLiteral("999")});
    QCOMPARE(r.code, 2);
    QCOMPARE(listJson(store).size(), std::size_t(2));
    r = cli(store, {QStringLiteral("runs"), QStringLiteral("rm"), idA, QStringLiteral("--files")});
    QVERIFY2(r.code == 0, qPrintable(describe(r)));
    QVERIFY(!QFileInfo::exists(file));
    const json left = listJson(store);
    QCOMPARE(left.size(), std::size_t(1));
    QCOMPARE(left[0]["id"].get<std::int64_t>(), b);
}

void TestCliRuns::exportWritesTheTable() {
    const QString store = freshStore(QStringLiteral("export"));
    {
        RunStore writer = RunStore::open(store.toStdString());
        std::vector<RunEntry> entries(3);
        for (int i = 0; i < 3; ++i) {
            entries[static_cast<std::size_t>(i)].program = "ensemble-lab";
            entries[static_cast<std::size_t>(i)].kind = "app-train";
            entries[static_cast<std::size_t>(i)].state = RunState::Finished;
            entries[static_cast<std::size_t>(i)].note = i == 1 ? "a note, with \"quotes\"" : "";
            entries[static_cast<std::size_t>(i)].figures["test_nll"] = 0.1 * (i + 1);
        }
        writer.insert(entries);
    }
    const QString csv = m_dir.filePath(QStringLiteral("runs.csv"));
    const QStringList columns = {QStringLiteral("--columns"),
                                 QStringLiteral("id,kind,note,figure.test_nll")};
    Run r = cli(store, QStringList{QStringLiteral("runs"), QStringLiteral("export"),
                                   QStringLiteral("--out"), csv} +
                           columns);
    QVERIFY2(r.code == 0, qPrintable(describe(r)));
    const Run listed = cli(store, QStringList{QStringLiteral("runs"), QStringLiteral("list"),
                                              QStringLiteral("--format"), QStringLiteral("csv")} +
                                      columns);
    QCOMPARE(fileText(csv), listed.out);
    QVERIFY2(listed.out.contains(QStringLiteral("\"a note, with \"\"quotes\"\"\"")),
             qPrintable(listed.out));
    QVERIFY(listed.out.startsWith(QStringLiteral("id,kind,note,figure.test_nll\n")));
    const QString jsonFile = m_dir.filePath(QStringLiteral("runs.json"));
    r = cli(store, {QStringLiteral("runs"), QStringLiteral("export"), QStringLiteral("--out"),
                    jsonFile, QStringLiteral("kind=app-train")});
    QVERIFY2(r.code == 0, qPrintable(describe(r)));
    QCOMPARE(json::parse(fileText(jsonFile).toStdString()).size(), std::size_t(3));
    r = cli(store, {QStringLiteral("runs"), QStringLiteral("export"), QStringLiteral("--out"),
                    m_dir.filePath(QStringLiteral("runs.txt"))});
    QCOMPARE(r.code, 2);
}

// Three processes train at once into one store: every entry is there and finished.
void TestCliRuns::concurrentCommandsAllRecord() {
    const QString store = freshStore(QStringLiteral("concurrent"));
    std::vector<std::unique_ptr<QProcess>> processes;
    for (int i = 0; i < 3; ++i) {
        auto p = std::make_unique<QProcess>();
        p->setProcessEnvironment(envFor(store));
        p->start(cliPath(), QStringList{QStringLiteral("train")} + kTinySpirals +
                                QStringList{QStringLiteral("--quiet"), QStringLiteral("--set"),
                                            QStringLiteral("ensemble.seed=%1").arg(i + 1)});
        QVERIFY(p->waitForStarted());
        processes.push_back(std::move(p));
    }
    for (auto& p : processes) {
        const Run r = ensemble::test::finish(*p);
        QVERIFY2(r.code == 0 && !r.err.contains(QStringLiteral("warning")),
                 qPrintable(describe(r)));
    }
    const json entries = listJson(store);
    QCOMPARE(entries.size(), std::size_t(3));
    std::set<std::uint64_t> seeds;
    for (const json& e : entries) {
        QCOMPARE(e["state"].get<std::string>(), std::string("finished"));
        seeds.insert(e["seed"].get<std::uint64_t>());
    }
    QVERIFY(seeds == (std::set<std::uint64_t>{1, 2, 3}));
}

void TestCliRuns::aResumedRunNamesTheRunItContinues() {
    const QString store = freshStore(QStringLiteral("resume"));
    const QString checkpoint = m_dir.filePath(QStringLiteral("resume.safetensors"));
    Run r = cli(store, QStringList{QStringLiteral("train")} + kTinySpirals +
                           QStringList{QStringLiteral("--checkpoint"), checkpoint,
                                       QStringLiteral("--quiet")});
    QVERIFY2(r.code == 0, qPrintable(describe(r)));
    r = cli(store, {QStringLiteral("train"), QStringLiteral("--resume"), checkpoint,
                    QStringLiteral("--set"), QStringLiteral("training.steps=60"),
                    QStringLiteral("--quiet")});
    QVERIFY2(r.code == 0, qPrintable(describe(r)));
    const json entries = listJson(store);
    QCOMPARE(entries.size(), std::size_t(2));
    QCOMPARE(entries[0]["kind"].get<std::string>(), std::string("resume"));
    QCOMPARE(entries[0]["parent"].get<std::int64_t>(), entries[1]["id"].get<std::int64_t>());
    QCOMPARE(entries[0]["relation"].get<std::string>(), std::string("continued"));
    QVERIFY(entries[1]["parent"].is_null());
}

// Ctrl-C: the entry ends cancelled. kill -9: the next program to open the store marks it
// interrupted (the file's integrity after a kill -9 is tst_run_store's).
void TestCliRuns::anInterruptedOrKilledRunSaysSo() {
    const QString store = freshStore(QStringLiteral("killed"));
    const QStringList longRun = {QStringLiteral("train"),
                                 QStringLiteral("--config"),
                                 QStringLiteral("spirals"),
                                 QStringLiteral("--set"),
                                 QStringLiteral("training.steps=100000000"),
                                 QStringLiteral("--set"),
                                 QStringLiteral("backend.kind=cpu")};
    for (const int signal : {SIGINT, SIGKILL}) {
        QProcess p;
        p.setProcessEnvironment(envFor(store));
        p.start(cliPath(), longRun);
        QVERIFY(p.waitForStarted());
        // Signalled once its entry is in the store, running.
        const std::int64_t before = signal == SIGINT ? 0 : 1;
        QTRY_VERIFY_WITH_TIMEOUT(RunStore::open(store.toStdString()).count({}) > before, 30000);
        ::kill(static_cast<pid_t>(p.processId()), signal);
        QVERIFY(p.waitForFinished(30000));
    }
    const json entries = listJson(store);
    QCOMPARE(entries.size(), std::size_t(2));
    QCOMPARE(entries[0]["state"].get<std::string>(), std::string("interrupted"));
    QCOMPARE(entries[1]["state"].get<std::string>(), std::string("cancelled"));
}

// A store that cannot be written: one warning, and the run trains and exits 0.
void TestCliRuns::anUnwritableStoreWarnsOnceAndTheRunTrains() {
    const QString corrupt = m_dir.filePath(QStringLiteral("corrupt.sqlite"));
    ensemble::test::writeBytes(corrupt, QByteArray(8192, 'x'));
    // A path no one can create, root included.
    const QString unreachable = QStringLiteral("/proc/ensemblelab-runs/runs.sqlite");
    for (const QString& store : {corrupt, unreachable}) {
        const Run r = cli(store, QStringList{QStringLiteral("train")} + kTinySpirals +
                                     QStringList{QStringLiteral("--quiet")});
        QVERIFY2(r.code == 0, qPrintable(describe(r)));
        QVERIFY2(r.err.count(QStringLiteral("warning:")) == 1, qPrintable(describe(r)));
        QVERIFY2(r.err.contains(QStringLiteral("--no-record")), qPrintable(describe(r)));
    }
    // The corrupt file is left as it was: nothing is lost by recording.
    QCOMPARE(QFileInfo(corrupt).size(), qint64(8192));
}

QTEST_GUILESS_MAIN(TestCliRuns)
#include "tst_cli_runs.moc"
