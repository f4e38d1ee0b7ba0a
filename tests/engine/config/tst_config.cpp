// Config parsing: defaults, validation messages that name the key, per-member hyperparameters,
// --set overrides and the built-in presets.
#include <QtTest/QtTest>

#include <cmath>
#include <functional>

#include "config/command_line.h"
#include "config/config.h"
#include "config/config_schema.h"
#include "config/kind_tables.h"
#include "core/errors.h"
#include "support/invalid_configs.h"
#include "support/test_support.h"

using namespace ensemble;
using ensemble::test::shellWords;
using nlohmann::json;

class TestConfig : public QObject {
    Q_OBJECT

  private Q_SLOTS:
    void emptyConfigTakesDefaults();
    void errorsNameTheKey_data();
    void errorsNameTheKey();
    void perMemberHyperparameters();
    void switchedOffMembers();
    void overridesSetDottedKeys();
    void everyPresetParses();
    void unknownConfigNamesThePresets();
    void epochsDetermineSteps();
    void defaultsComeFromTheSchema();
    void errorsCarryKeyAndReason();
    void docsTableMatchesTheSchema();
    void docsKindTablesMatchTheRegistries();
    void enumNamesRoundTrip();
    void conditionalKeysApplyOnlyWhenTheirConditionHolds();
    void overridesDropBaseKeysTheyRuleOut();
    void fileErrorsCarryLineAndColumn();
    void invalidJsonCarriesItsPosition();
    void locateKeyFindsNestedNames();
    void invalidUtf8InSetIsAConfigError();
    void configTextInMemoryComposesAsItsFile();
    void defaultsAreTheSchemasEveryCall();
    void trainCommandLineComposesBack_data();
    void trainCommandLineComposesBack();
    void valuesThatCannotTrainWarn();
};

void TestConfig::emptyConfigTakesDefaults() {
    const ExperimentConfig c = parseConfig(json::object());
    QVERIFY(c.dataset.kind == DatasetKind::Spirals);
    QCOMPARE(c.ensemble.members, 8);
    QCOMPARE(c.optimizer.lr.size(), std::size_t(8));
    QCOMPARE(c.model.hidden, (std::vector<int>{32, 32}));
    // The stored JSON is complete: parsing it again gives the same config.
    const ExperimentConfig again = parseConfig(c.json);
    QCOMPARE(again.json, c.json);
}

void TestConfig::errorsNameTheKey_data() {
    QTest::addColumn<QString>("config");
    QTest::addColumn<QString>("expected");
    for (const ensemble::test::InvalidConfig& row : ensemble::test::invalidConfigs()) {
        QTest::newRow(row.name.c_str())
            << QString::fromStdString(row.config) << QString::fromStdString(row.expected);
    }
}

void TestConfig::errorsNameTheKey() {
    QFETCH(QString, config);
    QFETCH(QString, expected);
    try {
        parseConfig(json::parse(config.toStdString()));
        QFAIL("expected a ConfigError");
    } catch (const ConfigError& e) {
        QVERIFY2(QString::fromStdString(e.what()).contains(expected), e.what());
    }
}

// ensemble.switched_off: indices in any order (kept ascending), changed by schedule entries at
// their steps; an entry's list replaces the one before.
void TestConfig::switchedOffMembers() {
    const ExperimentConfig c = parseConfig(json::parse(R"({
        "ensemble": {"members": 4, "switched_off": [3, 0]},
        "training": {"schedule": [
            {"step": 30, "set": {"ensemble.switched_off": []}},
            {"step": 10, "set": {"optimizer.lr": 0.5}},
            {"step": 10, "set": {"ensemble.switched_off": [2]}}]}})"));
    QCOMPARE(c.ensemble.switchedOff, (std::vector<int>{0, 3}));
    QCOMPARE(c.switchedOffAt(0), (std::vector<int>{0, 3}));
    QCOMPARE(c.switchedOffAt(10), std::vector<int>{2});
    QCOMPARE(c.switchedOnAt(29), (std::vector<uint8_t>{1, 1, 0, 1}));
    QCOMPARE(c.switchedOnAt(30), (std::vector<uint8_t>{1, 1, 1, 1}));
    QVERIFY(c.training.schedule[0].lr.size() == 4 && !c.training.schedule[0].switchedOff);
    QCOMPARE(*c.training.schedule[1].switchedOff, std::vector<int>{2});
    QVERIFY(keySpec("ensemble.switched_off").live);
    QVERIFY(schedulable(keySpec("ensemble.switched_off")));
}

