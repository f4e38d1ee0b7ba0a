// ensemble-cli under mpirun (label `mpi`): the ensemble axis of backend.mesh against one
// process, bit for bit (every exported tensor and the metrics file); uneven shares; the mesh
// checked at launch; a rank that cannot start ends the job with its message, never a hang.
// Runs on one machine over loopback/shared memory only, as root too (the OpenMPI settings of
// shared/TOOLCHAIN.md are set here). Exits 77 (skipped) with the reason when mpirun is missing
// or this build has no MPI.
#include <QtTest/QtTest>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

#include "io/safetensors.h"
#include "support/test_support.h"

using ensemble::test::cliPath;
using ensemble::test::describe;
using ensemble::test::fileBytes;
using ensemble::test::Run;
using ensemble::test::runCli;
using ensemble::test::runProgram;

namespace {

// The environment of every process this suite starts, mpirun and the one-process CLI runs
// alike. A hang is a failure, not a stuck CI job: runCli and runProgram give each a deadline.
QProcessEnvironment mpiEnvironment() {
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    // Root in a container, and loopback / shared memory only (no network interface is used).
    env.insert(QStringLiteral("OMPI_ALLOW_RUN_AS_ROOT"), QStringLiteral("1"));
    env.insert(QStringLiteral("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM"), QStringLiteral("1"));
    env.insert(QStringLiteral("OMPI_MCA_pml"), QStringLiteral("ob1"));
    env.insert(QStringLiteral("OMPI_MCA_btl"), QStringLiteral("self,vader"));
    env.insert(QStringLiteral("OMPI_MCA_oob_tcp_if_include"), QStringLiteral("lo"));
    env.insert(QStringLiteral("OMPI_MCA_btl_vader_single_copy_mechanism"), QStringLiteral("none"));
    return env;
}

QString mpirun() {
    return QStandardPaths::findExecutable(QStringLiteral("mpirun"));
}

// `mpirun -n ranks ensemble-cli train ...` (--oversubscribe: more ranks than this machine's
// cores; --bind-to none: no rank pinned to one core).
Run train(int ranks, const QStringList& args) {
    QStringList all{
        QStringLiteral("-n"),        QString::number(ranks), QStringLiteral("--oversubscribe"),
        QStringLiteral("--bind-to"), QStringLiteral("none"), cliPath(),
        QStringLiteral("train")};
    return runProgram(mpirun(), all + args, ensemble::test::kProcessDeadlineMs, mpiEnvironment());
}

ensemble::SafetensorsFile readWeights(const QString& path) {
    return ensemble::readSafetensors(path.toStdString());
}

}  // namespace

class TestMpi : public QObject {
    Q_OBJECT

  private slots:
    void ensembleAxisIsBitIdentical_data();
    void ensembleAxisIsBitIdentical();
    void meshMismatchIsAConfigError();
    void meshIgnoredInOneProcess();
    void failingRankEndsTheJob_data();
    void failingRankEndsTheJob();
    void interruptStopsEveryRankAtOneStep();
    void dataAxisMatchesOneProcess_data();
    void dataAxisMatchesOneProcess();
    void dataAxisRefusals();
    void dataAxisCnnMembers();
    void dataParallelLinearRegression();
};

