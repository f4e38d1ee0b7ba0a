#include "widgets/wrapping_label.h"

#include <QResizeEvent>

#include <algorithm>

namespace ensemble::ui {

WrappingLabel::WrappingLabel(QWidget* parent) : QLabel(parent) {
    setWordWrap(true);
    setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Minimum);
}

QSize WrappingLabel::minimumSizeHint() const {
    // As narrow as a few words; as tall as the text wrapped at the current width.
    const int width = fontMetrics().averageCharWidth() * 12;
    const int at = std::max(width, this->width());
    return {width, text().isEmpty() ? 0 : QLabel::heightForWidth(at)};
}

QSize WrappingLabel::sizeHint() const {
    return {QLabel::sizeHint().width(), minimumSizeHint().height()};
}

void WrappingLabel::resizeEvent(QResizeEvent* event) {
    QLabel::resizeEvent(event);
    if (event->size().width() != m_heightAt) {
        m_heightAt = event->size().width();
        updateGeometry();  // the lines, and so the height, change with the width
    }
}

}  // namespace ensemble::ui
