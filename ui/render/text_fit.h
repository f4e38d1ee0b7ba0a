#pragma once

// Text in the QPainter views goes through these functions, so that no label is ever drawn
// wider than its room: text given a rectangle is elided to it (wrapped text that runs out of
// lines too), and all text is checked against what the painter can show, the device less the
// painter's clip (a rectangle past the widget's edge is cut there). Each cut or overflow can
// be recorded (TextFitLog), so a test can render every view and find the labels that did not
// fit.

#include <QPainter>
#include <QPointF>
#include <QRectF>
#include <QString>

#include <vector>

namespace ensemble::ui {

// While recording, text drawn over text drawn before on the same device is recorded too.
// Draws `text` in `rect` with `flags` (Qt::AlignmentFlag, Qt::TextWordWrap); text that does
// not fit is elided at the end. Returns the text drawn.
QString drawTextFitted(QPainter& painter, const QRectF& rect, int flags, const QString& text);
// Draws `text` with its baseline starting at `baseline`; records it when it reaches outside
// the painted device or the painter's clip.
void drawTextFitted(QPainter& painter, const QPointF& baseline, const QString& text);
inline void drawTextFitted(QPainter& painter, int x, int y, const QString& text) {
    drawTextFitted(painter, QPointF(x, y), text);
}
// The width `text` takes in the painter's font.
double textWidth(const QPainter& painter, const QString& text);

// What drawTextFitted() had to cut or could not fit, while recording is on (tests).
struct TextFitProblem {
    QString text;       // the full text
    QString shown;      // what was drawn (elided), the text when it overflowed the device,
                        // or `over "other"` when it was drawn over other text
    QRectF room;        // the rectangle it had (device coordinates)
    double needed = 0;  // the width (or, wrapped, the height) it needed
};
// A string drawn, with its box in device coordinates.
struct TextFitDrawn {
    QRectF box;
    QString text;
};
class TextFitLog {
  public:
    static void setRecording(bool on);
    static bool recording();
    static void record(TextFitProblem problem);
    // The problems recorded since the last take, oldest first; clears them.
    static std::vector<TextFitProblem> take();
    // The text drawn on the latest device since the last take, in the order drawn (a test
    // compares it with the part of a widget a scroll area shows).
    static std::vector<TextFitDrawn> drawn();
};

}  // namespace ensemble::ui
