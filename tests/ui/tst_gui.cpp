// The window, as a person uses it (offscreen): Train, Pause, Step, Reset, invalid values,
// presets through Save/Open, member selection and switches, heatmap quantities, Export, a
// responsive GUI thread while K = 100 members train, closing while training. Behaviour only:
// how late the GUI's timers fire and how long closing takes are measured in bench/
// (gui_throughput.py, ensemble-gui-bench).
#include <QAction>
#include <QApplication>
#include <QCheckBox>
#include <QComboBox>
#include <QDir>
#include <QFileDialog>
#include <QImage>
#include <QLabel>
#include <QLineEdit>
#include <QMessageBox>
#include <QPushButton>
#include <QSettings>
#include <QSignalSpy>
#include <QSpinBox>
#include <QStandardItemModel>
#include <QStandardPaths>
#include <QStatusBar>
#include <QTemporaryDir>
#include <QToolBar>
#include <QtTest>

#include <algorithm>
#include <cmath>
#include <memory>

#include "config/config.h"
#include "config/config_schema.h"
#include "file_actions.h"
#include "io/model_io.h"
#include "main_window.h"
#include "panels/experiment_panel.h"
#include "registry/registry.h"
#include "support/gui_test_support.h"
#include "support/picture_checks.h"
#include "support/test_support.h"
#include "view_tabs.h"
#include "views/boundary_view.h"
#include "views/curves_view.h"
#include "views/members_view.h"
#include "views/shift_view.h"
#include "widgets/lazy_refresh.h"

using ensemble::test::engineIdle;
using ensemble::test::kLongRun;
using ensemble::test::makeWindow;
using ensemble::test::smallConfig;
using ensemble::test::waitFresh;
using ensemble::test::waitSnapshot;
using ensemble::ui::MainWindow;
using ensemble::ui::SnapshotPtr;

namespace {

QImage boundaryImage(MainWindow& w) {
    w.setView(QStringLiteral("boundary"));
    QCoreApplication::processEvents();
    return w.boundaryView()->canvas()->grab().toImage();
}

void click(MainWindow& w, QAction* action) {
    auto* bar = w.findChild<QToolBar*>(QStringLiteral("RunToolBar"));
    QWidget* button = bar->widgetForAction(action);
    QVERIFY(button != nullptr);
    QTest::mouseClick(button, Qt::LeftButton);
}

QString statusText(MainWindow& w) {
    QStringList parts;
    for (QLabel* l : w.statusBar()->findChildren<QLabel*>()) {
        parts << l->text();
    }
    return parts.join(QLatin1Char('|'));
}

}  // namespace

class TestGui : public QObject {
    Q_OBJECT

  private Q_SLOTS:
    void initTestCase();
    void trainPauseStepReset();
    void invalidValueDisablesTrain();
    void presetRoundTripsThroughSaveAndOpen();
    void membersAndQuantitiesChangeImages();
    void exportWritesLoadableFiles();
    void guiStaysResponsiveWithHundredMembers();
    void closesCleanlyWhileTraining();
    void settingsPersistLayoutAndExperiment();
    void cudaChoiceShowsWhyItIsUnavailable();
    void aHiddenViewCatchesUpOnceWhenShown();
    void hiddenCurvesAreDrawnWhenTheirTabOpens();
    void resetKeepsAMemberSwitchedOffAndSaysSo();
    void aViewForOtherDataSaysWhyItsKeyDoesNothing();
    void everyViewExportsItsPictureAsSvgAndPng();
    void aPictureThatCannotBeWrittenLeavesNoFile();
    void aZoomedBoundaryExportsWhatItShows();
    void exportPictureAsksForAFileAndRemembersItsFolder();
};

void TestGui::initTestCase() {
    ensemble::test::isolateSettings();
}

