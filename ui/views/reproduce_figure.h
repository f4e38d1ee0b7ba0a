#pragma once

// The Reproduce view's figure: the SVG document the engine draws of a result
// (reproduce/figure.h, the bytes `ensemble-cli reproduce --figure` writes), shown through Qt
// SVG's renderer at the width the view gives it, but never below kMinScale of its own size: at
// 900 x 600 with the Experiment panel open its 12-px text would otherwise shrink below reading,
// so it scrolls sideways in its own pane instead (the view itself scrolls only downwards).
// Also renders the document to a PNG for Export….

#include <QByteArray>
#include <QImage>
#include <QScrollArea>

class QSvgRenderer;

namespace ensemble::ui {

class ReproduceFigure : public QScrollArea {
    Q_OBJECT

  public:
    // The smallest scale the figure is shown at, of its document's own size.
    static constexpr double kMinScale = 0.8;

    explicit ReproduceFigure(QWidget* parent = nullptr);

    // Shows `svg` (empty: nothing; the pane hides). False when Qt SVG cannot read it.
    bool setSvg(const QByteArray& svg);
    QByteArray svg() const { return m_svg; }
    // The scale the figure is drawn at now (1: its document's size).
    double scale() const { return m_scale; }
    // The document drawn at `scale` of its size on white, for a PNG (null when none is shown).
    QImage render(double scale) const;

  protected:
    void resizeEvent(QResizeEvent* event) override;

  private:
    // Sizes the picture to the pane's width within [kMinScale, 1] of the document's size, and
    // asks the layout for its height.
    void fit();

    QByteArray m_svg;
    QSvgRenderer* m_renderer = nullptr;
    QWidget* m_picture = nullptr;
    double m_scale = 1.0;
};

}  // namespace ensemble::ui
