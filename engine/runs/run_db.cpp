// The runs store's SQLite layer: connections, statements, the schema's migration steps and the
// rows one entry becomes.

#include "runs/run_db.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <system_error>

namespace ensemble::runs::detail {

[[noreturn]] void throwSqlite(sqlite3* db, int rc, const std::filesystem::path& path,
                              const std::string& what) {
    std::string message = "runs store " + path.string() + ": " + what + ": ";
    // The connection's message is the precise one ("database is locked"); without a connection
    // (open failed before one existed) the code's text.
    const char* said = db != nullptr ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
    message += said != nullptr ? said : "unknown error";
    message += " (SQLite code " + std::to_string(rc) + ")";
    throw RunStoreError(message, rc);
}

bool isBusyCode(int sqliteCode) {
    const int primary = sqliteCode & 0xff;
    return primary == SQLITE_BUSY || primary == SQLITE_LOCKED;
}

Connection::Connection(const std::filesystem::path& path, int busyTimeoutMs, bool readOnly)
    : m_path(path) {
    if (path.empty()) {
        throw RunStoreError("runs store: no path (recording is off: ENSEMBLE_RUNS_DB=off)",
                            SQLITE_CANTOPEN);
    }
    const std::string text = path.string();
    const bool uri = text.rfind("file:", 0) == 0;
    if (!uri && !readOnly && path.has_parent_path()) {
        std::error_code error;
        std::filesystem::create_directories(path.parent_path(), error);
        if (error) {
            throw RunStoreError(
                "runs store " + text + ": cannot create its folder: " + error.message(),
                SQLITE_CANTOPEN);
        }
    }
    // NOMUTEX: a connection is used by one thread at a time (a RunStore's owner, a recorder's
    // thread). SQLite opens a file it may only read read-only by itself (readOnly() says so).
    const int flags =
        (readOnly ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE) |
        SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_URI;
    const int rc = sqlite3_open_v2(text.c_str(), &m_db, flags, nullptr);
    if (rc != SQLITE_OK && readOnly) {
        const std::string said = m_db != nullptr ? sqlite3_errmsg(m_db) : sqlite3_errstr(rc);
        sqlite3_close(m_db);
        m_db = nullptr;
        throw RunStoreError("runs store " + text + ": cannot open: " + said + " (SQLite code " +
                                std::to_string(rc) + ")",
                            rc);
    }
    if (rc != SQLITE_OK) {
        // A folder that cannot be written cannot take a new file or its journal: try reading.
        sqlite3_close(m_db);
        m_db = nullptr;
        const int rcRead =
            sqlite3_open_v2(text.c_str(), &m_db,
                            SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_URI, nullptr);
        if (rcRead != SQLITE_OK) {
            sqlite3* failed = m_db;
            m_db = nullptr;
            std::string message = "runs store " + text + ": cannot open: ";
            message += failed != nullptr ? sqlite3_errmsg(failed) : sqlite3_errstr(rc);
            sqlite3_close(failed);
            throw RunStoreError(message + " (SQLite code " + std::to_string(rc) + ")", rc);
        }
    }
    sqlite3_extended_result_codes(m_db, 1);
    sqlite3_busy_timeout(m_db, busyTimeoutMs);
    // The last connection to close would copy the WAL into the file and sync both: four
    // fdatasyncs that every ensemble-cli command paid at its exit (about 25 ms of a one-step run
    // on the 2-core machine). The WAL's own automatic checkpoints (every 1,000 pages written)
    // keep it bounded, and what it holds is as safe there as in the file.
    sqlite3_db_config(m_db, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, nullptr);
}

Connection::Connection(Connection&& other) noexcept
    : m_db(std::exchange(other.m_db, nullptr)), m_path(std::move(other.m_path)) {}

Connection& Connection::operator=(Connection&& other) noexcept {
    if (this != &other) {
        sqlite3_close_v2(m_db);
        m_db = std::exchange(other.m_db, nullptr);
        m_path = std::move(other.m_path);
    }
    return *this;
}

Connection::~Connection() {
    sqlite3_close_v2(m_db);
}

bool Connection::readOnly() const {
    return sqlite3_db_readonly(m_db, "main") == 1;
}

void Connection::exec(const char* sql, const std::string& what) const {
    char* error = nullptr;
    const int rc = sqlite3_exec(m_db, sql, nullptr, nullptr, &error);
    sqlite3_free(error);
    if (rc != SQLITE_OK) {
        fail(rc, what);
    }
}

void Connection::fail(int rc, const std::string& what) const {
    throwSqlite(m_db, rc, m_path, what);
}

Statement::Statement(const Connection& db, const std::string& sql) : m_db(db) {
    const int rc = sqlite3_prepare_v2(db.handle(), sql.c_str(), static_cast<int>(sql.size()),
                                      &m_stmt, nullptr);
    if (rc != SQLITE_OK) {
        sqlite3_finalize(m_stmt);
        m_stmt = nullptr;
        db.fail(rc, "cannot read");
    }
}

Statement::~Statement() {
    sqlite3_finalize(m_stmt);
}

Statement& Statement::bind(int index, std::int64_t value) {
    sqlite3_bind_int64(m_stmt, index, value);
    return *this;
}

Statement& Statement::bind(int index, double value) {
    sqlite3_bind_double(m_stmt, index, value);
    return *this;
}

Statement& Statement::bind(int index, const std::string& value) {
    sqlite3_bind_text(m_stmt, index, value.data(), static_cast<int>(value.size()),
                      SQLITE_TRANSIENT);
    return *this;
}

Statement& Statement::bindNull(int index) {
    sqlite3_bind_null(m_stmt, index);
    return *this;
}

bool Statement::step() {
    const int rc = sqlite3_step(m_stmt);
    if (rc == SQLITE_ROW) {
        return true;
    }
    if (rc == SQLITE_DONE) {
        return false;
    }
    sqlite3_reset(m_stmt);
    m_db.fail(rc, sqlite3_stmt_readonly(m_stmt) != 0 ? "cannot read" : "cannot write");
}

void Statement::run() {
    while (step()) {
    }
    reset();
}

void Statement::reset() {
    sqlite3_reset(m_stmt);
    sqlite3_clear_bindings(m_stmt);
}

bool Statement::isNull(int column) const {
    return sqlite3_column_type(m_stmt, column) == SQLITE_NULL;
}

bool Statement::isReal(int column) const {
    return sqlite3_column_type(m_stmt, column) == SQLITE_FLOAT;
}

int Statement::type(int column) const {
    return sqlite3_column_type(m_stmt, column);
}

std::int64_t Statement::integer(int column) const {
    return sqlite3_column_int64(m_stmt, column);
}

double Statement::real(int column) const {
    return sqlite3_column_double(m_stmt, column);
}

std::string Statement::text(int column) const {
    const auto* bytes = sqlite3_column_text(m_stmt, column);
    if (bytes == nullptr) {
        return {};
    }
    return std::string(reinterpret_cast<const char*>(bytes),
                       static_cast<std::size_t>(sqlite3_column_bytes(m_stmt, column)));
}

WriteTransaction::WriteTransaction(const Connection& db) : m_db(db) {
    db.exec("BEGIN IMMEDIATE", "cannot start writing");
}

WriteTransaction::~WriteTransaction() {
    if (!m_done) {
        sqlite3_exec(m_db.handle(), "ROLLBACK", nullptr, nullptr, nullptr);
    }
}

void WriteTransaction::commit() {
    m_db.exec("COMMIT", "cannot write");
    m_done = true;
}

int schemaVersionOf(const Connection& db) {
    Statement version(db, "PRAGMA user_version");
    return version.step() ? static_cast<int>(version.integer(0)) : 0;
}

namespace {

// Schema v1: the entry's columns (the summary ones indexed), its config and curves in tables of
// their own (so that a scan of `runs` stays small), figures, tags and files.
constexpr const char* kRunsSchemaV1 = R"sql(
CREATE TABLE runs(
  id INTEGER PRIMARY KEY,
  program TEXT NOT NULL DEFAULT '',
  kind TEXT NOT NULL DEFAULT '',
  version TEXT NOT NULL DEFAULT '',
  started REAL NOT NULL,
  ended REAL,
  updated REAL NOT NULL,
  wall REAL NOT NULL DEFAULT 0,
  state TEXT NOT NULL,
  preset TEXT NOT NULL DEFAULT '',
  dataset TEXT NOT NULL DEFAULT '',
  method TEXT NOT NULL DEFAULT '',
  members INTEGER NOT NULL DEFAULT 0,
  seed INTEGER NOT NULL DEFAULT 0,
  backend TEXT NOT NULL DEFAULT '',
  fingerprint TEXT NOT NULL DEFAULT '',
  parent INTEGER NOT NULL DEFAULT 0,
  relation TEXT NOT NULL DEFAULT '',
  note TEXT NOT NULL DEFAULT '',
  command TEXT NOT NULL DEFAULT '',
  host TEXT NOT NULL DEFAULT '',
  pid INTEGER NOT NULL DEFAULT 0,
  pid_start INTEGER NOT NULL DEFAULT 0,
  boot_id TEXT NOT NULL DEFAULT '');
CREATE INDEX runs_started ON runs(started);
CREATE INDEX runs_ended ON runs(ended);
CREATE INDEX runs_wall ON runs(wall);
CREATE INDEX runs_program ON runs(program);
CREATE INDEX runs_kind ON runs(kind);
CREATE INDEX runs_state ON runs(state);
CREATE INDEX runs_preset ON runs(preset);
CREATE INDEX runs_dataset ON runs(dataset);
CREATE INDEX runs_method ON runs(method);
CREATE INDEX runs_members ON runs(members);
CREATE INDEX runs_seed ON runs(seed);
CREATE INDEX runs_backend ON runs(backend);
CREATE INDEX runs_parent ON runs(parent);
CREATE TABLE run_configs(run INTEGER PRIMARY KEY, json TEXT NOT NULL);
CREATE TABLE run_curves(run INTEGER PRIMARY KEY, json TEXT NOT NULL);
CREATE TABLE figures(
  run INTEGER NOT NULL, name TEXT NOT NULL, value REAL NOT NULL,
  PRIMARY KEY(run, name)) WITHOUT ROWID;
CREATE INDEX figures_by_value ON figures(name, value);
CREATE TABLE tags(run INTEGER NOT NULL, tag TEXT NOT NULL, PRIMARY KEY(run, tag)) WITHOUT ROWID;
CREATE INDEX tags_by_tag ON tags(tag);
CREATE TABLE files(
  run INTEGER NOT NULL, seq INTEGER NOT NULL, path TEXT NOT NULL, role TEXT NOT NULL,
  PRIMARY KEY(run, seq)) WITHOUT ROWID;
)sql";

// Schema v2: every config leaf as a row, so a filter or a sort on config.<key> reads an index,
// not 100,000 JSON documents. Keys are interned (a run has some forty).
constexpr const char* kRunsSchemaV2 = R"sql(
CREATE TABLE config_keys(id INTEGER PRIMARY KEY, key TEXT NOT NULL UNIQUE);
CREATE TABLE config_values(
  key INTEGER NOT NULL, run INTEGER NOT NULL, number REAL, text TEXT NOT NULL,
  PRIMARY KEY(key, run)) WITHOUT ROWID;
CREATE INDEX config_values_by_number ON config_values(key, number);
CREATE INDEX config_values_by_text ON config_values(key, text) WHERE number IS NULL;
)sql";

