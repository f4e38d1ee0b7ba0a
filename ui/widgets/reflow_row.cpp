#include "widgets/reflow_row.h"

#include <QBoxLayout>
#include <QResizeEvent>

#include <algorithm>

namespace ensemble::ui {

ReflowRow::ReflowRow(int columnWidth, QWidget* parent)
    : QWidget(parent), m_columnWidth(columnWidth) {
    m_box = new QBoxLayout(QBoxLayout::LeftToRight, this);
    m_box->setContentsMargins(0, 0, 0, 0);
    // The layout must not hold the row at its side-by-side width: the row is as narrow as its
    // widest child stacked (minimumSizeHint), and stacks when narrower than the columns need.
    m_box->setSizeConstraint(QLayout::SetNoConstraint);
}

QSize ReflowRow::minimumSizeHint() const {
    int width = 0;
    for (int i = 0; i < m_box->count(); ++i) {
        width = std::max(width, m_box->itemAt(i)->minimumSize().width());
    }
    return {width, m_box->minimumSize().height()};
}

QSize ReflowRow::sizeHint() const {
    return m_box->sizeHint();
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
        updateGeometry();  // the minimum height changes with the direction
    }
}

}  // namespace ensemble::ui
