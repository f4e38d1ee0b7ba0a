#pragma once

// The runs store: every run the CLI and the app make, kept in one SQLite database (issue 52).
// Writers record through RunRecorder, which never costs the run: it writes on a thread of its
// own, retries a busy store in the background and goes quiet after one warning when the store
// cannot be written. Readers (the CLI's `runs` commands, the app's Runs view) go through
// RunStore: list / count / get with filters and sort (RunQuery, parseFilter), and the few edits a
// person makes (note, tags, remove). The file format (tables, journal, states) is described in
// docs/formats.md, "The runs store".
//
// Both classes hold their own SQLite connection; one RunStore is used from one thread at a time.
// Any number of processes and threads may record and read the same store at once (SQLite's
// locking: one writer at a time, which RunRecorder waits for in the background).

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/errors.h"
#include "core/named_enum.h"

namespace ensemble::runs {

// ---- Where the store is -------------------------------------------------------------------

// The store's own environment variable: a path to the database, or "off" to record nothing.
// The test suites set it (tests/CMakeLists.txt), so no test writes to a real store.
inline constexpr const char* kRunsDbVariable = "ENSEMBLE_RUNS_DB";

// $ENSEMBLE_RUNS_DB when set (and not empty); else ${XDG_DATA_HOME}/EnsembleLab/runs.sqlite when
// XDG_DATA_HOME is an absolute path; else $HOME/.local/share/EnsembleLab/runs.sqlite. An empty
// path when recording is off by the environment (ENSEMBLE_RUNS_DB=off).
std::filesystem::path defaultRunStorePath();

// True when ENSEMBLE_RUNS_DB=off: nothing records (the CLI's flag and the app's setting are the
// callers' own switches on top of this).
bool recordingDisabledByEnvironment();

// ---- One entry ----------------------------------------------------------------------------

enum class RunState {
    Running,      // recording now, or its process is alive
    Finished,     // ended normally
    Cancelled,    // stopped by the person (Ctrl-C, the app's Stop / Reset)
    Failed,       // ended by an error
    Interrupted,  // its process vanished while running (kill -9, a crash, a power cut)
};
inline constexpr int kRunStateCount = 5;

// A file a run wrote, and what it is: "export", "checkpoint", "report", "csv", "figure".
struct RunFile {
    std::string path;
    std::string role;
    bool operator==(const RunFile&) const = default;
};

// One run. Times are unix seconds (UTC, with fractions); isoUtc() prints them.
struct RunEntry {
    std::int64_t id = 0;       // given by the store; 0 before it is recorded
    std::string program;       // "ensemble-cli", "ensemble-lab"
    std::string kind;          // "train", "resume", "compare", "shift", "active", "reproduce",
                               // "app-train", "app-shift", "app-methods", "app-active" (free text)
    std::string version;       // the program's version
    double started = 0.0;      // unix seconds; the recorder fills it when 0
    double ended = 0.0;        // 0 while running
    double updated = 0.0;      // the last write of this entry (an interrupted run's end)
    double wallSeconds = 0.0;  // ended - started, by a steady clock
    RunState state = RunState::Running;

    nlohmann::json config;  // the full config (object), or null
    // Filterable summary columns. Left empty (0), the recorder fills dataset, method, members
    // and seed from the config (fillFromConfig); preset is only known to the caller.
    std::string preset;        // "spirals", a config file's name, or empty
    std::string dataset;       // config dataset.kind
    std::string method;        // config ensemble.method
    std::int64_t members = 0;  // config ensemble.members
    std::uint64_t seed = 0;    // config ensemble.seed
    std::string backend;       // the backend it ran on ("cpu", "cuda:0", ...)
    std::string dataFingerprint;

    // Final and headline figures: test_accuracy, test_nll, test_brier, test_ece, test_rmse,
    // test_coverage, and each command's own.
    std::map<std::string, double> figures;
    // The learning curves, opaque to the store (the Curves view's decimated series), or null.
    nlohmann::json curves;
    std::vector<RunFile> files;  // in the order written

