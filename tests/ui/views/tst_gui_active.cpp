// The Active learning view. The loop the view drives on the engine
// thread is the engine's: a round on 2-D data acquires the same rows in the app as an
// ActiveLearner called directly with the same config and seed (and as `ensemble-cli active
// --report`); the heatmap is acquisitionScores on the grid's member predictions, coloured by
// the uncertainty heatmaps' map; a click on a pool point labels exactly that row (score NaN);
// Acquire (button or A) takes the ringed picks; the keyboard cursor and Enter label a row;
// Play runs rounds until Pause, at its pace: the pause between rounds holds the next round (a
// timer on the engine thread) and a Pause during it stops Play at once, Stop at ends Play at
// exactly that many labels; the last round's picks carry their numbers in pick order, and the
// accuracy chart leaves room for its last point; a checkpoint saved and opened brings back the
// labelled rows, the rounds, the earlier curves and the same map. On image data Play runs the
// loop and the view holds the digits acquired last.
#include <QChart>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QFile>
#include <QPushButton>
#include <QScatterSeries>
#include <QSignalSpy>
#include <QSpinBox>
#include <QTemporaryDir>
#include <QtTest>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <memory>
#include <numeric>

#include "active/active_learning.h"
#include "config/config.h"
#include "controller/active_job.h"
#include "data/dataset.h"
#include "io/checkpoint.h"
#include "main_window.h"
#include "metrics/grid.h"
#include "render/colormap.h"
#include "support/gui_test_support.h"
#include "support/test_support.h"
#include "train/trainer.h"
#include "views/active_canvas.h"
#include "views/active_view.h"

using ensemble::Acquisition;
using ensemble::ActiveLearner;
using ensemble::test::makeWindow;
using ensemble::test::sameBitsNonEmpty;
using ensemble::test::waitFresh;
using ensemble::ui::ActiveStatePtr;
using ensemble::ui::ActiveView;
using ensemble::ui::MainWindow;
using nlohmann::json;

namespace {

constexpr int kPerRound = 5;

// The window suites' small run (K = 3, 40 steps, one thread) with an active-learning loop.
json activeRun() {
    json c = ensemble::test::smallConfig({.members = 3, .steps = 40, .threads = 1});
    c["active"] = {{"initial", 10},        {"per_round", kPerRound},
                   {"steps", 60},          {"acquisition", "entropy"},
                   {"retrain", "scratch"}, {"rounds", 2}};
    return c;
}

// The loop's config as the view starts it: the run's with the panel's active section.
ensemble::ExperimentConfig loopConfig(const json& c) {
    return ensemble::parseConfig(c);
}

// Waits for a state of the window's current run that satisfies `pred`; null when none came.
template <typename Pred>
ActiveStatePtr waitState(MainWindow& w, Pred pred, int timeoutMs = 60000) {
    ActiveStatePtr found;
    const bool came = QTest::qWaitFor(
        [&] {
            const ActiveStatePtr s = w.controller()->activeState();
            const ensemble::ui::SnapshotPtr snap = w.controller()->snapshot();
            if (s && snap && s->runId == snap->run->runId && pred(*s)) {
                found = s;
                return true;
            }
            return false;
        },
        timeoutMs);
    QCoreApplication::processEvents();
    return came ? found : nullptr;
}

// The window on activeRun() (with `acquisition`), the Active view in front and its first
// round trained.
ActiveStatePtr startLoop(MainWindow& w, const json& c) {
    w.loadExperiment(c, QString());
    if (!waitFresh(w) || !w.setView(QStringLiteral("active"))) {
        return nullptr;
    }
    return waitState(w, [](const auto& s) { return s.rounds.size() == 1 && !s.pending; });
}

// An acquisition function's name, for QCOMPARE's messages.
QString name(Acquisition a) {
    return QLatin1String(ensemble::toString(a));
}

}  // namespace

class TestGuiActive : public QObject {
    Q_OBJECT

  private Q_SLOTS:
    void initTestCase() { ensemble::test::isolateSettings(); }
    void roundsAcquireWhatTheEngineAcquires();
    void clickAndCursorLabelExactlyThatRow();
    void playRunsUntilPaused();
    void pauseSaysStoppedOnceWhereverItLands();
    void thePauseBetweenRoundsHoldsTheNextRound();
    void pausingDuringTheWaitStopsTheNextRound();
    void stopAtStopsAtExactlyThoseLabels();
    void theLastRoundsPicksCarryTheirNumbers();
    void checkpointBringsTheLoopBack();
    void imageDataShowsTheDigitsAcquired();
    void warmLoopComesBackBitForBit();
    void escapeCancelsTheRoundUnderWay();
    void newRunEndsTheRoundUnderWay();
    void theLoopIsAnEntryOfItsOwn();
    void batchBaldShowsGainsAndClassCounts();
};

namespace {

// The acquisition map's scores computed here from the learner's ensemble: the members'
// predictions at the grid's cell centres, scored with the grid index as the row.
std::vector<double> gridScoresOf(ActiveLearner& learner, const ensemble::GridBounds& bounds,
                                 int size) {
    const std::vector<float> points = ensemble::gridPoints(bounds, size);
    ensemble::Trainer* trainer = learner.trainer();
    const ensemble::MemberPredictions p =
        trainer->predictRaw(points.data(), static_cast<int64_t>(size) * size);
    std::vector<int64_t> cells(static_cast<std::size_t>(size) * size);
    std::iota(cells.begin(), cells.end(), int64_t{0});
    return ensemble::acquisitionScores(learner.acquisition(), p, trainer->included(), cells,
                                       learner.seed(), learner.round());
}

}  // namespace

