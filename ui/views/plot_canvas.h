#pragma once

// What the data plots share (the Boundary, Regression and Active learning canvases): the member
// selected, whether train and test points are drawn, and the window on the data. The wheel
// zooms at the pointer, dragging pans a zoomed view, a double-click or 0 shows everything
// again, + and - zoom at the centre. The window is in data units and always lies inside the
// data's box, so whatever a canvas draws through toWidget() follows it; each canvas says what
// its box and its plot rectangle are, and paints.

#include <QPainter>
#include <QPixmap>
#include <QTransform>
#include <QWidget>

#include <optional>

#include "metrics/grid.h"

namespace ensemble::ui {

class PlotCanvas : public QWidget {
    Q_OBJECT

  public:
    explicit PlotCanvas(QWidget* parent = nullptr);

    void setSelectedMember(int member);  // -1: none
    int selectedMember() const { return m_selected; }
    void setShowTrain(bool show);
    void setShowTest(bool show);
    bool showsTrain() const { return m_showTrain; }
    bool showsTest() const { return m_showTest; }

    // The window on the data, in data units: the whole box unless zoomed.
    GridBounds viewBounds() const;
    bool isZoomed() const { return m_zoomed; }
    // Zooms by `factor` (> 1: in, at most 64x) keeping the data point under `pos` in place.
    void zoomAt(const QPointF& pos, double factor);
    // Moves a zoomed view by `delta` pixels (the data follows the pointer).
    void panBy(const QPointF& delta);
    void resetView();
    // Where the data is drawn, in widget coordinates.
    virtual QRectF plotRect() const = 0;

  Q_SIGNALS:
    void viewChanged();  // zoomed, panned or reset

  protected:
    // The data's whole box; none while there is nothing to zoom into (no run, no such plot).
    virtual std::optional<GridBounds> dataBox() const = 0;
    // The pointer is at `pos` after it moved or the view moved under it (a read-out follows).
    virtual void hover(const QPointF& pos, const QPoint& globalPos);

    // A new run of `members`: a selection past them goes; `newBox`: its data lies elsewhere,
    // so the whole of it is shown.
    void followRun(int members, bool newBox);
    // Data units to widget pixels of the view within `plot`.
    QPointF toWidget(double x, double y, const QRectF& plot) const;
    // A grid over the whole box (G cells a side, row 0 at the top): the part of its image of
    // `imageSize` that the view covers, and its units (contours) to widget pixels.
    QRectF gridImageSource(const QSizeF& imageSize) const;
    // Draws the part of `grid` (an image of the whole data box) the view covers into `plot`,
    // on the screen and in a picture export alike.
    void drawGridImage(QPainter& p, const QRectF& plot, const QPixmap& grid) const;
    QTransform gridToWidget(double gridSize, const QRectF& plot) const;
    bool isPanning() const { return m_panning; }

    void mousePressEvent(QMouseEvent* event) override;
    void mouseMoveEvent(QMouseEvent* event) override;
    void mouseReleaseEvent(QMouseEvent* event) override;
    void mouseDoubleClickEvent(QMouseEvent* event) override;
    void wheelEvent(QWheelEvent* event) override;
    void keyPressEvent(QKeyEvent* event) override;

  private:
    void setView(GridBounds view);
    void updateCursorShape();

    int m_selected = -1;
    bool m_showTrain = true;
    bool m_showTest = true;
    GridBounds m_view;  // meaningful when m_zoomed
    bool m_zoomed = false;
    bool m_panning = false;
    QPointF m_panFrom;
};

}  // namespace ensemble::ui
