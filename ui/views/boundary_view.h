#pragma once

// The Boundary view (2-D data): the ensemble's class probability or one of its uncertainty
// maps as a heatmap over the data's bounding box, the decision boundary, train points filled
// and test points hollow, a colour bar with the map's range, and a hover read-out. With a
// member selected, that member's boundary is drawn dashed over the ensemble's and each train
// point is sized by the member's multiplicity of it (out-of-bag points hollow).

#include <QPixmap>
#include <QWidget>

#include <map>

#include "controller/snapshot.h"

class QCheckBox;
class QComboBox;
class QLabel;

namespace ensemble::ui {

class BoundaryCanvas : public QWidget {
    Q_OBJECT

  public:
    explicit BoundaryCanvas(QWidget* parent = nullptr);

    void setSnapshot(SnapshotPtr snapshot);
    void setQuantity(HeatQuantity quantity);
    void setSelectedMember(int member);  // -1: none
    void setShowTrain(bool show);
    void setShowTest(bool show);
    HeatQuantity quantity() const { return m_quantity; }
    int selectedMember() const { return m_selected; }

    // The read-out of the grid cell under `pos` (widget coordinates); empty outside the plot.
    QString readout(const QPointF& pos) const;

    QSize sizeHint() const override { return {640, 560}; }
    QSize minimumSizeHint() const override { return {320, 280}; }

  protected:
    void paintEvent(QPaintEvent* event) override;
    void mouseMoveEvent(QMouseEvent* event) override;
    void leaveEvent(QEvent* event) override;

  private:
    QRectF plotRect() const;
    QPointF toWidget(double x, double y, const QRectF& plot) const;
    void drawColorBar(QPainter& p, const QRectF& bar) const;
    void drawAxes(QPainter& p, const QRectF& plot) const;
    void drawPoints(QPainter& p, const QRectF& plot) const;
    // A point marker: style 0 train (filled), 1 test (hollow ring), 2 out of bag.
    const QPixmap& marker(int cls, int style, double radius) const;
    void drawContour(QPainter& p, const QRectF& plot, const std::vector<QPolygonF>& lines,
                     const QPen& pen) const;

    SnapshotPtr m_snapshot;
    HeatQuantity m_quantity = HeatQuantity::Probability;
    int m_selected = -1;
    bool m_showTrain = true;
    bool m_showTest = true;
    mutable QPixmap m_pixmap;  // the current map, converted on the GUI thread
    mutable int m_pixmapFor = -1;
    mutable std::map<quint64, QPixmap> m_markers;
};

class BoundaryView : public QWidget {
    Q_OBJECT

  public:
    explicit BoundaryView(QWidget* parent = nullptr);

    void setSnapshot(SnapshotPtr snapshot);
    void setSelectedMember(int member);
    void setQuantity(HeatQuantity quantity);
    BoundaryCanvas* canvas() const { return m_canvas; }
    QComboBox* quantityCombo() const { return m_quantityBox; }

  Q_SIGNALS:
    void clearSelectionRequested();

  private:
    void updateCaption();

    BoundaryCanvas* m_canvas = nullptr;
    QComboBox* m_quantityBox = nullptr;
    QCheckBox* m_train = nullptr;
    QCheckBox* m_test = nullptr;
    QLabel* m_caption = nullptr;
    SnapshotPtr m_snapshot;
};

}  // namespace ensemble::ui
