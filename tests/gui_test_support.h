#pragma once

// Helpers shared by the suites that drive the main window (tst_gui, tst_gui_run,
// tst_lab_bench): a window without QSettings, and waits on its snapshots.

#include <QApplication>
#include <QSize>
#include <QStandardPaths>
#include <QtTest>

#include <cstdint>
#include <memory>

#include "main_window.h"

namespace ensemble::test {

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

// Waits until the window's snapshot satisfies `pred`.
template <typename Pred>
bool waitSnapshot(ui::MainWindow& w, Pred pred, int timeoutMs = 20000) {
    return QTest::qWaitFor(
        [&] {
            ui::SnapshotPtr s = w.controller()->snapshot();
            return s && pred(*s);
        },
        timeoutMs);
}

// Waits until the window's current run is at step 0.
inline bool waitFresh(ui::MainWindow& w) {
    const uint64_t id = w.controller()->currentRunId();
    return waitSnapshot(w, [id](const auto& s) { return s.run->runId == id && s.step == 0; });
}

}  // namespace ensemble::test
