// Opening in the app: the window opens ensembles the CLI trained (an export: its weights as
// a new run's starting point; a checkpoint: its whole training state, so Train continues it
// bit for bit as the CLI's --resume does), draws them without training, keeps the current
// experiment when a file cannot be used, and renders one unattended with --weights.
#include <QApplication>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QImage>
#include <QLabel>
#include <QMessageBox>
#include <QPushButton>
#include <QSignalSpy>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QTimer>
#include <QtTest>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>

#include <QAction>

#include "io/model_io.h"
#include "io/safetensors.h"
#include "main_window.h"
#include "metrics/grid.h"
#include "panels/experiment_panel.h"
#include "support/gui_test_support.h"
#include "support/invalid_configs.h"
#include "support/json_files.h"
#include "support/test_support.h"
#include "views/boundary_view.h"
#include "views/calibration_view.h"
#include "views/members_view.h"

using ensemble::test::describe;
using ensemble::test::exportedParameters;
using ensemble::test::makeWindow;
using ensemble::test::Run;
using ensemble::test::runCli;
using ensemble::test::runProgram;
using ensemble::test::sameBitsNonEmpty;
using ensemble::test::waitFresh;
using ensemble::test::waitSnapshot;
using ensemble::test::writeBytes;
using ensemble::ui::MainWindow;
using ensemble::ui::SnapshotPtr;

namespace {

// The small spirals run both sides train: K = 3, resampled, Adam, one thread.
QStringList trainArgs(int64_t steps) {
    return {QStringLiteral("train"),
            QStringLiteral("--config"),
            QStringLiteral("spirals"),
            QStringLiteral("--set"),
            QStringLiteral("dataset.n=300"),
            QStringLiteral("--set"),
            QStringLiteral("ensemble.members=3"),
            QStringLiteral("--set"),
            QStringLiteral("ensemble.bootstrap=\"resample\""),
            QStringLiteral("--set"),
            QStringLiteral("training.steps=%1").arg(steps),
            QStringLiteral("--set"),
            QStringLiteral("training.eval_every=10"),
            QStringLiteral("--set"),
            QStringLiteral("backend.kind=\"cpu\""),
            QStringLiteral("--set"),
            QStringLiteral("backend.threads=1"),
            QStringLiteral("--quiet")};
}

// Opens `path` and waits for the run it makes to show its first snapshot.
bool openAndWait(MainWindow& w, const QString& path, int64_t step) {
    QSignalSpy opened(&w, &MainWindow::ensembleOpened);
    QString error;
    if (!w.openEnsemble(path, &error)) {
        qWarning("%s", qPrintable(error));
        return false;
    }
    if (!opened.wait(20000)) {
        return false;
    }
    const uint64_t id = w.controller()->currentRunId();
    return waitSnapshot(w, [&](const auto& s) { return s.run->runId == id && s.step == step; });
}

// The Boundary read-out at the middle of the plot against the file's own members, predicted
// by the engine's CPU path at that grid cell: the heatmap is drawn from the file's weights.
void checkBoundaryShowsFile(MainWindow& w, const QString& path) {
    QVERIFY(w.setView(QStringLiteral("boundary")));
    auto* canvas = w.boundaryView()->canvas();
    QTRY_VERIFY(!canvas->plotRect().isEmpty());  // laid out
    const QRectF plot = canvas->plotRect();
    const ensemble::ui::BoundaryReadout r = canvas->readoutAt(plot.center());
    QVERIFY(r.valid && r.hasEnsemble);
    const SnapshotPtr s = w.controller()->snapshot();
    const std::vector<float> grid = ensemble::gridPoints(s->run->bounds, s->run->gridSize);
    const float* cell = grid.data() + 2 * r.point;
    const ensemble::LoadedEnsemble file = ensemble::importEnsemble(path.toStdString());
    const std::vector<float> logp = ensemble::predictLogProbs(file, cell, 1, 1);
    const int k = file.layout.members();
    QCOMPARE(static_cast<int>(r.probabilities.size()), 2);
    for (int c = 0; c < 2; ++c) {
        double mean = 0.0;
        for (int m = 0; m < k; ++m) {
            mean += std::exp(static_cast<double>(logp[static_cast<std::size_t>(m * 2 + c)]));
        }
        mean /= k;
        QVERIFY2(std::abs(mean - r.probabilities[static_cast<std::size_t>(c)]) < 1e-4,
                 qPrintable(QStringLiteral("class %1: file %2, view %3")
                                .arg(c)
                                .arg(mean)
                                .arg(r.probabilities[static_cast<std::size_t>(c)])));
    }
}

// The numbers of ensemble-cli eval's line that starts with `label` (accuracy nll brier ece).
QList<double> evalRow(const QString& weights, const QString& label) {
    const Run cli = runCli({QStringLiteral("eval"), QStringLiteral("--weights"), weights});
    if (cli.code != 0) {
        return {};
    }
    for (const QString& line : cli.out.split('\n')) {
        if (line.startsWith(label + ' ')) {
            QList<double> values;
            for (const QString& word : line.mid(label.size()).split(' ', Qt::SkipEmptyParts)) {
                values.push_back(word.toDouble());
            }
            return values;
        }
    }
    return {};
}

// A table cell's number ("84.50 %" -> 84.5, "+0.0123" -> 0.0123).
double cellNumber(QTableWidget* table, int row, int column) {
    QString text = table->item(row, column)->text();
    text.remove(QStringLiteral(" %"));
    bool ok = false;
    const double v = text.toDouble(&ok);
    return ok ? v : std::nan("");
}

}  // namespace

class TestGuiOpen : public QObject {
    Q_OBJECT