void TestGui::trainPauseStepReset() {
    auto w = makeWindow();
    QVERIFY(QTest::qWaitForWindowExposed(w.get()));
    w->loadExperiment(smallConfig(), QString());
    QVERIFY(waitFresh(*w));
    const SnapshotPtr first = w->controller()->snapshot();
    const QImage initial = boundaryImage(*w);
    QVERIFY(w->trainAction()->isEnabled());

    // Train: snapshots arrive, the step counter advances, the boundary image changes.
    const uint64_t received = w->controller()->snapshotsReceived();
    click(*w, w->trainAction());
    // Snapshots are paced by what they cost to build: on a loaded machine, seconds apart.
    QVERIFY2(QTest::qWaitFor([&] { return w->controller()->snapshotsReceived() >= received + 3; },
                             60000),
             qPrintable(QStringLiteral("snapshots %1 -> %2, running %3, step %4, %5")
                            .arg(received)
                            .arg(w->controller()->snapshotsReceived())
                            .arg(w->controller()->isRunning())
                            .arg(w->controller()->snapshot()->step)
                            .arg(w->trainAction()->text())));
    QVERIFY(waitSnapshot(*w, [](const auto& s) { return s.running && s.step > 0; }));
    QVERIFY(statusText(*w).contains(QStringLiteral("step ")));
    QVERIFY(!statusText(*w).contains(QStringLiteral("step 0 /")));
    QCOMPARE(w->trainAction()->text(), QStringLiteral("Pause"));
    QVERIFY(boundaryImage(*w) != initial);

    // Pause: progress stops.
    click(*w, w->trainAction());
    QVERIFY(waitSnapshot(*w, [](const auto& s) { return !s.running; }));
    const int64_t paused = w->controller()->snapshot()->step;
    QVERIFY(engineIdle(*w->controller()));
    QCOMPARE(w->controller()->snapshot()->step, paused);
    QCOMPARE(w->trainAction()->text(), QStringLiteral("Train"));

    // Step (S): exactly one step.
    w->activateWindow();
    QVERIFY(QTest::qWaitForWindowActive(w.get()));
    w->centralWidget()->setFocus();
    QTest::keyClick(w.get(), Qt::Key_S);
    QVERIFY(waitSnapshot(*w, [paused](const auto& s) { return s.step == paused + 1; }));
    QVERIFY(engineIdle(*w->controller()));
    QCOMPARE(w->controller()->snapshot()->step, paused + 1);

    // Reset (R) with the same seed: step 0 and the same initial weights.
    QTest::keyClick(w.get(), Qt::Key_R);
    QVERIFY(waitSnapshot(*w, [&](const auto& s) { return s.step == 0 && s.run != first->run; }));
    QVERIFY(w->controller()->snapshot()->grid.memberProbabilities ==
            first->grid.memberProbabilities);
    QCOMPARE(boundaryImage(*w), initial);

    // A new ensemble seed, then Reset: new initial weights.
    auto* seed = qobject_cast<QSpinBox*>(w->panel()->editor(QStringLiteral("ensemble.seed")));
    QVERIFY(seed != nullptr);
    seed->setValue(seed->value() + 1);
    const auto before = w->controller()->snapshot()->run;
    click(*w, w->resetAction());
    QVERIFY(waitSnapshot(*w, [&](const auto& s) { return s.step == 0 && s.run != before; }));
    QVERIFY(w->controller()->snapshot()->grid.memberProbabilities !=
            first->grid.memberProbabilities);
    QVERIFY(boundaryImage(*w) != initial);
}

void TestGui::invalidValueDisablesTrain() {
    auto w = makeWindow();
    w->loadExperiment(smallConfig(), QString());
    QVERIFY(waitFresh(*w));
    QVERIFY(w->trainAction()->isEnabled());
    // The form's ranges and tooltips are the schema's: K cannot go below 1.
    auto* members = qobject_cast<QSpinBox*>(w->panel()->editor(QStringLiteral("ensemble.members")));
    QVERIFY(members != nullptr);
    const ensemble::KeySpec& spec = ensemble::keySpec("ensemble.members");
    QCOMPARE(members->minimum(), static_cast<int>(spec.min));
    QCOMPARE(members->maximum(), static_cast<int>(spec.max));
    QVERIFY(members->toolTip().contains(QString::fromStdString(ensemble::plainHelp(spec))));
    // A value the engine's parser rejects: its reason, on the field it names.
    auto* hidden = qobject_cast<QLineEdit*>(w->panel()->editor(QStringLiteral("model.hidden")));
    QVERIFY(hidden != nullptr);
    hidden->setText(QStringLiteral("32, 0"));
    QVERIFY(!w->panel()->isValid());
    QVERIFY(!w->trainAction()->isEnabled());
    QVERIFY(!w->stepAction()->isEnabled());
    QLabel* reason = w->panel()->errorLabel(QStringLiteral("model.hidden"));
    QVERIFY(reason != nullptr);
    QVERIFY(!reason->isHidden());
    QVERIFY2(reason->text().contains(QStringLiteral("model.hidden[1]: expected a width between 1")),
             qPrintable(reason->text()));
    QVERIFY(hidden->property("invalid").toBool());
    hidden->setText(QStringLiteral("32, 3"));
    QVERIFY(w->panel()->isValid());
    QVERIFY(reason->isHidden());
    QVERIFY(!hidden->property("invalid").toBool());

    // Text that is not a width: the form's own reason, on the field.
    QVERIFY(hidden != nullptr);
    hidden->setText(QStringLiteral("32, x"));
    QVERIFY(!w->trainAction()->isEnabled());
    QVERIFY(!w->panel()->errorLabel(QStringLiteral("model.hidden"))->isHidden());
    QVERIFY(w->panel()
                ->errorLabel(QStringLiteral("model.hidden"))
                ->text()
                .contains(QStringLiteral("\"x\"")));
    hidden->setText(QStringLiteral("16, 16"));
    QVERIFY(w->panel()->isValid());
    // The learning rate out of range: the engine's reason under the lr field.
    auto* lr = w->panel()->findChild<QLineEdit*>();
    QVERIFY(lr != nullptr);
    const auto edits = w->panel()->findChildren<QLineEdit*>();
    for (QLineEdit* e : edits) {
        if (e->text() == QStringLiteral("0.01")) {
            e->setText(QStringLiteral("-1"));
            break;
        }
    }
    QVERIFY(!w->panel()->isValid());
    QVERIFY(w->panel()->errors().contains(QStringLiteral("optimizer.lr")));
    QVERIFY(!w->panel()->errorLabel(QStringLiteral("optimizer.lr"))->isHidden());
    QVERIFY(!w->trainAction()->isEnabled());
}

