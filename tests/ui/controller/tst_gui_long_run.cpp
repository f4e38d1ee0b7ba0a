// Long runs, offscreen: what the app keeps stays bounded however long the run (the
// Curves view's points, the snapshot's curve points, the stores behind them), the step shown
// never goes back across pauses, and the speed until paused is obeyed and remembered. How
// late the GUI is and how much memory a run takes are measured by bench/budgets.py
// --long-runs, not here.
#include <QChartView>
#include <QComboBox>
#include <QSettings>
#include <QXYSeries>
#include <QtTest>

#include <algorithm>

#include "config/config.h"
#include "controller/learning_curves.h"
#include "support/gui_test_support.h"
#include "views/curves_view.h"
#include "widgets/speed_control.h"

using ensemble::test::isolateSettings;
using ensemble::test::kLongRun;
using ensemble::test::waitSnapshot;
using ensemble::ui::CurveFigure;
using ensemble::ui::CurveSplit;
using ensemble::ui::EngineController;
using ensemble::ui::MainWindow;
using ensemble::ui::SnapshotPtr;
using ensemble::ui::SpeedControl;
using ensemble::ui::WorkerTuning;

namespace {

nlohmann::json tinyConfig(int64_t steps) {
    // One thread: an OpenMP team spin-waits between the tiny steps, and on a loaded 2-core
    // machine (ctest -j2) that made 6,000 steps take minutes instead of seconds.
    nlohmann::json c =
        ensemble::test::smallConfig({.members = 3, .steps = steps, .threads = 1, .points = 200});
    c["model"]["hidden"] = {8};
    return c;
}

// A curve point at every step (the budget and the point counts say so), on few rows: a run of
// N steps appends N points to every curve.
WorkerTuning everyStep() {
    WorkerTuning t;
    t.historyBudget = 1e9;
    t.historyPoints = 1'000'000'000;
    t.minHistoryPoints = 1'000'000'000;
    t.maxHistoryPoints = 256;
    t.maxEvalRows = 16;
    t.maxTrainEvalRows = 16;
    return t;
}

}  // namespace

class TestGuiLongRun : public QObject {
    Q_OBJECT

  private Q_SLOTS:
    void initTestCase() { isolateSettings(); }

