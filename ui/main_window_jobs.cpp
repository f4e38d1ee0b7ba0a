// The window's part in the jobs it runs beside training (EngineController's EngineJobs and
// active learning): the views that run one wired to the controller both ways, the one rule for
// what a new run does to them handed to every such view, and the file choosers the jobs'
// results are compared with, exported or saved through. Apart from main_window.cpp, which
// wires the rest once.
#include "main_window.h"

#include <QComboBox>
#include <QDir>
#include <QFileDialog>
#include <QFileInfo>
#include <QSettings>

#include "controller/engine_controller.h"
#include "panels/experiment_panel.h"
#include "runs_open.h"
#include "view_tabs.h"
#include "views/active_view.h"
#include "views/calibration_view.h"
#include "views/methods_view.h"
#include "views/reproduce_view.h"
#include "views/shift_view.h"

namespace ensemble::ui {

void MainWindow::connectJobs() {
    connectRunsOpen(this);  // the Runs view's "Open as experiment"
    connect(calibrationView(), &CalibrationView::compareRequested, this,
            &MainWindow::chooseCompare);
    connect(calibrationView(), &CalibrationView::cancelComparisonRequested, m_controller.get(),
            &EngineController::cancelComparison);
    connect(m_controller.get(), &EngineController::comparisonMeasured, this,
            [this](const ComparisonResult& result) {
                CalibrationView* view = calibrationView();
                view->finishComparison(result);
                Q_EMIT comparisonFinished(result.comparison != nullptr, view->comparisonMessage());
            });
    // The one rule for jobs when a run is replaced (EngineController::endJobs): each view
    // that runs one hears it once, here.
    connect(m_controller.get(), &EngineController::jobsEnded, this, [this](bool sameExperiment) {
        calibrationView()->endJob();
        shiftView()->endJob(sameExperiment);
        methodsView()->endJob(sameExperiment);
        activeView()->endJob();
        m_tabs->viewAs<ReproduceView>(ViewId::Reproduce)->endJob();
    });
    connect(m_controller.get(), &EngineController::runWaitsForJob, this,
            [this](const QString& what) {
                showStatus(tr("Training waits while %1 runs on the engine thread").arg(what), 8000);
            });
    ShiftView* shift = shiftView();
    connect(shift, &ShiftView::shiftRequested, m_controller.get(), &EngineController::runShift);
    connect(shift, &ShiftView::cancelRequested, m_controller.get(), &EngineController::cancelShift);
    connect(shift, &ShiftView::exportRequested, this, [this] {
        exportToChosenFolder(tr("Export the shift's figures and data to a folder"),
                             [this](const QString& dir, QStringList* written, QString* error) {
                                 return shiftView()->exportTo(dir, written, error);
                             });
    });
    connect(m_controller.get(), &EngineController::shiftProgress, shift, &ShiftView::setProgress);
    connect(m_controller.get(), &EngineController::shiftFinished, shift, &ShiftView::setOutcome);
    EngineController* c = m_controller.get();
    MethodsView* methods = methodsView();
    connect(methods, &MethodsView::compareRequested, c, &EngineController::compareMethods);
    connect(methods, &MethodsView::cancelRequested, c, &EngineController::cancelMethods);
    connect(methods, &MethodsView::saveRequested, this, &MainWindow::chooseMethodsReport);
    connect(c, &EngineController::methodsProgress, methods, &MethodsView::setProgress);
    connect(c, &EngineController::methodsFinished, methods, &MethodsView::setOutcome);
    // The Reproduce view: its job on the controller, Export… through a folder chooser.
    auto* reproduce = m_tabs->viewAs<ReproduceView>(ViewId::Reproduce);
    connect(reproduce, &ReproduceView::runRequested, c, &EngineController::runReproduction);
    connect(reproduce, &ReproduceView::cancelRequested, c, &EngineController::cancelReproduction);
    connect(c, &EngineController::reproduceProgress, reproduce, &ReproduceView::setProgress);
    connect(c, &EngineController::reproduceFinished, reproduce, &ReproduceView::setOutcome);
    connect(reproduce, &ReproduceView::exportRequested, this, [this, reproduce] {
        exportToChosenFolder(tr("Export the reproduction's report and CSV files to a folder"),
                             [reproduce](const QString& dir, QStringList* written, QString* error) {
                                 return reproduce->exportTo(dir, written, error);
                             });
    });
    ActiveView* active = activeView();
    // The loop reads the panel's active section (its edits need no new run) and the view's
    // acquisition, which the panel's active.acquisition then shows, so Save and Copy as
    // Command replay the loop.
    connect(active, &ActiveView::startRequested, this, [this, c](Acquisition acquisition) {
        nlohmann::json section = nullptr;
        if (m_panel->isValid()) {
            section = m_panel->config().value("active", nlohmann::json());
            if (section.is_object()) {
                section["acquisition"] = toString(acquisition);
            }
        }
        if (auto* box =
                qobject_cast<QComboBox*>(m_panel->editor(QStringLiteral("active.acquisition")))) {
            const int index = box->findData(QLatin1String(toString(acquisition)));
            if (index >= 0 && index != box->currentIndex()) {
                box->setCurrentIndex(index);  // an edit of the panel, as if chosen there
            }
        }
        c->activeStart(acquisition, section);
    });
    connect(active, &ActiveView::acquireRequested, c, &EngineController::activeAcquire);
    connect(active, &ActiveView::labelRequested, c,
            [c](qint64 row) { c->activeLabel(static_cast<int64_t>(row)); });
    connect(active, &ActiveView::paceChanged, c, [c](int pauseMs, qint64 stopAt) {
        c->activeSetPace(pauseMs, static_cast<int64_t>(stopAt));
    });
    connect(active, &ActiveView::playRequested, c, &EngineController::activePlay);
    connect(active, &ActiveView::pauseRequested, c, &EngineController::activePause);
    connect(active, &ActiveView::cancelRequested, c, &EngineController::activeCancel);
    connect(c, &EngineController::activeProgress, active, &ActiveView::setProgress);
    connect(c, &EngineController::activeChanged, active, &ActiveView::setState);
    connect(c, &EngineController::activeRestoring, active, &ActiveView::expectRestore);
}

void MainWindow::chooseCompare() {
    QSettings settings;
    const QString dir =
        settings.value(QStringLiteral("files/exports"), QDir::homePath()).toString();
    const QString path =
        QFileDialog::getOpenFileName(this, tr("Compare with a trained ensemble"), dir,
                                     tr("Trained ensembles (*.safetensors);;All files (*)"));
    if (!path.isEmpty()) {
        compareWith(path);
    }
}

void MainWindow::compareWith(const QString& path) {
    CalibrationView* view = calibrationView();
    if (view->isComparing()) {
        return;  // one at a time: the button is disabled meanwhile
    }
    if (!m_controller->compareWith(path)) {
        const QString message = tr("There is no run to compare with yet.");
        view->setComparisonMessage(message, true);
        Q_EMIT comparisonFinished(false, message);
        return;
    }
    view->startComparison(QFileInfo(path).fileName());
}

void MainWindow::exportToChosenFolder(const QString& title, const FolderExport& write) {
    QSettings settings;
    const QString dir = QFileDialog::getExistingDirectory(
        this, title, settings.value(QStringLiteral("files/exports"), QDir::homePath()).toString());
    if (dir.isEmpty()) {
        return;
    }
    settings.setValue(QStringLiteral("files/exports"), dir);
    QStringList written;
    QString error;
    if (write(dir, &written, &error)) {
        showStatus(tr("Exported %1 files to %2").arg(written.size()).arg(dir), 8000);
    } else {
        showError(tr("Export failed"), error,
                  tr("Nothing was written. Choose a folder that exists and that you can write "
                     "to, and export again."));
    }
}

void MainWindow::chooseMethodsReport() {
    QSettings settings;
    const QString dir =
        settings.value(QStringLiteral("files/exports"), QDir::homePath()).toString();
    const SnapshotPtr s = m_controller->snapshot();
    const QString name =
        s ? QStringLiteral("%1-compare.json").arg(QString::fromStdString(s->run->datasetName))
          : QStringLiteral("compare.json");
    const QString path = QFileDialog::getSaveFileName(
        this, tr("Save the methods' comparison"), QDir(dir).filePath(name),
        tr("Report, as ensemble-cli compare --report (*.json);;Table (*.csv)"));
    if (path.isEmpty()) {
        return;
    }
    settings.setValue(QStringLiteral("files/exports"), QFileInfo(path).path());
    QString error;
    if (methodsView()->saveReport(path, &error)) {
        showStatus(tr("Saved the comparison to %1").arg(path), 8000);
    } else {
        showError(tr("Could not save the comparison"), error,
                  tr("Nothing was written. Choose a folder that exists and that you can write "
                     "to, and save again."));
    }
}

}  // namespace ensemble::ui
