// The app's run control as a person uses it: Continue after a run stops at its limit (bit for
// bit one longer run), Stop after raised without Reset, "until paused" for 2-D presets, and the
// steps actually trained in a saved experiment.
#include <QAction>
#include <QApplication>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QFrame>
#include <QLabel>
#include <QLineEdit>
#include <QMenu>
#include <QMessageBox>
#include <QProcess>
#include <QPushButton>
#include <QSemaphore>
#include <QSignalSpy>
#include <QSpinBox>
#include <QStandardPaths>
#include <QStatusBar>
#include <QTemporaryDir>
#include <QtTest>

#include <algorithm>
#include <cstring>
#include <memory>

#include "action_reason.h"
#include "backend/cpu/cpu_backend.h"
#include "config/config.h"
#include "controller/engine_controller.h"
#include "controller/run_description.h"
#include "controller/run_price.h"
#include "io/model_io.h"
#include "main_window.h"
#include "panels/experiment_panel.h"
#include "runs/run_store.h"
#include "support/gui_test_support.h"
#include "support/test_support.h"
#include "train/memory_estimate.h"
#include "train/trainer.h"
#include "widgets/busy_overlay.h"

using ensemble::test::describe;
using ensemble::test::engineIdle;
using ensemble::test::exportedParameters;
using ensemble::test::makeWindow;
using ensemble::test::Run;
using ensemble::test::runCli;
using ensemble::test::sameBitsNonEmpty;
using ensemble::test::ScopedRunStore;
using ensemble::test::shellWords;
using ensemble::test::waitFresh;
using ensemble::test::waitSnapshot;
using ensemble::test::whenModal;
using ensemble::ui::MainWindow;
using ensemble::ui::SnapshotPtr;

namespace {

// The window suites' small run as this suite trains it: K = 3 on resampled batches, on one
// thread as the engine's own run here.
nlohmann::json resampledRun(int64_t steps) {
    return ensemble::test::smallConfig(
        {.members = 3, .steps = steps, .threads = 1, .bootstrap = "resample"});
}

std::vector<float> engineParameters(const nlohmann::json& config, int64_t steps) {
    const ensemble::ExperimentConfig c = ensemble::parseConfig(config);
    ensemble::Trainer t(c, ensemble::loadDataSplit(c.dataset),
                        std::make_unique<ensemble::CpuBackend>(1));
    t.setTotalSteps(steps);
    t.runSteps(steps);
    return t.parameters();
}

}  // namespace

class TestGuiRun : public QObject {
    Q_OBJECT

  private Q_SLOTS:
    void initTestCase();
    void continueAfterStopEqualsOneLongerRun();
    void raisingTheLimitReenablesTrainWithoutReset();
    void twoDimensionalPresetPlaysUntilPaused();
    void liveLearningRateEditEqualsItsReplay();
    void memberSwitchesEqualTheirReplay();
    void restartKeyRaisesTheBanner();
    void exportWaitsForATrainedStep();
    void exportedConfigReplaysToItsWeights();
    void stoppedRunShowsTheFiguresEvalGives();
    void choosingAPresetShowsItsDataWithoutReset();
    void aRunIsPricedWithTheWindowsShare();
    void aLargeRunAsksBeforeItStarts();
    void aRunAboveTheMemoryIsRefusedWithBothShares();
    void cancelStopsTheSetupOfARun();
    void everyRunIsRecordedUntilItIsReplaced();
    void theWindowAndTwoCliProcessesRecordTogether();
};

void TestGuiRun::initTestCase() {
    ensemble::test::isolateSettings();
}

void TestGuiRun::continueAfterStopEqualsOneLongerRun() {
    QTemporaryDir dir;
    const nlohmann::json config = resampledRun(40);
    auto w = makeWindow();
    w->loadExperiment(config, QString());  // an explicit file: steps, not until paused
    QVERIFY(!w->panel()->untilPaused());
    QVERIFY(waitFresh(*w));
    w->trainAction()->trigger();
    QVERIFY(waitSnapshot(*w, [](const auto& s) { return s.step == 40 && !s.running; }));
    QVERIFY(waitSnapshot(*w, [](const auto& s) { return s.finished; }));
    QCoreApplication::processEvents();
    // Stopped at its limit: Train became Continue, enabled, same shortcut.
    QCOMPARE(w->trainAction()->text(), QStringLiteral("Continue"));
    QVERIFY(w->trainAction()->isEnabled());
    QCOMPARE(w->trainAction()->shortcut(), QKeySequence(Qt::Key_Space));
    w->trainAction()->trigger();
    QVERIFY(waitSnapshot(*w, [](const auto& s) { return s.step == 80 && !s.running; }));
    QCOMPARE(w->controller()->snapshot()->totalSteps, int64_t{80});
    // Another block of the same length, from where it was: one 80-step run, bit for bit.
    QVERIFY(
        sameBitsNonEmpty(exportedParameters(*w, dir, "continued"), engineParameters(config, 80)));
}

void TestGuiRun::raisingTheLimitReenablesTrainWithoutReset() {
    auto w = makeWindow();
    w->loadExperiment(resampledRun(30), QString());
    QVERIFY(waitFresh(*w));
    const uint64_t run = w->controller()->currentRunId();
    w->trainAction()->trigger();
    QVERIFY(waitSnapshot(*w, [](const auto& s) { return s.step == 30 && s.finished; }));
    // Raise Stop after in the panel, as a person types it: the run goes on, no Reset.
    auto* steps = w->panel()->findChild<QSpinBox*>(QStringLiteral("stopAfterSteps"));
    QVERIFY(steps != nullptr);
    QCOMPARE(steps->value(), 30);
    steps->setValue(55);
    QVERIFY(waitSnapshot(*w, [](const auto& s) { return s.totalSteps == 55 && !s.finished; }));
    QCoreApplication::processEvents();
    QCOMPARE(w->trainAction()->text(), QStringLiteral("Train"));
    QVERIFY(w->trainAction()->isEnabled());
    w->trainAction()->trigger();
    QVERIFY(waitSnapshot(*w, [](const auto& s) { return s.step == 55 && !s.running; }));
    QCOMPARE(w->controller()->currentRunId(), run);  // the same run, continued
}

