#include "runs_open.h"

#include <QCoreApplication>
#include <QFileInfo>

#include <exception>

#include "config/config.h"
#include "main_window.h"
#include "run_session.h"
#include "view_tabs.h"
#include "views/runs_view.h"

namespace ensemble::ui {

namespace {

QString runsOpenTr(const char* text) {
    return QCoreApplication::translate("ensemble::ui::RunsOpen", text);
}

}  // namespace

void connectRunsOpen(MainWindow* window) {
    auto* view = window->viewTabs()->viewAs<RunsView>(ViewId::Runs);
    // The Record switch is the window's setting (RunSession::recordsRuns), applied from the
    // next run.
    view->setRecording(RunSession::recordsRuns());
    QObject::connect(view, &RunsView::recordingToggled, window, [window](bool on) {
        RunSession::setRecordsRuns(on);
        window->session()->applyRunRecording();
        window->showStatus(on ? runsOpenTr("The window records its next runs in the runs store")
                              : runsOpenTr("The window's next runs are not recorded"),
                           5000);
    });
    QObject::connect(
        view, &RunsView::openRequested, window,
        [window](const QString& configJson, const QString& weightsPath) {
            QString error;
            if (!weightsPath.isEmpty()) {
                if (window->openFile(weightsPath, &error)) {
                    return;
                }
                window->showStatus(runsOpenTr("%1 could not be opened (%2): its run's config is "
                                              "loaded instead")
                                       .arg(QFileInfo(weightsPath).fileName(), error),
                                   10000);
            }
            try {
                const nlohmann::json config = nlohmann::json::parse(configJson.toStdString());
                (void)parseConfig(config);  // as Open checks a file: whole first
                window->session()->loadExperimentAsking(config, runsOpenTr("the run's config"));
            } catch (const std::exception& e) {
                window->showStatus(runsOpenTr("The run's config cannot be opened: %1")
                                       .arg(QString::fromUtf8(e.what())),
                                   10000);
            }
        });
}

}  // namespace ensemble::ui