void TestGui::presetRoundTripsThroughSaveAndOpen() {
    QTemporaryDir dir;
    auto w = makeWindow();
    const nlohmann::json moons = nlohmann::json::parse(ensemble::presetText("moons"));
    w->loadExperiment(moons, QStringLiteral("moons"));
    QCOMPARE(w->panel()->presetName(), QStringLiteral("moons"));
    const QString path = dir.filePath(QStringLiteral("moons.json"));
    QString error;
    QVERIFY2(w->saveExperiment(path, &error), qPrintable(error));
    w->loadExperiment(nlohmann::json::parse(ensemble::presetText("spirals")),
                      QStringLiteral("spirals"));
    QVERIFY(ensemble::parseConfig(w->panel()->config()).json != ensemble::parseConfig(moons).json);
    QVERIFY2(w->openExperiment(path, &error), qPrintable(error));
    QCOMPARE(QString::fromStdString(ensemble::parseConfig(w->panel()->config()).json.dump()),
             QString::fromStdString(ensemble::parseConfig(moons).json.dump()));
    QVERIFY(!w->openExperiment(dir.filePath(QStringLiteral("missing.json")), &error));
    QVERIFY(!error.isEmpty());
}

void TestGui::membersAndQuantitiesChangeImages() {
    auto w = makeWindow();
    w->loadExperiment(smallConfig({.bootstrap = "resample"}), QString());
    QVERIFY(waitFresh(*w));
    w->controller()->trainTo(150);
    QVERIFY(waitSnapshot(*w, [](const auto& s) { return s.step == 150 && !s.running; }));
    const QImage plain = boundaryImage(*w);

    // Select member 1 by clicking its tile: its contour and multiplicities are drawn.
    QVERIFY(w->setView(QStringLiteral("members")));
    QCoreApplication::processEvents();
    ensemble::ui::MembersGrid* grid = w->membersView()->grid();
    const QRect tile = grid->tileRect(1);
    QVERIFY(!tile.isEmpty());
    QTest::mouseClick(grid, Qt::LeftButton, {}, tile.center());
    QCOMPARE(w->selectedMember(), 1);
    const QImage selected = boundaryImage(*w);
    QVERIFY(selected != plain);

    // Switch member 0 off: the ensemble is recomputed.
    QVERIFY(w->setView(QStringLiteral("members")));
    QCoreApplication::processEvents();
    const QImage tilesBefore = grid->grab().toImage();
    QTest::mouseClick(grid, Qt::LeftButton, {}, grid->switchRect(0).center());
    QVERIFY(waitSnapshot(*w, [](const auto& s) { return s.includedCount == 3; }));
    QCoreApplication::processEvents();
    QVERIFY(grid->grab().toImage() != tilesBefore);
    const QImage three = boundaryImage(*w);
    QVERIFY(three != selected);

    // Another heatmap quantity.
    QComboBox* quantity = w->boundaryView()->quantityCombo();
    quantity->setCurrentIndex(static_cast<int>(ensemble::ui::HeatQuantity::Epistemic));
    const QImage epistemic = boundaryImage(*w);
    QVERIFY(epistemic != three);
    quantity->setCurrentIndex(static_cast<int>(ensemble::ui::HeatQuantity::Disagreement));
    QVERIFY(boundaryImage(*w) != epistemic);

    // The hover read-out names the ensemble's probabilities and the members' spread.
    auto* canvas = w->boundaryView()->canvas();
    const QString text = canvas->readout(QPointF(canvas->width() / 2.0, canvas->height() / 2.0));
    QVERIFY2(text.contains(QStringLiteral("ensemble p(class) = (")), qPrintable(text));
    QVERIFY(text.contains(QStringLiteral("members p(class")));
}

