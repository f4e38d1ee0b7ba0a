// Faults, tried rather than claimed: ensemble-cli killed (SIGKILL) while exporting
// over a file, a full disk (ENOSPC, injected by an LD_PRELOAD shim over write(2), and for real
// on a small tmpfs of the test's own where mounting one is permitted),
// Ctrl-C (SIGINT) during training and during the writes after it, and the output-path rule for
// every kind of path (file, new name, symlink, own descriptor, FIFO, character device,
// directory, socket, block device). Everything happens in temporary folders; device nodes are
// private ones made with mknod (skipped where that is not permitted), never the real /dev.
#include <QtTest/QtTest>

#include <fcntl.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <thread>

#include "core/errors.h"
#include "io/model_io.h"
#include "support/test_support.h"
#include "sys/atomic_file.h"

using ensemble::test::cliPath;
using ensemble::test::describe;
using ensemble::test::fileBytes;
using ensemble::test::finish;
using ensemble::test::Run;
using ensemble::test::runCli;
using ensemble::test::writeBytes;

namespace {

// Fault settings for the shim (tests/support/fault_write_shim.cpp); empty: no shim.
struct Faults {
    long long enospcAfter = -1;
    long long writeDelayUs = -1;
};

QProcessEnvironment environmentWith(const Faults& faults) {
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    if (faults.enospcAfter < 0 && faults.writeDelayUs < 0) {
        return env;
    }
    env.insert(QStringLiteral("LD_PRELOAD"), QStringLiteral(ENSEMBLE_FAULT_SHIM));
    // Under ASan the runtime insists on being the first library; the shim only wraps write().
    const QString asan = env.value(QStringLiteral("ASAN_OPTIONS"));
    env.insert(QStringLiteral("ASAN_OPTIONS"),
               (asan.isEmpty() ? QString() : asan + QLatin1Char(':')) +
                   QStringLiteral("verify_asan_link_order=0"));
    if (faults.enospcAfter >= 0) {
        env.insert(QStringLiteral("ENSEMBLE_FAULT_ENOSPC_AFTER"),
                   QString::number(faults.enospcAfter));
    }
    if (faults.writeDelayUs >= 0) {
        env.insert(QStringLiteral("ENSEMBLE_FAULT_WRITE_DELAY_US"),
                   QString::number(faults.writeDelayUs));
    }
    return env;
}

void start(QProcess& p, const QStringList& args, const Faults& faults = {}) {
    p.setProcessEnvironment(environmentWith(faults));
    p.start(cliPath(), args);
    QVERIFY2(p.waitForStarted(), qPrintable(p.errorString()));
}

// Hidden temporary files of writeFileAtomic (".<name>.tmp-<pid>-<random>") in `dir`.
QStringList temporariesIn(const QString& dir) {
    return QDir(dir).entryList({QStringLiteral(".*.tmp-*")},
                               QDir::Files | QDir::Hidden | QDir::System);
}

// The temporary files in `dir` that are not in `known`.
QStringList newTemporaries(const QString& dir, const QStringList& known) {
    QStringList fresh;
    for (const QString& name : temporariesIn(dir)) {
        if (!known.contains(name)) {
            fresh << name;
        }
    }
    return fresh;
}

// Waits until `dir` holds a temporary file not in `known` (a write is in flight) or `p` ends.
bool waitForTemporary(QProcess& p, const QString& dir, const QStringList& known = {},
                      int timeoutMs = 60000) {
    QElapsedTimer clock;
    clock.start();
    while (clock.elapsed() < timeoutMs) {
        if (!newTemporaries(dir, known).isEmpty()) {
            return true;
        }
        if (p.state() == QProcess::NotRunning || p.waitForFinished(1)) {
            return false;
        }
    }
    return false;
}

// Waits until the process's stderr contains `text`; returns what it read.
QString waitForStderr(QProcess& p, const QString& text, int timeoutMs = 60000) {
    QString seen;
    QElapsedTimer clock;
    clock.start();
    p.setReadChannel(QProcess::StandardError);
    while (!seen.contains(text) && clock.elapsed() < timeoutMs &&
           p.state() != QProcess::NotRunning) {
        p.waitForReadyRead(50);
        seen += QString::fromUtf8(p.readAllStandardError());
    }
    return seen;
}

void sendSignal(QProcess& p, int signal) {
    QVERIFY(p.processId() > 0);
    QCOMPARE(::kill(static_cast<pid_t>(p.processId()), signal), 0);
}

// A model whose export is several megabytes written in a few large writes, so that a slow
// write (the shim's delay) leaves time to act while the temporary file is being filled.
QStringList bigExport(const QString& path, int seed) {
    return {QStringLiteral("train"),
            QStringLiteral("--config"),
            QStringLiteral("spirals"),
            QStringLiteral("--set"),
            QStringLiteral("training.steps=0"),
            QStringLiteral("--set"),
            QStringLiteral("dataset.n=200"),
            QStringLiteral("--set"),
            QStringLiteral("ensemble.members=6"),
            QStringLiteral("--set"),
            QStringLiteral("model.hidden=[256,256,256]"),
            QStringLiteral("--set"),
            QStringLiteral("ensemble.seed=%1").arg(seed),
            QStringLiteral("--set"),
            QStringLiteral("backend.kind=cpu"),
            QStringLiteral("--quiet"),
            QStringLiteral("--export"),
            path};
}

// Training that runs until it is stopped.
QStringList longTraining() {
    return {QStringLiteral("train"),
            QStringLiteral("--config"),
            QStringLiteral("spirals"),
            QStringLiteral("--set"),
            QStringLiteral("dataset.n=200"),
            QStringLiteral("--set"),
            QStringLiteral("ensemble.members=4"),
            QStringLiteral("--set"),
            QStringLiteral("training.steps=100000000"),
            QStringLiteral("--set"),
            QStringLiteral("backend.kind=cpu")};
}

bool isCharDevice(const QString& path) {
    struct stat st {};
    return ::lstat(QFile::encodeName(path).constData(), &st) == 0 && S_ISCHR(st.st_mode);
}

// mknod in the temporary folder; false where the process may not (then the test skips).
bool makeNode(const QString& path, mode_t type, unsigned major, unsigned minor) {
    return ::mknod(QFile::encodeName(path).constData(), type | 0600, makedev(major, minor)) == 0;
}

// The message of the RuntimeError f() throws; empty when it throws none.
std::string runtimeErrorOf(const std::function<void()>& f) {
    try {
        f();
    } catch (const ensemble::RuntimeError& e) {
        return e.what();
    }
    return {};
}

}  // namespace

