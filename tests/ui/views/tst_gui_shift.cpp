// The Shift view: it measures the run's ensemble on the engine
// thread and shows exactly the report `ensemble-cli shift` computes for the exported weights;
// Cancel stops a measurement; a new run ends one under way (a Reset keeps the figures measured
// before it, another experiment clears them); the slider shows the moved points (checked against
// the closed form of a rotation about the training mean); Export writes the figures as PNG and the
// data as CSV and JSON.
#include <QComboBox>
#include <QDir>
#include <QDoubleSpinBox>
#include <QFile>
#include <QImage>
#include <QLineEdit>
#include <QPushButton>
#include <QSignalSpy>
#include <QSlider>
#include <QTemporaryDir>
#include <QtTest>

#include <algorithm>
#include <cmath>
#include <memory>

#include "config/config.h"
#include "data/dataset.h"
#include "io/model_io.h"
#include "main_window.h"
#include "shift/shift_report.h"
#include "support/gui_test_support.h"
#include "support/picture_checks.h"
#include "support/test_support.h"
#include "views/shift_inputs.h"
#include "views/shift_view.h"

using ensemble::test::exportedParameters;
using ensemble::test::makeWindow;
using ensemble::test::waitFresh;
using ensemble::test::waitSnapshot;
using ensemble::ui::MainWindow;
using ensemble::ui::ShiftOutcomePtr;
using ensemble::ui::ShiftView;

class TestGuiShift : public QObject {
    Q_OBJECT

  private Q_SLOTS:
    void initTestCase();
    void viewShowsTheEngineReportOfTheExportedWeights();
    void cancelStopsAMeasurement();
    void itsKeyGivesTheViewTheFocusCtrlEnterNeeds();
    void newRunEndsAMeasurement();
    void imagesShowTheShiftedTestImages();
    void regressionChartsReadTheRegressionReport();

  private:
    // A trained tiny 2-D ensemble in `w`, shown in the Shift view.
    static ShiftView* trainedShiftView(MainWindow& w);
    // Runs the view's shift and waits for its outcome (null when none came).
    static ShiftOutcomePtr runShift(MainWindow& w, ShiftView* view);
};

namespace {

// The window suites' small run, K = 3 for 60 steps on one thread.
nlohmann::json shiftRun() {
    return ensemble::test::smallConfig({.members = 3, .steps = 60, .threads = 1});
}

}  // namespace

void TestGuiShift::initTestCase() {
    ensemble::test::isolateSettings();
}

ShiftView* TestGuiShift::trainedShiftView(MainWindow& w) {
    w.loadExperiment(shiftRun(), QString());
    if (!waitFresh(w)) {
        return nullptr;
    }
    w.trainAction()->trigger();
    if (!waitSnapshot(w, [](const auto& s) { return s.step == 60 && s.finished; })) {
        return nullptr;
    }
    if (!w.setView(QStringLiteral("shift"))) {
        return nullptr;
    }
    return w.shiftView();
}

ShiftOutcomePtr TestGuiShift::runShift(MainWindow& w, ShiftView* view) {
    return ensemble::test::clickAndWaitFor<ShiftOutcomePtr>(
        view->runButton(), w.controller(), &ensemble::ui::EngineController::shiftFinished, 60000);
}