  private Q_SLOTS:
    void initTestCase();
    void opensAnExportAsTheStartingPoint();
    void opensACheckpointAndContinuesItAsTheCliResumes();
    void savedCheckpointContinuesInTheCliAndReopens();
    void aRunUntilPausedReopensUntilPaused();
    void closingAsksToSaveACheckpoint();
    void unreadableFileKeepsTheCurrentExperiment();
    void missingCsvOpensWithoutData();
    void missingMnistFolderOpensWithoutData();
    void rendersWeightsUnattended();
    void refusesAnInvalidConfigAsTheCliDoes();
    void aScriptedRunWithNothingToTrainEnds();
    void warnsOfAValueThatCannotTrainAsTheCliDoes();
    void exportsAJob();
    void membersShowWhereAMeshTrainedThem();
    void comparesASecondEnsembleInCalibration();

  private:
    QTemporaryDir m_dir;
    QString m_export;
    QString m_checkpoint;
};

void TestGuiOpen::initTestCase() {
    ensemble::test::isolateSettings();
    QVERIFY(m_dir.isValid());
    m_export = m_dir.filePath(QStringLiteral("run.safetensors"));
    m_checkpoint = m_dir.filePath(QStringLiteral("run.ckpt.safetensors"));
    const Run r = runCli(trainArgs(40) << QStringLiteral("--export") << m_export
                                       << QStringLiteral("--checkpoint") << m_checkpoint);
    QVERIFY2(r.code == 0, qPrintable(describe(r)));
    QVERIFY2(QFile::exists(m_export) && QFile::exists(m_checkpoint), qPrintable(describe(r)));
}

void TestGuiOpen::opensAnExportAsTheStartingPoint() {
    QTemporaryDir dir;
    auto w = makeWindow();
    QVERIFY(openAndWait(*w, m_export, 0));
    const SnapshotPtr s = w->controller()->snapshot();
    QCOMPARE(s->run->members, 3);
    QCOMPARE(s->switchedOn.size(), std::size_t{3});
    QVERIFY(!s->running);
    QVERIFY2(w->statusMessage().contains(QStringLiteral("loaded weights as the starting point")),
             qPrintable(w->statusMessage()));
    QCOMPARE(w->panel()->config()["ensemble"]["members"].get<int>(), 3);
    QCOMPARE(w->windowFilePath(), m_export);
    checkBoundaryShowsFile(*w, m_export);
    // Nothing trained: the window holds the file's weights, bit for bit.
    QVERIFY(sameBitsNonEmpty(exportedParameters(*w, dir, "held"),
                             ensemble::importEnsemble(m_export.toStdString()).params));
}

void TestGuiOpen::membersShowWhereAMeshTrainedThem() {
    // An export as ensemble-cli writes it under mpirun (metadata mesh, member_ranks and
    // member_devices; tst_mpi checks the CLI writes them): the Members view names each
    // member's rank and device, on its tile and in the view's note. The file's own export stands
    // in, with that metadata added.
    QTemporaryDir dir;
    ensemble::SafetensorsFile file = ensemble::readSafetensors(m_export.toStdString());
    file.metadata["mesh"] = R"({"ensemble": 3, "data": 1, "ranks": 3})";
    file.metadata["member_ranks"] = "[0, 1, 2]";
    file.metadata["member_devices"] = R"(["cuda:0", "cuda:1", "cuda:0"])";
    const QString meshExport = dir.filePath(QStringLiteral("mesh.safetensors"));
    ensemble::writeSafetensors(meshExport.toStdString(), file);
    auto w = makeWindow();
    QVERIFY(openAndWait(*w, meshExport, 0));
    const SnapshotPtr s = w->controller()->snapshot();
    QCOMPARE(s->run->mesh, std::string("3 × 1 ranks"));
    QCOMPARE(s->run->memberOrigins,
             (std::vector<std::string>{"rank 0 · cuda:0", "rank 1 · cuda:1", "rank 2 · cuda:0"}));
    QVERIFY(w->setView(QStringLiteral("members")));
    w->membersView()->setSnapshot(s);
    const auto labels = w->membersView()->findChildren<QLabel*>();
    const bool noted = std::any_of(labels.begin(), labels.end(), [](const QLabel* l) {
        return l->text().contains(QStringLiteral("mesh of 3 × 1 ranks"));
    });
    QVERIFY(noted);
    // A file trained in one process says nothing of the kind.
    auto plain = makeWindow();
    QVERIFY(openAndWait(*plain, m_export, 0));
    QVERIFY(plain->controller()->snapshot()->run->memberOrigins.empty());
}

void TestGuiOpen::opensACheckpointAndContinuesItAsTheCliResumes() {
    QTemporaryDir dir;
    auto w = makeWindow();
    QVERIFY(openAndWait(*w, m_checkpoint, 40));  // the snapshot's step is the file's
    SnapshotPtr s = w->controller()->snapshot();
    QCOMPARE(s->run->members, 3);
    QVERIFY(s->finished);
    QVERIFY2(w->statusMessage().contains(QStringLiteral("resumed checkpoint at step 40")),
             qPrintable(w->statusMessage()));
    // The stored curves come back (the CLI evaluated every 10 steps), then the window's own
    // evaluation at the checkpoint's step.
    QCOMPARE(s->history.size(), std::size_t{4});
    for (std::size_t i = 0; i < s->history.size(); ++i) {
        QCOMPARE(s->history[i]->step, static_cast<int64_t>(10 * (i + 1)));
        QCOMPARE(s->history[i]->memberTest.size(), std::size_t{3});
    }
    checkBoundaryShowsFile(*w, m_checkpoint);

    // Continue: another 40 steps from the checkpoint's state.
    QCoreApplication::processEvents();
    QCOMPARE(w->trainAction()->text(), QStringLiteral("Continue"));
    w->trainAction()->trigger();
    QVERIFY(waitSnapshot(*w, [](const auto& sn) { return sn.step == 80 && !sn.running; }));
    const std::vector<float> app = exportedParameters(*w, dir, "continued");

    const QString resumed = dir.filePath(QStringLiteral("resumed.safetensors"));
    ENSEMBLE_VERIFY_RUN_OK(
        runCli({QStringLiteral("train"), QStringLiteral("--resume"), m_checkpoint,
                QStringLiteral("--set"), QStringLiteral("training.steps=80"),
                QStringLiteral("--export"), resumed, QStringLiteral("--quiet")}));
    QVERIFY2(sameBitsNonEmpty(app, ensemble::importEnsemble(resumed.toStdString()).params),
             "the app's continuation differs from ensemble-cli train --resume");
}