class TestFaults : public QObject {
    Q_OBJECT

  private Q_SLOTS:
    void initTestCase();
    // Kills and full disks.
    void sigkillDuringExportLeavesTheOldFileOrTheNew();
    void staleTemporariesOfDeadWritersAreRemoved();
    void fullDiskFailsWithExitFourAndLeavesTheOldFile();
    void fullTmpfsFailsWithExitFourAndLeavesTheOldFile();
    // Interrupts.
    void sigintStopsTrainingWritesTheExportAndExits130();
    void secondSigintWhileWritingLeavesNoPartialFile();
    void sigtermExits143();
    void sigintOutsideTrainingLeavesNoTemporary();
    // The output-path rule.
    void symlinkIsFollowedAndStays();
    void ownDescriptorIsWrittenThrough();
    void cliOutputToALinkToStdoutAppends();
    void fifoIsWrittenDirectly();
    void characterDeviceIsWrittenInPlace();
    void directorySocketAndBlockDeviceAreRefused();

  private:
    QTemporaryDir m_dir;
};

void TestFaults::initTestCase() {
    QVERIFY2(QFileInfo(cliPath()).isExecutable(), qPrintable(cliPath()));
    QVERIFY2(QFileInfo(QStringLiteral(ENSEMBLE_FAULT_SHIM)).exists(), ENSEMBLE_FAULT_SHIM);
    QVERIFY(m_dir.isValid());
}

