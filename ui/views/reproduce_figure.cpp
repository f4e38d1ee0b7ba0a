#include "views/reproduce_figure.h"

#include <QFrame>
#include <QPainter>
#include <QResizeEvent>
#include <QScrollBar>
#include <QSvgRenderer>

#include <algorithm>
#include <cmath>

namespace ensemble::ui {

namespace {

// The picture inside the pane: the renderer drawn over the whole widget.
class SvgPicture : public QWidget {
  public:
    SvgPicture(QSvgRenderer* renderer, QWidget* parent) : QWidget(parent), m_renderer(renderer) {}

  protected:
    void paintEvent(QPaintEvent*) override {
        QPainter p(this);
        p.fillRect(rect(), Qt::white);
        if (m_renderer->isValid()) {
            m_renderer->render(&p, QRectF(rect()));
        }
    }

  private:
    QSvgRenderer* m_renderer;
};

}  // namespace

ReproduceFigure::ReproduceFigure(QWidget* parent) : QScrollArea(parent) {
    setFrameShape(QFrame::NoFrame);
    setVerticalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
    setHorizontalScrollBarPolicy(Qt::ScrollBarAsNeeded);
    setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Fixed);
    m_renderer = new QSvgRenderer(this);
    m_picture = new SvgPicture(m_renderer, this);
    setWidget(m_picture);
    setVisible(false);
}

bool ReproduceFigure::setSvg(const QByteArray& svg) {
    m_svg = svg;
    const bool ok = !svg.isEmpty() && m_renderer->load(svg);
    setVisible(ok);
    if (ok) {
        setToolTip(
            tr("The figure of `ensemble-cli reproduce --figure`: ours beside the paper's "
               "numbers (Export… writes it as SVG and PNG)"));
        fit();
        m_picture->update();
    }
    return ok;
}

QImage ReproduceFigure::render(double scale) const {
    if (!m_renderer->isValid()) {
        return {};
    }
    const QSizeF size = m_renderer->defaultSize() * scale;
    QImage image(QSize(static_cast<int>(std::ceil(size.width())),
                       static_cast<int>(std::ceil(size.height()))),
                 QImage::Format_ARGB32_Premultiplied);
    image.fill(Qt::white);
    QPainter p(&image);
    p.setRenderHint(QPainter::Antialiasing);
    m_renderer->render(&p, QRectF(QPointF(0, 0), size));
    return image;
}

void ReproduceFigure::resizeEvent(QResizeEvent* event) {
    QScrollArea::resizeEvent(event);
    if (event->size().width() != event->oldSize().width()) {
        fit();
    }
}

void ReproduceFigure::fit() {
    if (!m_renderer->isValid()) {
        return;
    }
    const QSize own = m_renderer->defaultSize();
    if (own.width() <= 0 || own.height() <= 0) {
        return;
    }
    m_scale = std::clamp(static_cast<double>(width()) / own.width(), kMinScale, 1.0);
    const QSize shown(static_cast<int>(std::lround(own.width() * m_scale)),
                      static_cast<int>(std::lround(own.height() * m_scale)));
    m_picture->setFixedSize(shown);
    const int bar = shown.width() > width() ? horizontalScrollBar()->sizeHint().height() : 0;
    setFixedHeight(shown.height() + bar);
}

}  // namespace ensemble::ui
