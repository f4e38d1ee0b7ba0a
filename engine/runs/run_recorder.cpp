// RunRecorder: one run's entry, written by a thread of its own so that the store never costs
// the run (run_store.h says what it promises).

#include <algorithm>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <exception>
#include <mutex>
#include <thread>

#include "runs/run_db.h"

namespace ensemble::runs {

namespace detail {

// Changes queued since the last write; merging keeps memory bounded however long a lock lasts
// (the latest curves win, figures merge by name).
struct RecorderChanges {
    std::optional<nlohmann::json> curves;
    std::map<std::string, double> figures;
    std::vector<RunFile> files;
    std::vector<std::string> tags;
    std::optional<std::string> backend;
    std::optional<std::string> fingerprint;
    std::optional<std::string> commandLine;
    std::optional<std::pair<std::int64_t, std::string>> parent;
    std::optional<RunState> state;
    double ended = 0.0;
    double wall = 0.0;

    bool empty() const { return !curves && onlyCurves(); }
    bool onlyCurves() const {
        return figures.empty() && files.empty() && tags.empty() && !backend && !fingerprint &&
               !commandLine && !parent && !state;
    }
    // Adds `newer` after these changes.
    void append(RecorderChanges&& newer) {
        if (newer.curves) {
            curves = std::move(newer.curves);
        }
        for (const auto& [name, value] : newer.figures) {
            figures[name] = value;
        }
        files.insert(files.end(), newer.files.begin(), newer.files.end());
        tags.insert(tags.end(), newer.tags.begin(), newer.tags.end());
        for (auto [mine, theirs] :
             {std::pair{&backend, &newer.backend}, std::pair{&fingerprint, &newer.fingerprint},
              std::pair{&commandLine, &newer.commandLine}}) {
            if (*theirs) {
                *mine = std::move(*theirs);
            }
        }
        if (newer.parent) {
            parent = std::move(newer.parent);
        }
        if (newer.state) {
            state = newer.state;
            ended = newer.ended;
            wall = newer.wall;
        }
    }
    void applyTo(RunEntry& entry) const {
        if (curves) {
            entry.curves = *curves;
        }
        for (const auto& [name, value] : figures) {
            entry.figures[name] = value;
        }
        entry.files.insert(entry.files.end(), files.begin(), files.end());
        entry.tags.insert(entry.tags.end(), tags.begin(), tags.end());
        std::sort(entry.tags.begin(), entry.tags.end());
        entry.tags.erase(std::unique(entry.tags.begin(), entry.tags.end()), entry.tags.end());
        entry.backend = backend.value_or(entry.backend);
        entry.dataFingerprint = fingerprint.value_or(entry.dataFingerprint);
        entry.commandLine = commandLine.value_or(entry.commandLine);
        if (parent) {
            entry.parentId = parent->first;
            entry.relation = parent->second;
        }
        if (state) {
            entry.state = *state;
            entry.ended = ended;
            entry.wallSeconds = wall;
        }
    }
};

}  // namespace detail

using detail::RecorderChanges;

namespace {

using RecorderClock = std::chrono::steady_clock;
using namespace std::chrono_literals;

// SQLite's own wait for the lock: short, the recorder's thread retries with backoff instead.
constexpr int kRecorderBusyMs = 50;
constexpr auto kRecorderBackoffFirst = 50ms;
constexpr auto kRecorderBackoffMax = 1000ms;
// A lock lasting this long warns (once); shorter ones are other writers' ordinary turns.
constexpr auto kRecorderLockWarnAfter = 5s;
// Curves change every evaluation; writing them more often than this buys nothing.
constexpr auto kRecorderCurvesEvery = 250ms;
// The destructor's bounded wait for the last changes.
constexpr auto kRecorderFinalWait = 2s;

// Writes `changes` to the recorded entry `id` in one transaction; false when the entry is gone
// (someone removed it while it ran).
bool writeRecorderChanges(const detail::Connection& db, std::int64_t id,
                          const RecorderChanges& changes) {
    detail::WriteTransaction transaction(db);
    detail::Statement touch(db, "UPDATE runs SET updated = ?2 WHERE id = ?1");
    touch.bind(1, id).bind(2, detail::unixNow()).run();
    if (sqlite3_changes(db.handle()) == 0) {
        return false;
    }
    const auto setText = [&](const char* column, const std::optional<std::string>& value) {
        if (value) {
            detail::Statement update(
                db, std::string("UPDATE runs SET ") + column + " = ?2 WHERE id = ?1");
            update.bind(1, id).bind(2, *value).run();
        }
    };
    setText("backend", changes.backend);
    setText("fingerprint", changes.fingerprint);
    setText("command", changes.commandLine);
    if (changes.parent) {
        detail::Statement update(db, "UPDATE runs SET parent = ?2, relation = ?3 WHERE id = ?1");
        update.bind(1, id).bind(2, changes.parent->first).bind(3, changes.parent->second).run();
    }
    if (changes.state) {
        detail::Statement update(db,
                                 "UPDATE runs SET state = ?2, ended = ?3, wall = ?4 WHERE id = ?1");
        update.bind(1, id)
            .bind(2, std::string(toString(*changes.state)))
            .bind(3, changes.ended)
            .bind(4, changes.wall)
            .run();
    }
    if (changes.curves) {
        detail::Statement curves(db, "INSERT OR REPLACE INTO run_curves(run, json) VALUES(?1, ?2)");
        curves.bind(1, id).bind(2, changes.curves->dump()).run();
    }
    if (!changes.figures.empty()) {
        detail::Statement figure(
            db, "INSERT OR REPLACE INTO figures(run, name, value) VALUES(?1, ?2, ?3)");
        for (const auto& [name, value] : changes.figures) {
            if (!std::isnan(value)) {  // SQLite keeps no NaN
                figure.bind(1, id).bind(2, name).bind(3, value).run();
            }
        }
    }
    if (!changes.tags.empty()) {
        detail::Statement tag(db, "INSERT OR IGNORE INTO tags(run, tag) VALUES(?1, ?2)");
        for (const auto& name : changes.tags) {
            tag.bind(1, id).bind(2, name).run();
        }
    }
    if (!changes.files.empty()) {
        detail::Statement file(db,
                               "INSERT INTO files(run, seq, path, role) VALUES(?1, (SELECT "
                               "COALESCE(MAX(seq) + 1, 0) FROM files WHERE run = ?1), ?2, ?3)");
        for (const RunFile& written : changes.files) {
            file.bind(1, id).bind(2, written.path).bind(3, written.role).run();
        }
    }
    transaction.commit();
    return true;
}

void warnOnStderr(const std::string& message) {
    std::fprintf(stderr, "warning: %s\n", message.c_str());
}

}  // namespace

struct RunRecorder::Shared {
    std::mutex mutex;
    std::condition_variable wake;      // the recorder's thread waits here
    std::condition_variable progress;  // callers wait here (id, flush, the destructor)
    std::filesystem::path path;
    RunWarningSink warn;
    RunEntry entry;  // what the first write inserts
    RecorderChanges pending;
    RecorderClock::time_point startedSteady;
    bool inserted = false;
    std::int64_t id = 0;
    bool writing = false;
    bool finishCalled = false;
    int flushWaiters = 0;
    bool stop = false;
    RecorderClock::time_point deadline;
    bool quiet = false;
    bool warned = false;
    bool gone = false;
    bool threadDone = false;

