#pragma once

// The Calibration view: the ensemble's reliability diagram (top label: accuracy per
// confidence bin against the diagonal, gaps shaded, empty bins marked, counts shown) over the
// confidence histogram; a table of accuracy, NLL, Brier and ECE for every member, the mean
// member and the ensemble; and the ensemble-size curve (test NLL of the first m members and of
// random m-subsets).

#include <QWidget>

#include "controller/snapshot.h"

class QChart;
class QPainter;
class QChartView;
class QTableWidget;

class QSplitter;

namespace ensemble::ui {

class ReliabilityPlot : public QWidget {
    Q_OBJECT

  public:
    explicit ReliabilityPlot(QWidget* parent = nullptr);
    void setSnapshot(SnapshotPtr snapshot);
    QSize sizeHint() const override { return {520, 460}; }

  protected:
    void paintEvent(QPaintEvent* event) override;

  private:
    // A regression run: the coverage (calibration) curve instead of the reliability bars.
    void paintRegression(QPainter& p) const;

    SnapshotPtr m_snapshot;
};

class CalibrationView : public QWidget {
    Q_OBJECT

  public:
    explicit CalibrationView(QWidget* parent = nullptr);
    void setSnapshot(SnapshotPtr snapshot);
    QTableWidget* table() const { return m_table; }

  protected:
    void showEvent(QShowEvent* event) override;
    // Narrow (a small window): the two panes stack instead of standing side by side.
    void resizeEvent(QResizeEvent* event) override;

  private:
    QSplitter* m_split = nullptr;
    void refresh();
    void refreshSizeCurve();
    // A regression run: RMSE, NLL, coverage and calibration gap per model; the size curve of
    // NLL and RMSE.
    void refreshRegression();

    SnapshotPtr m_snapshot;
    bool m_stale = false;
    ReliabilityPlot* m_plot = nullptr;
    QTableWidget* m_table = nullptr;
    QChart* m_sizeChart = nullptr;
    QChartView* m_sizeView = nullptr;
};

}  // namespace ensemble::ui