void TestFaults::sigkillDuringExportLeavesTheOldFileOrTheNew() {
    QTemporaryDir dir;
    const QString target = dir.filePath(QStringLiteral("w.safetensors"));
    const QString reference = m_dir.filePath(QStringLiteral("new.safetensors"));
    // The old file and, separately, what a complete export of the new run writes.
    Run r = runCli(bigExport(target, 1));
    QVERIFY2(r.code == 0, qPrintable(describe(r)));
    const QByteArray oldBytes = fileBytes(target);
    r = runCli(bigExport(reference, 2));
    QVERIFY2(r.code == 0, qPrintable(describe(r)));
    const QByteArray newBytes = fileBytes(reference);
    QVERIFY(oldBytes.size() > 2 << 20 && oldBytes != newBytes);

    // Each write of the export takes 40 ms more, so kills land before, during and after the
    // writes: as the temporary file appears, while it fills, at set times from the start, and
    // right after the rename.
    const Faults slow{-1, 40000};
    int midWrite = 0;
    int sawNew = 0;
    // The last round kills mid-write, so that a dead writer's temporary is left for the end.
    for (int i = 0; i < 9; ++i) {
        QVERIFY(writeBytes(target, oldBytes));
        // Temporaries the earlier kills left; each round watches only its own.
        const QStringList before = temporariesIn(dir.path());
        QProcess p;
        start(p, bigExport(target, 2), slow);
        switch (i % 4) {
            case 0:  // as the temporary file appears
                QVERIFY2(waitForTemporary(p, dir.path(), before),
                         "the export never started writing");
                break;
            // These two sleep on purpose, to spread the kills over the write: the checks below
            // hold wherever a kill lands, and cases 0 and 3 make sure of both outcomes.
            case 1:  // while it fills
                QVERIFY2(waitForTemporary(p, dir.path(), before),
                         "the export never started writing");
                QThread::msleep(static_cast<unsigned long>(i * 25));
                break;
            case 2:  // at set times from the start
                QThread::msleep(static_cast<unsigned long>(i * 100));
                break;
            default:
                QVERIFY2(waitForTemporary(p, dir.path(), before),
                         "the export never started writing");
                while (!newTemporaries(dir.path(), before).isEmpty() && !p.waitForFinished(1)) {
                }
                break;
        }
        if (p.state() != QProcess::NotRunning) {
            sendSignal(p, SIGKILL);
        }
        QVERIFY(p.waitForFinished(30000));
        const QByteArray now = fileBytes(target);
        QVERIFY2(now == oldBytes || now == newBytes,
                 qPrintable(
                     QStringLiteral("kill %1 left %2 bytes, neither file").arg(i).arg(now.size())));
        midWrite += newTemporaries(dir.path(), before).isEmpty() ? 0 : 1;
        sawNew += now == newBytes ? 1 : 0;
    }
    QVERIFY(!temporariesIn(dir.path()).isEmpty());  // what the next run must not trip on
    // Otherwise the loop did not test what it claims.
    QVERIFY2(midWrite >= 2, qPrintable(QString::number(midWrite)));
    QVERIFY2(sawNew >= 2, qPrintable(QString::number(sawNew)));

    // A later run is not tripped by what the killed ones left, and removes it.
    r = runCli(bigExport(target, 2));
    QVERIFY2(r.code == 0, qPrintable(describe(r)));
    QVERIFY(fileBytes(target) == newBytes);
    QCOMPARE(temporariesIn(dir.path()), QStringList());
    qInfo("%d of 9 kills landed while the temporary file was being written; %d left the new file",
          midWrite, sawNew);
}

void TestFaults::staleTemporariesOfDeadWritersAreRemoved() {
    QTemporaryDir dir;
    // A pid that certainly does not run: a child that has exited and been reaped.
    const pid_t child = ::fork();
    if (child == 0) {
        ::_exit(0);
    }
    QVERIFY(child > 0);
    int status = 0;
    QCOMPARE(::waitpid(child, &status, 0), child);
    const QString dead = dir.filePath(QStringLiteral(".out.csv.tmp-%1-abcdefghij").arg(child));
    const QString live =
        dir.filePath(QStringLiteral(".out.csv.tmp-%1-abcdefghij").arg(::getppid()));
    const QString other = dir.filePath(QStringLiteral(".other.csv.tmp-%1-abcdefghij").arg(child));
    for (const QString& path : {dead, live, other}) {
        QVERIFY(writeBytes(path, "partial"));
    }
    ensemble::writeFileAtomic(dir.filePath(QStringLiteral("out.csv")).toStdString(), "x,y\n");
    QVERIFY(!QFileInfo::exists(dead));
    QVERIFY(QFileInfo::exists(live));   // its writer may still be at work
    QVERIFY(QFileInfo::exists(other));  // another name's, left to that name's next write
    QCOMPARE(fileBytes(dir.filePath(QStringLiteral("out.csv"))), QByteArray("x,y\n"));
}

