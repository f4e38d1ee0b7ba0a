// Files in the app: what is opened is what was saved (an export with a member switched
// off opens and compares as `ensemble-cli eval` reports it), files that are no experiment are
// refused with the experiment kept, a preset asks before it replaces a trained run, status
// messages and the busy overlay belong to the run they describe, and the smaller things (the
// Export dialog's remembered type, Export job's mesh check, Open Recent, About).
#include <QAction>
#include <QApplication>
#include <QComboBox>
#include <QDialog>
#include <QDialogButtonBox>
#include <QDir>
#include <QFile>
#include <QFileDialog>
#include <QFileInfo>
#include <QLabel>
#include <QLineEdit>
#include <QMenu>
#include <QMessageBox>
#include <QPushButton>
#include <QSettings>
#include <QSignalSpy>
#include <QSpinBox>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QTimer>
#include <QtTest>

#include <cmath>
#include <functional>
#include <memory>

#include "file_actions.h"
#include "file_kinds.h"
#include "help_text.h"
#include "io/model_io.h"
#include "main_window.h"
#include "panels/experiment_panel.h"
#include "support/gui_test_support.h"
#include "support/invalid_configs.h"
#include "support/json_files.h"
#include "support/test_support.h"
#include "views/calibration_view.h"
#include "widgets/busy_overlay.h"
#include "widgets/job_status_row.h"

using ensemble::test::engineIdle;
using ensemble::test::makeWindow;
using ensemble::test::waitFresh;
using ensemble::test::waitSnapshot;
using ensemble::test::whenModal;
using ensemble::ui::MainWindow;
using ensemble::ui::SnapshotPtr;

namespace {

// A spirals run of K = 4 whose member 2 is switched off at its last step (40), as the app's
// member switch records it: the export's ensemble is members 0, 1 and 3.
QStringList switchedOffRun(const QString& exportPath) {
    return {QStringLiteral("train"),
            QStringLiteral("--config"),
            QStringLiteral("spirals"),
            QStringLiteral("--set"),
            QStringLiteral("dataset.n=300"),
            QStringLiteral("--set"),
            QStringLiteral("ensemble.members=4"),
            QStringLiteral("--set"),
            QStringLiteral("training.steps=40"),
            QStringLiteral("--set"),
            QStringLiteral("training.schedule=[{\"step\": 40, \"set\": "
                           "{\"ensemble.switched_off\": [2]}}]"),
            QStringLiteral("--set"),
            QStringLiteral("backend.kind=\"cpu\""),
            QStringLiteral("--set"),
            QStringLiteral("backend.threads=1"),
            QStringLiteral("--quiet"),
            QStringLiteral("--export"),
            exportPath};
}

// The numbers of `ensemble-cli eval --weights PATH`'s "ensemble" line (accuracy nll brier ece).
QList<double> evalEnsembleRow(const QString& weights) {
    const ensemble::test::Run cli =
        ensemble::test::runCli({QStringLiteral("eval"), QStringLiteral("--weights"), weights});
    if (cli.code != 0) {
        qWarning("%s", qPrintable(cli.err));
        return {};
    }
    return ensemble::test::numbersOf(cli.out, QStringLiteral("ensemble"));
}

// The window suites' small run, K = 3 on one thread, its length in steps only.
nlohmann::json spirals(int64_t steps) {
    nlohmann::json c = ensemble::test::smallConfig({.members = 3, .steps = steps, .threads = 1});
    c["training"]["epochs"] = 0;
    return c;
}

// A shown window as in interactive use: it asks before a trained run is replaced.
std::unique_ptr<MainWindow> askingWindow() {
    MainWindow::Options options;
    options.useSettings = false;
    options.askToSaveCheckpoint = true;
    auto w = std::make_unique<MainWindow>(options);
    w->resize(1200, 800);
    w->show();
    return w;
}

void answer(QWidget* box, QMessageBox::StandardButton button) {
    static_cast<QMessageBox*>(box)->button(button)->click();
}

}  // namespace

class TestGuiFiles : public QObject {
    Q_OBJECT

  private Q_SLOTS:
    void initTestCase();
    void exportWithAMemberSwitchedOffOpensAsEvalReportsIt();
    void comparisonLeavesOutTheSwitchedOffMember();
    void comparisonEndsOnCancelAndOnANewRun();
    void withoutItsDataTheSwitchedOffMemberStaysOut();
    void metricsFileIsRefusedAndTheExperimentKept();
    void invalidConfigIsRefusedAsTheCliRefusesIt();
    void choosingAPresetAfterTrainingAsksFirst();
    void openingAFileOrNewDataAfterTrainingAsksFirst();
    void statusMessageGoesWithItsRun();
    void busyOverlayCoversTheOldRunAndTheWholeSplitMeasure();
    void exportDialogRemembersTheType();
    void exportJobChecksTheMeshBeforeTheFile();
    void openRecentNamesTheFolderAndListsExports();
    void aboutNamesMpi();