void TestMpi::ensembleAxisIsBitIdentical_data() {
    QTest::addColumn<int>("ranks");
    QTest::addColumn<QStringList>("sets");
    const auto sets = [](std::initializer_list<const char*> s) {
        QStringList out;
        for (const char* kv : s) {
            out << QStringLiteral("--set") << QString::fromUtf8(kv);
        }
        return out;
    };
    // Per-member learning rates (log-spaced over the GLOBAL members) and a schedule check that
    // a rank's members take their own global hyperparameters.
    QTest::newRow("2 ranks, K=6, none, per-member lr")
        << 2
        << sets({"ensemble.members=6", "ensemble.bootstrap=none",
                 "optimizer.lr={\"log_uniform\": [0.003, 0.03]}",
                 "training.schedule=[{\"step\": 60, \"set\": {\"optimizer.lr\": "
                 "{\"log_uniform\": [0.001, 0.01]}}}]"});
    QTest::newRow("2 ranks, K=7 (uneven), resample")
        << 2 << sets({"ensemble.members=7", "ensemble.bootstrap=resample"});
    QTest::newRow("4 ranks oversubscribed, K=5 (uneven), poisson")
        << 4 << sets({"ensemble.members=5", "ensemble.bootstrap=poisson"});
    QTest::newRow("2 ranks, K=3, gaussian regression")
        << 2
        << sets({"dataset.kind=sine", "model.likelihood=gaussian", "ensemble.members=3",
                 "ensemble.bootstrap=resample"});
}

void TestMpi::ensembleAxisIsBitIdentical() {
    QFETCH(int, ranks);
    QFETCH(QStringList, sets);
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const QStringList common =
        QStringList{QStringLiteral("--config"), QStringLiteral("spirals"),
                    QStringLiteral("--set"),    QStringLiteral("training.steps=150"),
                    QStringLiteral("--set"),    QStringLiteral("training.eval_every=50"),
                    QStringLiteral("--set"),    QStringLiteral("backend.threads=1"),
                    QStringLiteral("--quiet")} +
        sets;
    const QString oneW = dir.filePath(QStringLiteral("one.safetensors"));
    const QString oneM = dir.filePath(QStringLiteral("one.json"));
    const QString meshW = dir.filePath(QStringLiteral("mesh.safetensors"));
    const QString meshM = dir.filePath(QStringLiteral("mesh.json"));
    const Run one =
        runCli(QStringList{QStringLiteral("train")} + common +
                   QStringList{QStringLiteral("--export"), oneW, QStringLiteral("--metrics"), oneM},
               mpiEnvironment());
    QVERIFY2(one.code == 0, qPrintable(describe(one)));
    const Run mesh = train(ranks, common + QStringList{QStringLiteral("--export"), meshW,
                                                       QStringLiteral("--metrics"), meshM});
    QVERIFY2(mesh.code == 0, qPrintable(describe(mesh)));

    // The metrics (every evaluation's numbers, computed by rank 0 from the gathered outputs).
    const QByteArray metricsOne = fileBytes(oneM);
    QVERIFY(!metricsOne.isEmpty());
    QVERIFY2(metricsOne == fileBytes(meshM), "the metrics differ from one process's");

    const ensemble::SafetensorsFile a = readWeights(oneW);
    const ensemble::SafetensorsFile b = readWeights(meshW);
    QCOMPARE(b.tensors.size(), a.tensors.size());
    for (const ensemble::Tensor& t : a.tensors) {
        const ensemble::Tensor* u = b.find(t.name);
        QVERIFY2(u != nullptr, t.name.c_str());
        QCOMPARE(u->shape, t.shape);
        QVERIFY2(u->data == t.data, qPrintable(QStringLiteral("tensor %1 differs from one "
                                                              "process's")
                                                   .arg(QString::fromStdString(t.name))));
    }
    // Everything else in the metadata is the same; the mesh and member -> rank are recorded.
    for (const auto& [key, value] : a.metadata) {
        QVERIFY2(b.metadata.count(key) == 1 && b.metadata.at(key) == value, key.c_str());
    }
    QVERIFY(a.metadata.count("mesh") == 0);
    const QJsonObject meshJson =
        QJsonDocument::fromJson(QByteArray::fromStdString(b.metadata.at("mesh"))).object();
    QCOMPARE(meshJson.value(QStringLiteral("ensemble")).toInt(), ranks);
    QCOMPARE(meshJson.value(QStringLiteral("data")).toInt(), 1);
    const QJsonArray memberRanks =
        QJsonDocument::fromJson(QByteArray::fromStdString(b.metadata.at("member_ranks"))).array();
    const int k = static_cast<int>(a.get("layers.0.weight").shape[0]);
    QCOMPARE(memberRanks.size(), k);
    for (int m = 0; m < k; ++m) {
        // Rank e holds [eK/E, (e+1)K/E): member m belongs to the largest e with eK/E <= m.
        int expected = 0;
        for (int e = 0; e < ranks; ++e) {
            if (e * k / ranks <= m) {
                expected = e;
            }
        }
        QCOMPARE(memberRanks.at(m).toInt(), expected);
    }

    // predict reads the file as any other.
    const QString input = dir.filePath(QStringLiteral("x.csv"));
    {
        QFile f(input);
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write("x0\n0.5\n-1.0\n");
    }
    if (!sets.contains(QStringLiteral("dataset.kind=sine"))) {
        QFile f(input);
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write("x0,x1\n0.5,0.25\n-1.0,0.75\n");
    }
    const QString outA = dir.filePath(QStringLiteral("a.csv"));
    const QString outB = dir.filePath(QStringLiteral("b.csv"));
    const Run pa = runCli({QStringLiteral("predict"), QStringLiteral("--weights"), oneW,
                           QStringLiteral("--input"), input, QStringLiteral("--output"), outA},
                          mpiEnvironment());
    QVERIFY2(pa.code == 0, qPrintable(describe(pa)));
    const Run pb = runCli({QStringLiteral("predict"), QStringLiteral("--weights"), meshW,
                           QStringLiteral("--input"), input, QStringLiteral("--output"), outB},
                          mpiEnvironment());
    QVERIFY2(pb.code == 0, qPrintable(describe(pb)));
    QCOMPARE(fileBytes(outB), fileBytes(outA));
}