// File > Save Checkpoint mid-run: the CLI resumes it to the app's own continuation and to the
// straight CLI run, bit for bit; opened again it is at its step; Open Recent lists it.
void TestGuiOpen::savedCheckpointContinuesInTheCliAndReopens() {
    QTemporaryDir dir;
    nlohmann::json config = nlohmann::json::parse(ensemble::presetText("spirals"));
    config["dataset"]["n"] = 300;
    config["ensemble"]["members"] = 3;
    config["ensemble"]["bootstrap"] = "resample";
    config["training"]["steps"] = 20;
    config["training"]["eval_every"] = 10;
    config["backend"]["kind"] = "cpu";
    config["backend"]["threads"] = 1;
    auto w = makeWindow();
    w->loadExperiment(config, QString());
    QVERIFY(waitFresh(*w));
    QVERIFY(w->saveCheckpointAction()->isEnabled());
    QCOMPARE(w->saveCheckpointAction()->shortcut(), QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_S));
    w->trainAction()->trigger();
    QVERIFY(waitSnapshot(*w, [](const auto& s) { return s.step == 20 && !s.running; }));
    const QString saved = dir.filePath(QStringLiteral("app.ckpt.safetensors"));
    QSignalSpy done(w.get(), &MainWindow::checkpointSaved);
    w->saveCheckpoint(saved);
    QVERIFY(done.wait(20000));
    QVERIFY2(done.at(0).at(0).toBool(), qPrintable(done.at(0).at(1).toString()));
    QVERIFY2(w->statusMessage().contains(QStringLiteral("Saved checkpoint at step 20")),
             qPrintable(w->statusMessage()));
    QCOMPARE(w->recentFiles().value(0), QFileInfo(saved).absoluteFilePath());

    QCoreApplication::processEvents();
    w->trainAction()->trigger();  // Continue: to 40
    QVERIFY(waitSnapshot(*w, [](const auto& s) { return s.step == 40 && !s.running; }));
    const std::vector<float> app = exportedParameters(*w, dir, "app40");
    QVERIFY(sameBitsNonEmpty(app, ensemble::importEnsemble(m_export.toStdString()).params));
    const QString resumed = dir.filePath(QStringLiteral("resumed.safetensors"));
    const Run cli = runCli({QStringLiteral("train"), QStringLiteral("--resume"), saved,
                            QStringLiteral("--set"), QStringLiteral("training.steps=40"),
                            QStringLiteral("--export"), resumed, QStringLiteral("--quiet")});
    QVERIFY2(cli.code == 0, qPrintable(describe(cli)));
    QVERIFY2(sameBitsNonEmpty(app, ensemble::importEnsemble(resumed.toStdString()).params),
             qPrintable(describe(cli)));

    // Saved after Continue: the stored config has the run's new length (40, not the 20
    // configured), so the CLI's resume without --set has nothing left to train and its export
    // holds the app's weights; the config replayed from scratch gives them too.
    const QString continued = dir.filePath(QStringLiteral("app40.ckpt.safetensors"));
    done.clear();
    w->saveCheckpoint(continued);
    QVERIFY(done.wait(20000));
    QVERIFY2(done.at(0).at(0).toBool(), qPrintable(done.at(0).at(1).toString()));
    const ensemble::LoadedEnsemble stored = ensemble::importEnsemble(continued.toStdString());
    QCOMPARE(stored.step, int64_t{40});
    QCOMPARE(stored.config.json["training"]["steps"].get<int64_t>(), int64_t{40});
    const QString asStored = dir.filePath(QStringLiteral("as_stored.safetensors"));
    ENSEMBLE_VERIFY_RUN_OK(
        runCli({QStringLiteral("train"), QStringLiteral("--resume"), continued,
                QStringLiteral("--export"), asStored, QStringLiteral("--quiet")}));
    const ensemble::LoadedEnsemble asStoredFile = ensemble::importEnsemble(asStored.toStdString());
    QCOMPARE(asStoredFile.step, int64_t{40});
    QVERIFY(sameBitsNonEmpty(app, asStoredFile.params));
    const QString replayConfig = dir.filePath(QStringLiteral("replay.json"));
    QVERIFY(writeBytes(replayConfig, QByteArray::fromStdString(stored.config.json.dump())));
    const QString replayed = dir.filePath(QStringLiteral("replayed.safetensors"));
    ENSEMBLE_VERIFY_RUN_OK(
        runCli({QStringLiteral("train"), QStringLiteral("--config"), replayConfig,
                QStringLiteral("--export"), replayed, QStringLiteral("--quiet")}));
    QVERIFY(sameBitsNonEmpty(app, ensemble::importEnsemble(replayed.toStdString()).params));

    // Opened again (through Open Recent's path): at step 20 with the curves it was saved with.
    auto again = makeWindow();
    QSignalSpy opened(again.get(), &MainWindow::ensembleOpened);
    QString error;
    // Newest first, the export among them as soon as it was written.
    const auto full = [](const QString& path) { return QFileInfo(path).absoluteFilePath(); };
    QCOMPARE(w->recentFiles().mid(0, 3),
             (QStringList{full(continued), full(dir.filePath(QStringLiteral("app40.safetensors"))),
                          full(saved)}));
    QVERIFY2(again->openFile(w->recentFiles().value(2), &error), qPrintable(error));
    QVERIFY(opened.wait(20000));
    QVERIFY(waitSnapshot(*again, [](const auto& s) { return s.step == 20; }));
    const SnapshotPtr s = again->controller()->snapshot();
    QVERIFY(s->history.size() >= 2);
    QCOMPARE(s->history.front()->step, int64_t{0});
    QCOMPARE(s->history.back()->step, int64_t{20});
    QCOMPARE(again->recentFiles().value(0), QFileInfo(saved).absoluteFilePath());
}