  private:
    QTemporaryDir m_dir;
    QString m_switched;  // the export with member 2 switched off
    QList<double> m_eval;
};

void TestGuiFiles::initTestCase() {
    ensemble::test::isolateSettings();
    QVERIFY(m_dir.isValid());
    m_switched = m_dir.filePath(QStringLiteral("switched.safetensors"));
    const ensemble::test::Run r = ensemble::test::runCli(switchedOffRun(m_switched));
    QVERIFY2(r.code == 0, qPrintable(r.err));
    m_eval = evalEnsembleRow(m_switched);
    QCOMPARE(m_eval.size(), 4);
}

void TestGuiFiles::exportWithAMemberSwitchedOffOpensAsEvalReportsIt() {
    const ensemble::LoadedEnsemble file = ensemble::importEnsemble(m_switched.toStdString());
    QCOMPARE(ensemble::includedMembers(file), (std::vector<uint8_t>{1, 1, 0, 1}));
    // The export's own metrics were measured on the same ensemble.
    const nlohmann::json& metrics = file.metadata["metrics"];
    QVERIFY2(metrics.is_object(), file.metadata.dump().c_str());

    auto w = makeWindow();
    QSignalSpy opened(w.get(), &MainWindow::ensembleOpened);
    QString error;
    QVERIFY2(w->openEnsemble(m_switched, &error), qPrintable(error));
    QVERIFY(opened.wait(20000));
    const uint64_t id = w->controller()->currentRunId();
    const bool measured = waitSnapshot(*w, [id](const auto& s) {
        return s.run->runId == id && !s.evaluating && !s.figuresOnSubset();
    });
    const SnapshotPtr s = w->controller()->snapshot();
    QVERIFY2(measured, qPrintable(QStringLiteral("run %1 of %2, evaluating %3, rows %4 of %5")
                                      .arg(s->run->runId)
                                      .arg(id)
                                      .arg(s->evaluating)
                                      .arg(s->testRowsMeasured)
                                      .arg(s->run->testRows)));
    QCOMPARE(s->switchedOn, (std::vector<uint8_t>{1, 1, 0, 1}));
    QCOMPARE(s->includedCount, 3);
    // eval's ensemble line: accuracy nll brier ece, printed to 4 decimals.
    const double app[4] = {s->ensembleMetrics.accuracy, s->ensembleMetrics.nll,
                           s->ensembleMetrics.brier, s->ensembleMetrics.ece};
    for (int i = 0; i < 4; ++i) {
        QVERIFY2(
            std::abs(app[i] - m_eval[i]) <= 6e-5,
            qPrintable(QStringLiteral("%1: app %2, eval %3").arg(i).arg(app[i]).arg(m_eval[i])));
    }
    // And the export's own metrics (its report, written by train --export).
    QVERIFY2(metrics.contains("ensemble") && metrics["ensemble"].contains("nll"),
             metrics.dump().c_str());
    const double stored = metrics["ensemble"]["nll"].get<double>();
    QVERIFY2(
        std::abs(s->ensembleMetrics.nll - stored) <= 1e-5,
        qPrintable(
            QStringLiteral("app %1, export's metrics %2").arg(s->ensembleMetrics.nll).arg(stored)));
    // The panel shows the switch as the file has it at its step.
    QCOMPARE(w->panel()->config()["ensemble"]["switched_off"], nlohmann::json::array({2}));
    QVERIFY(w->setView(QStringLiteral("calibration")));
    w->calibrationView()->setSnapshot(s);
    QTableWidget* table = w->calibrationView()->table();
    QVERIFY2(table->item(0, 0)->text().startsWith(QStringLiteral("ensemble (3 of 4 members)")),
             qPrintable(table->item(0, 0)->text()));
}