void TestMpi::meshMismatchIsAConfigError() {
    const Run r =
        train(2, {QStringLiteral("--config"), QStringLiteral("spirals"), QStringLiteral("--set"),
                  QStringLiteral("backend.mesh={\"ensemble\": 3, \"data\": 1}"),
                  QStringLiteral("--quiet")});
    QVERIFY2(r.code == 2, qPrintable(describe(r)));
    QVERIFY2(r.err.contains(QStringLiteral("backend.mesh")) &&
                 r.err.contains(QStringLiteral("3 x 1")) &&
                 r.err.contains(QStringLiteral("started 2")),
             qPrintable(describe(r)));
    // More ranks on the ensemble axis than members.
    const Run few =
        train(2, {QStringLiteral("--config"), QStringLiteral("spirals"), QStringLiteral("--set"),
                  QStringLiteral("ensemble.members=1"), QStringLiteral("--quiet")});
    QVERIFY2(few.code == 2 && few.err.contains(QStringLiteral("ensemble.members = 1")),
             qPrintable(describe(few)));
}

void TestMpi::meshIgnoredInOneProcess() {
    // Without mpirun the stored mesh is information: the run trains as one process, with a note.
    const Run r = runCli(
        {QStringLiteral("train"), QStringLiteral("--config"), QStringLiteral("spirals"),
         QStringLiteral("--set"), QStringLiteral("backend.mesh={\"ensemble\": 2, \"data\": 1}"),
         QStringLiteral("--set"), QStringLiteral("training.steps=20"), QStringLiteral("--quiet")},
        mpiEnvironment());
    QVERIFY2(r.code == 0, qPrintable(describe(r)));
    QVERIFY2(r.err.count(QStringLiteral("backend.mesh")) == 1 &&
                 r.err.contains(QStringLiteral("is ignored")),
             qPrintable(describe(r)));
}

void TestMpi::failingRankEndsTheJob_data() {
    QTest::addColumn<QString>("mesh");
    QTest::newRow("ensemble axis") << QStringLiteral("auto");
    // Rank 1 is rank 0's replica: a data-axis group whose second replica never starts.
    QTest::newRow("data axis") << QStringLiteral("{\"ensemble\": 1, \"data\": 2}");
}

