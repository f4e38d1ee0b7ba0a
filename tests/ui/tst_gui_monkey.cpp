// A monkey at the window: a seeded random sequence of clicks, keys (the window's
// shortcuts among them), drags, wheel turns, hovers, resizes and file drops, sent to the
// offscreen window through the same window-system entry points a real keyboard and mouse use,
// while a run trains, presets change and files open and save in a temporary folder. Dialogs
// are the monkey's to answer: a file dialog is driven to a path in the temporary folder (never
// given random input: a random click there could delete a file anywhere), every other modal
// dialog and popup gets random input and is then closed by the monkey.
//
// It fails on a crash or a sanitizer report (the seed and the event index are printed first),
// a Qt warning or critical message, a GUI stall over 250 ms, or memory growth over its bounds
// (docs/reliability.md, "The monkey", says how each is measured and why the bounds).
//   ENSEMBLE_MONKEY_SEED=N     the seed (default 1); printed at the start
//   ENSEMBLE_MONKEY_EVENTS=N   how many events (default: about a minute here, fewer sanitized)
//   ENSEMBLE_MONKEY_MINUTES=M  stop sending after M minutes even if events remain (default: 60%
//                              of Qt Test's limit for the function, so a slow machine sends fewer)
//   ENSEMBLE_MONKEY_VERBOSE=1  print every event as it is sent
// Every failure names the seed and the event index: run again with that seed and
// ENSEMBLE_MONKEY_EVENTS=<index + 1> (and VERBOSE) to replay it. Each step draws the same count
// of random numbers whatever the window shows, so the inputs stay in step with the seed; where
// they land can still differ with the engine thread's timing (a dialog that opened sooner).
#include <QAbstractButton>
#include <QAction>
#include <QApplication>
#include <QComboBox>
#include <QDeadlineTimer>
#include <QDialog>
#include <QDialogButtonBox>
#include <QDir>
#include <QDropEvent>
#include <QElapsedTimer>
#include <QFile>
#include <QFileDialog>
#include <QLineEdit>
#include <QMenu>
#include <QMenuBar>
#include <QMessageBox>
#include <QMimeData>
#include <QPointer>
#include <QSettings>
#include <QSpontaneKeyEvent>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QThread>
#include <QTimer>
#include <QToolBar>
#include <QUrl>
#include <QWheelEvent>
#include <QWindow>
#include <QtTest>

#include <execinfo.h>
#include <malloc.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <random>

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#include <sanitizer/common_interface_defs.h>
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#include <sanitizer/common_interface_defs.h>
#endif
#endif

#include "config/config.h"
#include "controller/engine_worker.h"
#include "main_window.h"
#include "panels/experiment_panel.h"
#include "support/gui_test_support.h"
#include "support/test_support.h"
#include "sys/allocator.h"

using ensemble::ui::MainWindow;

namespace {

// A stall: the GUI thread's timer fired this much later than asked, less the time the thread
// waited for a CPU (the monkey's bound; the app's screenshot mode measures lateness the same way).
constexpr qint64 kStallMs = 250;
// Growth allowed between the two moments with no window (after the warm-up and at the end),
// after malloc_trim. Heap in use: Qt's pixmap cache may keep 10 MiB of drawn pixmaps, its glyph,
// icon and file-system caches a few MiB more; a leak of a few KiB per event over the CI run, or
// steady growth over the soak, exceeds it. RSS adds what fragmentation keeps in pages (freed
// blocks between live ones that malloc_trim cannot hand back): measured by the soak and the
// seeds in docs/reliability.md.
constexpr double kHeapGrowthMiB = 24.0;
constexpr double kRssGrowthMiB = 96.0;

// Runs with more train rows than this are not saved as checkpoints or exported by the monkey
// (Monkey::driveFileDialog says why): the generated datasets stay far below, MNIST is above.
constexpr int64_t kHeavyTrainRows = 20'000;

// The seed and the event under way, for the crash and sanitizer handlers (which may not
// allocate or take locks).
std::atomic<uint64_t> g_seed{0};
std::atomic<int64_t> g_event{-1};

// Writes "monkey: seed S, event I" to stderr with async-signal-safe calls only.
void writeReplayLine(const char* what) {
    char line[160];
    std::size_t n = 0;
    auto put = [&](const char* s) {
        while (*s != '\0' && n < sizeof line - 1) {
            line[n++] = *s++;
        }
    };
    auto putNumber = [&](int64_t v) {
        char digits[24];
        int d = 0;
        if (v < 0) {
            put("-");
            v = -v;
        }
        do {
            digits[d++] = static_cast<char>('0' + v % 10);
            v /= 10;
        } while (v > 0 && d < 23);
        while (d > 0 && n < sizeof line - 1) {
            line[n++] = digits[--d];
        }
    };
    put("\nmonkey: ");
    put(what);
    put(" at seed ");
    putNumber(static_cast<int64_t>(g_seed.load()));
    put(", event ");
    putNumber(g_event.load());
    put(" (replay: ENSEMBLE_MONKEY_SEED=<seed> ENSEMBLE_MONKEY_EVENTS=<event + 1>)\n");
    [[maybe_unused]] const ssize_t written = ::write(2, line, n);
}

#ifdef ENSEMBLE_TEST_SANITIZED
void onSanitizerDeath() {
    writeReplayLine("sanitizer report");
}
#else
extern "C" void onFatalSignal(int signal) {
    writeReplayLine("fatal signal");
    // The stack as addresses (binary(+offset): addr2line -e BINARY OFFSET names them);
    // backtrace() was called once at the start, so it allocates nothing here.
    void* frames[64];
    backtrace_symbols_fd(frames, backtrace(frames, 64), 2);
    ::signal(signal, SIG_DFL);
    ::raise(signal);
}
#endif

// Qt's warnings and critical messages while the monkey runs, each with the event it came in.
// Nothing is exempt: a message that some day must be allowed needs a row here with its reason.
struct AllowedMessage {
    const char* contains;
    const char* reason;
};
constexpr std::array<AllowedMessage, 1> kAllowedMessages{{
    // QPlatformWindow's default implementations of window-system requests print "This plugin
    // does not support propagateSizeHints()" (a window's minimum or maximum size set: every
    // layout does), "... raise()" (a dialog shown) and so on; the offscreen plugin the tests run
    // on overrides none of them, xcb and wayland do. Not a message of the app's.
    {"This plugin does not support ", "the offscreen platform plugin's missing window requests"},
}};

QtMessageHandler g_previousHandler = nullptr;
std::mutex g_messagesMutex;
QStringList g_messages;

void collectMessage(QtMsgType type, const QMessageLogContext& context, const QString& text) {
    if (type == QtWarningMsg || type == QtCriticalMsg || type == QtFatalMsg) {
        bool allowed = false;
        for (const AllowedMessage& a : kAllowedMessages) {
            allowed = allowed || text.contains(QLatin1String(a.contains));
        }
        if (allowed) {
            return;  // documented above; not printed either (the soak would print thousands)
        }
        std::lock_guard<std::mutex> lock(g_messagesMutex);
        g_messages << QStringLiteral("event %1: %2").arg(g_event.load()).arg(text);
    }
    if (g_previousHandler != nullptr) {
        g_previousHandler(type, context, text);
    }
}

QStringList takeMessages() {
    std::lock_guard<std::mutex> lock(g_messagesMutex);
    QStringList out;
    out.swap(g_messages);
    return out;
}

int64_t envNumber(const char* name, int64_t fallback) {
    bool ok = false;
    const int64_t v = qEnvironmentVariable(name).toLongLong(&ok);
    return ok && v >= 0 ? v : fallback;
}

// The calling thread's time on a CPU and waiting for one (the kernel's run-queue wait), in
// nanoseconds: the first two fields of /proc/thread-self/schedstat; zeros where the kernel does
// not say.
struct ThreadTimes {
    int64_t onCpu = 0;
    int64_t waiting = 0;
};
ThreadTimes threadTimes() {
    FILE* f = std::fopen("/proc/thread-self/schedstat", "r");
    if (f == nullptr) {
        return {};
    }
    unsigned long long onCpu = 0;
    unsigned long long waiting = 0;
    const int read = std::fscanf(f, "%llu %llu", &onCpu, &waiting);
    std::fclose(f);
    return read == 2 ? ThreadTimes{static_cast<int64_t>(onCpu), static_cast<int64_t>(waiting)}
                     : ThreadTimes{};
}

// The run-queue wait so far of each thread the GUI thread may wait for, by thread id: Qt's own
// (its pool's "Thread (pooled)", to which Qt Gui hands the segments of a large image's scaling
// and conversion; a file dialog's QFileInfoGatherer, which the dialog joins as it closes), not
// the GUI thread itself nor the engine thread and its OpenMP threads ("engine"), which the GUI
// never waits for while a window is open.
std::map<int, int64_t> helperThreadWaits() {
    std::map<int, int64_t> waits;
    const QString self = QString::number(static_cast<long>(gettid()));
    const QDir tasks(QStringLiteral("/proc/self/task"));
    for (const QString& tid : tasks.entryList(QDir::Dirs | QDir::NoDotAndDotDot)) {
        QFile comm(tasks.filePath(tid + QStringLiteral("/comm")));
        if (tid == self || !comm.open(QIODevice::ReadOnly) ||
            comm.readAll().trimmed() == "engine") {
            continue;
        }
        QFile stat(tasks.filePath(tid + QStringLiteral("/schedstat")));
        if (stat.open(QIODevice::ReadOnly)) {
            const QList<QByteArray> fields = stat.readAll().split(' ');
            if (fields.size() >= 2) {
                waits[tid.toInt()] = fields.at(1).toLongLong();
            }
        }
    }
    return waits;
}

// The longest event delivery on the GUI thread since the last look, so that a stall names the
// event and the object that held the thread (a snapshot shown, a layout, a paint).
struct Delivery {
    int64_t ns = 0;
    QString what;
};
Delivery g_longestDelivery;

class TimedApplication : public QApplication {
  public:
    using QApplication::QApplication;