// Schema v3: the files by path, so the run that wrote a file (RunStore::writerOf) is an index
// lookup, not a scan of every file of 100,000 entries, when Open Recent names each file's run.
constexpr const char* kRunsSchemaV3 = R"sql(
CREATE INDEX files_by_path ON files(path);
)sql";

// Schema v4: the four sortable columns v1 left unindexed, so that a sort by any column reads
// an index: the first page and each page after another (keyset paging, RunQuery::after) seek
// rather than sort the whole store (some 60 ms at 100,000 entries, each page).
constexpr const char* kRunsSchemaV4 = R"sql(
CREATE INDEX runs_version ON runs(version);
CREATE INDEX runs_fingerprint ON runs(fingerprint);
CREATE INDEX runs_relation ON runs(relation);
CREATE INDEX runs_host ON runs(host);
)sql";

void migrateToV2(const Connection& db) {
    db.exec(kRunsSchemaV2, "cannot add the config values (schema v2)");
    EntryWriter writer(db);
    Statement configs(db, "SELECT run, json FROM run_configs");
    while (configs.step()) {
        // A config v1 kept that does not parse stays as it is, only not filterable.
        const auto config = nlohmann::json::parse(configs.text(1), nullptr, false);
        if (!config.is_discarded()) {
            writer.configValues(configs.integer(0), config);
        }
    }
}