void TestGuiShift::viewShowsTheEngineReportOfTheExportedWeights() {
    auto w = makeWindow({900, 600});
    ShiftView* view = trainedShiftView(*w);
    QVERIFY(view != nullptr);
    QCOMPARE(w->currentViewName(), QStringLiteral("shift"));
    // The shifts of 2-D points: rotation, noise and scale; translation is for images.
    QVERIFY(view->shiftBox()->findData(QStringLiteral("rotate")) >= 0);
    QVERIFY(view->shiftBox()->findData(QStringLiteral("scale")) >= 0);
    QCOMPARE(view->shiftBox()->findData(QStringLiteral("translate")), -1);
    view->shiftBox()->setCurrentIndex(view->shiftBox()->findData(QStringLiteral("rotate")));
    view->levelsEdit()->setText(QStringLiteral("0,90,180"));
    view->alphaBox()->setValue(0.2);
    QVERIFY(view->runButton()->isEnabled());

    QSignalSpy progress(w->controller(), &ensemble::ui::EngineController::shiftProgress);
    const ShiftOutcomePtr outcome = runShift(*w, view);
    // Progress came as the levels were predicted, ending at all of the work.
    QVERIFY(!progress.isEmpty());
    QCOMPARE(progress.last().at(0).toLongLong(), progress.last().at(1).toLongLong());
    QVERIFY(outcome != nullptr);
    QVERIFY2(outcome->error.isEmpty(), qPrintable(outcome->error));
    QVERIFY(!outcome->cancelled);
    QCOMPARE(view->outcome(), outcome);
    QVERIFY(view->runButton()->isEnabled());
    QVERIFY(view->exportButton()->isEnabled());

    // The same weights through an export: `ensemble-cli shift` reports the view's numbers.
    QTemporaryDir dir;
    QVERIFY(!exportedParameters(*w, dir, "weights").empty());
    const QString weights = dir.filePath(QStringLiteral("weights.safetensors"));
    const QString cliReport = dir.filePath(QStringLiteral("cli.json"));
    const QString cliCsv = dir.filePath(QStringLiteral("cli-csv"));
    const ensemble::test::Run cli = ensemble::test::runCli(
        {QStringLiteral("shift"), QStringLiteral("--weights"), weights, QStringLiteral("--shift"),
         QStringLiteral("rotate"), QStringLiteral("--levels"), QStringLiteral("0,90,180"),
         QStringLiteral("--alpha"), QStringLiteral("0.2"), QStringLiteral("--report"), cliReport,
         QStringLiteral("--csv"), cliCsv});
    QVERIFY2(cli.code == 0, qPrintable(ensemble::test::describe(cli)));
    QFile cliFile(cliReport);
    QVERIFY(cliFile.open(QIODevice::ReadOnly));
    nlohmann::json fromCli = nlohmann::json::parse(cliFile.readAll().toStdString());
    QVERIFY(fromCli.contains("weights"));
    fromCli.erase("weights");  // the CLI names its file; the rest is the engine's report
    QCOMPARE(QString::fromStdString(outcome->report.dump()),
             QString::fromStdString(fromCli.dump()));
    // And the engine's function itself on those weights, as the CLI calls it: the data rebuilt
    // from the stored config, the ensemble's seed.
    const ensemble::LoadedEnsemble e =
        ensemble::importEnsemble(dir.filePath(QStringLiteral("weights.safetensors")).toStdString());
    const ensemble::DataSplit data = ensemble::loadDataSplit(e.config.dataset);
    ensemble::ShiftOptions options;
    options.kind = ensemble::ShiftKind::Rotate;
    options.levels = {0, 90, 180};
    options.alpha = 0.2;
    options.seed = e.config.ensemble.seed;
    const ensemble::ShiftReport report = ensemble::computeShiftReport(e, data, options);
    QCOMPARE(QString::fromStdString(outcome->report.dump()),
             QString::fromStdString(ensemble::shiftReportJson(report).dump()));
    // What the charts draw is that report's numbers.
    const ensemble::ui::ShiftFigures& f = outcome->figures;
    QCOMPARE(f.levels, (std::vector<double>{0, 90, 180}));
    QCOMPARE(f.alpha, 0.2);
    const auto& accuracy = f.metrics[static_cast<std::size_t>(ensemble::ui::ShiftMetric::Accuracy)];
    const auto& nll = f.metrics[static_cast<std::size_t>(ensemble::ui::ShiftMetric::Nll)];
    for (std::size_t l = 0; l < 3; ++l) {
        const ensemble::ShiftLevelReport& level = report.levels[l];
        QCOMPARE(accuracy.ensemble[l], level.ensemble.accuracy);
        QCOMPARE(nll.ensembleTs[l], level.ensembleTs.nll);
        const ensemble::MemberSpread spread =
            ensemble::memberSpread(level.members, &ensemble::ShiftMetrics::accuracy);
        QCOMPARE(accuracy.membersMedian[l], spread.median);
        QCOMPARE(accuracy.membersMin[l], spread.min);
        QCOMPARE(accuracy.membersMax[l], spread.max);
        QCOMPARE(f.coverage.ensembleTs[l], level.ensembleTs.coverage);
        QCOMPARE(f.riskCoverage[l].size(), level.selectiveMaxProbability.coverage.size());
    }
    // Rotating spirals by 180 degrees about their mean moves most points onto the other arm.
    QVERIFY(accuracy.ensemble[2] < accuracy.ensemble[0]);

    // The slider shows each level's moved test points: at 180 degrees about the training mean
    // m, x' = 2m - x (closed form, independent of the engine's rotation code).
    QVERIFY(view->levelSlider()->isEnabled());
    QCOMPARE(view->levelSlider()->maximum(), 2);
    view->setLevelIndex(0);
    const std::vector<QPointF> original = view->inputs()->points();
    QCOMPARE(static_cast<int64_t>(original.size()), data.test.rows);
    for (int64_t i = 0; i < data.test.rows; ++i) {
        QCOMPARE(original[static_cast<std::size_t>(i)].x(), double(data.test.row(i)[0]));
    }
    view->setLevelIndex(2);
    const std::vector<QPointF> turned = view->inputs()->points();
    QCOMPARE(turned.size(), original.size());
    const double mx = e.normalization.mean[0];
    const double my = e.normalization.mean[1];
    for (std::size_t i = 0; i < turned.size(); ++i) {
        QVERIFY(std::abs(turned[i].x() - (2 * mx - original[i].x())) < 1e-4);
        QVERIFY(std::abs(turned[i].y() - (2 * my - original[i].y())) < 1e-4);
    }
    // Keyboard: the slider steps with the arrow keys.
    view->levelSlider()->setFocus();
    QTest::keyClick(view->levelSlider(), Qt::Key_Left);
    QCOMPARE(view->levelIndex(), 1);

    // Export: the figures as PNG and SVG, the data as the CLI's CSVs and the report as JSON.
    QTemporaryDir out;
    QStringList written;
    QString error;
    QVERIFY2(view->exportTo(out.path(), &written, &error), qPrintable(error));
    for (const char* name :
         {"shift.png", "shift_inputs.png", "shift_accuracy.png", "shift_nll.png", "shift_brier.png",
          "shift_ece.png", "shift_coverage.png", "shift_risk_coverage.png"}) {
        const QString path = out.filePath(QLatin1String(name));
        QVERIFY2(written.contains(path), name);
        const QImage image(path);
        QVERIFY2(!image.isNull() && image.width() > 50 && image.height() > 50, name);
        // Its SVG beside it: it parses, and a chart's holds the chart (its axis titles as text).
        const QString svgPath = path.chopped(4) + QStringLiteral(".svg");
        QVERIFY2(written.contains(svgPath), name);
        const ensemble::test::SvgContent svg = ensemble::test::readSvg(svgPath);
        QVERIFY2(svg.error.isEmpty(), qPrintable(svg.error));
        QVERIFY2(svg.drawing >= 10, name);
        QVERIFY2(svg.title.startsWith(QStringLiteral("Shift")), qPrintable(svg.title));
        QVERIFY2(svg.description.contains(QStringLiteral("step")), qPrintable(svg.description));
    }
    // Qt Charts paints into the SVG generator: the risk–coverage chart's axis titles are text.
    const ensemble::test::SvgContent risk =
        ensemble::test::readSvg(out.filePath(QStringLiteral("shift_risk_coverage.svg")));
    QVERIFY2(risk.text.contains(QStringLiteral("risk (error rate)")) &&
                 risk.text.contains(QStringLiteral("Risk–coverage")),
             qPrintable(risk.text));
    // File > Export (Ctrl+E) with the Shift view in front writes them too, into NAME-shift/.
    QSignalSpy exported(w.get(), &MainWindow::exportFinished);
    const QString base = out.filePath(QStringLiteral("whole"));
    w->exportTo(base);
    QVERIFY(exported.wait(20000));
    QVERIFY2(exported.at(0).at(0).toBool(), qPrintable(exported.at(0).at(1).toString()));
    const QStringList files = exported.at(0).at(2).toStringList();
    for (const char* name : {"shift.json", "shift_levels.csv", "shift_accuracy.png"}) {
        const QString path = QDir(base + QStringLiteral("-shift")).filePath(QLatin1String(name));
        QVERIFY2(files.contains(path) && QFile::exists(path), name);
    }
    QVERIFY(files.contains(base + QStringLiteral(".png")));
    QVERIFY(files.contains(base + QStringLiteral(".svg")));
    QVERIFY(files.contains(
        QDir(base + QStringLiteral("-shift")).filePath(QStringLiteral("shift_nll.svg"))));
    // The CSVs are the CLI's `--csv` files, byte for byte.
    for (const char* name : {"shift_levels.csv", "risk_coverage.csv", "set_sizes.csv"}) {
        QFile mine(out.filePath(QLatin1String(name)));
        QFile theirs(QDir(cliCsv).filePath(QLatin1String(name)));
        QVERIFY2(mine.open(QIODevice::ReadOnly) && theirs.open(QIODevice::ReadOnly), name);
        const QByteArray bytes = mine.readAll();
        QVERIFY2(bytes.count('\n') >= 4, name);  // a header and a row per level at least
        QCOMPARE(bytes, theirs.readAll());
    }
    QFile json(out.filePath(QStringLiteral("shift.json")));
    QVERIFY(json.open(QIODevice::ReadOnly));
    QCOMPARE(nlohmann::json::parse(json.readAll().toStdString()), outcome->report);
}

