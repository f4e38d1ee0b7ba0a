// The app keeps a run through a crash. In-process: the recovery store's locks (two
// instances never take the same slot, a dead owner's lock is taken over), writes only when
// the run changed, a clean exit removes the file and a signal keeps it, the banner offers a
// crash's run and restores it bit for bit. With the real ensemble-lab binary (offscreen, a
// temporary HOME and XDG folders): kill -9 at seeded random moments mid-run, restart with
// --restore-recovery, continue to a fixed step and compare every tensor with an uninterrupted
// run; SIGTERM writes the file and exits 0; only a plain interactive start offers the file.
#include <QDir>
#include <QFileInfo>
#include <QLabel>
#include <QLockFile>
#include <QProcess>
#include <QPushButton>
#include <QRegularExpression>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QtTest>

#include <signal.h>
#include <sys/types.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <memory>
#include <optional>
#include <random>

#include "config/config.h"
#include "io/safetensors.h"
#include "recovery.h"
#include "render/plot_helpers.h"
#include "support/gui_test_support.h"
#include "support/test_support.h"
#include "termination_signals.h"

using ensemble::test::makeWindow;
using ensemble::test::waitSnapshot;
using ensemble::ui::MainWindow;
using ensemble::ui::RecoveryFile;
using ensemble::ui::RecoveryStore;

namespace {

// A wait for the engine's training progress: 20 s, five times that in a sanitized build (a
// hundred steps took most of 20 s under ASan on the loaded 2-core machine).
constexpr int kProgressWaitMs = ensemble::test::progressWaitMs(20000);

// A small 2-D run: moons, four members, on the CPU (the same bits on every machine).
nlohmann::json smallMoons(int64_t steps) {
    nlohmann::json c = ensemble::loadConfigJson("moons");
    c["dataset"]["n"] = 400;
    c["ensemble"]["members"] = 4;
    c["training"]["steps"] = steps;
    c["backend"]["kind"] = "cpu";
    return c;
}

QStringList smallMoonsArgs(int64_t steps) {
    return {QStringLiteral("--config"), QStringLiteral("moons"),
            QStringLiteral("--set"),    QStringLiteral("dataset.n=400"),
            QStringLiteral("--set"),    QStringLiteral("ensemble.members=4"),
            QStringLiteral("--set"),    QStringLiteral("backend.kind=\"cpu\""),
            QStringLiteral("--set"),    QStringLiteral("training.steps=%1").arg(steps)};
}

std::unique_ptr<MainWindow> makeAutosavingWindow(int seconds) {
    MainWindow::Options options;
    options.useSettings = false;
    options.autosaveSeconds = seconds;
    auto w = std::make_unique<MainWindow>(options);
    w->resize(1000, 700);
    w->show();
    return w;
}

QStringList checkpointsIn(const QString& folder) {
    return QDir(folder).entryList({QStringLiteral("*.safetensors")}, QDir::Files);
}

QStringList locksIn(const QString& folder) {
    return QDir(folder).entryList({QStringLiteral("*.lock")}, QDir::Files);
}

// The checkpoint's tensors, every byte, and its step: what a resumed run continues from.
struct Tensors {
    int64_t step = -1;
    std::vector<ensemble::Tensor> tensors;
};

Tensors tensorsOf(const QString& path) {
    const ensemble::SafetensorsFile f = ensemble::readSafetensors(path.toStdString());
    Tensors t;
    t.step = std::stoll(f.metadata.at("step"));
    t.tensors = f.tensors;
    return t;
}

// Empty when equal; else what differs.
QString compareTensors(const Tensors& a, const Tensors& b) {
    if (a.step != b.step) {
        return QStringLiteral("steps %1 and %2").arg(a.step).arg(b.step);
    }
    if (a.tensors.size() != b.tensors.size()) {
        return QStringLiteral("%1 and %2 tensors").arg(a.tensors.size()).arg(b.tensors.size());
    }
    for (std::size_t i = 0; i < a.tensors.size(); ++i) {
        const ensemble::Tensor& x = a.tensors[i];
        const ensemble::Tensor& y = b.tensors[i];
        if (x.name != y.name || x.shape != y.shape || x.dtype != y.dtype || x.data != y.data) {
            return QStringLiteral("tensor %1 differs").arg(QString::fromStdString(x.name));
        }
    }
    return {};
}

// The real ensemble-lab with its own HOME and XDG folders, so its settings and recovery files
// are the test's.
class Lab {
  public:
    explicit Lab(const QString& home) : m_home(home) {}

    QString recoveryFolder() const {
        // AppDataLocation: $XDG_DATA_HOME/<organisation>/<application>.
        return m_home + QStringLiteral("/data/EnsembleLab/EnsembleLab/recovery");
    }

