#pragma once

// The Calibration view: the ensemble's reliability diagram (top label: accuracy per
// confidence bin against the diagonal, gaps shaded, empty bins marked, counts shown) over the
// confidence histogram; a table of accuracy, NLL, Brier and ECE for every member, the mean
// member and the ensemble; and the ensemble-size curve (test NLL of the first m members and of
// random m-subsets).
//
// Compare with… adds a second trained ensemble (a .safetensors file, controller/comparison.h)
// measured on the same test rows: its headline rows and members under the run's in the table,
// each headline followed by the difference (file − run), and its reliability (or regression
// calibration) curve drawn over the run's.

#include <QWidget>

#include <memory>

#include "controller/comparison.h"
#include "controller/snapshot.h"

class QChart;
class QChartView;
class QPushButton;
class QTableWidget;

class QSplitter;

namespace ensemble::ui {

class LazyRefresh;

class ChartLegend;
class JobStatusRow;
class ReliabilityPlot;

class CalibrationView : public QWidget {
    Q_OBJECT

  public:
    explicit CalibrationView(QWidget* parent = nullptr);
    void setSnapshot(SnapshotPtr snapshot);
    QTableWidget* table() const { return m_table; }
    // The second ensemble shown beside the run (null clears it). Dropped by itself, with a
    // message, when a later run uses another dataset.
    void setComparison(std::shared_ptr<const Comparison> comparison);
    std::shared_ptr<const Comparison> comparison() const { return m_comparison; }
    // The line above the plot: what is compared, a measurement under way, or why not.
    void setComparisonMessage(const QString& text, bool error = false);
    QString comparisonMessage() const;
    QPushButton* compareButton() const { return m_compareButton; }
    // The comparison's status row: its progress, message and Cancel (Esc).
    JobStatusRow* comparisonStatus() const { return m_compareStatus; }
    // A file named `name` is being measured (EngineController::compareWith): Compare with… waits.
    void startComparison(const QString& name);
    // Its result: shown when measured; a failure says why and a cancel what stays.
    void finishComparison(const ComparisonResult& result);
    // A new run ended the measurement under way (EngineController::jobsEnded).
    void endJob();
    bool isComparing() const { return m_comparing; }
    // The table's ensemble row: "ensemble (16 members)", or "ensemble (15 of 16 members)"
    // when only `included` of `members` are in its average.
    static QString ensembleLabel(int included, int members);

  Q_SIGNALS:
    // Compare with… was clicked: the window asks for a file and measures it.
    void compareRequested();
    // Cancel (or Esc) while a file is measured.
    void cancelComparisonRequested();

  protected:
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
    std::shared_ptr<const Comparison> m_comparison;
    LazyRefresh* m_lazyRefresh = nullptr;  // refresh() when shown, if a snapshot came while hidden
    QPushButton* m_compareButton = nullptr;
    QPushButton* m_clearButton = nullptr;
    JobStatusRow* m_compareStatus = nullptr;
    bool m_comparing = false;
    ReliabilityPlot* m_plot = nullptr;
    QTableWidget* m_table = nullptr;
    QChart* m_sizeChart = nullptr;
    QChartView* m_sizeView = nullptr;
    ChartLegend* m_sizeLegend = nullptr;
};

}  // namespace ensemble::ui
