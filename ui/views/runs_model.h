#pragma once

// The Runs view's table: a model over the runs store (engine/runs/run_store.h), never a copy of
// it. Rows come in pages of kPageSize: fetchMore makes the next page's rows exist, and only the
// last kCachedPages pages read are held; a row whose page was let go is read again when shown.
// So 100,000 entries scroll with a few hundred in memory. A page next to a held one is read by
// keyset (RunQuery's after / before: the store seeks from the held page's edge entry through
// the sort's index); another (a jump) by its offset, which steps over every row before it.
// Cells are runFieldText's, the CLI's `runs list` cells; the filter and sort are the CLI's
// RunQuery. All reading happens on the thread that owns the model (the GUI thread), a page at a
// time (a few milliseconds).

#include <QAbstractTableModel>
#include <QString>
#include <QStringList>

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "runs/run_store.h"

namespace ensemble::ui {

class RunsModel : public QAbstractTableModel {
    Q_OBJECT

  public:
    static constexpr int kPageSize = 200;
    static constexpr int kCachedPages = 12;

    explicit RunsModel(QObject* parent = nullptr);
    ~RunsModel() override;

    // Opens the store at `path` (the one open before is closed) and reads its first page.
    // False when it cannot be opened: errorText() says why and the table is empty.
    bool openStore(const std::filesystem::path& path);
    bool isOpen() const { return m_store.has_value(); }
    // Why the store is not open, or why its last read failed; empty when all is well.
    QString errorText() const { return m_error; }
    runs::RunStore* store() { return m_store ? &*m_store : nullptr; }
    const std::filesystem::path& storePath() const { return m_path; }

    // The filters and free-text search (the query's sort, limit and offset are ignored): the
    // table starts again from its first page.
    void setFilter(const runs::RunQuery& filter);
    void setSortOrder(const runs::RunSort& sort);
    void setColumns(const std::vector<std::string>& columns);
    const std::vector<std::string>& columns() const { return m_columns; }
    // The filters, text and sort shown, with no limit: what an export lists.
    runs::RunQuery query() const;

    // Entries matching the filter (the rows there can be, fetched or not).
    std::int64_t total() const { return m_total; }
    // How many pages are held now (at most kCachedPages).
    int cachedPages() const { return static_cast<int>(m_pages.size()); }
    // The entry of `row` as list() gives it (columns, figures, tags; its config when a config.*
    // column is shown); nullopt outside the rows or when the store cannot be read.
    std::optional<runs::RunEntry> entryAt(int row) const;
    std::int64_t idAt(int row) const;

    // Cheap: counts the matching entries and reads again from the first page only when the
    // count changed or a held entry is still running. True when the rows were read again.
    bool refreshIfChanged();
    // Reads again, keeping as many rows fetched as before (edits, F5).
    void reload();

    int rowCount(const QModelIndex& parent = {}) const override;
    int columnCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation,
                        int role = Qt::DisplayRole) const override;
    bool canFetchMore(const QModelIndex& parent) const override;
    void fetchMore(const QModelIndex& parent) override;
    // A header click: the store sorts (RunSort). A field the store cannot sort by (tag, note,
    // command) leaves the order as it was and says so (sortRefused).
    void sort(int column, Qt::SortOrder order) override;
    runs::RunSort sortOrder() const { return m_sort; }

  Q_SIGNALS:
    // The store could not be read (it was open): the view shows `message` instead of the table.
    void storeFailed(const QString& message);
    void sortRefused(const QString& message);
    // The sort changed (a header click or setSortOrder): the header's indicator follows.
    void sortChanged();

  private:
    struct Page {
        std::vector<runs::RunEntry> entries;
        std::vector<QStringList> cells;
        std::uint64_t used = 0;  // the read it was last used by (least recently used goes)
    };
    // The page holding row `row`, read from the store when not held; null when it cannot be.
    const Page* pageFor(int row) const;
    void resetRows(int rows);
    void fail(const std::exception& e) const;

    std::filesystem::path m_path;
    std::optional<runs::RunStore> m_store;
    runs::RunQuery m_filter;
    runs::RunSort m_sort;
    std::vector<std::string> m_columns;
    std::vector<bool> m_numericColumn;
    std::int64_t m_total = 0;
    int m_rows = 0;  // rows made to exist so far (fetchMore)
    mutable std::map<int, Page> m_pages;
    mutable std::uint64_t m_reads = 0;
    mutable QString m_error;
};

}  // namespace ensemble::ui
