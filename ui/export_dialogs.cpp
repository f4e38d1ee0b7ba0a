// FileActions' two export dialogs: Export (the weights' format, remembered between sessions)
// and Export job (the MPI mesh, checked before a file is asked for).
#include <QDialog>
#include <QDialogButtonBox>
#include <QDir>
#include <QFileDialog>
#include <QFileInfo>
#include <QFormLayout>
#include <QLabel>
#include <QMainWindow>
#include <QSettings>
#include <QSpinBox>
#include <QStatusBar>

#include <array>

#include "file_actions.h"
#include "job_files.h"
#include "panels/experiment_panel.h"
#include "run_session.h"

namespace ensemble::ui {

namespace {

constexpr std::array<ExportFormat, 3> kExportFormats = {ExportFormat::Safetensors,
                                                        ExportFormat::Onnx, ExportFormat::Npz};

// The Export dialog's filter for `format` (the three formats of `ensemble-cli export`).
QString exportFilter(ExportFormat format) {
    switch (format) {
        case ExportFormat::Safetensors:
            return FileActions::tr("Weights, safetensors (*.safetensors)");
        case ExportFormat::Onnx:
            return FileActions::tr("Whole ensemble as one ONNX model (*.onnx)");
        case ExportFormat::Npz:
            return FileActions::tr("NumPy arrays (*.npz)");
    }
    return {};
}

const QString kExportFormatKey = QStringLiteral("files/exportFormat");

}  // namespace

ExportFormat FileActions::rememberedExportFormat() {
    const QString name = QSettings().value(kExportFormatKey).toString();
    for (ExportFormat f : kExportFormats) {
        if (name == QLatin1String(exportFormatName(f))) {
            return f;
        }
    }
    return ExportFormat::Safetensors;
}

void FileActions::chooseExportJob() {
    // The mesh first: ranks on the ensemble axis (members split) by the data axis (batches
    // split), as backend.mesh says it. A mesh that cannot train the experiment is refused here,
    // before a file is asked for.
    QDialog dialog(m_window);
    dialog.setObjectName(QStringLiteral("ExportJobDialog"));
    dialog.setWindowTitle(tr("Export job"));
    auto* form = new QFormLayout(&dialog);
    auto* ensemble = new QSpinBox;
    ensemble->setObjectName(QStringLiteral("EnsembleAxis"));
    ensemble->setRange(1, 100000);
    ensemble->setValue(2);
    ensemble->setToolTip(tr("Ranks that hold different members (members split between them)"));
    auto* data = new QSpinBox;
    data->setObjectName(QStringLiteral("DataAxis"));
    data->setRange(1, 4096);
    data->setValue(1);
    data->setToolTip(
        tr("Ranks that hold the same members and split every batch (gradients "
           "averaged); the batch size must be divisible by it"));
    auto* ranks = new QLabel;
    auto* problem = new QLabel;
    problem->setObjectName(QStringLiteral("MeshProblem"));
    problem->setWordWrap(true);
    problem->setStyleSheet(QStringLiteral("color: #b3261e;"));
    problem->setVisible(false);
    const auto showRanks = [&] {
        ranks->setText(tr("%1 MPI ranks").arg(ensemble->value() * data->value()));
        problem->setVisible(false);
    };
    connect(ensemble, &QSpinBox::valueChanged, &dialog, showRanks);
    connect(data, &QSpinBox::valueChanged, &dialog, showRanks);
    showRanks();
    form->addRow(tr("Ensemble axis"), ensemble);
    form->addRow(tr("Data axis"), data);
    form->addRow(QString(), ranks);
    form->addRow(problem);
    auto* buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel);
    connect(buttons, &QDialogButtonBox::accepted, &dialog, [&] {
        try {
            makeJobFiles(m_session->experimentToSave(), ensemble->value(), data->value(), "job");
            dialog.accept();
        } catch (const std::exception& e) {
            problem->setText(QString::fromStdString(e.what()));
            problem->setVisible(true);
        }
    });
    connect(buttons, &QDialogButtonBox::rejected, &dialog, &QDialog::reject);
    form->addRow(buttons);
    if (dialog.exec() != QDialog::Accepted) {
        return;
    }
    QSettings settings;
    const QString dir =
        settings.value(QStringLiteral("files/experiments"), QDir::homePath()).toString();
    const QString name =
        m_panel->presetName().isEmpty() ? QStringLiteral("job") : m_panel->presetName();
    const QString path = QFileDialog::getSaveFileName(
        m_window, tr("Export job: the experiment file (scripts are written next to it)"),
        QDir(dir).filePath(name + QStringLiteral(".json")), tr("Experiments (*.json)"));
    if (path.isEmpty()) {
        return;
    }
    QString error;
    if (!exportJob(path, ensemble->value(), data->value(), &error)) {
        Q_EMIT errorRaised(tr("Could not export the job"), error,
                           tr("Choose a folder you can write to."));
        return;
    }
    QString base = path;
    if (base.endsWith(QStringLiteral(".json"))) {
        base.chop(5);
    }
    Q_EMIT statusRequested(tr("Wrote %1.json, %1-mpirun.sh and %1.sbatch").arg(base), 8000);
}

void FileActions::chooseExport() {
    const SnapshotPtr s = m_controller->snapshot();
    if (!s) {
        return;
    }
    QSettings settings;
    const QString dir =
        settings.value(QStringLiteral("files/exports"), QDir::homePath()).toString();
    const QString suggestion = QStringLiteral("%1-k%2-step%3")
                                   .arg(QString::fromStdString(s->run->datasetName))
                                   .arg(s->run->members)
                                   .arg(s->step);
    // The filter chosen (or the name's extension) picks the format; the last one chosen is
    // offered first. Metrics and the view's picture are written next to the weights either way.
    QStringList filters;
    for (ExportFormat f : kExportFormats) {
        filters << exportFilter(f);
    }
    QFileDialog dialog(m_window, tr("Export ensemble (weights, metrics, view)"),
                       QDir(dir).filePath(suggestion));
    dialog.setObjectName(QStringLiteral("ExportDialog"));
    dialog.setOption(QFileDialog::DontUseNativeDialog);  // the same dialog everywhere (tests)
    dialog.setAcceptMode(QFileDialog::AcceptSave);
    dialog.setNameFilters(filters);
    dialog.selectNameFilter(exportFilter(rememberedExportFormat()));
    if (dialog.exec() != QDialog::Accepted || dialog.selectedFiles().isEmpty()) {
        return;
    }
    QString path = dialog.selectedFiles().constFirst();
    ExportFormat format = ExportFormat::Safetensors;
    for (ExportFormat f : kExportFormats) {
        if (dialog.selectedNameFilter() == exportFilter(f)) {
            format = f;
        }
    }
    for (ExportFormat f : kExportFormats) {
        const QString suffix = QStringLiteral(".") + QLatin1String(exportFormatName(f));
        if (path.endsWith(suffix, Qt::CaseInsensitive)) {
            path.chop(suffix.size());
            format = f;
        }
    }
    settings.setValue(QStringLiteral("files/exports"), QFileInfo(path).path());
    settings.setValue(kExportFormatKey, QLatin1String(exportFormatName(format)));
    exportTo(path, format);
}

}  // namespace ensemble::ui