void TestGuiActive::roundsAcquireWhatTheEngineAcquires() {
    auto w = makeWindow({1200, 800});
    const json c = activeRun();
    ActiveStatePtr s = startLoop(*w, c);
    QVERIFY(s != nullptr);
    QCOMPARE(name(s->acquisition), name(Acquisition::Entropy));  // the config's active.acquisition
    ActiveView* view = w->activeView();
    QCOMPARE(name(view->acquisition()), name(Acquisition::Entropy));

    // The reference: the engine's loop called directly, same config and data.
    const ensemble::ExperimentConfig config = loopConfig(c);
    ActiveLearner reference(config, ensemble::loadDataSplit(config.dataset), Acquisition::Entropy);
    QVERIFY(reference.trainRound());
    ensemble::PoolScores scores = reference.scorePool();
    QCOMPARE(s->labelled, reference.labelled());
    QCOMPARE(s->labelled.size(), std::size_t{10});
    QCOMPARE(s->scores.rows, scores.rows);
    QCOMPARE(s->scores.picks, scores.picks);
    QCOMPARE(s->scores.picks.size(), std::size_t{kPerRound});
    QVERIFY(sameBitsNonEmpty(s->scores.scores, scores.scores));
    QCOMPARE(s->rounds[0].accuracy, reference.rounds()[0].accuracy);

    // The map is acquisitionScores on the grid, coloured as the uncertainty maps are: entropy
    // from 0 (black end of viridis) to the largest score (at least 5 % of log C).
    const ensemble::ui::RunInfo& run = *w->controller()->snapshot()->run;
    QVERIFY(s->hasGrid);
    const std::vector<double> grid = gridScoresOf(reference, run.bounds, run.gridSize);
    QVERIFY(sameBitsNonEmpty(s->gridScores, grid));
    const double high = std::max(*std::max_element(grid.begin(), grid.end()), 0.05 * std::log(2.0));
    QCOMPARE(s->heat.high, high);
    for (int r = 0; r < run.gridSize; r += 7) {
        for (int col = 0; col < run.gridSize; col += 5) {
            const double v = grid[static_cast<std::size_t>(r) * run.gridSize + col];
            QCOMPARE(s->heat.image.pixel(col, r), ensemble::ui::sequentialColor(v / high));
        }
    }

    // Acquire (the button) takes the ringed picks and trains a round: the engine's next round.
    const std::vector<int64_t> picks = s->scores.picks;
    QVERIFY(view->acquireButton()->isEnabled());
    view->acquireButton()->click();
    s = waitState(*w, [](const auto& st) { return st.rounds.size() == 2 && !st.pending; });
    QVERIFY(s != nullptr);
    QCOMPARE(s->rounds[0].acquired, picks);
    reference.acquire(
        scores.picks, scores.scores.empty() ? std::vector<double>{} : [&] {
            std::vector<double> v;
            for (int64_t row : scores.picks) {
                v.push_back(scores.scores[static_cast<std::size_t>(
                    std::lower_bound(scores.rows.begin(), scores.rows.end(), row) -
                    scores.rows.begin())]);
            }
            return v;
        }());
    QVERIFY(reference.trainRound());
    scores = reference.scorePool();
    QCOMPARE(s->labelled, reference.labelled());
    QCOMPARE(s->rounds[1].labels, int64_t{10 + kPerRound});
    QCOMPARE(s->rounds[1].accuracy, reference.rounds()[1].accuracy);
    QCOMPARE(s->rounds[0].acquiredScores, reference.rounds()[0].acquiredScores);
    QCOMPARE(s->scores.picks, scores.picks);
    // The digits list of 2-D data: the rows just acquired, with their true labels.
    QCOMPARE(s->lastAcquired.size(), picks.size());
    // The pool and the labelled rows partition the train split.
    QCOMPARE(s->pool.size() + s->labelled.size(), std::size_t(run.train.rows));

    // The key A does what the button does.
    view->canvas()->setFocus();
    const std::vector<int64_t> nextPicks = s->scores.picks;
    QTest::keyClick(view->canvas(), Qt::Key_A);
    s = waitState(*w, [](const auto& st) { return st.rounds.size() == 3 && !st.pending; });
    QVERIFY(s != nullptr);
    QCOMPARE(s->rounds[1].acquired, nextPicks);

    // `ensemble-cli active` on the same experiment acquires the same rows, round by round.
    QTemporaryDir dir;
    const QString configPath = dir.filePath(QStringLiteral("active.json"));
    QFile out(configPath);
    QVERIFY(out.open(QIODevice::WriteOnly));
    out.write(QByteArray::fromStdString(c.dump()));
    out.close();
    const QString report = dir.filePath(QStringLiteral("report.json"));
    const ensemble::test::Run cli = ensemble::test::runCli(
        {QStringLiteral("active"), QStringLiteral("--config"), configPath,
         QStringLiteral("--acquisition"), QStringLiteral("entropy"), QStringLiteral("--rounds"),
         QStringLiteral("2"), QStringLiteral("--report"), report});
    QVERIFY2(cli.code == 0, qPrintable(ensemble::test::describe(cli)));
    QFile in(report);
    QVERIFY(in.open(QIODevice::ReadOnly));
    const json r = json::parse(in.readAll().toStdString());
    const json& seed = r["acquisitions"]["entropy"]["seeds"][0];
    QCOMPARE(seed["initial"].get<std::vector<int64_t>>(), reference.initial());
    QCOMPARE(seed["rounds"].size(), std::size_t{3});
    QCOMPARE(seed["rounds"][1]["acquired"].get<std::vector<int64_t>>(), picks);
    QCOMPARE(seed["rounds"][2]["acquired"].get<std::vector<int64_t>>(), nextPicks);
    QCOMPARE(seed["rounds"][1]["accuracy"].get<double>(), s->rounds[1].accuracy);
    // Copy as Command with the view in front: that very command.
    const QString command = w->commandLine();
    QVERIFY2(command.startsWith(QStringLiteral("ensemble-cli active ")), qPrintable(command));
    QVERIFY2(command.endsWith(QStringLiteral(" --acquisition entropy --seeds 1 --rounds 2")),
             qPrintable(command));
    QVERIFY2(command.contains(QStringLiteral("--set 'active.per_round=5'")), qPrintable(command));
}

