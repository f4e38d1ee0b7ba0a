#pragma once

// The Sweep view: each member's current test NLL and accuracy against its hyperparameter
// (learning rate on a log axis by default; weight decay, momentum or the member index), with
// the ensemble and the mean member as reference lines.

#include <QWidget>

#include "controller/snapshot.h"

class QChart;
class QChartView;
class QComboBox;

namespace ensemble::ui {

class LazyRefresh;

class ChartLegend;

class SweepView : public QWidget {
    Q_OBJECT

  public:
    explicit SweepView(QWidget* parent = nullptr);
    void setSnapshot(SnapshotPtr snapshot);
    // The hyperparameter on the x axis: "lr", "weight_decay", "momentum" or "member".
    void setParameter(const QString& key);
    QString parameter() const;
    bool logAxis() const { return m_log; }

  protected:
  private:
    void refresh();
    void fill(QChart* chart, bool loss);

    SnapshotPtr m_snapshot;
    uint64_t m_chosenFor = 0;              // RunInfo::runId the parameter was chosen for
    LazyRefresh* m_lazyRefresh = nullptr;  // refresh() when shown, if a snapshot came while hidden
    bool m_log = false;
    QComboBox* m_parameter = nullptr;
    ChartLegend* m_legend = nullptr;
    QChart* m_lossChart = nullptr;
    QChart* m_accChart = nullptr;
};

}  // namespace ensemble::ui
