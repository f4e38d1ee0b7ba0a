// Regression in the app: the presets train and display without a crash, the
// Experiment panel keeps model.likelihood in step with the dataset's task, the Regression view
// draws the Deep Ensembles figure (bands wider away from the data), and 2-D regression inputs
// get mean and std heatmaps in the Boundary view.
#include <QApplication>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QSpinBox>
#include <QTabWidget>
#include <QtTest>

#include <cmath>
#include <memory>

#include "config/config.h"
#include "main_window.h"
#include "panels/experiment_panel.h"
#include "support/gui_test_support.h"
#include "views/boundary_view.h"
#include "views/curves_view.h"
#include "views/regression_view.h"

using ensemble::test::makeWindow;
using ensemble::test::waitFresh;
using ensemble::test::waitSnapshot;
using ensemble::test::wheelAt;
using ensemble::ui::HeatQuantity;
using ensemble::ui::MainWindow;
using ensemble::ui::RegressionCanvas;

namespace {

nlohmann::json preset(const char* name) {
    nlohmann::json c = nlohmann::json::parse(ensemble::presetText(name));
    c["backend"]["kind"] = "cpu";
    c["backend"]["threads"] = 1;
    return c;
}

// Trains the loaded experiment to its end.
bool trainToEnd(MainWindow& w) {
    if (!waitFresh(w)) {
        return false;
    }
    w.trainAction()->trigger();
    return waitSnapshot(
        w, [](const auto& s) { return s.finished && !s.running; }, 120000);
}

// Pixels of column `x` (image coordinates) inside `plot` whose colour is within 6 of `color`
// on every channel.
int countColor(const QImage& image, int x, const QRectF& plot, const QColor& color) {
    int n = 0;
    for (int y = static_cast<int>(plot.top()) + 1; y < static_cast<int>(plot.bottom()); ++y) {
        const QColor c = image.pixelColor(x, y);
        if (std::abs(c.red() - color.red()) <= 6 && std::abs(c.green() - color.green()) <= 6 &&
            std::abs(c.blue() - color.blue()) <= 6) {
            ++n;
        }
    }
    return n;
}

// Mean total std of the snapshot's curve over the points with lo <= |x| <= hi.
double meanStd(const ensemble::ui::Snapshot& s, double lo, double hi) {
    double sum = 0.0;
    int n = 0;
    for (std::size_t i = 0; i < s.run->curveX.size(); ++i) {
        const double ax = std::abs(s.run->curveX[i]);
        if (ax >= lo && ax <= hi) {
            sum += std::sqrt(s.curve.variance[i]);
            ++n;
        }
    }
    return n > 0 ? sum / n : std::nan("");
}

}  // namespace

class TestGuiRegression : public QObject {
    Q_OBJECT

  private Q_SLOTS:
    void initTestCase();
    void presetsAreInTheBox();
    void datasetChoiceSwitchesTheLikelihood();
    void cubicDrawsTheDeepEnsemblesFigure();
    void memberSwitchesApplyToTheCurve();
    void otherRegressionRunsTrainAndDisplay();
    void twoDimensionalRegressionShowsMeanAndStdMaps();
};

void TestGuiRegression::initTestCase() {
    ensemble::test::isolateSettings();
}

void TestGuiRegression::presetsAreInTheBox() {
    auto w = makeWindow();
    QComboBox* box = w->panel()->presetCombo();
    QVERIFY(box->findData(QStringLiteral("cubic")) >= 0);
    QVERIFY(box->findData(QStringLiteral("sine")) >= 0);
}