void TestGuiRun::twoDimensionalPresetPlaysUntilPaused() {
    QTemporaryDir dir;
    auto w = makeWindow();
    nlohmann::json preset = nlohmann::json::parse(ensemble::presetText("spirals"));
    preset["backend"]["kind"] = "cpu";
    preset["ensemble"]["members"] = 2;  // small and short: still loaded as the preset
    preset["training"]["steps"] = 50;
    w->loadExperiment(preset, QStringLiteral("spirals"));
    QVERIFY(w->panel()->untilPaused());
    QVERIFY(waitFresh(*w));
    const int64_t presetSteps = preset["training"]["steps"].get<int64_t>();
    QVERIFY(waitSnapshot(*w, [](const auto& s) { return s.untilPaused; }));
    w->controller()->trainTo(presetSteps + 10);  // past the preset's own length
    QVERIFY(waitSnapshot(
        *w, [&](const auto& s) { return s.step == presetSteps + 10 && !s.running; }, 60000));
    QVERIFY(!w->controller()->snapshot()->finished);
    // Saved, the experiment carries the steps actually trained.
    const QString path = dir.filePath(QStringLiteral("played.json"));
    QString error;
    QVERIFY2(w->saveExperiment(path, &error), qPrintable(error));
    const nlohmann::json saved = ensemble::loadConfigJson(path.toStdString());
    QCOMPARE(saved["training"]["steps"].get<int64_t>(), presetSteps + 10);
    // Opening that file is explicit: it stops after its steps.
    w->loadExperiment(saved, QString());
    QVERIFY(!w->panel()->untilPaused());
}

// The learning rate changed mid-run in the panel applies without Reset, is recorded in the
// run's schedule, and the saved experiment replays to the same weights, bit for bit.
void TestGuiRun::liveLearningRateEditEqualsItsReplay() {
    QTemporaryDir dir;
    auto w = makeWindow();
    w->loadExperiment(resampledRun(60), QString());
    QVERIFY(waitFresh(*w));
    const uint64_t run = w->controller()->currentRunId();
    w->controller()->trainTo(20);
    QVERIFY(waitSnapshot(*w, [](const auto& s) { return s.step == 20 && !s.running; }));
    auto* lr = w->panel()->findChild<QLineEdit*>(QStringLiteral("learningRateValue"));
    QVERIFY(lr != nullptr);
    lr->setText(QStringLiteral("0.05"));
    QVERIFY(waitSnapshot(*w, [](const auto& s) { return s.schedule.size() == 1; }));
    QCOMPARE(w->controller()->snapshot()->schedule[0]["step"].get<int64_t>(), int64_t{20});
    w->trainAction()->trigger();
    QVERIFY(waitSnapshot(*w, [](const auto& s) { return s.step == 60 && !s.running; }));
    QCOMPARE(w->controller()->currentRunId(), run);  // no Reset happened
    const std::vector<float> app = exportedParameters(*w, dir, "live");

    const QString path = dir.filePath(QStringLiteral("live.json"));
    QString error;
    QVERIFY2(w->saveExperiment(path, &error), qPrintable(error));
    const nlohmann::json saved = ensemble::loadConfigJson(path.toStdString());
    QCOMPARE(saved["optimizer"]["lr"].get<double>(), 0.01);  // the run's starting value
    QCOMPARE(saved["training"]["schedule"].size(), std::size_t{1});
    QVERIFY(sameBitsNonEmpty(app, engineParameters(saved, 60)));
    QVERIFY(!sameBitsNonEmpty(app, engineParameters(resampledRun(60), 60)));

    // Run > Copy as Command: the CLI run of it gives the app's weights.
    const QString command = w->commandLine();
    QVERIFY2(command.contains(QStringLiteral("training.schedule=")), qPrintable(command));
    QStringList args = shellWords(command);
    QCOMPARE(args.value(0), QStringLiteral("ensemble-cli"));
    args.removeFirst();
    const QString exported = dir.filePath(QStringLiteral("cli.safetensors"));
    args << QStringLiteral("--export") << exported << QStringLiteral("--quiet");
    const Run cli = runCli(args);
    QVERIFY2(cli.code == 0, qPrintable(describe(cli)));
    QVERIFY(sameBitsNonEmpty(app, ensemble::importEnsemble(exported.toStdString()).params));
}

