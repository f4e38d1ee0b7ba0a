// ensemble-lab: the desktop app.
//   ensemble-lab [--config FILE|PRESET] [--set key=value]... [--train-steps N] [--view NAME]
//                [--active-rounds N] [--compare-methods LIST] [--screenshot OUT.png]
//   ensemble-lab --weights W.safetensors [--view NAME] [--screenshot OUT.png]
//   ensemble-lab FILE.ensemble.json|FILE.json|FILE.safetensors
//   ensemble-lab --restore-recovery [--train-steps N] [--view NAME] [--screenshot OUT.png]
//   ensemble-lab --version
// Any of them with [--autosave-seconds N]: a recovery checkpoint every N seconds of training
// and when training pauses (0: none; default: File > Recovery Checkpoint, 60 s, or none for
// --screenshot). After a crash a plain start (no --config, --set, --train-steps, --weights,
// file or --screenshot) offers to restore the run in a banner; --restore-recovery answers it
// Restore without asking (scripts, tests). SIGTERM and SIGHUP write the recovery checkpoint
// and exit 0, keeping it for the next start; a clean exit removes it.
// With --screenshot it opens, trains N steps, saves a picture of the window and exits (the
// pictures in docs/ are made this way); with --weights it opens a trained ensemble (an export
// or a checkpoint) instead and draws it without training. Without arguments it starts on the
// spirals preset. Exit codes as ensemble-cli's (core/exit_codes.h): 2 a usage or config
// mistake, 3 a file it cannot open, 4 a screenshot it cannot write.
// Over 600 lines because main() still stages the scripted screenshot runs (train, hover,
// compare, active rounds) inline; they belong in a ScreenshotScript class of their own, left for
// a stop that can rebuild and retest the screenshot suites.
#include <QApplication>
#include <QCommandLineParser>
#include <QElapsedTimer>
#include <QFile>
#include <QIcon>
#include <QImage>
#include <QPainter>
#include <QPushButton>
#include <QSaveFile>
#include <QStyleFactory>
#include <QTimer>

#include <sys/resource.h>

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <exception>
#include <functional>
#include <string_view>
#include <vector>

#include "compare/compare.h"
#include "config/config.h"
#include "core/errors.h"
#include "core/exit_codes.h"
#include "main_window.h"
#include "panels/experiment_panel.h"
#include "recovery.h"
#include "sys/allocator.h"
#include "termination_signals.h"
#include "version.h"
#include "view_table.h"
#include "views/active_view.h"
#include "views/boundary_view.h"
#include "views/filters_view.h"
#include "views/images_view.h"
#include "views/methods_view.h"

using ensemble::ExitCode;
using ensemble::exitStatus;
using ensemble::ui::MainWindow;
using ensemble::ui::SnapshotPtr;