void TestGuiFiles::comparisonLeavesOutTheSwitchedOffMember() {
    auto w = makeWindow();
    nlohmann::json c = spirals(10);
    c["ensemble"]["members"] = 4;
    w->loadExperiment(c, QString());
    QVERIFY(waitFresh(*w));
    QVERIFY(w->setView(QStringLiteral("calibration")));
    QSignalSpy done(w.get(), &MainWindow::comparisonFinished);
    w->compareWith(m_switched);
    QVERIFY(done.wait(30000));
    QVERIFY2(done.at(0).at(0).toBool(), qPrintable(done.at(0).at(1).toString()));
    ensemble::ui::CalibrationView* view = w->calibrationView();
    const auto cmp = view->comparison();
    QVERIFY(cmp != nullptr);
    QCOMPARE(cmp->members, 4);
    QCOMPARE(cmp->includedCount, 3);
    QVERIFY2(
        std::abs(cmp->ensembleMetrics.nll - m_eval[1]) <= 6e-5,
        qPrintable(QStringLiteral("app %1, eval %2").arg(cmp->ensembleMetrics.nll).arg(m_eval[1])));
    QVERIFY2(
        std::abs(cmp->ensembleMetrics.accuracy - m_eval[0]) <= 6e-5,
        qPrintable(
            QStringLiteral("app %1, eval %2").arg(cmp->ensembleMetrics.accuracy).arg(m_eval[0])));
    QVERIFY2(view->comparisonMessage().contains(QStringLiteral("3 of 4 members")),
             qPrintable(view->comparisonMessage()));
    QTRY_VERIFY(view->table()->rowCount() > 1);
    QVERIFY2(view->table()->item(1, 0)->text().contains(
                 QStringLiteral("switched.safetensors: ensemble (3 of 4 members)")),
             qPrintable(view->table()->item(1, 0)->text()));
}

// The Calibration comparison is a window job like the others: Cancel ends it with the
// comparison shown before kept (a file is read and measured in one piece, so a cancel counts
// whenever it lands), and a new run ends one under way without an outcome. The compared
// figures are of a file on the run's dataset, not of the run, so a Reset keeps them.
void TestGuiFiles::comparisonEndsOnCancelAndOnANewRun() {
    auto w = makeWindow();
    nlohmann::json c = spirals(10);
    c["ensemble"]["members"] = 4;
    w->loadExperiment(c, QString());
    QVERIFY(waitFresh(*w));
    QVERIFY(w->setView(QStringLiteral("calibration")));
    ensemble::ui::CalibrationView* view = w->calibrationView();
    QSignalSpy done(w.get(), &MainWindow::comparisonFinished);
    w->compareWith(m_switched);
    QVERIFY(done.wait(30000));
    QVERIFY2(done.at(0).at(0).toBool(), qPrintable(done.at(0).at(1).toString()));
    const auto compared = view->comparison();
    QVERIFY(compared != nullptr);

    w->compareWith(m_switched);
    QVERIFY(view->isComparing());
    QVERIFY(!view->compareButton()->isEnabled());
    QPushButton* cancel = view->comparisonStatus()->cancelButton();
    QVERIFY(cancel->isEnabled());
    cancel->click();
    QVERIFY(done.wait(30000));
    QCOMPARE(done.at(1).at(0).toBool(), false);
    QVERIFY2(view->comparisonMessage().startsWith(QStringLiteral("Cancelled")),
             qPrintable(view->comparisonMessage()));
    QCOMPARE(view->comparison(), compared);
    QVERIFY(!view->isComparing());
    QVERIFY(!cancel->isEnabled());
    QVERIFY(view->compareButton()->isEnabled());

    QSignalSpy ended(w->controller(), &ensemble::ui::EngineController::jobsEnded);
    QSignalSpy measured(w->controller(), &ensemble::ui::EngineController::comparisonMeasured);
    w->compareWith(m_switched);
    QVERIFY(view->isComparing());
    w->resetAction()->trigger();
    QCOMPARE(ended.count(), 1);
    QVERIFY(!view->isComparing());
    QVERIFY2(view->comparisonMessage().contains(QStringLiteral("a new run began")),
             qPrintable(view->comparisonMessage()));
    QVERIFY(waitFresh(*w));
    QCoreApplication::processEvents();
    QCOMPARE(measured.count(), 0);
    QCOMPARE(view->comparison(), compared);
    QVERIFY(view->compareButton()->isEnabled());
}

