#pragma once

// The first column of a table kept in sight while the table scrolls sideways (Qt's "frozen
// column" pattern): a second view of the same model, showing only that column, lies over the
// table's left edge and scrolls up and down with it. A wide comparison table then always says
// which row is which method.

#include <QObject>

class QTableView;

namespace ensemble::ui {

class FrozenColumn : public QObject {
  public:
    // Freezes `table`'s column 0; owned by `table`. Call after the model is set.
    explicit FrozenColumn(QTableView* table);

    QTableView* view() const { return m_frozen; }
    // Matches the overlay to column 0's width and the table's header and viewport.
    void updateGeometry();

  protected:
    bool eventFilter(QObject* watched, QEvent* event) override;

  private:
    QTableView* m_table;
    QTableView* m_frozen;
    bool m_tableGone = false;  // the table's destructor has begun
};

}  // namespace ensemble::ui