void TestConfig::perMemberHyperparameters() {
    const ExperimentConfig c = parseConfig(json::parse(R"({
        "ensemble": {"members": 4},
        "optimizer": {"lr": {"log_uniform": [0.001, 0.1]}, "weight_decay": [0, 0.1, 0.2, 0.3],
                      "momentum": 0.5}})"));
    // lo * (hi/lo)^(k/(K-1)): 0.001, 0.001 * 100^(1/3), 0.001 * 100^(2/3), 0.1.
    ENSEMBLE_COMPARE_NEAR(c.optimizer.lr[0], 0.001, 1e-15);
    ENSEMBLE_COMPARE_NEAR(c.optimizer.lr[1], 0.001 * std::pow(100.0, 1.0 / 3.0), 1e-15);
    ENSEMBLE_COMPARE_NEAR(c.optimizer.lr[2], 0.001 * std::pow(100.0, 2.0 / 3.0), 1e-15);
    ENSEMBLE_COMPARE_NEAR(c.optimizer.lr[3], 0.1, 1e-15);
    QCOMPARE(c.optimizer.weightDecay, (std::vector<double>{0, 0.1, 0.2, 0.3}));
    QCOMPARE(c.optimizer.momentum, (std::vector<double>(4, 0.5)));
}

void TestConfig::overridesSetDottedKeys() {
    json root = json::object();
    applyOverride(root, "ensemble.members=100");
    applyOverride(root, "model.hidden=[64,64]");
    applyOverride(root, "dataset.kind=moons");  // not JSON: read as a string
    applyOverride(root, "dataset.path=/tmp/a=b.csv");
    QCOMPARE(root["ensemble"]["members"].get<int>(), 100);
    QCOMPARE(root["model"]["hidden"], json::parse("[64, 64]"));
    QCOMPARE(root["dataset"]["kind"].get<std::string>(), std::string("moons"));
    QCOMPARE(root["dataset"]["path"].get<std::string>(), std::string("/tmp/a=b.csv"));
    QVERIFY_THROWS_EXCEPTION(ConfigError, applyOverride(root, "novalue"));
    QVERIFY_THROWS_EXCEPTION(ConfigError, applyOverride(root, "ensemble.members.x=1"));
    const ExperimentConfig c = parseConfig(root);
    QCOMPARE(c.ensemble.members, 100);
    QVERIFY(c.dataset.kind == DatasetKind::Moons);
}

void TestConfig::everyPresetParses() {
    const std::vector<std::string> names = presetNames();
    for (const char* required : {"spirals", "spirals-bootstrap", "moons", "mnist-mlp", "mnist-cnn",
                                 "fashion-mnist-cnn", "cubic", "sine", "linear", "mnist-active"}) {
        QVERIFY2(std::find(names.begin(), names.end(), required) != names.end(), required);
    }
    for (const std::string& name : names) {
        const ExperimentConfig c = parseConfig(loadConfigJson(name));
        QVERIFY(c.ensemble.members >= 1);
    }
    const ExperimentConfig mnist = parseConfig(loadConfigJson("mnist-mlp"));
    QCOMPARE(mnist.model.hidden, (std::vector<int>{256, 256}));
    QCOMPARE(mnist.ensemble.members, 4);
    // The CNN presets are the recipe (seed 000): K = 4, SGD 0.1 / 0.9, batch 128.
    for (const char* name : {"mnist-cnn", "fashion-mnist-cnn"}) {
        const ExperimentConfig cnn = parseConfig(loadConfigJson(name));
        QVERIFY(cnn.model.kind == ModelKind::Cnn);
        QCOMPARE(cnn.model.layers, recipeLayers());
        QCOMPARE(cnn.ensemble.members, 4);
        QVERIFY(cnn.optimizer.kind == OptimizerKind::Sgd);
        QCOMPARE(cnn.optimizer.lr.front(), 0.1);
        QCOMPARE(cnn.training.batchSize, 128);
    }
}

void TestConfig::unknownConfigNamesThePresets() {
    try {
        loadConfigJson("/no/such/file.json");
        QFAIL("expected a ConfigError");
    } catch (const ConfigError& e) {
        QVERIFY(QString::fromStdString(e.what()).contains("spirals-bootstrap"));
    }
    QTemporaryDir dir;
    const QString path = dir.filePath("bad.json");
    QFile f(path);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write("{\"model\": ");
    f.close();
    QVERIFY_THROWS_EXCEPTION(ConfigError, loadConfigJson(path.toStdString()));
}

