// The screenshot script's steps, in the order a scripted start takes them: start training,
// wait for the steps and their figures, set the stage, grab, exit.
#include "screenshot_script.h"

#include <QCoreApplication>
#include <QImage>
#include <QPainter>
#include <QPushButton>
#include <QSaveFile>

#include <sys/resource.h>

#include <algorithm>
#include <cstdio>
#include <utility>

#include "core/exit_codes.h"
#include "main_window.h"
#include "views/active_view.h"
#include "views/boundary_view.h"
#include "views/filters_view.h"
#include "views/images_view.h"
#include "views/methods_view.h"

using ensemble::ExitCode;
using ensemble::exitStatus;
using ensemble::ui::MainWindow;
using ensemble::ui::SnapshotPtr;

namespace {

// The Boundary view's hover read-out at (fx, fy) of its plot, drawn into `image` (a grab of
// the window) where the pointer's tooltip would be: a tooltip is a window of its own, which a
// grab of the main window does not hold.
void drawHoverReadout(MainWindow& window, const QString& where, QImage& image) {
    const QStringList f = where.split(QLatin1Char(','));
    ensemble::ui::BoundaryCanvas* canvas = window.boundaryView()->canvas();
    if (f.size() != 2 || !canvas->isVisible()) {
        return;
    }
    const QRectF plot = canvas->plotRect();
    const QPointF pos(plot.left() + f[0].toDouble() * plot.width(),
                      plot.top() + f[1].toDouble() * plot.height());
    const QString text = canvas->readout(pos);
    if (text.isEmpty()) {
        return;
    }
    const QPointF at = canvas->mapTo(&window, pos.toPoint());
    const double scale = image.devicePixelRatio();
    QPainter p(&image);
    p.scale(scale, scale);
    p.setRenderHint(QPainter::Antialiasing);
    // The pointer: a small crosshair.
    p.setPen(QPen(Qt::black, 1.5));
    p.drawLine(at + QPointF(-7, 0), at + QPointF(7, 0));
    p.drawLine(at + QPointF(0, -7), at + QPointF(0, 7));
    QFont font = window.font();
    p.setFont(font);
    const QRectF bounds =
        p.boundingRect(QRectF(0, 0, 1000, 1000), Qt::AlignLeft | Qt::AlignTop, text);
    QRectF box(at + QPointF(14, 14), bounds.size() + QSizeF(12, 8));
    if (box.right() > window.width()) {
        box.moveRight(at.x() - 14);
    }
    if (box.bottom() > window.height()) {
        box.moveBottom(at.y() - 14);
    }
    p.setPen(QPen(QColor(120, 120, 120), 1));
    p.setBrush(QColor(255, 255, 225));
    p.drawRect(box);
    p.setPen(Qt::black);
    p.drawText(box.adjusted(6, 4, -6, -4), Qt::AlignLeft | Qt::AlignTop, text);
}

// Draws a "7" on the canvas of the view shown, Images or Filters (for screenshots of the live
// prediction and of the feature maps).
void drawDemoDigit(MainWindow& window) {
    ensemble::ui::DigitCanvas* canvas = window.currentViewId() == ensemble::ui::ViewId::Filters
                                            ? window.filtersView()->canvas()
                                            : window.imagesView()->canvas();
    const double s = canvas->width() / 224.0;
    canvas->drawStroke({QPointF(62 * s, 56 * s), QPointF(156 * s, 54 * s), QPointF(150 * s, 70 * s),
                        QPointF(122 * s, 120 * s), QPointF(100 * s, 172 * s)});
    canvas->drawStroke({QPointF(92 * s, 112 * s), QPointF(150 * s, 110 * s)});
}

}  // namespace