// A file whose dataset is gone shows the members it holds without a trainer: the switches
// come from the file too (eval's ensemble), not "every member on".
void TestGuiFiles::withoutItsDataTheSwitchedOffMemberStaysOut() {
    QTemporaryDir dir;
    const QString csv = dir.filePath(QStringLiteral("points.csv"));
    QVERIFY(ensemble::test::writePlanarCsv(csv));
    const QString weights = dir.filePath(QStringLiteral("csv.safetensors"));
    const ensemble::test::Run r = ensemble::test::runCli(
        {QStringLiteral("train"), QStringLiteral("--set"), QStringLiteral("dataset.kind=\"csv\""),
         QStringLiteral("--set"), QStringLiteral("dataset.path=\"%1\"").arg(csv),
         QStringLiteral("--set"), QStringLiteral("ensemble.members=3"), QStringLiteral("--set"),
         QStringLiteral("training.steps=5"), QStringLiteral("--set"),
         QStringLiteral("training.schedule=[{\"step\": 3, \"set\": "
                        "{\"ensemble.switched_off\": [0]}}]"),
         QStringLiteral("--set"), QStringLiteral("backend.kind=\"cpu\""),
         QStringLiteral("--export"), weights, QStringLiteral("--quiet")});
    QVERIFY2(r.code == 0, qPrintable(r.err));
    QVERIFY(QFile::remove(csv));

    auto w = makeWindow();
    QSignalSpy opened(w.get(), &MainWindow::ensembleOpened);
    QVERIFY(w->openEnsemble(weights));
    QVERIFY(opened.wait(20000));
    const uint64_t id = w->controller()->currentRunId();
    QVERIFY(waitSnapshot(*w, [id](const auto& s) { return s.run->runId == id; }));
    const SnapshotPtr s = w->controller()->snapshot();
    QVERIFY(!s->run->missingData.empty());
    QCOMPARE(s->switchedOn, (std::vector<uint8_t>{0, 1, 1}));
    QCOMPARE(s->included, (std::vector<uint8_t>{0, 1, 1}));
    QCOMPARE(s->includedCount, 2);
}

void TestGuiFiles::metricsFileIsRefusedAndTheExperimentKept() {
    QTemporaryDir dir;
    auto w = makeWindow();
    w->loadExperiment(spirals(5), QString());
    QVERIFY(waitFresh(*w));
    w->trainAction()->trigger();
    QVERIFY(waitSnapshot(*w, [](const auto& s) { return s.step == 5 && !s.running; }));
    // The files an export writes: its metrics beside the weights.
    QVERIFY(!ensemble::test::exportedParameters(*w, dir, "run").empty());
    const QString metrics = dir.filePath(QStringLiteral("run.metrics.json"));
    QVERIFY(QFile::exists(metrics));

    const uint64_t run = w->controller()->currentRunId();
    const nlohmann::json before = w->panel()->config();
    QString error;
    QVERIFY(!w->openFile(metrics, &error));
    QVERIFY2(error.contains(QStringLiteral("run.metrics.json is not an experiment")) &&
                 error.contains(QStringLiteral("run.safetensors")),
             qPrintable(error));
    // Nothing changed: the run, its step, the panel, and Train / Step / Reset work.
    QCOMPARE(w->controller()->currentRunId(), run);
    QCOMPARE(w->controller()->snapshot()->step, int64_t{5});
    QCOMPARE(w->panel()->config(), before);
    QVERIFY(w->panel()->isValid());
    QVERIFY(w->trainAction()->isEnabled() && w->resetAction()->isEnabled());
    QVERIFY(!w->recentFiles().contains(QFileInfo(metrics).absoluteFilePath()));
    // A JSON array, a section that is not an object: refused too; a real experiment is not.
    const QString array = dir.filePath(QStringLiteral("list.json"));
    QFile a(array);
    QVERIFY(a.open(QIODevice::WriteOnly));
    a.write("[1, 2]");
    a.close();
    QVERIFY(!w->openFile(array, &error));
    QVERIFY2(error.contains(QStringLiteral("list.json is not an experiment")), qPrintable(error));
    QCOMPARE(ensemble::ui::notAnExperiment(QStringLiteral("x.json"), {{"model", 3}}).isEmpty(),
             false);
    QVERIFY(ensemble::ui::notAnExperiment(QStringLiteral("x.json"), spirals(5)).isEmpty());
    // The Open dialog does not offer the metrics files.
    QVERIFY(!ensemble::ui::offeredByOpen(QStringLiteral("run.metrics.json")));
    QVERIFY(ensemble::ui::offeredByOpen(QStringLiteral("run.json")));
    QVERIFY(ensemble::ui::offeredByOpen(QStringLiteral("run.safetensors")));
}