void flattenInto(const nlohmann::json& value, const std::string& prefix,
                 std::vector<std::pair<std::string, nlohmann::json>>& out) {
    if (value.is_object()) {
        for (const auto& [key, child] : value.items()) {
            flattenInto(child, prefix.empty() ? key : prefix + "." + key, out);
        }
        return;
    }
    if (!prefix.empty()) {
        out.emplace_back(prefix, value);
    }
}

}  // namespace

void migrateSchema(const Connection& db, int toVersion) {
    int version = schemaVersionOf(db);
    if (version > kSchemaVersion) {
        db.fail(SQLITE_ERROR, "written by a newer EnsembleLab (schema version " +
                                  std::to_string(version) + ", this one knows up to " +
                                  std::to_string(kSchemaVersion) + ")");
    }
    while (version < toVersion) {
        WriteTransaction transaction(db);
        // Another process may have migrated between our read and our lock.
        version = schemaVersionOf(db);
        if (version >= toVersion) {
            break;
        }
        const int next = version + 1;
        if (next == 1) {
            db.exec(kRunsSchemaV1, "cannot create the tables (schema v1)");
        } else if (next == 2) {
            migrateToV2(db);
        } else if (next == 3) {
            db.exec(kRunsSchemaV3, "cannot index the files (schema v3)");
        } else if (next == 4) {
            db.exec(kRunsSchemaV4, "cannot index the sort columns (schema v4)");
        }
        db.exec(("PRAGMA user_version = " + std::to_string(next)).c_str(),
                "cannot set the schema version");
        transaction.commit();
        version = next;
    }
}