    void curvesViewKeepsBoundedPoints() {
        constexpr int64_t kSteps = 6'000;
        MainWindow::Options options;
        options.useSettings = false;
        options.tuning = everyStep();
        MainWindow w(options);
        w.resize(1200, 800);
        w.show();
        w.loadExperiment(tinyConfig(kSteps), QString());
        QVERIFY(w.setView(QStringLiteral("curves")));
        QVERIFY(waitSnapshot(w, [](const auto& s) { return s.step == 0; }));
        w.controller()->start();
        QVERIFY(waitSnapshot(
            w, [](const auto& s) { return s.step == kSteps && !s.running; }, 120'000));
        QTest::qWait(50);  // the last snapshot drawn
        const SnapshotPtr s = w.controller()->snapshot();
        // Every step gave a curve point ...
        QVERIFY(s->curves);
        const auto& test = s->curves->curve(-1, CurveSplit::Test, CurveFigure::Loss);
        QCOMPARE(test.appended(), kSteps + 1);
        // ... the stores hold a bounded number of them ...
        QVERIFY(test.bucketCount() <= ensemble::CurveStore::kDefaultCapacity);
        QVERIFY(test.latestCount() <= ensemble::CurveStore::kDefaultLatest);
        // ... the snapshot's list of points is thinned to the tuning's bound, its span kept ...
        QVERIFY2(s->history.size() <= 256, qPrintable(QString::number(s->history.size())));
        QCOMPARE(s->history.front()->step, int64_t{0});
        QCOMPARE(s->history.back()->step, kSteps);
        // ... and the view draws about a point per pixel column, not one per curve point.
        ensemble::ui::CurvesView* view = w.curvesView();
        const int perLine = view->ensemblePointCount();
        QVERIFY2(perLine > 50 && perLine <= 1300, qPrintable(QString::number(perLine)));
        const int lines = 2 * (3 + 2);  // both charts: 3 members and the ensemble's train/test
        QVERIFY2(view->drawnPointCount() <= lines * 1300,
                 qPrintable(QString::number(view->drawnPointCount())));
        // Zooming into a tenth of the run draws it from the finer stored buckets: more points
        // in that stretch than the whole-run drawing had there, within the same bound.
        auto pointsIn = [view](double from, double to) {
            QChartView* chart = view->findChildren<QChartView*>().value(0);
            int n = 0;
            for (QAbstractSeries* series : chart->chart()->series()) {
                if (series->name() == QStringLiteral("ensemble, test")) {
                    for (const QPointF& p : static_cast<QXYSeries*>(series)->points()) {
                        n += p.x() >= from && p.x() <= to ? 1 : 0;
                    }
                }
            }
            return n;
        };
        const int before = pointsIn(1500, 2100);
        view->zoomTo(1500, 2100);
        QVERIFY(view->isZoomed());
        QVERIFY(view->ensemblePointCount() > 0 && view->ensemblePointCount() <= 1300);
        QVERIFY2(pointsIn(1500, 2100) > before,
                 qPrintable(QStringLiteral("%1 -> %2").arg(before).arg(pointsIn(1500, 2100))));
        view->resetZoom();
        QVERIFY(!view->isZoomed());
        QVERIFY(view->ensemblePointCount() > 50 && view->ensemblePointCount() <= 1300);
    }

    void stepShownNeverGoesBack() {
        auto w = ensemble::test::makeWindow();
        w->loadExperiment(tinyConfig(kLongRun), QString());
        QVERIFY(waitSnapshot(*w, [](const auto& s) { return s.step == 0; }));
        int64_t shown = 0;
        bool backwards = false;
        connect(w.get(), &MainWindow::snapshotShown, this, [&] {
            const SnapshotPtr s = w->controller()->snapshot();
            if (s) {
                backwards = backwards || s->step < shown;
                shown = std::max(shown, s->step);
            }
        });
        for (int round = 0; round < 4; ++round) {
            const int64_t before = shown;
            w->controller()->start();
            QVERIFY(waitSnapshot(*w, [&](const auto& s) { return s.running && s.step > before; }));
            w->controller()->pause();
            QVERIFY(waitSnapshot(*w, [](const auto& s) { return !s.running; }));
        }
        QVERIFY(shown > 0);
        QVERIFY(!backwards);
    }

    void speedUntilPausedIsObeyed() {
        EngineController c;
        c.configure(tinyConfig(kLongRun));
        QVERIFY(waitSnapshot(c, [](const auto& s) { return s.step == 0; }));
        c.setUntilPaused(true);
        c.setStepsPerSecond(40.0);
        QElapsedTimer clock;
        clock.start();
        c.start();
        QVERIFY(waitSnapshot(c, [](const auto& s) { return s.step >= 4; }));
        QTest::qWait(300);
        c.pause();
        QVERIFY(waitSnapshot(c, [](const auto& s) { return !s.running; }));
        const double seconds = static_cast<double>(clock.elapsed()) / 1000.0;
        const int64_t steps = c.snapshot()->step;
        // At most the chosen pace (the first step is due at once); a slow machine only trains
        // fewer steps.
        QVERIFY2(static_cast<double>(steps) <= 40.0 * seconds + 2.0,
                 qPrintable(QStringLiteral("%1 steps in %2 s").arg(steps).arg(seconds)));
        // As fast as possible again: far more than 40 steps a second.
        c.setStepsPerSecond(0.0);
        c.start();
        QVERIFY(waitSnapshot(
            c, [&](const auto& s) { return s.step > steps + 2000; }, 60'000));
        c.pause();
        QVERIFY(waitSnapshot(c, [](const auto& s) { return !s.running; }));
    }

    void speedIsRememberedAndReachedByKeyboard() {
        QSettings().remove(QStringLiteral("run/stepsPerSecond"));
        {
            SpeedControl speed(true, nullptr);
            QCOMPARE(speed.stepsPerSecond(), 0.0);  // as fast as possible by default
            speed.setStepsPerSecond(100.0);
            QCOMPARE(speed.stepsPerSecond(), 100.0);
            delete speed.comboBox();
        }
        {
            SpeedControl again(true, nullptr);
            QCOMPARE(again.stepsPerSecond(), 100.0);
            QCOMPARE(again.comboBox()->currentData().toDouble(), 100.0);
            delete again.comboBox();
        }
        auto w = ensemble::test::makeWindow();
        SpeedControl* speed = w->speedControl();
        QCOMPARE(speed->stepsPerSecond(), 0.0);  // no settings read
        QVERIFY(QTest::qWaitForWindowActive(w.get()));
        QTest::keyClick(w.get(), Qt::Key_Down, Qt::ControlModifier | Qt::ShiftModifier);
        QCOMPARE(speed->stepsPerSecond(), SpeedControl::choices()[1]);
        QTest::keyClick(w.get(), Qt::Key_Up, Qt::ControlModifier | Qt::ShiftModifier);
        QCOMPARE(speed->stepsPerSecond(), 0.0);
        QSettings().remove(QStringLiteral("run/stepsPerSecond"));
    }
};

QTEST_MAIN(TestGuiLongRun)
#include "tst_gui_long_run.moc"
