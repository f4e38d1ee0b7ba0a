// The engine-thread bridge without a window: snapshots, pause/step/reset semantics, member
// switches, coalescing, export round trip, shutdown while training, and the window's job
// pattern (EngineJob: coalesced progress, one outcome, cancel, a replaced job never delivered). How
// long shutdown takes is measured by bench/gui_latency (ensemble-gui-bench), not asserted here.
#include <QSemaphore>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QtTest>

#include <atomic>
#include <cmath>
#include <memory>
#include <optional>
#include <thread>
#include <utility>
#include <vector>

#include "backend/kernel_report.h"
#include "config/config.h"
#include "controller/engine_controller.h"
#include "controller/engine_job.h"
#include "core/errors.h"
#include "help_text.h"
#include "io/model_io.h"
#include "registry/registry.h"
#include "support/gui_test_support.h"
#include "support/test_support.h"
#include "sys/cpu_identity.h"

using ensemble::test::engineIdle;
using ensemble::test::kLongRun;
using ensemble::test::smallConfig;
using ensemble::test::waitSnapshot;
using ensemble::ui::EngineController;
using ensemble::ui::HeatQuantity;
using ensemble::ui::SnapshotPtr;

namespace {

// The first snapshots of a 16-member run take seconds in a Debug + AddressSanitizer build on a
// busy machine (16 s measured); a generous wait keeps that build's check meaningful.
constexpr int kSlowBuildWaitMs = 90'000;

bool sameImage(const QImage& a, const QImage& b) {
    return a.size() == b.size() && a == b;
}

}  // namespace

class TestGuiController : public QObject {
    Q_OBJECT

  private Q_SLOTS:
    void configurePublishesStepZero();
    void autoDecisionInRunAndAbout();
    void trainToPauseAndStep();
    void memberStepsCountTheNetworksTrained();
    void pauseStopsProgress();
    void resetSameSeedSameWeights();
    void memberSwitchChangesEnsemble();
    void snapshotsCoalesce();
    void exportRoundTrip();
    void invalidConfigReportsKey();
    void destroyWhileTraining();
    void destroyWithRecoveryTimerActive();
    void progressMailboxQueuesOneDeliveryForTheLatest();
    void engineJobCoalescesProgressAndEndsOnce();
    void engineJobCancelEndsItWithItsOutcome();
    void engineJobReplacedOrDroppedNeverComesBack();
};

namespace {

// A job thread as the controller has one: an object living there for EngineJob to queue to.
struct JobThread {
    QThread thread;
    QObject* target = new QObject;
    JobThread() {
        target->moveToThread(&thread);
        thread.start();
    }
    ~JobThread() {
        thread.quit();
        thread.wait();
        delete target;
    }
};

using ensemble::ui::EngineJob;
using ensemble::ui::JobProgress;

// What a test job saw and said.
struct Ended {
    int outcome = 0;
    bool cancelled = false;
};

}  // namespace

// A thousand reports made while this thread takes no event arrive as one (the latest), and
// the outcome comes once, after it.
void TestGuiController::progressMailboxQueuesOneDeliveryForTheLatest() {
    ensemble::ui::ProgressMailbox<JobProgress> mailbox;
    QVERIFY(!mailbox.take().has_value());  // nothing reported yet
    // Reports faster than deliveries: only the first asks for one, and it brings the last.
    QVERIFY(mailbox.put({1, 100}));
    QVERIFY(!mailbox.put({2, 100}));
    QVERIFY(!mailbox.put({3, 100}));
    std::optional<JobProgress> p = mailbox.take();
    QVERIFY(p.has_value());
    QCOMPARE(p->done, int64_t{3});
    QCOMPARE(p->total, int64_t{100});
    QVERIFY(!mailbox.take().has_value());  // taken: a second delivery finds nothing
    // After a delivery, the next report queues again.
    QVERIFY(mailbox.put({4, 100}));
    p = mailbox.take();
    QVERIFY(p.has_value());
    QCOMPARE(p->done, int64_t{4});
}