void TestMpi::failingRankEndsTheJob() {
    // Rank 1 alone gets a dataset that does not exist (an MPMD launch: one command line per
    // rank). The job must end with that rank's message and the data error's exit code, 3.
    QFETCH(QString, mesh);
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const QString missing = dir.filePath(QStringLiteral("no-such-file.csv"));
    const QStringList good{cliPath(),
                           QStringLiteral("train"),
                           QStringLiteral("--config"),
                           QStringLiteral("spirals"),
                           QStringLiteral("--set"),
                           QStringLiteral("training.steps=50"),
                           QStringLiteral("--set"),
                           QStringLiteral("backend.mesh=") + mesh,
                           QStringLiteral("--quiet")};
    const QStringList bad =
        good + QStringList{QStringLiteral("--set"), QStringLiteral("dataset.kind=csv"),
                           QStringLiteral("--set"), QStringLiteral("dataset.path=") + missing};
    QElapsedTimer clock;
    clock.start();
    const Run r = runProgram(
        mpirun(),
        QStringList{QStringLiteral("--oversubscribe"), QStringLiteral("-n"), QStringLiteral("1")} +
            good + QStringList{QStringLiteral(":"), QStringLiteral("-n"), QStringLiteral("1")} +
            bad,
        60000, mpiEnvironment());
    QVERIFY2(r.code == 3, qPrintable(describe(r)));
    QVERIFY2(r.err.contains(QStringLiteral("rank 1 of 2")) && r.err.contains(missing),
             qPrintable(describe(r)));
    QVERIFY2(clock.elapsed() < 60000, "the job waited instead of ending");
}

void TestMpi::interruptStopsEveryRankAtOneStep() {
    // SIGTERM to mpirun (what a scheduler or Ctrl-C does): mpirun passes it to the ranks, which
    // agree on one step to stop at; rank 0 writes the export of that step. It must equal one
    // process trained for exactly that many steps, bit for bit.
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const QStringList common{
        QStringLiteral("--config"), QStringLiteral("spirals"),
        QStringLiteral("--set"),    QStringLiteral("ensemble.members=5"),
        QStringLiteral("--set"),    QStringLiteral("ensemble.bootstrap=resample"),
        QStringLiteral("--set"),    QStringLiteral("backend.threads=1"),
        QStringLiteral("--set"),    QStringLiteral("training.eval_every=0")};
    const QString cut = dir.filePath(QStringLiteral("cut.safetensors"));
    QProcess p;
    QProcessEnvironment env = mpiEnvironment();
    // mpirun passes SIGTERM odls_base_sigkill_timeout seconds after it got the signal and
    // SIGKILL as long again later (1 s by default): 5 s gives rank 0 time to write on a loaded
    // machine, as docs/scaling.md says to set it.
    env.insert(QStringLiteral("OMPI_MCA_odls_base_sigkill_timeout"), QStringLiteral("5"));
    p.setProcessEnvironment(env);
    p.start(mpirun(),
            QStringList{QStringLiteral("-n"), QStringLiteral("2"), QStringLiteral("--bind-to"),
                        QStringLiteral("none"), cliPath(), QStringLiteral("train")} +
                common +
                QStringList{QStringLiteral("--set"), QStringLiteral("training.steps=100000000"),
                            QStringLiteral("--export"), cut});
    QVERIFY(p.waitForStarted());
    // Signal once rank 0 says it is training (every rank is then past the agreed setup and
    // stops at a step boundary on a signal), whatever the machine's load made startup cost.
    QByteArray err;
    QElapsedTimer wait;
    wait.start();
    while (!err.contains("training 5 members") && wait.elapsed() < 60000 &&
           p.state() == QProcess::Running) {
        p.waitForReadyRead(200);
        err += p.readAllStandardError();
    }
    QVERIFY2(err.contains("training 5 members"), err.constData());
    // Some steps: rank 0's first progress line (a log gets one every few seconds) has come.
    while (!err.contains(" member-steps/s") && wait.elapsed() < 60000 &&
           p.state() == QProcess::Running) {
        p.waitForReadyRead(200);
        err += p.readAllStandardError();
    }
    QVERIFY2(err.contains(" member-steps/s"), err.constData());
    p.terminate();
    if (!p.waitForFinished(60000)) {
        p.kill();
        p.waitForFinished();
        QFAIL("mpirun did not end within 60 s of SIGTERM");
    }
    err += p.readAllStandardError();
    QVERIFY2(QFile::exists(cut), err.constData());
    const ensemble::SafetensorsFile b = readWeights(cut);
    QVERIFY(b.metadata.count("interrupted_at_step") == 1);
    const QString step = QString::fromStdString(b.metadata.at("interrupted_at_step"));
    QVERIFY(step.toLongLong() > 0);
    const QString whole = dir.filePath(QStringLiteral("whole.safetensors"));
    const Run one =
        runCli(QStringList{QStringLiteral("train"), QStringLiteral("--quiet")} + common +
                   QStringList{QStringLiteral("--set"), QStringLiteral("training.steps=") + step,
                               QStringLiteral("--export"), whole},
               mpiEnvironment());
    QVERIFY2(one.code == 0, qPrintable(describe(one)));
    const ensemble::SafetensorsFile a = readWeights(whole);
    for (const ensemble::Tensor& t : a.tensors) {
        const ensemble::Tensor* u = b.find(t.name);
        QVERIFY2(u != nullptr && u->data == t.data, t.name.c_str());
    }
}

