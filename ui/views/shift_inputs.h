#pragma once

// The Shift view's picture of the shifted inputs at the chosen level: the first test images
// as a grid (image data), or every test point moved over the ensemble's probability map
// (2-D data; the map covers the grid's bounds, the area the points move into beyond it is
// grey, and the frame is the same at every level so the motion shows).

#include <QImage>
#include <QPointF>
#include <QRectF>
#include <QWidget>

#include <vector>

#include "metrics/grid.h"

namespace ensemble::ui {

class ShiftInputs : public QWidget {
    Q_OBJECT

  public:
    explicit ShiftInputs(QWidget* parent = nullptr);

    // Image data: `images` in a grid (nothing else drawn).
    void setImages(std::vector<QImage> images);
    // 2-D data: `points` (raw units, class `labels`, `classes` of them) over `map` (covering
    // `bounds`, row 0 at the top) in the frame `frame` (raw units; it holds the bounds).
    void setPoints(QImage map, const GridBounds& bounds, QRectF frame, std::vector<QPointF> points,
                   std::vector<int> labels, int classes);
    void clear();
    // The caption under the picture ("rotate 45 degrees").
    void setCaption(const QString& caption);

    int imageCount() const { return static_cast<int>(m_images.size()); }
    int pointCount() const { return static_cast<int>(m_points.size()); }
    const std::vector<QPointF>& points() const { return m_points; }

    QSize sizeHint() const override { return {300, 300}; }
    QSize minimumSizeHint() const override { return {180, 180}; }

  protected:
    void paintEvent(QPaintEvent* event) override;

  private:
    void paintImages(QPainter& p, const QRectF& area) const;
    void paintPoints(QPainter& p, const QRectF& area) const;

    std::vector<QImage> m_images;
    QImage m_map;
    GridBounds m_bounds;
    QRectF m_frame;
    std::vector<QPointF> m_points;
    std::vector<int> m_labels;
    int m_classes = 2;
    QString m_caption;
};

}  // namespace ensemble::ui