void TestGui::exportWritesLoadableFiles() {
    QTemporaryDir dir;
    auto w = makeWindow();
    w->loadExperiment(smallConfig({.members = 3}), QString());
    QVERIFY(waitFresh(*w));
    w->controller()->trainTo(80);
    QVERIFY(waitSnapshot(*w, [](const auto& s) { return s.step == 80 && !s.running; }));
    QSignalSpy done(w.get(), &MainWindow::exportFinished);
    const QString base = dir.filePath(QStringLiteral("spirals-k3"));
    w->exportTo(base);
    QVERIFY(done.wait(20000));
    QVERIFY2(done.at(0).at(0).toBool(), qPrintable(done.at(0).at(1).toString()));
    // Weights, metrics (JSON, CSV) and the view's picture as PNG and SVG.
    QCOMPARE(done.at(0).at(2).toStringList().size(), 5);
    QVERIFY(!QImage(base + QStringLiteral(".png")).isNull());
    QVERIFY(done.at(0).at(2).toStringList().contains(base + QStringLiteral(".svg")));
    const ensemble::test::SvgContent svg = ensemble::test::readSvg(base + QStringLiteral(".svg"));
    QVERIFY2(svg.error.isEmpty(), qPrintable(svg.error));
    QVERIFY2(svg.description.contains(QStringLiteral("spirals, 3 members, step 80")),
             qPrintable(svg.description));
    const ensemble::LoadedEnsemble loaded =
        ensemble::importEnsemble((base + QStringLiteral(".safetensors")).toStdString());
    QCOMPARE(loaded.step, int64_t{80});
    const SnapshotPtr s = w->controller()->snapshot();
    const int64_t rows = static_cast<int64_t>(s->grid.size) * s->grid.size;
    const std::vector<float> lp = ensemble::predictLogProbs(loaded, s->grid.points.data(), rows);
    QCOMPARE(lp.size(), s->grid.memberProbabilities.size());
    for (std::size_t i = 0; i < lp.size(); ++i) {
        QVERIFY(std::abs(std::exp(lp[i]) - s->grid.memberProbabilities[i]) <
                static_cast<float>(ensemble::test::kFloatRounding));
    }

    // The dialog's other two formats: the whole ensemble as ONNX, NumPy's .npz, with
    // the same metrics and picture beside them.
    for (const auto& [format, suffix, magic] :
         {std::tuple{ensemble::ExportFormat::Onnx, ".onnx", QByteArray("\x08\x08", 2)},
          std::tuple{ensemble::ExportFormat::Npz, ".npz", QByteArray("PK\x03\x04", 4)}}) {
        done.clear();
        const QString other = dir.filePath(QStringLiteral("other"));
        w->exportTo(other, format);
        QVERIFY(done.wait(20000));
        QVERIFY2(done.at(0).at(0).toBool(), qPrintable(done.at(0).at(1).toString()));
        QFile weights(other + QLatin1String(suffix));
        QVERIFY2(weights.open(QIODevice::ReadOnly), suffix);
        QCOMPARE(weights.read(magic.size()), magic);
        QVERIFY(done.at(0).at(2).toStringList().contains(weights.fileName()));
        QVERIFY(QFile::exists(other + QStringLiteral(".metrics.json")));
        QVERIFY(!QFile::exists(other + QStringLiteral(".safetensors")));
    }

    // A folder that does not exist: a message that says what to do, nothing written.
    done.clear();
    const QString bad = dir.filePath(QStringLiteral("no/such/folder/run"));
    w->exportTo(bad);
    QVERIFY(done.wait(20000));
    QVERIFY(!done.at(0).at(0).toBool());
    QVERIFY(!w->lastError().isEmpty());
    auto* box = w->findChild<QMessageBox*>(QStringLiteral("ErrorBox"));
    QVERIFY(box != nullptr);
    QVERIFY(box->informativeText().contains(QStringLiteral("Nothing was written")));
    box->close();
    QVERIFY(!QFile::exists(bad + QStringLiteral(".safetensors")));
    QVERIFY(!QFile::exists(bad + QStringLiteral(".png")));
    QVERIFY(!QFile::exists(bad + QStringLiteral(".svg")));
}

void TestGui::guiStaysResponsiveWithHundredMembers() {
    // Behaviour, not timing: while K = 100 members train, the GUI thread keeps handling its
    // events and snapshots keep arriving, also on the heaviest view. How late the GUI's timers
    // fire is measured by bench/gui_throughput.py (the app's --train-steps run reports it).
    auto w = makeWindow();
    QVERIFY(QTest::qWaitForWindowExposed(w.get()));
    nlohmann::json c = smallConfig({.members = 100});
    c["dataset"]["n"] = 1000;
    w->loadExperiment(c, QString());
    QVERIFY(waitFresh(*w));
    const uint64_t before = w->controller()->snapshotsReceived();
    w->controller()->start();
    QVERIFY(QTest::qWaitFor([&] { return w->controller()->isRunning(); }, 20000));

    int ticks = 0;
    QTimer timer;
    timer.setInterval(10);
    QObject::connect(&timer, &QTimer::timeout, [&] { ++ticks; });
    timer.start();
    // Snapshots arrive and are shown while the engine trains (however slow the machine).
    QVERIFY(QTest::qWaitFor([&] { return w->controller()->snapshotsReceived() >= before + 2; },
                            ensemble::test::progressWaitMs(30000)));
    // The heaviest view: 2 x 100 member lines in Qt Charts. It still receives new snapshots.
    QVERIFY(w->setView(QStringLiteral("curves")));
    const uint64_t onCurves = w->controller()->snapshotsReceived();
    QVERIFY(QTest::qWaitFor([&] { return w->controller()->snapshotsReceived() >= onCurves + 2; },
                            ensemble::test::progressWaitMs(30000)));
    // The GUI thread's own timers keep firing while the members train: its event loop is not
    // held by the snapshots (fails only if it is blocked for the whole wait).
    const int ticksBefore = ticks;
    QTRY_VERIFY_WITH_TIMEOUT(ticks >= ticksBefore + 10, 30000);
    timer.stop();
    const SnapshotPtr s = w->controller()->snapshot();
    QVERIFY(s->step > 0);
    QVERIFY(s->running);
    // A click is still answered at once: Pause takes effect.
    w->controller()->pause();
    QVERIFY(QTest::qWaitFor([&] { return !w->controller()->isRunning(); }, 20000));
}