void TestConfig::epochsDetermineSteps() {
    ExperimentConfig c =
        parseConfig(json::parse(R"({"training": {"steps": 7, "batch_size": 32}})"));
    QCOMPARE(c.totalSteps(1000), int64_t(7));
    c = parseConfig(json::parse(R"({"training": {"epochs": 1.5, "batch_size": 32}})"));
    QCOMPARE(c.totalSteps(1000), int64_t(47));  // ceil(1500 / 32)
}

void TestConfig::defaultsComeFromTheSchema() {
    const ExperimentConfig c = parseConfig(json::object());
    QCOMPARE(c.training.steps, int64_t(2000));  // config.h once said 1000, config.cpp 2000
    for (const KeySpec& spec : configSchema()) {
        if (!keyApplies(spec, c.json)) {
            QVERIFY2(!c.json[spec.section()].contains(spec.name()), spec.key.c_str());
            continue;
        }
        // Every applicable key is stored, at the schema's default.
        QVERIFY2(c.json[spec.section()].contains(spec.name()), spec.key.c_str());
        QCOMPARE(c.json[spec.section()][spec.name()], spec.defaultValue);
    }
    QCOMPARE(defaultConfigJson(), c.json);
}

void TestConfig::errorsCarryKeyAndReason() {
    try {
        parseConfig(json::parse(R"({"ensemble": {"members": 0}})"));
        QFAIL("expected a ConfigError");
    } catch (const ConfigError& e) {
        QCOMPARE(e.key(), std::string("ensemble.members"));
        QCOMPARE(e.reason(), std::string("expected an integer in [1, 100000], got 0"));
        QCOMPARE(e.kind(), ErrorKind::Config);
        QCOMPARE(std::string(e.what()), e.key() + ": " + e.reason());
    }
    try {
        parseConfig(json::parse(R"({"model": {"hidden": [8, -1]}})"));
        QFAIL("expected a ConfigError");
    } catch (const ConfigError& e) {
        QCOMPARE(e.key(), std::string("model.hidden[1]"));
    }
}

// docs/configuration.md's configuration table is the schema's, word for word: `ensemble-cli
// schema` prints it. On a mismatch the expected table is shown, ready to paste.
void TestConfig::docsTableMatchesTheSchema() {
    QFile readme(ensemble::test::sourceDir() + QStringLiteral("/docs/configuration.md"));
    QVERIFY2(readme.open(QIODevice::ReadOnly), qPrintable(readme.fileName()));
    const QString text = QString::fromUtf8(readme.readAll());
    const QString begin = QStringLiteral("<!-- config-table:begin -->\n");
    const QString end = QStringLiteral("<!-- config-table:end -->");
    const qsizetype from = text.indexOf(begin);
    const qsizetype to = text.indexOf(end);
    QVERIFY2(from >= 0 && to > from, "docs/configuration.md has no config-table markers");
    const QString table = text.mid(from + begin.size(), to - from - begin.size());
    const QString expected = QString::fromStdString(configTableMarkdown());
    QVERIFY2(table == expected,
             qPrintable(QStringLiteral(
                            "docs/configuration.md's table differs from the schema; expected:\n") +
                        expected));
    // Every conditional key's row says when it applies, with the word "only".
    for (const KeySpec& spec : configSchema()) {
        if (!spec.when.always()) {
            const QString key = QStringLiteral("| `%1` |").arg(QString::fromStdString(spec.key));
            const qsizetype row = table.indexOf(key);
            QVERIFY(row >= 0);
            QVERIFY(table.mid(row, table.indexOf(QLatin1Char('\n'), row) - row)
                        .contains(QStringLiteral("only when")));
        }
    }
}