    // Every completed delivery counts, nested ones too: one that opened a dialog completes
    // only when the dialog closes, so the deliveries inside its event loop must be seen.
    bool notify(QObject* receiver, QEvent* event) override {
        if (QThread::currentThread() != thread()) {
            return QApplication::notify(receiver, event);
        }
        // Read before delivery: the receiver may be gone after it.
        const char* type = receiver->metaObject()->className();
        const QString name = receiver->objectName();
        const int eventType = static_cast<int>(event->type());
        QElapsedTimer clock;
        clock.start();
        const bool handled = QApplication::notify(receiver, event);
        const int64_t ns = clock.nsecsElapsed();
        if (ns > g_longestDelivery.ns) {
            g_longestDelivery.ns = ns;
            g_longestDelivery.what =
                QStringLiteral("event type %1 to %2%3")
                    .arg(eventType)
                    .arg(QLatin1String(type))
                    .arg(name.isEmpty() ? QString() : QStringLiteral(" '%1'").arg(name));
        }
        return handled;
    }
};

// What the process holds, in MiB: its anonymous resident set (RssAnon: the heap, stacks and
// other private memory; not the pages of Qt's libraries and fonts, which grow as the monkey
// reaches code it had not run) after handing malloc's free pages back (not what glibc keeps
// for reuse: the app keeps up to 512 MiB of freed heap on purpose), and of it the bytes malloc
// has handed out and not had back (every arena and mmapped block): a leak grows both,
// fragmentation only the first.
struct Memory {
    double residentMiB = 0;
    double heapMiB = 0;
};
Memory memoryNow() {
    malloc_trim(0);
    Memory m;
    const struct mallinfo2 info = mallinfo2();
    m.heapMiB = static_cast<double>(info.uordblks + info.hblkhd) / (1024.0 * 1024.0);
    QFile status(QStringLiteral("/proc/self/status"));
    if (status.open(QIODevice::ReadOnly)) {
        for (const QByteArray& line : status.readAll().split('\n')) {
            if (line.startsWith("RssAnon:")) {
                // "RssAnon:   123456 kB"
                m.residentMiB = line.mid(8).trimmed().split(' ').value(0).toDouble() / 1024.0;
            }
        }
    }
    return m;
}

// The experiment every window starts with: small, so that it trains fast on one thread.
nlohmann::json startingExperiment() {
    nlohmann::json c =
        ensemble::test::smallConfig({.members = 4, .steps = 200'000, .threads = 1, .points = 400});
    c["training"]["eval_every"] = 100;
    return c;
}

// The widget's class, object name and button text, for the monkey's log.
QString widgetLabel(const QWidget* w) {
    if (w == nullptr) {
        return QStringLiteral("nothing");
    }
    QString text = QString::fromLatin1(w->metaObject()->className());
    if (!w->objectName().isEmpty()) {
        text += QStringLiteral(" '%1'").arg(w->objectName());
    }
    if (const auto* b = qobject_cast<const QAbstractButton*>(w);
        b != nullptr && !b->text().isEmpty()) {
        text += QStringLiteral(" \"%1\"").arg(b->text());
    }
    return text;
}

class Monkey : public QObject {
  public:
    Monkey(uint64_t seed, QString folder, bool checkStalls)
        : m_random(seed), m_folder(std::move(folder)), m_checkStalls(checkStalls) {
        m_driver.setInterval(15);  // a fast person: the app handles its events in between
        connect(&m_driver, &QTimer::timeout, this, &Monkey::schedule);
        m_lateness.setTimerType(Qt::PreciseTimer);
        m_lateness.setInterval(10);
        connect(&m_lateness, &QTimer::timeout, this, &Monkey::measureLateness);
    }

    ~Monkey() override { closeWindow(); }

    MainWindow* window() const { return m_window.get(); }

    // A fresh window with the starting experiment (the process keeps running: windows come and
    // go as the monkey quits them).
    void openWindow() {
        m_excludeLateness = true;
        MainWindow::Options options;
        options.useSettings = true;  // as the app: QSettings in test mode, cleared at the start
        options.askToSaveCheckpoint = true;
        m_window = std::make_unique<MainWindow>(options);
        m_window->resize(1200, 800);
        m_window->show();
        m_window->activateWindow();
        m_window->loadExperiment(startingExperiment(), QStringLiteral("spirals"));
        m_trainWhenFresh = true;
        ++m_windowsOpened;
        resumeLateness();
    }

    // Destroys the window (its engine thread stops and is joined). Not a stall: in the app,
    // closing the window ends the process (bench/gui_latency.cpp measures how long it takes).
    void closeWindow() {
        m_excludeLateness = true;
        m_window.reset();
        resumeLateness();
    }

    void start() {
        if (!m_clock.isValid()) {
            m_clock.start();
        }
        m_lastTick = m_clock.nsecsElapsed();
        m_lastTimes = threadTimes();
        m_lateness.start();
        m_driver.start();
    }

    void stop() {
        m_driver.stop();
        m_lateness.stop();
    }

    // Events are sent until `sent()` reaches `target`, or until `deadline` has passed.
    void setTarget(int64_t target) { m_events = target; }
    void setDeadline(QDeadlineTimer deadline) { m_deadline = deadline; }
    int64_t sent() const { return m_sent; }
    // Every event sent and every dialog and popup closed again.
    bool done() const { return m_sent >= m_events && m_depth == 0 && !somethingOnTop(); }
    QString failure() const { return m_failure; }
    qint64 worstLatenessMs() const { return m_worstLatenessNs / 1'000'000; }
    int windowsOpened() const { return m_windowsOpened; }
    int dialogsAnswered() const { return m_dialogsAnswered; }
    QString recentEvents() const {
        QStringList lines(m_recent.begin(), m_recent.end());
        return lines.join(QLatin1Char('\n'));
    }
    void fail(const QString& why) {
        if (m_failure.isEmpty()) {
            m_failure = why;
            stop();
        }
    }

  private:
    // One event at a time, posted rather than sent from the timer: an event that opens a modal
    // dialog blocks in the dialog's own event loop, where the next events must still come (they
    // answer it), and a timer does not fire again while its own slot runs.
    void schedule() {
        if (!m_pending && m_failure.isEmpty()) {
            m_pending = true;
            QMetaObject::invokeMethod(this, &Monkey::step, Qt::QueuedConnection);
        }
    }

    uint32_t draw() { return static_cast<uint32_t>(m_random() >> 32); }
    // r % n without bias worth caring about for n << 2^32.
    static int pick(uint32_t r, int n) {
        return n <= 0 ? 0 : static_cast<int>(r % static_cast<uint32_t>(n));
    }
    static bool chance(uint32_t r, int percent) { return static_cast<int>(r % 100u) < percent; }

    static bool somethingOnTop() {
        return QApplication::activeModalWidget() != nullptr ||
               QApplication::activePopupWidget() != nullptr;
    }

    void step() {
        m_pending = false;
        if (!m_failure.isEmpty()) {
            return;
        }
        if (const QStringList messages = takeMessages(); !messages.isEmpty()) {
            fail(QStringLiteral("Qt printed warnings:\n") + messages.join(QLatin1Char('\n')));
            return;
        }
        ++m_depth;
        // The same count of draws for every event, whatever it turns out to be.
        std::array<uint32_t, 10> r{};
        for (uint32_t& v : r) {
            v = draw();
        }
        if (m_sent < m_events && m_deadline.hasExpired()) {
            m_events = m_sent;  // out of time (ENSEMBLE_MONKEY_MINUTES): finish here
        }
        if (m_sent < m_events) {
            g_event = m_sent;
            QString what = act(r);
            if (!what.isEmpty()) {
                what = QStringLiteral("#%1 %2").arg(m_sent).arg(what);
                if (qEnvironmentVariableIntValue("ENSEMBLE_MONKEY_VERBOSE") != 0) {
                    std::fprintf(stderr, "%8.3f %s\n", m_clock.nsecsElapsed() * 1e-9,
                                 qPrintable(what));
                }
                if (m_sent > 0 && m_sent % 1000 == 0) {
                    const Memory m = memoryNow();
                    std::printf(
                        "monkey: %lld events, %.0f s, anonymous RSS %.1f MiB (heap in use %.1f "
                        "MiB), worst lateness %lld ms\n",
                        static_cast<long long>(m_sent), m_clock.nsecsElapsed() * 1e-9,
                        m.residentMiB, m.heapMiB, static_cast<long long>(worstLatenessMs()));
                    std::fflush(stdout);
                }
                m_recent.push_back(what);
                if (m_recent.size() > 40) {
                    m_recent.pop_front();
                }
                ++m_sent;
            }
        } else {
            closeWhatIsOnTop();
        }
        --m_depth;
    }

    // Sends one event (or answers what is on top); returns what it did, empty when it only
    // tidied up (a window replaced, the main window activated) and sent nothing.
    QString act(const std::array<uint32_t, 10>& r) {
        if (QWidget* modal = QApplication::activeModalWidget()) {
            return actOnModal(modal, r);
        }
        if (QWidget* popup = QApplication::activePopupWidget()) {
            return actOnPopup(popup, r);
        }
        if (m_depth > 1) {
            return {};  // an outer event is still under way (its dialog closed): let it return
        }
        if (!m_window || !m_window->isVisible()) {
            // Quit answered: the window closed. Open another, as starting the app again does.
            closeWindow();
            openWindow();
            return QStringLiteral("window closed by the monkey: a new one opened");
        }
        if (m_trainWhenFresh) {
            const ensemble::ui::SnapshotPtr s = m_window->controller()->snapshot();
            if (s && s->run->runId == m_window->controller()->currentRunId()) {
                m_trainWhenFresh = false;
                m_window->trainAction()->trigger();
            }
        }
        return actOnWindows(r);
    }

    // --- the main window and other top-level windows -------------------------------------

    QString actOnWindows(const std::array<uint32_t, 10>& r) {
        // A floating Experiment dock is a window of its own: it gets a share of the events.
        QWidget* top = m_window.get();
        QList<QWidget*> others;
        for (QWidget* w : QApplication::topLevelWidgets()) {
            if (w != m_window.get() && w->isVisible() && w->windowHandle() != nullptr &&
                !(w->windowType() == Qt::ToolTip || w->windowType() == Qt::Popup)) {
                others << w;
            }
        }
        if (!others.isEmpty() && chance(r[9], 15)) {
            top = others.at(pick(r[8], static_cast<int>(others.size())));
        }
        const int kind = pick(r[0], 100);
        if (kind < 24) {
            return click(top, r);
        }
        if (kind < 40) {
            return typeKey(top, r);
        }
        if (kind < 54) {
            return shortcut(r);
        }
        if (kind < 63) {
            return drag(top, r);
        }
        if (kind < 72) {
            return wheel(top, r);
        }
        if (kind < 77) {
            return hover(top, r);
        }
        if (kind < 81) {
            return resize(r);
        }
        if (kind < 84) {
            return dropFile(r);
        }
        if (kind < 91) {
            return clickNamed(top, QStringLiteral("train"), r);
        }
        if (kind < 96) {
            return clickNamed(top, QStringLiteral("preset"), r);
        }
        return clickNamed(top, QStringLiteral("menu"), r);
    }

    // A point in `top`: anywhere (half the time), or inside one of its visible widgets, so that
    // small buttons and fields get their share.
    QPoint pointIn(QWidget* top, uint32_t r1, uint32_t r2, uint32_t r3) const {
        const QSize size = top->size();
        if (chance(r1, 50)) {
            QList<QWidget*> widgets;
            for (QWidget* w : top->findChildren<QWidget*>()) {
                if (w->isVisible() && w->window() == top && w->width() > 0 && w->height() > 0) {
                    widgets << w;
                }
            }
            if (!widgets.isEmpty()) {
                QWidget* w = widgets.at(pick(r2 >> 8, static_cast<int>(widgets.size())));
                const QPoint inside(pick(r3, w->width()), pick(r3 >> 16, w->height()));
                const QPoint p = w->mapTo(top, inside);
                if (top->rect().contains(p)) {
                    return p;
                }
            }
        }
        return {pick(r2, std::max(1, size.width())), pick(r3, std::max(1, size.height()))};
    }

    QString where(QWidget* top, QPoint p) const {
        QWidget* under = top->childAt(p);
        return QStringLiteral("(%1,%2) on %3 in %4")
            .arg(p.x())
            .arg(p.y())
            .arg(widgetLabel(under != nullptr ? under : top), widgetLabel(top));
    }

    // A window manager activates the window a person clicks or types into.
    static void activate(QWidget* top) {
        if (QApplication::activeWindow() != top) {
            top->activateWindow();
            QApplication::setActiveWindow(top);
        }
    }

    void mouse(QWindow* window, QPoint p, Qt::MouseButtons buttons, Qt::MouseButton button,
               QEvent::Type type, Qt::KeyboardModifiers mods) {
        // Far apart in time, so that two clicks never make a double click by accident.
        m_timestamp += type == QEvent::MouseButtonPress ? 1000 : 5;
        qt_handleMouseEvent(window, QPointF(p), window->mapToGlobal(QPointF(p)), buttons, button,
                            type, mods, static_cast<int>(m_timestamp));
    }

    static Qt::KeyboardModifiers modifiersFrom(uint32_t r) {
        const int m = pick(r, 100);
        if (m < 70) {
            return Qt::NoModifier;
        }
        if (m < 85) {
            return Qt::ShiftModifier;
        }
        if (m < 95) {
            return Qt::ControlModifier;
        }
        return Qt::AltModifier;
    }

    QString click(QWidget* top, const std::array<uint32_t, 10>& r) {
        const QPoint p = pointIn(top, r[1], r[2], r[3]);
        return clickAt(top, p, r);
    }

    QString clickAt(QWidget* top, QPoint p, const std::array<uint32_t, 10>& r) {
        const int b = pick(r[4], 100);
        const Qt::MouseButton button =
            b < 80 ? Qt::LeftButton : (b < 95 ? Qt::RightButton : Qt::MiddleButton);
        const bool twice = chance(r[5], 12);
        const Qt::KeyboardModifiers mods = chance(r[6], 85) ? Qt::NoModifier : modifiersFrom(r[7]);
        const QString text = QStringLiteral("%1%2 click %3")
                                 .arg(twice ? QStringLiteral("double ") : QString())
                                 .arg(button == Qt::LeftButton    ? QStringLiteral("left")
                                      : button == Qt::RightButton ? QStringLiteral("right")
                                                                  : QStringLiteral("middle"))
                                 .arg(where(top, p));
        activate(top);
        QPointer<QWindow> window = top->windowHandle();
        for (int i = 0; i < (twice ? 2 : 1) && window; ++i) {
            mouse(window, p, button, button, QEvent::MouseButtonPress, mods);
            if (i == 1) {
                m_timestamp -= 1000 - 20;  // the second press 20 ms after the first
            }
            if (window) {
                mouse(window, p, Qt::NoButton, button, QEvent::MouseButtonRelease, mods);
            }
        }
        return text;
    }

    static Qt::Key keyFrom(uint32_t r, QString* text) {
        static const std::array<Qt::Key, 24> special = {
            Qt::Key_Return,   Qt::Key_Enter,     Qt::Key_Escape, Qt::Key_Tab,  Qt::Key_Backtab,
            Qt::Key_Space,    Qt::Key_Backspace, Qt::Key_Delete, Qt::Key_Left, Qt::Key_Right,
            Qt::Key_Up,       Qt::Key_Down,      Qt::Key_Home,   Qt::Key_End,  Qt::Key_PageUp,
            Qt::Key_PageDown, Qt::Key_F1,        Qt::Key_F2,     Qt::Key_F10,  Qt::Key_Menu,
            Qt::Key_Plus,     Qt::Key_Minus,     Qt::Key_Period, Qt::Key_Comma};
        static const char printable[] = "abcdefghijklmnopqrstuvwxyz0123456789.-+e,[]{}\"':/ ";
        if (chance(r, 40)) {
            const Qt::Key k = special[static_cast<std::size_t>(pick(r >> 8, special.size()))];
            if (k == Qt::Key_Space) {
                *text = QStringLiteral(" ");
            } else if (k == Qt::Key_Plus || k == Qt::Key_Minus || k == Qt::Key_Period ||
                       k == Qt::Key_Comma) {
                *text = QString(QChar(static_cast<char16_t>(k)));
            } else if (k == Qt::Key_Return || k == Qt::Key_Enter) {
                *text = QStringLiteral("\r");
            }
            return k;
        }
        const char c = printable[pick(r >> 8, static_cast<int>(sizeof printable) - 1)];
        *text = QString(QLatin1Char(c));
        if (c >= 'a' && c <= 'z') {
            return static_cast<Qt::Key>(Qt::Key_A + (c - 'a'));
        }
        return static_cast<Qt::Key>(QChar(QLatin1Char(c)).unicode());
    }

    QString typeKey(QWidget* top, const std::array<uint32_t, 10>& r) {
        QString text;
        const Qt::Key key = keyFrom(r[1], &text);
        const Qt::KeyboardModifiers mods = modifiersFrom(r[2]);
        if (mods & (Qt::ControlModifier | Qt::AltModifier)) {
            text.clear();  // a control or Alt chord types nothing
        } else if (mods & Qt::ShiftModifier) {
            text = text.toUpper();
        }
        const QString what = QStringLiteral("key %1 to %2 (focus %3)")
                                 .arg(QKeySequence(key | mods).toString(), widgetLabel(top),
                                      widgetLabel(QApplication::focusWidget()));
        activate(top);
        sendKey(top->windowHandle(), key, mods, text);
        return what;
    }

    static void sendKey(QWindow* window, Qt::Key key, Qt::KeyboardModifiers mods,
                        const QString& text) {
        QPointer<QWindow> w = window;
        qt_handleKeyEvent(w, QEvent::KeyPress, key, mods, text);
        if (w) {
            qt_handleKeyEvent(w, QEvent::KeyRelease, key, mods, text);
        }
    }

    // One of the window's own shortcuts (every QAction's, the view tabs' and the speed's too),
    // as a person presses it. Quit comes up less often, so that a window lives long enough to
    // gather state (a tenth of its share).
    QString shortcut(const std::array<uint32_t, 10>& r) {
        QList<QKeySequence> keys;
        for (QAction* a : m_window->findChildren<QAction*>()) {
            for (const QKeySequence& k : a->shortcuts()) {
                if (!k.isEmpty() && !keys.contains(k)) {
                    keys << k;
                }
            }
        }
        if (keys.isEmpty()) {
            return typeKey(m_window.get(), r);
        }
        std::sort(keys.begin(), keys.end());  // an order that does not depend on creation
        QKeySequence k = keys.at(pick(r[1], static_cast<int>(keys.size())));
        if (k == QKeySequence(QKeySequence::Quit) && !chance(r[2], 10)) {
            k = keys.at(pick(r[3], static_cast<int>(keys.size())));
            if (k == QKeySequence(QKeySequence::Quit)) {
                k = QKeySequence(Qt::Key_Space);
            }
        }
        const QKeyCombination combo = k[0];
        activate(m_window.get());
        const QString what = QStringLiteral("shortcut %1 (focus %2)")
                                 .arg(k.toString(), widgetLabel(QApplication::focusWidget()));
        QString text;
        if (combo.keyboardModifiers() == Qt::NoModifier && combo.key() < Qt::Key_Escape) {
            text = QString(QChar(static_cast<char16_t>(combo.key()))).toLower();
        }
        sendKey(m_window->windowHandle(), combo.key(), combo.keyboardModifiers(), text);
        return what;
    }

    QString drag(QWidget* top, const std::array<uint32_t, 10>& r) {
        const QPoint from = pointIn(top, r[1], r[2], r[3]);
        const QPoint to(pick(r[4], top->width()), pick(r[5], top->height()));
        const int moves = 2 + pick(r[6], 6);
        const Qt::MouseButton button = chance(r[7], 85) ? Qt::LeftButton : Qt::RightButton;
        const Qt::KeyboardModifiers mods = chance(r[8], 80) ? Qt::NoModifier : modifiersFrom(r[9]);
        const QString what = QStringLiteral("drag %1 to (%2,%3) in %4 moves")
                                 .arg(where(top, from))
                                 .arg(to.x())
                                 .arg(to.y())
                                 .arg(moves);
        activate(top);
        QPointer<QWindow> window = top->windowHandle();
        mouse(window, from, button, button, QEvent::MouseButtonPress, mods);
        for (int i = 1; i <= moves && window; ++i) {
            const QPoint p = from + (to - from) * i / moves;
            mouse(window, p, button, Qt::NoButton, QEvent::MouseMove, mods);
        }
        if (window) {
            mouse(window, to, Qt::NoButton, button, QEvent::MouseButtonRelease, mods);
        }
        return what;
    }

    QString hover(QWidget* top, const std::array<uint32_t, 10>& r) {
        const QPoint p = pointIn(top, r[1], r[2], r[3]);
        QPointer<QWindow> window = top->windowHandle();
        mouse(window, p, Qt::NoButton, Qt::NoButton, QEvent::MouseMove, Qt::NoModifier);
        return QStringLiteral("hover %1").arg(where(top, p));
    }

    // A wheel turn is given to the widget under the point, as Qt gives a spontaneous wheel
    // event (it goes up to the parents until one takes it); only to a window that is not
    // blocked by a dialog (the monkey's caller picks it).
    QString wheel(QWidget* top, const std::array<uint32_t, 10>& r) {
        const QPoint p = pointIn(top, r[1], r[2], r[3]);
        QWidget* under = top->childAt(p);
        QWidget* target = under != nullptr ? under : top;
        const int notches = (1 + pick(r[4], 3)) * (chance(r[5], 50) ? 1 : -1);
        const bool sideways = chance(r[6], 10);
        const Qt::KeyboardModifiers mods = chance(r[7], 80) ? Qt::NoModifier : modifiersFrom(r[8]);
        const QPoint angle = sideways ? QPoint(120 * notches, 0) : QPoint(0, 120 * notches);
        const QPointF local = target->mapFrom(top, QPointF(p));
        QWheelEvent event(local, target->mapToGlobal(local), QPoint(), angle, Qt::NoButton, mods,
                          Qt::NoScrollPhase, false);
        QSpontaneKeyEvent::setSpontaneous(&event);
        QApplication::sendEvent(target, &event);
        return QStringLiteral("wheel %1 notches%2 %3")
            .arg(notches)
            .arg(sideways ? QStringLiteral(" sideways") : QString())
            .arg(where(top, p));
    }

    QString resize(const std::array<uint32_t, 10>& r) {
        if (chance(r[1], 10)) {
            if (m_window->isMaximized()) {
                m_window->showNormal();
                return QStringLiteral("window restored");
            }
            m_window->showMaximized();
            return QStringLiteral("window maximized");
        }
        // From far below the window's minimum (it refuses) to wider than a big screen.
        const QSize size(200 + pick(r[2], 1800), 150 + pick(r[3], 1100));
        m_window->resize(size);
        return QStringLiteral("resize to %1x%2").arg(size.width()).arg(size.height());
    }

    QStringList folderFiles() const {
        QStringList files;
        for (const QFileInfo& f : QDir(m_folder).entryInfoList(QDir::Files, QDir::Name)) {
            files << f.absoluteFilePath();
        }
        return files;
    }

    // A file of the temporary folder dropped on the window, as from a file manager.
    QString dropFile(const std::array<uint32_t, 10>& r) {
        const QStringList files = folderFiles();
        if (files.isEmpty()) {
            return click(m_window.get(), r);
        }
        const QString path = files.at(pick(r[1], static_cast<int>(files.size())));
        const QPoint p(pick(r[2], m_window->width()), pick(r[3], m_window->height()));
        QMimeData mime;
        mime.setUrls({QUrl::fromLocalFile(path)});
        QDragEnterEvent enter(p, Qt::CopyAction, &mime, Qt::NoButton, Qt::NoModifier);
        QApplication::sendEvent(m_window.get(), &enter);
        const QString what =
            QStringLiteral("drop %1 at (%2,%3)%4")
                .arg(QFileInfo(path).fileName())
                .arg(p.x())
                .arg(p.y())
                .arg(enter.isAccepted() ? QString() : QStringLiteral(" (refused)"));
        if (enter.isAccepted()) {
            QDropEvent drop(QPointF(p), Qt::CopyAction, &mime, Qt::NoButton, Qt::NoModifier);
            QApplication::sendEvent(m_window.get(), &drop);
        }
        return what;
    }

    // A click on a named part: the toolbar's Train, the preset box, a menu of the menu bar.
    QString clickNamed(QWidget* top, const QString& part, const std::array<uint32_t, 10>& r) {
        QWidget* target = nullptr;
        QPoint at;
        if (part == QLatin1String("train")) {
            auto* bar = m_window->findChild<QToolBar*>(QStringLiteral("RunToolBar"));
            target = bar != nullptr ? bar->widgetForAction(m_window->trainAction()) : nullptr;
        } else if (part == QLatin1String("preset")) {
            target = m_window->panel()->presetCombo();
        } else {
            QMenuBar* bar = m_window->menuBar();
            const QList<QAction*> menus = bar->actions();
            if (!menus.isEmpty()) {
                const QRect rect =
                    bar->actionGeometry(menus.at(pick(r[1], static_cast<int>(menus.size()))));
                target = bar;
                at = rect.center();
            }
        }
        if (target == nullptr || !target->isVisible() || target->window() != m_window.get()) {
            return click(top, r);
        }
        if (at.isNull()) {
            at = target->rect().center();
        }
        std::array<uint32_t, 10> left = r;
        left[4] = 0;   // left button
        left[5] = 99;  // once
        left[6] = 0;   // no modifier
        return clickAt(m_window.get(), target->mapTo(m_window.get(), at), left);
    }

    // --- what is on top: dialogs and popups ------------------------------------------------

    int ageOf(QWidget* w) {
        if (m_onTop != w) {
            m_onTop = w;
            m_onTopAge = 0;
        }
        return m_onTopAge++;
    }

    QString actOnModal(QWidget* modal, const std::array<uint32_t, 10>& r) {
        const int age = ageOf(modal);
        if (auto* files = qobject_cast<QFileDialog*>(modal)) {
            return driveFileDialog(files, age, r);
        }
        // Random input first (a few events), then the monkey answers it.
        const int patience = 1 + pick(r[8], 6);
        if (age < patience) {
            const int kind = pick(r[0], 100);
            if (kind < 55) {
                return QStringLiteral("[dialog] ") + click(modal, r);
            }
            if (kind < 85) {
                return QStringLiteral("[dialog] ") + typeKey(modal, r);
            }
            return QStringLiteral("[dialog] ") + wheel(modal, r);
        }
        return answer(modal, r, age);
    }

    // Closes the dialog `modal`: a button of its own (a message box's, a button box's) or
    // Escape; after a dozen events, whatever it is, it is rejected.
    QString answer(QWidget* modal, const std::array<uint32_t, 10>& r, int age) {
        ++m_dialogsAnswered;
        QList<QAbstractButton*> buttons;
        if (auto* box = qobject_cast<QMessageBox*>(modal)) {
            buttons = box->buttons();
        } else if (auto* row = modal->findChild<QDialogButtonBox*>()) {
            buttons = row->buttons();
        }
        const QString name = widgetLabel(modal);
        if (age > 12) {
            if (auto* dialog = qobject_cast<QDialog*>(modal)) {
                dialog->reject();
            } else {
                modal->close();
            }
            return QStringLiteral("[dialog] %1 rejected (open for %2 events)").arg(name).arg(age);
        }
        if (!buttons.isEmpty() && chance(r[1], 80)) {
            QAbstractButton* b = buttons.at(pick(r[2], static_cast<int>(buttons.size())));
            const QString text = b->text();
            b->click();
            return QStringLiteral("[dialog] %1 answered \"%2\"").arg(name, text);
        }
        activate(modal);
        sendKey(modal->windowHandle(), Qt::Key_Escape, Qt::NoModifier, QString());
        return QStringLiteral("[dialog] %1 Escape").arg(name);
    }

    // A file dialog gets a path in the temporary folder and is accepted, or is cancelled;
    // never random input (it could delete or rename files wherever it shows).
    QString driveFileDialog(QFileDialog* dialog, int age, const std::array<uint32_t, 10>& r) {
        ++m_dialogsAnswered;
        const QString title = dialog->windowTitle();
        if (age >= 3 || chance(r[1], 15)) {
            dialog->reject();
            return QStringLiteral("[file dialog] \"%1\" cancelled").arg(title);
        }
        // A checkpoint or an export stores the report of the whole train split, measured on
        // the engine thread: minutes for a CNN on 60,000 images on two cores (the window stays
        // responsive, which the monkey checks, but closing it waits for the file, as it
        // should). On such runs the monkey cancels them, or it would spend its budget waiting;
        // tst_gui_open and tst_gui_files write both on small runs.
        const bool heavyWrite = dialog->acceptMode() == QFileDialog::AcceptSave &&
                                (title.contains(QStringLiteral("checkpoint")) ||
                                 dialog->objectName() == QLatin1String("ExportDialog"));
        // The run the file would hold is the engine's current one: while a new run is being
        // set up (a preset just chosen), the snapshot shown is still the old run's, and its
        // size says nothing of the new one's.
        const ensemble::ui::SnapshotPtr s =
            m_window ? m_window->controller()->snapshot() : ensemble::ui::SnapshotPtr{};
        const bool sizeKnown = s && s->run->runId == m_window->controller()->currentRunId();
        if (heavyWrite && (!sizeKnown || s->run->trainRows > kHeavyTrainRows)) {
            dialog->reject();
            return QStringLiteral("[file dialog] \"%1\" cancelled (%2)")
                .arg(title, sizeKnown ? QStringLiteral("%1 train rows").arg(s->run->trainRows)
                                      : QStringLiteral("a run being set up"));
        }
        QString path;
        const QStringList files = folderFiles();
        if (dialog->fileMode() == QFileDialog::Directory) {
            path = QDir(m_folder).filePath(QStringLiteral("folder%1").arg(pick(r[2], 3)));
            QDir().mkpath(path);
        } else if (dialog->acceptMode() == QFileDialog::AcceptOpen) {
            path = files.isEmpty() || chance(r[2], 10)
                       ? QDir(m_folder).filePath(QStringLiteral("missing.json"))
                       : files.at(pick(r[3], static_cast<int>(files.size())));
        } else if (!files.isEmpty() && chance(r[2], 20)) {
            path = files.at(pick(r[3], static_cast<int>(files.size())));  // replace one
        } else {
            static const std::array<const char*, 6> suffixes = {"",     ".json", ".safetensors",
                                                                ".npz", ".onnx", ".png"};
            path = QDir(m_folder).filePath(
                QStringLiteral("saved%1%2")
                    .arg(pick(r[4], 20))
                    .arg(QLatin1String(suffixes[static_cast<std::size_t>(pick(r[5], 6))])));
        }
        if (auto* name = dialog->findChild<QLineEdit*>(QStringLiteral("fileNameEdit"))) {
            name->setText(path);
        }
        dialog->selectFile(path);
        if (auto* name = dialog->findChild<QLineEdit*>(QStringLiteral("fileNameEdit"))) {
            name->setText(path);  // selectFile may keep only the name: the whole path, typed
        }
        static_cast<QDialog*>(dialog)->accept();  // QFileDialog::accept, as its button does
        return QStringLiteral("[file dialog] \"%1\" given %2")
            .arg(title, QFileInfo(path).fileName());
    }

    QString actOnPopup(QWidget* popup, const std::array<uint32_t, 10>& r) {
        const int age = ageOf(popup);
        const QString name = widgetLabel(popup);
        if (age > 8) {
            popup->close();
            return QStringLiteral("[popup] %1 closed").arg(name);
        }
        const int kind = pick(r[0], 100);
        if (kind < 60) {
            const QPoint p(pick(r[1], std::max(1, popup->width())),
                           pick(r[2], std::max(1, popup->height())));
            std::array<uint32_t, 10> left = r;
            left[4] = chance(r[3], 90) ? 0 : 99;  // mostly left, sometimes right
            left[5] = 99;
            left[6] = 0;
            return QStringLiteral("[popup] ") + clickAt(popup, p, left);
        }
        static const std::array<Qt::Key, 7> keys = {Qt::Key_Up,    Qt::Key_Down,   Qt::Key_Left,
                                                    Qt::Key_Right, Qt::Key_Return, Qt::Key_Escape,
                                                    Qt::Key_End};
        const Qt::Key key = keys[static_cast<std::size_t>(pick(r[1], keys.size()))];
        sendKey(popup->windowHandle(), key, Qt::NoModifier, QString());
        return QStringLiteral("[popup] %1 key %2").arg(name, QKeySequence(key).toString());
    }

    // After the last event: close what is still open, innermost first.
    void closeWhatIsOnTop() {
        if (QWidget* popup = QApplication::activePopupWidget()) {
            popup->close();
        } else if (QWidget* modal = QApplication::activeModalWidget()) {
            if (auto* dialog = qobject_cast<QDialog*>(modal)) {
                dialog->reject();
            } else {
                modal->close();
            }
        }
    }

    // --- measures ---------------------------------------------------------------------------

    void resumeLateness() {
        m_lastTick = m_clock.isValid() ? m_clock.nsecsElapsed() : 0;
        m_lastTimes = threadTimes();
        m_eventAtTick = m_sent;
        g_longestDelivery = {};
        m_excludeLateness = false;
    }

    void measureLateness() {
        const qint64 now = m_clock.nsecsElapsed();
        const ThreadTimes times = threadTimes();
        // The helper threads the GUI thread may have waited for: their longest wait for a CPU
        // (they run side by side) is the machine's load, not the app's.
        std::map<int, int64_t> pooled = helperThreadWaits();
        int64_t poolWait = 0;
        for (const auto& [tid, wait] : pooled) {
            const auto before = m_pooledWaits.find(tid);
            poolWait =
                std::max(poolWait, wait - (before != m_pooledWaits.end() ? before->second : 0));
        }
        m_pooledWaits = std::move(pooled);
        if (!m_excludeLateness) {
            const qint64 wall = now - m_lastTick - 10'000'000;
            const qint64 late = wall - (times.waiting - m_lastTimes.waiting) - poolWait;
            m_worstLatenessNs = std::max(m_worstLatenessNs, late);
            if (m_checkStalls && late > kStallMs * 1'000'000) {
                fail(QStringLiteral(
                         "GUI stall: the 10 ms timer fired %1 ms late (%2 ms of wall time, less "
                         "the time the GUI thread and Qt's threads waited for a CPU; %3 ms "
                         "on a CPU) during events %4 to %5; the longest event delivery: %6 ms, "
                         "%7")
                         .arg(late / 1'000'000)
                         .arg(wall / 1'000'000)
                         .arg((times.onCpu - m_lastTimes.onCpu) / 1'000'000)
                         .arg(m_eventAtTick)
                         .arg(m_sent)
                         .arg(g_longestDelivery.ns / 1'000'000)
                         .arg(g_longestDelivery.what));
            }
        }
        m_lastTick = now;
        m_lastTimes = times;
        m_eventAtTick = m_sent;
        g_longestDelivery = {};
    }

    std::mt19937_64 m_random;
    int64_t m_events = 0;
    QDeadlineTimer m_deadline{QDeadlineTimer::Forever};
    QString m_folder;
    bool m_checkStalls;
    std::unique_ptr<MainWindow> m_window;
    QTimer m_driver;
    QTimer m_lateness;
    QElapsedTimer m_clock;
    bool m_pending = false;
    int m_depth = 0;
    int64_t m_sent = 0;
    uint64_t m_timestamp = 1'000'000;
    bool m_trainWhenFresh = false;
    int m_windowsOpened = 0;
    int m_dialogsAnswered = 0;
    QPointer<QWidget> m_onTop;
    int m_onTopAge = 0;
    std::deque<QString> m_recent;
    QString m_failure;
    bool m_excludeLateness = true;
    qint64 m_lastTick = 0;
    ThreadTimes m_lastTimes;
    std::map<int, int64_t> m_pooledWaits;
    int64_t m_eventAtTick = 0;
    qint64 m_worstLatenessNs = 0;
};

}  // namespace

class TestGuiMonkey : public QObject {
    Q_OBJECT

  private Q_SLOTS:
    void initTestCase();
    void monkeyAtTheWindow();
    // The monkey's findings, each a focused test of its own.
    void closingWhileARunIsBuiltSkipsItsMeasurements();
    void cleanupTestCase();

  private:
    QTemporaryDir m_dir;
};

void TestGuiMonkey::initTestCase() {
    QStandardPaths::setTestModeEnabled(true);
    // Its own settings, cleared: a seed replays from the same remembered folders and formats.
    QApplication::setOrganizationName(QStringLiteral("EnsembleLabMonkeyTest"));
    QSettings().clear();
    // Windows close and open again as the monkey quits them; the process stays.
    QApplication::setQuitOnLastWindowClosed(false);
    ensemble::keepFreedMemoryForReuse();  // as ensemble-lab's main() does
    QVERIFY(m_dir.isValid());
    // Files for the dialogs and drops to find next to what the monkey saves: experiments, a
    // CSV dataset, and files that are no experiment (refused with a message).
    const auto write = [&](const char* name, const QByteArray& bytes) {
        QFile f(m_dir.filePath(QLatin1String(name)));
        QVERIFY(f.open(QIODevice::WriteOnly));
        QCOMPARE(f.write(bytes), bytes.size());
    };
    write("moons.json", QByteArray::fromStdString(ensemble::presetText("moons")));
    write("cubic.json", QByteArray::fromStdString(ensemble::presetText("cubic")));
    write("not-json.json", "{\"dataset\": {\"kind\": ");
    write("empty.safetensors", "");
    write("notes.txt", "not an experiment\n");
    QByteArray csv = "x,y,label\n";
    for (int i = 0; i < 60; ++i) {
        csv += QByteArray::number(std::cos(i * 0.7)) + ',' + QByteArray::number(std::sin(i * 1.3)) +
               ',' + QByteArray::number(i % 3) + '\n';
    }
    write("points.csv", csv);
    g_previousHandler = qInstallMessageHandler(collectMessage);
}

void TestGuiMonkey::cleanupTestCase() {
    qInstallMessageHandler(g_previousHandler);
}

void TestGuiMonkey::monkeyAtTheWindow() {
#ifdef ENSEMBLE_TEST_SANITIZED
    // A sanitized Debug build runs our code several times slower: fewer events, and no stall
    // bound (it would time the sanitizer) nor RSS bound (ASan keeps freed memory in
    // quarantine; LeakSanitizer checks for leaks at exit instead).
    constexpr int64_t kDefaultEvents = 400;
    constexpr bool kMeasured = false;
#else
    constexpr int64_t kDefaultEvents = 1000;
    constexpr bool kMeasured = true;
#endif
    const uint64_t seed = static_cast<uint64_t>(envNumber("ENSEMBLE_MONKEY_SEED", 1));
    const int64_t events = envNumber("ENSEMBLE_MONKEY_EVENTS", kDefaultEvents);
    g_seed = seed;
    std::printf(
        "monkey: seed %llu, %lld events asked (ENSEMBLE_MONKEY_SEED, ENSEMBLE_MONKEY_EVENTS)\n",
        static_cast<unsigned long long>(seed), static_cast<long long>(events));
    std::fflush(stdout);
#ifdef ENSEMBLE_TEST_SANITIZED
    __sanitizer_set_death_callback(onSanitizerDeath);
#else
    void* warmUp[1];
    backtrace(warmUp, 1);  // loads libgcc's unwinder now, not inside the signal handler
    for (int s : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT}) {
        struct sigaction action {};
        action.sa_handler = onFatalSignal;
        action.sa_flags = SA_RESETHAND | SA_NODEFER;
        sigaction(s, &action, nullptr);
    }
#endif

    Monkey monkey(seed, m_dir.path(), kMeasured);
    // Qt Test's limit for this function (CTest's for the suite, QTEST_FUNCTION_TIMEOUT in ms;
    // Qt Test's own 300 s when run by hand). The events stop at 60% of it on a machine too
    // slow for them all, leaving the rest for the windows to close (one may be measuring a
    // whole MNIST test split) and the memory and report: a slow machine sends fewer events
    // (the count is printed), it does not time out. ENSEMBLE_MONKEY_MINUTES sets that time
    // (a soak sets QTEST_FUNCTION_TIMEOUT above it).
    const int64_t limitMs = envNumber("QTEST_FUNCTION_TIMEOUT", 300'000);
    const int64_t minutes = envNumber("ENSEMBLE_MONKEY_MINUTES", 0);
    monkey.setDeadline(QDeadlineTimer(minutes > 0 ? minutes * 60'000 : limitMs * 6 / 10));
    const int waitMs = static_cast<int>(std::min<int64_t>(
        std::max<int64_t>(limitMs - 20'000, 10'000), std::numeric_limits<int>::max()));
    QElapsedTimer clock;
    clock.start();
    monkey.openWindow();
    QVERIFY(QTest::qWaitForWindowExposed(monkey.window()));
    // Sends events until `upTo` and until every dialog and popup is closed again.
    const auto run = [&](int64_t upTo) {
        monkey.setTarget(upTo);
        monkey.start();
        const bool ok =
            QTest::qWaitFor([&] { return !monkey.failure().isEmpty() || monkey.done(); },
                            static_cast<int>(std::max<qint64>(1, waitMs - clock.elapsed())));
        monkey.stop();
        return ok && monkey.failure().isEmpty();
    };
    // A tenth of the events warm the caches up on a first window; then the window goes and the
    // process's RSS with no window is the baseline. At the end, the same again.
    bool finished = run(std::max<int64_t>(1, events / 10));
    Memory baseline;
    Memory end;
    // What the window left to deleteLater() goes before memory is measured (here, outside
    // every event delivery, as the event loop would do it).
    const auto memoryWithNoWindow = [&] {
        monkey.closeWindow();
        QCoreApplication::sendPostedEvents(nullptr, QEvent::DeferredDelete);
        return memoryNow();
    };
    if (finished) {
        baseline = memoryWithNoWindow();
        monkey.openWindow();
        finished = run(events);
    }
    if (finished) {
        end = memoryWithNoWindow();
    }
    const qint64 ms = clock.elapsed();
    const QStringList late = takeMessages();
    std::printf(
        "monkey: seed %llu: %lld events in %.1f s, %d windows, %d dialogs answered, "
        "worst GUI lateness %lld ms (less CPU waits); with no window, anonymous RSS %.1f MiB "
        "(heap in use %.1f MiB) after the warm-up, %.1f MiB (%.1f MiB) at the end\n",
        static_cast<unsigned long long>(seed), static_cast<long long>(monkey.sent()), ms / 1000.0,
        monkey.windowsOpened(), monkey.dialogsAnswered(),
        static_cast<long long>(monkey.worstLatenessMs()), baseline.residentMiB, baseline.heapMiB,
        end.residentMiB, end.heapMiB);
    std::fflush(stdout);
    // The events before a failure, printed whole (Qt Test shortens long messages).
    const bool failed = !monkey.failure().isEmpty() || !late.isEmpty() || !finished;
    if (failed) {
        std::printf("monkey: the last events before the failure:\n%s\n",
                    qPrintable(monkey.recentEvents()));
        std::fflush(stdout);
    }
    const QString replay =
        QStringLiteral(
            "\nReplay: ENSEMBLE_MONKEY_SEED=%1 ENSEMBLE_MONKEY_EVENTS=%2 (the last "
            "events are printed above)")
            .arg(seed)
            .arg(monkey.sent() + 1);
    QVERIFY2(monkey.failure().isEmpty(), qPrintable(monkey.failure() + replay));
    QVERIFY2(late.isEmpty(), qPrintable(QStringLiteral("Qt printed warnings:\n") +
                                        late.join(QLatin1Char('\n')) + replay));
    QVERIFY2(finished, qPrintable(QStringLiteral("the monkey did not finish its events") + replay));
    if (kMeasured && baseline.residentMiB > 0) {
        QVERIFY2(end.heapMiB - baseline.heapMiB <= kHeapGrowthMiB,
                 qPrintable(QStringLiteral("heap in use with no window grew from %1 to %2 MiB "
                                           "(bound %3 MiB)")
                                .arg(baseline.heapMiB)
                                .arg(end.heapMiB)
                                .arg(kHeapGrowthMiB) +
                            replay));
        QVERIFY2(end.residentMiB - baseline.residentMiB <= kRssGrowthMiB,
                 qPrintable(QStringLiteral("anonymous RSS with no window grew from %1 to %2 "
                                           "MiB (bound %3 MiB)")
                                .arg(baseline.residentMiB)
                                .arg(end.residentMiB)
                                .arg(kRssGrowthMiB) +
                            replay));
    }
}

void TestGuiMonkey::closingWhileARunIsBuiltSkipsItsMeasurements() {
    // Quit while a preset's run was being set up (mnist-cnn: 60,000 images loaded, then four
    // CNNs measured for the first curve point and snapshot) kept the closing window waiting
    // for all of it, 72 s on the busy test machine. The engine thread now looks at the stop
    // once the data is in, and drops the run unmeasured. Here the stop comes while the worker
    // sets the run up (as it says what it is doing), as the window's destructor sends it.
    using ensemble::ui::EngineWorker;
    ensemble::ui::SnapshotMailbox mailbox;
    EngineWorker worker(&mailbox);
    QObject::connect(
        &worker, &EngineWorker::working, &worker, [&] { worker.requestStop(); },
        Qt::DirectConnection);
    QSignalSpy configured(&worker, &EngineWorker::configured);
    QSignalSpy failed(&worker, &EngineWorker::configureFailed);
    QSignalSpy published(&worker, &EngineWorker::snapshotReady);
    worker.configure(startingExperiment(), nullptr, 1);
    QCOMPARE(published.size(), 0);
    QVERIFY(mailbox.take() == nullptr);
    QCOMPARE(configured.size(), 0);
    QCOMPARE(failed.size(), 0);
    // The commands queued behind it still run before the thread ends; they find no run. The
    // first version of the fix kept the unmeasured run, and pause() read its empty curve
    // history: the monkey's next runs crashed as windows closed (seeds 8, 9 and 1).
    worker.start(-1);
    worker.pause();
    worker.stepOnce();
    QCOMPARE(published.size(), 0);
    // A new run asked for after the stop is not even set up (no dataset loaded for a window
    // that is going).
    QSignalSpy working(&worker, &EngineWorker::working);
    worker.configure(startingExperiment(), nullptr, 2);
    QCOMPARE(working.size(), 0);
    QCOMPARE(published.size(), 0);

    // Without the stop the same build measures and publishes its first snapshot.
    EngineWorker going(&mailbox);
    QSignalSpy goingPublished(&going, &EngineWorker::snapshotReady);
    going.configure(startingExperiment(), nullptr, 1);
    QCOMPARE(goingPublished.size(), 1);
    const ensemble::ui::SnapshotPtr s = mailbox.take();
    QVERIFY(s != nullptr);
    QCOMPARE(s->step, int64_t{0});
    QVERIFY(!s->history.empty());
}

// QTEST_MAIN's, with the application that times its event deliveries.
int main(int argc, char** argv) {
    TimedApplication app(argc, argv);
    app.setAttribute(Qt::AA_Use96Dpi, true);
    TestGuiMonkey test;
    QTEST_SET_MAIN_SOURCE_PATH
    return QTest::qExec(&test, argc, argv);
}
#include "tst_gui_monkey.moc"
