// The Dataset section of the Experiment panel: the dataset's rows, the file chooser, Regenerate,
// and the task with the likelihood that goes with it.

#include <QComboBox>
#include <QFileDialog>
#include <QFileInfo>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLineEdit>
#include <QPushButton>
#include <QSettings>
#include <QSpinBox>
#include <QToolButton>

#include "panels/experiment_panel.h"
#include "panels/form_binding.h"
#include "panels/panel_kinds.h"

namespace ensemble::ui {

using nlohmann::json;

void ExperimentPanel::buildDatasetSection(QFormLayout* data) {
    m_kind = m_form->addChoice(data, "dataset.kind", tr("Kind"));
    m_form->addChoice(data, "dataset.uci_set", tr("UCI set"));

    // The task rows: classification or regression, and the head that fits it.
    m_task = m_form->addChoice(data, "dataset.task", tr("Task"));
    m_form->addText(data, "dataset.target", tr("Target column"), QStringLiteral("y"));
    m_likelihood = m_form->addChoice(data, "model.likelihood", tr("Likelihood"));
    // Only the likelihoods the dataset's task accepts can be chosen.
    m_form->row(QStringLiteral("model.likelihood"))->refresh = [this](const json&) {
        const bool regression = regressionTask();
        enableItems(m_likelihood, [regression](const QString& name) {
            return isRegressionLikelihood(name.toStdString()) == regression;
        });
    };
    m_form->addSpin(data, "dataset.features", tr("Features"));

    m_form->addSpin(data, "dataset.n", tr("Points"), 100);
    m_form->addDoubleSpin(data, "dataset.noise", tr("Noise"), 0.01, 3);
    m_form->addDoubleSpin(data, "dataset.rotations", tr("Rotations"), 0.25, 2);
    m_form->addSpin(data, "dataset.classes", tr("Classes"));
    m_form->addDoubleSpin(data, "dataset.test_fraction", tr("Test fraction"), 0.05, 2);
    QSpinBox* seed = m_form->addSpin(data, "dataset.seed", tr("Data seed"));

    // A file or a folder: typed, or chosen where the last one of its kind was.
    auto* pathRow = new QWidget;
    auto* pathLayout = new QHBoxLayout(pathRow);
    pathLayout->setContentsMargins(0, 0, 0, 0);
    auto* path = new QLineEdit;
    path->setPlaceholderText(tr("default folders"));
    auto* browse = new QToolButton;
    browse->setText(QStringLiteral("…"));
    browse->setToolTip(tr("Choose the CSV file or the MNIST folder"));
    pathLayout->addWidget(path, 1);
    pathLayout->addWidget(browse);
    FormRow& pathField = m_form->addRow(data, QStringLiteral("dataset.path"), tr("Path"), pathRow);
    pathField.editor = path;
    pathField.marked = {path};
    pathField.load = [path](const json& c) { path->setText(textOf(c, "dataset.path")); };
    pathField.store = [path](json& c) {
        c["dataset"]["path"] = path->text().trimmed().toStdString();
    };
    m_form->watch(path);
    connect(browse, &QToolButton::clicked, this, [this, path] {
        QSettings settings;
        const QString kind = currentName(m_kind);
        QString chosen;
        if (isCsvDataset(kind.toStdString())) {
            const QString dir = settings.value(QStringLiteral("data/csvFolder")).toString();
            chosen = QFileDialog::getOpenFileName(this, tr("CSV dataset"), dir,
                                                  tr("CSV files (*.csv);;All files (*)"));
            if (!chosen.isEmpty()) {
                settings.setValue(QStringLiteral("data/csvFolder"), QFileInfo(chosen).path());
            }
        } else {
            const QString key = QStringLiteral("data/%1Folder").arg(kind);
            chosen = QFileDialog::getExistingDirectory(this, tr("MNIST folder"),
                                                       settings.value(key).toString());
            if (!chosen.isEmpty()) {
                settings.setValue(key, chosen);
            }
        }
        if (!chosen.isEmpty()) {
            path->setText(chosen);
        }
    });

    auto* regenerate = new QPushButton(tr("Regenerate"));
    regenerate->setToolTip(tr("Draw a new dataset (next data seed) and start over"));
    data->addRow(QString(), regenerate);
    connect(regenerate, &QPushButton::clicked, this, [this, seed] {
        seed->setValue(seed->value() + 1);
        Q_EMIT regenerateRequested();
    });
    // Only a generated dataset can be drawn again.
    m_form->row(QStringLiteral("dataset.seed"))->refresh = [this, regenerate](const json&) {
        regenerate->setEnabled(isGeneratedDataset(currentName(m_kind).toStdString()));
    };
}

bool ExperimentPanel::regressionTask() const {
    return isRegressionDataset(currentName(m_kind).toStdString(),
                               currentName(m_task).toStdString());
}

void ExperimentPanel::syncLikelihood() {
    // A categorical head on regression data (or the reverse) is a config error: follow the
    // dataset, keeping gaussian or mse if the person chose one.
    const bool regression = regressionTask();
    if (regression == isRegressionLikelihood(currentName(m_likelihood).toStdString())) {
        return;
    }
    const bool loading = m_loading;
    m_loading = true;  // part of the edit that caused it, not an edit of its own
    setCombo(m_likelihood, QString::fromStdString(defaultLikelihood(regression)));
    m_loading = loading;
}

}  // namespace ensemble::ui
