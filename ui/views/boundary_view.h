#pragma once

// The Boundary view (2-D data): the ensemble's class probability or one of its uncertainty
// maps as a heatmap over the data's bounding box, the decision boundary, train points filled
// and test points hollow, a colour bar with the map's range, and a hover read-out. With a
// member selected, that member's boundary is drawn dashed over the ensemble's and each train
// point is sized by the member's multiplicity of it (out-of-bag points hollow). The wheel
// zooms at the pointer, dragging pans, a double-click shows the whole grid again; the zoomed
// view shows the same grid image enlarged (the engine still evaluates the whole box).

#include <QPixmap>
#include <QWidget>

#include <map>
#include <vector>

#include "controller/snapshot.h"

class QCheckBox;
class QComboBox;
class QLabel;

namespace ensemble::ui {

// What the hover read-out shows at one grid cell, read from the snapshot (no engine work).
struct BoundaryReadout {
    bool valid = false;  // false outside the plot or without a grid
    double x = 0.0;      // the pointer in data units
    double y = 0.0;
    int column = 0;  // the grid cell under it (row 0 at the top)
    int row = 0;
    std::size_t point = 0;              // row * G + column
    bool hasEnsemble = false;           // false when no member is switched on
    std::vector<double> probabilities;  // ensemble p(class), per class
    int predicted = 0;
    double entropy = 0.0;            // total H[p], nats
    double aleatoric = 0.0;          // E_k H[P_k]
    double mutualInformation = 0.0;  // epistemic: H[p] - E_k H[P_k]
    double disagreement = 0.0;
    std::vector<int> votes;  // per class: included members whose argmax it is
    int selectedMember = -1;
    std::vector<double> selectedProbabilities;
    // Regression grids: the mixture's mean and stds at the cell.
    bool regression = false;
    double mean = 0.0;
    double totalStd = 0.0;
    double aleatoricStd = 0.0;
    double epistemicStd = 0.0;
};

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
    BoundaryReadout readoutAt(const QPointF& pos) const;
    // The text the pointer's read-out shows now (empty when none).
    QString hoverText() const { return m_hoverText; }

    // Zoom and pan, in data units. The view always lies inside the grid's box.
    GridBounds viewBounds() const;
    bool isZoomed() const { return m_zoomed; }
    // Zooms by `factor` (> 1: in) keeping the data point under `pos` in place.
    void zoomAt(const QPointF& pos, double factor);
    // Moves the view by `delta` pixels (the data follows the pointer).
    void panBy(const QPointF& delta);
    void resetView();
    QRectF plotRect() const;

    QSize sizeHint() const override { return {640, 560}; }
    QSize minimumSizeHint() const override { return {320, 280}; }

  Q_SIGNALS:
    void viewChanged();  // zoomed, panned or reset

  protected:
    void paintEvent(QPaintEvent* event) override;
    void mouseMoveEvent(QMouseEvent* event) override;
    void mousePressEvent(QMouseEvent* event) override;
    void mouseReleaseEvent(QMouseEvent* event) override;
    void mouseDoubleClickEvent(QMouseEvent* event) override;
    void wheelEvent(QWheelEvent* event) override;
    void leaveEvent(QEvent* event) override;

  private:
    void setView(GridBounds view);
    void showReadout(const QPointF& pos, const QPoint& globalPos);
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
    GridBounds m_view;  // meaningful when m_zoomed
    bool m_zoomed = false;
    bool m_dragging = false;
    QPointF m_dragFrom;
    QString m_hoverText;
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
    // The quantity box's entries for a regression run (mean and stds) or a classification one.
    void setRegressionQuantities(bool regression);

    BoundaryCanvas* m_canvas = nullptr;
    QComboBox* m_quantityBox = nullptr;
    QCheckBox* m_train = nullptr;
    QCheckBox* m_test = nullptr;
    QLabel* m_caption = nullptr;
    SnapshotPtr m_snapshot;
};

}  // namespace ensemble::ui
