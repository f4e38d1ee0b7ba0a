#include "views/shift_inputs.h"

#include <QPainter>

#include <algorithm>
#include <cmath>

#include "render/colormap.h"
#include "render/plot_helpers.h"

namespace ensemble::ui {

ShiftInputs::ShiftInputs(QWidget* parent) : QWidget(parent) {
    setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Expanding);
}

void ShiftInputs::setImages(std::vector<QImage> images) {
    m_images = std::move(images);
    m_points.clear();
    m_labels.clear();
    m_map = {};
    update();
}

void ShiftInputs::setPoints(QImage map, const GridBounds& bounds, QRectF frame,
                            std::vector<QPointF> points, std::vector<int> labels, int classes) {
    m_images.clear();
    m_map = std::move(map);
    m_bounds = bounds;
    m_frame = frame;
    m_points = std::move(points);
    m_labels = std::move(labels);
    m_classes = std::max(classes, 2);
    update();
}

void ShiftInputs::clear() {
    m_images.clear();
    m_points.clear();
    m_labels.clear();
    m_map = {};
    update();
}

void ShiftInputs::setCaption(const QString& caption) {
    m_caption = caption;
    setToolTip(caption);
    update();
}

void ShiftInputs::paintEvent(QPaintEvent*) {
    QPainter p(this);
    p.fillRect(rect(), plot::kBackground);
    const int captionHeight = fontMetrics().height() + 6;
    QRectF area = QRectF(rect()).adjusted(6, 6, -6, -6 - captionHeight);
    // A square picture, centred.
    const double side = std::min(area.width(), area.height());
    area = QRectF(area.center().x() - side / 2, area.top(), side, side);
    if (!m_images.empty()) {
        paintImages(p, area);
    } else if (!m_points.empty()) {
        paintPoints(p, area);
    } else {
        p.setPen(plot::kMuted);
        p.drawText(area, Qt::AlignCenter | Qt::TextWordWrap, tr("Run a shift to see its inputs"));
    }
    p.setPen(plot::kText);
    const QRectF captionRect(6, height() - captionHeight, width() - 12, captionHeight);
    p.drawText(captionRect, Qt::AlignCenter,
               fontMetrics().elidedText(m_caption, Qt::ElideRight, int(captionRect.width())));
}

void ShiftInputs::paintImages(QPainter& p, const QRectF& area) const {
    const int n = static_cast<int>(m_images.size());
    const int columns = static_cast<int>(std::ceil(std::sqrt(double(n))));
    const int rows = (n + columns - 1) / columns;
    const double cell = std::min(area.width() / columns, area.height() / rows);
    const double gap = std::max(1.0, cell * 0.04);
    p.setRenderHint(QPainter::SmoothPixmapTransform, false);  // pixels stay pixels
    for (int i = 0; i < n; ++i) {
        const QRectF target(area.left() + (i % columns) * cell + gap / 2,
                            area.top() + (i / columns) * cell + gap / 2, cell - gap, cell - gap);
        p.drawImage(target, m_images[static_cast<std::size_t>(i)]);
    }
}

void ShiftInputs::paintPoints(QPainter& p, const QRectF& area) const {
    p.setRenderHint(QPainter::Antialiasing);
    const QRectF& f = m_frame;
    const auto toScreen = [&](double x, double y) {
        return QPointF(area.left() + (x - f.left()) / f.width() * area.width(),
                       area.bottom() - (y - f.top()) / f.height() * area.height());
    };
    // Beyond the grid the ensemble was not evaluated: grey, the map inside its bounds.
    p.fillRect(area, QColor(232, 232, 232));
    const QRectF mapRect(toScreen(m_bounds.xMin, m_bounds.yMax),
                         toScreen(m_bounds.xMax, m_bounds.yMin));
    if (!m_map.isNull()) {
        p.drawImage(mapRect, m_map);
    }
    p.setPen(QPen(plot::kAxis, 1));
    p.setBrush(Qt::NoBrush);
    p.drawRect(mapRect);
    for (std::size_t i = 0; i < m_points.size(); ++i) {
        const int label = i < m_labels.size() ? m_labels[i] : 0;
        p.setPen(QPen(Qt::white, 0.8));
        p.setBrush(classColor(label, m_classes));
        p.drawEllipse(toScreen(m_points[i].x(), m_points[i].y()), 3.2, 3.2);
    }
    p.setPen(QPen(plot::kAxis, 1));
    p.setBrush(Qt::NoBrush);
    p.drawRect(area);
}

}  // namespace ensemble::ui