void TestGuiRegression::datasetChoiceSwitchesTheLikelihood() {
    auto w = makeWindow();
    w->loadExperiment(preset("spirals"), QString());
    auto* kind = w->panel()->findChild<QComboBox*>(QStringLiteral("dataset.kind"));
    auto* likelihood = w->panel()->findChild<QComboBox*>(QStringLiteral("model.likelihood"));
    QVERIFY(kind != nullptr && likelihood != nullptr);
    QCOMPARE(w->panel()->config()["model"]["likelihood"].get<std::string>(), "categorical");
    // As a person picks it: a regression dataset brings a regression head, and a valid config.
    kind->setCurrentIndex(kind->findData(QStringLiteral("cubic")));
    QCOMPARE(w->panel()->config()["model"]["likelihood"].get<std::string>(), "gaussian");
    QVERIFY2(w->panel()->isValid(), qPrintable(w->panel()->errors().values().join(u'\n')));
    // A regression head chosen by the person is kept across regression datasets.
    likelihood->setCurrentIndex(likelihood->findData(QStringLiteral("mse")));
    kind->setCurrentIndex(kind->findData(QStringLiteral("sine")));
    QCOMPARE(w->panel()->config()["model"]["likelihood"].get<std::string>(), "mse");
    QVERIFY(w->panel()->isValid());
    // Back to classification: categorical again.
    kind->setCurrentIndex(kind->findData(QStringLiteral("moons")));
    QCOMPARE(w->panel()->config()["model"]["likelihood"].get<std::string>(), "categorical");
    QVERIFY(w->panel()->isValid());
    // A csv's task decides too.
    auto* task = w->panel()->findChild<QComboBox*>(QStringLiteral("dataset.task"));
    QVERIFY(task != nullptr);
    kind->setCurrentIndex(kind->findData(QStringLiteral("csv")));
    QVERIFY(task->isEnabled());
    task->setCurrentIndex(task->findData(QStringLiteral("regression")));
    QCOMPARE(w->panel()->config()["model"]["likelihood"].get<std::string>(), "gaussian");
    QCOMPARE(w->panel()->config()["dataset"]["task"].get<std::string>(), "regression");
}

