#pragma once

// The Runs view: every run the app and ensemble-cli recorded (the runs store,
// engine/runs/run_store.h), as a table read a page at a time (RunsModel), filtered with the
// CLI's filter syntax, sorted by a header click, with columns the person chooses (remembered).
// One entry selected shows its summary, files, reproducing command, note and tags, config and
// learning curves; two or more overlay their curves and list what differs (runDifferences).
// Tag, note, delete (its files only when asked), export as CSV (the CLI's bytes), and "Open as
// experiment", which the window turns into File > Open of the run's weights or the config loaded
// into the Experiment panel (runs_open.cpp). Reads happen on the GUI thread, one page at a time;
// while shown the view polls the store's count every few seconds.

#include <QStringList>
#include <QWidget>

#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "controller/snapshot.h"
#include "runs/run_store.h"

class QChart;
class QCheckBox;
class QChartView;
class QComboBox;
class QLabel;
class QLineEdit;
class QPlainTextEdit;
class QPushButton;
class QStackedWidget;
class QTabWidget;
class QTableView;
class QTableWidget;
class QTimer;
class QToolButton;

namespace ensemble::ui {

class ChartLegend;
class RunsModel;
class WrappingLabel;

class RunsView : public QWidget {
    Q_OBJECT

  public:
    explicit RunsView(QWidget* parent = nullptr);
    ~RunsView() override;
    // A new run of the window: the table may have gained an entry.
    void setSnapshot(SnapshotPtr snapshot);

    // Shows the store at `path` (tests; the view otherwise opens runs::defaultRunStorePath()
    // when first shown). False when it cannot be opened: the view says why instead of the table.
    bool openStore(const QString& path);
    // The message shown instead of the table (a store that cannot be opened or read, recording
    // off); empty while the table shows.
    QString storeMessage() const;

    // Applies a filter text (parseFilter's syntax, the CLI's). False when it does not parse:
    // the error shows beside the field and the table keeps the last good filter.
    bool applyFilter(const QString& text);
    QString filterError() const;
    // The columns (store fields: "id", "figure.test_nll", "config.optimizer.lr"), remembered in
    // QSettings.
    void setColumns(const QStringList& fields);
    QStringList columns() const;

    std::vector<std::int64_t> selectedIds() const;
    // Selects the loaded rows of these ids (the details follow).
    void selectIds(const std::vector<std::int64_t>& ids);
    // The Differences tab's fields (two or more selected), in its order.
    QStringList differingFields() const;
    // The runs whose curves the chart draws, in order (the legend names them).
    std::vector<std::int64_t> chartedIds() const { return m_charted; }

    // The edits; each says what failed in `error` (a read-only store) and refreshes the table.
    bool tagRuns(const std::vector<std::int64_t>& ids, const QString& tag, bool remove,
                 QString* error = nullptr);
    bool setNote(std::int64_t id, const QString& note, QString* error = nullptr);
    // Removes the entries, and the files they wrote when `withFiles`.
    bool removeRuns(const std::vector<std::int64_t>& ids, bool withFiles, QString* error = nullptr);
    // Writes the table (every entry the filter keeps, in its order, the columns shown) as CSV:
    // the bytes of `ensemble-cli runs export --out F.csv` with the same filter, sort, columns.
    bool exportCsv(const QString& path, QString* error = nullptr);
    // Reads the store again (F5); opens it again when it could not be opened.
    void refresh();
    // Del: asks (a check box for the files that still exist), then removes the selected.
    void deleteSelected();
    // Enter: asks the window to open the selected run (openRequested).
    void openSelected();

    // The "Record" switch: whether the window records its new runs (the window keeps the
    // setting; recordingToggled() says the person changed it).
    void setRecording(bool on);
    bool recording() const;

    RunsModel* model() const { return m_model; }
    QTableView* table() const { return m_table; }
    QLineEdit* filterEdit() const { return m_filter; }
    QLineEdit* noteEdit() const { return m_note; }
    QLineEdit* tagsEdit() const { return m_tags; }
    QPlainTextEdit* summaryText() const { return m_summary; }
    QPlainTextEdit* configText() const { return m_config; }
    QTableWidget* differencesTable() const { return m_differences; }
    QChart* chart() const { return m_chart; }
    QTabWidget* detailTabs() const { return m_details; }

  Q_SIGNALS:
    // "Open as experiment": the run's config (JSON text) and, when it left an export or a
    // checkpoint that still exists, that file (empty otherwise).
    void openRequested(const QString& configJson, const QString& weightsPath);
    void recordingToggled(bool on);

  protected:
    void showEvent(QShowEvent* event) override;
    void hideEvent(QHideEvent* event) override;

  private:
    void buildControls(QWidget* page);
    QWidget* buildDetails();
    void ensureOpen();
    void showStoreState();
    void onStoreFailed(const QString& message);
    void onSortChanged();
    void poll();
    // Keeps the selection (by id) and the scroll position across a read of the table.
    void keepingSelection(const std::function<void()>& reread);
    void fillColumnsMenu();
    void toggleColumn(const QString& field, bool on);
    void updateCount();
    void updateDetails();
    void showOne(const runs::RunEntry& entry);
    void showSeveral(const std::vector<runs::RunEntry>& entries);
    void drawCurves();
    void commitNote();
    void commitTags();
    void askTag();
    void chooseExport();
    void copyCommand();
    void setMessage(const QString& text, bool error);

    RunsModel* m_model = nullptr;
    QString m_path;        // the store shown; empty: the default, chosen when first shown
    bool m_tried = false;  // the store was opened (or tried) once
    std::uint64_t m_runId = 0;
    std::vector<runs::RunEntry> m_shown;  // the selected entries whose details show (full)
    std::vector<std::int64_t> m_charted;
    QString m_lastGoodFilter;

    QLineEdit* m_filter = nullptr;
    WrappingLabel* m_filterError = nullptr;
    QToolButton* m_columnsButton = nullptr;
    QLabel* m_count = nullptr;
    WrappingLabel* m_message = nullptr;  // the last action's outcome
    QPushButton* m_tagButton = nullptr;
    QPushButton* m_deleteButton = nullptr;
    QPushButton* m_openButton = nullptr;
    QStackedWidget* m_stack = nullptr;  // the table and details, or the store's message
    WrappingLabel* m_storeMessage = nullptr;
    QTableView* m_table = nullptr;
    QTabWidget* m_details = nullptr;
    QPlainTextEdit* m_summary = nullptr;
    QLineEdit* m_note = nullptr;
    QLineEdit* m_tags = nullptr;
    QPushButton* m_copyCommand = nullptr;
    QPlainTextEdit* m_config = nullptr;
    QComboBox* m_metric = nullptr;
    QChart* m_chart = nullptr;
    QChartView* m_chartView = nullptr;
    ChartLegend* m_legend = nullptr;
    QTableWidget* m_differences = nullptr;
    QTimer* m_poll = nullptr;
    QCheckBox* m_record = nullptr;
};

}  // namespace ensemble::ui
