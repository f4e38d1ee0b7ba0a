// The runs store (engine/runs): its schema and the migration from v1, every field recorded and
// read back, filters and sort against a brute-force check, writers at once (threads and forked
// processes), a recorder killed with SIGKILL mid-run, a locked, read-only and corrupt store (one
// warning, the run unharmed), the journal choice and the default path's environment rules.
// Everything is written under a QTemporaryDir. The executable is also its own child process:
// `tst_run_store --runs-child <mode> ...` records runs for the multi-process tests.
#include <QtTest/QtTest>

#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <functional>
#include <iterator>
#include <mutex>
#include <optional>
#include <random>
#include <set>
#include <sstream>
#include <thread>
#include <variant>

#include "runs/run_db.h"
#include "runs/run_query_sql.h"
#include "runs/run_store.h"

using namespace ensemble::runs;
using namespace std::chrono_literals;
using SteadyClock = std::chrono::steady_clock;

namespace {

// The warnings a recorder gave.
struct Warnings {
    std::mutex mutex;
    std::vector<std::string> messages;
    RunWarningSink sink() {
        return [this](const std::string& message) {
            std::lock_guard lock(mutex);
            messages.push_back(message);
        };
    }
    std::size_t count() {
        std::lock_guard lock(mutex);
        return messages.size();
    }
    std::string first() {
        std::lock_guard lock(mutex);
        return messages.empty() ? std::string() : messages.front();
    }
};

RunEntry minimalEntry(const std::string& kind) {
    RunEntry entry;
    entry.program = "ensemble-cli";
    entry.kind = kind;
    entry.version = "0.0-test";
    entry.config = {{"ensemble", {{"members", 4}, {"seed", 7}}}, {"dataset", {{"kind", "moons"}}}};
    return entry;
}

double seconds(SteadyClock::duration d) {
    return std::chrono::duration<double>(d).count();
}

std::string sqlOne(const std::filesystem::path& path, const char* sql) {
    detail::Connection db(path, 5000);
    detail::Statement row(db, sql);
    return row.step() ? row.text(0) : std::string();
}

// Starts this executable as a child: `--runs-child` and `args`.
pid_t spawnRunsChild(const std::vector<std::string>& args) {
    std::vector<std::string> all{"tst_run_store", "--runs-child"};
    all.insert(all.end(), args.begin(), args.end());
    const pid_t pid = fork();
    if (pid == 0) {
        std::vector<char*> argv;
        for (auto& arg : all) {
            argv.push_back(arg.data());
        }
        argv.push_back(nullptr);
        execv("/proc/self/exe", argv.data());
        _exit(127);
    }
    return pid;
}

int waitExit(pid_t pid) {
    int status = 0;
    waitpid(pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

// ---- The brute-force model of the query rules (run_store.h, RunFilter and RunSort) -------

std::string lowerAscii(std::string text) {
    for (char& c : text) {
        c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    }
    return text;
}

bool containsIgnoringCase(const std::string& haystack, const std::string& needle) {
    return lowerAscii(haystack).find(lowerAscii(needle)) != std::string::npos;
}

template <typename T>
bool compareBy(const T& a, FilterOp op, const T& b) {
    switch (op) {
        case FilterOp::Equal:
            return a == b;
        case FilterOp::NotEqual:
            return a != b;
        case FilterOp::Less:
            return a < b;
        case FilterOp::LessEqual:
            return a <= b;
        case FilterOp::Greater:
            return a > b;
        case FilterOp::GreaterEqual:
            return a >= b;
        case FilterOp::Contains:
            return false;
    }
    return false;
}

std::optional<double> numberOf(const std::string& text) {
    if (text.empty()) {
        return std::nullopt;
    }
    char* end = nullptr;
    const double value = std::strtod(text.c_str(), &end);
    return *end == '\0' ? std::optional<double>(value) : std::nullopt;
}

// A config leaf: its number (numbers and booleans) and its text (strings as is, else JSON).
struct Cell {
    std::optional<double> number;
    std::string text;
};

std::optional<Cell> configLeaf(const RunEntry& entry, const std::string& dotted) {
    const nlohmann::json* at = &entry.config;
    std::size_t start = 0;
    while (true) {
        const auto dot = dotted.find('.', start);
        const std::string part = dotted.substr(start, dot - start);
        if (!at->is_object() || !at->contains(part)) {
            return std::nullopt;
        }
        at = &(*at)[part];
        if (dot == std::string::npos) {
            break;
        }
        start = dot + 1;
    }
    if (at->is_object()) {
        return std::nullopt;
    }
    Cell cell;
    cell.text = at->is_string() ? at->get<std::string>() : at->dump();
    if (at->is_number()) {
        cell.number = at->get<double>();
    } else if (at->is_boolean()) {
        cell.number = at->get<bool>() ? 1.0 : 0.0;
    }
    return cell;
}

// The value a sort or filter sees: a number, a text, or nothing.
using Value = std::variant<std::monostate, double, std::string>;

Value fieldValue(const RunEntry& e, const std::string& field) {
    if (field.rfind("figure.", 0) == 0) {
        const auto found = e.figures.find(field.substr(7));
        return found == e.figures.end() ? Value() : Value(found->second);
    }
    if (field.rfind("config.", 0) == 0) {
        const auto cell = configLeaf(e, field.substr(7));
        if (!cell) {
            return {};
        }
        return cell->number ? Value(*cell->number) : Value(cell->text);
    }
    const std::map<std::string, Value> columns = {
        {"id", double(e.id)},
        {"started", e.started},
        {"ended", e.ended > 0 ? Value(e.ended) : Value()},
        {"wall", e.wallSeconds},
        {"members", double(e.members)},
        {"seed", double(e.seed)},
        {"parent", double(e.parentId)},
        {"program", e.program},
        {"kind", e.kind},
        {"version", e.version},
        {"state", std::string(ensemble::toString(e.state))},
        {"preset", e.preset},
        {"dataset", e.dataset},
        {"method", e.method},
        {"backend", e.backend},
        {"fingerprint", e.dataFingerprint},
        {"relation", e.relation},
        {"host", e.host},
        {"note", e.note},
        {"command", e.commandLine},
    };
    return columns.at(field);
}

bool bruteMatches(const RunEntry& e, const RunFilter& f) {
    if (f.field == "tag") {
        const bool has = std::any_of(e.tags.begin(), e.tags.end(), [&](const std::string& t) {
            return f.op == FilterOp::Contains ? containsIgnoringCase(t, f.value) : t == f.value;
        });
        return f.op == FilterOp::NotEqual ? !has : has;
    }
    if (f.field.rfind("config.", 0) == 0) {
        const auto cell = configLeaf(e, f.field.substr(7));
        if (!cell) {
            return false;
        }
        if (f.op == FilterOp::Contains) {
            return containsIgnoringCase(cell->text, f.value);
        }
        if (const auto number = numberOf(f.value)) {
            return cell->number && compareBy(*cell->number, f.op, *number);
        }
        return compareBy(cell->text, f.op, f.value);
    }
    const Value value = fieldValue(e, f.field);
    if (std::holds_alternative<std::monostate>(value)) {
        return false;
    }
    if (const double* number = std::get_if<double>(&value)) {
        auto wanted = numberOf(f.value);
        if (!wanted) {
            wanted = parseIsoUtc(f.value);
        }
        return compareBy(*number, f.op, *wanted);
    }
    const std::string& text = std::get<std::string>(value);
    return f.op == FilterOp::Contains ? containsIgnoringCase(text, f.value)
                                      : compareBy(text, f.op, f.value);
}

bool bruteText(const RunEntry& e, const std::string& text) {
    std::istringstream words(text);
    std::string word;
    while (words >> word) {
        const bool inTag = std::any_of(e.tags.begin(), e.tags.end(), [&](const std::string& t) {
            return containsIgnoringCase(t, word);
        });
        if (!containsIgnoringCase(e.note, word) && !inTag) {
            return false;
        }
    }
    return true;
}

// Numbers before texts; nothing is handled by the caller (always last).
bool valueLess(const Value& a, const Value& b) {
    if (a.index() != b.index()) {
        return a.index() < b.index();
    }
    if (const double* x = std::get_if<double>(&a)) {
        return *x < std::get<double>(b);
    }
    return std::get<std::string>(a) < std::get<std::string>(b);
}

std::vector<std::int64_t> bruteList(const std::vector<RunEntry>& all, const RunQuery& query) {
    std::vector<const RunEntry*> hits;
    for (const RunEntry& e : all) {
        bool ok = bruteText(e, query.text);
        for (const RunFilter& f : query.filters) {
            ok = ok && bruteMatches(e, f);
        }
        if (ok) {
            hits.push_back(&e);
        }
    }
    const bool down = query.sort.descending;
    std::stable_sort(hits.begin(), hits.end(), [&](const RunEntry* a, const RunEntry* b) {
        const Value va = fieldValue(*a, query.sort.field);
        const Value vb = fieldValue(*b, query.sort.field);
        const bool missingA = std::holds_alternative<std::monostate>(va);
        const bool missingB = std::holds_alternative<std::monostate>(vb);
        if (missingA != missingB) {
            return missingB;
        }
        if (!missingA && (valueLess(va, vb) || valueLess(vb, va))) {
            return down ? valueLess(vb, va) : valueLess(va, vb);
        }
        return down ? a->id > b->id : a->id < b->id;
    });
    std::vector<std::int64_t> ids;
    for (std::size_t i = static_cast<std::size_t>(query.offset); i < hits.size(); ++i) {
        if (query.limit >= 0 && static_cast<std::int64_t>(ids.size()) >= query.limit) {
            break;
        }
        ids.push_back(hits[i]->id);
    }
    return ids;
}

std::string numberText(double value) {
    char text[40];
    std::snprintf(text, sizeof text, "%.17g", value);
    return text;
}

std::vector<RunEntry> randomEntries(std::mt19937& rng, int count) {
    const auto pick = [&](const auto& options) {
        return options[std::uniform_int_distribution<std::size_t>(0, options.size() - 1)(rng)];
    };
    const std::vector<std::string> presets{"spirals", "moons", "", "mnist-mlp"};
    const std::vector<std::string> notes{"",           "good run",   "diverged at step 5",
                                         "50% faster", "snake_case", "Sweep B"};
    const std::vector<std::string> tagNames{"sweep", "baseline", "sweep-2", "Best", "a_b"};
    const std::vector<nlohmann::json> lrs{0.001, 0.01, 0.1, nlohmann::json::array({0.01, 0.02})};
    std::vector<RunEntry> out;
    for (int i = 0; i < count; ++i) {
        RunEntry e;
        e.program = pick(std::vector<std::string>{"ensemble-cli", "ensemble-lab"});
        e.kind = pick(std::vector<std::string>{"train", "resume", "compare", "app-train"});
        e.version = pick(std::vector<std::string>{"1.2.0", "1.10.0"});
        e.state = static_cast<RunState>(std::uniform_int_distribution<int>(0, 4)(rng));
        e.started = 1.7e9 + std::uniform_int_distribution<int>(0, 400)(rng) * 3600.0 + 0.25;
        e.wallSeconds = std::uniform_int_distribution<int>(0, 40)(rng) * 0.5;
        e.ended = e.state == RunState::Running ? 0.0 : e.started + e.wallSeconds;
        e.updated = e.started;
        e.preset = pick(presets);
        e.dataset = pick(std::vector<std::string>{"spirals", "moons", "mnist"});
        e.method = pick(std::vector<std::string>{"independent", "snapshot"});
        e.members = pick(std::vector<int>{1, 4, 16, 100});
        e.seed = static_cast<std::uint64_t>(std::uniform_int_distribution<int>(0, 5)(rng));
        e.backend = pick(std::vector<std::string>{"cpu", "cuda:0"});
        e.parentId = std::uniform_int_distribution<int>(0, 3)(rng) == 0 ? i : 0;
        e.relation = e.parentId != 0 ? "continued" : "";
        e.note = pick(notes);
        for (const auto& tag : tagNames) {
            if (std::uniform_int_distribution<int>(0, 3)(rng) == 0) {
                e.tags.push_back(tag);
            }
        }
        std::sort(e.tags.begin(), e.tags.end());
        for (const char* figure : {"test_nll", "test_accuracy", "test_ece"}) {
            if (std::uniform_int_distribution<int>(0, 4)(rng) != 0) {
                e.figures[figure] = std::uniform_int_distribution<int>(0, 64)(rng) / 64.0;
            }
        }
        e.config = {
            {"optimizer",
             {{"lr", pick(lrs)}, {"kind", pick(std::vector<std::string>{"adam", "sgd", "Adam"})}}},
            {"model", {{"hidden", pick(std::vector<nlohmann::json>{{32, 32}, {64}})}}},
            {"ensemble", {{"members", e.members}}}};
        if (std::uniform_int_distribution<int>(0, 2)(rng) != 0) {
            e.config["flag"] = std::uniform_int_distribution<int>(0, 1)(rng) == 1;
        }
        if (std::uniform_int_distribution<int>(0, 2)(rng) == 0) {
            e.config["dataset"] = {{"name", pick(std::vector<std::string>{"123", "abc", "b"})}};
        }
        out.push_back(std::move(e));
    }
    return out;
}

// The text of a field's value in `e`, as a filter value.
std::string filterValueOf(const RunEntry& e, const std::string& field) {
    if (field == "tag") {
        return e.tags.empty() ? "sweep" : e.tags.front();
    }
    if (field.rfind("config.", 0) == 0) {
        const auto cell = configLeaf(e, field.substr(7));
        return cell ? cell->text : "abc";
    }
    const Value value = fieldValue(e, field);
    if (const double* number = std::get_if<double>(&value)) {
        return numberText(*number);
    }
    if (const std::string* text = std::get_if<std::string>(&value)) {
        return *text;
    }
    return "0";
}

}  // namespace

class TstRunStore : public QObject {
    Q_OBJECT

  private:
    std::unique_ptr<QTemporaryDir> m_dir;
    std::filesystem::path storePath() const {
        return std::filesystem::path(m_dir->path().toStdString()) / "store" / "runs.sqlite";
    }

  private slots:
    void init() {
        m_dir = std::make_unique<QTemporaryDir>();
        QVERIFY(m_dir->isValid());
    }
    void cleanup() { m_dir.reset(); }

    void defaultPathFollowsTheEnvironment();
    void journalFollowsTheFileSystem();
    void createsTheCurrentSchema();
    void migratesAVersionOneStore();
    void refusesANewerStore();
    void recordsEveryFieldAndReadsItBack();
    void recorderEndsAnUnfinishedRun();
    void recordingOffRecordsNothing();
    void filtersAndSortAgreeWithBruteForce();
    void keysetPagesAgreeWithOneQuery();
    void keysetSeeksReadAnIndex();
    void migratesAVersionThreeStore();
    void readOnlyOpenLeavesTheStoreAsItIs();
    void parsesFiltersAndNamesTheBadPart();
    void editsNotesTagsAndRemoves();
    void threadsRecordAtOnce();
    void processesRecordAtOnce();
    void killedRecorderLeavesAnInterruptedEntry();
    void lockedStoreWarnsOnceAndReturns();
    void shortLockIsWaitedOut();
    void readOnlyStoreWarnsOnce();
    void corruptStoreWarnsOnceAndOpenNamesIt();
};

void TstRunStore::defaultPathFollowsTheEnvironment() {
    const QByteArray savedOwn = qgetenv(kRunsDbVariable);
    const QByteArray savedXdg = qgetenv("XDG_DATA_HOME");
    const QByteArray savedHome = qgetenv("HOME");
    const auto restore = qScopeGuard([&] {
        for (const auto& [name, value] :
             {std::pair{kRunsDbVariable, savedOwn}, std::pair{"XDG_DATA_HOME", savedXdg},
              std::pair{"HOME", savedHome}}) {
            if (value.isNull()) {
                qunsetenv(name);
            } else {
                qputenv(name, value);
            }
        }
    });
    qputenv("HOME", "/home/someone");
    qputenv("XDG_DATA_HOME", "/data/xdg");
    qputenv(kRunsDbVariable, "/tmp/elsewhere/my.sqlite");
    QCOMPARE(defaultRunStorePath().string(), std::string("/tmp/elsewhere/my.sqlite"));
    QVERIFY(!recordingDisabledByEnvironment());
    qputenv(kRunsDbVariable, "off");
    QVERIFY(defaultRunStorePath().empty());
    QVERIFY(recordingDisabledByEnvironment());
    qunsetenv(kRunsDbVariable);
    QCOMPARE(defaultRunStorePath().string(), std::string("/data/xdg/EnsembleLab/runs.sqlite"));
    // A relative XDG_DATA_HOME is invalid by the spec: the home's default instead.
    qputenv("XDG_DATA_HOME", "relative/xdg");
    QCOMPARE(defaultRunStorePath().string(),
             std::string("/home/someone/.local/share/EnsembleLab/runs.sqlite"));
    qunsetenv("XDG_DATA_HOME");
    QCOMPARE(defaultRunStorePath().string(),
             std::string("/home/someone/.local/share/EnsembleLab/runs.sqlite"));
    qputenv(kRunsDbVariable, "");
    QCOMPARE(defaultRunStorePath().string(),
             std::string("/home/someone/.local/share/EnsembleLab/runs.sqlite"));
}

void TstRunStore::journalFollowsTheFileSystem() {
    // Network and cluster file systems get the rollback journal; local ones WAL.
    for (const std::int64_t network : {0x6969LL, 0x517BLL, 0xFF534D42LL, 0xFE534D42LL, 0x65735546LL,
                                       0x01021997LL, 0x00C36400LL, 0x0BD00BD0LL}) {
        QCOMPARE(journalModeForFsType(network), JournalMode::Delete);
    }
    // CIFS's magic as a signed 32-bit f_type (as some ABIs give it).
    QCOMPARE(journalModeForFsType(static_cast<std::int32_t>(0xFF534D42u)), JournalMode::Delete);
    for (const std::int64_t local : {0xEF53LL, 0x01021994LL, 0x9123683ELL, 0x58465342LL,
                                     0x794C7630LL}) {  // ext4, tmpfs, btrfs, xfs, overlayfs
        QCOMPARE(journalModeForFsType(local), JournalMode::Wal);
    }
    // The store in the temporary folder takes what its file system calls for.
    RunStore::open(storePath());
    const JournalMode expected = journalModeForFolder(storePath().parent_path());
    QCOMPARE(sqlOne(storePath(), "PRAGMA journal_mode"),
             std::string(expected == JournalMode::Wal ? "wal" : "delete"));
}

void TstRunStore::createsTheCurrentSchema() {
    RunStore store = RunStore::open(storePath());
    QCOMPARE(store.schemaVersion(), detail::kSchemaVersion);
    QVERIFY(!store.readOnly());
    QCOMPARE(store.count({}), std::int64_t{0});
    for (const char* table : {"runs", "run_configs", "run_curves", "figures", "tags", "files",
                              "config_keys", "config_values"}) {
        const std::string sql =
            std::string("SELECT count(*) FROM sqlite_master WHERE type='table' AND name='") +
            table + "'";
        QCOMPARE(sqlOne(storePath(), sql.c_str()), std::string("1"));
    }
    // Opening again changes nothing.
    QCOMPARE(RunStore::open(storePath()).schemaVersion(), detail::kSchemaVersion);
}

void TstRunStore::migratesAVersionOneStore() {
    std::filesystem::create_directories(storePath().parent_path());
    {
        detail::Connection db(storePath(), 5000);
        detail::migrateSchema(db, 1);
        QCOMPARE(detail::schemaVersionOf(db), 1);
        // Rows as schema v1 holds them (no config values table yet).
        db.exec(R"sql(
INSERT INTO runs(id, program, kind, started, ended, updated, wall, state, preset, members, seed)
VALUES(1, 'ensemble-cli', 'train', 1700000000, 1700000060, 1700000060, 60, 'finished',
       'spirals', 16, 3),
      (2, 'ensemble-lab', 'app-train', 1700000100, 1700000200, 1700000200, 100, 'cancelled',
       'moons', 4, 0);
INSERT INTO run_configs(run, json) VALUES
  (1, '{"optimizer":{"lr":0.01,"kind":"adam"},"model":{"hidden":[32,32]}}'),
  (2, '{"optimizer":{"lr":0.05,"kind":"sgd"},"model":{"hidden":[8]}}');
INSERT INTO figures(run, name, value) VALUES(1, 'test_nll', 0.25), (2, 'test_nll', 0.5);
INSERT INTO tags(run, tag) VALUES(1, 'old');
INSERT INTO files(run, seq, path, role) VALUES(1, 0, '/tmp/a.safetensors', 'export');
)sql",
                "v1 rows");
    }
    RunStore store = RunStore::open(storePath());
    QCOMPARE(store.schemaVersion(), detail::kSchemaVersion);
    const auto first = store.get(1);
    QVERIFY(first.has_value());
    QCOMPARE(first->preset, std::string("spirals"));
    QCOMPARE(first->state, RunState::Finished);
    QCOMPARE(first->members, std::int64_t{16});
    QCOMPARE(first->figures.at("test_nll"), 0.25);
    QCOMPARE(first->tags, std::vector<std::string>{"old"});
    QCOMPARE(first->files, (std::vector<RunFile>{{"/tmp/a.safetensors", "export"}}));
    QCOMPARE(first->config["optimizer"]["lr"].get<double>(), 0.01);
    // The config values v2 adds were filled from v1's configs: config filters and sorts work.
    RunQuery query = parseFilter("config.optimizer.lr<0.02");
    QCOMPARE(store.count(query), std::int64_t{1});
    QCOMPARE(store.list(query).front().id, std::int64_t{1});
    QCOMPARE(store.count(parseFilter("config.model.hidden=[8]")), std::int64_t{1});
    query = RunQuery{};
    query.sort = parseSort("-config.optimizer.lr");
    const auto sorted = store.list(query);
    QCOMPARE(sorted.size(), std::size_t{2});
    QCOMPARE(sorted[0].id, std::int64_t{2});
    const auto keys = store.configKeys();
    QVERIFY(std::find(keys.begin(), keys.end(), "optimizer.lr") != keys.end());
    // v3 indexes the files by path: the run that wrote a file is found through the index.
    QCOMPARE(store.writerOf("/tmp/a.safetensors"), std::optional<std::int64_t>(1));
    QVERIFY(!store.writerOf("/tmp/b.safetensors").has_value());
    {
        detail::Connection db(storePath(), 5000);
        detail::Statement plan(db,
                               "EXPLAIN QUERY PLAN SELECT MAX(run) FROM files WHERE path = 'x'");
        QVERIFY(plan.step());
        QVERIFY2(plan.text(3).find("files_by_path") != std::string::npos, plan.text(3).c_str());
    }
    QCOMPARE(sqlOne(storePath(), "PRAGMA integrity_check"), std::string("ok"));
}

void TstRunStore::refusesANewerStore() {
    RunStore::open(storePath());
    sqlOne(storePath(), "PRAGMA user_version = 99");
    try {
        RunStore::open(storePath());
        QFAIL("a store of schema 99 opened");
    } catch (const RunStoreError& error) {
        const std::string what = error.what();
        QVERIFY2(what.find("newer") != std::string::npos, what.c_str());
        QVERIFY2(what.find(storePath().string()) != std::string::npos, what.c_str());
    }
}

void TstRunStore::recordsEveryFieldAndReadsItBack() {
    RunEntry entry = minimalEntry("train");
    entry.preset = "moons";
    entry.dataFingerprint = "sha256:abc";
    entry.note = "first try";
    entry.tags = {"sweep"};
    entry.commandLine = "ensemble-cli train --config moons";
    entry.config["optimizer"] = {{"lr", 0.05}};
    Warnings warnings;
    std::int64_t id = 0;
    const double before = detail::unixNow();
    {
        RunRecorder recorder(storePath(), entry, warnings.sink());
        recorder.setBackend("cpu");
        recorder.setCurves({{"train_loss", {{0, 1.0}}}});
        recorder.setCurves({{"train_loss", {{0, 1.0}, {10, 0.5}}}});
        recorder.addFile("/tmp/run/weights.safetensors", "export");
        recorder.setFigures({{"test_nll", 0.5}, {"test_accuracy", 0.75}});
        recorder.addTag("baseline");
        recorder.setParent(41, "continued");
        recorder.setDataFingerprint("sha256:def");
        recorder.finish(RunState::Finished, {{"test_nll", 0.25}, {"test_ece", 0.0625}});
        recorder.addFile("/tmp/run/report.json", "report");
        QVERIFY(recorder.flush(5000ms));
        id = recorder.id();
        QVERIFY(id > 0);
        QVERIFY(!recorder.quiet());
    }
    QCOMPARE(warnings.count(), std::size_t{0});
    RunStore store = RunStore::open(storePath());
    const auto got = store.get(id);
    QVERIFY(got.has_value());
    QCOMPARE(got->id, id);
    QCOMPARE(got->program, std::string("ensemble-cli"));
    QCOMPARE(got->kind, std::string("train"));
    QCOMPARE(got->version, std::string("0.0-test"));
    QCOMPARE(got->state, RunState::Finished);
    QVERIFY(got->started >= before - 1 && got->started <= detail::unixNow());
    QVERIFY(got->ended >= got->started);
    QVERIFY(got->updated >= got->ended);
    QVERIFY(got->wallSeconds >= 0 && got->wallSeconds < 30);
    QCOMPARE(got->config, entry.config);
    QCOMPARE(got->preset, std::string("moons"));
    QCOMPARE(got->dataset, std::string("moons"));       // from the config
    QCOMPARE(got->method, std::string("independent"));  // the config's default
    QCOMPARE(got->members, std::int64_t{4});
    QCOMPARE(got->seed, std::uint64_t{7});
    QCOMPARE(got->backend, std::string("cpu"));
    QCOMPARE(got->dataFingerprint, std::string("sha256:def"));
    QCOMPARE(got->figures, (std::map<std::string, double>{
                               {"test_nll", 0.25}, {"test_accuracy", 0.75}, {"test_ece", 0.0625}}));
    QCOMPARE(got->curves, (nlohmann::json{{"train_loss", {{0, 1.0}, {10, 0.5}}}}));
    QCOMPARE(got->files, (std::vector<RunFile>{{"/tmp/run/weights.safetensors", "export"},
                                               {"/tmp/run/report.json", "report"}}));
    QCOMPARE(got->parentId, std::int64_t{41});
    QCOMPARE(got->relation, std::string("continued"));
    QCOMPARE(got->tags, (std::vector<std::string>{"baseline", "sweep"}));
    QCOMPARE(got->note, std::string("first try"));
    QCOMPARE(got->commandLine, entry.commandLine);
    QCOMPARE(got->host, detail::currentProcess().host);
    QCOMPARE(got->pid, std::int64_t{getpid()});
    QCOMPARE(got->pidStart, detail::processStartTime(getpid()));
    QVERIFY(!got->bootId.empty());
    QCOMPARE(isoUtc(1714566896.5), std::string("2024-05-01T12:34:56Z"));
    QCOMPARE(parseIsoUtc("2024-05-01T12:34:56Z").value_or(0), 1714566896.0);
    QCOMPARE(parseIsoUtc("2024-05-01").value_or(0), 1714521600.0);
    QVERIFY(!parseIsoUtc("yesterday"));

    // A table's list has columns, figures and tags; the full list adds config, curves, files.
    RunQuery query;
    auto listed = store.list(query);
    QCOMPARE(listed.size(), std::size_t{1});
    QCOMPARE(listed[0].figures, got->figures);
    QCOMPARE(listed[0].tags, got->tags);
    QVERIFY(listed[0].config.is_null() && listed[0].files.empty());
    query.full = true;
    listed = store.list(query);
    QCOMPARE(listed[0].config, entry.config);
    QCOMPARE(listed[0].curves, got->curves);
    QCOMPARE(listed[0].files, got->files);
    QCOMPARE(store.figureNames(),
             (std::vector<std::string>{"test_accuracy", "test_ece", "test_nll"}));
}

void TstRunStore::recorderEndsAnUnfinishedRun() {
    std::int64_t letGo = 0;
    std::int64_t failed = 0;
    {
        RunRecorder recorder(storePath(), minimalEntry("train"));
        letGo = recorder.id();
    }
    try {
        RunRecorder recorder(storePath(), minimalEntry("train"));
        failed = recorder.id();
        throw std::runtime_error("the run failed");
    } catch (const std::runtime_error&) {
    }
    RunStore store = RunStore::open(storePath());
    QVERIFY(letGo > 0 && failed > 0);
    QCOMPARE(store.get(letGo)->state, RunState::Cancelled);
    QCOMPARE(store.get(failed)->state, RunState::Failed);
    QVERIFY(store.get(failed)->ended > 0);
}

void TstRunStore::recordingOffRecordsNothing() {
    Warnings warnings;
    RunRecorder recorder({}, minimalEntry("train"), warnings.sink());
    recorder.setCurves({{"a", 1}});
    recorder.finish(RunState::Finished, {{"x", 1.0}});
    QCOMPARE(recorder.id(0ms), std::int64_t{0});
    QVERIFY(recorder.flush(0ms));
    QVERIFY(!recorder.quiet());
    QCOMPARE(warnings.count(), std::size_t{0});
    QVERIFY_THROWS_EXCEPTION(RunStoreError, RunStore::open({}));
}

void TstRunStore::filtersAndSortAgreeWithBruteForce() {
    std::mt19937 rng(52);
    std::vector<RunEntry> all = randomEntries(rng, 300);
    RunStore store = RunStore::open(storePath());
    const auto ids = store.insert(all);
    for (std::size_t i = 0; i < all.size(); ++i) {
        all[i].id = ids[i];
    }
    const std::vector<std::string> fields{"id",
                                          "started",
                                          "ended",
                                          "wall",
                                          "members",
                                          "seed",
                                          "parent",
                                          "program",
                                          "kind",
                                          "version",
                                          "state",
                                          "preset",
                                          "dataset",
                                          "method",
                                          "backend",
                                          "note",
                                          "tag",
                                          "relation",
                                          "figure.test_nll",
                                          "figure.test_accuracy",
                                          "figure.missing",
                                          "config.optimizer.lr",
                                          "config.optimizer.kind",
                                          "config.model.hidden",
                                          "config.flag",
                                          "config.dataset.name",
                                          "config.nothere"};
    const auto pickIndex = [&](std::size_t n) {
        return std::uniform_int_distribution<std::size_t>(0, n - 1)(rng);
    };
    int nonEmpty = 0;
    for (int round = 0; round < 600; ++round) {
        RunQuery query;
        const int terms = static_cast<int>(pickIndex(3));
        for (int t = 0; t < terms; ++t) {
            RunFilter filter;
            filter.field = fields[pickIndex(fields.size())];
            const RunEntry& source = all[pickIndex(all.size())];
            filter.value = filterValueOf(source, filter.field);
            const bool numericField =
                filter.field.rfind("figure.", 0) == 0 ||
                std::set<std::string>{"id", "started", "ended", "wall", "members", "seed", "parent"}
                        .count(filter.field) > 0;
            std::vector<FilterOp> ops{FilterOp::Equal, FilterOp::NotEqual};
            if (filter.field != "tag" && filter.field != "state") {
                ops.insert(ops.end(), {FilterOp::Less, FilterOp::LessEqual, FilterOp::Greater,
                                       FilterOp::GreaterEqual});
            }
            if (!numericField) {
                ops.push_back(FilterOp::Contains);
            }
            filter.op = ops[pickIndex(ops.size())];
            if (filter.field == "state" && filter.op != FilterOp::Contains) {
                filter.value = ensemble::toString(static_cast<RunState>(pickIndex(5)));
            }
            if (filter.op == FilterOp::Contains && filter.value.size() > 2) {
                // A piece of the value, in the other case now and then (contains ignores it).
                const std::size_t from = pickIndex(filter.value.size() - 1);
                filter.value = filter.value.substr(from, 1 + pickIndex(3));
                if (pickIndex(2) == 0) {
                    for (char& c : filter.value) {
                        c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
                    }
                }
            }
            if (filter.field == "started" && pickIndex(4) == 0) {
                filter.value = isoUtc(source.started);  // a date, not a number
            }
            query.filters.push_back(filter);
        }
        if (pickIndex(4) == 0) {
            query.text = pickIndex(2) == 0 ? "SWEEP" : "50% b";
        }
        std::vector<std::string> sortable = fields;
        sortable.erase(
            std::remove_if(sortable.begin(), sortable.end(),
                           [](const std::string& f) { return f == "tag" || f == "note"; }),
            sortable.end());
        query.sort.field = sortable[pickIndex(sortable.size())];
        query.sort.descending = pickIndex(2) == 0;
        query.limit = std::vector<std::int64_t>{-1, 7, 40}[pickIndex(3)];
        query.offset = std::vector<std::int64_t>{0, 0, 5}[pickIndex(3)];

        std::vector<std::int64_t> got;
        for (const RunEntry& e : store.list(query)) {
            got.push_back(e.id);
        }
        const auto expected = bruteList(all, query);
        std::string described;
        for (const RunFilter& f : query.filters) {
            described += f.field + filterOpText(f.op) + f.value + " ";
        }
        described += "text='" + query.text + "' sort=" + query.sort.field +
                     (query.sort.descending ? " desc" : " asc");
        QVERIFY2(got == expected, described.c_str());
        RunQuery all0 = query;
        all0.limit = -1;
        all0.offset = 0;
        QCOMPARE(store.count(query), static_cast<std::int64_t>(bruteList(all, all0).size()));
        nonEmpty += got.empty() ? 0 : 1;
    }
    // The random queries found something often enough to mean something.
    QVERIFY2(nonEmpty > 200, std::to_string(nonEmpty).c_str());
    // The parsed form of a few of them says the same.
    for (const char* text : {"figure.test_nll<0.3 preset=spirals", "tag~SWEEP state!=running",
                             "config.optimizer.kind=adam members>=16 diverged",
                             "started>=2023-11-20 note~\"50% f\"", "config.model.hidden=[32,32]"}) {
        const RunQuery query = parseFilter(text);
        std::vector<std::int64_t> got;
        for (const RunEntry& e : store.list(query)) {
            got.push_back(e.id);
        }
        QVERIFY2(got == bruteList(all, query), text);
        QVERIFY2(!got.empty(), text);
    }
}

// Walking every page by keyset (RunQuery::after forwards, before backwards) gives the rows and
// order of one unpaged query, for each sort order: columns with many ties (preset, state),
// values that may be missing (ended, figures, config keys; a config key mixing numbers and
// text), ascending and descending, with and without filters; an anchor outside the filter
// pages from where it lies; an id no entry has falls back to the offset.
void TstRunStore::keysetPagesAgreeWithOneQuery() {
    std::mt19937 rng(7);
    std::vector<RunEntry> all = randomEntries(rng, 300);
    RunStore store = RunStore::open(storePath());
    const auto inserted = store.insert(all);
    for (std::size_t i = 0; i < all.size(); ++i) {
        all[i].id = inserted[i];
    }
    const auto idsOf = [](const std::vector<RunEntry>& entries) {
        std::vector<std::int64_t> ids;
        for (const RunEntry& e : entries) {
            ids.push_back(e.id);
        }
        return ids;
    };
    const std::vector<std::string> sorts{"id",
                                         "started",
                                         "ended",
                                         "wall",
                                         "seed",
                                         "preset",
                                         "state",
                                         "version",
                                         "host",
                                         "figure.test_nll",
                                         "figure.missing",
                                         "config.optimizer.lr",
                                         "config.dataset.name",
                                         "config.nothere"};
    const std::vector<std::string> filters{"", "preset=spirals",
                                           "figure.test_accuracy>0.3 tag~sweep"};
    int walks = 0;
    for (const std::string& sort : sorts) {
        for (const bool descending : {false, true}) {
            for (const std::string& filter : filters) {
                RunQuery query = parseFilter(filter);
                query.sort = parseSort(sort);
                query.sort.descending = descending;
                const std::vector<std::int64_t> whole = idsOf(store.list(query));
                const std::string what = sort + (descending ? " desc, " : " asc, ") + filter;
                for (const std::int64_t size : {std::int64_t{7}, std::int64_t{64}}) {
                    RunQuery page = query;
                    page.limit = size;
                    std::vector<std::int64_t> forwards;
                    for (;;) {
                        const auto got = idsOf(store.list(page));
                        forwards.insert(forwards.end(), got.begin(), got.end());
                        if (static_cast<std::int64_t>(got.size()) < size ||
                            forwards.size() > whole.size()) {
                            break;
                        }
                        page.after = got.back();
                    }
                    QVERIFY2(forwards == whole, ("forwards: " + what).c_str());
                    if (whole.empty()) {
                        continue;
                    }
                    page.after = 0;
                    page.before = whole.back();
                    std::vector<std::int64_t> backwards{whole.back()};
                    for (;;) {
                        const auto got = idsOf(store.list(page));
                        backwards.insert(backwards.begin(), got.begin(), got.end());
                        if (static_cast<std::int64_t>(got.size()) < size ||
                            backwards.size() > whole.size()) {
                            break;
                        }
                        page.before = got.front();
                    }
                    QVERIFY2(backwards == whole, ("backwards: " + what).c_str());
                    ++walks;
                }
                // From an entry the filter leaves out: the matching ones after it in the
                // unfiltered order.
                RunQuery unfiltered;
                unfiltered.sort = query.sort;
                const std::vector<std::int64_t> order = idsOf(store.list(unfiltered));
                const std::set<std::int64_t> matching(whole.begin(), whole.end());
                const auto outside = std::find_if(order.begin() + 100, order.end(),
                                                  [&](auto id) { return matching.count(id) == 0; });
                if (outside != order.end()) {
                    std::vector<std::int64_t> expected;
                    for (auto it = outside + 1; it != order.end() && expected.size() < 10; ++it) {
                        if (matching.count(*it) > 0) {
                            expected.push_back(*it);
                        }
                    }
                    RunQuery page = query;
                    page.limit = 10;
                    page.after = *outside;
                    QVERIFY2(idsOf(store.list(page)) == expected, ("outside: " + what).c_str());
                }
                // An id no entry has: the page at the offset.
                RunQuery gone = query;
                gone.limit = 10;
                gone.offset = 5;
                gone.after = 1000000;
                QVERIFY2(idsOf(store.list(gone)) == bruteList(all, gone),
                         ("gone: " + what).c_str());
            }
        }
    }
    // Every sort and direction walked with each page size, over a filter or none at least.
    QVERIFY2(walks >= static_cast<int>(sorts.size()) * 2 * 2 * 2, std::to_string(walks).c_str());
}

// The seek of each kind of sort reads an index, never sorts in a temporary b-tree: the figure
// and config stretches through (name, value, run) and (key, number|text, run), the columns
// through their own index and the id; ties seek by the id too.
void TstRunStore::keysetSeeksReadAnIndex() {
    RunStore::open(storePath());
    detail::Connection db(storePath(), 5000);
    for (const char* sort :
         {"started", "-ended", "preset", "-host", "version", "fingerprint", "relation", "wall",
          "-figure.test_nll", "config.optimizer.lr", "-config.optimizer.lr", "id"}) {
        RunQuery query;
        query.sort = parseSort(sort);
        const detail::QuerySql sql = detail::buildQuerySql(query, true);
        for (const detail::SortPart& part : sql.parts) {
            for (const auto seek : {detail::Seek::Ties, detail::Seek::Past}) {
                if (seek == detail::Seek::Ties && part.key.empty()) {
                    continue;
                }
                for (const bool reversed : {false, true}) {
                    const std::string text = detail::sortPartSql(part, "", false, seek, reversed);
                    detail::Statement plan(db, "EXPLAIN QUERY PLAN " + text);
                    std::string steps;
                    while (plan.step()) {
                        steps += plan.text(3) + "\n";
                    }
                    const std::string what = std::string(sort) + ": " + text + "\n" + steps;
                    QVERIFY2(steps.rfind("SEARCH", 0) == 0, what.c_str());
                    QVERIFY2(steps.find("TEMP B-TREE") == std::string::npos, what.c_str());
                    const std::string tie = part.tie == "r.id" ? "rowid" : "run";
                    QVERIFY2(steps.find(tie) != std::string::npos || seek == detail::Seek::Past,
                             what.c_str());
                }
            }
        }
    }
}

void TstRunStore::migratesAVersionThreeStore() {
    std::filesystem::create_directories(storePath().parent_path());
    std::vector<std::int64_t> ids;
    {
        detail::Connection db(storePath(), 5000);
        detail::migrateSchema(db, 3);
        detail::WriteTransaction transaction(db);
        detail::EntryWriter writer(db);
        for (const char* host : {"zeta", "alpha", "mid"}) {
            RunEntry entry = minimalEntry("train");
            entry.host = host;
            entry.state = RunState::Finished;
            entry.started = 1.7e9;
            entry.updated = entry.started;
            ids.push_back(writer.insert(entry));
        }
        transaction.commit();
    }
    QCOMPARE(sqlOne(storePath(), "PRAGMA user_version"), std::string("3"));
    // A read-only open leaves an older store as it is and names no run.
    QVERIFY(!RunStore::openReadOnly(storePath()).has_value());
    QCOMPARE(sqlOne(storePath(), "PRAGMA user_version"), std::string("3"));
    RunStore store = RunStore::open(storePath());
    QCOMPARE(store.schemaVersion(), 4);
    for (const char* index : {"runs_version", "runs_fingerprint", "runs_relation", "runs_host"}) {
        const std::string sql =
            std::string("SELECT count(*) FROM sqlite_master WHERE type='index' AND name='") +
            index + "'";
        QCOMPARE(sqlOne(storePath(), sql.c_str()), std::string("1"));
    }
    RunQuery query;
    query.sort = parseSort("host");
    std::vector<std::int64_t> got;
    for (const RunEntry& e : store.list(query)) {
        got.push_back(e.id);
    }
    QCOMPARE(got, (std::vector<std::int64_t>{ids[1], ids[2], ids[0]}));
    {
        detail::Connection db(storePath(), 5000);
        detail::Statement plan(db, "EXPLAIN QUERY PLAN SELECT id FROM runs ORDER BY host LIMIT 1");
        QVERIFY(plan.step());
        QVERIFY2(plan.text(3).find("runs_host") != std::string::npos, plan.text(3).c_str());
    }
    QVERIFY(RunStore::openReadOnly(storePath()).has_value());
    QCOMPARE(sqlOne(storePath(), "PRAGMA integrity_check"), std::string("ok"));
}

namespace {

std::string fileBytes(const std::filesystem::path& path) {
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
}

}  // namespace

// The read-only open (Open Recent, on the GUI thread): a missing store is no run and nothing
// is created; a store's file is left byte for byte as it was (no sweep of an entry a dead
// process left running, no migration); it reads while another connection holds a write
// transaction, and a lock that does stop readers (the rollback journal's) fails within its
// short wait instead of blocking.
void TstRunStore::readOnlyOpenLeavesTheStoreAsItIs() {
    QVERIFY(!RunStore::openReadOnly(storePath()).has_value());
    QVERIFY(!std::filesystem::exists(storePath().parent_path()));
    QVERIFY(!RunStore::openReadOnly({}).has_value());

    RunEntry dead = minimalEntry("train");
    const detail::ProcessIdentity& me = detail::currentProcess();
    dead.host = me.host;
    dead.pid = me.pid;
    dead.pidStart = me.pidStart;
    dead.bootId = "a boot before this one";  // so a normal open sweeps it
    dead.files = {{"/runs/a.safetensors", "export"}};
    std::int64_t id = 0;
    {
        RunStore store = RunStore::open(storePath());
        id = store.insert({dead}).front();
    }
    const std::filesystem::path wal = storePath().string() + "-wal";
    const std::filesystem::path shm = storePath().string() + "-shm";
    const auto checkUnchanged = [&](const std::function<void()>& read) {
        const std::string bytes = fileBytes(storePath());
        const std::string walBytes = fileBytes(wal);
        const auto mtime = std::filesystem::last_write_time(storePath());
        read();
        QVERIFY(fileBytes(storePath()) == bytes);
        QVERIFY(std::filesystem::last_write_time(storePath()) == mtime);
        QVERIFY(fileBytes(wal) == walBytes);
    };
    checkUnchanged([&] {
        std::optional<RunStore> store = RunStore::openReadOnly(storePath());
        QVERIFY(store.has_value());
        QVERIFY(store->readOnly());
        QCOMPARE(store->writerOf("/runs/a.safetensors"), std::optional<std::int64_t>(id));
        QCOMPARE(store->get(id)->state, RunState::Running);  // not swept
        QVERIFY_THROWS_EXCEPTION(RunStoreError, store->setNote(id, "x"));
    });
    // Beside a WAL store SQLite keeps the -wal and -shm (every connection closes without
    // checkpointing, run_db.cpp); where they are gone, a reader makes them again (empty) as
    // any reader of a WAL database must, and leaves the store itself alone.
    sqlOne(storePath(), "PRAGMA wal_checkpoint(TRUNCATE)");
    std::filesystem::remove(wal);
    std::filesystem::remove(shm);
    checkUnchanged([&] {
        QCOMPARE(RunStore::openReadOnly(storePath())->writerOf("/runs/a.safetensors"),
                 std::optional<std::int64_t>(id));
    });
    QCOMPARE(std::filesystem::exists(wal) ? std::filesystem::file_size(wal) : 0, std::uintmax_t{0});

    // Another connection in the middle of a write: the reader sees the store before it.
    {
        detail::Connection writer(storePath(), 0);
        const std::string held = "BEGIN IMMEDIATE; INSERT INTO tags(run, tag) VALUES(" +
                                 std::to_string(id) + ", 'held')";
        writer.exec(held.c_str(), "write");
        const auto start = SteadyClock::now();
        std::optional<RunStore> store = RunStore::openReadOnly(storePath());
        QVERIFY(store.has_value());
        QVERIFY(store->get(id)->tags.empty());
        QCOMPARE(store->count({}), std::int64_t{1});
        QVERIFY(seconds(SteadyClock::now() - start) < 1.0);
        writer.exec("ROLLBACK", "rollback");
    }
    // The rollback journal's exclusive lock stops readers: a short wait, then an error (Open
    // Recent names no run), not the interactive reader's 5 s.
    sqlOne(storePath(), "PRAGMA journal_mode = DELETE");
    {
        detail::Connection writer(storePath(), 0);
        writer.exec("BEGIN EXCLUSIVE", "lock");
        const auto start = SteadyClock::now();
        try {
            (void)RunStore::openReadOnly(storePath(), 100);
            QFAIL("read under an exclusive lock");
        } catch (const RunStoreError& error) {
            QVERIFY2(detail::isBusyCode(error.sqliteCode()), error.what());
        }
        QVERIFY(seconds(SteadyClock::now() - start) < 1.0);
        writer.exec("ROLLBACK", "rollback");
    }
    // Still unswept: nothing above wrote.
    QCOMPARE(RunStore::openReadOnly(storePath())->get(id)->state, RunState::Running);
}

void TstRunStore::parsesFiltersAndNamesTheBadPart() {
    const RunQuery query =
        parseFilter("figure.test_nll<0.3  preset=spirals tag~sweep hello note~\"two words\"");
    QCOMPARE(query.filters.size(), std::size_t{4});
    QCOMPARE(query.filters[0], (RunFilter{"figure.test_nll", FilterOp::Less, "0.3"}));
    QCOMPARE(query.filters[1], (RunFilter{"preset", FilterOp::Equal, "spirals"}));
    QCOMPARE(query.filters[2], (RunFilter{"tag", FilterOp::Contains, "sweep"}));
    QCOMPARE(query.filters[3], (RunFilter{"note", FilterOp::Contains, "two words"}));
    QCOMPARE(query.text, std::string("hello"));
    QCOMPARE(parseFilter("members>=4 wall<=2 seed!=3").filters[2].op, FilterOp::NotEqual);
    QCOMPARE(parseSort("-figure.test_nll"), (RunSort{"figure.test_nll", true}));
    QCOMPARE(parseSort("wall:desc"), (RunSort{"wall", true}));
    QCOMPARE(parseSort("started"), (RunSort{"started", false}));
    QCOMPARE(parseSort("+config.optimizer.lr"), (RunSort{"config.optimizer.lr", false}));

    // Each bad term is named in the message, with why.
    const std::vector<std::pair<std::string, std::string>> bad{
        {"preset=spirals colour=red", "colour=red"},
        {"figure.test_nll<low", "'low' is not a number"},
        {"state=runing", "unknown state 'runing'"},
        {"members~4", "'~' (contains) applies to text"},
        {"tag<x", "tag takes =, != or ~"},
        {"=spirals", "no field before '='"},
        {"preset!spirals", "'!' must be followed by '='"},
        {"note~\"open", "not closed"},
        {"figure.=1", "unknown field 'figure.'"},
        {"started>last-week", "not a number or a date"},
    };
    for (const auto& [text, expected] : bad) {
        try {
            parseFilter(text);
            QFAIL(("accepted: " + text).c_str());
        } catch (const ensemble::ConfigError& error) {
            const std::string what = error.what();
            QVERIFY2(what.find(expected) != std::string::npos, (text + " -> " + what).c_str());
        }
    }
    QVERIFY_THROWS_EXCEPTION(ensemble::ConfigError, parseSort("tag"));
    QVERIFY_THROWS_EXCEPTION(ensemble::ConfigError, parseSort("colour"));
    // A query built by hand is checked as well when it runs.
    RunStore store = RunStore::open(storePath());
    RunQuery handMade;
    handMade.filters.push_back({"wall", FilterOp::Less, "soon"});
    QVERIFY_THROWS_EXCEPTION(ensemble::ConfigError, store.list(handMade));
}

void TstRunStore::editsNotesTagsAndRemoves() {
    RunStore store = RunStore::open(storePath());
    RunEntry entry = minimalEntry("train");
    entry.state = RunState::Finished;
    entry.started = 1.7e9;
    entry.files = {{"/tmp/x.safetensors", "export"}, {"/tmp/x.ckpt", "checkpoint"}};
    entry.figures = {{"test_nll", 0.5}};
    const std::int64_t id = store.insert({entry, entry}).front();
    QVERIFY(store.setNote(id, "Looks good"));
    QVERIFY(store.addTag(id, "keep"));
    QVERIFY(store.addTag(id, "keep"));  // twice: still one
    QVERIFY(store.addTag(id, "zz"));
    QVERIFY(store.removeTag(id, "zz"));
    QCOMPARE(store.get(id)->note, std::string("Looks good"));
    QCOMPARE(store.get(id)->tags, std::vector<std::string>{"keep"});
    RunQuery text;
    text.text = "looks";
    QCOMPARE(store.count(text), std::int64_t{1});
    text.text = "KEEP";
    QCOMPARE(store.count(text), std::int64_t{1});
    QVERIFY(!store.setNote(9999, "x"));
    QVERIFY(!store.addTag(9999, "x"));
    QVERIFY(!store.removeTag(9999, "x"));
    QVERIFY(!store.remove(9999).has_value());
    const auto files = store.remove(id);
    QVERIFY(files.has_value());
    QCOMPARE(*files, entry.files);
    QVERIFY(!store.get(id).has_value());
    QCOMPARE(store.count({}), std::int64_t{1});
    // Nothing of it is left in the side tables; the other entry keeps its own.
    QCOMPARE(sqlOne(storePath(),
                    ("SELECT (SELECT count(*) FROM figures WHERE run = " + std::to_string(id) +
                     ") + (SELECT count(*) FROM config_values WHERE run = " + std::to_string(id) +
                     ") + (SELECT count(*) FROM files WHERE run = " + std::to_string(id) + ")")
                        .c_str()),
             std::string("0"));
    QCOMPARE(store.count(parseFilter("config.ensemble.members=4")), std::int64_t{1});
}

void TstRunStore::threadsRecordAtOnce() {
    constexpr int kThreads = 8;
    constexpr int kRunsEach = 25;
    std::atomic<int> warned{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
        threads.emplace_back([&, t] {
            for (int i = 0; i < kRunsEach; ++i) {
                RunEntry entry = minimalEntry("train");
                entry.tags = {"thread-" + std::to_string(t)};
                RunRecorder recorder(storePath(), entry, [&](const std::string&) { ++warned; });
                recorder.setCurves({{"step", i}});
                recorder.finish(RunState::Finished, {{"i", double(i)}});
            }
        });
    }
    for (auto& thread : threads) {
        thread.join();
    }
    QCOMPARE(warned.load(), 0);
    RunStore store = RunStore::open(storePath());
    QCOMPARE(store.count({}), std::int64_t{kThreads * kRunsEach});
    QCOMPARE(store.count(parseFilter("state=finished")), std::int64_t{kThreads * kRunsEach});
    for (int t = 0; t < kThreads; ++t) {
        QCOMPARE(store.count(parseFilter("tag=thread-" + std::to_string(t))),
                 std::int64_t{kRunsEach});
    }
    QCOMPARE(store.count(parseFilter("figure.i=24")), std::int64_t{kThreads});
}

void TstRunStore::processesRecordAtOnce() {
    // Two processes (two CLI runs) and this one (the app) record at the same time.
    constexpr int kRunsEach = 30;
    RunStore::open(storePath());
    const pid_t a = spawnRunsChild({"writer", storePath().string(), "30", "proc-a"});
    const pid_t b = spawnRunsChild({"writer", storePath().string(), "30", "proc-b"});
    Warnings warnings;
    for (int i = 0; i < kRunsEach; ++i) {
        RunEntry entry = minimalEntry("app-train");
        entry.tags = {"proc-self"};
        RunRecorder recorder(storePath(), entry, warnings.sink());
        recorder.setCurves({{"step", i}});
        recorder.finish(RunState::Finished);
    }
    QCOMPARE(waitExit(a), 0);
    QCOMPARE(waitExit(b), 0);
    QCOMPARE(warnings.count(), std::size_t{0});
    RunStore store = RunStore::open(storePath());
    for (const char* tag : {"proc-a", "proc-b", "proc-self"}) {
        QCOMPARE(store.count(parseFilter(std::string("state=finished tag=") + tag)),
                 std::int64_t{kRunsEach});
    }
    QCOMPARE(sqlOne(storePath(), "PRAGMA integrity_check"), std::string("ok"));
}

void TstRunStore::killedRecorderLeavesAnInterruptedEntry() {
    RunStore::open(storePath());
    const pid_t child = spawnRunsChild({"endless", storePath().string()});
    // Wait until the child's entry is there with a few curve updates written.
    std::optional<RunEntry> seen;
    const auto until = SteadyClock::now() + 30s;
    while (SteadyClock::now() < until) {
        RunStore store = RunStore::open(storePath());
        RunQuery query = parseFilter("kind=endless");
        query.full = true;
        const auto entries = store.list(query);
        if (!entries.empty() && entries[0].curves.is_object() &&
            entries[0].curves.value("step", 0) >= 3) {
            seen = entries[0];
            break;
        }
        std::this_thread::sleep_for(50ms);
    }
    QVERIFY2(seen.has_value(), "the child's entry never appeared with curves");
    // Alive: an open leaves it running.
    QCOMPARE(seen->state, RunState::Running);
    QCOMPARE(seen->pid, std::int64_t{child});
    QVERIFY(kill(child, SIGKILL) == 0);
    QCOMPARE(waitExit(child), 128 + SIGKILL);

    RunStore store = RunStore::open(storePath());
    const auto after = store.get(seen->id);
    QVERIFY(after.has_value());
    QCOMPARE(after->state, RunState::Interrupted);
    QCOMPARE(after->ended, after->updated);
    QVERIFY(after->updated >= seen->updated);
    // At most the updates after the last write are lost: the curves are there.
    QVERIFY(after->curves.value("step", 0) >= seen->curves.value("step", 0));
    QCOMPARE(store.sweepInterrupted(), 0);
    QCOMPARE(sqlOne(storePath(), "PRAGMA integrity_check"), std::string("ok"));
}

void TstRunStore::lockedStoreWarnsOnceAndReturns() {
    RunStore::open(storePath());
    detail::Connection holder(storePath(), 0);
    holder.exec("BEGIN EXCLUSIVE", "lock");
    Warnings warnings;
    const auto start = SteadyClock::now();
    double construct = 0;
    double calls = 0;
    {
        RunRecorder recorder(storePath(), minimalEntry("locked"), warnings.sink());
        construct = seconds(SteadyClock::now() - start);
        const auto callsStart = SteadyClock::now();
        for (int i = 0; i < 100; ++i) {
            recorder.setCurves({{"step", i}});
        }
        recorder.finish(RunState::Finished, {{"test_nll", 1.0}});
        calls = seconds(SteadyClock::now() - callsStart);
        std::this_thread::sleep_for(300ms);
    }
    const double total = seconds(SteadyClock::now() - start);
    holder.exec("ROLLBACK", "unlock");
    QVERIFY2(construct < 0.05, std::to_string(construct).c_str());
    QVERIFY2(calls < 0.05, std::to_string(calls).c_str());
    // The destructor's bounded wait (2 s) and no more.
    QVERIFY2(total < 3.5, std::to_string(total).c_str());
    QCOMPARE(warnings.count(), std::size_t{1});
    QVERIFY2(warnings.first().find("locked") != std::string::npos, warnings.first().c_str());
    QCOMPARE(RunStore::open(storePath()).count(parseFilter("kind=locked")), std::int64_t{0});
}

void TstRunStore::shortLockIsWaitedOut() {
    // A lock shorter than the warning's 5 s: waited out in the background, no warning.
    RunStore::open(storePath());
    Warnings warnings;
    {
        detail::Connection holder(storePath(), 0);
        holder.exec("BEGIN EXCLUSIVE", "lock");
        RunRecorder recorder(storePath(), minimalEntry("waited"), warnings.sink());
        recorder.setCurves({{"step", 1}});
        std::this_thread::sleep_for(1s);
        QCOMPARE(recorder.id(0ms), std::int64_t{0});
        holder.exec("ROLLBACK", "unlock");
        recorder.finish(RunState::Finished);
        QVERIFY(recorder.flush(5000ms));
    }
    QCOMPARE(warnings.count(), std::size_t{0});
    RunQuery query = parseFilter("kind=waited state=finished");
    query.full = true;
    const auto entries = RunStore::open(storePath()).list(query);
    QCOMPARE(entries.size(), std::size_t{1});
    QCOMPARE(entries[0].curves, (nlohmann::json{{"step", 1}}));
}

void TstRunStore::readOnlyStoreWarnsOnce() {
    {
        RunStore store = RunStore::open(storePath());
        store.insert({minimalEntry("before")});
    }
    // Back to the rollback journal so that the file alone is the store (a read-only WAL
    // store needs its -shm file).
    sqlOne(storePath(), "PRAGMA journal_mode = DELETE");
    std::filesystem::path path = storePath();
    const bool root = geteuid() == 0;
    if (root) {
        // chmod does not stop root: SQLite's own read-only open instead.
        path = "file:" + storePath().string() + "?mode=ro";
    } else {
        QVERIFY(chmod(storePath().c_str(), 0444) == 0);
        QVERIFY(chmod(storePath().parent_path().c_str(), 0555) == 0);
    }
    const auto restore = qScopeGuard([&] {
        chmod(storePath().parent_path().c_str(), 0755);
        chmod(storePath().c_str(), 0644);
    });
    Warnings warnings;
    const auto start = SteadyClock::now();
    {
        RunRecorder recorder(path, minimalEntry("after"), warnings.sink());
        recorder.setCurves({{"step", 1}});
        recorder.finish(RunState::Finished);
        QVERIFY(!recorder.flush(3000ms));
        QVERIFY(recorder.quiet());
        recorder.setCurves({{"step", 2}});  // quiet: nothing more
    }
    QVERIFY(seconds(SteadyClock::now() - start) < 3.5);
    QCOMPARE(warnings.count(), std::size_t{1});
    QVERIFY2(warnings.first().find(storePath().string()) != std::string::npos,
             warnings.first().c_str());
    // Readers still read it; edits say why they fail.
    RunStore store = RunStore::open(path);
    QVERIFY(store.readOnly());
    QCOMPARE(store.count({}), std::int64_t{1});
    QVERIFY_THROWS_EXCEPTION(RunStoreError, store.setNote(1, "x"));
}

void TstRunStore::corruptStoreWarnsOnceAndOpenNamesIt() {
    std::filesystem::create_directories(storePath().parent_path());
    {
        std::ofstream garbage(storePath(), std::ios::binary);
        std::mt19937 rng(7);
        for (int i = 0; i < 65536; ++i) {
            garbage.put(static_cast<char>(rng()));
        }
    }
    try {
        RunStore::open(storePath());
        QFAIL("a corrupt store opened");
    } catch (const RunStoreError& error) {
        const std::string what = error.what();
        QVERIFY2(what.find(storePath().string()) != std::string::npos, what.c_str());
        QVERIFY2(what.find("not a database") != std::string::npos, what.c_str());
    }
    Warnings warnings;
    const auto start = SteadyClock::now();
    {
        RunRecorder recorder(storePath(), minimalEntry("train"), warnings.sink());
        recorder.setCurves({{"step", 1}});
        recorder.finish(RunState::Finished);
        QVERIFY(!recorder.flush(3000ms));
        QVERIFY(recorder.quiet());
    }
    QVERIFY(seconds(SteadyClock::now() - start) < 3.5);
    QCOMPARE(warnings.count(), std::size_t{1});
    QVERIFY2(warnings.first().find("not a database") != std::string::npos,
             warnings.first().c_str());
}

// The child processes: `writer PATH N TAG` records N finished runs tagged TAG; `endless PATH`
// records one run whose curves change every 20 ms until it is killed.
static int runsChildMain(int argc, char** argv) {
    const std::string mode = argc > 2 ? argv[2] : "";
    const std::filesystem::path path = argc > 3 ? argv[3] : "";
    int warnings = 0;
    const RunWarningSink count = [&](const std::string& message) {
        std::fprintf(stderr, "child warning: %s\n", message.c_str());
        ++warnings;
    };
    if (mode == "writer" && argc > 5) {
        for (int i = 0; i < std::atoi(argv[4]); ++i) {
            RunEntry entry = minimalEntry("train");
            entry.tags = {argv[5]};
            RunRecorder recorder(path, entry, count);
            recorder.setCurves({{"step", i}});
            recorder.finish(RunState::Finished, {{"i", double(i)}});
        }
        return warnings == 0 ? 0 : 1;
    }
    if (mode == "endless") {
        RunRecorder recorder(path, minimalEntry("endless"), count);
        for (int step = 0;; ++step) {
            recorder.setCurves({{"step", step}});
            std::this_thread::sleep_for(20ms);
        }
    }
    return 2;
}

int main(int argc, char** argv) {
    if (argc > 1 && std::string(argv[1]) == "--runs-child") {
        return runsChildMain(argc, argv);
    }
    QCoreApplication app(argc, argv);
    TstRunStore test;
    return QTest::qExec(&test, argc, argv);
}

#include "tst_run_store.moc"
