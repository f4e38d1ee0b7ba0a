// RunStore: reading the runs store (list, count, get) and the edits a person makes.

#include <algorithm>
#include <unordered_map>

#include "runs/run_db.h"
#include "runs/run_query_sql.h"

namespace ensemble::runs {

namespace {

// The runs columns an entry is read from, in readRunColumns' order.
constexpr const char* kRunColumnsSql =
    "r.id, r.program, r.kind, r.version, r.started, r.ended, r.updated, r.wall, r.state, "
    "r.preset, r.dataset, r.method, r.members, r.seed, r.backend, r.fingerprint, r.parent, "
    "r.relation, r.note, r.command, r.host, r.pid, r.pid_start, r.boot_id";

// How long an interactive reader waits for another writer before it reports the store busy.
constexpr int kRunStoreBusyMs = 5000;

RunEntry readRunColumns(const detail::Statement& row) {
    RunEntry entry;
    entry.id = row.integer(0);
    entry.program = row.text(1);
    entry.kind = row.text(2);
    entry.version = row.text(3);
    entry.started = row.real(4);
    entry.ended = row.isNull(5) ? 0.0 : row.real(5);
    entry.updated = row.real(6);
    entry.wallSeconds = row.real(7);
    if (!enumFromName(row.text(8), entry.state)) {
        entry.state = RunState::Failed;  // a state a newer build wrote: not running, at least
    }
    entry.preset = row.text(9);
    entry.dataset = row.text(10);
    entry.method = row.text(11);
    entry.members = row.integer(12);
    // Seeds above 2^63 - 1 are kept as reals (run_db.cpp).
    entry.seed = row.isReal(13) ? static_cast<std::uint64_t>(row.real(13))
                                : static_cast<std::uint64_t>(row.integer(13));
    entry.backend = row.text(14);
    entry.dataFingerprint = row.text(15);
    entry.parentId = row.integer(16);
    entry.relation = row.text(17);
    entry.note = row.text(18);
    entry.commandLine = row.text(19);
    entry.host = row.text(20);
    entry.pid = row.integer(21);
    entry.pidStart = row.integer(22);
    entry.bootId = row.text(23);
    return entry;
}

void bindSqlValues(detail::Statement& statement, const std::vector<detail::SqlValue>& values,
                   int& index) {
    for (const detail::SqlValue& value : values) {
        std::visit([&](const auto& v) { statement.bind(index, v); }, value);
        ++index;
    }
}

// Figures and tags of the listed entries: by id for a page, one pass over each table for a
// long list.
void attachFiguresAndTags(const detail::Connection& db, std::vector<RunEntry>& entries) {
    if (entries.empty()) {
        return;
    }
    std::unordered_map<std::int64_t, std::size_t> byId;
    byId.reserve(entries.size());
    std::string ids;
    for (std::size_t i = 0; i < entries.size(); ++i) {
        byId.emplace(entries[i].id, i);
        ids += (i == 0 ? "" : ",") + std::to_string(entries[i].id);
    }
    const std::string where = entries.size() <= 2000 ? " WHERE run IN (" + ids + ")" : "";
    detail::Statement figures(db, "SELECT run, name, value FROM figures" + where);
    while (figures.step()) {
        const auto found = byId.find(figures.integer(0));
        if (found != byId.end()) {
            entries[found->second].figures[figures.text(1)] = figures.real(2);
        }
    }
    // Tags come out sorted by (run, tag): the primary key's order.
    detail::Statement tags(db, "SELECT run, tag FROM tags" + where + " ORDER BY run, tag");
    while (tags.step()) {
        const auto found = byId.find(tags.integer(0));
        if (found != byId.end()) {
            entries[found->second].tags.push_back(tags.text(1));
        }
    }
}

// What get() adds to the columns: the config, the curves and the files.
void attachDetails(const detail::Connection& db, RunEntry& entry) {
    detail::Statement config(db, "SELECT json FROM run_configs WHERE run = ?1");
    config.bind(1, entry.id);
    if (config.step()) {
        entry.config = nlohmann::json::parse(config.text(0), nullptr, false);
    }
    detail::Statement curves(db, "SELECT json FROM run_curves WHERE run = ?1");
    curves.bind(1, entry.id);
    if (curves.step()) {
        entry.curves = nlohmann::json::parse(curves.text(0), nullptr, false);
    }
    // A document that does not parse reads as null rather than failing the whole entry.
    for (nlohmann::json* document : {&entry.config, &entry.curves}) {
        if (document->is_discarded()) {
            *document = nullptr;
        }
    }
    detail::Statement files(db, "SELECT path, role FROM files WHERE run = ?1 ORDER BY seq");
    files.bind(1, entry.id);
    while (files.step()) {
        entry.files.push_back({files.text(0), files.text(1)});
    }
}

bool runExists(const detail::Connection& db, std::int64_t id) {
    detail::Statement exists(db, "SELECT 1 FROM runs WHERE id = ?1");
    exists.bind(1, id);
    return exists.step();
}

}  // namespace

struct RunStore::Impl {
    detail::Connection db;
};

RunStore::RunStore(std::unique_ptr<Impl> impl) : m_impl(std::move(impl)) {}
RunStore::RunStore(RunStore&&) noexcept = default;
RunStore& RunStore::operator=(RunStore&&) noexcept = default;
RunStore::~RunStore() = default;

RunStore RunStore::open(const std::filesystem::path& path) {
    auto impl = std::make_unique<Impl>();
    impl->db = detail::Connection(path, kRunStoreBusyMs);
    detail::prepareStore(impl->db);
    // A reader sorts and filters over the whole store (100,000 entries are some 300 MB): map the
    // file and keep a large page cache rather than reading it through 2 MB of cache.
    impl->db.exec("PRAGMA mmap_size = 1073741824; PRAGMA cache_size = -65536",
                  "cannot set the cache");
    return RunStore(std::move(impl));
}

std::optional<RunStore> RunStore::openReadOnly(const std::filesystem::path& path,
                                               int busyTimeoutMs) {
    const std::string text = path.string();
    if (path.empty() || (text.rfind("file:", 0) != 0 && !std::filesystem::exists(path))) {
        return std::nullopt;
    }
    auto impl = std::make_unique<Impl>();
    try {
        impl->db = detail::Connection(path, busyTimeoutMs, true);
    } catch (const RunStoreError& error) {
        if ((error.sqliteCode() & 0xff) == SQLITE_CANTOPEN) {
            return std::nullopt;  // gone between the check and the open
        }
        throw;
    }
    if (detail::schemaVersionOf(impl->db) != detail::kSchemaVersion) {
        return std::nullopt;
    }
    return RunStore(std::move(impl));
}

const std::filesystem::path& RunStore::path() const {
    return m_impl->db.path();
}

int RunStore::schemaVersion() const {
    return detail::schemaVersionOf(m_impl->db);
}

bool RunStore::readOnly() const {
    return m_impl->db.readOnly();
}

namespace {

// The ids of a page by its offset: stretch by stretch, a stretch the offset lies past counted
// and skipped whole.
std::vector<std::int64_t> idsByOffset(const detail::Connection& db, const detail::QuerySql& sql,
                                      std::int64_t offset, std::int64_t limit) {
    std::vector<std::int64_t> ids;
    for (const detail::SortPart& part : sql.parts) {
        if (limit == 0) {
            break;
        }
        detail::Statement rows(db, detail::sortPartSql(part, sql.where, false));
        int index = 1;
        bindSqlValues(rows, part.conditionValues, index);
        bindSqlValues(rows, sql.whereValues, index);
        rows.bind(index, limit).bind(index + 1, offset);
        std::int64_t found = 0;
        while (rows.step()) {
            ids.push_back(rows.integer(0));
            ++found;
        }
        if (found > 0) {
            offset = 0;
        } else if (offset > 0) {
            // The offset lies past this stretch: skip it whole.
            detail::Statement count(db, detail::sortPartSql(part, sql.where, true));
            index = 1;
            bindSqlValues(count, part.conditionValues, index);
            bindSqlValues(count, sql.whereValues, index);
            offset = std::max<std::int64_t>(0, offset - (count.step() ? count.integer(0) : 0));
        }
        if (limit > 0) {
            limit -= found;
        }
    }
    return ids;
}

// Where an entry lies in the sort (RunQuery::after / before): its stretch and its key there.
struct SortAnchor {
    std::size_t part = 0;
    std::int64_t id = 0;
    std::vector<detail::SqlValue> key;  // empty for a stretch ordered by id alone
};

// The stretches partition the store, so an entry that exists lies in exactly one of them,
// whether or not it matches the filters; nullopt when no entry has that id.
std::optional<SortAnchor> findAnchor(const detail::Connection& db, const detail::QuerySql& sql,
                                     std::int64_t id) {
    for (std::size_t i = 0; i < sql.parts.size(); ++i) {
        const detail::SortPart& part = sql.parts[i];
        detail::Statement row(db, "SELECT " + (part.key.empty() ? std::string("1") : part.key) +
                                      " FROM " + part.from + " WHERE " +
                                      (part.condition.empty() ? "" : part.condition + " AND ") +
                                      part.tie + " = ?");
        int index = 1;
        bindSqlValues(row, part.conditionValues, index);
        row.bind(index, id);
        if (!row.step()) {
            continue;
        }
        SortAnchor anchor{i, id, {}};
        if (!part.key.empty()) {
            // The key as stored (an integer seed compares as one), never NULL in its stretch.
            switch (row.type(0)) {
                case SQLITE_INTEGER:
                    anchor.key.emplace_back(row.integer(0));
                    break;
                case SQLITE_FLOAT:
                    anchor.key.emplace_back(row.real(0));
                    break;
                case SQLITE_TEXT:
                    anchor.key.emplace_back(row.text(0));
                    break;
                default:
                    return std::nullopt;
            }
        }
        return anchor;
    }
    return std::nullopt;
}

// The ids of a page after (or before: `backwards`) an entry: the rest of its stretch from the
// entry on (its ties, then the keys past it), then the next stretches (the previous ones)
// whole, each through its index. No row before the page is read, where an offset steps over
// every one.
std::vector<std::int64_t> idsBySeek(const detail::Connection& db, const detail::QuerySql& sql,
                                    const SortAnchor& anchor, bool backwards, std::int64_t limit) {
    std::vector<std::int64_t> ids;
    const auto read = [&](const detail::SortPart& part, detail::Seek seek) {
        detail::Statement rows(db, detail::sortPartSql(part, sql.where, false, seek, backwards));
        int index = 1;
        bindSqlValues(rows, part.conditionValues, index);
        if (seek != detail::Seek::None) {
            bindSqlValues(rows, anchor.key, index);
        }
        if (seek == detail::Seek::Ties || (seek == detail::Seek::Past && anchor.key.empty())) {
            rows.bind(index++, anchor.id);
        }
        bindSqlValues(rows, sql.whereValues, index);
        rows.bind(index, limit).bind(index + 1, std::int64_t{0});
        while (rows.step()) {
            ids.push_back(rows.integer(0));
            limit -= limit > 0 ? 1 : 0;
        }
    };
    const auto parts = static_cast<std::ptrdiff_t>(sql.parts.size());
    for (auto i = static_cast<std::ptrdiff_t>(anchor.part); i >= 0 && i < parts && limit != 0;
         i += backwards ? -1 : 1) {
        const detail::SortPart& part = sql.parts[static_cast<std::size_t>(i)];
        if (i != static_cast<std::ptrdiff_t>(anchor.part)) {
            read(part, detail::Seek::None);
            continue;
        }
        if (!part.key.empty()) {
            read(part, detail::Seek::Ties);
        }
        if (limit != 0) {
            read(part, detail::Seek::Past);
        }
    }
    if (backwards) {
        std::reverse(ids.begin(), ids.end());
    }
    return ids;
}

// The entries' columns by id, in the ids' order: a page by id, a long list in one pass.
std::vector<RunEntry> runRowsById(const detail::Connection& db,
                                  const std::vector<std::int64_t>& ids) {
    std::unordered_map<std::int64_t, std::size_t> position;
    position.reserve(ids.size());
    std::string list;
    for (std::size_t i = 0; i < ids.size(); ++i) {
        position.emplace(ids[i], i);
        list += (i == 0 ? "" : ",") + std::to_string(ids[i]);
    }
    std::vector<RunEntry> entries(ids.size());
    if (ids.empty()) {
        return entries;
    }
    detail::Statement rows(db, std::string("SELECT ") + kRunColumnsSql + " FROM runs r" +
                                   (ids.size() <= 2000 ? " WHERE r.id IN (" + list + ")" : ""));
    while (rows.step()) {
        const auto found = position.find(rows.integer(0));
        if (found != position.end()) {
            entries[found->second] = readRunColumns(rows);
        }
    }
    return entries;
}

}  // namespace

std::vector<RunEntry> RunStore::list(const RunQuery& query) const {
    const detail::QuerySql sql = detail::buildQuerySql(query, true);
    // First the ids of the page, stretch by stretch; then their rows.
    const std::int64_t limit = query.limit < 0 ? -1 : query.limit;
    const bool backwards = query.after == 0 && query.before != 0;
    const std::int64_t anchorId = backwards ? query.before : query.after;
    const std::optional<SortAnchor> anchor =
        anchorId != 0 ? findAnchor(m_impl->db, sql, anchorId) : std::nullopt;
    const std::vector<std::int64_t> ids =
        anchor ? idsBySeek(m_impl->db, sql, *anchor, backwards, limit)
               : idsByOffset(m_impl->db, sql, std::max<std::int64_t>(0, query.offset), limit);
    std::vector<RunEntry> entries = runRowsById(m_impl->db, ids);
    attachFiguresAndTags(m_impl->db, entries);
    if (query.full) {
        for (RunEntry& entry : entries) {
            attachDetails(m_impl->db, entry);
        }
    }
    return entries;
}

std::int64_t RunStore::count(const RunQuery& query) const {
    const detail::QuerySql sql = detail::buildQuerySql(query, false);
    std::string text = "SELECT count(*) FROM runs r";
    if (!sql.where.empty()) {
        text += " WHERE " + sql.where;
    }
    detail::Statement rows(m_impl->db, text);
    int index = 1;
    bindSqlValues(rows, sql.whereValues, index);
    return rows.step() ? rows.integer(0) : 0;
}

std::optional<std::int64_t> RunStore::writerOf(const std::string& path) const {
    detail::Statement row(m_impl->db,
                          "SELECT MAX(run) FROM files WHERE path = ?1 AND role IN "
                          "('export', 'checkpoint')");
    row.bind(1, path);
    if (!row.step() || row.isNull(0)) {
        return std::nullopt;
    }
    return row.integer(0);
}

std::optional<RunEntry> RunStore::get(std::int64_t id) const {
    detail::Statement row(m_impl->db,
                          std::string("SELECT ") + kRunColumnsSql + " FROM runs r WHERE r.id = ?1");
    row.bind(1, id);
    if (!row.step()) {
        return std::nullopt;
    }
    std::vector<RunEntry> entries{readRunColumns(row)};
    attachFiguresAndTags(m_impl->db, entries);
    attachDetails(m_impl->db, entries.front());
    return std::move(entries.front());
}

bool RunStore::setNote(std::int64_t id, const std::string& note) {
    detail::WriteTransaction transaction(m_impl->db);
    detail::Statement update(m_impl->db, "UPDATE runs SET note = ?2 WHERE id = ?1");
    update.bind(1, id).bind(2, note).run();
    const bool found = sqlite3_changes(m_impl->db.handle()) > 0;
    transaction.commit();
    return found;
}

bool RunStore::addTag(std::int64_t id, const std::string& tag) {
    detail::WriteTransaction transaction(m_impl->db);
    if (!runExists(m_impl->db, id)) {
        return false;
    }
    detail::Statement insert(m_impl->db, "INSERT OR IGNORE INTO tags(run, tag) VALUES(?1, ?2)");
    insert.bind(1, id).bind(2, tag).run();
    transaction.commit();
    return true;
}

bool RunStore::removeTag(std::int64_t id, const std::string& tag) {
    detail::WriteTransaction transaction(m_impl->db);
    if (!runExists(m_impl->db, id)) {
        return false;
    }
    detail::Statement erase(m_impl->db, "DELETE FROM tags WHERE run = ?1 AND tag = ?2");
    erase.bind(1, id).bind(2, tag).run();
    transaction.commit();
    return true;
}

std::optional<std::vector<RunFile>> RunStore::remove(std::int64_t id) {
    const detail::Connection& db = m_impl->db;
    detail::WriteTransaction transaction(db);
    if (!runExists(db, id)) {
        return std::nullopt;
    }
    std::vector<RunFile> files;
    {
        detail::Statement list(db, "SELECT path, role FROM files WHERE run = ?1 ORDER BY seq");
        list.bind(1, id);
        while (list.step()) {
            files.push_back({list.text(0), list.text(1)});
        }
    }
    // config_values is keyed (key, run): one primary-key look-up per key, no index on run.
    for (const char* sql :
         {"DELETE FROM runs WHERE id = ?1", "DELETE FROM run_configs WHERE run = ?1",
          "DELETE FROM run_curves WHERE run = ?1", "DELETE FROM figures WHERE run = ?1",
          "DELETE FROM tags WHERE run = ?1", "DELETE FROM files WHERE run = ?1",
          "DELETE FROM config_values WHERE key IN (SELECT id FROM config_keys) AND run = ?1"}) {
        detail::Statement erase(db, sql);
        erase.bind(1, id).run();
    }
    transaction.commit();
    return files;
}

std::vector<std::int64_t> RunStore::insert(const std::vector<RunEntry>& entries) {
    detail::WriteTransaction transaction(m_impl->db);
    detail::EntryWriter writer(m_impl->db);
    std::vector<std::int64_t> ids;
    ids.reserve(entries.size());
    for (const RunEntry& entry : entries) {
        ids.push_back(writer.insert(entry));
    }
    transaction.commit();
    return ids;
}

std::vector<std::string> RunStore::figureNames() const {
    std::vector<std::string> names;
    detail::Statement rows(m_impl->db, "SELECT DISTINCT name FROM figures ORDER BY name");
    while (rows.step()) {
        names.push_back(rows.text(0));
    }
    return names;
}

std::vector<std::string> RunStore::configKeys() const {
    std::vector<std::string> keys;
    // Keys whose runs were all removed stay in config_keys: only those with a value count.
    detail::Statement rows(m_impl->db,
                           "SELECT key FROM config_keys k WHERE EXISTS (SELECT 1 FROM "
                           "config_values v WHERE v.key = k.id) ORDER BY key");
    while (rows.step()) {
        keys.push_back(rows.text(0));
    }
    return keys;
}

int RunStore::sweepInterrupted() {
    return detail::sweepInterrupted(m_impl->db);
}

}  // namespace ensemble::runs