    std::int64_t parentId = 0;      // the run this one continued, was opened from, or measured
    std::string relation;           // "continued", "opened", "measured"; empty without a parent
    std::vector<std::string> tags;  // sorted, distinct
    std::string note;
    std::string commandLine;  // the ensemble-cli command that reproduces it, where one exists

    // The recording process: told apart from a dead one by its pid's start time.
    std::string host;
    std::int64_t pid = 0;
    std::int64_t pidStart = 0;  // /proc/<pid>/stat's starttime (clock ticks since boot)
    std::string bootId;         // /proc/sys/kernel/random/boot_id at recording
};

// Fills the summary columns the config names and the entry leaves empty: dataset (dataset.kind),
// method (ensemble.method, "independent" when absent), members (ensemble.members), seed
// (ensemble.seed).
void fillFromConfig(RunEntry& entry);

// "2024-05-01T12:34:56Z" (seconds; fractions dropped). Empty for 0.
std::string isoUtc(double unixSeconds);
// Reads "2024-05-01", "2024-05-01T12:34", "2024-05-01T12:34:56" (a 'T' or a blank, an optional
// trailing 'Z'; always UTC). nullopt when the text is not one of these.
std::optional<double> parseIsoUtc(std::string_view text);

// ---- Queries ------------------------------------------------------------------------------

enum class FilterOp { Equal, NotEqual, Less, LessEqual, Greater, GreaterEqual, Contains };

// "=", "!=", "<", "<=", ">", ">=", "~".
const char* filterOpText(FilterOp op);

// One condition. `field` is one of:
//  - a column: id, started, ended, wall, members, seed, parent (numbers; started and ended also
//    take ISO dates), program, kind, version, state, preset, dataset, method, backend,
//    fingerprint, relation, host, note, command (text);
//  - tag: `tag=x` has the tag x, `tag!=x` has not, `tag~x` has a tag containing x;
//  - figure.<name>: a figure (numbers);
//  - config.<dotted.key>: a config value (config.optimizer.lr, config.model.hidden); a value that
//    reads as a number compares numerically, any other as text (arrays and objects as compact
//    JSON, "[32,32]"; booleans as true/false).
// Text compares byte-wise; `~` is contains, ignoring ASCII case, and applies to text only.
// A figure or config filter matches only entries that have that figure or key (tag!= is the
// exception: it matches entries without the tag); `ended` likewise only ended entries.
struct RunFilter {
    std::string field;
    FilterOp op = FilterOp::Equal;
    std::string value;
    bool operator==(const RunFilter&) const = default;
};

// The order: any field a filter takes except tag, note and command. Entries without a value
// (a missing figure or config key, a running entry's ended) come last either way; ties by id
// in the same direction. Config values: numbers before text, ascending.
struct RunSort {
    std::string field = "id";
    bool descending = true;  // newest first by default
    bool operator==(const RunSort&) const = default;
};

struct RunQuery {
    std::vector<RunFilter> filters;  // all must hold
    // Free-text search: every blank-separated word must occur (ignoring ASCII case) in the note
    // or in one of the tags.
    std::string text;
    RunSort sort;
    std::int64_t limit = -1;  // < 0: all
    std::int64_t offset = 0;
    // Keyset paging (the app's table as it scrolls): `after` an entry's id gives the `limit`
    // entries that follow that entry in this order, `before` the `limit` that precede it (in
    // this order too). The store seeks to the entry through the sort's index, where an offset
    // steps over every row before it. The entry need not match the filters; an id no entry has
    // falls back to `offset`. `after` wins when both are set.
    std::int64_t after = 0;
    std::int64_t before = 0;
    // list(): also the config, curves and files (get() always gives them). Off, an entry
    // carries the columns, figures and tags only: what a table shows.
    bool full = false;
};

// Parses a filter text: blank-separated terms, each `field op value` (op one of = != < <= > >=
// ~; a value with blanks in double quotes: note~"two words") or a bare word, which joins the
// free-text search. "figure.test_nll<0.3 preset=spirals tag~sweep". Checks fields, operators,
// numbers, dates and state names. Throws ConfigError naming the bad term and why.
RunQuery parseFilter(std::string_view text);

// "started", "-figure.test_nll" (descending), "+members", "wall:desc", "id:asc". Without a
// sign or suffix: ascending. Throws ConfigError for an unknown field.
RunSort parseSort(std::string_view text);

// ---- Errors -------------------------------------------------------------------------------

// The store cannot be opened, read or written: names the path and what SQLite said.
class RunStoreError : public RuntimeError {
  public:
    RunStoreError(const std::string& message, int sqliteCode)
        : RuntimeError(ErrorKind::Io, message), m_sqliteCode(sqliteCode) {}
    int sqliteCode() const { return m_sqliteCode; }