namespace {

// The Boundary view's hover read-out at (fx, fy) of its plot, drawn into `image` (a grab of
// the window) where the pointer's tooltip would be: a tooltip is a window of its own, which a
// grab of the main window does not hold.
void drawHoverReadout(MainWindow& window, const QString& where, QImage& image) {
    const QStringList f = where.split(QLatin1Char(','));
    ensemble::ui::BoundaryCanvas* canvas = window.boundaryView()->canvas();
    if (f.size() != 2 || !canvas->isVisible()) {
        return;
    }
    const QRectF plot = canvas->plotRect();
    const QPointF pos(plot.left() + f[0].toDouble() * plot.width(),
                      plot.top() + f[1].toDouble() * plot.height());
    const QString text = canvas->readout(pos);
    if (text.isEmpty()) {
        return;
    }
    const QPointF at = canvas->mapTo(&window, pos.toPoint());
    const double scale = image.devicePixelRatio();
    QPainter p(&image);
    p.scale(scale, scale);
    p.setRenderHint(QPainter::Antialiasing);
    // The pointer: a small crosshair.
    p.setPen(QPen(Qt::black, 1.5));
    p.drawLine(at + QPointF(-7, 0), at + QPointF(7, 0));
    p.drawLine(at + QPointF(0, -7), at + QPointF(0, 7));
    QFont font = window.font();
    p.setFont(font);
    const QRectF bounds =
        p.boundingRect(QRectF(0, 0, 1000, 1000), Qt::AlignLeft | Qt::AlignTop, text);
    QRectF box(at + QPointF(14, 14), bounds.size() + QSizeF(12, 8));
    if (box.right() > window.width()) {
        box.moveRight(at.x() - 14);
    }
    if (box.bottom() > window.height()) {
        box.moveBottom(at.y() - 14);
    }
    p.setPen(QPen(QColor(120, 120, 120), 1));
    p.setBrush(QColor(255, 255, 225));
    p.drawRect(box);
    p.setPen(Qt::black);
    p.drawText(box.adjusted(6, 4, -6, -4), Qt::AlignLeft | Qt::AlignTop, text);
}

// Draws a "7" on the canvas of the view shown, Images or Filters (for screenshots of the live
// prediction and of the feature maps).
void drawDemoDigit(MainWindow& window) {
    ensemble::ui::DigitCanvas* canvas = window.currentViewId() == ensemble::ui::ViewId::Filters
                                            ? window.filtersView()->canvas()
                                            : window.imagesView()->canvas();
    const double s = canvas->width() / 224.0;
    canvas->drawStroke({QPointF(62 * s, 56 * s), QPointF(156 * s, 54 * s), QPointF(150 * s, 70 * s),
                        QPointF(122 * s, 120 * s), QPointF(100 * s, 172 * s)});
    canvas->drawStroke({QPointF(92 * s, 112 * s), QPointF(150 * s, 110 * s)});
}

}  // namespace