void setJournal(const Connection& db) {
    if (db.readOnly()) {
        return;
    }
    std::string mode;
    {
        // Finished before the change: an unfinished statement holds a read transaction.
        Statement current(db, "PRAGMA journal_mode");
        mode = current.step() ? current.text(0) : std::string();
    }
    const std::string path = db.path().string();
    // A URI's folder is not known: keep whatever the file has.
    if (path.rfind("file:", 0) == 0) {
        return;
    }
    const bool wal = journalModeForFolder(db.path().parent_path()) == JournalMode::Wal;
    if (wal && mode != "wal") {
        db.exec("PRAGMA journal_mode = WAL", "cannot choose the journal");
    } else if (!wal && mode == "wal") {
        db.exec("PRAGMA journal_mode = DELETE", "cannot choose the journal");
    }
    if (wal) {
        db.exec("PRAGMA synchronous = NORMAL", "cannot choose the journal");
    }
}

void prepareStore(const Connection& db) {
    if (db.readOnly()) {
        const int version = schemaVersionOf(db);
        if (version != kSchemaVersion) {
            db.fail(SQLITE_READONLY, "has schema version " + std::to_string(version) +
                                         " and cannot be written to bring it to " +
                                         std::to_string(kSchemaVersion));
        }
        return;
    }
    setJournal(db);
    migrateSchema(db, kSchemaVersion);
    try {
        sweepInterrupted(db);
    } catch (const RunStoreError& error) {
        // Another writer holds the store: the next open sweeps.
        if (!isBusyCode(error.sqliteCode())) {
            throw;
        }
    }
}

