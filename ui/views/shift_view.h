#pragma once

// The Shift view: how the ensemble degrades as its test inputs move. Pick a shift
// (those that apply to the run's data), Run: the engine thread measures the run's ensemble at
// every level — the very report `ensemble-cli shift` writes for the same weights — with
// progress, and Cancel (Esc) stops it (a JobStatusRow). The slider steps through the levels,
// showing the shifted test images or the moved 2-D points over the boundary map, and marks the
// level on the charts: accuracy, NLL, Brier and ECE against the level for the ensemble, the
// members' median and range ("a single network") and both after temperature scaling (Ovadia et al.
// 2019, figure 2); the conformal coverage against 1 − α; the risk–coverage curve of the level.
// Export… writes the figures (PNG), the report (JSON) and its CSVs into a folder.

#include <QWidget>

#include <array>

#include "controller/shift_job.h"
#include "controller/snapshot.h"

class QBoxLayout;
class QChart;
class QChartView;
class QComboBox;
class QDoubleSpinBox;
class QGridLayout;
class QLabel;
class QLineEdit;
class QPushButton;
class QSlider;
class QSpinBox;

namespace ensemble::ui {

class LazyRefresh;

class JobStatusRow;
class ShiftInputs;

class ShiftView : public QWidget {
    Q_OBJECT

  public:
    explicit ShiftView(QWidget* parent = nullptr);
    void setSnapshot(SnapshotPtr snapshot);

    // The request the controls describe (the shift, its levels, α and the test rows).
    ShiftRequest request() const;
    // The engine's answer for the latest request: a cancelled or failed one keeps the figures
    // there were and says why.
    void setOutcome(ShiftOutcomePtr outcome);
    // A new run ended the measurement under way (EngineController::jobsEnded): the figures
    // stay, marked as the previous run's, after a Reset of the same experiment, and go
    // otherwise.
    void endJob(bool sameExperiment);
    // The figures shown are of the run before a Reset.
    bool showsPreviousRun() const { return m_outcome != nullptr && m_fromPreviousRun; }
    // Progress of the measurement under way (predicted rows of all levels).
    void setProgress(qint64 done, qint64 total);
    ShiftOutcomePtr outcome() const { return m_outcome; }
    bool isMeasuring() const { return m_measuring; }
    // The level the slider shows (index into the outcome's levels).
    int levelIndex() const;
    void setLevelIndex(int index);

    // Writes into `directory`: shift.json (the report), shift_levels.csv, risk_coverage.csv
    // and set_sizes.csv (as `shift --csv`), shift.png (the view) and one PNG per figure
    // (shift_accuracy.png … shift_risk_coverage.png, shift_inputs.png), each with its SVG
    // beside it (shift.svg, shift_accuracy.svg, …), each atomically.
    // False with `error` set when there is nothing to export or a file cannot be written (the
    // files written before are removed).
    bool exportTo(const QString& directory, QStringList* written, QString* error);

    QComboBox* shiftBox() const { return m_shift; }
    QLineEdit* levelsEdit() const { return m_levels; }
    QDoubleSpinBox* alphaBox() const { return m_alpha; }
    QSpinBox* subsetBox() const { return m_subset; }
    QPushButton* runButton() const { return m_run; }
    QPushButton* cancelButton() const;
    QPushButton* exportButton() const { return m_export; }
    QSlider* levelSlider() const { return m_slider; }
    ShiftInputs* inputs() const { return m_inputs; }
    QString message() const;

  Q_SIGNALS:
    void shiftRequested(ShiftRequest request);
    void cancelRequested();
    // Export… was clicked: the window asks for a folder and calls exportTo().
    void exportRequested();

  protected:
    void resizeEvent(QResizeEvent* event) override;

  private:
    void start();
    void fillShifts();
    void updateControls();
    void refreshCharts();
    void refreshLevel();
    void arrangeCharts();
    void setMessage(const QString& text, bool error = false);
    QString levelText(int index) const;

    SnapshotPtr m_snapshot;
    ShiftOutcomePtr m_outcome;
    bool m_measuring = false;
    LazyRefresh* m_lazyRefresh =
        nullptr;  // the read-outs, when shown, if a snapshot came while hidden
    bool m_fromPreviousRun = false;
    int m_columns = 0;

    QComboBox* m_shift = nullptr;
    QLineEdit* m_levels = nullptr;
    QDoubleSpinBox* m_alpha = nullptr;
    QSpinBox* m_subset = nullptr;
    QPushButton* m_run = nullptr;
    QPushButton* m_export = nullptr;
    JobStatusRow* m_status = nullptr;
    ShiftInputs* m_inputs = nullptr;
    QSlider* m_slider = nullptr;
    QLabel* m_levelLabel = nullptr;  // the level's figures (a read-out: wraps)
    QBoxLayout* m_body = nullptr;    // the inputs beside the charts, or above when narrow
    QGridLayout* m_grid = nullptr;
    // Accuracy, NLL, Brier, ECE, coverage, risk–coverage.
    static constexpr int kCharts = 6;
    std::array<QChart*, kCharts> m_charts{};
    std::array<QChartView*, kCharts> m_chartViews{};
};

}  // namespace ensemble::ui