// Members switched off and on mid-run (Members' check boxes) are recorded in the run's
// schedule, switches between the same two steps as one entry and one made after the last step
// too. The CLI run of Copy as Command gives the app's weights and the app's report: the same
// ensemble figures and switches; `eval` of the app's export leaves the same members out.
void TestGuiRun::memberSwitchesEqualTheirReplay() {
    QTemporaryDir dir;
    auto w = makeWindow();
    w->loadExperiment(resampledRun(60), QString());
    QVERIFY(waitFresh(*w));
    auto* controller = w->controller();
    controller->trainTo(20);
    QVERIFY(waitSnapshot(*w, [](const auto& s) { return s.step == 20 && !s.running; }));
    controller->setMemberSwitchedOn(1, false);
    controller->setMemberSwitchedOn(2, false);  // the same step: one entry
    QVERIFY(waitSnapshot(*w, [](const auto& s) { return s.includedCount == 1; }));
    controller->trainTo(40);
    QVERIFY(waitSnapshot(*w, [](const auto& s) { return s.step == 40 && !s.running; }));
    controller->setMemberSwitchedOn(1, true);
    QVERIFY(waitSnapshot(*w, [](const auto& s) { return s.includedCount == 2; }));
    w->trainAction()->trigger();
    QVERIFY(waitSnapshot(*w, [](const auto& s) { return s.step == 60 && !s.running; }));
    controller->setMemberSwitchedOn(0, false);  // after the last step, while stopped
    QVERIFY(waitSnapshot(*w, [](const auto& s) { return s.includedCount == 1; }));
    const SnapshotPtr s = controller->snapshot();
    QCOMPARE(s->schedule, nlohmann::json::parse(R"([
        {"step": 20, "set": {"ensemble.switched_off": [1, 2]}},
        {"step": 40, "set": {"ensemble.switched_off": [2]}},
        {"step": 60, "set": {"ensemble.switched_off": [0, 2]}}])"));
    QCOMPARE(s->included, (std::vector<uint8_t>{0, 1, 0}));
    const std::vector<float> app = exportedParameters(*w, dir, "switched");
    // Switches do not change training.
    QVERIFY(sameBitsNonEmpty(app, engineParameters(resampledRun(60), 60)));
    QFile appMetricsFile(dir.filePath(QStringLiteral("switched.metrics.json")));
    QVERIFY(appMetricsFile.open(QIODevice::ReadOnly));
    const nlohmann::json appMetrics = nlohmann::json::parse(appMetricsFile.readAll().toStdString());
    QCOMPARE(appMetrics["members_included"].get<int>(), 1);

    const QString path = dir.filePath(QStringLiteral("switched.json"));
    QString error;
    QVERIFY2(w->saveExperiment(path, &error), qPrintable(error));
    const nlohmann::json saved = ensemble::loadConfigJson(path.toStdString());
    QCOMPARE(saved["training"]["schedule"], s->schedule);

    // Run > Copy as Command: the CLI run of it gives the app's weights and report.
    const QString command = w->commandLine();
    QVERIFY2(command.contains(QStringLiteral("ensemble.switched_off")), qPrintable(command));
    QStringList args = shellWords(command);
    args.removeFirst();
    const QString exported = dir.filePath(QStringLiteral("cli.safetensors"));
    const QString metrics = dir.filePath(QStringLiteral("cli.json"));
    args << QStringLiteral("--export") << exported << QStringLiteral("--metrics") << metrics
         << QStringLiteral("--quiet");
    const Run cli = runCli(args);
    QVERIFY2(cli.code == 0, qPrintable(describe(cli)));
    QVERIFY(sameBitsNonEmpty(app, ensemble::importEnsemble(exported.toStdString()).params));
    QFile cliMetricsFile(metrics);
    QVERIFY(cliMetricsFile.open(QIODevice::ReadOnly));
    const nlohmann::json cliMetrics = nlohmann::json::parse(cliMetricsFile.readAll().toStdString());
    QCOMPARE(cliMetrics["ensemble"], appMetrics["ensemble"]);
    QCOMPARE(cliMetrics["members"], appMetrics["members"]);
    QCOMPARE(cliMetrics["size_curve"], appMetrics["size_curve"]);

    // eval of the app's export: its switches at the stored step.
    const QString report = dir.filePath(QStringLiteral("eval.json"));
    const Run eval = runCli({QStringLiteral("eval"), QStringLiteral("--weights"),
                             dir.filePath(QStringLiteral("switched.safetensors")),
                             QStringLiteral("--report"), report});
    QVERIFY2(eval.code == 0, qPrintable(describe(eval)));
    QFile f(report);
    QVERIFY(f.open(QIODevice::ReadOnly));
    const nlohmann::json r = nlohmann::json::parse(f.readAll().toStdString());
    QCOMPARE(r["members_included"].get<int>(), 1);
    QCOMPARE(r["ensemble"]["accuracy"], appMetrics["ensemble"]["accuracy"]);
    QVERIFY(std::abs(r["ensemble"]["nll"].get<double>() -
                     appMetrics["ensemble"]["nll"].get<double>()) <= 1e-6);
    for (int k = 0; k < 3; ++k) {
        QCOMPARE(r["members"][k]["switched_on"], appMetrics["members"][k]["switched_on"]);
    }
}

// An edit that needs a new run (the dataset's noise) leaves the run as it is, raises one banner
// above the views naming what changed, and marks the row; Reset applies it and clears both.
void TestGuiRun::restartKeyRaisesTheBanner() {
    const auto editNoise = [](MainWindow& window) {
        auto* noise = window.panel()->findChild<QDoubleSpinBox*>(QStringLiteral("dataset.noise"));
        QVERIFY(noise != nullptr);
        noise->setValue(noise->value() + 0.05);
    };
    auto w = makeWindow();
    w->loadExperiment(resampledRun(1000), QString());
    QVERIFY(waitFresh(*w));
    // A witness: on an untrained run the same edit applies on its own, after the window's edit
    // debounce (a new run, no banner).
    auto witness = makeWindow();
    witness->loadExperiment(resampledRun(1000), QString());
    QVERIFY(waitFresh(*witness));
    const uint64_t run = w->controller()->currentRunId();
    w->controller()->trainTo(10);
    QVERIFY(waitSnapshot(*w, [](const auto& s) { return s.step == 10 && !s.running; }));
    auto* banner = w->findChild<QFrame*>(QStringLiteral("RestartBanner"));
    QVERIFY(banner != nullptr);
    QVERIFY(banner->isHidden());
    editNoise(*w);
    QVERIFY(!banner->isHidden());
    const auto labels = banner->findChildren<QLabel*>();
    QVERIFY(!labels.isEmpty());
    QVERIFY2(labels.first()->text().startsWith(QStringLiteral("Dataset changed")),
             qPrintable(labels.first()->text()));
    QCOMPARE(w->panel()->pendingKeys(), QStringList{QStringLiteral("dataset.noise")});
    // Two of the witness's debounces, one after the other, outlast one started by the edit
    // above, whatever rounding the timers get: had that edit started one, it has fired.
    for (int round = 0; round < 2; ++round) {
        const uint64_t before = witness->controller()->currentRunId();
        editNoise(*witness);
        // Not at once: no event has been handled since the edit, so the debounce is pending.
        QCOMPARE(witness->controller()->currentRunId(), before);
        QTRY_VERIFY(witness->controller()->currentRunId() != before);
        QVERIFY(witness->findChild<QFrame*>(QStringLiteral("RestartBanner"))->isHidden());
        QVERIFY(waitFresh(*witness));
    }
    QCOMPARE(w->controller()->currentRunId(), run);  // nothing restarted on its own
    QCOMPARE(w->controller()->snapshot()->step, int64_t{10});
    auto* reset = banner->findChild<QPushButton*>();
    QVERIFY(reset != nullptr);
    reset->click();
    QVERIFY(waitFresh(*w));
    QVERIFY(w->controller()->currentRunId() != run);
    QVERIFY(banner->isHidden());
    QVERIFY(w->panel()->pendingKeys().isEmpty());
}