// With the interactive option, closing asks while trained steps are in no checkpoint: Cancel
// keeps the window, Discard closes it; a saved or opened checkpoint, or a run at step 0,
// closes without asking.
// A run without an end (a 2-D preset plays until paused) comes back as one, not as a block of
// the steps it had trained: the checkpoint says so (the metadata "until_paused").
void TestGuiOpen::aRunUntilPausedReopensUntilPaused() {
    QTemporaryDir dir;
    nlohmann::json config = nlohmann::json::parse(ensemble::presetText("spirals"));
    config["dataset"]["n"] = 300;
    config["ensemble"]["members"] = 2;
    config["backend"]["threads"] = 1;
    auto w = makeWindow();
    w->loadExperiment(config, QStringLiteral("spirals"));  // a preset: until paused
    QVERIFY(w->panel()->untilPaused());
    QVERIFY(waitFresh(*w));
    w->controller()->trainTo(12);
    QVERIFY(waitSnapshot(*w, [](const auto& s) { return s.step == 12 && !s.running; }));
    const QString saved = dir.filePath(QStringLiteral("endless.ckpt.safetensors"));
    QSignalSpy done(w.get(), &MainWindow::checkpointSaved);
    w->saveCheckpoint(saved);
    QVERIFY(done.wait(20000));
    QVERIFY2(done.at(0).at(0).toBool(), qPrintable(done.at(0).at(1).toString()));

    auto reopened = makeWindow();
    QSignalSpy opened(reopened.get(), &MainWindow::ensembleOpened);
    QString error;
    QVERIFY2(reopened->openEnsemble(saved, &error), qPrintable(error));
    QVERIFY(opened.wait(20000));
    QVERIFY(waitSnapshot(*reopened, [](const auto& s) { return s.step == 12; }));
    QVERIFY(reopened->controller()->snapshot()->untilPaused);
    QVERIFY(reopened->panel()->untilPaused());
    // Train plays on past the steps it had, as the run did.
    reopened->controller()->trainTo(20);
    QVERIFY(waitSnapshot(*reopened, [](const auto& s) { return s.step == 20 && !s.running; }));
}

void TestGuiOpen::closingAsksToSaveACheckpoint() {
    QTemporaryDir dir;
    MainWindow::Options options;
    options.useSettings = false;
    options.askToSaveCheckpoint = true;
    int asked = 0;
    int looked = 0;  // answerers that have run
    // Answers the question when it shows (a modal box runs its own event loop); one that runs
    // after close() returned finds no question, and says so by leaving `asked` as it was.
    auto answerWith = [&](QMessageBox::StandardButton button) {
        QTimer::singleShot(100, [&asked, &looked, button] {
            ++looked;
            auto* box = qobject_cast<QMessageBox*>(QApplication::activeModalWidget());
            if (box != nullptr && box->objectName() == QStringLiteral("SaveCheckpointQuestion")) {
                ++asked;
                box->button(button)->click();
            }
        });
    };
    auto fresh = std::make_unique<MainWindow>(options);
    fresh->show();
    fresh->loadExperiment(nlohmann::json::parse(ensemble::presetText("spirals")), QString());
    QVERIFY(waitFresh(*fresh));
    answerWith(QMessageBox::Cancel);
    QVERIFY(fresh->close());  // nothing trained: no question
    QTRY_COMPARE(looked, 1);
    QCOMPARE(asked, 0);

    MainWindow w(options);
    w.show();
    nlohmann::json config = nlohmann::json::parse(ensemble::presetText("spirals"));
    config["training"]["steps"] = 5;
    w.loadExperiment(config, QString());
    QVERIFY(waitFresh(w));
    w.trainAction()->trigger();
    QVERIFY(waitSnapshot(w, [](const auto& s) { return s.step == 5 && !s.running; }));
    answerWith(QMessageBox::Cancel);
    QVERIFY(!w.close());
    QCOMPARE(looked, 2);
    QCOMPARE(asked, 1);
    QVERIFY(w.isVisible());

    // Saved as a checkpoint: nothing to ask.
    QSignalSpy saved(&w, &MainWindow::checkpointSaved);
    w.saveCheckpoint(dir.filePath(QStringLiteral("w.safetensors")));
    QVERIFY(saved.wait(20000));
    QVERIFY(saved.at(0).at(0).toBool());
    answerWith(QMessageBox::Cancel);
    QVERIFY(w.close());
    QTRY_COMPARE(looked, 3);
    QCOMPARE(asked, 1);

    // Trained further after it: asked again; Discard closes.
    w.show();
    w.trainAction()->trigger();  // Continue: to 10
    QVERIFY(waitSnapshot(w, [](const auto& s) { return s.step == 10 && !s.running; }));
    answerWith(QMessageBox::Discard);
    QVERIFY(w.close());
    QCOMPARE(asked, 2);
}

