#pragma once

// The Methods view's pictures for 2-D data: one small canvas per compared method, each its
// ensemble's epistemic map (mutual information, the uncertainty maps' viridis) over the shared
// grid with its decision boundary and the train points, titled with the method's label; and one
// colour bar for all of them, since every map is coloured on the same scale (MethodsOutcome::
// epistemicHigh), so the methods compare by colour. Only paints: the maps come coloured from
// the engine thread.

#include <QPixmap>
#include <QWidget>

#include <memory>
#include <vector>

#include "controller/methods_job.h"

class QGridLayout;

namespace ensemble::ui {

// A method's name for people ("MC dropout"), the maps' captions' and the table's.
QString methodLabel(EnsembleMethod method);

// One method's map.
class MethodMap : public QWidget {
    Q_OBJECT

  public:
    explicit MethodMap(QWidget* parent = nullptr);
    // `run` (may be null) gives the train points, drawn when its grid box is the figure's.
    void setFigure(const MethodFigure& figure, const GridBounds& bounds,
                   std::shared_ptr<const RunInfo> run);
    const MethodFigure& figure() const { return m_figure; }
    QString title() const;
    QRectF plotRect() const;

    QSize sizeHint() const override { return {220, 240}; }
    QSize minimumSizeHint() const override { return {130, 150}; }

  protected:
    void paintEvent(QPaintEvent* event) override;

  private:
    MethodFigure m_figure;
    GridBounds m_bounds;
    std::shared_ptr<const RunInfo> m_run;
    QPixmap m_pixmap;  // the map, converted on the GUI thread
};

// The shared colour bar: [0, high] nats of mutual information.
class EpistemicBar : public QWidget {
    Q_OBJECT

  public:
    explicit EpistemicBar(QWidget* parent = nullptr);
    void setRange(double high);
    double high() const { return m_high; }

    QSize sizeHint() const override { return {86, 240}; }
    QSize minimumSizeHint() const override { return {86, 150}; }

  protected:
    void paintEvent(QPaintEvent* event) override;

  private:
    double m_high = 0.0;
};

// The row of maps and the bar, wrapping to more rows when the view is narrow.
class MethodsMaps : public QWidget {
    Q_OBJECT

  public:
    explicit MethodsMaps(QWidget* parent = nullptr);
    // The outcome's figures (none: the row is empty and hidden by the view).
    void setOutcome(const MethodsOutcomePtr& outcome, std::shared_ptr<const RunInfo> run);
    void clear();
    int count() const { return static_cast<int>(m_maps.size()); }
    MethodMap* map(int i) const { return m_maps[static_cast<std::size_t>(i)]; }
    EpistemicBar* bar() const { return m_bar; }

  protected:
    void resizeEvent(QResizeEvent* event) override;

  private:
    void arrange();

    QGridLayout* m_grid = nullptr;
    std::vector<MethodMap*> m_maps;
    EpistemicBar* m_bar = nullptr;
    int m_columns = 0;
};

}  // namespace ensemble::ui
