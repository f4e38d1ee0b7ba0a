// FileActions' Export picture: the current view alone as SVG or PNG (widgets/picture_export.h),
// for papers and slides, without exporting the weights.
#include <QAction>
#include <QDir>
#include <QFileDialog>
#include <QFileInfo>
#include <QKeySequence>
#include <QMainWindow>
#include <QSettings>

#include "file_actions.h"
#include "std_string.h"
#include "view_tabs.h"

namespace ensemble::ui {

namespace {

const QString kPictureFolderKey = QStringLiteral("files/pictures");
const QString kPictureFormatKey = QStringLiteral("files/pictureFormat");

QString svgFilter() {
    return FileActions::tr("Vector picture, SVG (*.svg)");
}

QString pngFilter() {
    return FileActions::tr("Picture, PNG (*.png)");
}

}  // namespace

void FileActions::buildPictureAction() {
    m_exportPicture = new QAction(tr("Export picture…"), m_window);
    m_exportPicture->setObjectName(QStringLiteral("ExportPictureAction"));
    // Ctrl+E exports everything; with Shift, only the picture (no view or action holds it).
    m_exportPicture->setShortcut(QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_E));
    m_exportPicture->setToolTip(
        tr("Save the current view as a picture, SVG or PNG by the name's suffix (Ctrl+Shift+E)"));
    connect(m_exportPicture, &QAction::triggered, this, &FileActions::choosePicture);
}

PictureText FileActions::pictureText() const {
    PictureText text;
    text.title = tr("EnsembleLab: %1").arg(viewTitle(m_views->currentViewId()));
    const SnapshotPtr s = m_controller->snapshot();
    if (s != nullptr && s->run != nullptr) {
        text.description = tr("%1, %2 members, step %3")
                               .arg(str(s->run->datasetName))
                               .arg(s->run->members)
                               .arg(s->step);
    }
    return text;
}

bool FileActions::exportPicture(const QString& path, QString* error) {
    return writePicture(m_views->currentView(), path, pictureText(), error);
}

void FileActions::choosePicture() {
    const ViewId id = m_views->currentViewId();
    const SnapshotPtr s = m_controller->snapshot();
    QSettings settings;
    // The pictures' own folder once one was chosen; before that, where exports go.
    const QString dir =
        settings
            .value(kPictureFolderKey,
                   settings.value(QStringLiteral("files/exports"), QDir::homePath()))
            .toString();
    const bool png = settings.value(kPictureFormatKey).toString() == QLatin1String("png");
    QString name = QString::fromLatin1(viewRow(id).key);
    if (s != nullptr && s->run != nullptr) {
        name = QStringLiteral("%1-%2-step%3").arg(str(s->run->datasetName), name).arg(s->step);
    }
    QFileDialog dialog(m_window, tr("Export picture of the %1 view").arg(viewTitle(id)),
                       QDir(dir).filePath(name));
    dialog.setObjectName(QStringLiteral("ExportPictureDialog"));
    dialog.setOption(QFileDialog::DontUseNativeDialog);  // the same dialog everywhere (tests)
    dialog.setAcceptMode(QFileDialog::AcceptSave);
    dialog.setNameFilters({svgFilter(), pngFilter()});
    dialog.selectNameFilter(png ? pngFilter() : svgFilter());
    if (dialog.exec() != QDialog::Accepted || dialog.selectedFiles().isEmpty()) {
        return;
    }
    // The name's suffix decides; a name without .svg or .png takes the chosen filter's.
    QString path = dialog.selectedFiles().constFirst();
    if (!isPicturePath(path)) {
        path += dialog.selectedNameFilter() == pngFilter() ? QStringLiteral(".png")
                                                           : QStringLiteral(".svg");
    }
    settings.setValue(kPictureFolderKey, QFileInfo(path).path());
    settings.setValue(kPictureFormatKey, QFileInfo(path).suffix().toLower());
    QString error;
    if (!exportPicture(path, &error)) {
        Q_EMIT errorRaised(tr("Could not export the picture"), error,
                           tr("Nothing was written. Choose a folder that exists and that you can "
                              "write to, with free space, and export again."));
        return;
    }
    Q_EMIT statusRequested(tr("Wrote %1").arg(path), 8000);
}

}  // namespace ensemble::ui