// docs/configuration.md's dataset and model kind tables are the registries' rows
// (config/kind_tables.h): a new kind shows up there, or this test prints the table to paste.
void TestConfig::docsKindTablesMatchTheRegistries() {
    QFile doc(ensemble::test::sourceDir() + QStringLiteral("/docs/configuration.md"));
    QVERIFY2(doc.open(QIODevice::ReadOnly), qPrintable(doc.fileName()));
    const QString text = QString::fromUtf8(doc.readAll());
    const QString begin = QStringLiteral("<!-- kind-tables:begin -->\n");
    const qsizetype from = text.indexOf(begin);
    const qsizetype to = text.indexOf(QStringLiteral("<!-- kind-tables:end -->"));
    QVERIFY2(from >= 0 && to > from, "docs/configuration.md has no kind-tables markers");
    const QString tables = text.mid(from + begin.size(), to - from - begin.size());
    const QString expected = QString::fromStdString(kindTablesMarkdown());
    QVERIFY2(tables == expected,
             qPrintable(QStringLiteral("docs/configuration.md's kind tables differ from the "
                                       "registries; expected:\n") +
                        expected));
    for (const DatasetKindInfo& row : EnumNames<DatasetKind>::table) {
        QVERIFY(tables.contains(QStringLiteral("| `%1` |").arg(QString::fromUtf8(row.name))));
    }
}

void TestConfig::enumNamesRoundTrip() {
    for (const auto& entry : EnumNames<BootstrapMode>::table) {
        BootstrapMode back{};
        QVERIFY(enumFromName(toString(entry.value), back));
        QVERIFY(back == entry.value);
    }
    OptimizerKind kind{};
    QVERIFY(!enumFromName("adagrad", kind));
    QCOMPARE(std::string(toString(Activation::Gelu)), std::string("gelu"));
    QCOMPARE(std::string(toString(BackendKind::Cuda)), std::string("cuda"));
    // The schema's choices are the enum's names.
    const auto& choices = keySpec("optimizer.kind").choices;
    QCOMPARE(choices.size(), std::size(EnumNames<OptimizerKind>::table));
}

void TestConfig::conditionalKeysApplyOnlyWhenTheirConditionHolds() {
    // model.hidden applies only to MLPs: today's files (no model.kind) keep loading.
    const ExperimentConfig mlp = parseConfig(json::parse(R"({"model": {"hidden": [4]}})"));
    QVERIFY(mlp.model.kind == ModelKind::Mlp);
    QCOMPARE(mlp.model.hidden, std::vector<int>{4});
    QVERIFY(keyApplies(keySpec("model.hidden"), mlp.json));
    // A condition that does not hold: the key is neither filled nor accepted.
    json other = json::parse(R"({"model": {"kind": "cnn"}})");
    QVERIFY(!keyApplies(keySpec("model.hidden"), other));
    QVERIFY(!withDefaults(other)["model"].contains("hidden"));
    other["model"]["hidden"] = json::array({8});
    try {
        checkConfigKeys(other);
        QFAIL("expected a ConfigError");
    } catch (const ConfigError& e) {
        QCOMPARE(e.key(), std::string("model.hidden"));
        QVERIFY2(std::string(e.what()).find("only when model.kind is mlp") != std::string::npos,
                 e.what());
    }
    QCOMPARE(conditionText(keySpec("model.hidden").when, true),
             std::string("only when `model.kind` is `mlp`"));
}

void TestConfig::overridesDropBaseKeysTheyRuleOut() {
    const json base = json::parse(R"({"model": {"kind": "mlp", "hidden": [64]}})");
    // A later layer that switches the kind drops the base's hidden, with a notice.
    std::vector<std::string> notices;
    const json merged = overlayConfig(base, json::parse(R"({"model": {"kind": "cnn"}})"), &notices);
    QVERIFY(!merged["model"].contains("hidden"));
    QCOMPARE(notices.size(), std::size_t(1));
    QVERIFY2(notices[0].find("model.hidden") == 0, notices[0].c_str());
    // The same switch with hidden in the same layer is an error naming the key.
    QVERIFY_THROWS_EXCEPTION(
        ConfigError,
        overlayConfig(base, json::parse(R"({"model": {"kind": "cnn", "hidden": [8]}})"), nullptr));
    // A layer that changes nothing conditional keeps everything; values replace, never merge.
    notices.clear();
    const json lr = overlayConfig(
        json::parse(R"({"optimizer": {"lr": {"log_uniform": [0.001, 0.1]}}})"),
        json::parse(R"({"optimizer": {"lr": 0.5}, "model": {"hidden": [3]}})"), &notices);
    QVERIFY(notices.empty());
    QCOMPARE(lr["optimizer"]["lr"], json(0.5));
    QCOMPARE(lr["model"]["hidden"], json::parse("[3]"));
    // --set lists compose the same way.
    QTemporaryDir dir;
    const QString path = dir.filePath("base.json");
    QFile f(path);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write(R"({"ensemble": {"members": 3}})");
    f.close();
    const ComposedConfig composed =
        composeConfig(path.toStdString(), {"ensemble.members=5", "model.hidden=[2]"});
    QCOMPARE(composed.json["ensemble"]["members"], json(5));
    QCOMPARE(parseConfig(composed).model.hidden, std::vector<int>{2});
}

