#pragma once

// The Active learning view's picture. 2-D data: the acquisition score of the current ensemble
// as a heatmap over the grid (the uncertainty heatmaps' colour map, with its colour bar), the
// ensemble's decision boundary, the pool in grey, the labelled rows in their class colours (the
// latest round's picks outlined and numbered 1..n in pick order, so a round reads as a sequence,
// not a blob) and the next picks ringed. A click on a pool point asks to label it; the keys move a
// cursor over the pool in score order (arrows, Home) and Enter labels the point under it; the map
// zooms and pans as PlotCanvas says (a drag that starts off a pool point pans). Image data: the
// digits acquired last with their labels and scores. batchbald, whose batch is not a per-row
// score: the map shows a point's score alone (its BALD score, the first greedy step), and a box
// paints the next batch's greedy gains as bars in pick order with the joint information they
// reach against its bound log K; the picks carry their gains. Only paints: the scores come
// computed from the engine thread (ActiveState).

#include <QPixmap>

#include <cstdint>
#include <vector>

#include "controller/active_job.h"
#include "controller/snapshot.h"
#include "views/plot_canvas.h"

namespace ensemble::ui {

class ActiveCanvas : public PlotCanvas {
    Q_OBJECT

  public:
    explicit ActiveCanvas(QWidget* parent = nullptr);

    void setRun(std::shared_ptr<const RunInfo> run);
    void setState(ActiveStatePtr state);
    // Clicks and Enter label points only when the loop can take them (no round under way).
    void setLabelling(bool allowed);

    // The widget position of train row `row` (2-D data; the plot's centre otherwise).
    QPointF rowPosition(int64_t row) const;
    // The pool row drawn nearest `pos` within a few pixels; -1 when none.
    int64_t poolRowAt(const QPointF& pos) const;
    // The keyboard cursor: a pool row (-1: none), moved in score order.
    int64_t cursorRow() const { return m_cursor; }
    void setCursorRow(int64_t row);
    QRectF plotRect() const override;

    // The latest acquisition's rows (what the last round learnt from, or what waits for the next
    // one) in pick order: the first is drawn numbered 1.
    std::vector<int64_t> latestPicks() const;
    // The number train row `row` is drawn with: its place in latestPicks() from 1; 0 for a row
    // that is not one of them (earlier rounds' picks are plain labelled points).
    int pickNumber(int64_t row) const;
    // Where the numbers go (2-D data, widget coordinates), one per latest pick in pick order:
    // beside its marker, inside the plot, clear of the other numbers where the room allows.
    std::vector<QRectF> pickNumberRects() const;
    QString hoverText() const { return m_hoverText; }

    QSize sizeHint() const override { return {520, 400}; }
    // Small enough that the chart fits under it in a 900 x 600 window with the panel open.
    QSize minimumSizeHint() const override { return {220, 170}; }

  Q_SIGNALS:
    void labelRequested(qint64 row);
    void cursorMoved(qint64 row);

  protected:
    std::optional<GridBounds> dataBox() const override;
    void hover(const QPointF& pos, const QPoint& globalPos) override;  // the pool point's
    void paintEvent(QPaintEvent* event) override;
    void mousePressEvent(QMouseEvent* event) override;
    void leaveEvent(QEvent* event) override;
    void keyPressEvent(QKeyEvent* event) override;

  private:
    void paintMap(QPainter& p);
    void paintDigits(QPainter& p);
    void drawColorBar(QPainter& p, const QRectF& bar) const;
    void drawPickNumbers(QPainter& p) const;
    // batchbald: the next batch's greedy gains as bars in pick order, the joint information
    // they reach and its bound log K, in a box at the bottom left of `area`.
    void paintGains(QPainter& p, const QRectF& area) const;
    // The height paintGains takes (0 when there is nothing to paint).
    double gainsHeight() const;
    QFont pickNumberFont() const;
    // The pool rows by score, highest first (the cursor's order; ties by row).
    const std::vector<int64_t>& rankedPool() const;
    // The score of pool row `row` (NaN when it was not scored).
    double scoreOf(int64_t row) const;
    void moveCursor(int by);

    std::shared_ptr<const RunInfo> m_run;
    ActiveStatePtr m_state;
    bool m_labelling = true;
    int64_t m_cursor = -1;
    mutable std::vector<int64_t> m_ranked;  // rankedPool(), for m_rankedFor
    mutable uint64_t m_rankedFor = 0;
    mutable QPixmap m_pixmap;  // the heatmap, converted on the GUI thread
    mutable uint64_t m_pixmapFor = 0;
    QString m_hoverText;
};

// The colour of an acquisition function's curves and key (one per function, fixed).
QColor acquisitionColor(Acquisition acquisition);
// "BALD (mutual information)", from the acquisition table.
QString acquisitionLabel(Acquisition acquisition);
// The heatmap's title with its unit: "BALD (mutual information) [nats]".
QString acquisitionScoreTitle(Acquisition acquisition);

}  // namespace ensemble::ui