// Every config the engine refuses (tst_config's set) is refused by File > Open with the engine's
// message, the experiment shown kept, and by `ensemble-cli train` with the same message and exit
// code 2: one validation for both programs, before any field of the form sees a value.
void TestGuiFiles::invalidConfigIsRefusedAsTheCliRefusesIt() {
    QTemporaryDir dir;
    auto w = makeWindow();
    w->loadExperiment(spirals(5), QString());
    QVERIFY(waitFresh(*w));
    const uint64_t run = w->controller()->currentRunId();
    const nlohmann::json before = w->panel()->config();
    for (const ensemble::test::InvalidConfig& row : ensemble::test::invalidConfigs()) {
        const QString path = ensemble::test::writeText(dir.path(), "bad.json", row.config);
        QVERIFY(!path.isEmpty());
        QString engine;
        try {
            (void)ensemble::parseConfig(
                ensemble::composeConfig(QFile::encodeName(path).toStdString(), {}));
        } catch (const ensemble::ConfigError& e) {
            engine = QString::fromStdString(e.what());
        }
        QVERIFY2(engine.contains(QString::fromStdString(row.expected)), row.name.c_str());
        QString error;
        QVERIFY2(!w->openFile(path, &error), row.name.c_str());
        QVERIFY2(error.contains(engine),
                 qPrintable(QString::fromStdString(row.name) + QStringLiteral(": ") + error));
        QCOMPARE(w->controller()->currentRunId(), run);
        QCOMPARE(w->panel()->config(), before);
        const ensemble::test::Run train =
            ensemble::test::runCli({QStringLiteral("train"), QStringLiteral("--config"), path});
        QVERIFY2(train.code == 2 && train.err.contains(engine),
                 qPrintable(ensemble::test::describe(train)));
    }
    QVERIFY(w->panel()->isValid());
    QVERIFY(w->trainAction()->isEnabled());
}

void TestGuiFiles::choosingAPresetAfterTrainingAsksFirst() {
    const std::unique_ptr<MainWindow> window = askingWindow();
    MainWindow& w = *window;
    QComboBox* box = w.panel()->presetCombo();
    const int moons = box->findData(QStringLiteral("moons"));
    const int linear = box->findData(QStringLiteral("linear"));
    QVERIFY(moons >= 0 && linear >= 0);
    const auto choose = [box](int index) {  // as a person picks it from the list
        box->setCurrentIndex(index);
        Q_EMIT box->activated(index);
    };
    int asked = 0;

    // Nothing trained: the preset loads without a question.
    w.loadExperiment(spirals(5), QString());
    QVERIFY(waitFresh(w));
    uint64_t before = w.controller()->currentRunId();
    choose(linear);
    QVERIFY(w.controller()->currentRunId() != before);
    QCOMPARE(asked, 0);

    // Trained: asked; Cancel keeps the run, and the box names its experiment again.
    w.loadExperiment(spirals(5), QString());
    QVERIFY(waitFresh(w));
    w.trainAction()->trigger();
    QVERIFY(waitSnapshot(w, [](const auto& s) { return s.step == 5 && !s.running; }));
    before = w.controller()->currentRunId();
    whenModal(
        QStringLiteral("ReplaceRunQuestion"), [](QWidget* q) { answer(q, QMessageBox::Cancel); },
        &asked);
    choose(moons);
    QCOMPARE(asked, 1);
    QCOMPARE(w.controller()->currentRunId(), before);
    QCOMPARE(w.panel()->presetName(), QString());  // "Custom", as before the choice
    QVERIFY(engineIdle(*w.controller()));
    QCOMPARE(w.controller()->snapshot()->step, int64_t{5});

    // Discard: the preset replaces it.
    whenModal(
        QStringLiteral("ReplaceRunQuestion"), [](QWidget* q) { answer(q, QMessageBox::Discard); },
        &asked);
    choose(moons);
    QCOMPARE(asked, 2);
    QVERIFY(w.controller()->currentRunId() != before);
    QCOMPARE(w.panel()->presetName(), QStringLiteral("moons"));
    QVERIFY(waitSnapshot(w, [](const auto& s) {
        return s.run->config.dataset.kind == ensemble::DatasetKind::Moons;
    }));
}

