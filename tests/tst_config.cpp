// Config parsing: defaults, validation messages that name the key, per-member hyperparameters,
// --set overrides and the built-in presets.
#include <QtTest/QtTest>

#include <cmath>

#include "io/config.h"
#include "core/errors.h"
#include "test_support.h"

using namespace ensemble;
using nlohmann::json;

class TestConfig : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void emptyConfigTakesDefaults();
    void errorsNameTheKey_data();
    void errorsNameTheKey();
    void perMemberHyperparameters();
    void overridesSetDottedKeys();
    void everyPresetParses();
    void unknownConfigNamesThePresets();
    void epochsDetermineSteps();
};

void TestConfig::emptyConfigTakesDefaults() {
    const ExperimentConfig c = parseConfig(json::object());
    QCOMPARE(c.dataset.kind, std::string("spirals"));
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
    QTest::newRow("unknown section") << R"({"modle": {}})" << "modle: unknown section";
    QTest::newRow("unknown key") << R"({"model": {"hiden": [3]}})" << "model.hiden: unknown key";
    QTest::newRow("wrong type") << R"({"ensemble": {"members": "ten"}})"
                                << "ensemble.members: expected an integer";
    QTest::newRow("out of range") << R"({"ensemble": {"members": 0}})"
                                  << "ensemble.members: expected an integer in [1, 100000]";
    QTest::newRow("bad enum") << R"({"ensemble": {"bootstrap": "bagging"}})"
                              << "ensemble.bootstrap: expected one of none | resample | poisson";
    QTest::newRow("bad width") << R"({"model": {"hidden": [32, 0]}})" << "model.hidden[1]";
    QTest::newRow("lr list length") << R"({"ensemble": {"members": 3}, "optimizer": {"lr": [0.1, 0.2]}})"
                                    << "optimizer.lr: a list needs one value per member: expected 3";
    QTest::newRow("negative lr") << R"({"optimizer": {"lr": -1}})" << "optimizer.lr";
    QTest::newRow("bad log range") << R"({"optimizer": {"lr": {"log_uniform": [0, 1]}}})"
                                   << "optimizer.lr.log_uniform[0]";
    QTest::newRow("csv without path") << R"({"dataset": {"kind": "csv"}})" << "dataset.path";
    QTest::newRow("betas") << R"({"optimizer": {"betas": [0.9]}})" << "optimizer.betas";
    QTest::newRow("not an object") << R"([1, 2])" << "config: expected a JSON object";
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
    QCOMPARE(c.dataset.kind, std::string("moons"));
}

void TestConfig::everyPresetParses() {
    const std::vector<std::string> names = presetNames();
    for (const char* required : {"spirals", "spirals-bootstrap", "moons", "mnist-mlp"}) {
        QVERIFY2(std::find(names.begin(), names.end(), required) != names.end(), required);
    }
    for (const std::string& name : names) {
        const ExperimentConfig c = parseConfig(loadConfigJson(name));
        QVERIFY(c.ensemble.members >= 1);
    }
    const ExperimentConfig mnist = parseConfig(loadConfigJson("mnist-mlp"));
    QCOMPARE(mnist.model.hidden, (std::vector<int>{256, 256}));
    QCOMPARE(mnist.ensemble.members, 4);
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
    QVERIFY_THROWS_EXCEPTION(DataError, loadConfigJson(path.toStdString()));
}

void TestConfig::epochsDetermineSteps() {
    ExperimentConfig c = parseConfig(json::parse(R"({"training": {"steps": 7, "batch_size": 32}})"));
    QCOMPARE(c.totalSteps(1000), int64_t(7));
    c = parseConfig(json::parse(R"({"training": {"epochs": 1.5, "batch_size": 32}})"));
    QCOMPARE(c.totalSteps(1000), int64_t(47));  // ceil(1500 / 32)
}

QTEST_APPLESS_MAIN(TestConfig)
#include "tst_config.moc"