void TestGui::closesCleanlyWhileTraining() {
    auto w = makeWindow();
    w->loadExperiment(smallConfig({.members = 16}), QString());
    QVERIFY(waitFresh(*w));
    w->controller()->start();
    QVERIFY(QTest::qWaitFor([&] { return w->controller()->isRunning(); }, 20000));
    // Mid-run: chunks, snapshots and paints in flight.
    const uint64_t received = w->controller()->snapshotsReceived();
    QVERIFY(QTest::qWaitFor([&] { return w->controller()->snapshotsReceived() >= received + 2; },
                            ensemble::test::progressWaitMs(20000)));
    QVERIFY(w->controller()->isRunning());
    // Closing stops the engine thread and joins it: the window goes (a hang fails at CTest's
    // deadline).
    QVERIFY(w->close());
    w.reset();
    QCoreApplication::processEvents();
}

void TestGui::settingsPersistLayoutAndExperiment() {
    QSettings().clear();
    {
        MainWindow w;  // with QSettings
        w.show();
        nlohmann::json c = smallConfig({.members = 5});
        w.loadExperiment(c, QString());
        QVERIFY(waitFresh(w));
        QVERIFY(w.setView(QStringLiteral("sweep")));
        QVERIFY(w.close());
    }
    QSettings settings;
    QVERIFY(settings.contains(QStringLiteral("window/geometry")));
    QVERIFY(settings.contains(QStringLiteral("window/state")));
    QCOMPARE(settings.value(QStringLiteral("window/view")).toString(), QStringLiteral("sweep"));
    const auto last = nlohmann::json::parse(
        settings.value(QStringLiteral("experiment/last")).toByteArray().toStdString());
    QCOMPARE(last["ensemble"]["members"].get<int>(), 5);
    MainWindow again;
    QCOMPARE(again.currentViewName(), QStringLiteral("sweep"));
    QSettings().clear();
}

void TestGui::cudaChoiceShowsWhyItIsUnavailable() {
    ensemble::ui::ExperimentPanel panel;
    std::string reason;
    if (ensemble::cudaAvailable(0, reason)) {
        QSKIP("a CUDA device is usable here");
    }
    auto* model = qobject_cast<QStandardItemModel*>(panel.backendCombo()->model());
    QVERIFY(model != nullptr);
    QStandardItem* cuda = model->item(2);
    QVERIFY(!cuda->isEnabled());
    QVERIFY(cuda->toolTip().contains(QString::fromStdString(reason)));
    // A file that asks for CUDA anyway: marked in place, Train stays off.
    nlohmann::json c = smallConfig();
    c["backend"]["kind"] = "cuda";
    panel.setConfig(c);
    QVERIFY(!panel.isValid());
    QVERIFY(panel.errors().value(QStringLiteral("backend.kind")).contains(QStringLiteral("CUDA")));
}

QTEST_MAIN(TestGui)
#include "tst_gui.moc"

void TestGui::aHiddenViewCatchesUpOnceWhenShown() {
    QWidget view;
    int refreshes = 0;
    auto* lazy = new ensemble::ui::LazyRefresh(&view, [&refreshes] { ++refreshes; });
    // Hidden: requests only mark the view behind, however many come.
    lazy->request();
    lazy->request();
    QCOMPARE(refreshes, 0);
    QVERIFY(lazy->isStale());
    QVERIFY(lazy->postponeWhileHidden());
    // Shown: one refresh catches up.
    view.show();
    QCOMPARE(refreshes, 1);
    QVERIFY(!lazy->isStale());
    // Shown: a request refreshes at once, and nothing is postponed.
    lazy->request();
    QCOMPARE(refreshes, 2);
    QVERIFY(!lazy->postponeWhileHidden());
    // Hidden and shown again with nothing new: no refresh.
    view.hide();
    view.show();
    QCOMPARE(refreshes, 2);
}

void TestGui::hiddenCurvesAreDrawnWhenTheirTabOpens() {
    auto w = makeWindow();
    QVERIFY(QTest::qWaitForWindowExposed(w.get()));
    w->setView(QStringLiteral("boundary"));
    nlohmann::json config = smallConfig();
    config["training"]["eval_every"] = 10;  // a curve point every 10 steps
    w->loadExperiment(config, QString());
    QVERIFY(waitFresh(*w));
    w->controller()->trainTo(40);
    QVERIFY(waitSnapshot(*w, [](const auto& s) { return !s.running && s.step == 40; }));
    QVERIFY(engineIdle(*w->controller()));
    QCoreApplication::processEvents();
    // The curves tab was never shown: its charts wait for it.
    QVERIFY(!w->curvesView()->isVisible());
    QCOMPARE(w->curvesView()->ensemblePointCount(), 0);
    w->setView(QStringLiteral("curves"));
    QCoreApplication::processEvents();
    QVERIFY(w->curvesView()->isVisible());
    QVERIFY2(w->curvesView()->ensemblePointCount() > 1,
             qPrintable(QString::number(w->curvesView()->ensemblePointCount())));
}

