#include "widgets/elided_label.h"

#include <QEvent>
#include <QFontMetrics>

namespace ensemble::ui {

ElidedLabel::ElidedLabel(QWidget* parent) : QLabel(parent) {
    setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);
    setTextFormat(Qt::PlainText);
}

void ElidedLabel::setFullText(const QString& text) {
    m_full = text;
    relayout();
}

QSize ElidedLabel::minimumSizeHint() const {
    return {0, QLabel::minimumSizeHint().height()};
}

QSize ElidedLabel::sizeHint() const {
    return {fontMetrics().horizontalAdvance(m_full) + 2 * margin(), QLabel::sizeHint().height()};
}

void ElidedLabel::resizeEvent(QResizeEvent* event) {
    QLabel::resizeEvent(event);
    relayout();
}

void ElidedLabel::changeEvent(QEvent* event) {
    QLabel::changeEvent(event);
    if (event->type() == QEvent::FontChange) {
        relayout();
    }
}

void ElidedLabel::relayout() {
    // One line: a message with line breaks shows its first line, the rest in the tooltip.
    QString line = m_full;
    line.replace(QLatin1Char('\n'), QLatin1Char(' '));
    const int room = std::max(0, contentsRect().width() - 2 * margin());
    const QString shown = fontMetrics().elidedText(line, Qt::ElideRight, room);
    m_elided = shown != line;
    QLabel::setText(shown);
    setToolTip(m_elided ? m_full : QString());
}

}  // namespace ensemble::ui