std::vector<std::pair<std::string, nlohmann::json>> flattenConfig(const nlohmann::json& config) {
    std::vector<std::pair<std::string, nlohmann::json>> out;
    flattenInto(config, "", out);
    return out;
}

ConfigCell configCell(const nlohmann::json& leaf) {
    ConfigCell cell;
    if (leaf.is_string()) {
        cell.text = leaf.get<std::string>();
        return cell;
    }
    cell.text = leaf.dump();
    if (leaf.is_number()) {
        cell.hasNumber = true;
        cell.number = leaf.get<double>();
    } else if (leaf.is_boolean()) {
        cell.hasNumber = true;
        cell.number = leaf.get<bool>() ? 1.0 : 0.0;
    }
    return cell;
}

// A seed as SQLite stores it: an integer up to 2^63 - 1, a real above (the config keeps it
// exactly).
static void bindRunSeed(Statement& statement, int index, std::uint64_t seed) {
    if (seed <= static_cast<std::uint64_t>(INT64_MAX)) {
        statement.bind(index, static_cast<std::int64_t>(seed));
    } else {
        statement.bind(index, static_cast<double>(seed));
    }
}

struct EntryWriter::Statements {
    explicit Statements(const Connection& db)
        : row(db, R"sql(
INSERT INTO runs(program, kind, version, started, ended, updated, wall, state, preset, dataset,
                 method, members, seed, backend, fingerprint, parent, relation, note, command,
                 host, pid, pid_start, boot_id)
VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19,
       ?20, ?21, ?22, ?23))sql"),
          config(db, "INSERT OR REPLACE INTO run_configs(run, json) VALUES(?1, ?2)"),
          curves(db, "INSERT OR REPLACE INTO run_curves(run, json) VALUES(?1, ?2)"),
          figure(db, "INSERT OR REPLACE INTO figures(run, name, value) VALUES(?1, ?2, ?3)"),
          tag(db, "INSERT OR IGNORE INTO tags(run, tag) VALUES(?1, ?2)"),
          file(db, "INSERT INTO files(run, seq, path, role) VALUES(?1, ?2, ?3, ?4)"),
          keyInsert(db, "INSERT OR IGNORE INTO config_keys(key) VALUES(?1)"),
          keyFind(db, "SELECT id FROM config_keys WHERE key = ?1"),
          value(db,
                "INSERT OR REPLACE INTO config_values(key, run, number, text) "
                "VALUES(?1, ?2, ?3, ?4)") {}
    Statement row, config, curves, figure, tag, file, keyInsert, keyFind, value;
};

EntryWriter::EntryWriter(const Connection& db)
    : m_db(db), m_statements(std::make_unique<Statements>(db)) {}

EntryWriter::~EntryWriter() = default;

std::int64_t EntryWriter::keyId(const std::string& key) {
    const auto known = m_keyIds.find(key);
    if (known != m_keyIds.end()) {
        return known->second;
    }
    m_statements->keyInsert.bind(1, key).run();
    Statement& find = m_statements->keyFind;
    find.bind(1, key);
    const std::int64_t id = find.step() ? find.integer(0) : 0;
    find.reset();
    m_keyIds.emplace(key, id);
    return id;
}

