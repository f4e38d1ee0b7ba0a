#include "file_kinds.h"

#include <QFileDialog>
#include <QFileInfo>
#include <QFileSystemModel>
#include <QSortFilterProxyModel>

#include <algorithm>
#include <string>

#include "config/config_schema.h"

namespace ensemble::ui {

namespace {

const QString kMetricsSuffix = QStringLiteral(".metrics.json");

// Hides the files the app writes beside an export; folders and everything else pass.
class OpenableFiles : public QSortFilterProxyModel {
  public:
    using QSortFilterProxyModel::QSortFilterProxyModel;

  protected:
    bool filterAcceptsRow(int row, const QModelIndex& parent) const override {
        const auto* files = qobject_cast<const QFileSystemModel*>(sourceModel());
        if (files == nullptr) {
            return true;
        }
        const QModelIndex index = files->index(row, 0, parent);
        return files->isDir(index) || offeredByOpen(files->fileName(index));
    }
};

QString commaList(const std::vector<std::string>& names) {
    QStringList list;
    for (const std::string& n : names) {
        list << QString::fromStdString(n);
    }
    return list.join(QStringLiteral(", "));
}

}  // namespace

QString notAnExperiment(const QString& path, const nlohmann::json& config) {
    const QString name = QFileInfo(path).fileName();
    const std::vector<std::string>& sections = configSections();
    QString problem;
    if (!config.is_object()) {
        problem = QObject::tr("it holds %1, not an object of sections")
                      .arg(QString::fromLatin1(config.type_name()));
    } else {
        for (auto it = config.begin(); it != config.end() && problem.isEmpty(); ++it) {
            const bool known =
                std::find(sections.begin(), sections.end(), it.key()) != sections.end();
            if (!known) {
                problem = QObject::tr("its key \"%1\" is not a section of one")
                              .arg(QString::fromStdString(it.key()));
            } else if (!it.value().is_object()) {
                problem = QObject::tr("its section \"%1\" is not an object")
                              .arg(QString::fromStdString(it.key()));
            }
        }
    }
    if (problem.isEmpty()) {
        return {};
    }
    QString message = QObject::tr("%1 is not an experiment: %2 (an experiment holds %3).")
                          .arg(name, problem, commaList(sections));
    const bool metrics = name.endsWith(kMetricsSuffix, Qt::CaseInsensitive) ||
                         (config.is_object() && config.contains("brier_definition"));
    if (metrics) {
        QString base = path;
        if (base.endsWith(kMetricsSuffix, Qt::CaseInsensitive)) {
            base.chop(kMetricsSuffix.size());
        }
        const QString weights = base + QStringLiteral(".safetensors");
        message += QLatin1Char(' ') +
                   (QFileInfo::exists(weights)
                        ? QObject::tr("It is the metrics an export writes; open its weights, %1, "
                                      "instead.")
                              .arg(QFileInfo(weights).fileName())
                        : QObject::tr("It is the metrics an export writes; open the export's "
                                      ".safetensors file instead."));
    }
    return message;
}

bool offeredByOpen(const QString& fileName) {
    return !fileName.endsWith(kMetricsSuffix, Qt::CaseInsensitive);
}

QString askFileToOpen(QWidget* parent, const QString& dir) {
    // Qt's own dialog: a platform dialog would ignore the proxy that hides the metrics files.
    QFileDialog dialog(parent, QObject::tr("Open experiment or trained ensemble"), dir);
    dialog.setOption(QFileDialog::DontUseNativeDialog);
    dialog.setFileMode(QFileDialog::ExistingFile);
    dialog.setNameFilters(
        {QObject::tr("Experiments and ensembles (*.ensemble.json *.json *.safetensors)"),
         QObject::tr("Experiments (*.ensemble.json *.json)"),
         QObject::tr("Trained ensembles: exports and checkpoints (*.safetensors)")});
    dialog.setProxyModel(new OpenableFiles(&dialog));
    if (dialog.exec() != QDialog::Accepted || dialog.selectedFiles().isEmpty()) {
        return {};
    }
    return dialog.selectedFiles().constFirst();
}

}  // namespace ensemble::ui