void TestGuiController::engineJobCoalescesProgressAndEndsOnce() {
    JobThread engine;
    QObject gui;
    std::vector<int64_t> seen;
    std::vector<Ended> ended;
    EngineJob<JobProgress, int> job(
        engine.target, &gui, [&](const JobProgress& p) { seen.push_back(p.done); },
        [&](int outcome, bool cancelled) {
            QCOMPARE(seen.size(), std::size_t{1});  // the progress came first
            ended.push_back({outcome, cancelled});
        });
    QSemaphore workDone;
    const uint64_t id = job.start([&](const auto& progress, const std::atomic<bool>&) {
        for (int64_t i = 1; i <= 1000; ++i) {
            progress(JobProgress{i, 1000});
        }
        workDone.release();
        return 7;
    });
    QVERIFY(id > 0);
    QCOMPARE(job.currentId(), id);
    QVERIFY(job.isRunning());
    workDone.acquire();  // every report made, none delivered: this thread took no event
    QVERIFY(QTest::qWaitFor([&] { return !ended.empty(); }, 20000));
    QCoreApplication::processEvents();
    QCOMPARE(seen, (std::vector<int64_t>{1000}));
    QCOMPARE(ended.size(), std::size_t{1});
    QCOMPARE(ended[0].outcome, 7);
    QVERIFY(!ended[0].cancelled);
    QVERIFY(!job.isRunning());
    QCOMPARE(job.currentId(), uint64_t{0});
}

// Cancel reaches the job's flag; its outcome (what it kept) still comes, marked cancelled.
void TestGuiController::engineJobCancelEndsItWithItsOutcome() {
    JobThread engine;
    QObject gui;
    std::vector<Ended> ended;
    EngineJob<JobProgress, int> job(engine.target, &gui, nullptr, [&](int outcome, bool cancelled) {
        ended.push_back({outcome, cancelled});
    });
    QSemaphore started;
    job.start([&](const auto&, const std::atomic<bool>& cancel) {
        started.release();
        while (!cancel.load()) {
            std::this_thread::yield();
        }
        return 3;  // what it kept
    });
    started.acquire();
    job.cancel();
    QVERIFY(QTest::qWaitFor([&] { return !ended.empty(); }, 20000));
    QCoreApplication::processEvents();
    QCOMPARE(ended.size(), std::size_t{1});
    QCOMPARE(ended[0].outcome, 3);
    QVERIFY(ended[0].cancelled);
}

// A start replaces the job under way and drop() ends it: each stops at its flag, and neither
// its progress nor its outcome is ever delivered. Only the latest job's end comes.
void TestGuiController::engineJobReplacedOrDroppedNeverComesBack() {
    JobThread engine;
    QObject gui;
    std::vector<int64_t> seen;
    std::vector<Ended> ended;
    EngineJob<JobProgress, int> job(
        engine.target, &gui, [&](const JobProgress& p) { seen.push_back(p.done); },
        [&](int outcome, bool cancelled) {
            ended.push_back({outcome, cancelled});
        });
    // Each waits for its cancel after a report, so only a replaced job can end early.
    const auto waitingJob = [](int value, QSemaphore* started) {
        return [value, started](const auto& progress, const std::atomic<bool>& cancel) {
            progress(JobProgress{value, 100});
            started->release();
            while (!cancel.load()) {
                std::this_thread::yield();
            }
            return value;
        };
    };
    QSemaphore firstStarted;
    const uint64_t first = job.start(waitingJob(1, &firstStarted));
    firstStarted.acquire();
    QSemaphore secondStarted;
    const uint64_t second = job.start(waitingJob(2, &secondStarted));  // drops the first
    QVERIFY(second > first);
    secondStarted.acquire();  // it runs: the first one stopped at its flag
    job.drop();
    QVERIFY(!job.isRunning());
    QSemaphore thirdDone;
    job.start([&](const auto& progress, const std::atomic<bool>&) {
        progress(JobProgress{3, 100});
        thirdDone.release();
        return 3;
    });
    thirdDone.acquire();  // the engine thread went past both ended jobs
    QVERIFY(QTest::qWaitFor([&] { return !ended.empty(); }, 20000));
    QCoreApplication::processEvents();
    QCOMPARE(seen, (std::vector<int64_t>{3}));
    QCOMPARE(ended.size(), std::size_t{1});
    QCOMPARE(ended[0].outcome, 3);
    QVERIFY(!ended[0].cancelled);
}