// Export at step 0 would write the seed's initial weights: disabled, saying why, until a step
// is trained.
void TestGuiRun::exportWaitsForATrainedStep() {
    auto w = makeWindow();
    w->loadExperiment(resampledRun(100), QString());
    QVERIFY(waitFresh(*w));
    QCoreApplication::processEvents();
    QAction* exportAction = w->exportAction();
    QVERIFY(!exportAction->isEnabled());
    QCOMPARE(ensemble::ui::disabledReason(exportAction),
             QStringLiteral("Export: train at least one step first"));
    QVERIFY(exportAction->toolTip().contains(QStringLiteral("train at least one step first")));
    QCOMPARE(exportAction->statusTip(), QStringLiteral("Export: train at least one step first"));
    w->stepAction()->trigger();
    QVERIFY(waitSnapshot(*w, [](const auto& s) { return s.step == 1 && !s.running; }));
    QCoreApplication::processEvents();
    QVERIFY(exportAction->isEnabled());
    QVERIFY(ensemble::ui::disabledReason(exportAction).isEmpty());
    // Reset: a new run at step 0, disabled again.
    w->resetAction()->trigger();
    QVERIFY(waitFresh(*w));
    QCoreApplication::processEvents();
    QVERIFY(!exportAction->isEnabled());
}

// The export's stored config carries the steps actually trained (until paused, or paused
// before Stop after), so the CLI replay of that config gives the exported weights.
void TestGuiRun::exportedConfigReplaysToItsWeights() {
    QTemporaryDir dir;
    auto w = makeWindow();
    nlohmann::json preset = nlohmann::json::parse(ensemble::presetText("spirals"));
    preset["backend"]["kind"] = "cpu";
    preset["backend"]["threads"] = 1;
    preset["ensemble"]["members"] = 2;
    preset["dataset"]["n"] = 300;
    preset["training"]["steps"] = 30;
    w->loadExperiment(preset, QStringLiteral("spirals"));
    QVERIFY(w->panel()->untilPaused());
    QVERIFY(waitFresh(*w));
    QVERIFY(waitSnapshot(*w, [](const auto& s) { return s.untilPaused; }));
    w->controller()->trainTo(47);  // past the preset's own 30 steps
    QVERIFY(waitSnapshot(*w, [](const auto& s) { return s.step == 47 && !s.running; }));
    QSignalSpy done(w.get(), &MainWindow::exportFinished);
    const QString base = dir.filePath(QStringLiteral("played"));
    w->exportTo(base);
    QVERIFY(done.wait(20000));
    QVERIFY(done.at(0).at(0).toBool());
    const ensemble::LoadedEnsemble e =
        ensemble::importEnsemble((base + QStringLiteral(".safetensors")).toStdString());
    QCOMPARE(e.step, int64_t{47});
    QCOMPARE(e.config.json["training"]["steps"].get<int64_t>(), int64_t{47});
    // The CLI replay of the stored config: the exported weights, bit for bit.
    const QString config = dir.filePath(QStringLiteral("stored.json"));
    {
        QFile f(config);
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write(QByteArray::fromStdString(e.config.json.dump(2)));
    }
    const QString replayed = dir.filePath(QStringLiteral("replayed.safetensors"));
    const Run cli = runCli({QStringLiteral("train"), QStringLiteral("--config"), config,
                            QStringLiteral("--export"), replayed, QStringLiteral("--quiet")});
    QVERIFY2(cli.code == 0, qPrintable(describe(cli)));
    QVERIFY(sameBitsNonEmpty(e.params, ensemble::importEnsemble(replayed.toStdString()).params));

    // A finite run paused before its Stop after: the same.
    w->loadExperiment(resampledRun(200), QString());
    QVERIFY(waitFresh(*w));
    w->controller()->trainTo(23);
    QVERIFY(waitSnapshot(*w, [](const auto& s) { return s.step == 23 && !s.running; }));
    const std::vector<float> paused = exportedParameters(*w, dir, "paused");
    const ensemble::LoadedEnsemble p =
        ensemble::importEnsemble(dir.filePath(QStringLiteral("paused.safetensors")).toStdString());
    QCOMPARE(p.config.json["training"]["steps"].get<int64_t>(), int64_t{23});
    QVERIFY(sameBitsNonEmpty(paused, engineParameters(p.config.json, 23)));
}