  private:
    int m_sqliteCode;
};

// ---- Reading and editing ------------------------------------------------------------------

class RunStore {
  public:
    // Opens (creating the file and its folders, migrating an older schema) and marks entries
    // whose process is gone as Interrupted. A store that cannot be written (permissions, a
    // read-only medium) opens read-only: reads work, edits throw, nothing is migrated or swept
    // (an older schema that would need migrating throws). Throws RunStoreError for an empty
    // path, a corrupt or unreadable file.
    static RunStore open(const std::filesystem::path& path);
    // Opens only to read, for look-ups on the GUI thread (Open Recent naming each file's run):
    // SQLITE_OPEN_READONLY, so no sweep, no migration, no journal change; the file is never
    // written (SQLite may create the -wal and -shm beside a WAL store, as any reader does).
    // A busy store is waited for at most `busyTimeoutMs`, after which a read throws. nullopt
    // when there is no file at `path` or its schema version is not this build's (an older store
    // answers "no run" until a writer migrates it). Throws RunStoreError for a file that is not
    // a store (corrupt, unreadable).
    static std::optional<RunStore> openReadOnly(const std::filesystem::path& path,
                                                int busyTimeoutMs = 100);

    RunStore(RunStore&&) noexcept;
    RunStore& operator=(RunStore&&) noexcept;
    ~RunStore();

    const std::filesystem::path& path() const;
    int schemaVersion() const;
    bool readOnly() const;

    std::vector<RunEntry> list(const RunQuery& query) const;
    // How many entries match the filters (limit and offset ignored).
    std::int64_t count(const RunQuery& query) const;
    std::optional<RunEntry> get(std::int64_t id) const;
    // The newest entry that wrote `path` (one of its files with the role export or checkpoint,
    // the path as recorded: absolute), the run a command continues, opens or measures; nullopt
    // when none did. An index lookup (schema v3).
    std::optional<std::int64_t> writerOf(const std::string& path) const;

    // Edits; false when no entry has that id.
    bool setNote(std::int64_t id, const std::string& note);
    bool addTag(std::int64_t id, const std::string& tag);
    bool removeTag(std::int64_t id, const std::string& tag);
    // Removes the entry (never its files); gives its files so the caller may delete them when
    // asked. nullopt when no entry has that id.
    std::optional<std::vector<RunFile>> remove(std::int64_t id);

    // Adds finished entries as they are, in one transaction (imports, the benchmark, tests);
    // ids are given by the store and returned in order. Not a way to record a live run.
    std::vector<std::int64_t> insert(const std::vector<RunEntry>& entries);

    // The distinct figure names and config keys in the store, sorted (the app's column chooser,
    // completion).
    std::vector<std::string> figureNames() const;
    std::vector<std::string> configKeys() const;

    // Marks Running entries of this host whose process is gone as Interrupted (ended: their last
    // update). open() does it; returns how many it marked.
    int sweepInterrupted();