void EntryWriter::configValues(std::int64_t id, const nlohmann::json& config) {
    Statement& insert = m_statements->value;
    for (const auto& [key, leaf] : flattenConfig(config)) {
        const ConfigCell cell = configCell(leaf);
        insert.bind(1, keyId(key)).bind(2, id).bind(4, cell.text);
        if (cell.hasNumber) {
            insert.bind(3, cell.number);
        } else {
            insert.bindNull(3);
        }
        insert.run();
    }
}

std::int64_t EntryWriter::insert(const RunEntry& entry) {
    Statement& row = m_statements->row;
    row.bind(1, entry.program).bind(2, entry.kind).bind(3, entry.version).bind(4, entry.started);
    if (entry.ended > 0.0) {
        row.bind(5, entry.ended);
    } else {
        row.bindNull(5);
    }
    row.bind(6, entry.updated > 0.0 ? entry.updated : entry.started)
        .bind(7, entry.wallSeconds)
        .bind(8, std::string(toString(entry.state)))
        .bind(9, entry.preset)
        .bind(10, entry.dataset)
        .bind(11, entry.method)
        .bind(12, entry.members);
    bindRunSeed(row, 13, entry.seed);
    row.bind(14, entry.backend)
        .bind(15, entry.dataFingerprint)
        .bind(16, entry.parentId)
        .bind(17, entry.relation)
        .bind(18, entry.note)
        .bind(19, entry.commandLine)
        .bind(20, entry.host)
        .bind(21, entry.pid)
        .bind(22, entry.pidStart)
        .bind(23, entry.bootId);
    row.run();
    const std::int64_t id = sqlite3_last_insert_rowid(m_db.handle());

    if (!entry.config.is_null()) {
        m_statements->config.bind(1, id).bind(2, entry.config.dump()).run();
        configValues(id, entry.config);
    }
    if (!entry.curves.is_null()) {
        m_statements->curves.bind(1, id).bind(2, entry.curves.dump()).run();
    }
    for (const auto& [name, value] : entry.figures) {
        // SQLite keeps no NaN (it reads as NULL): a figure that is not a number is left out.
        if (std::isnan(value)) {
            continue;
        }
        m_statements->figure.bind(1, id).bind(2, name).bind(3, value).run();
    }
    for (const auto& name : entry.tags) {
        m_statements->tag.bind(1, id).bind(2, name).run();
    }
    std::int64_t seq = 0;
    for (const auto& written : entry.files) {
        m_statements->file.bind(1, id)
            .bind(2, seq++)
            .bind(3, written.path)
            .bind(4, written.role)
            .run();
    }
    return id;
}

int sweepInterrupted(const Connection& db) {
    struct Candidate {
        std::int64_t id;
        double updated;
        double started;
    };
    std::vector<Candidate> gone;
    {
        Statement running(db,
                          "SELECT id, host, pid, pid_start, boot_id, updated, started FROM runs "
                          "WHERE state = 'running'");
        while (running.step()) {
            if (!recorderAlive(running.text(1), running.integer(2), running.integer(3),
                               running.text(4))) {
                gone.push_back({running.integer(0), running.real(5), running.real(6)});
            }
        }
    }
    if (gone.empty()) {
        return 0;
    }
    WriteTransaction transaction(db);
    // Still running under the write lock: a recorder may have finished it since the read.
    Statement mark(db,
                   "UPDATE runs SET state = 'interrupted', ended = ?2, wall = ?3 "
                   "WHERE id = ?1 AND state = 'running'");
    int marked = 0;
    for (const Candidate& entry : gone) {
        mark.bind(1, entry.id)
            .bind(2, entry.updated)
            .bind(3, std::max(0.0, entry.updated - entry.started))
            .run();
        marked += sqlite3_changes(db.handle());
    }
    transaction.commit();
    return marked;
}

}  // namespace ensemble::runs::detail