namespace {

// The largest absolute difference between the layer tensors of two exports of the same shape.
double maxWeightDifference(const ensemble::SafetensorsFile& a, const ensemble::SafetensorsFile& b,
                           double* maxAbsWeight = nullptr) {
    double worst = 0.0;
    for (const ensemble::Tensor& t : a.tensors) {
        if (t.name.rfind("layers.", 0) != 0) {
            continue;
        }
        const ensemble::Tensor* u = b.find(t.name);
        if (u == nullptr || u->shape != t.shape) {
            return std::numeric_limits<double>::infinity();
        }
        const auto x = t.f32();
        const auto y = u->f32();
        for (std::size_t i = 0; i < x.size(); ++i) {
            worst = std::max(worst, std::abs(static_cast<double>(x[i]) - y[i]));
            if (maxAbsWeight != nullptr) {
                *maxAbsWeight = std::max(*maxAbsWeight, std::abs(static_cast<double>(x[i])));
            }
        }
    }
    return worst;
}

QStringList setsOf(std::initializer_list<const char*> s) {
    QStringList out;
    for (const char* kv : s) {
        out << QStringLiteral("--set") << QString::fromUtf8(kv);
    }
    return out;
}

}  // namespace

void TestMpi::dataAxisMatchesOneProcess_data() {
    QTest::addColumn<int>("ensemble");
    QTest::addColumn<int>("data");
    QTest::addColumn<double>("bound");
    QTest::addColumn<QStringList>("sets");
    // SGD's update is linear in the gradient, so a mis-scaled gradient (a shard's normaliser, a
    // replica counted twice) moves the weights by far more than 1e-5: the tight bound tests the
    // pmean itself. Measured after 100 steps: at most 3e-7 (docs/scaling.md, "Exactness of the data
    // axis").
    const double sgd = 1e-5;
    QTest::newRow("data 2, K=3, SGD, none")
        << 1 << 2 << sgd
        << setsOf({"ensemble.members=3", "ensemble.bootstrap=none", "optimizer.kind=sgd",
                   "optimizer.lr=0.05"});
    QTest::newRow("2 x 2, K=3 (uneven), SGD momentum, resample")
        << 2 << 2 << sgd
        << setsOf({"ensemble.members=3", "ensemble.bootstrap=resample", "optimizer.kind=sgd",
                   "optimizer.lr=0.05", "optimizer.momentum=0.9"});
    QTest::newRow("2 x 2, K=5 (uneven), SGD, poisson")
        << 2 << 2 << sgd
        << setsOf({"ensemble.members=5", "ensemble.bootstrap=poisson", "optimizer.kind=sgd",
                   "optimizer.lr=0.05"});
    QTest::newRow("data 4, K=2, SGD, poisson, gaussian regression")
        << 1 << 4 << sgd
        << setsOf({"dataset.kind=sine", "model.likelihood=gaussian", "ensemble.members=2",
                   "ensemble.bootstrap=poisson", "optimizer.kind=sgd", "optimizer.lr=0.02"});
    // Adversarial training: each replica moves its own rows (x' depends on the example alone),
    // so the shards' gradients of loss(x) + loss(x') still add up to the whole batch's.
    QTest::newRow("data 2, K=3, SGD, poisson, adversarial")
        << 1 << 2 << sgd
        << setsOf({"ensemble.members=3", "ensemble.bootstrap=poisson", "optimizer.kind=sgd",
                   "optimizer.lr=0.05", "training.adversarial_eps=0.05"});
    // Adam divides by the gradient's running RMS, so a component whose gradient is near zero
    // turns a rounding difference into a step of up to lr: the spirals preset's seed 0 shows
    // 1.3e-4 after 100 steps (other seeds 5e-7). Adam is scale-invariant, so only the SGD rows
    // can catch a normaliser mistake; this row checks the Adam path runs the same updates.
    QTest::newRow("2 x 2, K=3, Adam (preset), none")
        << 2 << 2 << 1e-3 << setsOf({"ensemble.members=3", "ensemble.bootstrap=none"});
}

