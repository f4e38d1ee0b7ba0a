#include "render/text_fit.h"

#include <QFontMetricsF>
#include <QPaintDevice>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <mutex>
#include <utility>

namespace ensemble::ui {

namespace {

// Half a pixel of slack: anti-aliased text may touch its rectangle's edge.
constexpr double kSlack = 0.5;

struct Log {
    std::mutex mutex;
    // Read without the lock on every drawn string: painting pays nothing while no test records.
    std::atomic<bool> recording{false};
    std::vector<TextFitProblem> problems;
    // The text drawn so far on one device, to find text drawn over other text.
    const QPaintDevice* device = nullptr;
    std::vector<std::pair<QRectF, QString>> drawn;
};

Log& log() {
    static Log instance;
    return instance;
}

QRectF deviceRect(const QPainter& painter, const QRectF& rect) {
    return painter.transform().mapRect(rect);
}

// What the painter can show, in device coordinates: the device less the painter's clip.
QRectF shownRect(const QPainter& painter) {
    const QPaintDevice* device = painter.device();
    QRectF shown = device != nullptr ? QRectF(0, 0, device->width(), device->height()) : QRectF();
    if (painter.hasClipping()) {
        shown = shown.intersected(painter.transform().mapRect(painter.clipBoundingRect()));
    }
    return shown;
}

// Records text whose box (device coordinates) reaches past what the painter shows.
void checkShown(const QPainter& painter, const QRectF& box, const QString& text,
                const QString& shown) {
    if (!log().recording.load(std::memory_order_relaxed) || painter.device() == nullptr ||
        text.trimmed().isEmpty()) {
        return;
    }
    const QRectF room = shownRect(painter);
    if (!room.adjusted(-kSlack, -kSlack, kSlack, kSlack).contains(box)) {
        TextFitLog::record({text, shown, room, box.width()});
    }
}

// Records text whose box (device coordinates) overlaps text drawn before on the same device.
void checkOverlap(const QPainter& painter, const QRectF& box, const QString& text) {
    if (!log().recording.load(std::memory_order_relaxed)) {
        return;
    }
    std::lock_guard<std::mutex> lock(log().mutex);
    Log& l = log();
    if (!l.recording || text.trimmed().isEmpty()) {
        return;
    }
    if (l.device != painter.device()) {
        l.device = painter.device();
        l.drawn.clear();
    }
    // More than a sliver in common: a glyph's ascent touching the line above is no overlap.
    constexpr double kOverlapArea = 12.0;
    for (const auto& [other, otherText] : l.drawn) {
        const QRectF common = other.intersected(box);
        if (common.width() * common.height() > kOverlapArea) {
            l.problems.push_back(
                {text, QStringLiteral("over \"%1\"").arg(otherText), box, common.width()});
            break;
        }
    }
    l.drawn.emplace_back(box, text);
}

}  // namespace

void TextFitLog::setRecording(bool on) {
    std::lock_guard<std::mutex> lock(log().mutex);
    log().recording = on;
    log().problems.clear();
    log().device = nullptr;
    log().drawn.clear();
}

bool TextFitLog::recording() {
    return log().recording.load();
}

void TextFitLog::record(TextFitProblem problem) {
    if (!log().recording.load(std::memory_order_relaxed)) {
        return;
    }
    std::lock_guard<std::mutex> lock(log().mutex);
    if (log().recording) {
        log().problems.push_back(std::move(problem));
    }
}

std::vector<TextFitDrawn> TextFitLog::drawn() {
    std::lock_guard<std::mutex> lock(log().mutex);
    std::vector<TextFitDrawn> out;
    out.reserve(log().drawn.size());
    for (const auto& [box, text] : log().drawn) {
        out.push_back({box, text});
    }
    return out;
}

std::vector<TextFitProblem> TextFitLog::take() {
    std::lock_guard<std::mutex> lock(log().mutex);
    log().device = nullptr;
    log().drawn.clear();
    return std::exchange(log().problems, {});
}

double textWidth(const QPainter& painter, const QString& text) {
    return QFontMetricsF(painter.font()).horizontalAdvance(text);
}

QString drawTextFitted(QPainter& painter, const QRectF& rect, int flags, const QString& text) {
    const QFontMetricsF fm(painter.font());
    QString shown = text;
    if ((flags & Qt::TextWordWrap) != 0) {
        const QRectF needed = fm.boundingRect(rect, flags, text);
        if (needed.height() > rect.height() + kSlack || needed.width() > rect.width() + kSlack) {
            // Keep the lines that fit; the last one ends in "…".
            const int lines = std::max(1, static_cast<int>(rect.height() / fm.lineSpacing()));
            QString kept;
            QString rest = text;
            for (int i = 0; i < lines && !rest.isEmpty(); ++i) {
                int cut = static_cast<int>(rest.size());
                while (cut > 0 && fm.horizontalAdvance(rest.left(cut)) > rect.width()) {
                    const int space = static_cast<int>(rest.lastIndexOf(QLatin1Char(' '), cut - 1));
                    cut = space > 0 ? space : cut - 1;
                }
                if (i == lines - 1 || cut == 0) {
                    kept += fm.elidedText(rest.simplified(), Qt::ElideRight, rect.width());
                    rest.clear();
                    break;
                }
                kept += rest.left(cut) + QLatin1Char('\n');
                rest = rest.mid(cut).trimmed();
            }
            shown = kept.trimmed();
            TextFitLog::record({text, shown, deviceRect(painter, rect), needed.height()});
            flags &= ~Qt::TextWordWrap;
        }
    } else {
        QString widest;
        const QStringList lines = text.split(QLatin1Char('\n'));
        QStringList fitted;
        bool cut = false;
        for (const QString& line : lines) {
            const QString elided = fm.elidedText(line, Qt::ElideRight, rect.width() + kSlack);
            cut = cut || elided != line;
            fitted << elided;
            if (fm.horizontalAdvance(line) > fm.horizontalAdvance(widest)) {
                widest = line;
            }
        }
        const bool tooTall = lines.size() * fm.height() > rect.height() + 2;
        if (cut || tooTall) {
            shown = fitted.join(QLatin1Char('\n'));
            TextFitLog::record(
                {text, shown, deviceRect(painter, rect),
                 cut ? fm.horizontalAdvance(widest) : lines.size() * fm.lineSpacing()});
        }
    }
    if (!shown.isEmpty()) {
        const QRectF box = deviceRect(painter, fm.boundingRect(rect, flags, shown));
        checkOverlap(painter, box, text);
        checkShown(painter, box, text, shown);
    }
    painter.drawText(rect, flags, shown);
    return shown;
}

void drawTextFitted(QPainter& painter, const QPointF& baseline, const QString& text) {
    const QFontMetricsF fm(painter.font());
    const QRectF box(baseline.x(), baseline.y() - fm.ascent(), fm.horizontalAdvance(text),
                     fm.ascent() + fm.descent());
    if (painter.device() != nullptr) {
        const QRectF inDevice = deviceRect(painter, box);
        checkOverlap(painter, inDevice, text);
        checkShown(painter, inDevice, text, text);
    }
    painter.drawText(baseline, text);
}

}  // namespace ensemble::ui