ScreenshotScript::ScreenshotScript(MainWindow& window, Options options)
    : m_window(window), m_options(std::move(options)), m_delayCounts(10'001, 0) {
    m_lateness.setTimerType(Qt::PreciseTimer);
    m_lateness.setInterval(10);
    connect(&m_lateness, &QTimer::timeout, this, &ScreenshotScript::recordLateness);
    connect(window.controller(), &ensemble::ui::EngineController::recoveryWritten, this,
            [this](const QString&, qint64, double seconds) {
                m_recoveryWrites.push_back(seconds * 1000.0);
            });
    connect(&window, &MainWindow::snapshotShown, this, &ScreenshotScript::onSnapshotShown);
    connect(window.controller(), &ensemble::ui::EngineController::configureFailed, this,
            [this](quint64, const QString& message) {
                if (!m_options.screenshot.isEmpty()) {
                    std::fprintf(stderr, "ensemble-lab: %s\n", qPrintable(message));
                    QCoreApplication::exit(exitStatus(ExitCode::BadInput));
                }
            });
}

void ScreenshotScript::recordLateness() {
    const qint64 now = m_trainClock.elapsed();
    const qint64 delay = std::max<qint64>(0, now - m_lastTick - 10);
    ++m_delayCounts[static_cast<std::size_t>(
        std::min<qint64>(delay, static_cast<qint64>(m_delayCounts.size()) - 1))];
    m_worstDelay = std::max(m_worstDelay, delay);
    ++m_ticks;
    m_lastTick = now;
}

void ScreenshotScript::start(const std::string& missingData) {
    m_started = true;
    if (!missingData.empty()) {
        // Opened without its data: the picture holds the views that need none.
        std::fprintf(stderr, "ensemble-lab: drawn without its dataset: %s\n", missingData.c_str());
    }
    if (!m_options.view.isEmpty()) {
        m_window.setView(m_options.view);
    }
    if (m_options.trainSteps > 0) {
        m_trainClock.start();
        m_lastTick = 0;
        m_lateness.start();
        m_window.controller()->trainTo(m_options.trainSteps);
    }
}

void ScreenshotScript::onSnapshotShown() {
    const SnapshotPtr s = m_window.controller()->snapshot();
    if (!s) {
        return;
    }
    const qint64 trainSteps = m_options.trainSteps;
    // The step the script waits for: a run shorter than --train-steps ends at its own length.
    const int64_t target = std::min<int64_t>(trainSteps, s->run->totalSteps);
    if (!m_started) {
        start(s->run->missingData);
        if (trainSteps > s->run->totalSteps && !s->untilPaused) {
            std::fprintf(stderr,
                         "ensemble-lab: note: the run has %lld steps to train; --train-steps %lld "
                         "ends there\n",
                         static_cast<long long>(s->run->totalSteps),
                         static_cast<long long>(trainSteps));
        }
        // Wait for the training trainTo() started, unless there is none to wait for (a run of
        // training.steps=0 is where it ends: no snapshot would come to end the script).
        if (trainSteps > 0 && s->step < target) {
            return;
        }
    }
    const bool reached = trainSteps <= 0 || s->step >= target;
    // Not while the whole test split is being measured: the picture shows its figures.
    if (!m_options.screenshot.isEmpty() && !m_shotScheduled && reached && !s->running &&
        !s->evaluating) {
        m_shotScheduled = true;
        printRunFigures(s);
        stage();
    }
}

void ScreenshotScript::printRunFigures(const SnapshotPtr& s) {
    if (m_trainClock.isValid() && s->step > 0) {
        // Throughput with the window open, snapshots and drawing included.
        const double seconds = static_cast<double>(m_trainClock.nsecsElapsed()) * 1e-9;
        std::printf(
            "ensemble-lab: trained %lld steps in %.2f s: %.1f steps/s, %.0f "
            "member-steps/s (%s)\n",
            static_cast<long long>(s->step), seconds, s->step / seconds,
            s->step * s->run->members / seconds, s->run->backendName.c_str());
    }
    m_lateness.stop();
    if (m_ticks > 0) {
        std::size_t median = 0;
        for (qint64 seen = 0; seen + m_delayCounts[median] <= m_ticks / 2; ++median) {
            seen += m_delayCounts[median];
        }
        // With the process's peak memory: bench/budgets.py --long-runs reads both.
        rusage usage{};
        getrusage(RUSAGE_SELF, &usage);
        std::printf(
            "ensemble-lab: GUI timer lateness: worst %lld ms, median %zu ms over "
            "%lld ticks; peak RSS %.1f MiB\n",
            static_cast<long long>(m_worstDelay), median, static_cast<long long>(m_ticks),
            static_cast<double>(usage.ru_maxrss) / 1024.0);
    }
    if (!m_recoveryWrites.empty()) {
        std::vector<double> sorted = m_recoveryWrites;
        std::sort(sorted.begin(), sorted.end());
        std::printf(
            "ensemble-lab: recovery checkpoints: %zu written, median %.1f ms, worst "
            "%.1f ms (engine thread)\n",
            sorted.size(), sorted[sorted.size() / 2], sorted.back());
    }
}