void TestGuiShift::cancelStopsAMeasurement() {
    auto w = makeWindow({900, 600});
    ShiftView* view = trainedShiftView(*w);
    QVERIFY(view != nullptr);
    view->shiftBox()->setCurrentIndex(view->shiftBox()->findData(QStringLiteral("noise")));
    // Many levels: far longer than the two clicks below take.
    QStringList levels;
    for (int i = 0; i < 2000; ++i) {
        levels << QString::number(i * 0.001);
    }
    view->levelsEdit()->setText(levels.join(QLatin1Char(',')));
    w->activateWindow();
    QVERIFY(QTest::qWaitForWindowActive(w.get()));
    view->levelsEdit()->setFocus();
    QSignalSpy cancelled(view, &ShiftView::cancelRequested);
    QSignalSpy finished(w->controller(), &ensemble::ui::EngineController::shiftFinished);
    view->runButton()->click();
    QVERIFY(view->isMeasuring());
    QVERIFY(!view->runButton()->isEnabled());
    QVERIFY(view->cancelButton()->isEnabled());
    QTest::keyClick(view->levelsEdit(), Qt::Key_Escape);  // Esc cancels, as the button does
    QCOMPARE(cancelled.count(), 1);
    QVERIFY(finished.wait(60000));
    const ShiftOutcomePtr outcome = finished.at(0).at(0).value<ShiftOutcomePtr>();
    QVERIFY2(outcome->cancelled, qPrintable(outcome->error + view->message()));
    QVERIFY(!view->isMeasuring());
    QVERIFY(view->runButton()->isEnabled());
    QVERIFY(view->message().startsWith(QStringLiteral("Cancelled")));
    QVERIFY(view->outcome() == nullptr);  // nothing half-measured is shown
    // The engine thread is free again: a short shift runs to the end.
    view->levelsEdit()->setText(QStringLiteral("0,0.5"));
    const ShiftOutcomePtr next = runShift(*w, view);
    QVERIFY(next != nullptr && !next->cancelled && next->error.isEmpty());
    QCOMPARE(next->figures.levels.size(), std::size_t{2});
}