int main(int argc, char** argv) {
    ensemble::keepFreedMemoryForReuse();
    // --version and --help answer from a shell without a display (over ssh, in a package's
    // checks): the first before Qt starts, the second on the offscreen platform.
    for (int i = 1; i < argc; ++i) {
        const std::string_view arg = argv[i];
        if (arg == "--version") {
            std::printf("ensemble-lab %s\n", ensemble::versionText());
            return exitStatus(ExitCode::Ok);
        }
        if (arg == "--help" || arg == "-h" || arg == "-?" || arg == "--help-all") {
            qputenv("QT_QPA_PLATFORM", "offscreen");
        }
    }
    QApplication app(argc, argv);
    QApplication::setOrganizationName(QStringLiteral("EnsembleLab"));
    QApplication::setApplicationName(QStringLiteral("EnsembleLab"));
    QApplication::setApplicationVersion(QString::fromUtf8(ensemble::versionText()));
    // The installed desktop entry's id (share/applications/org.ensemblelab.EnsembleLab.desktop):
    // Wayland compositors and task bars match the window to its entry and icon by it.
    QGuiApplication::setDesktopFileName(QStringLiteral("org.ensemblelab.EnsembleLab"));
    QIcon icon = QIcon::fromTheme(QStringLiteral("org.ensemblelab.EnsembleLab"));
    if (icon.isNull()) {
        for (const int size : {48, 128, 256}) {
            icon.addFile(QStringLiteral(":/icons/%1/org.ensemblelab.EnsembleLab.png").arg(size));
        }
    }
    QApplication::setWindowIcon(icon);
    QApplication::setStyle(QStyleFactory::create(QStringLiteral("Fusion")));

    QCommandLineParser parser;
    parser.setApplicationDescription(QStringLiteral(
        "EnsembleLab: train ensembles of small neural networks and watch their uncertainty."));
    parser.addHelpOption();
    // Listed for --help; answered before Qt starts (above). Not addVersionOption(): that
    // prints the application name, "EnsembleLab", where both programs print their own.
    const QCommandLineOption versionOption(QStringLiteral("version"),
                                           QStringLiteral("Print the version and exit."));
    parser.addOption(versionOption);
    const QCommandLineOption configOption(QStringLiteral("config"),
                                          QStringLiteral("Experiment JSON file or preset name."),
                                          QStringLiteral("FILE|PRESET"));
    const QCommandLineOption setOption(QStringLiteral("set"),
                                       QStringLiteral("Override a config key (repeatable)."),
                                       QStringLiteral("key=value"));
    const QCommandLineOption stepsOption(QStringLiteral("train-steps"),
                                         QStringLiteral("Train this many steps, then pause."),
                                         QStringLiteral("N"));
    const QCommandLineOption viewOption(QStringLiteral("view"), ensemble::ui::viewOptionHelp(),
                                        QStringLiteral("NAME"));
    const QCommandLineOption shotOption(
        QStringLiteral("screenshot"),
        QStringLiteral("Save a picture of the window after training, then exit."),
        QStringLiteral("OUT.png"));
    const QCommandLineOption digitOption(QStringLiteral("demo-digit"),
                                         QStringLiteral("Draw a digit on the Images canvas."));
    const QCommandLineOption memberOption(QStringLiteral("member"),
                                          QStringLiteral("Select this member (Boundary, Members)."),
                                          QStringLiteral("K"));
    const QCommandLineOption quantityOption(
        QStringLiteral("quantity"),
        QStringLiteral("Boundary heatmap: probability, total, aleatoric, epistemic, std, "
                       "disagreement."),
        QStringLiteral("NAME"));
    const QCommandLineOption sizeOption(
        QStringLiteral("window-size"),
        QStringLiteral("Window size for --screenshot (default 1440x900), e.g. 900x600."),
        QStringLiteral("WxH"));
    const QCommandLineOption weightsOption(
        QStringLiteral("weights"),
        QStringLiteral("Open a trained ensemble (export or checkpoint) instead of training one."),
        QStringLiteral("W.safetensors"));
    const QCommandLineOption activeRoundsOption(
        QStringLiteral("active-rounds"),
        QStringLiteral("Active learning view: acquire this many rounds (Acquire) before the "
                       "screenshot."),
        QStringLiteral("N"));
    const QCommandLineOption compareOption(
        QStringLiteral("compare-methods"),
        QStringLiteral("Methods view: compare these methods (comma-separated, e.g. "
                       "independent,snapshot) before the screenshot, as Compare does."),
        QStringLiteral("LIST"));
    const QCommandLineOption hoverOption(
        QStringLiteral("hover"),
        QStringLiteral("Boundary: show the pointer's read-out at this point of the plot, as "
                       "fractions of its width and height from the top left (e.g. 0.3,0.4)."),
        QStringLiteral("FX,FY"));
    const QCommandLineOption autosaveOption(
        QStringLiteral("autosave-seconds"),
        QStringLiteral("Write a recovery checkpoint every N seconds of training and when "
                       "training pauses; 0: none (default: File > Recovery Checkpoint, 60)."),
        QStringLiteral("N"));
    const QCommandLineOption restoreOption(
        QStringLiteral("restore-recovery"),
        QStringLiteral("Restore the run a crash left (the banner's Restore, without asking)."));
    parser.addOptions({configOption, setOption, stepsOption, viewOption, shotOption, digitOption,
                       memberOption, quantityOption, sizeOption, weightsOption, hoverOption,
                       activeRoundsOption, compareOption, autosaveOption, restoreOption});
    parser.addPositionalArgument(
        QStringLiteral("file"),
        QStringLiteral("An experiment (.ensemble.json or .json) or a trained ensemble "
                       "(.safetensors) to open."),
        QStringLiteral("[FILE]"));
    parser.process(app);

    // A file named on its own: an ensemble as with --weights, an experiment as with --config.
    QString weights = parser.value(weightsOption);
    QString configSource = parser.value(configOption);
    const QStringList files = parser.positionalArguments();
    if (files.size() > 1) {
        std::fprintf(stderr, "ensemble-lab: open one file at a time\n");
        return exitStatus(ExitCode::Usage);
    }
    if (files.size() == 1) {
        const bool ensembleFile =
            files[0].endsWith(QStringLiteral(".safetensors"), Qt::CaseInsensitive);
        if ((ensembleFile && !weights.isEmpty()) || (!ensembleFile && !configSource.isEmpty())) {
            std::fprintf(stderr, "ensemble-lab: %s and %s both name the file to open\n",
                         qPrintable(files[0]), ensembleFile ? "--weights" : "--config");
            return exitStatus(ExitCode::Usage);
        }
        (ensembleFile ? weights : configSource) = files[0];
    }
    if (!weights.isEmpty() &&
        (!configSource.isEmpty() || parser.isSet(setOption) || parser.isSet(stepsOption))) {
        std::fprintf(stderr,
                     "ensemble-lab: %s is drawn as it was trained, without training: --config, "
                     "--set and --train-steps do not apply to it\n",
                     qPrintable(weights));
        return exitStatus(ExitCode::Usage);
    }

    const bool restore = parser.isSet(restoreOption);
    if (restore && (!weights.isEmpty() || !configSource.isEmpty() || parser.isSet(setOption))) {
        std::fprintf(stderr,
                     "ensemble-lab: --restore-recovery continues the run a crash left: --config, "
                     "--set, --weights and a file do not apply to it\n");
        return exitStatus(ExitCode::Usage);
    }
    bool autosaveOk = true;
    const int autosaveFlag =
        parser.isSet(autosaveOption) ? parser.value(autosaveOption).toInt(&autosaveOk) : -1;
    if (!autosaveOk || (parser.isSet(autosaveOption) && autosaveFlag < 0)) {
        std::fprintf(stderr,
                     "ensemble-lab: --autosave-seconds expects a non-negative integer (0: no "
                     "recovery checkpoints), not '%s'\n",
                     qPrintable(parser.value(autosaveOption)));
        return exitStatus(ExitCode::Usage);
    }

    nlohmann::json config;
    QString preset;
    try {
        const QString source = configSource.isEmpty() ? QStringLiteral("spirals") : configSource;
        std::vector<std::string> assignments;
        for (const QString& assignment : parser.values(setOption)) {
            assignments.push_back(assignment.toStdString());
        }
        const ensemble::ComposedConfig composed =
            ensemble::composeConfig(QFile::encodeName(source).toStdString(), assignments);
        for (const std::string& notice : composed.notices) {
            std::fprintf(stderr, "ensemble-lab: note: %s\n", notice.c_str());
        }
        config = composed.json;
        if (assignments.empty() && !ensemble::presetText(source.toStdString()).empty() &&
            !QFile::exists(source)) {
            preset = source;
        }
    } catch (const std::exception& e) {
        std::fprintf(stderr, "ensemble-lab: %s\n", e.what());
        return exitStatus(ExitCode::Usage);
    }
    bool stepsOk = true;
    const qint64 trainSteps =
        parser.isSet(stepsOption) ? parser.value(stepsOption).toLongLong(&stepsOk) : -1;
    if (!stepsOk || (parser.isSet(stepsOption) && trainSteps < 0)) {
        std::fprintf(stderr, "ensemble-lab: --train-steps expects a non-negative integer\n");
        return exitStatus(ExitCode::Usage);
    }
    const QString view = parser.value(viewOption).toLower();
    if (!view.isEmpty() && !ensemble::ui::viewByKey(view)) {
        std::fprintf(stderr, "ensemble-lab: --view expects one of %s\n",
                     qPrintable(ensemble::ui::viewKeys().join(QStringLiteral(", "))));
        return exitStatus(ExitCode::Usage);
    }
    const QString screenshot = parser.value(shotOption);
    int quantity = -1;
    if (parser.isSet(quantityOption)) {
        for (int q = 0; q < ensemble::ui::kHeatQuantityCount; ++q) {
            if (ensemble::ui::quantityKey(static_cast<ensemble::ui::HeatQuantity>(q)) ==
                parser.value(quantityOption).toLower()) {
                quantity = q;
            }
        }
        if (quantity < 0) {
            std::fprintf(stderr, "ensemble-lab: unknown --quantity %s\n",
                         qPrintable(parser.value(quantityOption)));
            return exitStatus(ExitCode::Usage);
        }
    }
    const int member = parser.isSet(memberOption) ? parser.value(memberOption).toInt() : -1;
    bool roundsOk = true;
    const int activeRounds =
        parser.isSet(activeRoundsOption) ? parser.value(activeRoundsOption).toInt(&roundsOk) : 0;
    if (!roundsOk || activeRounds < 0) {
        std::fprintf(stderr, "ensemble-lab: --active-rounds expects a non-negative integer\n");
        return exitStatus(ExitCode::Usage);
    }
    std::vector<ensemble::EnsembleMethod> compareList;
    if (parser.isSet(compareOption)) {
        try {
            compareList = ensemble::parseMethodList(parser.value(compareOption).toStdString(),
                                                    "--compare-methods");
        } catch (const ensemble::ConfigError& e) {
            std::fprintf(stderr, "ensemble-lab: %s\n", e.what());
            return exitStatus(ExitCode::Usage);
        }
    }

    MainWindow::Options options;
    options.useSettings = screenshot.isEmpty();
    options.askToSaveCheckpoint = screenshot.isEmpty();
    // Screenshots keep nothing unless asked: they are made by the hundred for the docs.
    options.autosaveSeconds =
        autosaveFlag >= 0 ? autosaveFlag
                          : (options.useSettings ? MainWindow::rememberedAutosaveSeconds() : 0);
    // A start that says what to run is scripted: it never offers a crash's run.
    const bool scripted = !screenshot.isEmpty() || !configSource.isEmpty() || !weights.isEmpty() ||
                          parser.isSet(setOption) || parser.isSet(stepsOption);
    MainWindow window(options);
    if (!screenshot.isEmpty()) {
        QSize size(1440, 900);
        if (parser.isSet(sizeOption)) {
            const QStringList wh = parser.value(sizeOption).split(QLatin1Char('x'));
            if (wh.size() == 2 && wh[0].toInt() > 0 && wh[1].toInt() > 0) {
                size = QSize(wh[0].toInt(), wh[1].toInt());
            }
        }
        window.resize(size);
    }
    window.show();

    QElapsedTimer trainClock;
    // How late a 10 ms timer on the GUI thread fires while the engine trains: the GUI's
    // responsiveness, reported with the throughput (bench/gui_throughput.py reads both).
    QTimer lateness;
    lateness.setTimerType(Qt::PreciseTimer);
    lateness.setInterval(10);
    // Per millisecond of lateness, how many ticks: bounded however long the run (10 s and
    // more share the last bin; the worst is kept exactly).
    std::vector<qint64> delayCounts(10'001, 0);
    qint64 worstDelay = 0;
    qint64 ticks = 0;
    qint64 lastTick = 0;
    QObject::connect(&lateness, &QTimer::timeout, [&] {
        const qint64 now = trainClock.elapsed();
        const qint64 delay = std::max<qint64>(0, now - lastTick - 10);
        ++delayCounts[static_cast<std::size_t>(
            std::min<qint64>(delay, static_cast<qint64>(delayCounts.size()) - 1))];
        worstDelay = std::max(worstDelay, delay);
        ++ticks;
        lastTick = now;
    });
    // SIGTERM, SIGHUP (logout, shutdown): keep the run for the next start, then leave the
    // event loop as a clean exit would (exit 0), without the questions closing asks.
    ensemble::ui::TerminationSignals termination;
    bool terminating = false;
    QObject::connect(&termination, &ensemble::ui::TerminationSignals::received, &window,
                     [&](int signal) {
                         if (terminating) {
                             return;  // the first one is being answered
                         }
                         terminating = true;
                         std::fprintf(stderr, "ensemble-lab: %s: ending\n",
                                      signal == SIGHUP ? "SIGHUP" : "SIGTERM");
                         window.flushRecovery();
                     });
    QObject::connect(&window, &MainWindow::recoveryFlushed, &window, [&](qint64 step) {
        if (terminating) {
            if (!window.recoveryPath().isEmpty() && step > 0) {
                std::printf("ensemble-lab: the run is kept at step %lld for the next start\n",
                            static_cast<long long>(step));
                std::fflush(stdout);
            }
            app.exit(exitStatus(ExitCode::Ok));
        }
    });
    // The recovery writes' cost, on the engine thread (bench/budgets.py --autosave reads it
    // beside the GUI timer lateness).
    std::vector<double> recoveryWrites;
    QObject::connect(window.controller(), &ensemble::ui::EngineController::recoveryWritten, &window,
                     [&](const QString&, qint64, double seconds) {
                         recoveryWrites.push_back(seconds * 1000.0);
                     });
    bool started = false;
    bool shotScheduled = false;
    int exitCode = exitStatus(ExitCode::Ok);
    std::function<void()> grabLater;
    auto takeShot = [&] {
        if (!view.isEmpty()) {
            window.setView(view);
        }
        if (member >= 0) {
            window.selectMember(member);
        }
        if (quantity >= 0) {
            window.boundaryView()->setQuantity(static_cast<ensemble::ui::HeatQuantity>(quantity));
        }
        if (parser.isSet(digitOption)) {
            drawDemoDigit(window);
        }
        if (window.currentViewId() == ensemble::ui::ViewId::Methods && !compareList.empty()) {
            // The Methods view: the comparison, as Compare runs it, then the picture.
            auto* waiting = new QObject(&window);
            QObject::connect(window.controller(), &ensemble::ui::EngineController::methodsFinished,
                             waiting, [&, waiting] {
                                 waiting->deleteLater();  // disconnects
                                 grabLater();
                             });
            window.methodsView()->startComparison(compareList);
            return;
        }
        if (window.currentViewId() == ensemble::ui::ViewId::Active) {
            // The Active learning view: its loop's first round, then --active-rounds more
            // acquired as a person would (Acquire), before the picture.
            auto* waiting = new QObject(&window);
            const auto next = [&, waiting] {
                const SnapshotPtr s = window.controller()->snapshot();
                const ensemble::ui::ActiveStatePtr a = window.controller()->activeState();
                ensemble::ui::ActiveView* active = window.activeView();
                if (!s || !a || a->runId != s->run->runId || active->isBusy()) {
                    return;
                }
                if (a->message.isEmpty() && !a->pending &&
                    static_cast<int>(a->rounds.size()) <= activeRounds &&
                    active->acquireButton()->isEnabled()) {
                    active->acquireButton()->click();
                    return;
                }
                if (waiting->property("done").toBool()) {
                    return;
                }
                waiting->setProperty("done", true);
                waiting->deleteLater();  // disconnects
                grabLater();
            };
            QObject::connect(window.controller(), &ensemble::ui::EngineController::activeChanged,
                             waiting, next, Qt::QueuedConnection);
            next();
            return;
        }
        grabLater();
    };
    grabLater = [&] {
        // Let the views draw what they were given (charts lay out on the next event loops).
        QTimer::singleShot(600, &window, [&] {
            QSaveFile out(screenshot);
            QImage image = window.grab().toImage();
            if (parser.isSet(hoverOption)) {
                drawHoverReadout(window, parser.value(hoverOption), image);
            }
            if (!out.open(QIODevice::WriteOnly) || !image.save(&out, "PNG") || !out.commit()) {
                std::fprintf(stderr, "ensemble-lab: cannot write %s: %s\n", qPrintable(screenshot),
                             qPrintable(out.errorString()));
                exitCode = exitStatus(ExitCode::Runtime);
            } else {
                const SnapshotPtr s = window.controller()->snapshot();
                std::printf("ensemble-lab: step %lld, saved %s\n",
                            static_cast<long long>(s ? s->step : 0), qPrintable(screenshot));
            }
            app.exit(exitCode);
        });
    };
    QObject::connect(&window, &MainWindow::snapshotShown, &window, [&] {
        const SnapshotPtr s = window.controller()->snapshot();
        if (!s) {
            return;
        }
        if (!started) {
            started = true;
            if (!s->run->missingData.empty()) {
                // Opened without its data: the picture holds the views that need none.
                std::fprintf(stderr, "ensemble-lab: drawn without its dataset: %s\n",
                             s->run->missingData.c_str());
            }
            if (!view.isEmpty()) {
                window.setView(view);
            }
            if (trainSteps > 0) {
                trainClock.start();
                lastTick = 0;
                lateness.start();
                window.controller()->trainTo(trainSteps);
                return;
            }
        }
        const bool reached =
            trainSteps <= 0 || s->step >= std::min<int64_t>(trainSteps, s->run->totalSteps);
        // Not while the whole test split is being measured: the picture shows its figures.
        if (!screenshot.isEmpty() && !shotScheduled && reached && !s->running && !s->evaluating) {
            shotScheduled = true;
            if (trainClock.isValid() && s->step > 0) {
                // Throughput with the window open, snapshots and drawing included.
                const double seconds = static_cast<double>(trainClock.nsecsElapsed()) * 1e-9;
                std::printf(
                    "ensemble-lab: trained %lld steps in %.2f s: %.1f steps/s, %.0f "
                    "member-steps/s (%s)\n",
                    static_cast<long long>(s->step), seconds, s->step / seconds,
                    s->step * s->run->members / seconds, s->run->backendName.c_str());
            }
            lateness.stop();
            if (ticks > 0) {
                std::size_t median = 0;
                for (qint64 seen = 0; seen + delayCounts[median] <= ticks / 2; ++median) {
                    seen += delayCounts[median];
                }
                // With the process's peak memory: bench/budgets.py --long-runs reads both.
                rusage usage{};
                getrusage(RUSAGE_SELF, &usage);
                std::printf(
                    "ensemble-lab: GUI timer lateness: worst %lld ms, median %zu ms over "
                    "%lld ticks; peak RSS %.1f MiB\n",
                    static_cast<long long>(worstDelay), median, static_cast<long long>(ticks),
                    static_cast<double>(usage.ru_maxrss) / 1024.0);
            }
            if (!recoveryWrites.empty()) {
                std::vector<double> sorted = recoveryWrites;
                std::sort(sorted.begin(), sorted.end());
                std::printf(
                    "ensemble-lab: recovery checkpoints: %zu written, median %.1f ms, worst "
                    "%.1f ms (engine thread)\n",
                    sorted.size(), sorted[sorted.size() / 2], sorted.back());
            }
            takeShot();
        }
    });
    QObject::connect(window.controller(), &ensemble::ui::EngineController::configureFailed, &window,
                     [&](quint64, const QString& message) {
                         if (!screenshot.isEmpty()) {
                             std::fprintf(stderr, "ensemble-lab: %s\n", qPrintable(message));
                             app.exit(exitStatus(ExitCode::BadInput));
                         }
                     });
    if (!weights.isEmpty()) {
        QObject::connect(&window, &MainWindow::openFailed, &window, [&](const QString& message) {
            if (!screenshot.isEmpty()) {
                std::fprintf(stderr, "ensemble-lab: %s\n", qPrintable(message));
                app.exit(exitStatus(ExitCode::BadInput));
            } else {
                window.loadExperiment(config, preset);  // the error box says why; start as usual
            }
        });
        QString error;
        if (!window.openEnsemble(weights, &error)) {
            std::fprintf(stderr, "ensemble-lab: %s\n", qPrintable(error));
            return exitStatus(ExitCode::BadInput);
        }
        return app.exec();
    }
    if (restore) {
        // The banner's Restore, answered from the command line.
        QObject::connect(&window, &MainWindow::recoveryRestored, &window,
                         [&](bool ok, const QString& message) {
                             if (!ok) {
                                 std::fprintf(stderr, "ensemble-lab: cannot restore the run: %s\n",
                                              qPrintable(message));
                                 app.exit(exitStatus(ExitCode::BadInput));
                             }
                         });
        if (!window.offerRecovery()) {
            std::fprintf(stderr, "ensemble-lab: no run to restore: no recovery checkpoint in %s\n",
                         qPrintable(ensemble::ui::RecoveryStore::defaultFolder()));
            return exitStatus(ExitCode::BadInput);
        }
        window.restoreRecovery();
        return app.exec();
    }
    window.loadExperiment(config, preset);
    if (!scripted) {
        window.offerRecovery();  // the run a crash left, if any: a banner, not a question
    }
    if (!window.panel()->isValid() && !screenshot.isEmpty()) {
        // Interactive, the marked fields say what to fix; unattended, say it and stop.
        const auto errors = window.panel()->errors();
        for (auto it = errors.constBegin(); it != errors.constEnd(); ++it) {
            std::fprintf(stderr, "ensemble-lab: %s: %s\n", qPrintable(it.key()),
                         qPrintable(it.value()));
        }
        return exitStatus(ExitCode::Usage);
    }
    return app.exec();
}
