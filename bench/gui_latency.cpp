// How long the app takes to let go of a run mid-training: an EngineController destroyed, and a
// MainWindow closed and destroyed, while K members train (the engine thread stops its chunk in
// flight and is joined). tst_gui_controller and tst_gui check that both happen; this measures
// how long they take, which a test cannot bound without failing on a busy machine.
//
// Usage: ensemble-gui-bench [--members K] [--rounds R]
// Prints, per case, one line
//   RESULT case=<controller|window> members=K rounds=R median_ms=... worst_ms=...
// Offscreen unless QT_QPA_PLATFORM says otherwise; never reads or writes the person's settings.
#include <QApplication>
#include <QCoreApplication>
#include <QDeadlineTimer>
#include <QElapsedTimer>
#include <QStandardPaths>
#include <QStringList>

#include <algorithm>
#include <cstdio>
#include <functional>
#include <memory>
#include <vector>

#include "config/config.h"
#include "controller/engine_controller.h"
#include "main_window.h"
#include "sys/allocator.h"

namespace {

using ensemble::ui::EngineController;
using ensemble::ui::MainWindow;

nlohmann::json config(int members) {
    nlohmann::json c = ensemble::loadConfigJson("spirals");
    c["dataset"]["n"] = 300;
    c["ensemble"]["members"] = members;
    c["training"]["steps"] = 50'000'000;  // still training when the run is let go
    c["backend"]["kind"] = "cpu";
    return c;
}

// Handles events until `done` holds; false after `timeoutMs`.
bool waitUntil(const std::function<bool()>& done, int timeoutMs = 120'000) {
    const QDeadlineTimer deadline(timeoutMs);
    while (!done()) {
        if (deadline.hasExpired()) {
            return false;
        }
        QCoreApplication::processEvents(QEventLoop::AllEvents, 10);
    }
    return true;
}

// Mid-run: training, and a few snapshots received since it started.
bool waitMidRun(EngineController& c) {
    if (!waitUntil([&] { return c.isRunning(); })) {
        return false;
    }
    const uint64_t received = c.snapshotsReceived();
    return waitUntil([&] { return c.snapshotsReceived() >= received + 3; });
}

// Milliseconds `letGo` takes, once per round, each on a fresh run from `start`.
template <typename T>
std::vector<double> measure(int rounds, const std::function<std::unique_ptr<T>()>& start,
                            const std::function<EngineController&(T&)>& controller,
                            const std::function<void(std::unique_ptr<T>&)>& letGo) {
    std::vector<double> ms;
    for (int r = 0; r < rounds; ++r) {
        std::unique_ptr<T> owner = start();
        if (!waitMidRun(controller(*owner))) {
            std::fprintf(stderr, "ensemble-gui-bench: the run did not get going\n");
            return {};
        }
        QElapsedTimer timer;
        timer.start();
        letGo(owner);
        ms.push_back(static_cast<double>(timer.nsecsElapsed()) / 1e6);
        QCoreApplication::processEvents();
    }
    return ms;
}

void report(const char* name, int members, std::vector<double> ms) {
    if (ms.empty()) {
        return;
    }
    std::sort(ms.begin(), ms.end());
    const std::size_t n = ms.size();
    const double median = n % 2 == 1 ? ms[n / 2] : 0.5 * (ms[n / 2 - 1] + ms[n / 2]);
    std::printf("RESULT case=%s members=%d rounds=%zu median_ms=%.1f worst_ms=%.1f\n", name,
                members, n, median, ms.back());
    std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
    ensemble::keepFreedMemoryForReuse();  // as ensemble-lab does
    if (qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM")) {
        qputenv("QT_QPA_PLATFORM", "offscreen");
    }
    QApplication app(argc, argv);
    QStandardPaths::setTestModeEnabled(true);
    QApplication::setOrganizationName(QStringLiteral("EnsembleLabBench"));
    int members = 16;
    int rounds = 5;
    const QStringList args = QApplication::arguments();
    for (qsizetype i = 1; i + 1 < args.size(); i += 2) {
        if (args[i] == QStringLiteral("--members")) {
            members = args[i + 1].toInt();
        } else if (args[i] == QStringLiteral("--rounds")) {
            rounds = args[i + 1].toInt();
        } else {
            std::fprintf(stderr, "usage: ensemble-gui-bench [--members K] [--rounds R]\n");
            return 2;
        }
    }
    if (members < 1 || rounds < 1) {
        std::fprintf(stderr,
                     "ensemble-gui-bench: --members and --rounds take whole numbers >= 1\n");
        return 2;
    }

    report("controller", members,
           measure<EngineController>(
               rounds,
               [&] {
                   auto c = std::make_unique<EngineController>();
                   c->configure(config(members));
                   c->start();
                   return c;
               },
               [](EngineController& c) -> EngineController& { return c; },
               [](std::unique_ptr<EngineController>& c) { c.reset(); }));

    report("window", members,
           measure<MainWindow>(
               rounds,
               [&] {
                   MainWindow::Options options;
                   options.useSettings = false;
                   auto w = std::make_unique<MainWindow>(options);
                   w->resize(1200, 800);
                   w->show();
                   w->loadExperiment(config(members), QString());
                   w->controller()->start();
                   return w;
               },
               [](MainWindow& w) -> EngineController& { return *w.controller(); },
               [](std::unique_ptr<MainWindow>& w) {
                   w->close();
                   w.reset();
               }));
    return 0;
}