// MNIST-shaped data with a test split larger than the live subset: while training the figures
// come from the subset and say so; once the run stops they are the whole split's, equal to
// what `ensemble-cli eval` reports for the exported weights.
void TestGuiRun::stoppedRunShowsTheFiguresEvalGives() {
    QTemporaryDir dir;
    // From image 50 on, the test labels are noisier: the live subset's figures differ from the
    // whole split's.
    QVERIFY(ensemble::test::writeIdx(dir.path(), "train-images-idx3-ubyte",
                                     "train-labels-idx1-ubyte", 400, 1));
    QVERIFY(ensemble::test::writeIdx(dir.path(), "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte",
                                     300, 2, 50));
    nlohmann::json c = ensemble::loadConfigJson("mnist-mlp");
    c["dataset"]["path"] = dir.path().toStdString();
    c["model"]["hidden"] = {16};
    c["ensemble"]["members"] = 3;
    c["optimizer"]["lr"] = 0.01;
    c["training"]["batch_size"] = 20;
    c["training"]["epochs"] = 0;
    c["training"]["steps"] = 1'000'000;
    c["backend"]["kind"] = "cpu";
    c["backend"]["threads"] = 1;
    MainWindow::Options options;
    options.useSettings = false;
    options.tuning.maxEvalRows = 50;  // the live subset: the first 50 of 300 test images
    MainWindow w(options);
    w.resize(1200, 800);
    w.show();
    w.loadExperiment(c, QString());
    QVERIFY(waitFresh(w));
    auto* figures = w.findChild<QLabel*>(QStringLiteral("TestFigures"));
    QVERIFY(figures != nullptr);
    // While training: the subset, labelled.
    w.trainAction()->trigger();
    QVERIFY(waitSnapshot(w, [](const auto& s) { return s.running && s.step > 0; }));
    QVERIFY(w.controller()->snapshot()->figuresOnSubset());
    QVERIFY2(QTest::qWaitFor(
                 [&] { return figures->text().contains(QStringLiteral("live: 50 test images")); }),
             qPrintable(figures->text()));
    w.trainAction()->trigger();  // pause
    QVERIFY(waitSnapshot(w, [](const auto& s) { return !s.running; }));
    QVERIFY(waitSnapshot(w, [](const auto& s) { return !s.running && !s.figuresOnSubset(); }));
    const SnapshotPtr s = w.controller()->snapshot();
    QCOMPARE(s->testRowsMeasured, int64_t{300});
    QCOMPARE(s->run->evalTest.rows, int64_t{50});
    QVERIFY(QTest::qWaitFor([&] { return !figures->text().contains(QStringLiteral("live")); }));
    QVERIFY2(figures->text().startsWith(QStringLiteral("test accuracy ")),
             qPrintable(figures->text()));
    // The live subset's figure (the curves' last point) is not the whole split's.
    QVERIFY(s->history.back()->ensembleTest.accuracy != s->ensembleMetrics.accuracy);

    QSignalSpy done(&w, &MainWindow::exportFinished);
    const QString base = dir.filePath(QStringLiteral("stopped"));
    w.exportTo(base);
    QVERIFY(done.wait(20000));
    QVERIFY(done.at(0).at(0).toBool());
    const QString report = dir.filePath(QStringLiteral("eval.json"));
    const Run cli =
        runCli({QStringLiteral("eval"), QStringLiteral("--weights"),
                base + QStringLiteral(".safetensors"), QStringLiteral("--report"), report});
    QVERIFY2(cli.code == 0, qPrintable(describe(cli)));
    QFile f(report);
    QVERIFY(f.open(QIODevice::ReadOnly));
    const nlohmann::json r = nlohmann::json::parse(f.readAll().toStdString());
    QCOMPARE(r["ensemble"]["accuracy"].get<double>(), s->ensembleMetrics.accuracy);
    QVERIFY(std::abs(r["ensemble"]["nll"].get<double>() - s->ensembleMetrics.nll) <= 1e-6);
    for (int k = 0; k < 3; ++k) {
        QCOMPARE(r["members"][k]["accuracy"].get<double>(),
                 s->memberMetrics[static_cast<std::size_t>(k)].accuracy);
    }
}

// Choosing a preset in the box loads that experiment at once: its data and untrained boundary
// show without Reset, even over a trained run, and nothing trains until Train or Space.
void TestGuiRun::choosingAPresetShowsItsDataWithoutReset() {
    auto w = makeWindow();
    w->loadExperiment(resampledRun(1000), QString());
    QVERIFY(waitFresh(*w));
    w->controller()->trainTo(15);
    QVERIFY(waitSnapshot(*w, [](const auto& s) { return s.step == 15 && !s.running; }));
    const uint64_t before = w->controller()->currentRunId();
    QComboBox* box = w->panel()->presetCombo();
    const int moons = box->findData(QStringLiteral("moons"));
    QVERIFY(moons >= 0);
    // As a person picks it from the list (which emits activated); no Reset.
    box->setCurrentIndex(moons);
    Q_EMIT box->activated(moons);
    QVERIFY(waitSnapshot(*w, [&](const auto& s) {
        return s.run->runId != before && s.run->config.dataset.kind == ensemble::DatasetKind::Moons;
    }));
    const SnapshotPtr s = w->controller()->snapshot();
    QCOMPARE(s->step, int64_t{0});
    QVERIFY(s->hasGrid && s->run->train.rows > 0);  // its data, drawn untrained
    // Nothing trains: the engine thread answers twice with the same weights, and a start queued
    // before the question would have said so (runningChanged) before the answer.
    QVERIFY(engineIdle(*w->controller()));
    QVERIFY(!w->controller()->isRunning());
    QCOMPARE(w->controller()->snapshot()->step, int64_t{0});
    QVERIFY(w->findChild<QFrame*>(QStringLiteral("RestartBanner"))->isHidden());
}