void TestConfig::fileErrorsCarryLineAndColumn() {
    QTemporaryDir dir;
    const QString path = dir.filePath("bad-members.json");
    QFile f(path);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write(
        "{\n  \"dataset\": {\"kind\": \"moons\"},\n  \"ensemble\": {\n    \"members\": 0\n  "
        "}\n}\n");
    f.close();
    try {
        parseConfig(composeConfig(path.toStdString(), {}));
        QFAIL("expected a ConfigError");
    } catch (const ConfigError& e) {
        QCOMPARE(e.key(), std::string("ensemble.members"));
        QCOMPARE(e.position().file, path.toStdString());
        QCOMPARE(e.position().line, int64_t(4));
        QCOMPARE(e.position().column, int64_t(5));
        QVERIFY2(std::string(e.what()).find(":4:5: ensemble.members: expected an integer") !=
                     std::string::npos,
                 e.what());
    }
    // The same key fixed by --set: the file's position no longer applies, the error is gone.
    QCOMPARE(
        parseConfig(composeConfig(path.toStdString(), {"ensemble.members=2"})).ensemble.members, 2);
    // A bad --set value names the key without a file position.
    try {
        parseConfig(composeConfig(path.toStdString(), {"ensemble.members=-3"}));
        QFAIL("expected a ConfigError");
    } catch (const ConfigError& e) {
        QCOMPARE(e.position().line, int64_t(0));
    }
}

void TestConfig::invalidJsonCarriesItsPosition() {
    QTemporaryDir dir;
    const QString path = dir.filePath("broken.json");
    QFile f(path);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write("{\n  \"model\": {\"hidden\": [3,]}\n}\n");
    f.close();
    try {
        loadConfigJson(path.toStdString());
        QFAIL("expected a ConfigError");
    } catch (const ConfigError& e) {
        QCOMPARE(e.kind(), ErrorKind::Json);
        QCOMPARE(e.position().line, int64_t(2));
        QCOMPARE(e.position().column, int64_t(26));  // the "]" after the trailing comma
    }
}

void TestConfig::locateKeyFindsNestedNames() {
    const std::string text =
        "{\"model\": {\"hidden\": [1, 2]},\n \"optimizer\": {\"betas\": [0.9, 0.99],\n"
        "  \"lr\": {\"log_uniform\": [0, 1]}}}";
    FilePosition p = locateKey(text, "optimizer.lr.log_uniform[0]");
    QCOMPARE(p.line, int64_t(3));
    QCOMPARE(p.column, int64_t(10));
    p = locateKey(text, "model.hidden[1]");
    QCOMPARE(p.line, int64_t(1));
    QCOMPARE(p.column, int64_t(12));
    p = locateKey(text, "optimizer.eps");  // not written: its section's position
    QCOMPARE(p.line, int64_t(2));
    QCOMPARE(p.column, int64_t(2));
    QCOMPARE(locateKey(text, "backend.kind").line, int64_t(0));
}

// Found by fuzz_config: a --set value that is not JSON is kept as a string, bytes as given; in
// an error message json's dump() threw its type_error 316 ("invalid UTF-8 byte") instead of
// the ConfigError naming the key.
void TestConfig::invalidUtf8InSetIsAConfigError() {
    for (const char* assignment :
         {"model.hidden=\x97\x83", "ensemble.members=a\xff", "optimizer.lr=\xc3",
          "optimizer.betas=\x80", "dataset.kind=\xfe"}) {
        json root = json::object();
        applyOverride(root, assignment);
        try {
            parseConfig(root);
            QFAIL(assignment);
        } catch (const ConfigError& e) {
            QVERIFY2(!e.key().empty(), e.what());
        }
    }
}

