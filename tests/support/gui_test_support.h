#pragma once

// Helpers shared by the suites that drive the main window or its engine controller (tst_gui,
// tst_gui_run, tst_lab_bench, tst_gui_controller, ...): the small run they train, a window
// without QSettings, waits on snapshots, and a check that the engine thread stopped training
// that needs no sleep.

#include <QApplication>
#include <QFile>
#include <QList>
#include <QSignalSpy>
#include <QSize>
#include <QSpinBox>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QTimer>
#include <QWheelEvent>
#include <QtTest>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <vector>

#include "config/config.h"
#include "io/model_io.h"
#include "main_window.h"
#include "panels/experiment_panel.h"
#include "runs/run_store.h"
#include "support/test_support.h"

namespace ensemble::test {

// Longer than any test waits: a run that must still be going when the test looks.
constexpr int64_t kLongRun = 50'000'000;

// What the window suites vary in their small run; the rest is the spirals preset's. Named at
// the call: smallConfig({.members = 3, .steps = 60, .threads = 1}).
struct SmallRun {
    int members = 4;
    int64_t steps = kLongRun;
    int threads = 0;                 // 0: the preset's (every core)
    const char* bootstrap = "none";  // the preset's
    uint64_t seed = 0;               // the preset's
    int points = 300;                // dataset.n
};

// A small, fast run of the window suites: the spirals preset, 300 points, on the CPU backend.
inline nlohmann::json smallConfig(const SmallRun& run = {}) {
    nlohmann::json c = loadConfigJson("spirals");
    c["dataset"]["n"] = run.points;
    c["ensemble"]["members"] = run.members;
    c["ensemble"]["bootstrap"] = run.bootstrap;
    c["ensemble"]["seed"] = run.seed;
    c["training"]["steps"] = run.steps;
    c["backend"]["kind"] = "cpu";
    if (run.threads > 0) {
        c["backend"]["threads"] = run.threads;
    }
    return c;
}

// QStandardPaths and QSettings in test mode, under a test organisation: a suite never touches
// the person's settings or folders. Call from initTestCase().
inline void isolateSettings() {
    QStandardPaths::setTestModeEnabled(true);
    QApplication::setOrganizationName(QStringLiteral("EnsembleLabTest"));
}

// A shown window that neither reads nor writes the person's QSettings.
inline std::unique_ptr<ui::MainWindow> makeWindow(QSize size = {1200, 800}) {
    ui::MainWindow::Options options;
    options.useSettings = false;
    auto w = std::make_unique<ui::MainWindow>(options);
    w->resize(size);
    w->show();
    return w;
}

// Gives the focus to the first visible, enabled spin box of the Experiment panel (the window
// active) and returns it; null when none took it.
inline QWidget* focusAPanelField(ui::MainWindow& w) {
    for (QSpinBox* field : w.panel()->findChildren<QSpinBox*>()) {
        if (field->isVisibleTo(&w) && field->isEnabled()) {
            field->setFocus();
            return QApplication::focusWidget() == field ? field : nullptr;
        }
    }
    return nullptr;
}

// Waits until the controller's latest snapshot satisfies `pred`; `timeoutMs` is for a Release
// build and scales as progressWaitMs() does.
template <typename Pred>
bool waitSnapshot(ui::EngineController& c, Pred pred, int timeoutMs = 20000) {
    return QTest::qWaitFor(
        [&] {
            ui::SnapshotPtr s = c.snapshot();
            return s && pred(*s);
        },
        progressWaitMs(timeoutMs));
}

// Waits until the window's snapshot satisfies `pred`.
template <typename Pred>
bool waitSnapshot(ui::MainWindow& w, Pred pred, int timeoutMs = 20000) {
    return waitSnapshot(*w.controller(), pred, timeoutMs);
}

// The members' log-probabilities at one input point (2-D data), as the engine thread computes
// them between its training chunks. Empty when no answer came.
inline QList<float> predictionAt(ui::EngineController& c, float x = 0.3f, float y = -0.2f) {
    static uint64_t next = uint64_t{1} << 40;  // ids apart from the ones the views ask with
    const uint64_t id = ++next;
    QList<float> answer;
    QObject context;
    QObject::connect(&c, &ui::EngineController::predictionReady, &context,
                     [&](quint64 got, const QList<float>& logProbs, int, int) {
                         if (got == id) {
                             answer = logProbs;
                         }
                     });
    c.predict(id, {x, y});
    if (!QTest::qWaitFor([&] { return !answer.isEmpty(); }, 20000)) {
        return {};
    }
    return answer;
}

// A small 2-D classification CSV (60 points, labels by x + y > 0) at `path`, for runs whose
// data can be taken away afterwards. False when the file cannot be written.
inline bool writePlanarCsv(const QString& path) {
    QFile f(path);
    if (!f.open(QIODevice::WriteOnly)) {
        return false;
    }
    f.write("x0,x1,label\n");
    for (int i = 0; i < 60; ++i) {
        const double x = std::cos(i * 0.7);
        const double y = std::sin(i * 1.3);
        f.write(QStringLiteral("%1,%2,%3\n").arg(x).arg(y).arg(x + y > 0 ? 1 : 0).toUtf8());
    }
    return true;
}

// Whether the engine thread trains no more: it answers twice with the same weights. While it
// trains, a chunk is always queued on that thread, so one runs between the two answers (the
// second question is asked after the first answer) and moves the weights. No wall-clock wait:
// "nothing happened" is proved by a round trip, not by sleeping.
inline bool engineIdle(ui::EngineController& c) {
    const QList<float> first = predictionAt(c);
    const QList<float> second = predictionAt(c);
    return !first.isEmpty() && first == second;
}

// The weights the window holds, through its export to <dir>/<name>.safetensors; empty when the
// export failed.
inline std::vector<float> exportedParameters(ui::MainWindow& w, const QTemporaryDir& dir,
                                             const char* name) {
    QSignalSpy done(&w, &ui::MainWindow::exportFinished);
    const QString base = dir.filePath(QString::fromLatin1(name));
    w.exportTo(base);
    if (!done.wait(20000) || !done.at(0).at(0).toBool()) {
        return {};
    }
    return importEnsemble((base + QStringLiteral(".safetensors")).toStdString()).params;
}

// A wheel turn of `delta` (120 a notch, > 0 away from the user) over `target` at `pos`.
inline void wheelAt(QWidget* target, QPointF pos, int delta) {
    QWheelEvent event(pos, target->mapToGlobal(pos), QPoint(), QPoint(0, delta), Qt::NoButton,
                      Qt::NoModifier, Qt::NoScrollPhase, false);
    QApplication::sendEvent(target, &event);
}

// Waits until the window's current run is at step 0.
// Answers the next modal dialog named `name` (a QMessageBox's objectName) with `act`, from the
// event loop the dialog runs; `seen` counts the answers. Looks for 10 s, then gives up.
inline void whenModal(const QString& name, std::function<void(QWidget*)> act, int* seen) {
    auto* timer = new QTimer;
    timer->setInterval(20);
    auto tries = std::make_shared<int>(0);
    QObject::connect(timer, &QTimer::timeout, [=] {
        QWidget* modal = QApplication::activeModalWidget();
        if (modal != nullptr && modal->objectName() == name) {
            timer->stop();
            timer->deleteLater();
            ++*seen;
            act(modal);
        } else if (++*tries > 500) {  // 10 s: nothing showed
            timer->stop();
            timer->deleteLater();
        }
    });
    timer->start();
}

inline bool waitFresh(ui::MainWindow& w, int timeoutMs = 20000) {
    const uint64_t id = w.controller()->currentRunId();
    return waitSnapshot(
        w, [id](const auto& s) { return s.run->runId == id && s.step == 0; }, timeoutMs);
}

// Points ENSEMBLE_RUNS_DB at `store` while it lives (the suite's own store before and after):
// the windows made meanwhile record their runs there.
struct ScopedRunStore {
    explicit ScopedRunStore(const QString& store)
        : before(qgetenv(ensemble::runs::kRunsDbVariable)) {
        qputenv(ensemble::runs::kRunsDbVariable, store.toUtf8());
    }
    ~ScopedRunStore() { qputenv(ensemble::runs::kRunsDbVariable, before); }
    ScopedRunStore(const ScopedRunStore&) = delete;
    ScopedRunStore& operator=(const ScopedRunStore&) = delete;
    QByteArray before;
};

}  // namespace ensemble::test