void TestGuiOpen::exportsAJob() {
    // File > Export job…: the experiment with the chosen mesh, an mpirun script and a Slurm
    // one, next to each other; the CLI takes the config as it is.
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    auto w = makeWindow();
    QVERIFY(w->findChild<QAction*>(QStringLiteral("ExportJobAction")) != nullptr);
    nlohmann::json config = nlohmann::json::parse(ensemble::presetText("spirals"));
    config["ensemble"]["members"] = 5;
    w->loadExperiment(config, QStringLiteral("spirals"));
    QVERIFY(waitFresh(*w));
    const QString path = dir.filePath(QStringLiteral("job.json"));
    QString error;
    QVERIFY2(w->exportJob(path, 2, 2, &error), qPrintable(error));
    QFile json(path);
    QVERIFY(json.open(QIODevice::ReadOnly));
    const nlohmann::json written = nlohmann::json::parse(json.readAll().toStdString());
    QCOMPARE(written["backend"]["mesh"], (nlohmann::json{{"ensemble", 2}, {"data", 2}}));
    QCOMPARE(written["ensemble"]["members"].get<int>(), 5);
    const QString script = dir.filePath(QStringLiteral("job-mpirun.sh"));
    QFile mpirun(script);
    QVERIFY(mpirun.open(QIODevice::ReadOnly));
    const QByteArray m = mpirun.readAll();
    QVERIFY2(m.startsWith("#!/bin/sh") && m.contains("mpirun -n 4 ") &&
                 m.contains("--config 'job.json'") && m.contains("--export 'job.safetensors'"),
             m.constData());
    QVERIFY(QFileInfo(script).isExecutable());
    QFile sbatch(dir.filePath(QStringLiteral("job.sbatch")));
    QVERIFY(sbatch.open(QIODevice::ReadOnly));
    const QByteArray s = sbatch.readAll();
    QVERIFY2(s.contains("#SBATCH --ntasks=4") && s.contains("#SBATCH --job-name=job") &&
                 s.contains("mpirun -n $SLURM_NTASKS") && s.contains("--config 'job.json'"),
             s.constData());
    // The CLI reads the exported config (in one process it notes the mesh and ignores it).
    ENSEMBLE_VERIFY_RUN_OK(runCli({QStringLiteral("config"), QStringLiteral("--config"), path}));
    // A mesh that cannot train this experiment is refused, naming the key; nothing is written.
    const QString bad = dir.filePath(QStringLiteral("bad.json"));
    QVERIFY(!w->exportJob(bad, 1, 3, &error));  // batch 32 over 3 replicas
    QVERIFY2(error.contains(QStringLiteral("training.batch_size")), qPrintable(error));
    QVERIFY(!w->exportJob(bad, 6, 1, &error));  // 6 ensemble ranks for 5 members
    QVERIFY2(error.contains(QStringLiteral("backend.mesh")), qPrintable(error));
    QVERIFY(!QFile::exists(bad));
}

void TestGuiOpen::unreadableFileKeepsTheCurrentExperiment() {
    QTemporaryDir dir;
    const QString bad = dir.filePath(QStringLiteral("bad.safetensors"));
    QFile f(bad);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write("{\"not\": \"weights\"}");
    f.close();
    auto w = makeWindow();
    w->loadExperiment(nlohmann::json::parse(ensemble::presetText("spirals")), QString());
    QVERIFY(waitFresh(*w));
    const uint64_t run = w->controller()->currentRunId();
    QString error;
    QVERIFY(!w->openEnsemble(bad, &error));
    QVERIFY2(error.contains(QStringLiteral("bad.safetensors")), qPrintable(error));
    QCOMPARE(w->controller()->currentRunId(), run);
    QVERIFY(!w->openFile(dir.filePath(QStringLiteral("missing.safetensors")), &error));
    QVERIFY2(error.contains(QStringLiteral("missing.safetensors")), qPrintable(error));
    QCOMPARE(w->controller()->currentRunId(), run);
}

// An ensemble trained on a CSV file that is gone opens anyway: its config in the panel, its
// members, a banner naming the missing file; it cannot train. A CSV that is there but holds
// other rows is another dataset: refused, and the experiment before it stands.
void TestGuiOpen::missingCsvOpensWithoutData() {
    QTemporaryDir dir;
    const QString csv = dir.filePath(QStringLiteral("points.csv"));
    auto writeCsv = [&](int rows) {
        QFile f(csv);
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write("x0,x1,label\n");
        for (int i = 0; i < rows; ++i) {
            const double x = std::cos(i * 0.7);
            const double y = std::sin(i * 1.3);
            f.write(QStringLiteral("%1,%2,%3\n").arg(x).arg(y).arg(x + y > 0 ? 1 : 0).toUtf8());
        }
    };
    writeCsv(60);
    const QString weights = dir.filePath(QStringLiteral("csv.safetensors"));
    ENSEMBLE_VERIFY_RUN_OK(runCli(
        {QStringLiteral("train"), QStringLiteral("--set"), QStringLiteral("dataset.kind=\"csv\""),
         QStringLiteral("--set"), QStringLiteral("dataset.path=\"%1\"").arg(csv),
         QStringLiteral("--set"), QStringLiteral("ensemble.members=3"), QStringLiteral("--set"),
         QStringLiteral("training.steps=5"), QStringLiteral("--set"),
         QStringLiteral("backend.kind=\"cpu\""), QStringLiteral("--export"), weights,
         QStringLiteral("--quiet")}));

    auto w = makeWindow();
    nlohmann::json config = nlohmann::json::parse(ensemble::presetText("spirals"));
    config["ensemble"]["members"] = 2;
    w->loadExperiment(config, QStringLiteral("spirals"));  // a preset: plays until paused
    QVERIFY(w->panel()->untilPaused());
    QVERIFY(waitFresh(*w));
    const uint64_t run = w->controller()->currentRunId();

    // Other rows in the file: another dataset, refused; the experiment before it stands.
    writeCsv(80);
    QSignalSpy failed(w.get(), &MainWindow::openFailed);
    // The jobs end with the run they ran on: a refused file ends none (the run stays).
    QSignalSpy jobsEnded(w->controller(), &ensemble::ui::EngineController::jobsEnded);
    QString error;
    QVERIFY2(w->openEnsemble(weights, &error), qPrintable(error));
    QVERIFY(failed.wait(20000));
    QCOMPARE(jobsEnded.count(), 0);
    const QString message = failed.at(0).at(0).toString();
    QVERIFY2(message.contains(QStringLiteral("not the one")), qPrintable(message));
    QCOMPARE(w->lastError(), message);
    QCOMPARE(w->controller()->currentRunId(), run);
    QCOMPARE(w->panel()->config()["ensemble"]["members"].get<int>(), 2);
    QVERIFY(w->missingDataMessage().isEmpty());
    w->controller()->trainTo(3);
    QVERIFY(waitSnapshot(
        *w, [&](const auto& s) { return s.run->runId == run && s.step == 3 && s.untilPaused; }));
    w->controller()->pause();

    // The file gone: it opens without data.
    QVERIFY(QFile::remove(csv));
    QSignalSpy opened(w.get(), &MainWindow::ensembleOpened);
    QVERIFY2(w->openEnsemble(weights, &error), qPrintable(error));
    QVERIFY(opened.wait(20000));
    QVERIFY(waitSnapshot(*w, [&](const auto& s) { return s.run->runId != run && s.step == 5; }));
    QCOMPARE(jobsEnded.count(), 1);  // this one stood: a new experiment
    QCOMPARE(jobsEnded.at(0).at(0).toBool(), false);
    const SnapshotPtr s = w->controller()->snapshot();
    QVERIFY2(QString::fromStdString(s->run->missingData).contains(QStringLiteral("points.csv")),
             s->run->missingData.c_str());
    QCOMPARE(s->run->members, 3);
    QCOMPARE(s->run->lr.size(), std::size_t{3});
    QCOMPARE(w->panel()->config()["ensemble"]["members"].get<int>(), 3);
    QCOMPARE(w->panel()->config()["dataset"]["path"].get<std::string>(), csv.toStdString());
    QVERIFY2(w->missingDataMessage().contains(QStringLiteral("points.csv")) &&
                 w->missingDataMessage().contains(QStringLiteral("csv.safetensors")),
             qPrintable(w->missingDataMessage()));
    QVERIFY2(w->statusMessage().contains(QStringLiteral("without its dataset")),
             qPrintable(w->statusMessage()));
    QCoreApplication::processEvents();
    QVERIFY(!w->trainAction()->isEnabled());
    QVERIFY(!w->stepAction()->isEnabled());
    QVERIFY(!w->saveCheckpointAction()->isEnabled());
    for (const QString& view :
         {QStringLiteral("members"), QStringLiteral("curves"), QStringLiteral("calibration")}) {
        QVERIFY(w->setView(view));
        QVERIFY(!w->grab().isNull());  // drawn without data
    }
    // A new experiment (the panel's Reset) leaves the banner.
    w->loadExperiment(config, QString());
    QVERIFY(waitFresh(*w));
    QCoreApplication::processEvents();
    QVERIFY(w->missingDataMessage().isEmpty());
    QVERIFY(w->trainAction()->isEnabled());
}

