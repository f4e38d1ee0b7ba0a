#include "views/plot_canvas.h"

#include <QKeyEvent>
#include <QMouseEvent>
#include <QPaintEngine>
#include <QPainter>
#include <QWheelEvent>

#include <algorithm>
#include <cmath>

namespace ensemble::ui {

namespace {

// At most 64x: a grid's cells (G of them across) are already large by then.
constexpr double kMostZoom = 64.0;
// 1.25x per wheel notch (120 units) or key press; touchpads send smaller steps.
constexpr double kZoomStep = 1.25;

// `view` at the same scale on both axes, moved inside `box`; `zoomed` says whether it is
// smaller than the box.
GridBounds clampedInto(const GridBounds& box, const GridBounds& view, bool* zoomed) {
    const double fullW = box.xMax - box.xMin;
    const double fullH = box.yMax - box.yMin;
    const double scale =
        std::clamp((view.xMax - view.xMin) / std::max(1e-300, fullW), 1.0 / kMostZoom, 1.0);
    const double w = fullW * scale;
    const double h = fullH * scale;
    const double cx = std::clamp((view.xMin + view.xMax) / 2, box.xMin + w / 2, box.xMax - w / 2);
    const double cy = std::clamp((view.yMin + view.yMax) / 2, box.yMin + h / 2, box.yMax - h / 2);
    if (zoomed != nullptr) {
        *zoomed = scale < 1.0 - 1e-9;
    }
    return {cx - w / 2, cx + w / 2, cy - h / 2, cy + h / 2};
}

}  // namespace

PlotCanvas::PlotCanvas(QWidget* parent) : QWidget(parent) {
    setMouseTracking(true);
}

void PlotCanvas::setSelectedMember(int member) {
    if (member != m_selected) {
        m_selected = member;
        update();
    }
}

void PlotCanvas::setShowTrain(bool show) {
    m_showTrain = show;
    update();
}

void PlotCanvas::setShowTest(bool show) {
    m_showTest = show;
    update();
}

void PlotCanvas::followRun(int members, bool newBox) {
    if (m_selected >= members) {
        m_selected = -1;
    }
    if (newBox && m_zoomed) {
        m_zoomed = false;
        updateCursorShape();
        Q_EMIT viewChanged();
    }
}

GridBounds PlotCanvas::viewBounds() const {
    const std::optional<GridBounds> box = dataBox();
    if (!box) {
        return {};
    }
    // A box that moves with the data (the regression plot's y range follows the mean) keeps
    // the window inside it.
    return m_zoomed ? clampedInto(*box, m_view, nullptr) : *box;
}

void PlotCanvas::setView(GridBounds view) {
    const std::optional<GridBounds> box = dataBox();
    if (!box) {
        return;
    }
    m_view = clampedInto(*box, view, &m_zoomed);
    updateCursorShape();
    update();
    Q_EMIT viewChanged();
}

void PlotCanvas::zoomAt(const QPointF& pos, double factor) {
    if (!dataBox() || !(factor > 0)) {
        return;
    }
    const QRectF plot = plotRect();
    const GridBounds v = viewBounds();
    const double fx = std::clamp((pos.x() - plot.left()) / plot.width(), 0.0, 1.0);
    const double fy = std::clamp((pos.y() - plot.top()) / plot.height(), 0.0, 1.0);
    const double x = v.xMin + fx * (v.xMax - v.xMin);
    const double y = v.yMax - fy * (v.yMax - v.yMin);
    const double w = (v.xMax - v.xMin) / factor;
    const double h = (v.yMax - v.yMin) / factor;
    setView({x - fx * w, x + (1 - fx) * w, y - (1 - fy) * h, y + fy * h});
}

void PlotCanvas::panBy(const QPointF& delta) {
    if (!m_zoomed) {
        return;
    }
    const QRectF plot = plotRect();
    const GridBounds v = viewBounds();
    const double dx = -delta.x() / plot.width() * (v.xMax - v.xMin);
    const double dy = delta.y() / plot.height() * (v.yMax - v.yMin);
    setView({v.xMin + dx, v.xMax + dx, v.yMin + dy, v.yMax + dy});
}

void PlotCanvas::resetView() {
    m_zoomed = false;
    updateCursorShape();
    update();
    Q_EMIT viewChanged();
}

void PlotCanvas::hover(const QPointF& /*pos*/, const QPoint& /*globalPos*/) {}

QPointF PlotCanvas::toWidget(double x, double y, const QRectF& plot) const {
    const GridBounds v = viewBounds();
    return {plot.left() + (x - v.xMin) / std::max(1e-300, v.xMax - v.xMin) * plot.width(),
            plot.top() + (v.yMax - y) / std::max(1e-300, v.yMax - v.yMin) * plot.height()};
}

QRectF PlotCanvas::gridImageSource(const QSizeF& imageSize) const {
    const std::optional<GridBounds> box = dataBox();
    if (!box) {
        return {QPointF(0, 0), imageSize};
    }
    const GridBounds& b = *box;
    const GridBounds v = viewBounds();
    const double pw = imageSize.width();
    const double ph = imageSize.height();
    return {(v.xMin - b.xMin) / (b.xMax - b.xMin) * pw, (b.yMax - v.yMax) / (b.yMax - b.yMin) * ph,
            (v.xMax - v.xMin) / (b.xMax - b.xMin) * pw, (v.yMax - v.yMin) / (b.yMax - b.yMin) * ph};
}

void PlotCanvas::drawGridImage(QPainter& p, const QRectF& plot, const QPixmap& grid) const {
    const QRectF source = gridImageSource(grid.size());
    if (p.paintEngine() != nullptr && p.paintEngine()->type() == QPaintEngine::SVG) {
        // Qt's SVG generator ignores the source rectangle and writes the whole image: a picture
        // of a zoomed view draws the part it shows from its own copy.
        const QPixmap part = grid.copy(source.toAlignedRect().intersected(grid.rect()));
        p.drawPixmap(plot, part, QRectF(part.rect()));
        return;
    }
    p.drawPixmap(plot, grid, source);
}

QTransform PlotCanvas::gridToWidget(double gridSize, const QRectF& plot) const {
    const std::optional<GridBounds> box = dataBox();
    if (!box) {
        return {};
    }
    const GridBounds& b = *box;
    const GridBounds v = viewBounds();
    const double sx = (b.xMax - b.xMin) / (v.xMax - v.xMin) * plot.width() / gridSize;
    const double sy = (b.yMax - b.yMin) / (v.yMax - v.yMin) * plot.height() / gridSize;
    return QTransform::fromTranslate(
               plot.left() + (b.xMin - v.xMin) / (v.xMax - v.xMin) * plot.width(),
               plot.top() + (v.yMax - b.yMax) / (v.yMax - v.yMin) * plot.height())
        .scale(sx, sy);
}

void PlotCanvas::updateCursorShape() {
    if (m_panning) {
        setCursor(Qt::ClosedHandCursor);
    } else if (m_zoomed) {
        setCursor(Qt::OpenHandCursor);
    } else {
        unsetCursor();
    }
}

void PlotCanvas::mousePressEvent(QMouseEvent* event) {
    if (event->button() == Qt::LeftButton && m_zoomed) {
        m_panning = true;
        m_panFrom = event->position();
        updateCursorShape();
    }
    QWidget::mousePressEvent(event);
}

void PlotCanvas::mouseMoveEvent(QMouseEvent* event) {
    if (m_panning) {
        panBy(event->position() - m_panFrom);
        m_panFrom = event->position();
    }
    hover(event->position(), event->globalPosition().toPoint());
}

void PlotCanvas::mouseReleaseEvent(QMouseEvent* event) {
    if (event->button() == Qt::LeftButton && m_panning) {
        m_panning = false;
        updateCursorShape();
    }
    QWidget::mouseReleaseEvent(event);
}

void PlotCanvas::mouseDoubleClickEvent(QMouseEvent* event) {
    if (event->button() == Qt::LeftButton) {
        resetView();
    }
}

void PlotCanvas::wheelEvent(QWheelEvent* event) {
    if (!dataBox() || !plotRect().contains(event->position())) {
        event->ignore();
        return;
    }
    zoomAt(event->position(), std::pow(kZoomStep, event->angleDelta().y() / 120.0));
    hover(event->position(), event->globalPosition().toPoint());
    event->accept();
}

void PlotCanvas::keyPressEvent(QKeyEvent* event) {
    const QPointF centre = plotRect().center();
    switch (event->key()) {
        case Qt::Key_Plus:
        case Qt::Key_Equal:  // + without Shift on most layouts
            zoomAt(centre, kZoomStep);
            return;
        case Qt::Key_Minus:
            zoomAt(centre, 1.0 / kZoomStep);
            return;
        case Qt::Key_0:
            resetView();
            return;
        default:
            QWidget::keyPressEvent(event);
    }
}

}  // namespace ensemble::ui