void TestGuiController::configurePublishesStepZero() {
    EngineController c;
    QSignalSpy configured(&c, &EngineController::configured);
    c.configure(smallConfig({.steps = 400}));
    QVERIFY(waitSnapshot(c, [](const auto& s) { return s.step == 0; }));
    QCOMPARE(configured.count(), 1);
    SnapshotPtr s = c.snapshot();
    QCOMPARE(s->run->members, 4);
    QCOMPARE(s->run->classes, 2);
    QVERIFY(s->hasGrid);
    QVERIFY(s->run->gridSize >= 40);
    QCOMPARE(s->memberImages.size(), std::size_t{4});
    for (const auto& h : s->heat) {
        QCOMPARE(h.image.width(), s->run->gridSize);
    }
    QCOMPARE(s->history.size(), std::size_t{1});
    QVERIFY(!s->running);
}

void TestGuiController::autoDecisionInRunAndAbout() {
    // backend.kind=auto: the decision and its reason reach the run (the status bar's notice)
    // and the About box; without a usable GPU it is the CPU, saying why.
    QTemporaryDir cache;  // auto may calibrate where a GPU is usable: never the user's cache
    qputenv("XDG_CACHE_HOME", cache.path().toUtf8());
    nlohmann::json config = smallConfig({.steps = 400});
    config["backend"]["kind"] = "auto";
    config["backend"]["threads"] = 1;
    EngineController c;
    QSignalSpy configured(&c, &EngineController::configured);
    c.configure(config);
    QVERIFY(waitSnapshot(c, [](const auto& s) { return s.step == 0; }));
    const SnapshotPtr s = c.snapshot();
    const QString notice = QString::fromStdString(s->run->notice);
    QVERIFY2(notice.startsWith(QStringLiteral("backend auto: using ")), qPrintable(notice));
    QCOMPARE(configured.count(), 1);
    QCOMPARE(configured.first().at(1).toString(), notice);
    std::string reason;
    if (!ensemble::cudaAvailable(0, reason)) {
        QVERIFY2(notice.contains(QStringLiteral("the CPU")), qPrintable(notice));
        QVERIFY2(notice.contains(QString::fromStdString(reason)), qPrintable(notice));
    }
    const QString about = ensemble::ui::aboutHtml(s);
    QVERIFY2(about.contains(notice.toHtmlEscaped()), qPrintable(about));
    // The CPU by vendor, family, model and vector flags, and the kernels' ISA (issue 53).
    QVERIFY2(
        about.contains(QString::fromStdString(ensemble::cpuIdentity().describe()).toHtmlEscaped()),
        qPrintable(about));
    QVERIFY2(
        about.contains(QString::fromStdString(ensemble::cpuKernels().describe()).toHtmlEscaped()),
        qPrintable(about));
    // A level name that is none: the box opens and says why the kernels are unknown.
    const QByteArray pinned = qgetenv("ENSEMBLE_CPU_ISA");
    qputenv("ENSEMBLE_CPU_ISA", "x86-64-v9");
    const QString bad = ensemble::ui::aboutHtml(s);
    if (pinned.isEmpty()) {
        qunsetenv("ENSEMBLE_CPU_ISA");
    } else {
        qputenv("ENSEMBLE_CPU_ISA", pinned);
    }
    QVERIFY2(bad.contains(QStringLiteral("ENSEMBLE_CPU_ISA")), qPrintable(bad));
}

void TestGuiController::trainToPauseAndStep() {
    EngineController c;
    c.configure(smallConfig({.steps = 400}));
    QVERIFY(waitSnapshot(c, [](const auto& s) { return s.step == 0; }));
    const QImage initial = c.snapshot()->heat[0].image;
    c.trainTo(60);
    QVERIFY(waitSnapshot(c, [](const auto& s) { return s.step == 60 && !s.running; }));
    QVERIFY(!sameImage(initial, c.snapshot()->heat[0].image));
    c.step();
    QVERIFY(waitSnapshot(c, [](const auto& s) { return s.step == 61; }));
    QVERIFY(engineIdle(c));  // one step, not a run
    QCOMPARE(c.snapshot()->step, int64_t{61});
    QVERIFY(c.snapshot()->history.back()->step == 61);
}

