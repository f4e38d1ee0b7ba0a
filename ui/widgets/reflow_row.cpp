#include "widgets/reflow_row.h"

#include <QBoxLayout>
#include <QResizeEvent>

namespace ensemble::ui {

ReflowRow::ReflowRow(int columnWidth, QWidget* parent)
    : QWidget(parent), m_columnWidth(columnWidth) {
    m_box = new QBoxLayout(QBoxLayout::LeftToRight, this);
    m_box->setContentsMargins(0, 0, 0, 0);
}

void ReflowRow::addWidget(QWidget* widget, int stretch) {
    m_box->addWidget(widget, stretch);
    reflow(width());
}

bool ReflowRow::stacked() const {
    return m_box->direction() == QBoxLayout::TopToBottom;
}

void ReflowRow::resizeEvent(QResizeEvent* event) {
    QWidget::resizeEvent(event);
    reflow(event->size().width());
}

void ReflowRow::reflow(int width) {
    const bool side = width >= m_columnWidth * std::max(1, m_box->count());
    const auto direction = side ? QBoxLayout::LeftToRight : QBoxLayout::TopToBottom;
    if (m_box->direction() != direction) {
        m_box->setDirection(direction);
    }
}

}  // namespace ensemble::ui