    // The one warning: given outside the lock (the sink may take its time).
    void warnOnce(std::unique_lock<std::mutex>& lock, const std::string& message) {
        if (warned) {
            return;
        }
        warned = true;
        const RunWarningSink sink = warn;
        lock.unlock();
        sink(message);
        lock.lock();
    }
    bool allWritten() const { return inserted && pending.empty() && !writing; }
};

namespace {

void recorderThreadMain(const std::shared_ptr<RunRecorder::Shared>& shared);

}  // namespace

RunRecorder::RunRecorder(std::filesystem::path storePath, RunEntry entry, RunWarningSink warn)
    : m_path(std::move(storePath)), m_uncaughtAtStart(std::uncaught_exceptions()) {
    if (m_path.empty()) {
        return;
    }
    auto shared = std::make_shared<Shared>();
    shared->path = m_path;
    shared->warn = warn ? std::move(warn) : RunWarningSink(warnOnStderr);
    fillFromConfig(entry);
    if (entry.started <= 0.0) {
        entry.started = detail::unixNow();
    }
    entry.id = 0;
    entry.state = RunState::Running;
    entry.ended = 0.0;
    entry.wallSeconds = 0.0;
    // The recorder is the recording process: this is how a later open tells it is gone.
    const detail::ProcessIdentity& self = detail::currentProcess();
    entry.host = self.host;
    entry.pid = self.pid;
    entry.pidStart = self.pidStart;
    entry.bootId = self.bootId;
    shared->entry = std::move(entry);
    shared->startedSteady = RecorderClock::now();
    try {
        std::thread(recorderThreadMain, shared).detach();
    } catch (const std::exception& error) {
        shared->warn("runs store " + m_path.string() + ": cannot start recording (" + error.what() +
                     "); this run is not recorded");
        return;
    }
    m_shared = std::move(shared);
}

RunRecorder::~RunRecorder() {
    if (!m_shared) {
        return;
    }
    Shared& s = *m_shared;
    std::unique_lock lock(s.mutex);
    if (!s.finishCalled) {
        s.finishCalled = true;
        RecorderChanges end;
        // Unwinding past the recorder: the run ended by an error; otherwise it was let go of.
        end.state =
            std::uncaught_exceptions() > m_uncaughtAtStart ? RunState::Failed : RunState::Cancelled;
        end.ended = detail::unixNow();
        end.wall = std::chrono::duration<double>(RecorderClock::now() - s.startedSteady).count();
        s.pending.append(std::move(end));
    }
    s.stop = true;
    s.deadline = RecorderClock::now() + kRecorderFinalWait;
    s.wake.notify_all();
    // A little past the deadline: the thread gives up there, after at most one busy wait.
    s.progress.wait_until(lock, s.deadline + 4 * std::chrono::milliseconds(kRecorderBusyMs),
                          [&] { return s.threadDone; });
    if (!s.quiet && !s.gone && !s.allWritten()) {
        s.warnOnce(lock, "runs store " + s.path.string() +
                             ": locked by another program until this run ended; its entry " +
                             (s.inserted ? "lacks its last changes" : "was not recorded"));
    }
}

void RunRecorder::setCurves(nlohmann::json curves) {
    if (!m_shared) {
        return;
    }
    RecorderChanges change;
    change.curves = std::move(curves);
    std::lock_guard lock(m_shared->mutex);
    if (!m_shared->quiet) {
        m_shared->pending.append(std::move(change));
        m_shared->wake.notify_one();
    }
}

namespace {

template <typename Fill>
void queueRecorderChange(const std::shared_ptr<RunRecorder::Shared>& shared, Fill fill) {
    if (!shared) {
        return;
    }
    RecorderChanges change;
    fill(change);
    std::lock_guard lock(shared->mutex);
    if (!shared->quiet) {
        shared->pending.append(std::move(change));
        shared->wake.notify_one();
    }
}

}  // namespace

void RunRecorder::setFigures(const std::map<std::string, double>& figures) {
    queueRecorderChange(m_shared, [&](RecorderChanges& c) { c.figures = figures; });
}

void RunRecorder::addFile(std::string path, std::string role) {
    queueRecorderChange(m_shared, [&](RecorderChanges& c) {
        c.files.push_back({std::move(path), std::move(role)});
    });
}

void RunRecorder::addTag(std::string tag) {
    queueRecorderChange(m_shared, [&](RecorderChanges& c) { c.tags.push_back(std::move(tag)); });
}

void RunRecorder::setBackend(std::string backend) {
    queueRecorderChange(m_shared, [&](RecorderChanges& c) { c.backend = std::move(backend); });
}

void RunRecorder::setDataFingerprint(std::string fingerprint) {
    queueRecorderChange(m_shared,
                        [&](RecorderChanges& c) { c.fingerprint = std::move(fingerprint); });
}

void RunRecorder::setParent(std::int64_t parentId, std::string relation) {
    queueRecorderChange(m_shared, [&](RecorderChanges& c) {
        c.parent = std::pair{parentId, std::move(relation)};
    });
}

void RunRecorder::setCommandLine(std::string commandLine) {
    queueRecorderChange(m_shared,
                        [&](RecorderChanges& c) { c.commandLine = std::move(commandLine); });
}

void RunRecorder::finish(RunState state, const std::map<std::string, double>& figures) {
    if (!m_shared || state == RunState::Running) {
        return;
    }
    {
        std::lock_guard lock(m_shared->mutex);
        if (m_shared->finishCalled) {
            return;
        }
        m_shared->finishCalled = true;
    }
    const auto wall = RecorderClock::now() - m_shared->startedSteady;
    queueRecorderChange(m_shared, [&](RecorderChanges& c) {
        c.figures = figures;
        c.state = state;
        c.ended = detail::unixNow();
        c.wall = std::chrono::duration<double>(wall).count();
    });
}

std::int64_t RunRecorder::id(std::chrono::milliseconds wait) const {
    if (!m_shared) {
        return 0;
    }
    std::unique_lock lock(m_shared->mutex);
    m_shared->progress.wait_for(
        lock, wait, [&] { return m_shared->inserted || m_shared->quiet || m_shared->threadDone; });
    return m_shared->inserted ? m_shared->id : 0;
}

bool RunRecorder::flush(std::chrono::milliseconds wait) const {
    if (!m_shared) {
        return true;
    }
    Shared& s = *m_shared;
    std::unique_lock lock(s.mutex);
    ++s.flushWaiters;  // the curves' pacing gives way to a flush
    s.wake.notify_one();
    s.progress.wait_for(lock, wait,
                        [&] { return s.allWritten() || s.quiet || s.gone || s.threadDone; });
    --s.flushWaiters;
    return s.allWritten() || s.gone;
}

bool RunRecorder::quiet() const {
    if (!m_shared) {
        return false;
    }
    std::lock_guard lock(m_shared->mutex);
    return m_shared->quiet;
}

const std::filesystem::path& RunRecorder::storePath() const {
    return m_path;
}

namespace {

void recorderThreadMain(const std::shared_ptr<RunRecorder::Shared>& shared) {
    RunRecorder::Shared& s = *shared;
    detail::Connection db;
    bool prepared = false;
    auto backoff = std::chrono::duration_cast<RecorderClock::duration>(kRecorderBackoffFirst);
    std::optional<RecorderClock::time_point> busySince;
    RecorderClock::time_point retryAt{};
    RecorderClock::time_point lastCurves{};

    std::unique_lock lock(s.mutex);
    for (;;) {
        auto now = RecorderClock::now();
        if (s.quiet || s.gone || (s.stop && now >= s.deadline)) {
            break;
        }
        if (s.inserted && s.pending.empty()) {
            if (s.stop) {
                break;
            }
            s.wake.wait(lock);
            continue;
        }
        auto ready = retryAt;
        if (s.inserted && s.pending.onlyCurves() && !s.stop && s.flushWaiters == 0) {
            ready = std::max(ready, lastCurves + kRecorderCurvesEvery);
        }
        if (now < ready) {
            s.wake.wait_until(lock, s.stop ? std::min(ready, s.deadline) : ready);
            continue;
        }

        RecorderChanges batch = std::move(s.pending);
        s.pending = RecorderChanges{};
        const bool insert = !s.inserted;
        RunEntry entry = insert ? s.entry : RunEntry{};
        const std::int64_t id = s.id;
        s.writing = true;
        lock.unlock();

        std::optional<RunStoreError> failure;
        std::int64_t newId = 0;
        bool gone = false;
        try {
            if (!prepared) {
                db = detail::Connection(s.path, kRecorderBusyMs);
                detail::prepareStore(db);
                prepared = true;
            }
            if (insert) {
                batch.applyTo(entry);
                entry.updated = detail::unixNow();
                detail::WriteTransaction transaction(db);
                detail::EntryWriter writer(db);
                newId = writer.insert(entry);
                transaction.commit();
            } else {
                gone = !writeRecorderChanges(db, id, batch);
            }
        } catch (const RunStoreError& error) {
            failure = error;
        } catch (const std::exception& error) {
            failure = RunStoreError("runs store " + s.path.string() + ": " + error.what(), 1);
        }

        lock.lock();
        s.writing = false;
        now = RecorderClock::now();
        if (!failure) {
            if (insert) {
                s.inserted = true;
                s.id = newId;
            }
            s.gone = gone;
            if (batch.curves) {
                lastCurves = now;
            }
            busySince.reset();
            backoff = kRecorderBackoffFirst;
            retryAt = {};
        } else if (detail::isBusyCode(failure->sqliteCode())) {
            // Written later, before whatever was queued meanwhile.
            RecorderChanges newer = std::move(s.pending);
            s.pending = std::move(batch);
            s.pending.append(std::move(newer));
            busySince = busySince.value_or(now);
            retryAt = now + backoff;
            backoff =
                std::min(backoff * 2,
                         std::chrono::duration_cast<RecorderClock::duration>(kRecorderBackoffMax));
            if (now - *busySince >= kRecorderLockWarnAfter) {
                s.warnOnce(lock, "runs store " + s.path.string() +
                                     ": locked by another program for more than 5 s; still "
                                     "trying in the background");
            }
        } else {
            s.quiet = true;
            s.pending = RecorderChanges{};
            s.warnOnce(lock, std::string(failure->what()) +
                                 "; this run is not recorded (it "
                                 "trains on)");
        }
        s.progress.notify_all();
    }
    lock.unlock();
    db = detail::Connection();
    lock.lock();
    s.threadDone = true;
    s.progress.notify_all();
}

}  // namespace

}  // namespace ensemble::runs