// composeConfigText (the fuzz target's path) gives what composeConfig gives for the same text
// in a file: the merged JSON, the notices, the text and errors at the same line and column.
void TestConfig::configTextInMemoryComposesAsItsFile() {
    QTemporaryDir dir;
    const QString path = dir.filePath("layered.json");
    const std::string text =
        "{\n  \"model\": {\"kind\": \"mlp\", \"hidden\": [4]},\n  \"ensemble\": {\n"
        "    \"members\": 0\n  }\n}\n";
    QFile f(path);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write(text.data(), static_cast<qint64>(text.size()));
    f.close();
    const std::string origin = path.toStdString();
    for (const std::vector<std::string>& sets :
         {std::vector<std::string>{}, std::vector<std::string>{"model.kind=cnn"},
          std::vector<std::string>{"ensemble.members=2", "optimizer.lr=0.5"}}) {
        const ComposedConfig fromFile = composeConfig(origin, sets);
        const ComposedConfig inMemory = composeConfigText(text, origin, sets);
        QCOMPARE(inMemory.json, fromFile.json);
        QCOMPARE(inMemory.notices, fromFile.notices);
        QCOMPARE(inMemory.origin, fromFile.origin);
        QCOMPARE(inMemory.text, fromFile.text);
        QCOMPARE(inMemory.overrides, fromFile.overrides);
    }
    for (const auto& compose :
         {std::function<ComposedConfig()>([&] { return composeConfig(origin, {}); }),
          std::function<ComposedConfig()>([&] { return composeConfigText(text, origin, {}); })}) {
        try {
            parseConfig(compose());
            QFAIL("expected a ConfigError");
        } catch (const ConfigError& e) {
            QCOMPARE(e.position().file, origin);
            QCOMPARE(e.position().line, int64_t(4));
            QCOMPARE(e.position().column, int64_t(5));
        }
    }
    // Invalid JSON in memory names the origin, line and column, as a file's does.
    try {
        composeConfigText("{\n  \"model\": {\"hidden\": [3,]}\n}\n", "mem.json", {});
        QFAIL("expected a ConfigError");
    } catch (const ConfigError& e) {
        QCOMPARE(e.kind(), ErrorKind::Json);
        QCOMPARE(e.position().file, std::string("mem.json"));
        QCOMPARE(e.position().line, int64_t(2));
        QCOMPARE(e.position().column, int64_t(26));
    }
    // JSON that is not an object (an array) is refused with the file named, never read as the
    // defaults (the CLI trained the spirals preset on it).
    try {
        composeConfigText("[1, 2]", "list.json", {});
        QFAIL("expected a ConfigError");
    } catch (const ConfigError& e) {
        QCOMPARE(e.key(), std::string("config"));
        QCOMPARE(e.position().file, std::string("list.json"));
    }
}

// defaultConfigJson is built once and copied: a caller's edit of its copy never reaches the
// next caller, and the copy is withDefaults of an empty config.
void TestConfig::defaultsAreTheSchemasEveryCall() {
    json first = defaultConfigJson();
    QCOMPARE(first, withDefaults(json::object()));
    first["ensemble"]["members"] = 77;
    first.erase("model");
    QCOMPARE(defaultConfigJson(), withDefaults(json::object()));
    // Every row is found by its key, and no other key is.
    for (const KeySpec& spec : configSchema()) {
        QCOMPARE(findKeySpec(spec.key), &spec);
    }
    QVERIFY(findKeySpec("ensemble.member") == nullptr);
    QVERIFY(findKeySpec("") == nullptr);
}

void TestConfig::trainCommandLineComposesBack_data() {
    QTest::addColumn<QString>("preset");
    QTest::addColumn<QString>("edits");
    QTest::newRow("defaults, no edit") << ""
                                       << "{}";
    QTest::newRow("spirals, no edit") << "spirals"
                                      << "{}";
    QTest::newRow("spirals, edited") << "spirals"
                                     << R"({"ensemble": {"members": 3, "bootstrap": "poisson"},
               "optimizer": {"lr": [0.1, 0.01, 0.001]}, "training": {"steps": 123}})";
    QTest::newRow("a csv path with a quote and a blank")
        << ""
        << R"({"dataset": {"kind": "csv", "path": "/tmp/it's here.csv"}})";
    QTest::newRow("moons, another model")
        << "moons"
        << R"({"model": {"hidden": [8, 4], "activation": "tanh"}})";
}