void TestGui::resetKeepsAMemberSwitchedOffAndSaysSo() {
    auto w = makeWindow();
    w->loadExperiment(smallConfig({.members = 3}), QString());
    QVERIFY(waitFresh(*w));
    w->controller()->trainTo(5);
    QVERIFY(waitSnapshot(*w, [](const auto& s) { return !s.running && s.step == 5; }));
    w->controller()->setMemberSwitchedOn(1, false);
    QVERIFY(waitSnapshot(*w, [](const auto& s) { return s.includedCount == 2; }));
    const uint64_t before = w->controller()->currentRunId();
    w->resetAction()->trigger();
    QVERIFY(waitSnapshot(*w, [before](const auto& s) {
        return s.run->runId != before && s.step == 0 && s.switchedOn.size() == 3 &&
               s.switchedOn[1] == 0;
    }));
    const SnapshotPtr s = w->controller()->snapshot();
    QCOMPARE(s->switchedOn[0], uint8_t{1});
    QCOMPARE(s->switchedOn[2], uint8_t{1});
    QCOMPARE(s->includedCount, 2);
    QVERIFY2(w->statusMessage().contains(QStringLiteral("kept member 1 switched off")),
             qPrintable(w->statusMessage()));
}

void TestGui::aViewForOtherDataSaysWhyItsKeyDoesNothing() {
    using ensemble::ui::ViewId;
    auto w = makeWindow();
    w->loadExperiment(smallConfig(), QString());
    QVERIFY(waitFresh(*w));
    QCoreApplication::processEvents();
    ensemble::ui::ViewTabs* tabs = w->viewTabs();
    // 2-D spirals: Images, Filters and Regression do not apply; their keys say why.
    for (const ViewId id : {ViewId::Images, ViewId::Filters, ViewId::Regression}) {
        QAction* a = tabs->viewAction(id);
        QVERIFY(a != nullptr);
        QVERIFY2(!a->isEnabled(), qPrintable(a->text()));
        QVERIFY2(a->toolTip().contains(QStringLiteral("this run's data is spirals, 2 features, "
                                                      "classification")),
                 qPrintable(a->toolTip()));
    }
    QVERIFY(tabs->viewAction(ViewId::Boundary)->isEnabled());
    QVERIFY(tabs->viewAction(ViewId::Members)->isEnabled());
    // 1-D regression: the Regression view's key works, Boundary's says why it does not.
    w->loadExperiment(nlohmann::json::parse(ensemble::presetText("cubic")), QString());
    QVERIFY(waitFresh(*w));
    QCoreApplication::processEvents();
    QVERIFY(tabs->viewAction(ViewId::Regression)->isEnabled());
    QVERIFY(!tabs->viewAction(ViewId::Boundary)->isEnabled());
    QVERIFY2(tabs->viewAction(ViewId::Boundary)->toolTip().contains(QStringLiteral("2-D inputs")),
             qPrintable(tabs->viewAction(ViewId::Boundary)->toolTip()));
}

namespace {

// Every view the run shows, exported as SVG and PNG through File > Export picture: the SVG
// parses, draws (its elements, the title, a label's text and every chart title it shows:
// Qt Charts paints into the generator), and the PNG is the view's size.
// `views`: those the run must show (a view added later for any data is checked too).
void checkEveryViewsPicture(MainWindow& w, const QDir& dir, const QString& data,
                            const QList<ensemble::ui::ViewId>& views) {
    using ensemble::ui::ViewId;
    QList<ViewId> checked;
    for (int i = 0; i < ensemble::ui::kViewCount; ++i) {
        const auto id = static_cast<ViewId>(i);
        if (!w.setView(id)) {
            continue;  // not for this run's data
        }
        for (int k = 0; k < 5; ++k) {
            QCoreApplication::processEvents();  // charts lay out over a few event loops
        }
        QWidget* view = w.viewTabs()->view(id);
        const QString key = QString::fromLatin1(ensemble::ui::viewRow(id).key);
        const QString svgPath =
            dir.filePath(data + QLatin1Char('-') + key + QStringLiteral(".svg"));
        const QString pngPath =
            dir.filePath(data + QLatin1Char('-') + key + QStringLiteral(".png"));
        QString error;
        QVERIFY2(w.files()->exportPicture(svgPath, &error), qPrintable(error));
        QVERIFY2(w.files()->exportPicture(pngPath, &error), qPrintable(error));

        const ensemble::test::SvgContent svg = ensemble::test::readSvg(svgPath);
        QVERIFY2(svg.error.isEmpty(), qPrintable(svg.error));
        QVERIFY2(svg.drawing >= 20,
                 qPrintable(QStringLiteral("%1: %2 drawing elements").arg(key).arg(svg.drawing)));
        QCOMPARE(svg.title, QStringLiteral("EnsembleLab: ") + ensemble::ui::viewTitle(id));
        QVERIFY2(svg.description.contains(data), qPrintable(svg.description));
        // A text the view shows: a label's, or (views of charts only) every chart's titles.
        const QStringList labels = ensemble::test::labelTexts(view);
        const QStringList charts = ensemble::test::chartTexts(view);
        QVERIFY2(!labels.isEmpty() || !charts.isEmpty(), qPrintable(key));
        const bool aLabel = std::any_of(labels.begin(), labels.end(),
                                        [&](const QString& t) { return svg.text.contains(t); });
        QVERIFY2(labels.isEmpty() || aLabel,
                 qPrintable(QStringLiteral("%1: none of [%2] in [%3]")
                                .arg(key, labels.join(QStringLiteral(" | ")), svg.text.left(600))));
        // A title too long for its chart is elided on screen ("… of the..."), so in the SVG.
        for (const QString& t : charts) {
            const QString start = t.simplified().left(20).trimmed();
            QVERIFY2(svg.text.contains(start),
                     qPrintable(QStringLiteral("%1: chart text '%2' not in [%3]")
                                    .arg(key, t, svg.text.left(800))));
        }
        const QImage png(pngPath);
        QCOMPARE(png.size(), view->size() * view->devicePixelRatioF());
        checked << id;
    }
    for (const ViewId id : views) {
        QVERIFY2(checked.contains(id), qPrintable(ensemble::ui::viewTitle(id)));
    }
}

}  // namespace