void TestMpi::dataAxisMatchesOneProcess() {
    QFETCH(int, ensemble);
    QFETCH(int, data);
    QFETCH(double, bound);
    QFETCH(QStringList, sets);
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const QStringList common =
        QStringList{QStringLiteral("--config"), QStringLiteral("spirals"),
                    QStringLiteral("--set"),    QStringLiteral("training.steps=100"),
                    QStringLiteral("--set"),    QStringLiteral("training.eval_every=50"),
                    QStringLiteral("--set"),    QStringLiteral("backend.threads=1"),
                    QStringLiteral("--quiet")} +
        sets;
    const QString meshSet =
        QStringLiteral("backend.mesh={\"ensemble\": %1, \"data\": %2}").arg(ensemble).arg(data);
    const QString oneW = dir.filePath(QStringLiteral("one.safetensors"));
    const Run one = runCli(QStringList{QStringLiteral("train")} + common +
                               QStringList{QStringLiteral("--export"), oneW},
                           mpiEnvironment());
    QVERIFY2(one.code == 0, qPrintable(describe(one)));
    QString meshW[2];
    QString meshM[2];
    for (int i = 0; i < 2; ++i) {
        meshW[i] = dir.filePath(QStringLiteral("mesh%1.safetensors").arg(i));
        meshM[i] = dir.filePath(QStringLiteral("mesh%1.json").arg(i));
        const Run r =
            train(ensemble * data,
                  common + QStringList{QStringLiteral("--set"), meshSet, QStringLiteral("--export"),
                                       meshW[i], QStringLiteral("--metrics"), meshM[i]});
        QVERIFY2(r.code == 0, qPrintable(describe(r)));
    }
    // Deterministic run to run: the same bits (the allreduce sums in rank order).
    QVERIFY2(fileBytes(meshW[0]) == fileBytes(meshW[1]), "two runs on the mesh differ");
    QVERIFY2(fileBytes(meshM[0]) == fileBytes(meshM[1]), "two runs' metrics differ");

    const ensemble::SafetensorsFile a = readWeights(oneW);
    const ensemble::SafetensorsFile b = readWeights(meshW[0]);
    double largest = 0.0;
    const double difference = maxWeightDifference(a, b, &largest);
    qInfo("max |w_mesh - w_one| after 100 steps: %.3g (max |w| %.3g, bound %.3g)", difference,
          largest, bound);
    QVERIFY2(
        difference <= bound,
        qPrintable(QStringLiteral("max weight difference %1 > %2").arg(difference).arg(bound)));
    QVERIFY(largest > 0.1);  // trained weights, not an empty comparison
    // A replica that skipped its update, or trained on the whole batch, would not be close.
    const QJsonObject meshJson =
        QJsonDocument::fromJson(QByteArray::fromStdString(b.metadata.at("mesh"))).object();
    QCOMPARE(meshJson.value(QStringLiteral("ensemble")).toInt(), ensemble);
    QCOMPARE(meshJson.value(QStringLiteral("data")).toInt(), data);
    const QJsonArray memberRanks =
        QJsonDocument::fromJson(QByteArray::fromStdString(b.metadata.at("member_ranks"))).array();
    const int k = static_cast<int>(a.get("layers.0.weight").shape[0]);
    QCOMPARE(memberRanks.size(), k);
    for (int m = 0; m < k; ++m) {
        int group = 0;
        for (int e = 0; e < ensemble; ++e) {
            if (e * k / ensemble <= m) {
                group = e;
            }
        }
        QCOMPARE(memberRanks.at(m).toInt(), group * data);  // the group's first replica
    }
}