void TestGuiRegression::cubicDrawsTheDeepEnsemblesFigure() {
    auto w = makeWindow({1200, 800});
    w->loadExperiment(preset("cubic"), QStringLiteral("cubic"));
    QVERIFY(trainToEnd(*w));
    QCoreApplication::processEvents();
    const auto s = w->controller()->snapshot();
    QVERIFY(s->run->regression);
    QVERIFY(s->run->hasCurve);
    QVERIFY(!s->run->hasGrid);
    // The view came forward by itself.
    QCOMPARE(w->currentViewName(), QStringLiteral("regression"));
    // The preset's adversarial training is in the panel and in the config it trains with.
    auto* eps = w->panel()->findChild<QDoubleSpinBox*>(QStringLiteral("training.adversarial_eps"));
    QVERIFY(eps != nullptr);
    QCOMPARE(eps->value(), 0.1);
    QCOMPARE(w->panel()->config()["training"]["adversarial_eps"].get<double>(), 0.1);
    // The trained ensemble: narrower inside the train range [-4, 4] than outside (the preset's
    // 150 steps with adversarial training give about 3.0 inside, the noise, and 18.7 at
    // 5 <= |x| <= 6.5; training is deterministic; docs/regression.md, the figure's table).
    QCOMPARE(s->curve.rows, static_cast<int64_t>(s->run->curveX.size()));
    QVERIFY(s->run->trainMin > -4.01 && s->run->trainMax < 4.01);
    const double inside = meanStd(*s, 0.0, 3.0);
    const double outside = meanStd(*s, 5.0, 6.5);
    qInfo("mean total std: %.3f for |x| <= 3, %.3f for 5 <= |x| <= 6.5", inside, outside);
    QVERIFY2(inside < 4.0 && outside > 3.0 * inside,
             qPrintable(QStringLiteral("std inside %1, outside %2").arg(inside).arg(outside)));
    // The test report and the learning curves (NLL and RMSE) exist.
    QVERIFY(std::isfinite(s->regression.ensemble.rmse));
    QVERIFY(std::isfinite(s->regression.ensemble.nll));
    QVERIFY(!s->history.empty() && std::isfinite(s->history.back()->ensembleTest.rmse));

    // The rendered picture: the bands cover more of a column at x = -5.5 and at x = 5.5 than at
    // x = 0, the inner (aleatoric) band is drawn inside the range, and the outer (epistemic) one
    // outside it (on the side where the members part most: on the other, the members' own
    // variances carry the width and the outer strips can be thinner than a pixel).
    RegressionCanvas* canvas = w->regressionView()->canvas();
    canvas->repaint();
    const QImage image = canvas->grab().toImage();
    const QRectF plot = canvas->plotRect();
    const qreal dpr = image.devicePixelRatio();
    QCOMPARE(dpr, 1.0);
    const auto column = [&](double x) { return static_cast<int>(canvas->toWidget(x, 0.0).x()); };
    const int outerIn = countColor(image, column(0.0), plot, RegressionCanvas::outerBandColor());
    const int innerIn = countColor(image, column(0.0), plot, RegressionCanvas::innerBandColor());
    QVERIFY2(innerIn > 0, qPrintable(QString::number(innerIn)));
    int outerOutside = 0;
    for (const double x : {-5.5, 5.5}) {
        const int outer = countColor(image, column(x), plot, RegressionCanvas::outerBandColor());
        const int inner = countColor(image, column(x), plot, RegressionCanvas::innerBandColor());
        qInfo("band pixels at x = 0: %d outer + %d inner; at x = %.1f: %d + %d", outerIn, innerIn,
              x, outer, inner);
        QVERIFY2(outer + inner > 1.2 * (outerIn + innerIn),
                 qPrintable(QStringLiteral("band pixels at x=0: %1 + %2, at x=%3: %4 + %5")
                                .arg(outerIn)
                                .arg(innerIn)
                                .arg(x)
                                .arg(outer)
                                .arg(inner)));
        outerOutside += outer;
    }
    QVERIFY(outerOutside > 0);

    // The Curves view follows the run (its second chart is the RMSE).
    QVERIFY(w->setView(QStringLiteral("curves")));
    QCoreApplication::processEvents();
    QVERIFY(w->curvesView()->ensemblePointCount() > 1);

    // The figure zooms and pans as the Boundary view does (PlotCanvas): the wheel keeps the
    // data point under the pointer in place, a drag pans, 0 shows it all, + and - zoom.
    QVERIFY(w->setView(QStringLiteral("regression")));
    QCoreApplication::processEvents();
    const QPointF at = canvas->toWidget(1.0, 0.0);
    QVERIFY(canvas->plotRect().contains(at));
    wheelAt(canvas, at, 240);
    QVERIFY(canvas->isZoomed());
    const ensemble::GridBounds zoomed = canvas->viewBounds();
    QVERIFY(zoomed.xMax - zoomed.xMin < 0.7 * (canvas->xMax() - canvas->xMin()));
    QVERIFY2((canvas->toWidget(1.0, 0.0) - at).manhattanLength() < 0.5,
             qPrintable(QStringLiteral("(%1, %2) moved to (%3, %4)")
                            .arg(at.x())
                            .arg(at.y())
                            .arg(canvas->toWidget(1.0, 0.0).x())
                            .arg(canvas->toWidget(1.0, 0.0).y())));
    QTest::mousePress(canvas, Qt::LeftButton, {}, at.toPoint());
    QTest::mouseMove(canvas, (at + QPointF(30, 0)).toPoint());
    QTest::mouseRelease(canvas, Qt::LeftButton, {}, (at + QPointF(30, 0)).toPoint());
    QVERIFY(canvas->viewBounds().xMin < zoomed.xMin);  // the data followed the pointer right
    QTest::keyClick(canvas, Qt::Key_0);
    QVERIFY(!canvas->isZoomed());
    QCOMPARE(canvas->viewBounds().xMin, canvas->xMin());
    QTest::keyClick(canvas, Qt::Key_Plus);
    QVERIFY(canvas->isZoomed());
    QTest::keyClick(canvas, Qt::Key_Minus);
    QVERIFY(!canvas->isZoomed());
}