void TestGui::everyViewExportsItsPictureAsSvgAndPng() {
    QTemporaryDir dir;
    const QDir out(dir.path());
    auto w = makeWindow();
    nlohmann::json spirals = smallConfig({.members = 3, .steps = 40, .threads = 1});
    spirals["training"]["eval_every"] = 10;  // curves with a few points
    w->loadExperiment(spirals, QString());
    QVERIFY(waitFresh(*w));
    w->controller()->trainTo(40);
    QVERIFY(waitSnapshot(*w, [](const auto& s) { return s.step == 40 && !s.running; }));
    // The Shift view with its six charts measured (the first 200 test rows: quick).
    QVERIFY(w->setView(QStringLiteral("shift")));
    w->shiftView()->subsetBox()->setValue(200);
    const auto outcome = ensemble::test::clickAndWaitFor<ensemble::ui::ShiftOutcomePtr>(
        w->shiftView()->runButton(), w->controller(),
        &ensemble::ui::EngineController::shiftFinished, 60000);
    QVERIFY(outcome != nullptr && outcome->engineReport != nullptr);
    using ensemble::ui::ViewId;
    checkEveryViewsPicture(
        *w, out, QStringLiteral("spirals"),
        {ViewId::Boundary, ViewId::Members, ViewId::Curves, ViewId::Calibration, ViewId::Sweep,
         ViewId::Shift, ViewId::Active, ViewId::Methods, ViewId::Runs});
    if (QTest::currentTestFailed()) {
        return;  // the helper's QVERIFY returned from it only
    }

    // 1-D regression: the Regression view's curve and bands, and the views it shares.
    nlohmann::json cubic = nlohmann::json::parse(ensemble::presetText("cubic"));
    cubic["training"]["steps"] = 40;
    cubic["training"].erase("epochs");
    cubic["backend"] = {{"kind", "cpu"}, {"threads", 1}};
    w->loadExperiment(cubic, QString());
    QVERIFY(waitFresh(*w));
    w->controller()->trainTo(40);
    QVERIFY(waitSnapshot(*w, [](const auto& s) { return s.step == 40 && !s.running; }));
    checkEveryViewsPicture(*w, out, QStringLiteral("cubic"),
                           {ViewId::Members, ViewId::Curves, ViewId::Calibration, ViewId::Sweep,
                            ViewId::Regression, ViewId::Shift, ViewId::Runs});
}

void TestGui::aPictureThatCannotBeWrittenLeavesNoFile() {
    QTemporaryDir dir;
    auto w = makeWindow();
    w->loadExperiment(smallConfig({.members = 2, .steps = 5, .threads = 1}), QString());
    QVERIFY(waitFresh(*w));
    QVERIFY(w->setView(QStringLiteral("boundary")));
    // A folder under a plain file: unwritable even for root (CI runs as root).
    QFile plain(dir.filePath(QStringLiteral("plain")));
    QVERIFY(plain.open(QIODevice::WriteOnly));
    plain.close();
    for (const char* name : {"plain/view.svg", "plain/view.png", "no/such/folder/view.svg"}) {
        const QString path = dir.filePath(QLatin1String(name));
        QString error;
        QVERIFY2(!w->files()->exportPicture(path, &error), name);
        QVERIFY2(error.startsWith(path + QStringLiteral(": ")), qPrintable(error));
        QVERIFY(!QFile::exists(path));
    }
    // Neither SVG nor PNG: refused, with the formats it writes.
    QString error;
    const QString jpeg = dir.filePath(QStringLiteral("view.jpg"));
    QVERIFY(!w->files()->exportPicture(jpeg, &error));
    QVERIFY2(error.contains(QStringLiteral(".svg or .png")), qPrintable(error));
    QVERIFY(!QFile::exists(jpeg));
    // Only the files written: no temporary file of QSaveFile is left beside them.
    QCOMPARE(QDir(dir.path()).entryList(QDir::Files | QDir::Hidden),
             QStringList{QStringLiteral("plain")});
}