// The run bar's member-steps/s: K networks per step for independent members, one for a
// one-network method (MC dropout here; snapshots alike), whatever K is.
void TestGuiController::memberStepsCountTheNetworksTrained() {
    for (const auto& [method, networks] : {std::pair{"independent", 4.0}, {"mc_dropout", 1.0}}) {
        EngineController c;
        nlohmann::json config = smallConfig();
        config["ensemble"]["method"] = method;
        c.configure(config);
        QVERIFY(waitSnapshot(c, [](const auto& s) { return s.step == 0; }));
        c.start();
        QVERIFY(waitSnapshot(c, [](const auto& s) { return s.running && s.stepsPerSecond > 0; }));
        c.pause();
        QVERIFY(waitSnapshot(c, [](const auto& s) { return !s.running; }));
        const SnapshotPtr s = c.snapshot();
        QVERIFY2(s->stepsPerSecond > 0, method);
        QCOMPARE(s->memberStepsPerSecond, s->stepsPerSecond * networks);
    }
}

void TestGuiController::pauseStopsProgress() {
    EngineController c;
    c.configure(smallConfig({.members = 8}));
    QVERIFY(waitSnapshot(c, [](const auto& s) { return s.step == 0; }));
    QSignalSpy running(&c, &EngineController::runningChanged);
    c.start();
    QVERIFY(waitSnapshot(c, [](const auto& s) { return s.step > 100 && s.running; }));
    const uint64_t received = c.snapshotsReceived();
    QVERIFY(received >= 2);
    QVERIFY(!engineIdle(c));  // while training the check below fails
    c.pause();
    QVERIFY(waitSnapshot(c, [](const auto& s) { return !s.running; }));
    QVERIFY(!c.isRunning());
    const int64_t stopped = c.snapshot()->step;
    QVERIFY(engineIdle(c));
    QCOMPARE(c.snapshot()->step, stopped);
    QVERIFY(running.count() >= 2);
}

void TestGuiController::resetSameSeedSameWeights() {
    EngineController c;
    c.configure(smallConfig({.steps = 400, .seed = 7}));
    QVERIFY(waitSnapshot(c, [](const auto& s) { return s.step == 0; }));
    const SnapshotPtr first = c.snapshot();
    c.trainTo(40);
    QVERIFY(waitSnapshot(c, [](const auto& s) { return s.step == 40 && !s.running; }));

    // Reset with the same config: step 0, the same initial weights (same predictions).
    c.configure(smallConfig({.steps = 400, .seed = 7}));
    QVERIFY(waitSnapshot(c, [&](const auto& s) { return s.step == 0 && s.run != first->run; }));
    QVERIFY(c.snapshot()->grid.memberProbabilities == first->grid.memberProbabilities);
    QVERIFY(sameImage(c.snapshot()->heat[0].image, first->heat[0].image));

    // A new seed: new initial weights.
    const auto before = c.snapshot()->run;
    c.configure(smallConfig({.steps = 400, .seed = 8}));
    QVERIFY(waitSnapshot(c, [&](const auto& s) { return s.step == 0 && s.run != before; }));
    QVERIFY(c.snapshot()->grid.memberProbabilities != first->grid.memberProbabilities);
    QVERIFY(!sameImage(c.snapshot()->heat[0].image, first->heat[0].image));
}