// The price of a run: the shape told from the config alone is the loaded split's, the window's
// share is hand-counted, the trainer's is the engine's estimate, and the thresholds ask above
// half of the memory and refuse above all of it.
void TestGuiRun::aRunIsPricedWithTheWindowsShare() {
    using ensemble::ui::DataShape;
    const auto loadedShape = [](const nlohmann::json& config) {
        return ensemble::ui::dataShapeOf(
            ensemble::loadDataSplit(ensemble::parseConfig(config).dataset));
    };
    for (
        const char* sets :
        {R"({"dataset": {"kind": "spirals", "n": 301}})",
         R"({"dataset": {"kind": "blobs", "classes": 5, "limit": 100}})",
         R"({"dataset": {"kind": "cubic", "test_fraction": 0.33}, "model": {"likelihood": "gaussian"}})",
         R"({"dataset": {"kind": "linear", "features": 7}, "model": {"likelihood": "mse"}})"}) {
        const nlohmann::json config = nlohmann::json::parse(sets);
        const std::optional<DataShape> told =
            ensemble::ui::expectedDataShape(ensemble::parseConfig(config));
        const DataShape loaded = loadedShape(config);
        QVERIFY2(told.has_value(), sets);
        QVERIFY2(told->trainRows == loaded.trainRows && told->testRows == loaded.testRows &&
                     told->input == loaded.input && told->classes == loaded.classes &&
                     told->planar == loaded.planar,
                 sets);
    }
    QVERIFY(
        !ensemble::ui::expectedDataShape(ensemble::parseConfig(nlohmann::json{
                                             {"dataset", {{"kind", "csv"}, {"path", "x.csv"}}}}))
             .has_value());
    const auto mnist = ensemble::ui::expectedDataShape(
        ensemble::parseConfig(nlohmann::json{{"dataset", {{"kind", "mnist"}, {"limit", 1000}}}}));
    QVERIFY(mnist && mnist->trainRows == 1000 && mnist->testRows == 10000 &&
            mnist->input == (ensemble::Shape{1, 28, 28}) && mnist->classes == 10);

    // K = 4 on 80 + 20 points in the plane, two classes: the grid is the largest, 128.
    ensemble::ui::WorkerTuning tuning;
    QCOMPARE(ensemble::ui::gridSizeFor(4, tuning), 128);
    const DataShape small{80, 20, {2, 1, 1}, 2, true};
    const std::size_t expected = 4 * 20 * 2 * 4 * 3           // test predictions, 3 snapshots
                                 + 4 * 80 * 2 * 4             // train rows of the curves
                                 + 4 * 128 * 128 * 2 * 4 * 3  // each member's grid
                                 + 4 * 80 * 4                 // bootstrap counts
                                 + 4 * 2 * sizeof(ensemble::SplitMetrics) * 1024  // history
                                 + 5 * 4 * (4 * 256 + 32) * 16;  // curve stores, full
    QCOMPARE(ensemble::ui::windowBytes(4, small, ensemble::Likelihood::Categorical, tuning),
             expected);

    const ensemble::ExperimentConfig config = ensemble::parseConfig(nlohmann::json{
        {"dataset", {{"kind", "spirals"}, {"n", 100}}}, {"ensemble", {{"members", 4}}}});
    const std::size_t trainer =
        ensemble::estimateRunBytes(config, 80, 20, ensemble::Shape{2, 1, 1}, 2);
    ensemble::ui::RunPrice price = ensemble::ui::priceRun(config, small, tuning, trainer);
    QCOMPARE(price.trainerBytes, trainer);
    QCOMPARE(price.windowBytes, expected);
    QVERIFY(!price.fits() && price.large());  // more than all of `trainer` bytes
    price.availableBytes = 2 * price.totalBytes();
    QVERIFY(price.fits() && !price.large());  // exactly half: not asked
    price.availableBytes = 2 * price.totalBytes() - 2;
    QVERIFY(price.fits() && price.large());
    price.availableBytes = 0;  // unknown: neither
    QVERIFY(price.fits() && !price.large());
    QCOMPARE(ensemble::ui::bytesText(8'600'000'000), QStringLiteral("8.6 GB"));
    QCOMPARE(ensemble::ui::bytesText(412'300'000), QStringLiteral("412 MB"));
}

// Above half of the memory (here made up: 1.5 times the large run's price), a run asks Start /
// Cancel first: Cancel leaves the run before it as it was and the edit in the panel; Start
// builds it, and its Reset does not ask again. A small run never asks.
void TestGuiRun::aLargeRunAsksBeforeItStarts() {
    const nlohmann::json large = ensemble::test::smallConfig({.members = 200, .steps = 100});
    const ensemble::ExperimentConfig parsed = ensemble::parseConfig(large);
    const ensemble::ui::RunPrice price = ensemble::ui::priceRun(
        parsed, *ensemble::ui::expectedDataShape(parsed), ensemble::ui::WorkerTuning{}, 0);
    MainWindow::Options options;
    options.useSettings = false;
    options.askBeforeLargeRuns = true;
    options.availableMemory = price.totalBytes() * 3 / 2;
    MainWindow w(options);
    w.resize(1200, 800);
    w.show();
    int asked = 0;
    w.loadExperiment(ensemble::test::smallConfig({.members = 3, .steps = 100}));
    QVERIFY(waitFresh(w));
    QCOMPARE(asked, 0);
    const uint64_t before = w.controller()->currentRunId();

    whenModal(
        QStringLiteral("LargeRunQuestion"),
        [](QWidget* box) {
            QVERIFY(
                static_cast<QMessageBox*>(box)->text().contains(QStringLiteral("the live views")));
            static_cast<QMessageBox*>(box)->button(QMessageBox::Cancel)->click();
        },
        &asked);
    w.loadExperiment(large);
    QCOMPARE(asked, 1);
    QCOMPARE(w.controller()->currentRunId(), before);
    QCOMPARE(w.panel()->config()["ensemble"]["members"].get<int>(), 200);
    QVERIFY2(w.statusMessage().startsWith(QStringLiteral("Not started: K = 200")),
             qPrintable(w.statusMessage()));

    whenModal(
        QStringLiteral("LargeRunQuestion"),
        [](QWidget* box) { static_cast<QMessageBox*>(box)->button(QMessageBox::Yes)->click(); },
        &asked);
    w.resetAction()->trigger();
    QCOMPARE(asked, 2);
    QVERIFY(w.controller()->currentRunId() != before);
    QVERIFY(waitSnapshot(
        w, [](const auto& s) { return s.run->members == 200; }, 60000));
    const uint64_t accepted = w.controller()->currentRunId();
    w.resetAction()->trigger();  // the same experiment: accepted already
    QCOMPARE(asked, 2);
    QVERIFY(w.controller()->currentRunId() != accepted);
}

// The engine thread prices the run it builds with the window's share beside the trainer's and
// refuses it, both named, when the sum exceeds the memory (here a made-up 30 MB).
void TestGuiRun::aRunAboveTheMemoryIsRefusedWithBothShares() {
    MainWindow::Options options;
    options.useSettings = false;
    options.tuning.availableMemoryBytes = 30'000'000;
    MainWindow w(options);
    QSignalSpy failed(w.controller(), &ensemble::ui::EngineController::configureFailed);
    w.loadExperiment(ensemble::test::smallConfig({.members = 200, .steps = 100}));
    QVERIFY(failed.wait(30000));
    const QString message = failed.at(0).at(1).toString();
    QVERIFY2(message.contains(QStringLiteral("MiB of memory is available")) &&
                 message.contains(QStringLiteral("the live views about")),
             qPrintable(message));
    QCOMPARE(failed.at(0).at(2).toInt(), static_cast<int>(ensemble::ErrorKind::Memory));
    QVERIFY(!w.controller()->snapshot());
}

// Cancel on the sheet that covers a run's setup stops it at its next stage: the run is dropped
// (no snapshot ever shows), the window says so, and Train builds it again.
void TestGuiRun::cancelStopsTheSetupOfARun() {
    auto w = makeWindow();
    QSignalSpy cancelled(w->controller(), &ensemble::ui::EngineController::setupCancelled);
    QSignalSpy configured(w->controller(), &ensemble::ui::EngineController::configured);
    // The engine thread is held until Cancel is clicked, so the click comes before it reaches
    // the run (its first stage) however fast the machine builds a small run.
    QSemaphore held;
    QSemaphore clicked;
    bool engineReleased = false;
    const auto releaseEngine = qScopeGuard([&] {
        if (!engineReleased) {
            clicked.release();  // a failed check must not leave the window's thread held
        }
    });
    auto* holder = new QObject;
    holder->moveToThread(w->controller()->engineThread());
    QMetaObject::invokeMethod(holder, [&] {
        held.release();
        clicked.acquire();
    });
    QVERIFY(held.tryAcquire(1, 30000));
    w->loadExperiment(ensemble::test::smallConfig({.members = 3, .steps = 100}));
    auto* busy = w->findChild<ensemble::ui::BusyOverlay*>();
    QVERIFY(busy != nullptr);
    QVERIFY(busy->cancelButton()->isEnabled());
    busy->cancelButton()->click();
    clicked.release();
    engineReleased = true;
    holder->deleteLater();  // on the engine thread, once the held call returned
    QVERIFY(cancelled.wait(30000));
    QCOMPARE(cancelled.at(0).at(0).toULongLong(), w->controller()->currentRunId());
    QVERIFY(configured.isEmpty());
    QVERIFY(!w->controller()->snapshot());
    QVERIFY2(w->statusMessage().startsWith(QStringLiteral("Setup cancelled")),
             qPrintable(w->statusMessage()));
    QVERIFY(w->trainAction()->isEnabled());
    w->trainAction()->trigger();
    QVERIFY(waitSnapshot(*w, [](const auto& s) { return s.step > 0; }));
}

// The runs store keeps the window's runs: an entry from a run's start until it is replaced (a
// Reset here), with its preset, config, curves, figures and the files exported of it (Open
// Recent names the run that wrote its export); a job on
// it (a shift) is an entry linked to it; the run after it is an entry of its own, ended when the
// window closes.
void TestGuiRun::everyRunIsRecordedUntilItIsReplaced() {
    QTemporaryDir dir;
    const QString store = dir.filePath(QStringLiteral("runs.sqlite"));
    const ScopedRunStore recordTo(store);
    {
        auto w = makeWindow();
        nlohmann::json preset = nlohmann::json::parse(ensemble::presetText("spirals"));
        preset["backend"]["kind"] = "cpu";
        preset["ensemble"]["members"] = 3;
        preset["dataset"]["n"] = 300;
        w->loadExperiment(preset, QStringLiteral("spirals"));
        QVERIFY(waitFresh(*w));
        w->controller()->trainTo(40);
        QVERIFY(waitSnapshot(*w, [](const auto& s) { return s.step == 40 && !s.running; }));
        QSignalSpy done(w.get(), &MainWindow::exportFinished);
        const QString base = dir.filePath(QStringLiteral("first"));
        w->exportTo(base);
        QVERIFY(done.wait(20000));
        QVERIFY(done.at(0).at(0).toBool());
        // Open Recent names the run that wrote the export (the store's first entry).
        auto* recent = w->findChild<QMenu*>(QStringLiteral("OpenRecentMenu"));
        QVERIFY(recent != nullptr);
        const auto recentNamesTheRun = [recent] {
            Q_EMIT recent->aboutToShow();
            for (const QAction* a : recent->actions()) {
                if (a->text().startsWith(QStringLiteral("first.safetensors")) &&
                    a->text().endsWith(QStringLiteral("run 1")) &&
                    a->toolTip().contains(QStringLiteral("written by run 1: app-train"))) {
                    return true;
                }
            }
            return false;
        };
        QTRY_VERIFY_WITH_TIMEOUT(recentNamesTheRun(), 10000);
        // A job on the run (the Shift view's): an entry of its own, linked to the run.
        QSignalSpy shifted(w->controller(), &ensemble::ui::EngineController::shiftFinished);
        ensemble::ui::ShiftRequest request;
        request.shift = "noise";
        request.levels = {0.0, 0.5};
        w->controller()->runShift(request);
        QVERIFY(shifted.wait(30000));
        w->resetAction()->trigger();
        QVERIFY(waitFresh(*w));
        // The first run's entry ended with the Reset (the shift job's with its job): both
        // finished, with what they measured.
        ensemble::runs::RunQuery finished;
        finished.filters = {{"state", ensemble::runs::FilterOp::Equal, "finished"}};
        QTRY_VERIFY_WITH_TIMEOUT(
            ensemble::runs::RunStore::open(store.toStdString()).count(finished) == 2, 10000);
    }
    // The window closed: the second entry ended too.
    const ensemble::runs::RunStore read = ensemble::runs::RunStore::open(store.toStdString());
    ensemble::runs::RunQuery oldestFirst;
    oldestFirst.sort = {"id", false};
    oldestFirst.full = true;
    std::vector<ensemble::runs::RunEntry> entries = read.list(oldestFirst);
    QCOMPARE(entries.size(), std::size_t(3));
    // The shift job's entry: measured the first run, its figures per level.
    const auto job = std::find_if(entries.begin(), entries.end(),
                                  [](const auto& e) { return e.kind == "app-shift"; });
    QVERIFY(job != entries.end());
    QCOMPARE(job->state, ensemble::runs::RunState::Finished);
    QCOMPARE(job->parentId, entries[0].id);
    QCOMPARE(job->relation, std::string("measured"));
    QVERIFY(job->figures.count("0.5.accuracy") == 1);
    entries.erase(job);
    for (const ensemble::runs::RunEntry& e : entries) {
        QCOMPARE(e.program, std::string("ensemble-lab"));
        QCOMPARE(e.kind, std::string("app-train"));
        QCOMPARE(e.state, ensemble::runs::RunState::Finished);
        QCOMPARE(e.preset, std::string("spirals"));
        QCOMPARE(e.members, std::int64_t(3));
        QVERIFY(e.backend.rfind("cpu", 0) == 0);
        QVERIFY2(e.commandLine.find("ensemble-cli train --config spirals") != std::string::npos,
                 e.commandLine.c_str());
    }
    const ensemble::runs::RunEntry& first = entries[0];
    QVERIFY(first.figures.count("test_accuracy") == 1);
    QVERIFY(first.curves.contains("test_loss"));
    // Its last curve point is the step it was paused at.
    QCOMPARE(first.curves["test_loss"].back()[0].get<std::int64_t>(), std::int64_t(40));
    bool exported = false;
    for (const ensemble::runs::RunFile& f : first.files) {
        exported = exported || (f.role == "export" && QString::fromStdString(f.path).endsWith(
                                                          QStringLiteral("first.safetensors")));
    }
    QVERIFY(exported);
    QVERIFY(entries[1].files.empty());
}

// Concurrent writers: the window trains (and records) while two ensemble-cli processes train
// into the same store; every entry is there, each finished.
void TestGuiRun::theWindowAndTwoCliProcessesRecordTogether() {
    QTemporaryDir dir;
    const QString store = dir.filePath(QStringLiteral("runs.sqlite"));
    const ScopedRunStore recordTo(store);
    {
        auto w = makeWindow();
        nlohmann::json preset = nlohmann::json::parse(ensemble::presetText("spirals"));
        preset["backend"]["kind"] = "cpu";
        preset["ensemble"]["members"] = 2;
        w->loadExperiment(preset, QStringLiteral("spirals"));
        QVERIFY(waitFresh(*w));
        w->controller()->trainTo(1000000);
        std::vector<std::unique_ptr<QProcess>> processes;
        for (int i = 0; i < 2; ++i) {
            auto p = std::make_unique<QProcess>();
            p->start(ensemble::test::cliPath(),
                     {QStringLiteral("train"), QStringLiteral("--config"), QStringLiteral("moons"),
                      QStringLiteral("--set"), QStringLiteral("training.steps=200"),
                      QStringLiteral("--set"), QStringLiteral("backend.kind=cpu"),
                      QStringLiteral("--quiet")});
            QVERIFY(p->waitForStarted());
            processes.push_back(std::move(p));
        }
        for (auto& p : processes) {
            const Run r = ensemble::test::finish(*p);
            QVERIFY2(r.code == 0 && !r.err.contains(QStringLiteral("warning")),
                     qPrintable(describe(r)));
        }
        w->controller()->pause();
        QVERIFY(waitSnapshot(*w, [](const auto& s) { return !s.running && s.step > 0; }));
    }
    const std::vector<ensemble::runs::RunEntry> entries =
        ensemble::runs::RunStore::open(store.toStdString()).list({});
    QCOMPARE(entries.size(), std::size_t(3));
    int fromTheWindow = 0;
    for (const ensemble::runs::RunEntry& e : entries) {
        QCOMPARE(e.state, ensemble::runs::RunState::Finished);
        fromTheWindow += e.program == "ensemble-lab" ? 1 : 0;
    }
    QCOMPARE(fromTheWindow, 1);
}

QTEST_MAIN(TestGuiRun)
#include "tst_gui_run.moc"