void TestGuiRegression::memberSwitchesApplyToTheCurve() {
    auto w = makeWindow();
    nlohmann::json c = preset("cubic");
    c["training"]["epochs"] = 10;
    w->loadExperiment(c, QString());
    QVERIFY(trainToEnd(*w));
    const auto before = w->controller()->snapshot();
    QCOMPARE(before->curve.members, 5);
    w->controller()->setMemberSwitchedOn(0, false);
    QVERIFY(waitSnapshot(*w, [](const auto& s) { return s.includedCount == 4; }));
    const auto after = w->controller()->snapshot();
    QCOMPARE(after->curve.members, 4);
    // The mixture of members 1..4 is what the view draws.
    std::vector<double> mean(after->curve.mean.size(), 0.0);
    const auto& g = after->curveMembers;
    for (int k = 1; k < 5; ++k) {
        for (std::size_t i = 0; i < mean.size(); ++i) {
            mean[i] += g.mean[static_cast<std::size_t>(k) * mean.size() + i] / 4.0;
        }
    }
    for (std::size_t i = 0; i < mean.size(); i += 37) {
        QVERIFY(std::abs(mean[i] - after->curve.mean[i]) <= 1e-9 * (1.0 + std::abs(mean[i])));
    }
    // No member: nothing to mix, and nothing crashes.
    w->controller()->setSwitchedOnMembers(std::vector<uint8_t>(5, 0));
    QVERIFY(waitSnapshot(*w, [](const auto& s) { return s.includedCount == 0; }));
    QVERIFY(w->setView(QStringLiteral("regression")));
    w->regressionView()->canvas()->repaint();
    QCOMPARE(w->controller()->snapshot()->curve.rows, int64_t{0});
}

void TestGuiRegression::otherRegressionRunsTrainAndDisplay() {
    for (const char* name : {"sine", "linear"}) {
        auto w = makeWindow();
        nlohmann::json c = preset(name);
        c["training"]["steps"] = 60;
        c["training"].erase("epochs");
        w->loadExperiment(c, QString());
        QVERIFY2(trainToEnd(*w), name);
        const auto s = w->controller()->snapshot();
        QVERIFY(s->run->regression);
        QCOMPARE(s->run->hasCurve, std::string(name) == "sine");  // linear: 3 features
        // Every view draws the run.
        for (const QString& view : MainWindow::viewNames()) {
            if (w->setView(view)) {
                QCoreApplication::processEvents();
                w->currentView()->repaint();
            }
        }
        QVERIFY(std::isfinite(s->history.back()->ensembleTest.rmse));
    }
}

void TestGuiRegression::twoDimensionalRegressionShowsMeanAndStdMaps() {
    auto w = makeWindow();
    nlohmann::json c = preset("linear");
    c["dataset"]["features"] = 2;
    c["model"]["hidden"] = nlohmann::json::array({16});
    c["model"]["likelihood"] = "gaussian";
    c["training"]["steps"] = 80;
    w->loadExperiment(c, QString());
    QVERIFY(trainToEnd(*w));
    const auto s = w->controller()->snapshot();
    QVERIFY(s->run->hasGrid);
    QVERIFY(!s->run->hasCurve);
    const auto cells = static_cast<std::size_t>(s->run->gridSize) * s->run->gridSize;
    QCOMPARE(s->gridRegression.mean.size(), cells);
    for (HeatQuantity q : {HeatQuantity::Probability, HeatQuantity::Total, HeatQuantity::Aleatoric,
                           HeatQuantity::Epistemic}) {
        QVERIFY(!s->heat[static_cast<std::size_t>(q)].image.isNull());
    }
    // The mean of a linear target varies across the box; the std map is positive.
    const auto& mean = s->heat[static_cast<std::size_t>(HeatQuantity::Probability)];
    QVERIFY(mean.dataMax > mean.dataMin);
    QVERIFY(s->heat[static_cast<std::size_t>(HeatQuantity::Total)].dataMin > 0.0);
    QVERIFY(w->setView(QStringLiteral("boundary")));
    auto* view = w->boundaryView();
    QCOMPARE(view->quantityCombo()->itemText(0),
             ensemble::ui::regressionQuantityLabel(HeatQuantity::Probability));
    for (int q = 0; q < 4; ++q) {
        view->setQuantity(static_cast<HeatQuantity>(q));
        view->canvas()->repaint();
    }
    // The hover read-out names the mean and the stds.
    const QString text = view->canvas()->readout(view->canvas()->plotRect().center());
    QVERIFY2(text.contains(QStringLiteral("mean")) && text.contains(QStringLiteral("std")),
             qPrintable(text));
}

QTEST_MAIN(TestGuiRegression)
#include "tst_gui_regression.moc"