void TestGuiActive::clickAndCursorLabelExactlyThatRow() {
    auto w = makeWindow({1200, 800});
    ActiveStatePtr s = startLoop(*w, activeRun());
    QVERIFY(s != nullptr);
    ActiveView* view = w->activeView();
    ensemble::ui::ActiveCanvas* canvas = view->canvas();
    // Zoomed in (+ twice, at the centre), as the Boundary view zooms: a click still labels the
    // point under it.
    canvas->setFocus();
    QTest::keyClick(canvas, Qt::Key_Plus);
    QTest::keyClick(canvas, Qt::Key_Plus);
    QVERIFY(canvas->isZoomed());
    // A pool row that is not a pick and that a click at its centre finds (no other point
    // nearer, inside the zoomed plot): the person's choice, not the acquisition's.
    int64_t chosen = -1;
    for (int64_t row : s->pool) {
        if (std::find(s->scores.picks.begin(), s->scores.picks.end(), row) !=
            s->scores.picks.end()) {
            continue;
        }
        if (canvas->poolRowAt(canvas->rowPosition(row)) == row) {
            chosen = row;
            break;
        }
    }
    QVERIFY(chosen >= 0);
    const std::vector<int64_t> before = s->labelled;
    QTest::mouseClick(canvas, Qt::LeftButton, Qt::NoModifier,
                      canvas->rowPosition(chosen).toPoint());
    s = waitState(*w, [](const auto& st) { return st.rounds.size() == 2 && !st.pending; });
    QVERIFY(s != nullptr);
    QCOMPARE(s->rounds[0].acquired, std::vector<int64_t>{chosen});
    QCOMPARE(s->rounds[0].acquiredScores.size(), std::size_t{1});
    QVERIFY(std::isnan(s->rounds[0].acquiredScores[0]));  // a person's pick has no score
    QCOMPARE(s->labelled.size(), before.size() + 1);
    QVERIFY(std::binary_search(s->labelled.begin(), s->labelled.end(), chosen));
    QCOMPARE(s->rounds[1].labels, int64_t(before.size() + 1));
    // Its true label is revealed: the row keeps the data's class.
    QCOMPARE(s->lastAcquired.size(), std::size_t{1});
    QCOMPARE(s->lastAcquired[0].row, chosen);
    QCOMPARE(s->lastAcquired[0].label,
             w->controller()->snapshot()->run->train.y[static_cast<std::size_t>(chosen)]);
    // A drag that starts off every pool point pans; 0 shows the whole map again.
    QPointF empty(-1, -1);
    const QRectF plot = canvas->plotRect();
    for (double x = plot.left() + 20; x < plot.right() - 40 && empty.x() < 0; x += 7) {
        for (double y = plot.top() + 20; y < plot.bottom() - 20 && empty.x() < 0; y += 7) {
            if (canvas->poolRowAt({x, y}) < 0) {
                empty = {x, y};
            }
        }
    }
    QVERIFY(empty.x() >= 0);
    const ensemble::GridBounds unpanned = canvas->viewBounds();
    QTest::mousePress(canvas, Qt::LeftButton, {}, empty.toPoint());
    QTest::mouseMove(canvas, (empty + QPointF(30, 0)).toPoint());
    QTest::mouseRelease(canvas, Qt::LeftButton, {}, (empty + QPointF(30, 0)).toPoint());
    QVERIFY(canvas->viewBounds().xMin < unpanned.xMin);
    QTest::keyClick(canvas, Qt::Key_0);
    QVERIFY(!canvas->isZoomed());

    // By keyboard: Home puts the cursor on the top-scoring pool row, Right on the next one,
    // Enter labels the row under the cursor.
    canvas->setFocus();
    QTest::keyClick(canvas, Qt::Key_Home);
    QCOMPARE(canvas->cursorRow(), s->scores.picks[0]);
    QTest::keyClick(canvas, Qt::Key_Right);
    QCOMPARE(canvas->cursorRow(), s->scores.picks[1]);
    const int64_t second = canvas->cursorRow();
    QTest::keyClick(canvas, Qt::Key_Return);
    s = waitState(*w, [](const auto& st) { return st.rounds.size() == 3 && !st.pending; });
    QVERIFY(s != nullptr);
    QCOMPARE(s->rounds[1].acquired, std::vector<int64_t>{second});
}

void TestGuiActive::playRunsUntilPaused() {
    auto w = makeWindow({1200, 800});
    ActiveStatePtr s = startLoop(*w, activeRun());
    QVERIFY(s != nullptr);
    ActiveView* view = w->activeView();
    view->pauseBox()->setValue(0.0);  // the pace is remembered: no pause, no stop here
    view->stopAtBox()->setValue(0);
    QVERIFY(view->playButton()->isEnabled());
    view->playButton()->click();
    s = waitState(*w, [](const auto& st) { return st.rounds.size() >= 3 && st.playing; });
    QVERIFY(s != nullptr);
    QTRY_COMPARE_WITH_TIMEOUT(view->playButton()->text().remove(QLatin1Char('&')),
                              QStringLiteral("Pause"), 60000);
    QVERIFY(!view->acquireButton()->isEnabled());
    // P pauses: the round under way ends, then no more.
    view->canvas()->setFocus();
    QTest::keyClick(view->canvas(), Qt::Key_P);
    s = waitState(*w, [](const auto& st) { return !st.playing; });
    QVERIFY(s != nullptr);
    // Each round took exactly its picks, no row twice.
    for (std::size_t r = 0; r + 1 < s->rounds.size(); ++r) {
        QCOMPARE(s->rounds[r].acquired.size(), std::size_t{kPerRound});
        QCOMPARE(s->rounds[r + 1].labels, s->rounds[r].labels + kPerRound);
    }
    std::vector<int64_t> all = s->labelled;
    QVERIFY(std::adjacent_find(all.begin(), all.end()) == all.end());
    // Stopped: two round trips through the engine thread, where a queued round would run
    // between them, bring no new state.
    const uint64_t serial = w->controller()->activeState()->serial;
    QVERIFY(ensemble::test::engineIdle(*w->controller()));
    QCoreApplication::processEvents();
    QCOMPARE(w->controller()->activeState()->serial, serial);
    QCOMPARE(view->playButton()->text().remove(QLatin1Char('&')), QStringLiteral("Play"));
    QVERIFY(view->acquireButton()->isEnabled());
}