// Switching to the view by its key (Ctrl+9) from another view gives it the focus its own keys
// need: Ctrl+Enter measures at once, without a click into the view first.
void TestGuiShift::itsKeyGivesTheViewTheFocusCtrlEnterNeeds() {
    auto w = makeWindow({900, 600});
    ShiftView* view = trainedShiftView(*w);
    QVERIFY(view != nullptr);
    view->levelsEdit()->setText(QStringLiteral("0,0.5"));
    w->activateWindow();
    QVERIFY(QTest::qWaitForWindowActive(w.get()));
    QTest::keySequence(w.get(), QKeySequence(Qt::CTRL | Qt::Key_1));
    QVERIFY(w->currentViewName() != QStringLiteral("shift"));
    QVERIFY(ensemble::test::focusAPanelField(*w) != nullptr);
    QTest::keySequence(w.get(), QKeySequence(Qt::CTRL | Qt::Key_9));
    QCOMPARE(w->currentViewName(), QStringLiteral("shift"));
    QSignalSpy finished(w->controller(), &ensemble::ui::EngineController::shiftFinished);
    QTest::keyClick(QApplication::focusWidget(), Qt::Key_Return, Qt::ControlModifier);
    QVERIFY(view->isMeasuring());
    QVERIFY(finished.wait(ensemble::test::progressWaitMs(60000)));
}