void TestConfig::trainCommandLineComposesBack() {
    QFETCH(QString, preset);
    QFETCH(QString, edits);
    const json base =
        preset.isEmpty() ? json::object() : json::parse(presetText(preset.toStdString()));
    const json config = overlayConfig(base, json::parse(edits.toStdString()), nullptr);
    const std::string line = trainCommandLine(preset.toStdString(), config);
    const QStringList words = shellWords(QString::fromStdString(line));
    QVERIFY(words.size() >= 2);
    QCOMPARE(words[0], QStringLiteral("ensemble-cli"));
    QCOMPARE(words[1], QStringLiteral("train"));
    std::string presetWord;
    std::vector<std::string> assignments;
    for (qsizetype i = 2; i + 1 < words.size(); i += 2) {
        if (words[i] == QStringLiteral("--config")) {
            presetWord = words[i + 1].toStdString();
        } else {
            QCOMPARE(words[i], QStringLiteral("--set"));
            assignments.push_back(words[i + 1].toStdString());
        }
    }
    QCOMPARE(QString::fromStdString(presetWord), preset);
    const json composed = composeConfig(presetWord, assignments).json;
    if (json::parse(edits.toStdString()).value("dataset", json::object()).contains("path")) {
        // A csv file that does not exist cannot be parsed: compare the composed keys.
        QCOMPARE(withDefaults(composed), withDefaults(config));
    } else {
        QCOMPARE(parseConfig(composed).json, parseConfig(config).json);
    }
    if (json::parse(edits.toStdString()).empty()) {
        QCOMPARE(assignments.size(), std::size_t(0));
    }
}

// A learning rate of 0 parses (an evaluation of the initial members is a valid run) but cannot
// train: a warning per value outside the row's training range, named as an error would be, in
// every form the key takes; a log_uniform range cannot reach 0 (an error, not a warning).
void TestConfig::valuesThatCannotTrainWarn() {
    const KeySpec& lr = keySpec("optimizer.lr");
    QVERIFY(lr.trains.has_value());
    QCOMPARE(lr.trains->text(), std::string("(0, 10000]"));
    QVERIFY(!lr.trains->holds(0.0));
    QVERIFY(lr.trains->holds(1e-9));
    QVERIFY(lr.trains->holds(1e4));

    QVERIFY(configWarnings(json::object()).empty());  // the defaults train
    const json zero = {{"optimizer", {{"lr", 0}}}};
    (void)parseConfig(zero);  // valid
    std::vector<ConfigWarning> w = configWarnings(zero);
    QCOMPARE(w.size(), std::size_t{1});
    QCOMPARE(w[0].key, std::string("optimizer.lr"));
    QCOMPARE(w[0].text(), std::string("optimizer.lr: 0 cannot train: a learning rate of 0 leaves "
                                      "the member as initialised (trains in (0, 10000])"));

    const json list = {{"ensemble", {{"members", 3}}},
                       {"optimizer", {{"lr", {0.1, 0, 0.0}}}},
                       {"training",
                        {{"schedule",
                          {{{"step", 5}, {"set", {{"optimizer.lr", 0}}}},
                           {{"step", 9}, {"set", {{"optimizer.lr", 0.2}}}}}}}}};
    (void)parseConfig(list);
    w = configWarnings(list);
    QCOMPARE(w.size(), std::size_t{3});
    QCOMPARE(w[0].key, std::string("optimizer.lr[1]"));
    QCOMPARE(w[1].key, std::string("optimizer.lr[2]"));
    QCOMPARE(w[2].key, std::string("training.schedule[0].set.optimizer.lr"));

    QVERIFY(configWarnings({{"optimizer", {{"lr", {{"log_uniform", {1e-4, 0.1}}}}}}}).empty());
    QVERIFY_THROWS_EXCEPTION(
        ConfigError, parseConfig(json{{"optimizer", {{"lr", {{"log_uniform", {0, 0.1}}}}}}}));

    // The schema's JSON carries the range for tools; the docs' table row says it.
    const json schema = configSchemaJson();
    const auto row = std::find_if(schema.begin(), schema.end(),
                                  [](const json& r) { return r["key"] == "optimizer.lr"; });
    QVERIFY(row != schema.end());
    QCOMPARE((*row)["trains"]["min"].get<double>(), 0.0);
    QCOMPARE((*row)["trains"]["min_exclusive"].get<bool>(), true);
    QVERIFY(configTableMarkdown().find("trains in (0, 10000]") != std::string::npos);
    QVERIFY(plainHelp(lr).find("Trains in (0, 10000]") != std::string::npos);
}

QTEST_APPLESS_MAIN(TestConfig)
#include "tst_config.moc"
