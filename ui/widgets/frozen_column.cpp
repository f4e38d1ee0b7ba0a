#include "widgets/frozen_column.h"

#include <QEvent>
#include <QHeaderView>
#include <QScrollBar>
#include <QTableView>

namespace ensemble::ui {

FrozenColumn::FrozenColumn(QTableView* table)
    : QObject(table), m_table(table), m_frozen(new QTableView(table)) {
    m_frozen->setObjectName(table->objectName() + QStringLiteral("FrozenColumn"));
    m_frozen->setModel(table->model());
    m_frozen->setSelectionModel(table->selectionModel());
    m_frozen->setFocusPolicy(Qt::NoFocus);  // the table keeps the keyboard
    m_frozen->verticalHeader()->hide();
    m_frozen->horizontalHeader()->setSectionResizeMode(QHeaderView::Fixed);
    m_frozen->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
    m_frozen->setVerticalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
    m_frozen->setVerticalScrollMode(table->verticalScrollMode());
    m_frozen->setSelectionBehavior(table->selectionBehavior());
    m_frozen->setAlternatingRowColors(table->alternatingRowColors());
    m_frozen->setEditTriggers(table->editTriggers());
    m_frozen->setSortingEnabled(table->isSortingEnabled());
    m_frozen->setStyleSheet(QStringLiteral("QTableView { border: none; }"));
    table->viewport()->stackUnder(m_frozen);
    // Column 0 only; the model's later columns too (a table that grows columns).
    const auto hideOthers = [this] {
        for (int c = 1; !m_tableGone && c < m_table->model()->columnCount(); ++c) {
            m_frozen->setColumnHidden(c, true);
        }
        updateGeometry();
    };
    hideOthers();
    // A table being destroyed deletes its headers before its model, whose last signals must
    // then find nothing to measure.
    connect(table->horizontalHeader(), &QObject::destroyed, this, [this] { m_tableGone = true; });
    connect(table->model(), &QAbstractItemModel::columnsInserted, this, hideOthers);
    connect(table->model(), &QAbstractItemModel::modelReset, this, hideOthers);
    connect(table->model(), &QAbstractItemModel::rowsInserted, this, [this] { updateGeometry(); });
    connect(table->horizontalHeader(), &QHeaderView::sectionResized, this,
            [this](int section, int, int size) {
                if (section == 0) {
                    m_frozen->setColumnWidth(0, size);
                    updateGeometry();
                }
            });
    connect(table->verticalHeader(), &QHeaderView::sectionResized, this,
            [this](int section, int, int size) { m_frozen->setRowHeight(section, size); });
    connect(m_frozen->verticalScrollBar(), &QAbstractSlider::valueChanged,
            table->verticalScrollBar(), &QAbstractSlider::setValue);
    connect(table->verticalScrollBar(), &QAbstractSlider::valueChanged,
            m_frozen->verticalScrollBar(), &QAbstractSlider::setValue);
    // The sort order is the model's; the table's header shows the indicator for both.
    connect(m_frozen->horizontalHeader(), &QHeaderView::sortIndicatorChanged,
            table->horizontalHeader(), &QHeaderView::setSortIndicator);
    table->installEventFilter(this);
    m_frozen->show();
}

void FrozenColumn::updateGeometry() {
    if (m_tableGone) {
        return;
    }
    m_frozen->setColumnWidth(0, m_table->columnWidth(0));
    for (int r = 0; r < m_table->model()->rowCount(); ++r) {
        m_frozen->setRowHeight(r, m_table->rowHeight(r));
    }
    m_frozen->horizontalHeader()->setFixedHeight(m_table->horizontalHeader()->height());
    m_frozen->setGeometry(m_table->verticalHeader()->width() + m_table->frameWidth(),
                          m_table->frameWidth(), m_table->columnWidth(0),
                          m_table->viewport()->height() + m_table->horizontalHeader()->height());
}

bool FrozenColumn::eventFilter(QObject* watched, QEvent* event) {
    if (watched == m_table &&
        (event->type() == QEvent::Resize || event->type() == QEvent::LayoutRequest ||
         event->type() == QEvent::Show)) {
        updateGeometry();
    }
    return QObject::eventFilter(watched, event);
}

}  // namespace ensemble::ui