// The window's rule for jobs: a Reset ends the measurement under way without an outcome and
// keeps the figures measured before it, marked as the previous run's; another experiment
// ends it and clears them. Each new run is asked for before this thread takes another event,
// so whatever the engine thread did meanwhile, the ended measurement is never shown.
void TestGuiShift::newRunEndsAMeasurement() {
    auto w = makeWindow({900, 600});
    ShiftView* view = trainedShiftView(*w);
    QVERIFY(view != nullptr);
    view->shiftBox()->setCurrentIndex(view->shiftBox()->findData(QStringLiteral("rotate")));
    view->levelsEdit()->setText(QStringLiteral("0,90"));
    const ShiftOutcomePtr measured = runShift(*w, view);
    QVERIFY(measured != nullptr && !measured->cancelled && measured->error.isEmpty());
    QCOMPARE(view->outcome(), measured);

    QSignalSpy finished(w->controller(), &ensemble::ui::EngineController::shiftFinished);
    QSignalSpy ended(w->controller(), &ensemble::ui::EngineController::jobsEnded);
    view->runButton()->click();
    QVERIFY(view->isMeasuring());
    w->resetAction()->trigger();
    QCOMPARE(ended.count(), 1);
    QCOMPARE(ended.at(0).at(0).toBool(), true);  // the same experiment
    QVERIFY(!view->isMeasuring());
    QVERIFY(!view->cancelButton()->isEnabled());
    QVERIFY(waitFresh(*w));
    QCoreApplication::processEvents();
    QCOMPARE(finished.count(), 0);
    QCOMPARE(view->outcome(), measured);
    QVERIFY(view->showsPreviousRun());
    QVERIFY2(view->message().contains(QStringLiteral("before the Reset")),
             qPrintable(view->message()));
    QVERIFY(view->runButton()->isEnabled());

    // Another experiment: the measurement under way ends and the figures go.
    view->runButton()->click();
    QVERIFY(view->isMeasuring());
    nlohmann::json other = shiftRun();
    other["ensemble"]["members"] = 2;
    w->loadExperiment(other, QString());
    QCOMPARE(ended.count(), 2);
    QCOMPARE(ended.at(1).at(0).toBool(), false);
    QVERIFY(!view->isMeasuring());
    QVERIFY(view->outcome() == nullptr);
    QVERIFY(!view->showsPreviousRun());
    QVERIFY(waitFresh(*w));
    QCoreApplication::processEvents();
    QCOMPARE(finished.count(), 0);
    QVERIFY(view->outcome() == nullptr);
}

// Image data (MNIST-format IDX files): translation applies (scaling does not), and the
// slider's images are the test images rolled along the width: numpy.roll(img, s, axis=1),
// checked pixel by pixel against the raw test images; a roll by 28 is the identity.
void TestGuiShift::imagesShowTheShiftedTestImages() {
    QTemporaryDir dir;
    QVERIFY(ensemble::test::writeIdx(dir.path(), "train-images-idx3-ubyte",
                                     "train-labels-idx1-ubyte", 200, 1));
    QVERIFY(ensemble::test::writeIdx(dir.path(), "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte",
                                     100, 2));
    nlohmann::json c = ensemble::loadConfigJson("mnist-mlp");
    c["dataset"]["path"] = dir.path().toStdString();
    c["model"]["hidden"] = {16};
    c["ensemble"]["members"] = 2;
    c["training"]["batch_size"] = 20;
    c["training"]["epochs"] = 0;
    c["training"]["steps"] = 20;
    c["backend"]["kind"] = "cpu";
    c["backend"]["threads"] = 1;
    auto w = makeWindow({900, 600});
    w->loadExperiment(c, QString());
    QVERIFY(waitFresh(*w));
    w->trainAction()->trigger();
    QVERIFY(waitSnapshot(*w, [](const auto& s) { return s.step == 20 && s.finished; }));
    QVERIFY(w->setView(QStringLiteral("shift")));
    ShiftView* view = w->shiftView();
    QVERIFY(view->shiftBox()->findData(QStringLiteral("translate")) >= 0);
    QCOMPARE(view->shiftBox()->findData(QStringLiteral("scale")), -1);
    view->shiftBox()->setCurrentIndex(view->shiftBox()->findData(QStringLiteral("translate")));
    view->levelsEdit()->setText(QStringLiteral("0,2,28"));
    const ShiftOutcomePtr outcome = runShift(*w, view);
    QVERIFY(outcome != nullptr);
    QVERIFY2(outcome->error.isEmpty(), qPrintable(outcome->error));
    QCOMPARE(outcome->report.at("shift").get<std::string>(), std::string("translate"));
    QCOMPARE(outcome->previews.size(), std::size_t{3});

    const ensemble::DataSplit data = ensemble::loadDataSplit(ensemble::parseConfig(c).dataset);
    const auto pixel = [&](int64_t image, int r, int col) {
        return static_cast<int>(data.test.row(image)[r * 28 + col]);
    };
    for (int level = 0; level < 3; ++level) {
        view->setLevelIndex(level);
        QCOMPARE(view->inputs()->imageCount(), ensemble::ui::kShiftPreviewImages);
    }
    const auto& previews = outcome->previews;
    for (int i = 0; i < ensemble::ui::kShiftPreviewImages; ++i) {
        const QImage& still = previews[0].images[static_cast<std::size_t>(i)];
        const QImage& rolled = previews[1].images[static_cast<std::size_t>(i)];
        const QImage& around = previews[2].images[static_cast<std::size_t>(i)];
        QCOMPARE(still.size(), QSize(28, 28));
        for (int r = 0; r < 28; ++r) {
            for (int col = 0; col < 28; ++col) {
                QCOMPARE(qGray(still.pixel(col, r)), pixel(i, r, col));
                QCOMPARE(qGray(rolled.pixel(col, r)), pixel(i, r, (col + 26) % 28));
                QCOMPARE(qGray(around.pixel(col, r)), pixel(i, r, col));
            }
        }
    }
}