// A CNN checkpoint whose MNIST folder is missing here: it opens at its step with its stored
// curves and its filters; the banner names the folder and how to get the data.
void TestGuiOpen::missingMnistFolderOpensWithoutData() {
    QTemporaryDir data;
    QVERIFY(ensemble::test::writeIdx(data.path(), "train-images-idx3-ubyte",
                                     "train-labels-idx1-ubyte", 200, 1));
    QVERIFY(ensemble::test::writeIdx(data.path(), "t10k-images-idx3-ubyte",
                                     "t10k-labels-idx1-ubyte", 60, 2));
    QTemporaryDir dir;
    const QString ckpt = dir.filePath(QStringLiteral("cnn.ckpt.safetensors"));
    ENSEMBLE_VERIFY_RUN_OK(
        runCli({QStringLiteral("train"),
                QStringLiteral("--config"),
                QStringLiteral("mnist-cnn"),
                QStringLiteral("--set"),
                QStringLiteral("dataset.path=\"%1\"").arg(data.path()),
                QStringLiteral("--set"),
                QStringLiteral("model.layers=[{\"type\":\"conv\",\"filters\":4,"
                               "\"kernel\":3},{\"type\":\"pool\",\"kind\":\"max\","
                               "\"size\":2},{\"type\":\"dense\",\"units\":16}]"),
                QStringLiteral("--set"),
                QStringLiteral("ensemble.members=2"),
                QStringLiteral("--set"),
                QStringLiteral("training.batch_size=20"),
                QStringLiteral("--set"),
                QStringLiteral("training.epochs=0"),
                QStringLiteral("--set"),
                QStringLiteral("training.steps=10"),
                QStringLiteral("--set"),
                QStringLiteral("training.eval_every=5"),
                QStringLiteral("--set"),
                QStringLiteral("backend.kind=\"cpu\""),
                QStringLiteral("--checkpoint"),
                ckpt,
                QStringLiteral("--quiet")}));
    const QString folder = data.path();
    QVERIFY(data.remove());

    auto w = makeWindow({1400, 900});
    QSignalSpy opened(w.get(), &MainWindow::ensembleOpened);
    QString error;
    QVERIFY2(w->openEnsemble(ckpt, &error), qPrintable(error));
    QVERIFY(opened.wait(20000));
    QVERIFY(waitSnapshot(*w, [](const auto& s) { return s.step == 10; }));
    QCoreApplication::processEvents();
    const SnapshotPtr s = w->controller()->snapshot();
    QVERIFY(!s->run->missingData.empty());
    const QString banner = w->missingDataMessage();
    QVERIFY2(banner.contains(folder) && banner.contains(QStringLiteral("dataset.path")),
             qPrintable(banner));
    // The stored curves (steps 5 and 10) and the filters, bit for bit the file's first layer.
    QCOMPARE(s->history.size(), std::size_t{2});
    QCOMPARE(s->history.back()->step, int64_t{10});
    QCOMPARE(s->history.back()->memberTest.size(), std::size_t{2});
    QVERIFY(s->firstConv != nullptr);
    QCOMPARE(s->firstConv->members, 2);
    QCOMPARE(s->firstConv->layer.out.channels, 4);
    const ensemble::LoadedEnsemble file = ensemble::importEnsemble(ckpt.toStdString());
    QVERIFY(std::memcmp(s->firstConv->weights.data(),
                        file.params.data() + file.layout.layer(0).weightOffset,
                        s->firstConv->weights.size() * sizeof(float)) == 0);
    QVERIFY(w->setView(QStringLiteral("filters")));
    QVERIFY(!w->grab().isNull());
    QVERIFY(!w->setView(QStringLiteral("images")));  // no test images to show
    QVERIFY(!w->trainAction()->isEnabled());
    QCOMPARE(w->panel()->config()["dataset"]["path"].get<std::string>(), folder.toStdString());
}