void ScreenshotScript::stage() {
    MainWindow& window = m_window;
    if (!m_options.view.isEmpty()) {
        window.setView(m_options.view);
    }
    if (m_options.member >= 0) {
        window.selectMember(m_options.member);
    }
    if (m_options.quantity >= 0) {
        window.boundaryView()->setQuantity(
            static_cast<ensemble::ui::HeatQuantity>(m_options.quantity));
    }
    if (m_options.demoDigit) {
        drawDemoDigit(window);
    }
    if (window.currentViewId() == ensemble::ui::ViewId::Methods &&
        !m_options.compareMethods.empty()) {
        // The Methods view: the comparison, as Compare runs it, then the picture.
        auto* waiting = new QObject(&window);
        connect(window.controller(), &ensemble::ui::EngineController::methodsFinished, waiting,
                [this, waiting] {
                    waiting->deleteLater();  // disconnects
                    grabLater();
                });
        window.methodsView()->startComparison(m_options.compareMethods);
        return;
    }
    if (window.currentViewId() == ensemble::ui::ViewId::Active) {
        // The Active learning view: its loop's first round, then --active-rounds more
        // acquired as a person would (Acquire), before the picture.
        auto* waiting = new QObject(&window);
        const auto next = [this, waiting] {
            const SnapshotPtr s = m_window.controller()->snapshot();
            const ensemble::ui::ActiveStatePtr a = m_window.controller()->activeState();
            ensemble::ui::ActiveView* active = m_window.activeView();
            if (!s || !a || a->runId != s->run->runId || active->isBusy()) {
                return;
            }
            if (a->message.isEmpty() && !a->pending &&
                static_cast<int>(a->rounds.size()) <= m_options.activeRounds &&
                active->acquireButton()->isEnabled()) {
                active->acquireButton()->click();
                return;
            }
            if (waiting->property("done").toBool()) {
                return;
            }
            waiting->setProperty("done", true);
            waiting->deleteLater();  // disconnects
            grabLater();
        };
        connect(window.controller(), &ensemble::ui::EngineController::activeChanged, waiting, next,
                Qt::QueuedConnection);
        next();
        return;
    }
    grabLater();
}

void ScreenshotScript::grabLater() {
    // Let the views draw what they were given (charts lay out on the next event loops).
    QTimer::singleShot(600, &m_window, [this] { grab(); });
}

void ScreenshotScript::grab() {
    int exitCode = exitStatus(ExitCode::Ok);
    QSaveFile out(m_options.screenshot);
    QImage image = m_window.grab().toImage();
    if (!m_options.hover.isEmpty()) {
        drawHoverReadout(m_window, m_options.hover, image);
    }
    if (!out.open(QIODevice::WriteOnly) || !image.save(&out, "PNG") || !out.commit()) {
        std::fprintf(stderr, "ensemble-lab: cannot write %s: %s\n",
                     qPrintable(m_options.screenshot), qPrintable(out.errorString()));
        exitCode = exitStatus(ExitCode::Runtime);
    } else {
        const SnapshotPtr s = m_window.controller()->snapshot();
        std::printf("ensemble-lab: step %lld, saved %s\n", static_cast<long long>(s ? s->step : 0),
                    qPrintable(m_options.screenshot));
    }
    QCoreApplication::exit(exitCode);
}