void TestFaults::fullDiskFailsWithExitFourAndLeavesTheOldFile() {
    QTemporaryDir dir;
    const QString target = dir.filePath(QStringLiteral("w.safetensors"));
    Run r = runCli(bigExport(target, 1));
    QVERIFY2(r.code == 0, qPrintable(describe(r)));
    const QByteArray oldBytes = fileBytes(target);
    // The disk fills at once, within the header, and deep in the tensors.
    for (const long long room : {0LL, 100LL, 3000000LL}) {
        r = runCli(bigExport(target, 2), environmentWith(Faults{room, -1}));
        QVERIFY2(r.code == 4, qPrintable(describe(r)));
        QVERIFY2(
            r.err.contains(target) && r.err.contains(QStringLiteral("No space left on device")),
            qPrintable(r.err));
        QVERIFY2(r.err.contains(QStringLiteral("left as it was")), qPrintable(r.err));
        QVERIFY(fileBytes(target) == oldBytes);
        QCOMPARE(QDir(dir.path()).entryList(QDir::AllEntries | QDir::Hidden | QDir::NoDotAndDotDot),
                 QStringList{QStringLiteral("w.safetensors")});
    }
    // A new name: nothing appears at all.
    const QString fresh = dir.filePath(QStringLiteral("fresh.csv"));
    r = runCli({QStringLiteral("dataset"), QStringLiteral("--config"), QStringLiteral("moons"),
                QStringLiteral("--out"), fresh},
               environmentWith(Faults{10, -1}));
    QVERIFY2(r.code == 4 && r.err.contains(QStringLiteral("No space left on device")),
             qPrintable(describe(r)));
    QVERIFY(!QFileInfo::exists(fresh));
    QCOMPARE(temporariesIn(dir.path()), QStringList());
}

void TestFaults::fullTmpfsFailsWithExitFourAndLeavesTheOldFile() {
    // The same on a real full file system: a small tmpfs of our own, where mounting one is
    // permitted (root with CAP_SYS_ADMIN; a container without it skips). The old export fits,
    // the temporary of the next one does not.
    QTemporaryDir dir;
    const QString mountPoint = dir.filePath(QStringLiteral("small"));
    QVERIFY(QDir().mkpath(mountPoint));
    const QString target = mountPoint + QStringLiteral("/w.safetensors");
    Run r = runCli(bigExport(dir.filePath(QStringLiteral("probe.safetensors")), 1));
    QVERIFY2(r.code == 0, qPrintable(describe(r)));
    const qint64 exportBytes = QFileInfo(dir.filePath(QStringLiteral("probe.safetensors"))).size();
    const QByteArray options = "size=" + QByteArray::number(exportBytes + exportBytes / 2);
    if (::mount("tmpfs", mountPoint.toLocal8Bit().constData(), "tmpfs", 0, options.constData()) !=
        0) {
        QSKIP(qPrintable(QStringLiteral("mounting a tmpfs is not permitted here: ") +
                         QString::fromLocal8Bit(std::strerror(errno))));
    }
    struct Unmount {
        QByteArray path;
        ~Unmount() { ::umount2(path.constData(), MNT_DETACH); }
    } unmount{mountPoint.toLocal8Bit()};
    r = runCli(bigExport(target, 1));
    QVERIFY2(r.code == 0, qPrintable(describe(r)));
    const QByteArray oldBytes = fileBytes(target);
    r = runCli(bigExport(target, 2));
    QVERIFY2(r.code == 4, qPrintable(describe(r)));
    QVERIFY2(r.err.contains(target) && r.err.contains(QStringLiteral("No space left on device")),
             qPrintable(r.err));
    QVERIFY(fileBytes(target) == oldBytes);
    QCOMPARE(QDir(mountPoint).entryList(QDir::AllEntries | QDir::Hidden | QDir::NoDotAndDotDot),
             QStringList{QStringLiteral("w.safetensors")});
}