void TestGuiController::memberSwitchChangesEnsemble() {
    EngineController c;
    c.configure(smallConfig({.steps = 400}));
    c.trainTo(80);
    QVERIFY(waitSnapshot(c, [](const auto& s) { return s.step == 80 && !s.running; }));
    const SnapshotPtr all = c.snapshot();
    QCOMPARE(all->includedCount, 4);
    c.setMemberSwitchedOn(0, false);
    QVERIFY(waitSnapshot(c, [](const auto& s) { return s.includedCount == 3; }));
    const SnapshotPtr three = c.snapshot();
    QCOMPARE(three->step, int64_t{80});
    QVERIFY(!sameImage(all->heat[0].image, three->heat[0].image));
    QVERIFY(!sameImage(all->heat[static_cast<int>(HeatQuantity::Epistemic)].image,
                       three->heat[static_cast<int>(HeatQuantity::Epistemic)].image));
    // Members' own images do not depend on the switches.
    QVERIFY(sameImage(all->memberImages[1], three->memberImages[1]));
    c.setSwitchedOnMembers({0, 0, 0, 0});
    QVERIFY(waitSnapshot(c, [](const auto& s) { return s.includedCount == 0; }));
    QVERIFY(!c.snapshot()->hasEnsemble);
    c.setSwitchedOnMembers({1, 1, 1, 1});
    QVERIFY(waitSnapshot(c, [](const auto& s) { return s.includedCount == 4; }));
    QVERIFY(sameImage(all->heat[0].image, c.snapshot()->heat[0].image));
}

void TestGuiController::snapshotsCoalesce() {
    EngineController c;
    c.configure(smallConfig({.members = 8}));
    QVERIFY(waitSnapshot(c, [](const auto& s) { return s.step == 0; }));
    c.start();
    QVERIFY(waitSnapshot(c, [](const auto& s) { return s.running && s.step > 0; }));
    // Block the GUI thread, as a long paint would: the worker keeps training but builds no
    // backlog. The sleep is the stimulus, not a wait for something; the bound below holds
    // however long it lasts.
    const uint64_t before = c.snapshotsReceived();
    const int64_t stepBefore = c.snapshot()->step;
    QThread::msleep(800);
    QCoreApplication::processEvents();
    const uint64_t after = c.snapshotsReceived();
    QVERIFY2(after - before <= 2, qPrintable(QStringLiteral("received %1").arg(after - before)));
    QVERIFY(waitSnapshot(c, [&](const auto& s) { return s.step > stepBefore; }));
    c.pause();
}

void TestGuiController::exportRoundTrip() {
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    EngineController c;
    c.configure(smallConfig({.members = 3, .steps = 400}));
    c.trainTo(50);
    QVERIFY(waitSnapshot(c, [](const auto& s) { return s.step == 50 && !s.running; }));
    QSignalSpy done(&c, &EngineController::exportFinished);
    const QString base = dir.filePath(QStringLiteral("run"));
    c.exportTo(base);
    QVERIFY(done.wait(20000));
    QVERIFY2(done.at(0).at(0).toBool(), qPrintable(done.at(0).at(1).toString()));
    QCOMPARE(done.at(0).at(2).toStringList().size(), 3);
    const ensemble::LoadedEnsemble loaded =
        ensemble::importEnsemble((base + QStringLiteral(".safetensors")).toStdString());
    QCOMPARE(loaded.step, int64_t{50});
    // The loaded weights predict what the live ensemble predicted on the grid.
    const SnapshotPtr s = c.snapshot();
    const auto& g = s->grid;
    const int64_t rows = static_cast<int64_t>(g.size) * g.size;
    const std::vector<float> lp = ensemble::predictLogProbs(loaded, g.points.data(), rows);
    QCOMPARE(lp.size(), g.memberProbabilities.size());
    double worst = 0.0;
    for (std::size_t i = 0; i < lp.size(); ++i) {
        worst = std::max(worst, std::abs(std::exp(static_cast<double>(lp[i])) -
                                         static_cast<double>(g.memberProbabilities[i])));
    }
    QVERIFY2(worst < ensemble::test::kFloatRounding, qPrintable(QString::number(worst)));
    QVERIFY(QFile::exists(base + QStringLiteral(".metrics.json")));
    // The same report as `ensemble-cli train --metrics`: the same keys for every member.
    QFile mf(base + QStringLiteral(".metrics.json"));
    QVERIFY(mf.open(QIODevice::ReadOnly));
    const auto report = nlohmann::json::parse(mf.readAll().toStdString());
    QCOMPARE(report["step"].get<int>(), 50);
    QVERIFY(report.contains("epoch") && report.contains("dataset"));
    QVERIFY(report["ensemble"]["train"].contains("loss"));
    QVERIFY(report["ensemble"]["test"].contains("accuracy"));
    for (const nlohmann::json& member : report["members"]) {
        for (const std::string& key : ensemble::test::runReportMemberKeys()) {
            QVERIFY2(member.contains(key), key.c_str());
        }
    }
    QVERIFY(QFile::exists(base + QStringLiteral(".metrics.csv")));

    // A failed export (a directory that does not exist) leaves nothing behind.
    done.clear();
    const QString bad = dir.filePath(QStringLiteral("missing/sub/run"));
    c.exportTo(bad);
    QVERIFY(done.wait(20000));
    QVERIFY(!done.at(0).at(0).toBool());
    QVERIFY(!done.at(0).at(1).toString().isEmpty());
    QVERIFY(!QFile::exists(bad + QStringLiteral(".safetensors")));
}

