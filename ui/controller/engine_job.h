#pragma once

// The window's one way to run a job on the engine thread: a job is a function
// (report progress, const std::atomic<bool>& cancel) -> Outcome, the shape every engine
// computation already has (compareMethods, computeShiftReport, a Trainer round). EngineJob
// queues it to an object on the engine thread, so it runs between training chunks, and brings
// back to the GUI thread its progress (coalesced: only the latest report waits, however fast the
// engine reports) and then its outcome, once. Each start has a job id; a start replaces the job
// under way, whose progress and outcome are then never delivered, so the GUI sees exactly one
// end for the job it asked for last. Cancel ends the job early and still delivers its outcome
// (the job says in it what it kept); drop() ends it and delivers nothing: the window's rule for
// a replaced run (EngineController::endJobs) tells the views itself.

#include <QMetaObject>
#include <QObject>

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <utility>

#include "controller/progress_mailbox.h"
#include "controller/thread_handoff.h"

namespace ensemble::ui {

template <typename Progress, typename Outcome>
class EngineJob {
  public:
    using ReportProgress = std::function<void(const Progress&)>;
    using Work = std::function<Outcome(const ReportProgress&, const std::atomic<bool>& cancel)>;

    // `engine`: an object on the engine thread the work is queued to; `gui`: an object on the
    // GUI thread that owns this job (the handlers run in its thread, and queued deliveries go
    // with it when it is destroyed). `finished` learns whether Cancel was asked for before the
    // outcome arrived: a job that cannot stop half-way (reading a file) may have finished
    // anyway, and the person who cancelled expects nothing new.
    EngineJob(QObject* engine, QObject* gui, std::function<void(const Progress&)> progressed,
              std::function<void(Outcome, bool cancelled)> finished)
        : m_engine(engine),
          m_gui(gui),
          m_progressed(std::move(progressed)),
          m_finished(std::move(finished)) {}
    ~EngineJob() { drop(); }

    EngineJob(const EngineJob&) = delete;
    EngineJob& operator=(const EngineJob&) = delete;

    // GUI thread: queues `work`; the job under way (if any) is dropped. Returns the job's id.
    uint64_t start(Work work) {
        drop();
        auto run = std::make_shared<Run>();
        run->id = ++m_lastId;
        m_run = run;
        QMetaObject::invokeMethod(
            m_engine, announced([this, run, work = std::move(work)] { execute(run, work); }),
            Qt::QueuedConnection);
        return run->id;
    }

    // GUI thread: the job under way stops at its next check; its outcome still comes.
    void cancel() {
        if (m_run) {
            m_run->cancel.store(true, std::memory_order_release);
        }
    }

    // GUI thread: the job under way stops at its next check and is forgotten (no progress,
    // no outcome). Nothing when none runs.
    void drop() {
        if (m_run) {
            m_run->cancel.store(true, std::memory_order_release);
            m_run.reset();
        }
    }

    // A job was started and its outcome has not been delivered yet.
    bool isRunning() const { return m_run != nullptr; }
    // The id of the job under way (0 when none).
    uint64_t currentId() const { return m_run ? m_run->id : 0; }

  private:
    struct Run {
        uint64_t id = 0;
        std::atomic<bool> cancel{false};
        ProgressMailbox<Progress> progress;
    };

    // Engine thread. A job dropped while queued still runs, but sees its cancel at once (every
    // job checks it before its first piece of work) and nobody receives its outcome.
    void execute(const std::shared_ptr<Run>& run, const Work& work) {
        const ReportProgress report = [this, run](const Progress& p) {
            if (run->progress.put(p)) {
                QMetaObject::invokeMethod(m_gui, announced([this, run] { deliverProgress(run); }),
                                          Qt::QueuedConnection);
            }
        };
        Outcome outcome = work(report, run->cancel);
        // Queued after every progress delivery this job posted: the outcome comes last.
        QMetaObject::invokeMethod(m_gui,
                                  announced([this, run, outcome = std::move(outcome)]() mutable {
                                      deliverOutcome(run, std::move(outcome));
                                  }),
                                  Qt::QueuedConnection);
    }

    // GUI thread.
    void deliverProgress(const std::shared_ptr<Run>& run) {
        const std::optional<Progress> p = run->progress.take();
        if (m_run == run && p && m_progressed) {
            m_progressed(*p);
        }
    }

    void deliverOutcome(const std::shared_ptr<Run>& run, Outcome outcome) {
        if (m_run != run) {
            return;  // replaced or dropped: its end is nobody's
        }
        m_run.reset();
        if (m_finished) {
            m_finished(std::move(outcome), run->cancel.load(std::memory_order_acquire));
        }
    }

    QObject* m_engine;
    QObject* m_gui;
    std::function<void(const Progress&)> m_progressed;
    std::function<void(Outcome, bool)> m_finished;
    std::shared_ptr<Run> m_run;  // GUI thread only
    uint64_t m_lastId = 0;
};

}  // namespace ensemble::ui
