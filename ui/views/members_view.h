#pragma once

// The Members view: small multiples of every member's boundary (scrolling past what fits),
// each labelled with its learning rate, loss and test accuracy, and a badge when it diverged.
// Clicking a tile selects the member (the Boundary view then draws it); the box in a tile's
// corner switches the member in or out of the ensemble.

#include <QPixmap>
#include <QWidget>

#include <vector>

#include "controller/snapshot.h"

class QComboBox;
class QLabel;
class QScrollArea;

namespace ensemble::ui {

class MembersGrid : public QWidget {
    Q_OBJECT

  public:
    explicit MembersGrid(QWidget* parent = nullptr);

    void setSnapshot(SnapshotPtr snapshot);
    void setSelectedMember(int member);
    void setSortByLoss(bool byLoss);
    int selectedMember() const { return m_selected; }

    // Tile of member k in widget coordinates (empty when unknown), and its on/off box.
    QRect tileRect(int member) const;
    QRect switchRect(int member) const;

    bool hasHeightForWidth() const override { return true; }
    int heightForWidth(int width) const override;
    QSize sizeHint() const override;

  Q_SIGNALS:
    void memberSelected(int member);  // -1: selection cleared
    void memberToggled(int member, bool switchedOn);

  protected:
    void paintEvent(QPaintEvent* event) override;
    void mousePressEvent(QMouseEvent* event) override;
    bool event(QEvent* event) override;
    void resizeEvent(QResizeEvent* event) override;

  private:
    int columns(int width) const;
    QSize tileSize() const;
    void updateOrder();

    SnapshotPtr m_snapshot;
    std::vector<int> m_order;  // tile position -> member
    std::vector<QPixmap> m_thumbs;
    int m_selected = -1;
    bool m_byLoss = false;
};

class MembersView : public QWidget {
    Q_OBJECT

  public:
    explicit MembersView(QWidget* parent = nullptr);

    void setSnapshot(SnapshotPtr snapshot);
    void setSelectedMember(int member);
    MembersGrid* grid() const { return m_grid; }

  Q_SIGNALS:
    void memberSelected(int member);
    void memberToggled(int member, bool switchedOn);
    void allMembersSet(bool switchedOn);

  private:
    MembersGrid* m_grid = nullptr;
    QScrollArea* m_scroll = nullptr;
    QComboBox* m_sort = nullptr;
    QLabel* m_info = nullptr;
};

}  // namespace ensemble::ui