  private:
    struct Impl;
    explicit RunStore(std::unique_ptr<Impl> impl);
    std::unique_ptr<Impl> m_impl;
};

// ---- Recording ----------------------------------------------------------------------------

// Says something went wrong with the store, once per recorder (default: a line on stderr).
// Called on the recorder's thread, or on the thread that destroys the recorder.
using RunWarningSink = std::function<void(const std::string&)>;

// Records ONE run. Construction returns at once: the entry is inserted (state Running) by a
// thread of the recorder's own, which also opens, migrates and sweeps the store. Every other call
// only queues its change and returns; the thread writes them in order, each batch one
// transaction, coalescing what piles up (the latest curves win, figures merge). A busy store (an
// other writer) is retried in the background with backoff; a lock lasting past 5 s warns once
// and is still retried. A store that cannot be written (read-only, full, corrupt, unreachable)
// warns once and the recorder goes quiet: later calls do nothing, the run goes on.
//
// The destructor flushes with a bounded wait (2 s). If finish() was never called it marks the
// entry Failed when the destructor runs while an exception unwinds the stack, else Cancelled.
// A kill -9 of the process loses at most the last changes not yet written (curves are written
// at most every 250 ms); the entry stays Running until a later open marks it Interrupted.
//
// An empty store path records nothing (recording off): every call is a no-op.
class RunRecorder {
  public:
    RunRecorder(std::filesystem::path storePath, RunEntry entry, RunWarningSink warn = {});
    ~RunRecorder();
    RunRecorder(const RunRecorder&) = delete;
    RunRecorder& operator=(const RunRecorder&) = delete;

    void setCurves(nlohmann::json curves);  // replaces the curves as a whole
    void setFigures(const std::map<std::string, double>& figures);  // merged by name
    void addFile(std::string path, std::string role);
    void addTag(std::string tag);
    void setBackend(std::string backend);
    void setDataFingerprint(std::string fingerprint);
    void setParent(std::int64_t parentId, std::string relation);
    void setCommandLine(std::string commandLine);
    // Ends the entry: its state (not Running; Running is ignored), ended and wall time now,
    // `figures` merged. A second finish() does nothing; the other calls still record (a file
    // written after the end).
    void finish(RunState state, const std::map<std::string, double>& figures = {});

    // The entry's id once inserted, waiting up to `wait` for it; 0 when it is not (yet)
    // recorded (recording off, a quiet recorder, a store still locked). Blocks: not for the
    // training thread.
    std::int64_t id(std::chrono::milliseconds wait = std::chrono::milliseconds(2000)) const;
    // Waits up to `wait` until every queued change is written (or the recorder went quiet);
    // true when nothing is left to write.
    bool flush(std::chrono::milliseconds wait = std::chrono::milliseconds(2000)) const;
    // True once the recorder has warned and stopped writing.
    bool quiet() const;
    const std::filesystem::path& storePath() const;

    // The state shared with the recorder's thread (run_recorder.cpp).
    struct Shared;

  private:
    std::shared_ptr<Shared> m_shared;
    std::filesystem::path m_path;
    int m_uncaughtAtStart = 0;
};

// ---- The journal ----------------------------------------------------------------------------

enum class JournalMode { Wal, Delete };

// WAL on a local file system; the rollback journal (DELETE) on a network or cluster file system
// (NFS, SMB/CIFS, AFS, Coda, Ceph, Lustre, GPFS, 9p, FUSE, ...), where SQLite's WAL (shared
// memory beside the file) is unsafe. A pure function of statfs's f_type.
JournalMode journalModeForFsType(std::int64_t statfsType);
// The same for the folder `folder` (statfs); WAL when statfs fails.
JournalMode journalModeForFolder(const std::filesystem::path& folder);

}  // namespace ensemble::runs

namespace ensemble {
template <>
struct EnumNames<runs::RunState> {
    static constexpr EnumName<runs::RunState> table[] = {
        {runs::RunState::Running, "running", "Running"},
        {runs::RunState::Finished, "finished", "Finished"},
        {runs::RunState::Cancelled, "cancelled", "Cancelled"},
        {runs::RunState::Failed, "failed", "Failed"},
        {runs::RunState::Interrupted, "interrupted", "Interrupted"},
    };
};
static_assert(tableMatchesEnum<runs::RunState>(runs::kRunStateCount),
              "one row per RunState, in the enum's order");
}  // namespace ensemble