// ensemble-lab --weights W --screenshot: the file's step, no training, a picture.
void TestGuiOpen::rendersWeightsUnattended() {
    QTemporaryDir dir;
    const QString shot = dir.filePath(QStringLiteral("ckpt.png"));
    const QString lab = QStringLiteral(ENSEMBLE_LAB_PATH);
    const Run r =
        runProgram(lab, {QStringLiteral("--weights"), m_checkpoint, QStringLiteral("--view"),
                         QStringLiteral("members"), QStringLiteral("--window-size"),
                         QStringLiteral("900x600"), QStringLiteral("--screenshot"), shot});
    QVERIFY2(r.code == 0, qPrintable(describe(r)));
    QVERIFY2(r.out.contains(QStringLiteral("step 40, saved")), qPrintable(r.out));
    QCOMPARE(QImage(shot).size(), QSize(900, 600));

    // Training does not go with --weights (exit 2), nor does a file that is not weights (3).
    QCOMPARE(
        runProgram(lab, {QStringLiteral("--weights"), m_checkpoint, QStringLiteral("--train-steps"),
                         QStringLiteral("5"), QStringLiteral("--screenshot"), shot})
            .code,
        2);
    QCOMPARE(runProgram(lab, {dir.filePath(QStringLiteral("none.safetensors")),
                              QStringLiteral("--screenshot"), shot})
                 .code,
             3);
}

// `ensemble-lab --config FILE` refuses what `ensemble-cli train --config FILE` refuses, with the
// engine's message and exit code 2, before a window opens (the form would clamp the values).
void TestGuiOpen::refusesAnInvalidConfigAsTheCliDoes() {
    QTemporaryDir dir;
    const QString lab = QStringLiteral(ENSEMBLE_LAB_PATH);
    const QString path = dir.filePath(QStringLiteral("bad.json"));
    for (const ensemble::test::InvalidConfig& row : ensemble::test::invalidConfigs()) {
        if (row.name != "negative members" && row.name != "unknown dataset kind" &&
            row.name != "misspelled key") {
            continue;  // a process each: the three the walkthrough met stand for the set
        }
        QCOMPARE(ensemble::test::writeText(dir.path(), "bad.json", row.config), path);
        const ensemble::test::Run cli =
            runCli({QStringLiteral("train"), QStringLiteral("--config"), path});
        const ensemble::test::Run app =
            runProgram(lab, {QStringLiteral("--config"), path, QStringLiteral("--screenshot"),
                             dir.filePath(QStringLiteral("never.png"))});
        QVERIFY2(cli.code == 2 && cli.err.contains(QString::fromStdString(row.expected)),
                 qPrintable(describe(cli)));
        QVERIFY2(app.code == 2, qPrintable(describe(app)));
        // The same line after each program's name.
        const QString message = cli.err.section(QStringLiteral(": "), 1, -1).trimmed();
        QVERIFY2(!message.isEmpty() && app.err.contains(message),
                 qPrintable(describe(cli) + QLatin1Char('\n') + describe(app)));
        QVERIFY(!QFile::exists(dir.filePath(QStringLiteral("never.png"))));
    }
}

// A scripted start always ends: --train-steps beyond a run of training.steps=0 (nothing to
// train, so no snapshot would come) saves the picture at step 0 and exits 0, saying why.
void TestGuiOpen::aScriptedRunWithNothingToTrainEnds() {
    QTemporaryDir dir;
    const QString shot = dir.filePath(QStringLiteral("zero.png"));
    const Run r =
        runProgram(QStringLiteral(ENSEMBLE_LAB_PATH),
                   {QStringLiteral("--config"), QStringLiteral("spirals"), QStringLiteral("--set"),
                    QStringLiteral("training.steps=0"), QStringLiteral("--train-steps"),
                    QStringLiteral("1"), QStringLiteral("--screenshot"), shot},
                   ensemble::test::progressWaitMs(60000));
    QVERIFY2(r.code == 0, qPrintable(describe(r)));
    QVERIFY2(r.err.contains(QStringLiteral("the run has 0 steps to train")), qPrintable(r.err));
    QVERIFY(!QImage(shot).isNull());
}

// A learning rate of 0 parses but cannot train: both programs print the engine's warning, the
// same line after their names, and run (exit 0).
void TestGuiOpen::warnsOfAValueThatCannotTrainAsTheCliDoes() {
    QTemporaryDir dir;
    const QString shot = dir.filePath(QStringLiteral("lr0.png"));
    const QStringList config = {QStringLiteral("--config"), QStringLiteral("spirals"),
                                QStringLiteral("--set"), QStringLiteral("optimizer.lr=0")};
    const Run cli = runCli(QStringList{QStringLiteral("config")} + config);
    const Run app = runProgram(QStringLiteral(ENSEMBLE_LAB_PATH),
                               config + QStringList{QStringLiteral("--screenshot"), shot},
                               ensemble::test::progressWaitMs(60000));
    QVERIFY2(cli.code == 0 && app.code == 0,
             qPrintable(describe(cli) + QLatin1Char('\n') + describe(app)));
    const QString line = QStringLiteral("warning: optimizer.lr: 0 cannot train");
    QVERIFY2(cli.err.contains(line), qPrintable(describe(cli)));
    const QString warning = cli.err.mid(cli.err.indexOf(line)).section(QLatin1Char('\n'), 0, 0);
    QVERIFY2(app.err.contains(QStringLiteral("ensemble-lab: ") + warning),
             qPrintable(describe(app)));
    QVERIFY(!QImage(shot).isNull());
}