// File > Open (and Open Recent, a drop: one path) and Regenerate ask as a preset does; a file the
// engine refuses is refused before anything is asked.
void TestGuiFiles::openingAFileOrNewDataAfterTrainingAsksFirst() {
    QTemporaryDir dir;
    const QString moons =
        ensemble::test::writeText(dir.path(), "moons.json", ensemble::presetText("moons"));
    const QString invalid =
        ensemble::test::writeText(dir.path(), "bad.json", R"({"ensemble": {"members": -3}})");
    const std::unique_ptr<MainWindow> window = askingWindow();
    MainWindow& w = *window;
    int asked = 0;
    w.loadExperiment(spirals(5), QString());
    QVERIFY(waitFresh(w));
    w.trainAction()->trigger();
    QVERIFY(waitSnapshot(w, [](const auto& s) { return s.step == 5 && !s.running; }));
    const uint64_t trained = w.controller()->currentRunId();

    // Refused before asking: the run stays, the engine's message says why.
    QString error;
    QVERIFY(!w.openExperiment(invalid, &error));
    QVERIFY2(error.contains(QStringLiteral("ensemble.members")), qPrintable(error));
    QCOMPARE(asked, 0);

    // Cancel keeps the run: no error, nothing opened.
    whenModal(
        QStringLiteral("ReplaceRunQuestion"), [](QWidget* q) { answer(q, QMessageBox::Cancel); },
        &asked);
    error.clear();
    QVERIFY(!w.openFile(moons, &error));
    QCOMPARE(asked, 1);
    QVERIFY2(error.isEmpty(), qPrintable(error));
    QCOMPARE(w.controller()->currentRunId(), trained);
    QVERIFY(engineIdle(*w.controller()));
    QCOMPARE(w.controller()->snapshot()->step, int64_t{5});

    // Regenerate asks too; kept, the new data seed waits in the panel for a Reset.
    auto* regenerate = [&w]() -> QPushButton* {
        for (QPushButton* b : w.panel()->findChildren<QPushButton*>()) {
            if (b->text().remove(QLatin1Char('&')) == QStringLiteral("Regenerate")) {
                return b;
            }
        }
        return nullptr;
    }();
    QVERIFY(regenerate != nullptr && regenerate->isEnabled());
    whenModal(
        QStringLiteral("ReplaceRunQuestion"), [](QWidget* q) { answer(q, QMessageBox::Cancel); },
        &asked);
    regenerate->click();
    QCOMPARE(asked, 2);
    QCOMPARE(w.controller()->currentRunId(), trained);
    QVERIFY(engineIdle(*w.controller()));
    QCOMPARE(w.controller()->snapshot()->step, int64_t{5});

    // Discard: the file replaces the run.
    whenModal(
        QStringLiteral("ReplaceRunQuestion"), [](QWidget* q) { answer(q, QMessageBox::Discard); },
        &asked);
    QVERIFY(w.openFile(moons, &error));
    QCOMPARE(asked, 3);
    QVERIFY(w.controller()->currentRunId() != trained);
    QVERIFY(waitSnapshot(w, [](const auto& s) {
        return s.run->config.dataset.kind == ensemble::DatasetKind::Moons && s.step == 0;
    }));
    QVERIFY(w.recentFiles().contains(QFileInfo(moons).absoluteFilePath()));

    // Nothing trained: no question.
    QVERIFY(w.openFile(moons, &error));
    QCOMPARE(asked, 3);
}

void TestGuiFiles::statusMessageGoesWithItsRun() {
    QTemporaryDir dir;
    const QString checkpoint = dir.filePath(QStringLiteral("c.ckpt.safetensors"));
    QStringList args = switchedOffRun(dir.filePath(QStringLiteral("c.safetensors")));
    args << QStringLiteral("--checkpoint") << checkpoint;
    const ensemble::test::Run r = ensemble::test::runCli(args);
    QVERIFY2(r.code == 0, qPrintable(r.err));
    auto w = makeWindow();
    QSignalSpy opened(w.get(), &MainWindow::ensembleOpened);
    QVERIFY(w->openEnsemble(checkpoint));
    QVERIFY(opened.wait(20000));
    QVERIFY2(w->statusMessage().contains(QStringLiteral("resumed checkpoint")),
             qPrintable(w->statusMessage()));
    // A preset replaces the run: the message about the checkpoint goes at once, before the new
    // run shows, and stays gone after a second preset.
    w->loadExperiment(nlohmann::json::parse(ensemble::presetText("moons")),
                      QStringLiteral("moons"));
    QVERIFY2(!w->statusMessage().contains(QStringLiteral("checkpoint")),
             qPrintable(w->statusMessage()));
    QVERIFY(waitFresh(*w));
    w->loadExperiment(nlohmann::json::parse(ensemble::presetText("linear")),
                      QStringLiteral("linear"));
    QVERIFY(waitFresh(*w));
    QVERIFY2(!w->statusMessage().contains(QStringLiteral("checkpoint")),
             qPrintable(w->statusMessage()));
    // A message about the run that stands stays while it stands.
    w->showStatus(QStringLiteral("about linear"));
    w->controller()->step();
    QVERIFY(waitSnapshot(*w, [](const auto& s) { return s.step == 1; }));
    QCOMPARE(w->statusMessage(), QStringLiteral("about linear"));
}

