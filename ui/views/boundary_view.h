#pragma once

// The Boundary view (2-D data): the ensemble's class probability or one of its uncertainty
// maps as a heatmap over the data's bounding box, the decision boundary, train points filled
// and test points hollow, a colour bar with the map's range, and a hover read-out. With a
// member selected, that member's boundary is drawn dashed over the ensemble's and each train
// point is sized by the member's multiplicity of it (out-of-bag points hollow). Zoomed
// (PlotCanvas), the view shows the same grid image enlarged: the engine still evaluates the
// whole box.

#include <QPixmap>
#include <QWidget>

#include <map>
#include <vector>

#include "controller/snapshot.h"
#include "views/plot_canvas.h"

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

class BoundaryCanvas : public PlotCanvas {
    Q_OBJECT

  public:
    explicit BoundaryCanvas(QWidget* parent = nullptr);

    void setSnapshot(SnapshotPtr snapshot);
    void setQuantity(HeatQuantity quantity);
    HeatQuantity quantity() const { return m_quantity; }

    // The read-out of the grid cell under `pos` (widget coordinates); empty outside the plot.
    QString readout(const QPointF& pos) const;
    BoundaryReadout readoutAt(const QPointF& pos) const;
    // The text the pointer's read-out shows now (empty when none).
    QString hoverText() const { return m_hoverText; }

    QRectF plotRect() const override;

    QSize sizeHint() const override { return {640, 560}; }
    QSize minimumSizeHint() const override { return {320, 280}; }

  protected:
    std::optional<GridBounds> dataBox() const override;
    void hover(const QPointF& pos, const QPoint& globalPos) override;  // the read-out
    void paintEvent(QPaintEvent* event) override;
    void leaveEvent(QEvent* event) override;

  private:
    void drawColorBar(QPainter& p, const QRectF& bar) const;
    void drawAxes(QPainter& p, const QRectF& plot) const;
    void drawPoints(QPainter& p, const QRectF& plot) const;
    // A point marker: style 0 train (filled), 1 test (hollow ring), 2 out of bag.
    const QPixmap& marker(int cls, int style, double radius) const;
    void drawContour(QPainter& p, const QRectF& plot, const std::vector<QPolygonF>& lines,
                     const QPen& pen) const;

    SnapshotPtr m_snapshot;
    HeatQuantity m_quantity = HeatQuantity::Probability;
    mutable QPixmap m_pixmap;  // the current map, converted on the GUI thread
    mutable int m_pixmapFor = -1;
    mutable std::map<quint64, QPixmap> m_markers;
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
