#include "widgets/picture_export.h"

#include <QCoreApplication>
#include <QFileInfo>
#include <QImage>
#include <QPainter>
#include <QSaveFile>
#include <QSvgGenerator>
#include <QWidget>

namespace ensemble::ui {

namespace {

QString tr(const char* text) {
    return QCoreApplication::translate("ensemble::ui::PictureExport", text);
}

bool fail(const QString& path, const QString& why, QString* error) {
    if (error != nullptr) {
        *error = QStringLiteral("%1: %2").arg(path, why);
    }
    return false;
}

// The widget's own background first: most views leave it to their parent (the tab page), and
// a picture without it would be transparent, with dark-theme text unreadable on a white page.
void paintWidget(QWidget* widget, QPainter& painter) {
    painter.fillRect(QRect(QPoint(0, 0), widget->size()),
                     widget->palette().color(widget->backgroundRole()));
    widget->render(&painter, QPoint(), QRegion(),
                   QWidget::DrawWindowBackground | QWidget::DrawChildren);
}

}  // namespace

bool writeSvgPicture(QWidget* widget, const QString& path, const PictureText& text,
                     QString* error) {
    if (widget->width() <= 0 || widget->height() <= 0) {
        return fail(path, tr("the view has no size to draw (show it first)"), error);
    }
    QSaveFile out(path);
    if (!out.open(QIODevice::WriteOnly)) {
        return fail(path, out.errorString(), error);
    }
    {
        QSvgGenerator svg;
        svg.setOutputDevice(&out);
        svg.setSize(widget->size());
        svg.setViewBox(QRect(QPoint(0, 0), widget->size()));
        // The screen's resolution, so the SVG's physical size is the view's size on screen.
        svg.setResolution(widget->logicalDpiX());
        svg.setTitle(text.title);
        svg.setDescription(text.description);
        QPainter painter;
        if (!painter.begin(&svg)) {
            return fail(path, tr("cannot draw the SVG"), error);
        }
        paintWidget(widget, painter);
        painter.end();  // the generator writes the document's end here
    }
    if (!out.commit()) {
        return fail(path, out.errorString(), error);
    }
    return true;
}

bool writePngPicture(QWidget* widget, const QString& path, QString* error) {
    if (widget->width() <= 0 || widget->height() <= 0) {
        return fail(path, tr("the view has no size to draw (show it first)"), error);
    }
    // As many pixels as the screen shows (2× on a HiDPI screen), the widget laid out as there.
    const qreal ratio = widget->devicePixelRatioF();
    QImage image(widget->size() * ratio, QImage::Format_ARGB32_Premultiplied);
    image.setDevicePixelRatio(ratio);
    image.fill(Qt::transparent);
    {
        QPainter painter(&image);
        paintWidget(widget, painter);
    }
    QSaveFile out(path);
    if (!out.open(QIODevice::WriteOnly)) {
        return fail(path, out.errorString(), error);
    }
    if (!image.save(&out, "PNG")) {
        return fail(path, tr("cannot write the PNG: %1").arg(out.errorString()), error);
    }
    if (!out.commit()) {
        return fail(path, out.errorString(), error);
    }
    return true;
}

bool isPicturePath(const QString& path) {
    const QString suffix = QFileInfo(path).suffix().toLower();
    return suffix == QLatin1String("svg") || suffix == QLatin1String("png");
}

bool writePicture(QWidget* widget, const QString& path, const PictureText& text, QString* error) {
    const QString suffix = QFileInfo(path).suffix().toLower();
    if (suffix == QLatin1String("svg")) {
        return writeSvgPicture(widget, path, text, error);
    }
    if (suffix == QLatin1String("png")) {
        return writePngPicture(widget, path, error);
    }
    return fail(path, tr("a picture is written as .svg or .png"), error);
}

}  // namespace ensemble::ui