void TestFaults::sigintStopsTrainingWritesTheExportAndExits130() {
    QTemporaryDir dir;
    const QString weights = dir.filePath(QStringLiteral("w.safetensors"));
    const QString metrics = dir.filePath(QStringLiteral("m.json"));
    QVERIFY(writeBytes(weights, "an old file"));
    QProcess p;
    start(p, longTraining() + QStringList{QStringLiteral("--export"), weights,
                                          QStringLiteral("--metrics"), metrics});
    QString err = waitForStderr(p, QStringLiteral("training 4 members"));
    QVERIFY2(err.contains(QStringLiteral("training 4 members")), qPrintable(err));
    // Some steps: the first progress line (a log gets one every few seconds) has come.
    err += waitForStderr(p, QStringLiteral(" member-steps/s"));
    QVERIFY2(err.contains(QStringLiteral(" member-steps/s")), qPrintable(err));
    sendSignal(p, SIGINT);
    const Run r = finish(p);
    err += r.err;
    QVERIFY2(r.code == 130, qPrintable(describe(r) + err));
    QVERIFY2(err.contains(QStringLiteral("interrupted by SIGINT at step")), qPrintable(err));
    // One line for the interrupt, one for the step it stopped at; no summary table.
    QVERIFY2(!r.out.contains(QStringLiteral("ensemble")), qPrintable(r.out));

    const ensemble::LoadedEnsemble e = ensemble::importEnsemble(weights.toStdString());
    QVERIFY(e.step > 0 && e.step < 100000000);
    QVERIFY2(e.metadata.contains("interrupted_at_step"), e.metadata.dump().c_str());
    QCOMPARE(e.metadata["interrupted_at_step"].dump(), std::to_string(e.step));
    QVERIFY2(err.contains(QStringLiteral("at step %1 of 100000000").arg(e.step)), qPrintable(err));
    const QJsonDocument report = QJsonDocument::fromJson(fileBytes(metrics));
    QVERIFY(report.isObject());
    QCOMPARE(report[QStringLiteral("step")].toInteger(), e.step);
    QCOMPARE(temporariesIn(dir.path()), QStringList());
}

void TestFaults::secondSigintWhileWritingLeavesNoPartialFile() {
    QTemporaryDir dir;
    const QString weights = dir.filePath(QStringLiteral("w.safetensors"));
    QStringList args = longTraining();
    args << QStringLiteral("--set") << QStringLiteral("model.hidden=[256,256,256]")
         << QStringLiteral("--export") << weights;
    QProcess p;
    start(p, args, Faults{-1, 100000});  // every write of the export takes 100 ms
    // Once it says it trains, a signal stops it after a step (at whichever step).
    QString err = waitForStderr(p, QStringLiteral("training 4 members"));
    QVERIFY2(err.contains(QStringLiteral("training 4 members")), qPrintable(err));
    sendSignal(p, SIGINT);
    QVERIFY2(waitForTemporary(p, dir.path()), "the export never started");
    // Ctrl-C again, twice, while the temporary file is being filled; the third once the second
    // was handled (two pending SIGINTs would arrive as one).
    sendSignal(p, SIGINT);
    err += waitForStderr(p, QStringLiteral("already stopping"));
    QVERIFY2(err.contains(QStringLiteral("already stopping")), qPrintable(err));
    sendSignal(p, SIGINT);
    const Run r = finish(p);
    err += r.err;
    QVERIFY2(r.code == 130, qPrintable(describe(r) + err));
    QVERIFY2(err.contains(QStringLiteral("already stopping")), qPrintable(err));
    const ensemble::LoadedEnsemble e = ensemble::importEnsemble(weights.toStdString());
    QCOMPARE(e.metadata["interrupted_at_step"].dump(), std::to_string(e.step));
    QCOMPARE(temporariesIn(dir.path()), QStringList());
}

void TestFaults::sigtermExits143() {
    QProcess p;
    start(p, longTraining());
    waitForStderr(p, QStringLiteral("training 4 members"));
    sendSignal(p, SIGTERM);
    const Run r = finish(p);
    QVERIFY2(r.code == 143, qPrintable(describe(r)));
    QVERIFY2(r.err.contains(QStringLiteral("interrupted by SIGTERM at step")), qPrintable(r.err));
}

