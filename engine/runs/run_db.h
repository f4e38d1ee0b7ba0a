#pragma once

// The runs store's inner parts, shared by its sources and its tests (not by callers: they use
// run_store.h): the SQLite connection and statements, the schema's migration steps, the rows an
// entry becomes, the process identity that tells a dead recorder from a live one.

#include <sqlite3.h>

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "runs/run_store.h"

namespace ensemble::runs::detail {

// The schema version this build writes (PRAGMA user_version) and migrates to.
inline constexpr int kSchemaVersion = 4;

// Throws RunStoreError: "runs store <path>: <what>: <SQLite's message> (<code name>)".
[[noreturn]] void throwSqlite(sqlite3* db, int rc, const std::filesystem::path& path,
                              const std::string& what);

// True for the codes a writer waits out (another connection holds the lock).
bool isBusyCode(int sqliteCode);

// One connection. Opened read-write (creating the file and its folders) unless the file can
// only be read, or `readOnly` asks for SQLITE_OPEN_READONLY (nothing created; a missing file
// throws with SQLITE_CANTOPEN); `busyTimeoutMs` is SQLite's own wait before it reports
// SQLITE_BUSY. A path beginning with "file:" is an SQLite URI (file:/x/runs.sqlite?mode=ro).
class Connection {
  public:
    Connection() = default;
    Connection(const std::filesystem::path& path, int busyTimeoutMs, bool readOnly = false);
    Connection(Connection&& other) noexcept;
    Connection& operator=(Connection&& other) noexcept;
    Connection(const Connection&) = delete;
    Connection& operator=(const Connection&) = delete;
    ~Connection();

    sqlite3* handle() const { return m_db; }
    const std::filesystem::path& path() const { return m_path; }
    bool readOnly() const;
    explicit operator bool() const { return m_db != nullptr; }

    // Runs SQL without results; throws RunStoreError naming `what`.
    void exec(const char* sql, const std::string& what) const;
    [[noreturn]] void fail(int rc, const std::string& what) const;

  private:
    sqlite3* m_db = nullptr;
    std::filesystem::path m_path;
};

// A prepared statement: bind by 1-based index, step, read columns.
class Statement {
  public:
    Statement(const Connection& db, const std::string& sql);
    Statement(const Statement&) = delete;
    Statement& operator=(const Statement&) = delete;
    ~Statement();

    Statement& bind(int index, std::int64_t value);
    Statement& bind(int index, double value);
    Statement& bind(int index, const std::string& value);
    Statement& bindNull(int index);
    // One step: true while a row is there; throws on an error.
    bool step();
    // Steps to the end (a statement without rows), then resets for the next binding.
    void run();
    void reset();

    bool isNull(int column) const;
    bool isReal(int column) const;
    // SQLITE_INTEGER, SQLITE_FLOAT, SQLITE_TEXT, SQLITE_BLOB or SQLITE_NULL.
    int type(int column) const;
    std::int64_t integer(int column) const;
    double real(int column) const;
    std::string text(int column) const;

  private:
    const Connection& m_db;
    sqlite3_stmt* m_stmt = nullptr;
};

// A write transaction (BEGIN IMMEDIATE: takes the write lock at once, so a busy store fails here,
// not halfway); rolled back unless commit() was called.
class WriteTransaction {
  public:
    explicit WriteTransaction(const Connection& db);
    ~WriteTransaction();
    WriteTransaction(const WriteTransaction&) = delete;
    WriteTransaction& operator=(const WriteTransaction&) = delete;
    void commit();

  private:
    const Connection& m_db;
    bool m_done = false;
};

// PRAGMA user_version.
int schemaVersionOf(const Connection& db);
// Applies the migration steps after the file's version up to `toVersion`, each in its own
// transaction with its user_version. Step 1 creates the tables of schema v1; step 3 indexes the
// files by path (RunStore::writerOf: Open Recent, resume and shift find their run); step 2 adds the
// config-values tables and fills them from the configs already stored; step 4 indexes the
// sortable columns v1 did not (version, fingerprint, relation, host). Throws RunStoreError for a
// file newer than this build (its version above kSchemaVersion).
void migrateSchema(const Connection& db, int toVersion);
// The journal for the store's folder (journalModeForFolder): WAL or DELETE, set when it differs;
// synchronous NORMAL under WAL (a killed process loses nothing committed).
void setJournal(const Connection& db);
// Opens for use: journal, migration to kSchemaVersion (only when writable), the sweep (only when
// writable; a busy store skips it).
void prepareStore(const Connection& db);

// The config's leaves by dotted key ("optimizer.lr"); arrays are leaves (kept whole).
std::vector<std::pair<std::string, nlohmann::json>> flattenConfig(const nlohmann::json& config);
// A config leaf as the store keeps it: its number (null when not a number or boolean) and text
// (a string as is, anything else as compact JSON).
struct ConfigCell {
    bool hasNumber = false;
    double number = 0.0;
    std::string text;
};
ConfigCell configCell(const nlohmann::json& leaf);

// Writes entries (the runs row and every side table) inside the caller's transaction, with its
// statements prepared once and the config keys' ids remembered: live no longer than that
// transaction.
class EntryWriter {
  public:
    explicit EntryWriter(const Connection& db);
    ~EntryWriter();
    EntryWriter(const EntryWriter&) = delete;
    EntryWriter& operator=(const EntryWriter&) = delete;
    // Inserts the whole entry; returns its id.
    std::int64_t insert(const RunEntry& entry);
    // Writes a run's config values (schema v2's table) from its config.
    void configValues(std::int64_t id, const nlohmann::json& config);

  private:
    struct Statements;
    std::int64_t keyId(const std::string& key);
    const Connection& m_db;
    std::unique_ptr<Statements> m_statements;
    std::map<std::string, std::int64_t> m_keyIds;
};

// The recording process's identity and whether a recorded one still runs.
struct ProcessIdentity {
    std::string host;
    std::int64_t pid = 0;
    std::int64_t pidStart = 0;
    std::string bootId;
};
const ProcessIdentity& currentProcess();
// /proc/<pid>/stat's starttime; 0 when the process does not exist (or cannot be read).
std::int64_t processStartTime(std::int64_t pid);
// False when the entry's process (on this host) is gone: another boot, no such pid, or a pid
// that started at another time. True for another host's entries (they cannot be checked).
bool recorderAlive(const std::string& host, std::int64_t pid, std::int64_t pidStart,
                   const std::string& bootId);
// The sweep (RunStore::sweepInterrupted) on a connection.
int sweepInterrupted(const Connection& db);

// Seconds since the epoch, now.
double unixNow();

}  // namespace ensemble::runs::detail