    void start(const QStringList& args) {
        m_output.clear();
        m_process = std::make_unique<QProcess>();
        QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
        env.insert(QStringLiteral("QT_QPA_PLATFORM"), QStringLiteral("offscreen"));
        env.insert(QStringLiteral("HOME"), m_home);
        env.insert(QStringLiteral("XDG_DATA_HOME"), m_home + QStringLiteral("/data"));
        env.insert(QStringLiteral("XDG_CONFIG_HOME"), m_home + QStringLiteral("/config"));
        env.insert(QStringLiteral("XDG_CACHE_HOME"), m_home + QStringLiteral("/cache"));
        env.insert(QStringLiteral("XDG_RUNTIME_DIR"), m_home + QStringLiteral("/runtime"));
        QDir().mkpath(m_home + QStringLiteral("/runtime"));
        QFile::setPermissions(m_home + QStringLiteral("/runtime"), QFileDevice::ReadOwner |
                                                                       QFileDevice::WriteOwner |
                                                                       QFileDevice::ExeOwner);
        m_process->setProcessEnvironment(env);
        m_process->setProcessChannelMode(QProcess::MergedChannels);
        m_process->start(QStringLiteral(ENSEMBLE_LAB_PATH), args);
        QVERIFY2(m_process->waitForStarted(20000), qPrintable(m_process->errorString()));
    }

    // The recovery checkpoint there, once it holds a step that satisfies `pred`.
    template <typename Pred>
    std::optional<RecoveryFile> waitRecovery(Pred pred, int timeoutMs = 120000) {
        std::optional<RecoveryFile> found;
        // Its result is `found` (empty when the time ran out or the process ended first).
        (void)QTest::qWaitFor(
            [&] {
                const QStringList files = checkpointsIn(recoveryFolder());
                if (files.size() == 1) {
                    found = RecoveryStore::describe(QDir(recoveryFolder()).filePath(files[0]));
                    if (found && pred(*found)) {
                        return true;
                    }
                }
                found.reset();
                return m_process->state() == QProcess::NotRunning;
            },
            timeoutMs);
        return found;
    }

    void signal(int sig) { ::kill(static_cast<pid_t>(m_process->processId()), sig); }

    // Waits for the end; its exit code (-1: it did not end or crashed).
    int finish(int timeoutMs = 60000) {
        // waitForFinished() is false for a process that has already ended.
        if (m_process->state() != QProcess::NotRunning && !m_process->waitForFinished(timeoutMs)) {
            m_process->kill();
            m_process->waitForFinished();
            return -1;
        }
        return m_process->exitStatus() == QProcess::NormalExit ? m_process->exitCode() : -1;
    }

    void killNow() {
        signal(SIGKILL);
        m_process->waitForFinished(30000);
    }

    // What it printed so far (stdout and stderr).
    QString output() {
        if (m_process) {
            m_output += QString::fromLocal8Bit(m_process->readAll());
        }
        return m_output;
    }
    bool running() const { return m_process && m_process->state() != QProcess::NotRunning; }

  private:
    QString m_home;
    std::unique_ptr<QProcess> m_process;
    QString m_output;
};

}  // namespace

class TestGuiRecovery : public QObject {
    Q_OBJECT

  private Q_SLOTS:
    void initTestCase() { ensemble::test::isolateSettings(); }
    void init() { QDir(RecoveryStore::defaultFolder()).removeRecursively(); }
    void cleanupTestCase() { QDir(RecoveryStore::defaultFolder()).removeRecursively(); }

    void twoInstancesNeverTakeTheSameSlot();
    void aDeadOwnersLockIsTakenOver();
    void writesOnlyWhenTheRunChanged();
    void cleanExitRemovesTheFileAndASignalKeepsIt();
    void sigtermWritesTheRun();
    void bannerOffersAndRestoresBitForBit();
    void bannerDiscardRemovesTheFile();
    void restoredWithoutItsDataTheFileStays();
    void onlyAPlainStartOffersTheRun();
    void sigtermWritesAndExitsZero();
    void killedAtRandomMomentsContinuesBitForBit();
    void aResetKeepsTheReplacedRunRecoverable();
};