void TestGuiController::invalidConfigReportsKey() {
    EngineController c;
    QSignalSpy failed(&c, &EngineController::configureFailed);
    nlohmann::json bad = smallConfig({.steps = 400});
    bad["ensemble"]["members"] = 0;
    c.configure(bad);
    QVERIFY(failed.wait(10000));
    QVERIFY(failed.at(0).at(1).toString().startsWith(QStringLiteral("ensemble.members:")));
    QCOMPARE(failed.at(0).at(2).toInt(), static_cast<int>(ensemble::ErrorKind::Config));
    QVERIFY(!c.isConfigured());
    // A CSV that does not exist: the kind says what to fix (the app's advice comes from it).
    nlohmann::json csv = smallConfig({.steps = 400});
    csv["dataset"] = {{"kind", "csv"}, {"path", "/nonexistent/ensemblelab/data.csv"}};
    c.configure(csv);
    QVERIFY(failed.wait(10000));
    QCOMPARE(failed.size(), 2);
    QCOMPARE(failed.at(1).at(2).toInt(), static_cast<int>(ensemble::ErrorKind::Csv));
}

void TestGuiController::destroyWhileTraining() {
    auto c = std::make_unique<EngineController>();
    c->configure(smallConfig({.members = 16}));
    c->start();
    QVERIFY(waitSnapshot(
        *c, [](const auto& s) { return s.running && s.step > 50; }, kSlowBuildWaitMs));
    // The destructor stops the chunk in flight and joins the engine thread: it returns (a hang
    // fails at CTest's deadline), and no queued signal reaches a destroyed controller.
    c.reset();
    QCoreApplication::processEvents();
}

void TestGuiController::destroyWithRecoveryTimerActive() {
    // The recovery timer lives on the engine thread; one step while paused starts it (the write
    // is due in an hour). Destroying the controller then must stop it on that thread: stopped
    // from here, as the worker is deleted, Qt refuses with a warning (monkey seed 2, closing
    // the window with the timer active).
    QTest::failOnWarning(
        QRegularExpression(QStringLiteral("Timers cannot be stopped from another thread")));
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const QString path = dir.filePath(QStringLiteral("recovery.ensemble"));
    auto c = std::make_unique<EngineController>();
    QSignalSpy written(c.get(), &EngineController::recoveryWritten);
    c->configure(smallConfig({.steps = 400}));
    c->setRecovery(path, 3600.0);
    QVERIFY(waitSnapshot(*c, [](const auto& s) { return s.step == 0; }));
    c->step();  // paused: the timer, not the chunks, waits for the deadline
    QVERIFY(waitSnapshot(*c, [](const auto& s) { return s.step == 1; }));
    QVERIFY(engineIdle(*c));
    QCOMPARE(written.count(), 0);
    c.reset();
    QCoreApplication::processEvents();
    QVERIFY(!QFile::exists(path));  // closing is not a pause: nothing was due
}

QTEST_MAIN(TestGuiController)
#include "tst_gui_controller.moc"