// A regression run (the `cubic` preset): scaling and noise apply, rotation does not; the
// charts read the report's RMSE, NLL, 90% coverage and conformal interval coverage.
void TestGuiShift::regressionChartsReadTheRegressionReport() {
    nlohmann::json c = ensemble::loadConfigJson("cubic");
    c["ensemble"]["members"] = 3;
    c["training"]["epochs"] = 0;
    c["training"]["steps"] = 30;
    c["backend"]["kind"] = "cpu";
    c["backend"]["threads"] = 1;
    auto w = makeWindow({900, 600});
    w->loadExperiment(c, QString());
    QVERIFY(waitFresh(*w));
    w->trainAction()->trigger();
    QVERIFY(waitSnapshot(*w, [](const auto& s) { return s.step == 30 && s.finished; }));
    QVERIFY(w->setView(QStringLiteral("shift")));
    ShiftView* view = w->shiftView();
    QCOMPARE(view->shiftBox()->findData(QStringLiteral("rotate")), -1);
    QVERIFY(view->shiftBox()->findData(QStringLiteral("noise")) >= 0);
    view->shiftBox()->setCurrentIndex(view->shiftBox()->findData(QStringLiteral("scale")));
    QVERIFY(view->shiftBox()->currentIndex() >= 0);
    view->levelsEdit()->setText(QStringLiteral("1,2,3"));
    const ShiftOutcomePtr outcome = runShift(*w, view);
    QVERIFY(outcome != nullptr);
    QVERIFY2(outcome->error.isEmpty(), qPrintable(outcome->error));
    const ensemble::ShiftReport& report = *outcome->engineReport;
    QVERIFY(report.regression);
    const ensemble::ui::ShiftFigures& f = outcome->figures;
    QVERIFY(f.regression);
    for (std::size_t l = 0; l < 3; ++l) {
        const ensemble::ShiftLevelReport& level = report.levels[l];
        QCOMPARE(f.metrics[0].ensemble[l], level.regressionEnsemble.rmse);
        QCOMPARE(f.metrics[1].ensemble[l], level.regressionEnsemble.nll);
        QCOMPARE(f.coverage.ensemble[l], level.regressionEnsemble.intervalCoverage);
        double lo = 1e300;
        double hi = -1e300;
        for (const ensemble::ShiftRegressionMetrics& m : level.regressionMembers) {
            lo = std::min(lo, m.rmse);
            hi = std::max(hi, m.rmse);
        }
        QCOMPARE(f.metrics[0].membersMin[l], lo);
        QCOMPARE(f.metrics[0].membersMax[l], hi);
    }
    // Extrapolating three times as far from the training mean: the cubic's error grows.
    QVERIFY(f.metrics[0].ensemble[2] > f.metrics[0].ensemble[0]);
}

QTEST_MAIN(TestGuiShift)
#include "tst_gui_shift.moc"