namespace {

// A window at `steps` (paused there: the pause wrote its recovery checkpoint), left as a
// signal leaves it (the file kept, the lock released): what a crash leaves, lock aside.
QString leaveRecoveryAt(int64_t steps) {
    auto w = makeAutosavingWindow(3600);
    w->loadExperiment(smallMoons(10'000));
    QSignalSpy written(w->controller(), &ensemble::ui::EngineController::recoveryWritten);
    if (!ensemble::test::waitFresh(*w)) {
        return {};
    }
    w->controller()->trainTo(steps);
    if (!written.wait(30000) || written.last().at(1).toLongLong() != steps) {
        return {};
    }
    const QString path = written.last().at(0).toString();
    QSignalSpy flushed(w.get(), &MainWindow::recoveryFlushed);
    w->flushRecovery();
    if (!flushed.wait(20000)) {
        return {};
    }
    return path;
}

}  // namespace

// The lock makes a slot one instance's: another store sees neither the live instance's file
// nor a claim held elsewhere; a released one is offered again.
void TestGuiRecovery::twoInstancesNeverTakeTheSameSlot() {
    const QString path = leaveRecoveryAt(20);
    QVERIFY(!path.isEmpty());
    const QString folder = RecoveryStore::defaultFolder();
    QCOMPARE(locksIn(folder), QStringList());  // released with the window

    RecoveryStore first;
    RecoveryStore second;
    const std::optional<RecoveryFile> claimed = first.claimOrphan();
    QVERIFY(claimed.has_value());
    QCOMPARE(claimed->path, path);
    QCOMPARE(claimed->step, int64_t{20});
    QCOMPARE(claimed->dataset, QStringLiteral("moons"));
    QVERIFY(!second.claimOrphan().has_value());  // the first holds it
    // A live instance's own slot is never offered either.
    const QString own = first.ownPath();
    QVERIFY(!own.isEmpty());
    QVERIFY(QFile::copy(path, own));
    first.releaseClaimed();
    const std::optional<RecoveryFile> again = second.claimOrphan();
    QVERIFY(again.has_value());
    QCOMPARE(again->path, path);  // not `own`: the first still runs
    QVERIFY(!first.claimOrphan().has_value());
    first.removeOwn();
    QVERIFY(!QFileInfo::exists(own));
    second.discardClaimed();
    QCOMPARE(checkpointsIn(folder), QStringList());
    QCOMPARE(locksIn(folder), QStringList());
}

// kill -9 leaves the lock file naming a pid that no longer runs: the next store takes it over.
void TestGuiRecovery::aDeadOwnersLockIsTakenOver() {
    const QString path = leaveRecoveryAt(15);
    QVERIFY(!path.isEmpty());
    const QString lockPath = path.chopped(int(strlen(".safetensors"))) + QStringLiteral(".lock");
    // The lock as this process writes it, then its pid replaced by one that has ended.
    QByteArray content;
    {
        QLockFile lock(lockPath);
        QVERIFY(lock.tryLock(0));
        QFile f(lockPath);
        QVERIFY(f.open(QIODevice::ReadOnly));
        content = f.readAll();
    }
    QProcess ended;
    ended.start(QStringLiteral("true"), {});
    QVERIFY(ended.waitForStarted());
    const qint64 deadPid = ended.processId();
    QVERIFY(ended.waitForFinished());
    const int newline = content.indexOf('\n');
    QVERIFY(newline > 0);
    content = QByteArray::number(deadPid) + content.mid(newline);
    {
        QFile f(lockPath);
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write(content);
    }
    RecoveryStore store;
    const std::optional<RecoveryFile> claimed = store.claimOrphan();
    QVERIFY2(claimed.has_value(), content.constData());
    QCOMPARE(claimed->path, path);
    QCOMPARE(claimed->step, int64_t{15});
    // Ours now: the lock names this process.
    QFile f(lockPath);
    QVERIFY(f.open(QIODevice::ReadOnly));
    QCOMPARE(f.readLine().trimmed(), QByteArray::number(QCoreApplication::applicationPid()));
    store.discardClaimed();
}

// Writes at the interval while training, on pause, after a Step; never twice for a step, never
// while paused and unchanged, not for a flush with nothing new.
void TestGuiRecovery::writesOnlyWhenTheRunChanged() {
    auto w = makeAutosavingWindow(1);
    w->loadExperiment(smallMoons(ensemble::test::kLongRun));
    QVERIFY(ensemble::test::waitFresh(*w));
    QSignalSpy written(w->controller(), &ensemble::ui::EngineController::recoveryWritten);
    QVERIFY(written.isValid());
    w->controller()->start();
    QTRY_VERIFY_WITH_TIMEOUT(written.size() >= 3, 30000);
    w->controller()->pause();
    QVERIFY(QTest::qWaitFor([&] { return !w->controller()->isRunning(); }, 20000));
    QVERIFY(ensemble::test::engineIdle(*w->controller()));
    const int64_t pausedAt = w->controller()->snapshot()->step;
    QTRY_VERIFY_WITH_TIMEOUT(written.last().at(1).toLongLong() == pausedAt, 10000);
    for (int i = 1; i < written.size(); ++i) {
        QVERIFY(written.at(i).at(1).toLongLong() > written.at(i - 1).at(1).toLongLong());
        QCOMPARE(written.at(i).at(0).toString(), w->recoveryPath());
    }
    // Paused, nothing changes: nothing is written (three intervals).
    const int count = written.size();
    QTest::qWait(3200);
    QCOMPARE(written.size(), count);
    QSignalSpy flushed(w.get(), &MainWindow::recoveryFlushed);
    w->flushRecovery();
    QVERIFY(flushed.wait(20000));
    QCOMPARE(written.size(), count);
    // One Step: written one interval later.
    w->controller()->step();
    QVERIFY(written.wait(10000));
    QCOMPARE(written.last().at(1).toLongLong(), pausedAt + 1);
    QCOMPARE(RecoveryStore::describe(w->recoveryPath())->step, pausedAt + 1);
    QTest::qWait(2200);
    QCOMPARE(written.size(), count + 1);
}

void TestGuiRecovery::cleanExitRemovesTheFileAndASignalKeepsIt() {
    const QString folder = RecoveryStore::defaultFolder();
    QString path;
    {
        auto w = makeAutosavingWindow(1);
        w->loadExperiment(smallMoons(ensemble::test::kLongRun));
        QVERIFY(ensemble::test::waitFresh(*w));
        QSignalSpy written(w->controller(), &ensemble::ui::EngineController::recoveryWritten);
        w->controller()->start();
        QVERIFY(written.wait(30000));
        path = w->recoveryPath();
        QVERIFY(QFileInfo::exists(path));
        QCOMPARE(locksIn(folder).size(), 1);
        // Destroyed while training: a clean exit.
    }
    QVERIFY(!QFileInfo::exists(path));
    QCOMPARE(checkpointsIn(folder), QStringList());
    QCOMPARE(locksIn(folder), QStringList());

    const QString kept = leaveRecoveryAt(25);
    QVERIFY(QFileInfo::exists(kept));
    QCOMPARE(locksIn(folder), QStringList());
    QCOMPARE(RecoveryStore::describe(kept)->step, int64_t{25});
}

// SIGTERM, through the handler ensemble-lab installs, while training: the window writes the
// step it stopped at.
void TestGuiRecovery::sigtermWritesTheRun() {
    auto w = makeAutosavingWindow(3600);  // no periodic write: only the signal's
    w->loadExperiment(smallMoons(ensemble::test::kLongRun));
    QVERIFY(ensemble::test::waitFresh(*w));
    ensemble::ui::TerminationSignals termination;
    QVERIFY(termination.isActive());
    connect(&termination, &ensemble::ui::TerminationSignals::received, w.get(),
            [&](int) { w->flushRecovery(); });
    QSignalSpy written(w->controller(), &ensemble::ui::EngineController::recoveryWritten);
    QSignalSpy flushed(w.get(), &MainWindow::recoveryFlushed);
    w->controller()->start();
    QVERIFY(waitSnapshot(
        *w, [](const auto& s) { return s.running && s.step > 100; }, kProgressWaitMs));
    QVERIFY(written.isEmpty());
    ::raise(SIGTERM);  // handled: the test goes on
    QVERIFY(flushed.wait(20000));
    QCOMPARE(written.size(), 1);
    QVERIFY(!w->controller()->isRunning());
    const int64_t step = w->controller()->snapshot()->step;
    QCOMPARE(written.at(0).at(1).toLongLong(), step);
    QCOMPARE(RecoveryStore::describe(w->recoveryPath())->step, step);
    const QString path = w->recoveryPath();
    w.reset();
    QVERIFY(QFileInfo::exists(path));  // kept for the next start
}

// The banner's question, its Restore: the run continues as it would have, to the bit.
void TestGuiRecovery::bannerOffersAndRestoresBitForBit() {
    const QString path = leaveRecoveryAt(300);
    QVERIFY(!path.isEmpty());
    const QDateTime written = QFileInfo(path).lastModified();

    auto w = makeAutosavingWindow(3600);
    w->loadExperiment(smallMoons(10'000));
    auto* banner = w->findChild<QFrame*>(QStringLiteral("RecoveryBanner"));
    QVERIFY(banner != nullptr);
    QVERIFY(banner->isHidden());  // not offered unless asked (a scripted start never asks)
    QVERIFY(w->recoveryOffer().isEmpty());
    w->resize(900, 600);
    QVERIFY(w->offerRecovery());
    QVERIFY(banner->isVisible());
    QVERIFY(banner->minimumSizeHint().width() <= 600);  // beside the panel at 900 × 600
    const QString expected = QStringLiteral("Restore the run of %1, step 300?")
                                 .arg(written.toLocalTime().toString(QStringLiteral("HH:mm")));
    QCOMPARE(w->recoveryOffer(), expected);
    QVERIFY(banner->findChild<QLabel*>()->text().startsWith(expected));
    QSignalSpy restored(w.get(), &MainWindow::recoveryRestored);
    auto* restore = banner->findChild<QPushButton*>(QStringLiteral("RestoreRecoveryButton"));
    QVERIFY(restore != nullptr);
    QTest::mouseClick(restore, Qt::LeftButton);
    QVERIFY(restored.wait(30000));
    QVERIFY(restored.at(0).at(0).toBool());
    QVERIFY(banner->isHidden());
    QCOMPARE(w->recoveryPath(), path);  // its file is this window's now
    QVERIFY(waitSnapshot(
        *w, [](const auto& s) { return s.step == 300 && !s.evaluating; }, kProgressWaitMs));
    w->controller()->trainTo(700);
    QVERIFY(waitSnapshot(
        *w, [](const auto& s) { return s.step == 700 && !s.running; }, kProgressWaitMs));
    QTemporaryDir dir;
    const std::vector<float> resumed = ensemble::test::exportedParameters(*w, dir, "resumed");

    auto straight = ensemble::test::makeWindow();
    straight->loadExperiment(smallMoons(10'000));
    QVERIFY(ensemble::test::waitFresh(*straight));
    straight->controller()->trainTo(700);
    QVERIFY(waitSnapshot(
        *straight, [](const auto& s) { return s.step == 700 && !s.running; }, kProgressWaitMs));
    QVERIFY(ensemble::test::sameBitsNonEmpty(
        resumed, ensemble::test::exportedParameters(*straight, dir, "straight")));
}

void TestGuiRecovery::bannerDiscardRemovesTheFile() {
    const QString older = leaveRecoveryAt(10);
    QTest::qWait(1100);  // a later modification time: the newest is offered first
    const QString newer = leaveRecoveryAt(40);
    QVERIFY(!older.isEmpty() && !newer.isEmpty() && older != newer);
    auto w = makeAutosavingWindow(0);
    QVERIFY(w->offerRecovery());
    QVERIFY(w->recoveryOffer().endsWith(QStringLiteral("step 40?")));
    auto* discard = w->findChild<QPushButton*>(QStringLiteral("DiscardRecoveryButton"));
    QTest::mouseClick(discard, Qt::LeftButton);
    QVERIFY(!QFileInfo::exists(newer));
    QVERIFY(w->recoveryOffer().endsWith(QStringLiteral("step 10?")));  // the next one
    QTest::mouseClick(discard, Qt::LeftButton);
    QVERIFY(!QFileInfo::exists(older));
    QVERIFY(w->recoveryOffer().isEmpty());
    QCOMPARE(checkpointsIn(RecoveryStore::defaultFolder()), QStringList());
}

// A run whose CSV file is gone since the crash opens without its data: it cannot train or be
// saved, so its recovery checkpoint is not taken over (a clean exit would remove it): it stays,
// unlocked, for a start where the file is back.
void TestGuiRecovery::restoredWithoutItsDataTheFileStays() {
    QTemporaryDir dir;
    const QString csv = dir.filePath(QStringLiteral("points.csv"));
    QVERIFY(ensemble::test::writePlanarCsv(csv));
    nlohmann::json config = smallMoons(10'000);
    config["dataset"] = {{"kind", "csv"}, {"path", csv.toStdString()}};
    QString path;
    {
        auto w = makeAutosavingWindow(3600);
        w->loadExperiment(config);
        QVERIFY(ensemble::test::waitFresh(*w));
        QSignalSpy written(w->controller(), &ensemble::ui::EngineController::recoveryWritten);
        w->controller()->trainTo(12);
        QVERIFY(written.wait(30000));
        path = written.last().at(0).toString();
        QSignalSpy flushed(w.get(), &MainWindow::recoveryFlushed);
        w->flushRecovery();
        QVERIFY(flushed.wait(20000));
    }
    QVERIFY(QFile::remove(csv));
    {
        auto w = makeAutosavingWindow(3600);
        QVERIFY(w->offerRecovery());
        QSignalSpy restored(w.get(), &MainWindow::recoveryRestored);
        w->restoreRecovery();
        QVERIFY(restored.wait(30000));
        QVERIFY(!restored.at(0).at(0).toBool());
        QVERIFY2(restored.at(0).at(1).toString().contains(QStringLiteral("points.csv")),
                 qPrintable(restored.at(0).at(1).toString()));
        QVERIFY(w->missingDataMessage().contains(QStringLiteral("points.csv")));
        QVERIFY(w->recoveryPath() != path);
    }
    QVERIFY(QFileInfo::exists(path));
    RecoveryStore next;
    const std::optional<RecoveryFile> again = next.claimOrphan();
    QVERIFY(again.has_value());
    QCOMPARE(again->path, path);
    QCOMPARE(again->step, int64_t{12});
    next.releaseClaimed();
}

// Only a plain interactive start offers (and so claims, holding its lock) a crash's file.
void TestGuiRecovery::onlyAPlainStartOffersTheRun() {
    QTemporaryDir home;
    QVERIFY(home.isValid());
    Lab lab(home.path());
    const QString folder = lab.recoveryFolder();
    // A crash's file: left by a run killed after its first write.
    lab.start(smallMoonsArgs(ensemble::test::kLongRun)
              << QStringLiteral("--train-steps") << QString::number(ensemble::test::kLongRun)
              << QStringLiteral("--autosave-seconds") << QStringLiteral("1"));
    QVERIFY(lab.waitRecovery([](const RecoveryFile& f) { return f.step > 0; }).has_value());
    lab.killNow();
    const QString file = QDir(folder).filePath(checkpointsIn(folder).at(0));
    const QByteArray bytes = [&] {
        QFile f(file);
        return f.open(QIODevice::ReadOnly) ? f.readAll() : QByteArray();
    }();
    const QString lockPath = file.chopped(int(strlen(".safetensors"))) + QStringLiteral(".lock");
    // Whether the lock names a process that runs. Read, not taken: a probe that took the lock
    // would itself keep the app from claiming the file while it held it.
    auto heldByAnother = [&] {
        QFile lock(lockPath);
        if (!lock.open(QIODevice::ReadOnly)) {
            return false;
        }
        bool ok = false;
        const qint64 pid = lock.readLine().trimmed().toLongLong(&ok);
        return ok && pid > 0 && ::kill(static_cast<pid_t>(pid), 0) == 0;
    };
    QVERIFY(!heldByAnother());  // the killed owner's lock is stale

    // Scripted starts: the file is neither claimed nor touched.
    const QList<QStringList> scripted{
        {QStringLiteral("--config"), QStringLiteral("moons")},
        {QStringLiteral("--screenshot"), home.filePath(QStringLiteral("shot.png"))},
        {QStringLiteral("--weights"), file},
        {file},
    };
    for (const QStringList& args : scripted) {
        const bool endsByItself = args.first() == QStringLiteral("--screenshot");
        lab.start(args);
        // Watched while it starts and runs: a plain start claims the file within this time.
        QElapsedTimer watched;
        watched.start();
        while ((endsByItself && lab.running()) || (!endsByItself && watched.elapsed() < 3000)) {
            QVERIFY2(!heldByAnother(), qPrintable(args.join(QLatin1Char(' '))));
            QTest::qWait(50);
        }
        if (!endsByItself) {
            lab.signal(SIGTERM);
        }
        QVERIFY2(lab.finish() == 0, qPrintable(args.join(QLatin1Char(' ')) + lab.output()));
        QVERIFY(QFileInfo::exists(file));
    }
    // A plain start offers it: its lock is held while the banner asks. SIGHUP (a logout) ends
    // it as SIGTERM does: exit 0, the lock released.
    lab.start({});
    QVERIFY(QTest::qWaitFor(heldByAnother, 30000));
    lab.signal(SIGHUP);
    QCOMPARE(lab.finish(), 0);
    QVERIFY2(lab.output().contains(QStringLiteral("SIGHUP")), qPrintable(lab.output()));
    QVERIFY(!heldByAnother());
    // Unanswered, the file stays as it was for the next start.
    QFile f(file);
    QVERIFY(f.open(QIODevice::ReadOnly));
    QVERIFY(f.readAll() == bytes);
}

// SIGTERM mid-run: exit 0, the file holds the step training stopped at (as the app reports it,
// at or after the write seen just before the signal: written after the signal when training
// moved on meanwhile), the lock is released.
void TestGuiRecovery::sigtermWritesAndExitsZero() {
    QTemporaryDir home;
    Lab lab(home.path());
    lab.start(smallMoonsArgs(ensemble::test::kLongRun)
              << QStringLiteral("--train-steps") << QString::number(ensemble::test::kLongRun)
              << QStringLiteral("--autosave-seconds") << QStringLiteral("2"));
    const std::optional<RecoveryFile> first =
        lab.waitRecovery([](const RecoveryFile& f) { return f.step > 0; });
    QVERIFY(first.has_value());
    lab.signal(SIGTERM);
    QCOMPARE(lab.finish(), 0);
    const QString out = lab.output();
    QVERIFY2(out.contains(QStringLiteral("SIGTERM: ending")), qPrintable(out));
    const QRegularExpressionMatch kept =
        QRegularExpression(QStringLiteral("kept at step (\\d+) for the next start")).match(out);
    QVERIFY2(kept.hasMatch(), qPrintable(out));
    const QStringList files = checkpointsIn(lab.recoveryFolder());
    QCOMPARE(files.size(), 1);
    const std::optional<RecoveryFile> last =
        RecoveryStore::describe(QDir(lab.recoveryFolder()).filePath(files[0]));
    QVERIFY(last.has_value());
    QCOMPARE(last->step, kept.captured(1).toLongLong());
    QVERIFY(last->step >= first->step);
    QCOMPARE(locksIn(lab.recoveryFolder()), QStringList());
}

// kill -9 at seeded random moments mid-run, restart, restore, continue: the same tensors as a
// run that was never interrupted (weights, optimizer moments, step counts).
void TestGuiRecovery::killedAtRandomMomentsContinuesBitForBit() {
    // The run's length: about eight seconds of training at this machine's pace, so the kills
    // land mid-run however loaded it is (measured first, on a throw-away run).
    int64_t finalStep = 0;
    {
        QTemporaryDir home;
        Lab probe(home.path());
        probe.start(smallMoonsArgs(ensemble::test::kLongRun)
                    << QStringLiteral("--train-steps") << QString::number(ensemble::test::kLongRun)
                    << QStringLiteral("--autosave-seconds") << QStringLiteral("1"));
        const auto a = probe.waitRecovery([](const RecoveryFile& f) { return f.step > 0; });
        QVERIFY(a.has_value());
        const auto t0 = std::chrono::steady_clock::now();
        const int64_t s0 = a->step;
        const auto b = probe.waitRecovery([&](const RecoveryFile& f) { return f.step > s0; });
        const auto c = probe.waitRecovery([&](const RecoveryFile& f) { return f.step > b->step; });
        QVERIFY(b.has_value() && c.has_value());
        const double seconds =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        probe.killNow();
        const double rate = static_cast<double>(c->step - s0) / seconds;
        // At least 40,000 steps: a probe slowed by a busy moment (a parallel ctest) measured a
        // few hundred steps a second and made a 2,000- or 12,000-step run that the app, at full
        // pace again (about 6,000 steps a second here), finished before the last kill: with a
        // recovery write a second, a run needs several seconds of its fastest pace.
        finalStep =
            std::clamp<int64_t>(static_cast<int64_t>(rate * 8.0) / 100 * 100, 40000, 5'000'000);
    }
    qInfo("training to step %lld", static_cast<long long>(finalStep));
    // The run's flags for the current finalStep (the straight run may lengthen it).
    const auto length = [&] {
        return QStringList{QStringLiteral("--train-steps"), QString::number(finalStep),
                           QStringLiteral("--autosave-seconds"), QStringLiteral("1")};
    };

    // Uninterrupted: trains to the end, pauses (which writes), SIGTERM keeps the file. It also
    // checks the probe: a probe slowed by a busy moment (a parallel ctest) makes a run that the
    // app, at full pace again, ends within a second or two, before three kills can land in it;
    // such a run is lengthened to about eight seconds of its own pace and made again.
    Tensors expected;
    for (int attempt = 0;; ++attempt) {
        QTemporaryDir straightHome;
        Lab straight(straightHome.path());
        const auto started = std::chrono::steady_clock::now();
        straight.start(smallMoonsArgs(finalStep) + length());
        const auto end = straight.waitRecovery(
            [&](const RecoveryFile& f) { return f.step == finalStep; }, 600000);
        QVERIFY2(end.has_value(), qPrintable(straight.output()));
        const double seconds =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
        straight.signal(SIGTERM);
        QCOMPARE(straight.finish(), 0);
        if (seconds >= 6.0 || attempt == 2 || finalStep >= 5'000'000) {
            expected = tensorsOf(end->path);
            break;
        }
        finalStep = std::min<int64_t>(
            static_cast<int64_t>(static_cast<double>(finalStep) * 8.0 / seconds) / 100 * 100,
            5'000'000);
        qInfo("the run took %.1f s: training to step %lld instead", seconds,
              static_cast<long long>(finalStep));
    }

    // Interrupted: killed three times at random moments, each a seeded fraction of the run
    // plus a random delay, then restored from whatever the last write holds.
    QTemporaryDir home;
    Lab lab(home.path());
    std::mt19937 rng(38);
    const double fractions[3][2] = {{0.10, 0.30}, {0.35, 0.55}, {0.60, 0.80}};
    lab.start(smallMoonsArgs(finalStep) + length());
    int64_t restoredFrom = 0;
    for (int kill = 0; kill < 3; ++kill) {
        const double fraction =
            std::uniform_real_distribution<double>(fractions[kill][0], fractions[kill][1])(rng);
        const auto threshold = static_cast<int64_t>(fraction * static_cast<double>(finalStep));
        const auto reached = lab.waitRecovery(
            [&](const RecoveryFile& f) { return f.step > restoredFrom && f.step >= threshold; },
            600000);
        QVERIFY2(reached.has_value(), qPrintable(lab.output()));
        QTest::qWait(std::uniform_int_distribution<int>(0, 900)(rng));
        lab.killNow();
        const QStringList files = checkpointsIn(lab.recoveryFolder());
        QCOMPARE(files.size(), 1);
        QCOMPARE(locksIn(lab.recoveryFolder()).size(), 1);  // the dead instance's, now stale
        const auto left = RecoveryStore::describe(QDir(lab.recoveryFolder()).filePath(files[0]));
        QVERIFY(left.has_value());
        QVERIFY2(left->step < finalStep, "killed after the run's end: not mid-run");
        qInfo("kill %d: the recovery file holds step %lld", kill + 1,
              static_cast<long long>(left->step));
        restoredFrom = left->step;
        lab.start(QStringList{QStringLiteral("--restore-recovery")} + length());
    }
    const auto done =
        lab.waitRecovery([&](const RecoveryFile& f) { return f.step == finalStep; }, 600000);
    QVERIFY2(done.has_value(), qPrintable(lab.output()));
    lab.signal(SIGTERM);
    QCOMPARE(lab.finish(), 0);
    const QString difference = compareTensors(tensorsOf(done->path), expected);
    QVERIFY2(difference.isEmpty(), qPrintable(difference));
    QVERIFY(expected.tensors.size() > 4);  // weights, biases and the optimizer's moments
}

// A Reset moves the run it replaces to the slot's replaced-run file (its latest step written
// first), and the recovery checkpoint follows the run after it: a crash then offers the run
// that was training and, beside it, the one before the Reset; restoring that one swaps the
// two files, so neither is lost. Right after a Reset (nothing of the new run written yet) the
// replaced run is offered alone.
void TestGuiRecovery::aResetKeepsTheReplacedRunRecoverable() {
    QString path;
    QString replaced;
    {
        auto w = makeAutosavingWindow(3600);
        w->loadExperiment(smallMoons(10'000));
        QVERIFY(ensemble::test::waitFresh(*w));
        QSignalSpy written(w->controller(), &ensemble::ui::EngineController::recoveryWritten);
        w->controller()->trainTo(30);
        QVERIFY(written.wait(30000));
        path = written.last().at(0).toString();
        replaced = RecoveryStore::replacedPathOf(path);
        QVERIFY(replaced.endsWith(QStringLiteral("-replaced.safetensors")));
        QVERIFY(!QFile::exists(replaced));

        w->resetAction()->trigger();
        QVERIFY(ensemble::test::waitFresh(*w));
        QVERIFY(!QFile::exists(path));  // nothing of the new run yet: no file stands for it
        QCOMPARE(RecoveryStore::describe(replaced)->step, int64_t{30});
        w->controller()->trainTo(12);
        QVERIFY(written.wait(30000));
        QCOMPARE(written.last().at(1).toLongLong(), 12);
        QCOMPARE(RecoveryStore::describe(path)->step, int64_t{12});
        QCOMPARE(RecoveryStore::describe(replaced)->step, int64_t{30});
        QSignalSpy flushed(w.get(), &MainWindow::recoveryFlushed);
        w->flushRecovery();  // as a crash leaves them, lock aside
        QVERIFY(flushed.wait(20000));
    }
    auto w = makeAutosavingWindow(3600);
    QVERIFY(w->offerRecovery());
    QVERIFY2(w->recoveryOffer().endsWith(QStringLiteral("step 12?")),
             qPrintable(w->recoveryOffer()));
    auto* banner = w->findChild<QFrame*>(QStringLiteral("RecoveryBanner"));
    QVERIFY2(banner->findChild<QLabel*>()->text().contains(
                 QStringLiteral("The run a Reset replaced before it is kept too")),
             qPrintable(banner->findChild<QLabel*>()->text()));
    auto* other = banner->findChild<QPushButton*>(QStringLiteral("RestoreReplacedRecoveryButton"));
    QVERIFY(other != nullptr && other->isVisible());
    QSignalSpy restored(w.get(), &MainWindow::recoveryRestored);
    QTest::mouseClick(other, Qt::LeftButton);
    QVERIFY(restored.wait(30000));
    QVERIFY(restored.at(0).at(0).toBool());
    QVERIFY(waitSnapshot(
        *w, [](const auto& s) { return s.step == 30 && !s.evaluating; }, kProgressWaitMs));
    // Swapped: the checkpoint holds the run restored, the other run stays recoverable.
    QCOMPARE(w->recoveryPath(), path);
    QCOMPARE(RecoveryStore::describe(path)->step, int64_t{30});
    QCOMPARE(RecoveryStore::describe(replaced)->step, int64_t{12});

    // A Reset and a crash before the new run is written: the replaced run alone is offered.
    w->resetAction()->trigger();
    QVERIFY(ensemble::test::waitFresh(*w));
    QVERIFY(!QFile::exists(path));
    QCOMPARE(RecoveryStore::describe(replaced)->step, int64_t{30});
    QSignalSpy flushed(w.get(), &MainWindow::recoveryFlushed);
    w->flushRecovery();
    QVERIFY(flushed.wait(20000));
    w.reset();
    auto again = makeAutosavingWindow(0);
    QVERIFY(again->offerRecovery());
    QVERIFY(again->recoveryOffer().endsWith(QStringLiteral("step 30?")));
    QVERIFY(again->findChild<QFrame*>(QStringLiteral("RecoveryBanner"))
                ->findChild<QLabel*>()
                ->text()
                .contains(QStringLiteral("A Reset replaced it")));
    again->discardRecovery();
    QVERIFY(!QFile::exists(replaced));
}

QTEST_MAIN(TestGuiRecovery)
#include "tst_gui_recovery.moc"
