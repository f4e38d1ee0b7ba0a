#pragma once

// The Methods view: is the ensemble worth K networks? The methods of the registry
// (model/ensemble_methods.h), each checked by default, trained on the current experiment's
// config with the same data, K, steps and seed and measured side by side by the engine's
// compareMethods on the engine thread (the numbers of `ensemble-cli compare` for that config),
// with progress (method i of n, its step) and Cancel (Esc), which keeps the methods that
// finished. For 2-D data a row of small maps, one per method: its ensemble's decision boundary
// over its epistemic (mutual information) map, all on one colour scale (MethodsMaps). For every
// classification dataset the table of the report's columns with their units, sortable; Copy
// puts it on the clipboard as TSV, Save report… writes compareReportJson (or the CSV) to a file.
// A new experiment (another config) clears the results, which were of the one before.

#include <QTableWidget>
#include <QWidget>

#include <vector>

#include "compare/compare.h"
#include "controller/methods_job.h"
#include "controller/snapshot.h"

class QListWidget;
class QPushButton;

namespace ensemble::ui {

class ElidedLabel;
class FrozenColumn;
class JobStatusRow;
class MethodsMaps;
class WrappingLabel;

// The table's columns, in the report's order after the method.
enum class MethodsColumn {
    Method,
    Accuracy,
    Nll,
    Brier,
    Ece,
    OodAuroc,
    OodMeanMi,
    ShiftNll,
    Parameters,
    TrainSeconds,
    PredictSeconds,
    PeakRss
};
inline constexpr int kMethodsColumnCount = 12;

class MethodsView : public QWidget {
    Q_OBJECT

  public:
    explicit MethodsView(QWidget* parent = nullptr);
    void setSnapshot(SnapshotPtr snapshot);

    // The checked methods, in the registry's order.
    std::vector<EnsembleMethod> checkedMethods() const;
    void setChecked(EnsembleMethod method, bool checked);
    // Asks the engine to compare `methods` (the Compare button: the checked ones).
    void startComparison(const std::vector<EnsembleMethod>& methods);
    void setProgress(const CompareProgress& progress);
    // The engine's answer for the latest request: a cancelled one shows the methods that
    // finished; a failed one says why and keeps what was shown.
    void setOutcome(MethodsOutcomePtr outcome);
    // A new run ended the comparison under way (EngineController::jobsEnded): the results stay,
    // marked as the previous run's, after a Reset of the same experiment, and go otherwise.
    void endJob(bool sameExperiment);
    // The results shown are of the run before a Reset.
    bool showsPreviousRun() const { return m_outcome != nullptr && m_fromPreviousRun; }
    MethodsOutcomePtr outcome() const { return m_outcome; }
    bool isComparing() const { return m_comparing; }

    // The table as text: a header row (with units) and a row per method in the order shown,
    // fields separated by `separator` (a tab for Copy).
    QString tableText(QChar separator) const;
    // Writes the report to `path` atomically (sys/atomic_file.h): compareReportJson as JSON, or
    // compareCsv when the name ends in .csv. False with `error` set when there is no result or
    // the file cannot be written (nothing is left behind).
    bool saveReport(const QString& path, QString* error) const;

    QListWidget* methodList() const { return m_list; }
    QPushButton* compareButton() const { return m_compare; }
    QPushButton* cancelButton() const;
    QPushButton* copyButton() const { return m_copy; }
    QPushButton* saveButton() const { return m_save; }
    QTableWidget* table() const { return m_table; }
    FrozenColumn* frozenColumn() const { return m_frozen; }
    MethodsMaps* maps() const { return m_maps; }
    QString message() const;
    QString progressText() const;

  protected:
    // Space in the method list checks the method under the cursor rather than training.
    bool eventFilter(QObject* watched, QEvent* event) override;

  Q_SIGNALS:
    void compareRequested(std::vector<ensemble::EnsembleMethod> methods);
    void cancelRequested();
    // Save report… was clicked: the window asks for a file and calls saveReport().
    void saveRequested();

  private:
    void copyTable();
    void updateControls();
    // Shows m_outcome: the table, the maps and the note under them.
    void showOutcome();
    void clearResults(const QString& why);
    void setMessage(const QString& text, bool error = false);
    // What Compare will train before it runs: "K = 16, 3,000 steps, seed 0" (empty: no run).
    QString plan() const;
    // The idle message, with the plan: what a comparison costs is said before it starts.
    void showPlan();

    SnapshotPtr m_snapshot;
    MethodsOutcomePtr m_outcome;
    bool m_comparing = false;
    bool m_showingPlan = false;  // the message is showPlan()'s (a new run refreshes it)
    bool m_fromPreviousRun = false;

    QListWidget* m_list = nullptr;
    QPushButton* m_compare = nullptr;
    QPushButton* m_copy = nullptr;
    QPushButton* m_save = nullptr;
    JobStatusRow* m_status = nullptr;
    MethodsMaps* m_maps = nullptr;
    WrappingLabel* m_note = nullptr;
    QTableWidget* m_table = nullptr;
    FrozenColumn* m_frozen = nullptr;  // the Method column over the table's left edge
};

}  // namespace ensemble::ui