// Calibration > Compare with…: a second ensemble of the same dataset (K = 5 without bootstrap
// beside K = 3 resampled) measured on the same test rows, both headline rows with their
// difference, its members, its reliability curve; each ensemble's figures equal what
// `ensemble-cli eval` prints for its file. A file of another dataset is refused with both
// values named; a new run on other data removes the comparison.
void TestGuiOpen::comparesASecondEnsembleInCalibration() {
    QTemporaryDir dir;
    const QString other = dir.filePath(QStringLiteral("k5.safetensors"));
    const QString noisy = dir.filePath(QStringLiteral("noisy.safetensors"));
    ENSEMBLE_VERIFY_RUN_OK(runCli(
        trainArgs(120) << QStringLiteral("--set") << QStringLiteral("ensemble.members=5")
                       << QStringLiteral("--set") << QStringLiteral("ensemble.bootstrap=\"none\"")
                       << QStringLiteral("--export") << other));
    ENSEMBLE_VERIFY_RUN_OK(runCli(trainArgs(10)
                                  << QStringLiteral("--set") << QStringLiteral("dataset.noise=0.3")
                                  << QStringLiteral("--export") << noisy));
    const QList<double> ours = evalRow(m_export, QStringLiteral("ensemble"));
    const QList<double> theirs = evalRow(other, QStringLiteral("ensemble"));
    QCOMPARE(ours.size(), 4);  // accuracy nll brier ece
    QCOMPARE(theirs.size(), 4);

    auto w = makeWindow();
    QVERIFY(openAndWait(*w, m_export, 0));
    QVERIFY(w->setView(QStringLiteral("calibration")));
    ensemble::ui::CalibrationView* view = w->calibrationView();
    QVERIFY(view->compareButton()->isVisible());
    QSignalSpy done(w.get(), &MainWindow::comparisonFinished);
    w->compareWith(other);
    QVERIFY(done.wait(30000));
    QVERIFY2(done.at(0).at(0).toBool(), qPrintable(done.at(0).at(1).toString()));
    QVERIFY2(view->comparisonMessage().contains(QStringLiteral("k5.safetensors")),
             qPrintable(view->comparisonMessage()));
    const auto c = view->comparison();
    QVERIFY(c != nullptr);
    QCOMPARE(c->members, 5);
    QCOMPARE(c->step, int64_t{120});
    const double measured[4] = {c->ensembleMetrics.accuracy, c->ensembleMetrics.nll,
                                c->ensembleMetrics.brier, c->ensembleMetrics.ece};
    for (int i = 0; i < 4; ++i) {
        QVERIFY2(std::abs(measured[i] - theirs[i]) < 1e-4,
                 qPrintable(
                     QStringLiteral("%1: app %2, eval %3").arg(i).arg(measured[i]).arg(theirs[i])));
    }
    QVERIFY(!c->reliability.bins.empty());

    // The table: ours, theirs, the difference; the mean members likewise; 3 + 5 members.
    QTableWidget* table = view->table();
    QCOMPARE(table->rowCount(), 3 + 3 + 3 + 5);
    QVERIFY(table->item(0, 0)->text().startsWith(QStringLiteral("ensemble (3 members)")));
    QVERIFY2(table->item(1, 0)->text().contains(QStringLiteral("k5.safetensors: ensemble (5")),
             qPrintable(table->item(1, 0)->text()));
    QVERIFY(table->item(2, 0)->text().contains(QStringLiteral("difference")));
    QVERIFY(table->item(4, 0)->text().contains(QStringLiteral("k5.safetensors: mean member")));
    QVERIFY(table->item(13, 0)->text().startsWith(QStringLiteral("k5.safetensors member #4")));
    // Columns accuracy NLL Brier ECE: each file's row as eval prints it (3 significant
    // digits), the difference as theirs - ours.
    for (int col = 1; col <= 4; ++col) {
        const double scale = col == 1 ? 100.0 : 1.0;
        const double a = ours[col - 1] * scale;
        const double b = theirs[col - 1] * scale;
        // The table rounds to 3 significant digits, eval to 4 decimals.
        const double printed = 5e-5 * scale;
        QVERIFY2(std::abs(cellNumber(table, 0, col) - a) <= 0.006 * std::abs(a) + printed,
                 qPrintable(table->item(0, col)->text()));
        QVERIFY2(std::abs(cellNumber(table, 1, col) - b) <= 0.006 * std::abs(b) + printed,
                 qPrintable(table->item(1, col)->text()));
        const double d = cellNumber(table, 2, col);
        QVERIFY2(std::abs(d - (b - a)) <= 0.006 * std::abs(b - a) + 2 * printed,
                 qPrintable(table->item(2, col)->text()));
    }
    QVERIFY(table->item(2, 1)->text().startsWith(QStringLiteral("+")));  // 120 steps beat 40

    // Another dataset: refused, naming the file and the key; the comparison stays.
    done.clear();
    w->compareWith(noisy);
    QVERIFY(done.wait(30000));
    QVERIFY(!done.at(0).at(0).toBool());
    const QString refused = done.at(0).at(1).toString();
    QVERIFY2(refused.contains(QStringLiteral("noisy.safetensors")) &&
                 refused.contains(QStringLiteral("dataset.noise")) &&
                 refused.contains(QStringLiteral("0.3")),
             qPrintable(refused));
    QCOMPARE(view->comparisonMessage(), refused);
    QCOMPARE(view->comparison(), c);

    // A new run on other data: the comparison goes, and says so.
    nlohmann::json config = nlohmann::json::parse(ensemble::presetText("spirals"));
    config["dataset"]["n"] = 200;
    config["ensemble"]["members"] = 2;
    w->loadExperiment(config, QString());
    QVERIFY(waitFresh(*w));
    QTRY_VERIFY(view->comparison() == nullptr);
    QVERIFY2(view->comparisonMessage().contains(QStringLiteral("removed")),
             qPrintable(view->comparisonMessage()));
    QCOMPARE(table->rowCount(), 2 + 2);
}

QTEST_MAIN(TestGuiOpen)
#include "tst_gui_open.moc"