void TestFaults::sigintOutsideTrainingLeavesNoTemporary() {
    // `dataset` has no state to save: a signal ends it at once, in the middle of its write.
    QTemporaryDir dir;
    const QString out = dir.filePath(QStringLiteral("d.csv"));
    QVERIFY(writeBytes(out, "old\n"));
    QProcess p;
    start(
        p,
        {QStringLiteral("dataset"), QStringLiteral("--config"), QStringLiteral("spirals"),
         QStringLiteral("--set"), QStringLiteral("dataset.n=200000"), QStringLiteral("--out"), out},
        Faults{-1, 50000});
    QVERIFY2(waitForTemporary(p, dir.path()), "the CSV was never being written");
    sendSignal(p, SIGINT);
    const Run r = finish(p);
    QVERIFY2(r.code == 130, qPrintable(describe(r)));
    QVERIFY2(r.err.contains(QStringLiteral("ensemble-cli dataset: interrupted by SIGINT")),
             qPrintable(r.err));
    QCOMPARE(fileBytes(out), QByteArray("old\n"));
    QCOMPARE(temporariesIn(dir.path()), QStringList());
}

void TestFaults::symlinkIsFollowedAndStays() {
    QTemporaryDir dir;
    QDir d(dir.path());
    QVERIFY(d.mkdir(QStringLiteral("real")));
    QVERIFY(writeBytes(dir.filePath(QStringLiteral("real/target.csv")), "old\n"));
    QFile::setPermissions(dir.filePath(QStringLiteral("real/target.csv")),
                          QFile::ReadOwner | QFile::WriteOwner);
    // A relative link, a chain through an absolute one, and a dangling link.
    QVERIFY(QFile::link(QStringLiteral("real/target.csv"), dir.filePath(QStringLiteral("rel"))));
    QVERIFY(QFile::link(dir.filePath(QStringLiteral("rel")), dir.filePath(QStringLiteral("abs"))));
    QVERIFY(QFile::link(QStringLiteral("real/new.csv"), dir.filePath(QStringLiteral("dangling"))));

    ensemble::writeFileAtomic(dir.filePath(QStringLiteral("rel")).toStdString(), "one\n");
    QCOMPARE(fileBytes(dir.filePath(QStringLiteral("real/target.csv"))), QByteArray("one\n"));
    ensemble::writeFileAtomic(dir.filePath(QStringLiteral("abs")).toStdString(), "two\n");
    QCOMPARE(fileBytes(dir.filePath(QStringLiteral("real/target.csv"))), QByteArray("two\n"));
    ensemble::writeFileAtomic(dir.filePath(QStringLiteral("dangling")).toStdString(), "three\n");
    QCOMPARE(fileBytes(dir.filePath(QStringLiteral("real/new.csv"))), QByteArray("three\n"));
    for (const char* link : {"rel", "abs", "dangling"}) {
        QVERIFY2(QFileInfo(dir.filePath(QLatin1String(link))).isSymLink(), link);
    }
    // The target kept its private permissions; no temporary file anywhere.
    struct stat st {};
    QCOMPARE(
        ::stat(QFile::encodeName(dir.filePath(QStringLiteral("real/target.csv"))).constData(), &st),
        0);
    QCOMPARE(st.st_mode & 0777, 0600u);
    QCOMPARE(temporariesIn(dir.path()) + temporariesIn(dir.filePath(QStringLiteral("real"))),
             QStringList());

    // A loop of links is an error, not a hang.
    QVERIFY(
        QFile::link(dir.filePath(QStringLiteral("loop2")), dir.filePath(QStringLiteral("loop1"))));
    QVERIFY(
        QFile::link(dir.filePath(QStringLiteral("loop1")), dir.filePath(QStringLiteral("loop2"))));
    const std::string msg = runtimeErrorOf([&] {
        ensemble::writeFileAtomic(dir.filePath(QStringLiteral("loop1")).toStdString(), "x");
    });
    QVERIFY2(msg.find("symbolic links") != std::string::npos, msg.c_str());
}

