#pragma once

// The Reproduce view: the published experiments of the engine's registry
// (engine/reproduce/reproduce.h) with the facts `ensemble-cli reproduce --list` prints (paper,
// levels, runs, --quick, cost, data present), one of them run on the engine thread with the
// chosen level and count (EngineController::runReproduction: runReproduction, the CLI's own
// function, so its table is the CLI's report bit for bit), with progress (run i of n, level,
// step) and Cancel (Esc), which keeps the runs that finished. The ours-against-paper table is
// filled from reportJson after every run, and the figure of the paper's numbers beside ours
// (figureSvg) drawn under it; Copy as command gives the `ensemble-cli reproduce` line of the
// options; Export… writes the report, the CSVs and the figure (SVG and PNG) into a folder, each
// file atomically. It needs no run of the window, only the engine thread, which it shares with one.

#include <QString>
#include <QStringList>
#include <QWidget>

#include "controller/reproduce_job.h"
#include "controller/snapshot.h"

class QCheckBox;
class QComboBox;
class QLabel;
class QPushButton;
class QSpinBox;
class QTableWidget;

namespace ensemble::ui {

class JobStatusRow;
class ReproduceFigure;
class WrappingLabel;

// The results table's columns. Beside: another published column of the same table ("MC
// dropout" beside Deep Ensembles'), hidden for a result without one.
enum class ReproduceColumn { Level, Figure, Kind, Ours, N, Paper, Beside, Verdict, Why };
inline constexpr int kReproduceColumnCount = 9;

// The roles of the results table's cells that hold the report's numbers exactly: Ours holds
// the mean and the standard error (NaN where the report has null), N the count.
inline constexpr int kReproduceMeanRole = Qt::UserRole;
inline constexpr int kReproduceSeRole = Qt::UserRole + 1;

class ReproduceView : public QWidget {
    Q_OBJECT

  public:
    explicit ReproduceView(QWidget* parent = nullptr);
    // The view needs no run; the window hands it each snapshot as every view's.
    void setSnapshot(const SnapshotPtr& snapshot);

    // The options shown, as a request: the chosen row, level ("" for all), count, Quick.
    ReproduceRequest request() const;
    // The `ensemble-cli reproduce` line of request() (Copy as command).
    QString commandLine() const;
    // Chooses the row `id` (false when the registry has none); the level goes back to all.
    bool setReproduction(const QString& id);
    // One level of the chosen row ("" or unknown: all of them).
    void setLevel(const QString& level);
    void setCount(int count);  // 0: the row's counts (or --quick's)
    void setQuick(bool quick);

    // Asks the engine to run request() (the Run button).
    void startRun();
    void setProgress(const ReproduceJobProgress& progress);
    // The engine's answer for the latest request: a cancelled one shows the runs that finished;
    // a failed one says why and keeps what was shown.
    void setOutcome(ReproduceOutcomePtr outcome);
    // A new run, Reset or Open ended the reproduction under way (EngineController::endJobs):
    // the table judged after its last finished run stays, said to be partial. A reproduction
    // does not depend on the window's experiment, so a finished one stays as it was.
    void endJob();
    bool isRunning() const { return m_running; }

    // What the table shows (null before any run): the result and its report.
    ReproduceStatePtr state() const { return m_state; }
    // Writes reproduceExportFiles(state()) and the figure as figure.png into `directory`
    // (created if need be), each file atomically (sys/atomic_file.h), and records them on the
    // run's entry ("report", "csv", "figure").
    // False with `error` set when there is nothing to export or a file cannot be written (the
    // files this export wrote are removed).
    bool exportTo(const QString& directory, QStringList* written, QString* error);

    QTableWidget* reproductionList() const { return m_list; }
    QComboBox* levelBox() const { return m_level; }
    QSpinBox* countBox() const { return m_count; }
    QCheckBox* quickBox() const { return m_quick; }
    QPushButton* runButton() const { return m_run; }
    QPushButton* cancelButton() const;
    QPushButton* copyButton() const { return m_copy; }
    QPushButton* exportButton() const { return m_export; }
    QTableWidget* table() const { return m_table; }
    ReproduceFigure* figure() const { return m_figure; }
    QString message() const;
    QString progressText() const;
    QString summary() const;

  Q_SIGNALS:
    void runRequested(ensemble::ui::ReproduceRequest request);
    void cancelRequested();
    // Export… was clicked: the window asks for a folder and calls exportTo().
    void exportRequested();

  private:
    void fillList();
    // The chosen row changed: its levels, its count's unit, its details.
    void rowChanged();
    void updateControls();
    void copyCommand();
    // Shows `state`: the table from its report and the summary under it.
    void showState(const ReproduceStatePtr& state, bool partial);
    void setMessage(const QString& text, bool error = false);

    ReproduceStatePtr m_state;
    ReproduceStatePtr m_stateBeforeRun;  // shown when Run was pressed (until a run of it is judged)
    // The runs store's entry of the reproduction shown (null: not recorded, or a job the
    // window ended, whose outcome never came): Export… adds its files to it.
    std::shared_ptr<runs::RunRecorder> m_entry;
    bool m_running = false;
    bool m_trainingRuns = false;  // the window's run is training (it waits for a reproduction)

    QTableWidget* m_list = nullptr;
    WrappingLabel* m_details = nullptr;
    QComboBox* m_level = nullptr;
    QLabel* m_countLabel = nullptr;
    QSpinBox* m_count = nullptr;
    QCheckBox* m_quick = nullptr;
    QPushButton* m_run = nullptr;
    QPushButton* m_copy = nullptr;
    QPushButton* m_export = nullptr;
    WrappingLabel* m_command = nullptr;
    JobStatusRow* m_status = nullptr;
    QTableWidget* m_table = nullptr;
    WrappingLabel* m_summary = nullptr;
    ReproduceFigure* m_figure = nullptr;
};

}  // namespace ensemble::ui