// Pause is a flag the GUI thread sets while the engine thread plays: it can land before the
// first round, during a round, just after a round's state went out saying "playing", or between
// two rounds (the next one queued). Driven here on this thread at each of those points, the
// loop's worker answers Play with states that say "playing" and ends with exactly one that says
// it stopped: none left the view showing Pause forever (between rounds, before the first), two
// made a state come after the loop was seen stopped (during a round: the race that the slower
// ASan build showed in playRunsUntilPaused).
void TestGuiActive::pauseSaysStoppedOnceWhereverItLands() {
    using ensemble::ui::ActiveWorker;
    auto run = std::make_shared<ensemble::ui::RunInfo>();
    run->runId = 1;
    run->config = ensemble::parseConfig(activeRun());
    const ensemble::DataSplit data = ensemble::loadDataSplit(run->config.dataset);
    enum class Where { BeforeFirstRound, DuringRound, AfterPublish, BetweenRounds };
    for (Where where :
         {Where::BeforeFirstRound, Where::DuringRound, Where::AfterPublish, Where::BetweenRounds}) {
        const char* const at =
            std::array{"before the first round", "during a round", "after a round's state",
                       "between rounds"}[static_cast<std::size_t>(where)];
        ActiveWorker worker;
        std::vector<ActiveStatePtr> states;
        bool playStarted = false;
        QObject context;
        connect(&worker, &ActiveWorker::stateReady, &context, [&](const ActiveStatePtr& s) {
            states.push_back(s);
            if (where == Where::AfterPublish && playStarted && s->playing) {
                worker.requestPause();
            }
        });
        // Each report is taken at once, so each posts: the pause can land mid-round.
        connect(&worker, &ActiveWorker::progressPosted, &context, [&] {
            worker.takeProgress();  // as the controller does: the next report posts again
            if (where == Where::DuringRound && playStarted) {
                worker.requestPause();
            }
        });
        worker.start(run, data, json(), Acquisition::Entropy);
        QCOMPARE(states.size(), std::size_t{1});
        QVERIFY2(!states[0]->playing && states[0]->rounds.size() == 1, at);
        playStarted = true;
        worker.requestPlay();
        if (where == Where::BeforeFirstRound) {
            worker.requestPause();
        }
        worker.play();  // the first round of Play trains now; the next one is queued
        if (where == Where::BetweenRounds) {
            QCOMPARE(states.size(), std::size_t{2});
            QVERIFY2(states[1]->playing, at);
            worker.requestPause();
        }
        for (int i = 0; i < 3; ++i) {  // the queued round, and anything it would queue
            QCoreApplication::sendPostedEvents(&worker);
        }
        const std::size_t n = states.size();
        QVERIFY2(n >= 2, at);
        for (std::size_t i = 1; i + 1 < n; ++i) {
            QVERIFY2(states[i]->playing, at);
        }
        QVERIFY2(!states[n - 1]->playing, at);
        QVERIFY2(states[n - 1]->message.isEmpty(), qPrintable(states[n - 1]->message));
        // A paused loop is idle: nothing is queued that would publish again.
        QCoreApplication::sendPostedEvents(&worker);
        QCOMPARE(states.size(), n);
        // Before the first round nothing trained; elsewhere Play's round did.
        QCOMPARE(states[n - 1]->rounds.size(),
                 where == Where::BeforeFirstRound ? std::size_t{1} : std::size_t{2});
    }
}

