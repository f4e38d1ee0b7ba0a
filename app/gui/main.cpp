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
// The scripted start (the view, training to --train-steps, and with --screenshot the stage and
// the picture) is ScreenshotScript; main() parses the command line and opens what it names.
#include <QApplication>
#include <QCommandLineParser>
#include <QFile>
#include <QIcon>
#include <QSize>
#include <QStyleFactory>

#include <csignal>
#include <cstdio>
#include <exception>
#include <memory>
#include <optional>
#include <string_view>
#include <vector>

#include "compare/compare.h"
#include "config/config.h"
#include "core/errors.h"
#include "core/exit_codes.h"
#include "main_window.h"
#include "panels/experiment_panel.h"
#include "recovery.h"
#include "screenshot_script.h"
#include "sys/allocator.h"
#include "termination_signals.h"
#include "version.h"
#include "view_table.h"

using ensemble::ExitCode;
using ensemble::exitStatus;
using ensemble::ui::MainWindow;

namespace {

// What the command line asks for, checked.
struct LabCommand {
    QString weights;       // an ensemble to open instead of training one
    QString configSource;  // --config or an experiment file; empty: the spirals preset
    bool restore = false;  // --restore-recovery
    // A start that says what to run is scripted: it never offers a crash's run.
    bool scripted = false;
    int autosaveFlag = -1;  // --autosave-seconds; -1: not given
    QSize windowSize{1440, 900};
    nlohmann::json config;  // the composed experiment
    QString preset;         // its preset's name when it is one, unchanged
    ScreenshotScript::Options script;
};

void setUpApplication() {
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
}

// Reads and checks the command line into `command`; the exit status of a usage mistake (said
// on stderr), or nothing when the app goes on.
std::optional<int> parseCommandLine(const QApplication& app, LabCommand& command) {
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
        // The engine's validation, as ensemble-cli's: the same message and exit code for a
        // config either program refuses (the panel's fields would clamp what it refuses).
        (void)ensemble::parseConfig(composed);
        for (const ensemble::ConfigWarning& warning : ensemble::configWarnings(composed.json)) {
            std::fprintf(stderr, "ensemble-lab: warning: %s\n", warning.text().c_str());
        }
        config = composed.json;
        if (assignments.empty() && !ensemble::presetText(source.toStdString()).empty() &&
            !QFile::exists(source)) {
            preset = source;
        }
    } catch (const std::exception& e) {
        std::fprintf(stderr, "ensemble-lab: %s\n", e.what());
        return exitStatus(ensemble::exitCodeFor(e));
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
    command.weights = weights;
    command.configSource = configSource;
    command.restore = restore;
    command.autosaveFlag = autosaveFlag;
    command.config = config;
    command.preset = preset;
    command.scripted = !screenshot.isEmpty() || !configSource.isEmpty() || !weights.isEmpty() ||
                       parser.isSet(setOption) || parser.isSet(stepsOption);
    if (parser.isSet(sizeOption)) {
        const QStringList wh = parser.value(sizeOption).split(QLatin1Char('x'));
        if (wh.size() == 2 && wh[0].toInt() > 0 && wh[1].toInt() > 0) {
            command.windowSize = QSize(wh[0].toInt(), wh[1].toInt());
        }
    }
    ScreenshotScript::Options& script = command.script;
    script.screenshot = screenshot;
    script.view = view;
    script.trainSteps = trainSteps;
    script.member = member;
    script.quantity = quantity;
    script.demoDigit = parser.isSet(digitOption);
    if (parser.isSet(hoverOption)) {
        script.hover = parser.value(hoverOption);
    }
    script.activeRounds = activeRounds;
    script.compareMethods = compareList;
    return std::nullopt;
}

// SIGTERM, SIGHUP (logout, shutdown): keep the run for the next start, then leave the event
// loop as a clean exit would (exit 0), without the questions closing asks.
void endOnTerminationSignals(QApplication& app, MainWindow& window,
                             ensemble::ui::TerminationSignals& termination) {
    const auto terminating = std::make_shared<bool>(false);
    QObject::connect(&termination, &ensemble::ui::TerminationSignals::received, &window,
                     [&window, terminating](int signal) {
                         if (*terminating) {
                             return;  // the first one is being answered
                         }
                         *terminating = true;
                         std::fprintf(stderr, "ensemble-lab: %s: ending\n",
                                      signal == SIGHUP ? "SIGHUP" : "SIGTERM");
                         window.flushRecovery();
                     });
    QObject::connect(&window, &MainWindow::recoveryFlushed, &window,
                     [&app, &window, terminating](qint64 step) {
                         if (*terminating) {
                             if (!window.recoveryPath().isEmpty() && step > 0) {
                                 std::printf(
                                     "ensemble-lab: the run is kept at step %lld for the next "
                                     "start\n",
                                     static_cast<long long>(step));
                                 std::fflush(stdout);
                             }
                             app.exit(exitStatus(ExitCode::Ok));
                         }
                     });
}

// A trained ensemble, drawn without training.
int openWeights(QApplication& app, MainWindow& window, const LabCommand& command) {
    const bool unattended = !command.script.screenshot.isEmpty();
    QObject::connect(&window, &MainWindow::openFailed, &window,
                     [&app, &window, &command, unattended](const QString& message) {
                         if (unattended) {
                             std::fprintf(stderr, "ensemble-lab: %s\n", qPrintable(message));
                             app.exit(exitStatus(ExitCode::BadInput));
                         } else {
                             // The error box says why; start as usual.
                             window.loadExperiment(command.config, command.preset);
                         }
                     });
    QString error;
    if (!window.openEnsemble(command.weights, &error)) {
        std::fprintf(stderr, "ensemble-lab: %s\n", qPrintable(error));
        return exitStatus(ExitCode::BadInput);
    }
    return app.exec();
}

// The banner's Restore, answered from the command line.
int restoreRecovery(QApplication& app, MainWindow& window) {
    QObject::connect(&window, &MainWindow::recoveryRestored, &window,
                     [&app](bool ok, const QString& message) {
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

// The experiment the command line composed (the spirals preset by default).
int startExperiment(QApplication& app, MainWindow& window, const LabCommand& command) {
    window.loadExperiment(command.config, command.preset);
    if (!command.scripted) {
        window.offerRecovery();  // the run a crash left, if any: a banner, not a question
    }
    if (!window.panel()->isValid() && !command.script.screenshot.isEmpty()) {
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
    setUpApplication();
    LabCommand command;
    if (const std::optional<int> status = parseCommandLine(app, command)) {
        return *status;
    }

    const bool unattended = !command.script.screenshot.isEmpty();
    MainWindow::Options options;
    options.useSettings = !unattended;
    options.askToSaveCheckpoint = !unattended;
    options.askBeforeLargeRuns = !unattended;
    // Screenshots keep nothing unless asked: they are made by the hundred for the docs.
    options.autosaveSeconds =
        command.autosaveFlag >= 0
            ? command.autosaveFlag
            : (options.useSettings ? MainWindow::rememberedAutosaveSeconds() : 0);
    MainWindow window(options);
    if (unattended) {
        window.resize(command.windowSize);
    }
    window.show();

    ScreenshotScript script(window, command.script);
    ensemble::ui::TerminationSignals termination;
    endOnTerminationSignals(app, window, termination);
    if (!command.weights.isEmpty()) {
        return openWeights(app, window, command);
    }
    if (command.restore) {
        return restoreRecovery(app, window);
    }
    return startExperiment(app, window, command);
}