void TestMpi::dataAxisRefusals() {
    const QStringList spirals{QStringLiteral("--config"), QStringLiteral("spirals"),
                              QStringLiteral("--quiet")};
    // A batch the data axis cannot split evenly: a config error naming both numbers.
    const Run odd = train(4, spirals + setsOf({"backend.mesh={\"ensemble\": 1, \"data\": 4}",
                                               "training.batch_size=30"}));
    QVERIFY2(odd.code == 2 && odd.err.contains(QStringLiteral("training.batch_size")) &&
                 odd.err.contains(QStringLiteral("30")) &&
                 odd.err.contains(QStringLiteral("data = 4")),
             qPrintable(describe(odd)));
    // The data axis runs on either backend: with backend.kind=cuda and no usable GPU the job
    // fails as any CUDA run does (exit 4, naming the device), with one it trains.
    const Run cuda = train(2, spirals + setsOf({"backend.mesh={\"ensemble\": 1, \"data\": 2}",
                                                "backend.kind=cuda", "training.steps=5"}));
    QVERIFY2(cuda.code == 0 || (cuda.code == 4 && cuda.err.contains(QStringLiteral("CUDA"))),
             qPrintable(describe(cuda)));
}

void TestMpi::dataAxisCnnMembers() {
    // A small CNN on MNIST, its batch of 64 split over 2 replicas: each replica's 32 rows are one
    // of the conv path's fixed groups of 32, summed in the same order as one process sums its two
    // groups, so the weights agree to the bit (measured); the bound leaves room for rounding.
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const QStringList common =
        QStringList{QStringLiteral("--config"), QStringLiteral("mnist-cnn"),
                    QStringLiteral("--quiet")} +
        setsOf({"ensemble.members=2", "ensemble.bootstrap=resample", "dataset.limit=1000",
                "training.batch_size=64", "training.epochs=0", "training.steps=20",
                "training.eval_every=0", "backend.threads=1", "optimizer.kind=sgd",
                "optimizer.lr=0.05",
                "model.layers=[{\"type\": \"conv\", \"filters\": 4, \"kernel\": 3}, "
                "{\"type\": \"pool\", \"kind\": \"max\", \"size\": 2}, "
                "{\"type\": \"dense\", \"units\": 16}]"});
    const QString oneW = dir.filePath(QStringLiteral("one.safetensors"));
    const Run one = runCli(QStringList{QStringLiteral("train")} + common +
                               QStringList{QStringLiteral("--export"), oneW},
                           mpiEnvironment());
    if (one.code == 3) {
        QSKIP(qPrintable(QStringLiteral("MNIST is not installed (scripts/fetch-mnist.sh): ") +
                         one.err.left(200)));
    }
    QVERIFY2(one.code == 0, qPrintable(describe(one)));
    const QString meshW = dir.filePath(QStringLiteral("mesh.safetensors"));
    const Run mesh = train(2, common + setsOf({"backend.mesh={\"ensemble\": 1, \"data\": 2}"}) +
                                  QStringList{QStringLiteral("--export"), meshW});
    QVERIFY2(mesh.code == 0, qPrintable(describe(mesh)));
    double largest = 0.0;
    const double difference = maxWeightDifference(readWeights(oneW), readWeights(meshW), &largest);
    qInfo("CNN, 2 data ranks: max |w_mesh - w_one| after 20 steps = %.3g", difference);
    QVERIFY2(difference <= 1e-6, qPrintable(QString::number(difference)));
    QVERIFY(largest > 0.1);
}