// Play's pace in rounds: after each round the worker waits the pause on a timer of its thread
// (never a sleep) before it acquires again. Driven on this thread: a round does not start while
// the timer runs, however many queued calls are handled meanwhile; a Pause during the wait ends
// it at once with one state that says stopped; a short pause lets the next round come by itself.
void TestGuiActive::thePauseBetweenRoundsHoldsTheNextRound() {
    using ensemble::ui::ActiveWorker;
    auto run = std::make_shared<ensemble::ui::RunInfo>();
    run->runId = 1;
    run->config = ensemble::parseConfig(activeRun());
    const ensemble::DataSplit data = ensemble::loadDataSplit(run->config.dataset);
    ActiveWorker worker;
    std::vector<ActiveStatePtr> states;
    QObject context;
    connect(&worker, &ActiveWorker::stateReady, &context,
            [&](const ActiveStatePtr& s) { states.push_back(s); });
    connect(&worker, &ActiveWorker::progressPosted, &context, [&] { worker.takeProgress(); });
    worker.start(run, data, json(), Acquisition::Entropy);
    QCOMPARE(states.size(), std::size_t{1});

    worker.setPace(600'000, 0);  // ten minutes: the test never sees it pass
    worker.requestPlay();
    worker.play();  // Play's first round trains now, then the pause begins
    QCOMPARE(states.size(), std::size_t{2});
    QVERIFY(states[1]->playing);
    QCOMPARE(states[1]->rounds.size(), std::size_t{2});
    QVERIFY(worker.waitingForNextRound());
    for (int i = 0; i < 3; ++i) {  // what a queued next round would be: nothing is
        QCoreApplication::sendPostedEvents(&worker);
        QCoreApplication::processEvents();
    }
    QCOMPARE(states.size(), std::size_t{2});
    QVERIFY(worker.waitingForNextRound());
    // A Pause during the wait: the controller queues endWait after the flag.
    worker.requestPause();
    worker.endWait();
    QVERIFY(!worker.waitingForNextRound());
    QCOMPARE(states.size(), std::size_t{3});
    QVERIFY(!states[2]->playing);
    QVERIFY2(states[2]->message.isEmpty(), qPrintable(states[2]->message));
    QCOMPARE(states[2]->rounds.size(), std::size_t{2});  // no round started
    worker.endWait();  // a second one (a Cancel after the Pause) says nothing more
    QCOMPARE(states.size(), std::size_t{3});

    // A short pause passes by itself: the next round follows, then the next wait.
    worker.setPace(20, 0);
    worker.requestPlay();
    worker.play();
    QCOMPARE(states.size(), std::size_t{4});
    QCOMPARE(states[3]->rounds.size(), std::size_t{3});
    QVERIFY(worker.waitingForNextRound());
    QTRY_VERIFY_WITH_TIMEOUT(states.size() >= 5, 60000);
    QCOMPARE(states[4]->rounds.size(), std::size_t{4});
    QVERIFY(states[4]->playing);
    worker.requestPause();
    worker.endWait();
    QVERIFY(!states.back()->playing);
    QVERIFY(!worker.waitingForNextRound());
}

// The window: the view's pace reaches the worker, the status counts down to the next round, and
// Pause during the wait (a long one) stops Play before another round starts, at once: the
// engine thread's next two round trips bring the stopped state, not a round.
void TestGuiActive::pausingDuringTheWaitStopsTheNextRound() {
    auto w = makeWindow({1200, 800});
    ActiveStatePtr s = startLoop(*w, activeRun());
    QVERIFY(s != nullptr);
    ActiveView* view = w->activeView();
    view->pauseBox()->setValue(10.0);
    view->stopAtBox()->setValue(0);
    view->playButton()->click();
    s = waitState(*w, [](const auto& st) { return st.rounds.size() == 2 && st.playing; });
    QVERIFY(s != nullptr);
    QTRY_COMPARE_WITH_TIMEOUT(view->playButton()->text().remove(QLatin1Char('&')),
                              QStringLiteral("Pause"), 60000);
    QVERIFY(view->nextRoundIn() > 0.0);
    QVERIFY(view->nextRoundIn() <= 10.0);
    // Where Play stands: the round done, the most it can run (the pool in rounds of 5), the
    // wait.
    const std::size_t most = 1 + (s->pool.size() + kPerRound - 1) / kPerRound;
    QVERIFY2(view->message().startsWith(
                 QStringLiteral("Playing: round 1 of at most %1, next in ").arg(most)),
             qPrintable(view->message()));
    view->playButton()->click();  // Pause, during the wait
    QCOMPARE(view->nextRoundIn(), -1.0);
    QVERIFY(ensemble::test::engineIdle(*w->controller()));  // the engine thread's queue ran
    QCoreApplication::processEvents();
    s = w->controller()->activeState();
    QVERIFY(!s->playing);
    QCOMPARE(s->rounds.size(), std::size_t{2});
    QTRY_COMPARE(view->playButton()->text().remove(QLatin1Char('&')), QStringLiteral("Play"));
    QVERIFY(view->acquireButton()->isEnabled());
    // The pace is remembered for the next window.
    auto again = makeWindow({1200, 800});
    QCOMPARE(again->activeView()->pauseBox()->value(), 10.0);
}

// Stop at N: Play stops at exactly N labels, its last round taking only the picks that fit
// (the first in pick order), and says so; Play again at N runs no round.
void TestGuiActive::stopAtStopsAtExactlyThoseLabels() {
    auto w = makeWindow({1200, 800});
    ActiveStatePtr s = startLoop(*w, activeRun());
    QVERIFY(s != nullptr);
    ActiveView* view = w->activeView();
    view->pauseBox()->setValue(0.0);
    view->stopAtBox()->setValue(22);  // 10 initial, 5 a round: 15, 20, then 2 of 5
    std::vector<ActiveStatePtr> states;
    QObject context;
    connect(w->controller(), &ensemble::ui::EngineController::activeChanged, &context,
            [&](const ActiveStatePtr& st) { states.push_back(st); });
    view->playButton()->click();
    s = waitState(*w, [](const auto& st) { return !st.playing && st.rounds.size() > 1; });
    QVERIFY(s != nullptr);
    QCOMPARE(s->labelled.size(), std::size_t{22});
    QCOMPARE(s->rounds.size(), std::size_t{4});
    QCOMPARE(s->rounds.back().labels, int64_t{22});
    QCOMPARE(s->rounds[2].acquired.size(), std::size_t{2});
    // The two are the first two picks of the round before, in their order.
    ActiveStatePtr before;
    for (const ActiveStatePtr& st : states) {
        if (st && st->rounds.size() == 3) {
            before = st;
        }
    }
    QVERIFY(before != nullptr);
    QCOMPARE(s->rounds[2].acquired,
             std::vector<int64_t>(before->scores.picks.begin(), before->scores.picks.begin() + 2));
    QTRY_VERIFY2(view->message().contains(QStringLiteral("stopped at 22 labels")),
                 qPrintable(view->message()));
    QTRY_COMPARE(view->playButton()->text().remove(QLatin1Char('&')), QStringLiteral("Play"));
    // At 22 already: Play says why it does not go on, and trains nothing.
    const uint64_t serial = s->serial;
    view->playButton()->click();
    s = waitState(*w, [serial](const auto& st) { return st.serial > serial; });
    QVERIFY(s != nullptr);
    QVERIFY(!s->playing);
    QCOMPARE(s->labelled.size(), std::size_t{22});
    QCOMPARE(s->rounds.size(), std::size_t{4});
    QTRY_VERIFY2(view->message().contains(QStringLiteral("raise Stop at")),
                 qPrintable(view->message()));
    view->stopAtBox()->setValue(0);
}

// A round's picks read as a sequence: the canvas numbers the latest round's picks 1..n in pick
// order (earlier rounds' picks are plain labelled points), each number beside its marker, inside
// the plot and clear of the others. The accuracy chart's x axis runs past its last point by more
// than the marker's half-width, so the marker is whole.
void TestGuiActive::theLastRoundsPicksCarryTheirNumbers() {
    auto w = makeWindow({1200, 800});
    ActiveStatePtr s = startLoop(*w, activeRun());
    QVERIFY(s != nullptr);
    ActiveView* view = w->activeView();
    ensemble::ui::ActiveCanvas* canvas = view->canvas();
    QVERIFY(canvas->latestPicks().empty());  // round 0: nothing acquired yet
    for (std::size_t r = 2; r <= 3; ++r) {
        view->acquireButton()->click();
        s = waitState(*w, [r](const auto& st) { return st.rounds.size() == r && !st.pending; });
        QVERIFY(s != nullptr);
    }
    QTRY_VERIFY(view->state() == s);
    const std::vector<int64_t>& last = s->rounds[1].acquired;  // the rows labelled to reach 3
    QCOMPARE(last.size(), std::size_t{kPerRound});
    QCOMPARE(canvas->latestPicks(), last);
    for (std::size_t i = 0; i < last.size(); ++i) {
        QCOMPARE(canvas->pickNumber(last[i]), static_cast<int>(i) + 1);
    }
    for (int64_t row : s->rounds[0].acquired) {  // the round before's: no number
        QCOMPARE(canvas->pickNumber(row), 0);
    }
    const std::vector<QRectF> rects = canvas->pickNumberRects();
    QCOMPARE(rects.size(), last.size());
    const QRectF plot = canvas->plotRect();
    for (std::size_t i = 0; i < rects.size(); ++i) {
        QVERIFY(!rects[i].isEmpty());
        QVERIFY(plot.contains(rects[i]));
        // Beside its marker: within a few marker sizes.
        const QPointF c = canvas->rowPosition(last[i]);
        QVERIFY2(QLineF(c, rects[i].center()).length() < 40.0, qPrintable(QString::number(i)));
        for (std::size_t j = 0; j < i; ++j) {
            QVERIFY2(!rects[i].intersects(rects[j]),
                     qPrintable(QStringLiteral("numbers %1 and %2 overlap").arg(i + 1).arg(j + 1)));
        }
    }

    // The chart: 10, 15, 20 labels on an axis whose ticks end at 20; the last point's marker
    // ends inside the plot area.
    QChart* chart = view->chart();
    QScatterSeries* point = nullptr;
    for (QAbstractSeries* series : chart->series()) {
        if (auto* scatter = qobject_cast<QScatterSeries*>(series)) {
            point = scatter;
        }
    }
    QVERIFY(point != nullptr);
    QCOMPARE(point->count(), 1);
    QCOMPARE(point->at(0).x(), 20.0);
    QTRY_VERIFY(chart->plotArea().width() > 50.0);
    const QPointF at = chart->mapToPosition(point->at(0), point);
    QVERIFY2(at.x() + point->markerSize() / 2 + 1.0 <= chart->plotArea().right(),
             qPrintable(QStringLiteral("the marker at %1 px, the plot area ends at %2 px")
                            .arg(at.x())
                            .arg(chart->plotArea().right())));
}

void TestGuiActive::checkpointBringsTheLoopBack() {
    QTemporaryDir dir;
    const QString path = dir.filePath(QStringLiteral("loop.safetensors"));
    ActiveStatePtr saved;
    {
        auto w = makeWindow({1200, 800});
        ActiveStatePtr s = startLoop(*w, activeRun());
        QVERIFY(s != nullptr);
        ActiveView* view = w->activeView();
        view->acquireButton()->click();
        s = waitState(*w, [](const auto& st) { return st.rounds.size() == 2 && !st.pending; });
        QVERIFY(s != nullptr);
        // Another acquisition function: a new loop, the entropy curve kept as an earlier one.
        QComboBox* box = view->acquisitionBox();
        box->setCurrentIndex(box->findData(QStringLiteral("margin")));
        Q_EMIT box->activated(box->currentIndex());
        s = waitState(*w, [](const auto& st) {
            return st.acquisition == Acquisition::Margin && st.rounds.size() == 1 && !st.pending;
        });
        QVERIFY(s != nullptr);
        QCOMPARE(s->earlier.size(), std::size_t{1});
        QCOMPARE(name(s->earlier[0].acquisition), name(Acquisition::Entropy));
        QCOMPARE(s->earlier[0].labels, (std::vector<int64_t>{10, 10 + kPerRound}));
        // The panel shows the loop's acquisition, so Save and Copy as Command replay it.
        QVERIFY(w->commandLine().contains(QStringLiteral("active.acquisition=\"margin\"")));
        view->acquireButton()->click();
        s = waitState(*w, [](const auto& st) { return st.rounds.size() == 2 && !st.pending; });
        QVERIFY(s != nullptr);
        saved = s;
        QSignalSpy done(w.get(), &MainWindow::checkpointSaved);
        w->saveCheckpoint(path);
        QVERIFY(done.wait(30000));
        QVERIFY2(done.at(0).at(0).toBool(), qPrintable(done.at(0).at(1).toString()));
    }
    const ensemble::Checkpoint checkpoint = ensemble::readCheckpoint(path.toStdString());
    QVERIFY(checkpoint.active.is_object());
    QCOMPARE(checkpoint.active["acquisition"].get<std::string>(), std::string("margin"));
    QCOMPARE(checkpoint.active["state"]["rounds"].size(), saved->rounds.size());
    QCOMPARE(checkpoint.active["config"]["per_round"].get<int>(), kPerRound);
    QCOMPARE(checkpoint.active["earlier"].size(), std::size_t{1});

    // Opened in a fresh window with the view in front: the loop as it was (not a new one of
    // the view's own), its map bit for bit (the last round trained again from the same seeds
    // on the same rows).
    auto w = makeWindow({1200, 800});
    w->loadExperiment(activeRun(), QString());
    QVERIFY(waitFresh(*w));
    QVERIFY(w->setView(QStringLiteral("active")));
    QString error;
    QVERIFY2(w->openEnsemble(path, &error), qPrintable(error));
    const ActiveStatePtr back =
        waitState(*w, [](const auto& st) { return st.rounds.size() == 2 && !st.pending; });
    const ActiveStatePtr latest = w->controller()->activeState();
    QVERIFY2(back != nullptr, latest
                                  ? qPrintable(QStringLiteral("the state came with %1 rounds: %2")
                                                   .arg(latest->rounds.size())
                                                   .arg(latest->message))
                                  : "no state came");
    QCOMPARE(name(back->acquisition), name(Acquisition::Margin));
    QCOMPARE(back->labelled, saved->labelled);
    QCOMPARE(back->rounds.size(), saved->rounds.size());
    for (std::size_t r = 0; r < back->rounds.size(); ++r) {
        QCOMPARE(back->rounds[r].labels, saved->rounds[r].labels);
        QCOMPARE(back->rounds[r].accuracy, saved->rounds[r].accuracy);
        QCOMPARE(back->rounds[r].acquired, saved->rounds[r].acquired);
    }
    QCOMPARE(back->scores.picks, saved->scores.picks);
    QVERIFY(sameBitsNonEmpty(back->gridScores, saved->gridScores));
    QCOMPARE(back->earlier.size(), std::size_t{1});
    QCOMPARE(name(back->earlier[0].acquisition), name(Acquisition::Entropy));
    QCOMPARE(back->earlier[0].accuracy, saved->earlier[0].accuracy);
    QCoreApplication::processEvents();
    QCOMPARE(w->currentViewName(), QStringLiteral("active"));
    // The view shows the restored loop and started none of its own.
    QCOMPARE(w->activeView()->state()->serial, back->serial);
    QVERIFY(ensemble::test::engineIdle(*w->controller()));
    QCoreApplication::processEvents();
    QCOMPARE(w->controller()->activeState()->serial, back->serial);
    QCOMPARE(name(w->activeView()->acquisition()), name(Acquisition::Margin));
}

void TestGuiActive::imageDataShowsTheDigitsAcquired() {
    QTemporaryDir dir;
    QVERIFY(ensemble::test::writeIdx(dir.path(), "train-images-idx3-ubyte",
                                     "train-labels-idx1-ubyte", 200, 1));
    QVERIFY(ensemble::test::writeIdx(dir.path(), "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte",
                                     100, 2));
    json c = ensemble::loadConfigJson("mnist-mlp");
    c["dataset"]["path"] = dir.path().toStdString();
    c["model"]["hidden"] = json::array({16});
    c["ensemble"]["members"] = 2;
    c["training"]["batch_size"] = 10;
    c["training"]["epochs"] = 0;
    c["training"]["steps"] = 10;
    c["backend"] = {{"kind", "cpu"}, {"threads", 1}};
    c["active"] = {{"initial", 10}, {"per_round", 4}, {"steps", 20}};
    auto w = makeWindow({900, 600});
    ActiveStatePtr s = startLoop(*w, c);
    QVERIFY(s != nullptr);
    QVERIFY(!s->hasGrid);
    ActiveView* view = w->activeView();
    view->pauseBox()->setValue(0.0);
    view->stopAtBox()->setValue(0);
    view->playButton()->click();
    s = waitState(*w, [](const auto& st) { return st.rounds.size() >= 2; });
    QVERIFY(s != nullptr);
    // The view learns of the rounds through a queued signal: click Pause once it shows Pause,
    // as a person would (on a loaded machine it can lag the controller's state).
    QTRY_COMPARE_WITH_TIMEOUT(view->playButton()->text().remove(QLatin1Char('&')),
                              QStringLiteral("Pause"), 60000);
    view->playButton()->click();  // pause
    s = waitState(*w, [](const auto& st) { return !st.playing; });
    QVERIFY(s != nullptr);
    QCOMPARE(s->lastAcquired.size(), std::size_t{4});
    const ensemble::ExperimentConfig config = ensemble::parseConfig(c);
    const ensemble::DataSplit data = ensemble::loadDataSplit(config.dataset);
    for (const ensemble::ui::ActiveDigit& d : s->lastAcquired) {
        QCOMPARE(d.image.size(), QSize(28, 28));
        QVERIFY(std::isfinite(d.score));
        QCOMPARE(d.label, data.train.y[static_cast<std::size_t>(d.row)]);
        // The picture is the row's pixels (0..255, grey).
        const float* x = data.train.row(d.row);
        for (int i = 0; i < 28 * 28; i += 37) {
            QCOMPARE(qGray(d.image.pixel(i % 28, i / 28)),
                     static_cast<int>(std::clamp(x[i] / 255.0f, 0.0f, 1.0f) * 255.0f + 0.5f));
        }
    }
    // The digits acquired are the last round's picks.
    QCOMPARE(s->rounds[s->rounds.size() - 2].acquired.size(), std::size_t{4});
}

// Warm-started rounds continue each other: opening replays every round, to the same map.
void TestGuiActive::warmLoopComesBackBitForBit() {
    json c = activeRun();
    c["active"]["retrain"] = "warm";
    QTemporaryDir dir;
    const QString path = dir.filePath(QStringLiteral("warm.safetensors"));
    ActiveStatePtr saved;
    {
        auto w = makeWindow({1200, 800});
        ActiveStatePtr s = startLoop(*w, c);
        QVERIFY(s != nullptr);
        for (std::size_t r = 2; r <= 3; ++r) {
            w->activeView()->acquireButton()->click();
            s = waitState(*w, [r](const auto& st) { return st.rounds.size() == r && !st.pending; });
            QVERIFY(s != nullptr);
        }
        saved = s;
        QSignalSpy done(w.get(), &MainWindow::checkpointSaved);
        w->saveCheckpoint(path);
        QVERIFY(done.wait(30000));
        QVERIFY(done.at(0).at(0).toBool());
    }
    auto w = makeWindow({1200, 800});
    QString error;
    QVERIFY2(w->openEnsemble(path, &error), qPrintable(error));
    const ActiveStatePtr back =
        waitState(*w, [](const auto& st) { return st.rounds.size() == 3 && !st.pending; });
    QVERIFY(back != nullptr);
    QVERIFY(back->config.retrain == ensemble::ActiveRetrain::Warm);
    QCOMPARE(back->labelled, saved->labelled);
    QCOMPARE(back->scores.picks, saved->scores.picks);
    QVERIFY(sameBitsNonEmpty(back->gridScores, saved->gridScores));
    QVERIFY(sameBitsNonEmpty(back->scores.scores, saved->scores.scores));
}

// Esc stops a long round: no round is added, the rows wait, and Acquire becomes Retrain.
void TestGuiActive::escapeCancelsTheRoundUnderWay() {
    json c = activeRun();
    c["active"]["steps"] = 50'000'000;  // far longer than the test waits
    auto w = makeWindow({1200, 800});
    w->loadExperiment(c, QString());
    QVERIFY(waitFresh(*w));
    QSignalSpy progress(w->controller(), &ensemble::ui::EngineController::activeProgress);
    QVERIFY(w->setView(QStringLiteral("active")));
    QVERIFY(progress.wait(30000));  // the round is training
    ActiveView* view = w->activeView();
    QVERIFY(view->cancelButton()->isEnabled());
    view->canvas()->setFocus();
    QTest::keyClick(view->canvas(), Qt::Key_Escape);
    const ActiveStatePtr s = waitState(*w, [](const auto&) { return true; });
    QVERIFY(s != nullptr);
    QVERIFY(s->rounds.empty());
    QVERIFY(s->pending);
    QCOMPARE(s->labelled.size(), std::size_t{10});
    QVERIFY(!view->cancelButton()->isEnabled());
    QVERIFY(view->acquireButton()->isEnabled());
    QCOMPARE(view->acquireButton()->text().remove(QLatin1Char('&')), QStringLiteral("Retrain"));
}

// The window's rule for jobs: a new run (a Reset, another experiment, Open) ends the round
// under way at once. The rounds here would train for hours, so each new run standing proves
// the engine thread was let go; the loop of the run before shows nothing on the new one, which
// starts a loop of its own as the view is in front.
void TestGuiActive::newRunEndsTheRoundUnderWay() {
    QTemporaryDir dir;
    const QString path = dir.filePath(QStringLiteral("fresh.safetensors"));
    json c = activeRun();
    c["active"]["steps"] = 50'000'000;  // far longer than the test waits
    auto w = makeWindow({1200, 800});
    w->loadExperiment(c, QString());
    QVERIFY(waitFresh(*w));
    {
        QSignalSpy saved(w.get(), &MainWindow::checkpointSaved);
        w->saveCheckpoint(path);  // no loop yet: Open below starts from this run
        QVERIFY(saved.wait(30000));
        QVERIFY2(saved.at(0).at(0).toBool(), qPrintable(saved.at(0).at(1).toString()));
    }
    ActiveView* view = w->activeView();
    QSignalSpy ended(w->controller(), &ensemble::ui::EngineController::jobsEnded);
    const auto roundTraining = [&] {
        QSignalSpy progress(w->controller(), &ensemble::ui::EngineController::activeProgress);
        return progress.wait(30000) && view->cancelButton()->isEnabled();
    };
    QVERIFY(w->setView(QStringLiteral("active")));
    QVERIFY(roundTraining());

    w->resetAction()->trigger();
    QCOMPARE(ended.count(), 1);
    QCOMPARE(ended.at(0).at(0).toBool(), true);
    QVERIFY2(view->message().contains(QStringLiteral("a new run began")),
             qPrintable(view->message()));
    QVERIFY(waitFresh(*w));
    QVERIFY(roundTraining());  // the new run's own loop

    json other = c;
    other["ensemble"]["members"] = 2;
    w->loadExperiment(other, QString());
    QCOMPARE(ended.count(), 2);
    QCOMPARE(ended.at(1).at(0).toBool(), false);
    QVERIFY(waitFresh(*w));
    QVERIFY(roundTraining());

    // Open cancels the round at once (the engine thread reads the file) and ends the jobs when
    // the file's run stands.
    QString error;
    QVERIFY2(w->openEnsemble(path, &error), qPrintable(error));
    QTRY_COMPARE_WITH_TIMEOUT(ended.count(), 3, 30000);
    QCOMPARE(ended.at(2).at(0).toBool(), false);
    const uint64_t opened = w->controller()->currentRunId();
    QVERIFY(ensemble::test::waitSnapshot(
        *w, [opened](const auto& s) { return s.run->runId == opened; }));
    QCOMPARE(w->controller()->snapshot()->run->members, 3);
}

// The runs store: the loop is an entry of its own ("app-active"), linked to the run it learns
// from, with its round's figures; it ends when the window closes.
void TestGuiActive::theLoopIsAnEntryOfItsOwn() {
    QTemporaryDir dir;
    const QString store = dir.filePath(QStringLiteral("runs.sqlite"));
    const ensemble::test::ScopedRunStore recordTo(store);
    {
        auto w = makeWindow({1200, 800});
        QVERIFY(startLoop(*w, activeRun()) != nullptr);
    }
    const std::vector<ensemble::runs::RunEntry> entries =
        ensemble::runs::RunStore::open(store.toStdString()).list({});
    QCOMPARE(entries.size(), std::size_t(2));
    const ensemble::runs::RunEntry& loop = entries[0];  // newest first
    QCOMPARE(loop.kind, std::string("app-active"));
    QCOMPARE(loop.state, ensemble::runs::RunState::Finished);
    QCOMPARE(entries[1].kind, std::string("app-train"));
    QCOMPARE(loop.parentId, entries[1].id);
    QCOMPARE(loop.relation, std::string("measured"));
    QCOMPARE(loop.figures.at("entropy.labels"), 10.0);
    QVERIFY(loop.figures.count("entropy.final_accuracy") == 1);
}

// batchbald: the view's loop acquires the engine's greedy batch and records its gains; the
// summary lists the gains and the labelled set's rows per class (counted here by hand), and the
// picture paints the gains' box.
void TestGuiActive::batchBaldShowsGainsAndClassCounts() {
    auto w = makeWindow({1200, 800});
    json c = activeRun();
    c["active"]["acquisition"] = "batchbald";
    ActiveStatePtr s = startLoop(*w, c);
    QVERIFY(s != nullptr);
    QCOMPARE(name(s->acquisition), name(Acquisition::BatchBald));
    const ensemble::ExperimentConfig config = loopConfig(c);
    ActiveLearner reference(config, ensemble::loadDataSplit(config.dataset),
                            Acquisition::BatchBald);
    QVERIFY(reference.trainRound());
    const ensemble::PoolScores scores = reference.scorePool();
    QCOMPARE(s->scores.picks, scores.picks);
    QVERIFY(sameBitsNonEmpty(s->scores.pickScores, scores.pickScores));
    QCOMPARE(s->scores.joint.size(), std::size_t{kPerRound});
    ActiveView* view = w->activeView();
    QVERIFY2(view->summary().contains(QStringLiteral("greedy gains")), qPrintable(view->summary()));
    const std::vector<int32_t>& y = w->controller()->snapshot()->run->train.y;
    std::vector<int64_t> hand(2, 0);
    for (int64_t row : s->labelled) {
        ++hand[static_cast<std::size_t>(y[static_cast<std::size_t>(row)])];
    }
    for (std::size_t k = 0; k < hand.size(); ++k) {
        QVERIFY2(view->summary().contains(QStringLiteral("%1:&nbsp;%2").arg(k).arg(hand[k])),
                 qPrintable(view->summary()));
    }
    QCOMPARE(s->rounds[0].classCounts, hand);
    // The gains' box at the map's bottom left: near-white over the heatmap.
    const QImage picture = view->canvas()->grab().toImage();
    const QRectF plot = view->canvas()->plotRect();
    QVERIFY(qGray(picture.pixel(static_cast<int>(plot.left()) + 6,
                                static_cast<int>(plot.bottom()) - 6)) > 200);
    view->acquireButton()->click();
    s = waitState(*w, [](const auto& st) { return st.rounds.size() == 2 && !st.pending; });
    QVERIFY(s != nullptr);
    QCOMPARE(s->rounds[0].acquiredScores, scores.pickScores);  // the picks record their gains
}

QTEST_MAIN(TestGuiActive)
#include "tst_gui_active.moc"
