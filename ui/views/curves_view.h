#pragma once

// The Curves view (Qt Charts): train and test loss and accuracy against the step, every
// member as a thin line and the ensemble bold; a log-scale toggle for the loss; hovering a
// line reads its value.

#include <QElapsedTimer>
#include <QTimer>
#include <QWidget>

#include <QList>
#include <QPointF>

#include <memory>
#include <vector>

#include "controller/snapshot.h"
#include "metrics/curve_store.h"

class QCheckBox;
class QComboBox;
class QLabel;
class QChart;
class QChartView;
class QLineSeries;
class QAbstractAxis;
class QPushButton;
class QXYSeries;

namespace ensemble::ui {

class LazyRefresh;

class LearningCurves;
class ChartLegend;

// A horizontal colour key: the member lines' colours (viridis over log lr) from the lowest to
// the highest learning rate, with both ends labelled.
class ColorKey : public QWidget {
    Q_OBJECT

  public:
    explicit ColorKey(QWidget* parent = nullptr);
    void setRange(const QString& name, double lo, double hi);
    QString text() const;  // "lr 0.001 … 0.1" (tests, tooltip)
    QSize sizeHint() const override;
    QSize minimumSizeHint() const override { return sizeHint(); }

  protected:
    void paintEvent(QPaintEvent* event) override;

  private:
    QString m_name;
    double m_lo = 0.0;
    double m_hi = 1.0;
};

class CurvesView : public QWidget {
    Q_OBJECT

  public:
    explicit CurvesView(QWidget* parent = nullptr);

    void setSnapshot(SnapshotPtr snapshot);
    void setLogScale(bool log);
    // Points of the ensemble's test-loss line (for tests).
    int ensemblePointCount() const;
    // Points held by every series of both charts: bounded by the plot's width, whatever the
    // run's length.
    int drawnPointCount() const;
    // Shows steps [from, to] only (drawn from the store's finer buckets); resetZoom(): all.
    void zoomTo(double from, double to);
    void resetZoom();
    bool isZoomed() const { return m_zoomed; }

  protected:
  private:
    ChartLegend* m_chartLegend = nullptr;

    struct Chart {
        QChart* chart = nullptr;
        QChartView* view = nullptr;
        std::vector<QLineSeries*> members;
        QLineSeries* ensembleTrain = nullptr;
        QLineSeries* ensembleTest = nullptr;
        QAbstractAxis* x = nullptr;
        QAbstractAxis* y = nullptr;
    };

    void rebuild();
    void refresh();
    void setupChart(Chart& c, bool loss);
    void setYAxis(Chart& c, bool log);
    int pointBudget() const;
    QList<QPointF> drawnPoints(const CurveStore& curve, bool loss, int budget) const;

    SnapshotPtr m_snapshot;
    uint64_t m_builtFor = 0;  // RunInfo::runId of the series, 0: none
    // What the series show: the curves, the point budget and the zoom they were drawn for.
    std::shared_ptr<const LearningCurves> m_drawnCurves;
    int m_pointBudget = 0;
    bool m_drawnZoom = false;
    bool m_zoomed = false;
    double m_zoomFrom = 0.0;
    double m_zoomTo = 0.0;
    bool m_settingRange = false;
    QPushButton* m_resetZoom = nullptr;
    QElapsedTimer m_lastDraw;  // since the last redraw of the series
    QTimer m_drawTimer;        // the next redraw, when snapshots come faster than kMinDrawMs
    int m_memberSplit = 1;     // 0 none, 1 test, 2 train
    bool m_log = false;
    LazyRefresh* m_lazyRefresh = nullptr;  // refresh() when shown, if a snapshot came while hidden
    std::vector<int> m_shownMembers;       // members drawn as lines (at most kMaxMemberLines)
    Chart m_loss;
    Chart m_accuracy;
    QComboBox* m_split = nullptr;
    QCheckBox* m_logBox = nullptr;
    QLabel* m_legend = nullptr;
    ColorKey* m_key = nullptr;  // lr -> colour of the member lines, shown when lr varies
};

}  // namespace ensemble::ui
