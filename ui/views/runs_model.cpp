#include "views/runs_model.h"

#include <QMetaObject>

#include <algorithm>
#include <exception>

#include "runs/run_fields.h"
#include "runs/run_table.h"

namespace ensemble::ui {

namespace {

// The columns whose cells are numbers (right-aligned, as the CLI's table aligns them).
bool runsColumnIsNumeric(const std::string& field) {
    static const char* const numeric[] = {"id", "wall", "members", "seed", "parent"};
    return field.rfind("figure.", 0) == 0 ||
           std::any_of(std::begin(numeric), std::end(numeric),
                       [&](const char* name) { return field == name; });
}

QString runsText(const std::string& text) {
    return QString::fromStdString(text);
}

}  // namespace

RunsModel::RunsModel(QObject* parent) : QAbstractTableModel(parent) {
    setColumns(runs::defaultRunColumns({}));
}

RunsModel::~RunsModel() = default;

bool RunsModel::openStore(const std::filesystem::path& path) {
    beginResetModel();
    m_pages.clear();
    m_store.reset();
    m_path = path;
    m_total = 0;
    m_rows = 0;
    m_error.clear();
    try {
        m_store.emplace(runs::RunStore::open(path));
        m_total = m_store->count(m_filter);
        m_rows = static_cast<int>(std::min<std::int64_t>(m_total, kPageSize));
    } catch (const std::exception& e) {
        m_store.reset();
        m_error = QString::fromStdString(e.what());
    }
    endResetModel();
    return m_store.has_value();
}

void RunsModel::setFilter(const runs::RunQuery& filter) {
    m_filter.filters = filter.filters;
    m_filter.text = filter.text;
    resetRows(kPageSize);
}

void RunsModel::setSortOrder(const runs::RunSort& sort) {
    m_sort = sort;
    resetRows(kPageSize);
    Q_EMIT sortChanged();
}

void RunsModel::setColumns(const std::vector<std::string>& columns) {
    beginResetModel();
    m_columns = columns;
    m_numericColumn.clear();
    for (const std::string& c : m_columns) {
        m_numericColumn.push_back(runsColumnIsNumeric(c));
    }
    m_pages.clear();  // a config.* column needs the configs: pages are read again
    endResetModel();
}

runs::RunQuery RunsModel::query() const {
    runs::RunQuery q;
    q.filters = m_filter.filters;
    q.text = m_filter.text;
    q.sort = m_sort;
    return q;
}

void RunsModel::resetRows(int rows) {
    beginResetModel();
    m_pages.clear();
    m_total = 0;
    m_rows = 0;
    if (m_store) {
        try {
            m_total = m_store->count(query());
            m_rows = static_cast<int>(std::min<std::int64_t>(m_total, std::max(rows, kPageSize)));
            m_error.clear();
        } catch (const std::exception& e) {
            endResetModel();
            fail(e);
            return;
        }
    }
    endResetModel();
}

void RunsModel::fail(const std::exception& e) const {
    m_error = QString::fromStdString(e.what());
    // Said after the read that failed returns: it may be a paint's.
    QMetaObject::invokeMethod(
        const_cast<RunsModel*>(this),
        [this, message = m_error] { Q_EMIT const_cast<RunsModel*>(this)->storeFailed(message); },
        Qt::QueuedConnection);
}

const RunsModel::Page* RunsModel::pageFor(int row) const {
    if (!m_store || row < 0 || row >= m_rows) {
        return nullptr;
    }
    const int index = row / kPageSize;
    auto it = m_pages.find(index);
    if (it == m_pages.end()) {
        runs::RunQuery q = query();
        q.limit = kPageSize;
        q.offset = static_cast<std::int64_t>(index) * kPageSize;
        q.full = runs::runColumnsNeedConfig(m_columns);
        // Scrolling reads the page next to one held: seek from that page's edge entry through
        // the sort's index. The offset is the jump's way (the scroll bar dragged) and the
        // fallback when that entry is gone.
        if (const auto before = m_pages.find(index - 1);
            before != m_pages.end() && before->second.entries.size() == kPageSize) {
            q.after = before->second.entries.back().id;
        } else if (const auto after = m_pages.find(index + 1);
                   after != m_pages.end() && !after->second.entries.empty()) {
            q.before = after->second.entries.front().id;
        }
        Page page;
        try {
            page.entries = m_store->list(q);
            for (const runs::RunEntry& e : page.entries) {
                QStringList cells;
                cells.reserve(static_cast<qsizetype>(m_columns.size()));
                for (const std::string& column : m_columns) {
                    cells << runsText(runs::runFieldText(e, column));
                }
                page.cells.push_back(std::move(cells));
            }
        } catch (const std::exception& e) {
            fail(e);
            return nullptr;
        }
        if (static_cast<int>(m_pages.size()) >= kCachedPages) {
            const auto oldest = std::min_element(
                m_pages.begin(), m_pages.end(),
                [](const auto& a, const auto& b) { return a.second.used < b.second.used; });
            m_pages.erase(oldest);
        }
        it = m_pages.emplace(index, std::move(page)).first;
    }
    it->second.used = ++m_reads;
    const std::size_t inPage = static_cast<std::size_t>(row % kPageSize);
    return inPage < it->second.entries.size() ? &it->second : nullptr;
}

std::optional<runs::RunEntry> RunsModel::entryAt(int row) const {
    const Page* page = pageFor(row);
    if (page == nullptr) {
        return std::nullopt;
    }
    return page->entries[static_cast<std::size_t>(row % kPageSize)];
}

std::int64_t RunsModel::idAt(int row) const {
    const Page* page = pageFor(row);
    return page == nullptr ? 0 : page->entries[static_cast<std::size_t>(row % kPageSize)].id;
}

bool RunsModel::refreshIfChanged() {
    if (!m_store) {
        return false;
    }
    std::int64_t count = 0;
    try {
        count = m_store->count(query());
    } catch (const std::exception& e) {
        fail(e);
        return false;
    }
    const bool running = std::any_of(m_pages.begin(), m_pages.end(), [](const auto& p) {
        const auto& entries = p.second.entries;
        return std::any_of(entries.begin(), entries.end(), [](const runs::RunEntry& e) {
            return e.state == runs::RunState::Running;
        });
    });
    if (count == m_total && !running) {
        return false;
    }
    reload();
    return true;
}

void RunsModel::reload() {
    resetRows(m_rows);
}

int RunsModel::rowCount(const QModelIndex& parent) const {
    return parent.isValid() ? 0 : m_rows;
}

int RunsModel::columnCount(const QModelIndex& parent) const {
    return parent.isValid() ? 0 : static_cast<int>(m_columns.size());
}

QVariant RunsModel::data(const QModelIndex& index, int role) const {
    if (!index.isValid() || index.column() >= columnCount()) {
        return {};
    }
    const auto column = static_cast<std::size_t>(index.column());
    if (role == Qt::TextAlignmentRole) {
        return QVariant::fromValue(Qt::AlignVCenter |
                                   (m_numericColumn[column] ? Qt::AlignRight : Qt::AlignLeft));
    }
    if (role != Qt::DisplayRole && role != Qt::ToolTipRole && role != Qt::UserRole) {
        return {};
    }
    const Page* page = pageFor(index.row());
    if (page == nullptr) {
        return {};
    }
    const auto inPage = static_cast<std::size_t>(index.row() % kPageSize);
    if (role == Qt::UserRole) {
        return QVariant::fromValue<qint64>(page->entries[inPage].id);
    }
    const QString& text = page->cells[inPage][static_cast<qsizetype>(column)];
    if (role == Qt::ToolTipRole) {
        return text.size() > 40 ? text : QVariant();  // a long note or command, whole
    }
    return text;
}

QVariant RunsModel::headerData(int section, Qt::Orientation orientation, int role) const {
    if (orientation != Qt::Horizontal || section < 0 || section >= columnCount()) {
        return QAbstractTableModel::headerData(section, orientation, role);
    }
    const std::string& field = m_columns[static_cast<std::size_t>(section)];
    if (role == Qt::DisplayRole) {
        return runsText(runs::runColumnHeader(field));
    }
    if (role == Qt::ToolTipRole) {
        return tr("%1: click to sort by it (filter as %1=value)").arg(runsText(field));
    }
    return {};
}

bool RunsModel::canFetchMore(const QModelIndex& parent) const {
    return !parent.isValid() && m_rows < m_total;
}

void RunsModel::fetchMore(const QModelIndex& parent) {
    if (!canFetchMore(parent)) {
        return;
    }
    const int more = static_cast<int>(std::min<std::int64_t>(kPageSize, m_total - m_rows));
    beginInsertRows({}, m_rows, m_rows + more - 1);
    m_rows += more;
    endInsertRows();
}

void RunsModel::sort(int column, Qt::SortOrder order) {
    if (column < 0 || column >= columnCount()) {
        return;
    }
    const std::string& field = m_columns[static_cast<std::size_t>(column)];
    runs::RunSort sort;
    try {
        sort = runs::parseSort(field);
    } catch (const std::exception& e) {
        Q_EMIT sortRefused(tr("Cannot sort by %1: %2").arg(runsText(field), runsText(e.what())));
        Q_EMIT sortChanged();  // the indicator goes back to the order kept
        return;
    }
    sort.descending = order == Qt::DescendingOrder;
    if (sort == m_sort) {
        return;
    }
    setSortOrder(sort);
}

}  // namespace ensemble::ui