void TestFaults::ownDescriptorIsWrittenThrough() {
    QTemporaryDir dir;
    const QString log = dir.filePath(QStringLiteral("log.csv"));
    QVERIFY(writeBytes(log, "old\n"));
    const int fd = ::open(QFile::encodeName(log).constData(), O_WRONLY | O_APPEND | O_CLOEXEC);
    QVERIFY(fd > 2);
    const QString n = QString::number(fd);
    const QString link = dir.filePath(QStringLiteral("out"));
    QVERIFY(QFile::link(QStringLiteral("/proc/self/fd/") + n, link));
    // Through a private link, /proc/self/fd/N and /dev/fd/N: each appends through the
    // descriptor (opened O_APPEND), the link stays, the file is never replaced.
    struct stat before {};
    QCOMPARE(::stat(QFile::encodeName(log).constData(), &before), 0);
    ensemble::writeFileAtomic(link.toStdString(), "a\n");
    ensemble::writeFileAtomic("/proc/self/fd/" + n.toStdString(), "b\n");
    ensemble::writeFileAtomic("/dev/fd/" + n.toStdString(), "c\n");
    ::close(fd);
    QCOMPARE(fileBytes(log), QByteArray("old\na\nb\nc\n"));
    QVERIFY(QFileInfo(link).isSymLink());
    struct stat after {};
    QCOMPARE(::stat(QFile::encodeName(log).constData(), &after), 0);
    QCOMPARE(after.st_ino, before.st_ino);
    // A descriptor that is not open fails and says so.
    const std::string msg =
        runtimeErrorOf([&] { ensemble::writeFileAtomic(link.toStdString(), "x"); });
    QVERIFY2(msg.find("Bad file descriptor") != std::string::npos, msg.c_str());
}

void TestFaults::cliOutputToALinkToStdoutAppends() {
    QTemporaryDir dir;
    const QString weights = dir.filePath(QStringLiteral("w.safetensors"));
    const QString input = dir.filePath(QStringLiteral("x.csv"));
    Run r = runCli({QStringLiteral("train"), QStringLiteral("--config"), QStringLiteral("moons"),
                    QStringLiteral("--set"), QStringLiteral("training.steps=5"),
                    QStringLiteral("--quiet"), QStringLiteral("--export"), weights});
    QVERIFY2(r.code == 0, qPrintable(describe(r)));
    QVERIFY(writeBytes(input, "x0,x1\n0.5,0.25\n-1,1\n"));
    const QString link = dir.filePath(QStringLiteral("stdout"));
    QVERIFY(QFile::link(QStringLiteral("/proc/self/fd/1"), link));
    const QStringList predict = {QStringLiteral("predict"),
                                 QStringLiteral("--weights"),
                                 weights,
                                 QStringLiteral("--input"),
                                 input,
                                 QStringLiteral("--output"),
                                 link};
    // Into a pipe (QProcess's stdout).
    r = runCli(predict);
    QVERIFY2(r.code == 0 && r.out.startsWith(QStringLiteral("ens_p0,ens_p1")),
             qPrintable(describe(r)));
    QCOMPARE(r.out.count(QLatin1Char('\n')), 3);
    // `--output /dev/stdout >> log.csv`: appended to what the log held.
    const QString log = dir.filePath(QStringLiteral("log.csv"));
    QVERIFY(writeBytes(log, "earlier line\n"));
    QProcess p;
    p.setStandardOutputFile(log, QIODevice::Append);
    start(p, predict);
    r = finish(p);
    QVERIFY2(r.code == 0, qPrintable(describe(r)));
    const QByteArray logged = fileBytes(log);
    QVERIFY2(logged.startsWith("earlier line\nens_p0,ens_p1"), logged.constData());
    QCOMPARE(logged.count('\n'), 4);
    QVERIFY(QFileInfo(link).isSymLink());
}

void TestFaults::fifoIsWrittenDirectly() {
    QTemporaryDir dir;
    const QString fifo = dir.filePath(QStringLiteral("pipe"));
    QCOMPARE(::mkfifo(QFile::encodeName(fifo).constData(), 0600), 0);
    QByteArray received;
    std::thread reader([&] {
        QFile f(fifo);
        if (f.open(QIODevice::ReadOnly)) {
            received = f.readAll();
        }
    });
    const std::string big(1 << 20, 'f');  // more than a pipe holds: the reader must drain it
    ensemble::writeFileAtomic(fifo.toStdString(), big);
    reader.join();
    QCOMPARE(received.size(), static_cast<qsizetype>(big.size()));
    struct stat st {};
    QCOMPARE(::lstat(QFile::encodeName(fifo).constData(), &st), 0);
    QVERIFY(S_ISFIFO(st.st_mode));
    QCOMPARE(temporariesIn(dir.path()), QStringList());
}

