#pragma once

// A view's picture as a file: SVG (Qt's SVG generator, vector, for papers and slides) or PNG
// (pixels at the screen's device pixel ratio). Both paint the widget with QWidget::render, so
// what is written is what the view shows, Qt Charts included, without a screen grab. Every
// file is written atomically (QSaveFile): a failed write leaves no file, and the error names it.

#include <QString>

class QWidget;

namespace ensemble::ui {

// The SVG's <title> and <desc>: the view's name and the run it shows.
struct PictureText {
    QString title;
    QString description;
};

// Writes `widget` as SVG: its size in pixels, a viewBox of the same size, `text` as its title
// and description. False with `error` ("PATH: why") when it cannot be written.
bool writeSvgPicture(QWidget* widget, const QString& path, const PictureText& text, QString* error);
// Writes `widget` as PNG, widget size × device pixel ratio pixels.
bool writePngPicture(QWidget* widget, const QString& path, QString* error);
// SVG or PNG by the suffix of `path` (case-insensitive); any other suffix is refused with
// `error` naming it.
bool writePicture(QWidget* widget, const QString& path, const PictureText& text, QString* error);
// Whether `path` names a format writePicture writes (.svg or .png).
bool isPicturePath(const QString& path);

}  // namespace ensemble::ui