void TestMpi::dataParallelLinearRegression() {
    // docs/scaling.md's simulated-devices demo: one linear model, its batch split over 4 ranks
    // (oversubscribed on this machine), gradients averaged; the same fit as one process.
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const QStringList common =
        QStringList{QStringLiteral("--config"), QStringLiteral("linear"),
                    QStringLiteral("--quiet")} +
        setsOf({"ensemble.members=1", "ensemble.bootstrap=none", "optimizer.kind=sgd",
                "optimizer.lr=0.1", "training.steps=300", "backend.threads=1"});
    const QString oneW = dir.filePath(QStringLiteral("one.safetensors"));
    const QString oneM = dir.filePath(QStringLiteral("one.json"));
    const QString meshW = dir.filePath(QStringLiteral("mesh.safetensors"));
    const QString meshM = dir.filePath(QStringLiteral("mesh.json"));
    const Run one =
        runCli(QStringList{QStringLiteral("train")} + common +
                   QStringList{QStringLiteral("--export"), oneW, QStringLiteral("--metrics"), oneM},
               mpiEnvironment());
    QVERIFY2(one.code == 0, qPrintable(describe(one)));
    const Run mesh = train(
        4, common + setsOf({"backend.mesh={\"ensemble\": 1, \"data\": 4}"}) +
               QStringList{QStringLiteral("--export"), meshW, QStringLiteral("--metrics"), meshM});
    QVERIFY2(mesh.code == 0, qPrintable(describe(mesh)));
    const double difference = maxWeightDifference(readWeights(oneW), readWeights(meshW));
    qInfo("linear regression, 4 data ranks: max |w_mesh - w_one| = %.3g", difference);
    QVERIFY2(difference <= 1e-5, qPrintable(QString::number(difference)));
    // The fit itself: test RMSE near the noise's std (0.5), the same to rounding in both.
    const auto rmse = [](const QString& path) {
        const QJsonObject m = QJsonDocument::fromJson(fileBytes(path)).object();
        return m.value(QStringLiteral("ensemble"))
            .toObject()
            .value(QStringLiteral("rmse"))
            .toDouble(-1);
    };
    const double a = rmse(oneM);
    const double b = rmse(meshM);
    QVERIFY2(a > 0.3 && a < 0.7, qPrintable(QString::number(a)));
    QVERIFY2(std::abs(a - b) <= 1e-5, qPrintable(QStringLiteral("%1 vs %2").arg(a).arg(b)));
}

int main(int argc, char** argv) {
    if (mpirun().isEmpty()) {
        std::printf(
            "SKIP tst_mpi: mpirun is not installed (apt-get install openmpi-bin "
            "libopenmpi-dev, or scripts/setup.sh)\n");
        return 77;
    }
#ifndef ENSEMBLE_TEST_HAVE_MPI
    std::printf(
        "SKIP tst_mpi: this build has no MPI (configure with ENSEMBLE_MPI=AUTO or ON "
        "and libopenmpi-dev installed)\n");
    return 77;
#else
    QCoreApplication app(argc, argv);
    TestMpi test;
    return QTest::qExec(&test, argc, argv);
#endif
}

#include "tst_mpi.moc"