// A zoomed Boundary view's SVG holds the part of the heatmap it shows, as the screen does: Qt's
// SVG generator ignores a source rectangle and wrote the whole grid.
void TestGui::aZoomedBoundaryExportsWhatItShows() {
    QTemporaryDir dir;
    auto w = makeWindow();
    w->loadExperiment(smallConfig({.members = 2, .steps = 5, .threads = 1}), QString());
    QVERIFY(waitFresh(*w));
    QVERIFY(w->setView(QStringLiteral("boundary")));
    QCoreApplication::processEvents();
    // The pixels across of the image drawn largest: the heatmap (the legend's are small).
    const auto widestImage = [](const QString& path) {
        double largest = 0.0;
        int pixels = 0;
        for (const ensemble::test::SvgImage& image : ensemble::test::svgImages(path)) {
            if (image.size.width() * image.size.height() > largest) {
                largest = image.size.width() * image.size.height();
                pixels = image.image.width();
            }
        }
        return pixels;
    };
    const QString whole = dir.filePath(QStringLiteral("whole.svg"));
    QString error;
    QVERIFY2(w->files()->exportPicture(whole, &error), qPrintable(error));
    const int grid = widestImage(whole);
    QVERIFY(grid >= 32);
    ensemble::ui::BoundaryCanvas* canvas = w->boundaryView()->canvas();
    canvas->zoomAt(canvas->plotRect().center(), 4.0);
    QVERIFY(canvas->isZoomed());
    const QString zoomed = dir.filePath(QStringLiteral("zoomed.svg"));
    QVERIFY2(w->files()->exportPicture(zoomed, &error), qPrintable(error));
    const int part = widestImage(zoomed);
    // A quarter of the grid's width, give or take the pixels the view's edges cut.
    QVERIFY2(part >= grid / 4 - 2 && part <= grid / 4 + 2,
             qPrintable(QStringLiteral("%1 of %2").arg(part).arg(grid)));
}

void TestGui::exportPictureAsksForAFileAndRemembersItsFolder() {
    using ensemble::test::whenModal;
    QTemporaryDir dir;
    QSettings().remove(QStringLiteral("files/pictures"));
    QSettings().remove(QStringLiteral("files/pictureFormat"));
    auto w = makeWindow();
    w->loadExperiment(smallConfig({.members = 2, .steps = 5, .threads = 1}), QString());
    QVERIFY(waitFresh(*w));
    QVERIFY(w->setView(QStringLiteral("members")));
    QAction* action = w->files()->exportPictureAction();
    QCOMPARE(action->shortcut(), QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_E));
    // No other action of the window holds its key.
    for (const QAction* other : w->findChildren<QAction*>()) {
        QVERIFY2(other == action || other->shortcut() != action->shortcut(),
                 qPrintable(other->text()));
    }
    int seen = 0;
    QString firstFilter;
    // A name without a suffix and the PNG filter: a PNG.
    whenModal(
        QStringLiteral("ExportPictureDialog"),
        [&](QWidget* d) {
            auto* dialog = static_cast<QFileDialog*>(d);
            firstFilter = dialog->selectedNameFilter();
            dialog->selectNameFilter(dialog->nameFilters().filter(QStringLiteral("PNG")).value(0));
            const QString name = dir.filePath(QStringLiteral("members"));
            dialog->selectFile(name);
            if (auto* edit = dialog->findChild<QLineEdit*>(QStringLiteral("fileNameEdit"))) {
                edit->setText(name);  // as typed: selectFile may lose to the filter's own name
            }
            static_cast<QDialog*>(dialog)->accept();
        },
        &seen);
    action->trigger();
    QCOMPARE(seen, 1);
    QVERIFY2(firstFilter.contains(QStringLiteral("SVG")), qPrintable(firstFilter));
    const QString png = dir.filePath(QStringLiteral("members.png"));
    QCOMPARE(QImage(png).size(), w->viewTabs()->currentView()->size());
    QVERIFY2(w->statusMessage().contains(png), qPrintable(w->statusMessage()));
    // Next time the dialog opens in that folder with PNG offered first.
    QString folder;
    QString secondFilter;
    whenModal(
        QStringLiteral("ExportPictureDialog"),
        [&](QWidget* d) {
            auto* dialog = static_cast<QFileDialog*>(d);
            folder = dialog->directory().absolutePath();
            secondFilter = dialog->selectedNameFilter();
            dialog->reject();
        },
        &seen);
    action->trigger();
    QCOMPARE(seen, 2);
    QCOMPARE(folder, QDir(dir.path()).absolutePath());
    QVERIFY2(secondFilter.contains(QStringLiteral("PNG")), qPrintable(secondFilter));
}
