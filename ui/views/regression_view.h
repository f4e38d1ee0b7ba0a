#pragma once

// The Regression view (1-D regression inputs), Deep Ensembles' figure (Lakshminarayanan et al.
// 2017, fig. 1): the train points (filled) and test points (hollow), the ensemble's predictive
// mean, its ±2σ bands split into the aleatoric part (inner, √E_k σ_k²) and the total (outer,
// aleatoric + epistemic), each included member's mean as a thin line (the selected member in
// the accent colour), and the x range outside the training data shaded. Redrawn from every
// snapshot, so the bands move while the ensemble trains; zoomed and panned as PlotCanvas says.

#include <QWidget>

#include "controller/snapshot.h"
#include "views/plot_canvas.h"

class QCheckBox;
class QLabel;

namespace ensemble::ui {

class RegressionCanvas : public PlotCanvas {
    Q_OBJECT

  public:
    explicit RegressionCanvas(QWidget* parent = nullptr);

    void setSnapshot(SnapshotPtr snapshot);
    void setShowMembers(bool show);

    // The plot's frame and the data-to-widget mapping of the current snapshot and view.
    QRectF plotRect() const override;
    QPointF toWidget(double x, double y) const;
    // The data's box (the view unless zoomed): the y range the targets and the ensemble mean
    // span, padded.
    double yMin() const { return m_yMin; }
    double yMax() const { return m_yMax; }
    double xMin() const;
    double xMax() const;

    // The bands' fill colours (opaque, as drawn over the plot's background).
    static QColor outerBandColor();
    static QColor innerBandColor();

    QSize sizeHint() const override { return {640, 480}; }
    QSize minimumSizeHint() const override { return {320, 240}; }

  protected:
    std::optional<GridBounds> dataBox() const override;
    void paintEvent(QPaintEvent* event) override;

  private:
    using PlotCanvas::toWidget;
    void updateRange();
    void drawAxes(QPainter& p, const QRectF& plot) const;
    void drawLegend(QPainter& p, const QRectF& plot) const;

    SnapshotPtr m_snapshot;
    bool m_showMembers = true;
    double m_yMin = -1.0;
    double m_yMax = 1.0;
};

class RegressionView : public QWidget {
    Q_OBJECT

  public:
    explicit RegressionView(QWidget* parent = nullptr);

    void setSnapshot(SnapshotPtr snapshot);
    void setSelectedMember(int member);
    RegressionCanvas* canvas() const { return m_canvas; }

  private:
    void updateCaption();

    RegressionCanvas* m_canvas = nullptr;
    QCheckBox* m_members = nullptr;
    QCheckBox* m_train = nullptr;
    QCheckBox* m_test = nullptr;
    QLabel* m_caption = nullptr;
    SnapshotPtr m_snapshot;
};

}  // namespace ensemble::ui