void TestFaults::characterDeviceIsWrittenInPlace() {
    QTemporaryDir dir;
    // Private nodes equal to /dev/null (1,3) and /dev/full (1,7).
    const QString null = dir.filePath(QStringLiteral("null"));
    const QString full = dir.filePath(QStringLiteral("full"));
    if (!makeNode(null, S_IFCHR, 1, 3) || !makeNode(full, S_IFCHR, 1, 7)) {
        QSKIP("mknod is not permitted here");
    }
    const QString weights = dir.filePath(QStringLiteral("w.safetensors"));
    Run r = runCli({QStringLiteral("train"), QStringLiteral("--config"), QStringLiteral("moons"),
                    QStringLiteral("--set"), QStringLiteral("training.steps=5"),
                    QStringLiteral("--quiet"), QStringLiteral("--export"), null});
    QVERIFY2(r.code == 0, qPrintable(describe(r)));
    QVERIFY(isCharDevice(null));
    r = runCli({QStringLiteral("train"), QStringLiteral("--config"), QStringLiteral("moons"),
                QStringLiteral("--set"), QStringLiteral("training.steps=5"),
                QStringLiteral("--quiet"), QStringLiteral("--export"), full});
    QVERIFY2(r.code == 4, qPrintable(describe(r)));
    QVERIFY2(r.err.contains(full) && r.err.contains(QStringLiteral("No space left on device")),
             qPrintable(r.err));
    QVERIFY(isCharDevice(full));
    QCOMPARE(QDir(dir.path())
                 .entryList(QDir::AllEntries | QDir::Hidden | QDir::System | QDir::NoDotAndDotDot),
             (QStringList{QStringLiteral("full"), QStringLiteral("null")}));
}

void TestFaults::directorySocketAndBlockDeviceAreRefused() {
    QTemporaryDir dir;
    QVERIFY(QDir(dir.path()).mkdir(QStringLiteral("folder")));
    const QString socketPath = dir.filePath(QStringLiteral("sock"));
    const int s = ::socket(AF_UNIX, SOCK_STREAM, 0);
    QVERIFY(s >= 0);
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    const QByteArray encoded = QFile::encodeName(socketPath);
    QVERIFY(static_cast<size_t>(encoded.size()) < sizeof address.sun_path);
    std::memcpy(address.sun_path, encoded.constData(), static_cast<size_t>(encoded.size()));
    QCOMPARE(::bind(s, reinterpret_cast<const sockaddr*>(&address), sizeof address), 0);
    QList<QPair<QString, QString>> cases = {
        {dir.filePath(QStringLiteral("folder")), QStringLiteral("it is a directory")},
        {socketPath, QStringLiteral("it is a socket")}};
    const QString block = dir.filePath(QStringLiteral("block"));
    if (makeNode(block, S_IFBLK, 7, 200)) {
        cases.append({block, QStringLiteral("it is a block device")});
    } else {
        qInfo("mknod is not permitted here: the block-device case is not tried");
    }
    // Through a link too: the rule applies to what it leads to.
    QVERIFY(QFile::link(QStringLiteral("folder"), dir.filePath(QStringLiteral("to-folder"))));
    cases.append({dir.filePath(QStringLiteral("to-folder")), QStringLiteral("it is a directory")});
    const QStringList before =
        QDir(dir.path())
            .entryList(QDir::AllEntries | QDir::Hidden | QDir::System | QDir::NoDotAndDotDot);
    for (const auto& [path, why] : cases) {
        const Run r = runCli({QStringLiteral("dataset"), QStringLiteral("--config"),
                              QStringLiteral("moons"), QStringLiteral("--out"), path});
        QVERIFY2(r.code == 4, qPrintable(describe(r)));
        QVERIFY2(r.err.contains(path) && r.err.contains(QStringLiteral("cannot write: ") + why),
                 qPrintable(r.err));
    }
    ::close(s);
    QCOMPARE(QDir(dir.path())
                 .entryList(QDir::AllEntries | QDir::Hidden | QDir::System | QDir::NoDotAndDotDot),
             before);
    QVERIFY(QDir(dir.filePath(QStringLiteral("folder"))).isEmpty());
}

QTEST_GUILESS_MAIN(TestFaults)
#include "tst_faults.moc"