void TestGuiFiles::busyOverlayCoversTheOldRunAndTheWholeSplitMeasure() {
    MainWindow::Options options;
    options.useSettings = false;
    options.tuning.maxEvalRows = 50;  // the live subset: 50 of the test rows
    MainWindow w(options);
    w.resize(1200, 800);
    w.show();
    // At once (a person sees it after 200 ms, unless the run is there by then).
    auto* overlay = w.findChild<ensemble::ui::BusyOverlay*>(QStringLiteral("BusyOverlay"));
    QVERIFY(overlay != nullptr);
    overlay->setShowDelay(0);
    w.loadExperiment(spirals(5), QString());
    QVERIFY(waitSnapshot(w, [](const auto& s) { return s.step == 0 && !s.evaluating; }));
    QCOMPARE(w.busyMessage(), QString());
    // Every snapshot the window shows, with what the overlay said then.
    QList<QPair<bool, QString>> shown;
    connect(&w, &MainWindow::snapshotShown, &w, [&] {
        shown.append({w.controller()->snapshot()->evaluating, w.busyMessage()});
    });
    // Another experiment: the previous run's views are covered at once, saying why.
    nlohmann::json other = spirals(5);
    other["dataset"]["kind"] = "moons";
    w.loadExperiment(other, QString());
    QVERIFY2(!w.busyMessage().isEmpty(), "no overlay while the run is built");
    // Nor do the status bar's figures of the run before.
    auto* figures = w.findChild<QLabel*>(QStringLiteral("TestFigures"));
    QVERIFY(figures != nullptr);
    QCOMPARE(figures->text(), QString());
    const uint64_t id = w.controller()->currentRunId();
    QVERIFY(waitSnapshot(w, [id](const auto& s) { return s.run->runId == id && !s.evaluating; }));
    QTRY_COMPARE(w.busyMessage(), QString());
    QVERIFY2(figures->text().startsWith(QStringLiteral("test accuracy")),
             qPrintable(figures->text()));
    // Paused: the step shows at once (live rows), marked while the whole split is measured,
    // then the whole split's figures and no overlay.
    shown.clear();
    QSignalSpy measuring(w.controller(), &ensemble::ui::EngineController::measuring);
    w.trainAction()->trigger();
    QVERIFY(waitSnapshot(w, [](const auto& s) {
        return s.step == 5 && !s.running && !s.evaluating && !s.figuresOnSubset();
    }));
    QTRY_VERIFY(!shown.isEmpty() && !shown.back().first);
    bool sawEvaluating = false;
    for (const auto& [evaluating, message] : shown) {
        if (evaluating) {
            sawEvaluating = true;
            QVERIFY2(message.contains(QStringLiteral("measuring")), qPrintable(message));
        }
    }
    QVERIFY(sawEvaluating);
    QCOMPARE(w.busyMessage(), QString());
    // Said before each measure of the stopped run: the step reached, on the live rows (the
    // curves' point, the first snapshot), then on the whole split.
    QVERIFY(measuring.size() >= 2);
    QCOMPARE(measuring.at(0).at(1).toLongLong(), qint64{5});
    QCOMPARE(measuring.at(0).at(2).toLongLong(), w.controller()->snapshot()->run->evalTest.rows);
    QCOMPARE(measuring.last().at(2).toLongLong(), w.controller()->snapshot()->run->testRows);
}

void TestGuiFiles::exportDialogRemembersTheType() {
    QTemporaryDir dir;
    QSettings().remove(QStringLiteral("files/exportFormat"));
    auto w = makeWindow();
    w->loadExperiment(spirals(3), QString());
    QVERIFY(waitFresh(*w));
    w->trainAction()->trigger();
    QVERIFY(waitSnapshot(*w, [](const auto& s) { return s.step == 3 && !s.running; }));
    int seen = 0;
    QString firstFilter;
    whenModal(
        QStringLiteral("ExportDialog"),
        [&](QWidget* d) {
            auto* dialog = static_cast<QFileDialog*>(d);
            firstFilter = dialog->selectedNameFilter();
            const QString npz = dialog->nameFilters().filter(QStringLiteral("npz")).value(0);
            dialog->selectNameFilter(npz);
            dialog->selectFile(dir.filePath(QStringLiteral("w")));
            // The name as a person types it: selectFile alone can lose to the dialog's own
            // name for the new filter while its folder model is still loading.
            if (auto* name = dialog->findChild<QLineEdit*>(QStringLiteral("fileNameEdit"))) {
                name->setText(dir.filePath(QStringLiteral("w")));
            }
            static_cast<QDialog*>(dialog)->accept();  // QFileDialog::accept, as OK does
        },
        &seen);
    QSignalSpy done(w.get(), &MainWindow::exportFinished);
    w->exportAction()->trigger();
    QCOMPARE(seen, 1);
    QVERIFY(done.wait(20000));
    QVERIFY2(done.at(0).at(0).toBool(), qPrintable(done.at(0).at(1).toString()));
    QVERIFY(firstFilter.contains(QStringLiteral("safetensors")));
    QVERIFY2(QFile::exists(dir.filePath(QStringLiteral("w.npz"))),
             qPrintable(done.at(0).at(2).toStringList().join(QStringLiteral(", "))));
    QCOMPARE(ensemble::ui::FileActions::rememberedExportFormat(), ensemble::ExportFormat::Npz);
    // Next time (another window, as after a restart) the dialog offers NumPy first.
    auto again = makeWindow();
    again->loadExperiment(spirals(3), QString());
    QVERIFY(waitFresh(*again));
    again->controller()->step();
    QVERIFY(waitSnapshot(*again, [](const auto& s) { return s.step == 1; }));
    QString secondFilter;
    whenModal(
        QStringLiteral("ExportDialog"),
        [&](QWidget* d) {
            secondFilter = static_cast<QFileDialog*>(d)->selectedNameFilter();
            static_cast<QFileDialog*>(d)->reject();
        },
        &seen);
    again->exportAction()->trigger();
    QCOMPARE(seen, 2);
    QVERIFY2(secondFilter.contains(QStringLiteral("npz")), qPrintable(secondFilter));
}

void TestGuiFiles::exportJobChecksTheMeshBeforeTheFile() {
    auto w = makeWindow();
    nlohmann::json c = spirals(5);
    c["ensemble"]["members"] = 5;
    w->loadExperiment(c, QString());
    QVERIFY(waitFresh(*w));
    auto* action = w->findChild<QAction*>(QStringLiteral("ExportJobAction"));
    QVERIFY(action != nullptr);
    int seen = 0;
    QString problem;
    bool stayed = false;
    whenModal(
        QStringLiteral("ExportJobDialog"),
        [&](QWidget* d) {
            d->findChild<QSpinBox*>(QStringLiteral("EnsembleAxis"))->setValue(6);  // 6 > K = 5
            d->findChild<QDialogButtonBox*>()->button(QDialogButtonBox::Ok)->click();
            // Refused in the dialog: no file was asked for, the dialog stays with the reason.
            stayed = QApplication::activeModalWidget() == d && d->isVisible();
            problem = d->findChild<QLabel*>(QStringLiteral("MeshProblem"))->text();
            static_cast<QDialog*>(d)->reject();
        },
        &seen);
    action->trigger();
    QCOMPARE(seen, 1);
    QVERIFY(stayed);
    QVERIFY2(problem.contains(QStringLiteral("backend.mesh")), qPrintable(problem));
}

void TestGuiFiles::openRecentNamesTheFolderAndListsExports() {
    QTemporaryDir dir;
    auto w = makeWindow();
    w->loadExperiment(spirals(3), QString());
    QVERIFY(waitFresh(*w));
    w->controller()->step();
    QVERIFY(waitSnapshot(*w, [](const auto& s) { return s.step == 1; }));
    // An export is in Open Recent as soon as it is written.
    QVERIFY(!ensemble::test::exportedParameters(*w, dir, "fresh").empty());
    const QString weights =
        QFileInfo(dir.filePath(QStringLiteral("fresh.safetensors"))).absoluteFilePath();
    QCOMPARE(w->recentFiles().value(0), weights);
    // So is a file opened by openEnsemble.
    QSignalSpy opened(w.get(), &MainWindow::ensembleOpened);
    QVERIFY(w->openEnsemble(m_switched));
    QCOMPARE(w->recentFiles().value(0), QFileInfo(m_switched).absoluteFilePath());
    QVERIFY(opened.wait(20000));
    // The menu shows names; each tooltip names the folder, and the menu shows tooltips.
    auto* menu = w->findChild<QMenu*>(QStringLiteral("OpenRecentMenu"));
    QVERIFY(menu != nullptr);
    QVERIFY(menu->toolTipsVisible());
    Q_EMIT menu->aboutToShow();
    QAction* item = nullptr;
    for (QAction* a : menu->actions()) {
        if (a->text().startsWith(QStringLiteral("fresh.safetensors"))) {
            item = a;
        }
    }
    QVERIFY(item != nullptr);
    QVERIFY2(item->toolTip().contains(QDir::toNativeSeparators(dir.path())),
             qPrintable(item->toolTip()));
}

void TestGuiFiles::aboutNamesMpi() {
    // ensemble-cli links MPI when the build found it; About says which.
    const QString options = ensemble::ui::buildOptions();
    QVERIFY2(options.contains(QStringLiteral("MPI ")), qPrintable(options));
#ifdef ENSEMBLE_TEST_HAVE_MPI
    QVERIFY2(!options.contains(QStringLiteral("MPI off")), qPrintable(options));
#else
    QVERIFY2(options.contains(QStringLiteral("MPI off")), qPrintable(options));
#endif
}

QTEST_MAIN(TestGuiFiles)
#include "tst_gui_files.moc"
