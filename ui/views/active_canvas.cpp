// The Active learning view's pool map: the heatmap of the scores (or the images of the pool),
// the labelled and acquired rows, BatchBALD's greedy gains and the hover read-out. One piece
// because every layer of the map is drawn through the same view transform and selection.
#include "views/active_canvas.h"

#include <QKeyEvent>
#include <QMouseEvent>
#include <QPainter>
#include <QToolTip>
#include <QTransform>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <unordered_set>

#include "render/colormap.h"
#include "render/plot_helpers.h"
#include "render/text_fit.h"

namespace ensemble::ui {

namespace {

constexpr double kMapLeft = 46.0;
constexpr double kMapBottom = 30.0;
constexpr double kMapTop = 10.0;
constexpr double kMapRight = 104.0;  // the colour bar and its labels
// A click labels the pool point within this many pixels of it.
constexpr double kPickRadius = 9.0;

// The markers' size follows the plot's, within bounds.
double markerScale(const QRectF& plot) {
    return std::clamp(plot.width() / 520.0, 0.75, 1.4);
}

const char* acquisitionUnit(Acquisition acquisition) {
    switch (acquisition) {
        case Acquisition::Entropy:
        case Acquisition::Bald:
        case Acquisition::BatchBald:
            return "nats";
        case Acquisition::Random:
        case Acquisition::VariationRatios:
        case Acquisition::Margin:
            return "";
    }
    return "";
}

}  // namespace

QColor acquisitionColor(Acquisition acquisition) {
    switch (acquisition) {
        case Acquisition::Random:
            return {110, 110, 110};
        case Acquisition::Entropy:
            return {46, 134, 193};
        case Acquisition::Bald:
            return {200, 65, 60};
        case Acquisition::VariationRatios:
            return {39, 174, 96};
        case Acquisition::Margin:
            return {142, 68, 173};
        case Acquisition::BatchBald:
            return {211, 84, 0};
    }
    return {0, 0, 0};
}

QString acquisitionLabel(Acquisition acquisition) {
    for (const auto& row : EnumNames<Acquisition>::table) {
        if (row.value == acquisition) {
            return ActiveCanvas::tr(row.label);
        }
    }
    return QString::fromLatin1(toString(acquisition));
}

QString acquisitionScoreTitle(Acquisition acquisition) {
    const QString unit = QLatin1String(acquisitionUnit(acquisition));
    return unit.isEmpty() ? acquisitionLabel(acquisition)
                          : QStringLiteral("%1 [%2]").arg(acquisitionLabel(acquisition), unit);
}

ActiveCanvas::ActiveCanvas(QWidget* parent) : PlotCanvas(parent) {
    setFocusPolicy(Qt::StrongFocus);
    setAttribute(Qt::WA_OpaquePaintEvent);
    setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Expanding);
    setToolTip(
        tr("Click a grey pool point to label it (its true label is revealed). Keys: arrows move "
           "the cursor over the pool by score, Home to the top pick, Enter labels it. The wheel "
           "or + and - zoom, a drag pans, a double-click or 0 shows it all."));
}

void ActiveCanvas::setRun(std::shared_ptr<const RunInfo> run) {
    if (run != m_run) {
        m_run = std::move(run);
        if (m_run) {
            followRun(m_run->members, true);  // another run: another box
        }
        update();
    }
}

void ActiveCanvas::setState(ActiveStatePtr state) {
    m_state = std::move(state);
    m_pixmap = QPixmap();
    m_pixmapFor = 0;
    if (m_cursor >= 0 &&
        (!m_state || !std::binary_search(m_state->pool.begin(), m_state->pool.end(), m_cursor))) {
        m_cursor = -1;  // labelled meanwhile
    }
    update();
}

void ActiveCanvas::setLabelling(bool allowed) {
    m_labelling = allowed;
}

QRectF ActiveCanvas::plotRect() const {
    const QRectF area(kMapLeft, kMapTop, std::max(10.0, width() - kMapLeft - kMapRight),
                      std::max(10.0, height() - kMapTop - kMapBottom));
    if (!m_run || !m_run->hasGrid) {
        return area;
    }
    const GridBounds& b = m_run->bounds;
    return fitAspect(area, (b.xMax - b.xMin) / std::max(1e-12, b.yMax - b.yMin));
}

std::optional<GridBounds> ActiveCanvas::dataBox() const {
    if (!m_run || !m_run->hasGrid) {
        return std::nullopt;
    }
    return m_run->bounds;
}

QPointF ActiveCanvas::rowPosition(int64_t row) const {
    const QRectF plot = plotRect();
    if (!m_run || !m_run->hasGrid || row < 0 || row >= m_run->train.rows) {
        return plot.center();
    }
    const float* x = m_run->train.row(row);
    return toWidget(x[0], x[1], plot);
}

int64_t ActiveCanvas::poolRowAt(const QPointF& pos) const {
    if (!m_state || !m_run || !m_run->hasGrid || !plotRect().contains(pos)) {
        return -1;  // a point zoomed out of the plot is not under the pointer
    }
    int64_t best = -1;
    double bestDistance = kPickRadius * kPickRadius;
    for (int64_t row : m_state->pool) {
        const QPointF d = rowPosition(row) - pos;
        const double distance = QPointF::dotProduct(d, d);
        if (distance <= bestDistance) {
            best = row;
            bestDistance = distance;
        }
    }
    return best;
}

const std::vector<int64_t>& ActiveCanvas::rankedPool() const {
    if (!m_state) {
        m_ranked.clear();
        return m_ranked;
    }
    if (m_rankedFor != m_state->serial) {
        const PoolScores& s = m_state->scores;
        m_ranked = s.rows;
        std::vector<std::size_t> order(s.rows.size());
        for (std::size_t i = 0; i < order.size(); ++i) {
            order[i] = i;
        }
        // Highest first, ties to the lower row (as topScoring picks them), NaN last.
        std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
            const double sa = s.scores[a];
            const double sb = s.scores[b];
            if (std::isnan(sa) != std::isnan(sb)) {
                return std::isnan(sb);
            }
            return sa > sb;
        });
        for (std::size_t i = 0; i < order.size(); ++i) {
            m_ranked[i] = s.rows[order[i]];
        }
        m_rankedFor = m_state->serial;
    }
    return m_ranked;
}

double ActiveCanvas::scoreOf(int64_t row) const {
    if (!m_state) {
        return std::numeric_limits<double>::quiet_NaN();
    }
    const PoolScores& s = m_state->scores;
    const auto at = std::lower_bound(s.rows.begin(), s.rows.end(), row);
    if (at == s.rows.end() || *at != row) {
        return std::numeric_limits<double>::quiet_NaN();
    }
    return s.scores[static_cast<std::size_t>(at - s.rows.begin())];
}

void ActiveCanvas::setCursorRow(int64_t row) {
    if (row != m_cursor) {
        m_cursor = row;
        update();
        Q_EMIT cursorMoved(row);
    }
}

void ActiveCanvas::moveCursor(int by) {
    const std::vector<int64_t>& ranked = rankedPool();
    if (ranked.empty()) {
        return;
    }
    const auto at = std::find(ranked.begin(), ranked.end(), m_cursor);
    std::ptrdiff_t i = at == ranked.end() ? (by > 0 ? -1 : 0) : at - ranked.begin();
    i = std::clamp<std::ptrdiff_t>(i + by, 0, static_cast<std::ptrdiff_t>(ranked.size()) - 1);
    setCursorRow(ranked[static_cast<std::size_t>(i)]);
}

void ActiveCanvas::paintEvent(QPaintEvent* /*event*/) {
    QPainter p(this);
    p.fillRect(rect(), plot::kBackground);
    p.setRenderHint(QPainter::Antialiasing);
    if (!m_run) {
        p.setPen(plot::kMuted);
        drawTextFitted(p, rect(), Qt::AlignCenter, tr("Configure an experiment first."));
        return;
    }
    if (m_run->hasGrid) {
        paintMap(p);
    } else {
        paintDigits(p);
    }
    if (hasFocus()) {
        p.setPen(QPen(palette().highlight().color(), 1.5));
        p.setBrush(Qt::NoBrush);
        p.drawRect(QRectF(rect()).adjusted(0.75, 0.75, -0.75, -0.75));
    }
}

void ActiveCanvas::paintMap(QPainter& p) {
    const QRectF plot = plotRect();
    const RunInfo& run = *m_run;
    if (m_state && m_state->hasGrid && !m_state->heat.image.isNull()) {
        if (m_pixmapFor != m_state->serial || m_pixmap.isNull()) {
            m_pixmap = QPixmap::fromImage(m_state->heat.image);
            m_pixmapFor = m_state->serial;
        }
        p.setRenderHint(QPainter::SmoothPixmapTransform);
        drawGridImage(p, plot, m_pixmap);
        // The ensemble's boundary, in grid units (0..G, row 0 at the top).
        const QTransform toPlot = gridToWidget(run.gridSize, plot);
        QPen pen(QColor(255, 255, 255, 200));
        pen.setWidthF(1.5);
        pen.setStyle(Qt::DashLine);
        p.setPen(pen);
        p.setBrush(Qt::NoBrush);
        for (const QPolygonF& line : m_state->contour) {
            p.drawPolyline(toPlot.map(line));
        }
    } else {
        p.fillRect(plot, QColor(236, 236, 236));
        p.setPen(plot::kMuted);
        drawTextFitted(p, plot.adjusted(8, 8, -8, -8), Qt::AlignCenter | Qt::TextWordWrap,
                       m_state ? tr("Training the round…") : tr("Starting the loop…"));
    }
    p.save();
    p.setClipRect(plot);
    const double scale = markerScale(plot);
    if (m_state) {
        const int classes = std::max(2, run.classes);
        // The pool first, small and grey; the labelled rows over it in their class colours.
        p.setPen(QPen(QColor(60, 60, 60, 150), 0.6));
        p.setBrush(QColor(205, 205, 205, 220));
        for (int64_t row : m_state->pool) {
            p.drawEllipse(rowPosition(row), 2.3 * scale, 2.3 * scale);
        }
        p.setPen(QPen(QColor(255, 255, 255, 230), 1.0));
        for (int64_t row : m_state->labelled) {
            p.setBrush(classColor(run.train.y[static_cast<std::size_t>(row)], classes));
            p.drawEllipse(rowPosition(row), 4.2 * scale, 4.2 * scale);
        }
        // The latest round's picks outlined (numbered below, over everything else).
        p.setBrush(Qt::NoBrush);
        p.setPen(QPen(QColor(20, 20, 20), 1.6));
        for (int64_t row : latestPicks()) {
            p.drawEllipse(rowPosition(row), 5.2 * scale, 5.2 * scale);
        }
        // The next picks: rings in the accent colour.
        p.setPen(QPen(plot::kAccent, 2.2));
        for (int64_t row : m_state->scores.picks) {
            p.drawEllipse(rowPosition(row), 6.5 * scale, 6.5 * scale);
        }
        if (m_cursor >= 0) {
            const QPointF c = rowPosition(m_cursor);
            p.setPen(QPen(Qt::white, 4.0));
            p.drawEllipse(c, 9.0 * scale, 9.0 * scale);
            p.setPen(QPen(Qt::black, 2.0));
            p.drawEllipse(c, 9.0 * scale, 9.0 * scale);
        }
        drawPickNumbers(p);
        paintGains(p, plot.adjusted(4, 4, -4, -4));
    }
    p.restore();
    p.setPen(QPen(plot::kAxis, 1.0));
    p.setBrush(Qt::NoBrush);
    p.drawRect(plot);
    if (m_state && m_state->hasGrid) {
        const double barHeight = std::min(plot.height() - 40.0, 240.0);
        drawColorBar(p, QRectF(plot.right() + 14, plot.top() + 4, 12, std::max(40.0, barHeight)));
    }
}

std::vector<int64_t> ActiveCanvas::latestPicks() const {
    std::vector<int64_t> rows;
    if (m_state) {
        for (const ActiveDigit& d : m_state->lastAcquired) {
            rows.push_back(d.row);
        }
    }
    return rows;
}

int ActiveCanvas::pickNumber(int64_t row) const {
    if (!m_state) {
        return 0;
    }
    const std::vector<ActiveDigit>& picks = m_state->lastAcquired;
    for (std::size_t i = 0; i < picks.size(); ++i) {
        if (picks[i].row == row) {
            return static_cast<int>(i) + 1;
        }
    }
    return 0;
}

QFont ActiveCanvas::pickNumberFont() const {
    QFont f = font();
    f.setPointSizeF(8.0);
    f.setBold(true);
    return f;
}

std::vector<QRectF> ActiveCanvas::pickNumberRects() const {
    const std::vector<int64_t> rows = latestPicks();
    std::vector<QRectF> rects(rows.size());
    if (!m_run || !m_run->hasGrid) {
        return rects;
    }
    const QRectF plot = plotRect();
    const double scale = markerScale(plot);
    const QFontMetricsF fm(pickNumberFont());
    // The markers the numbers keep clear of: every latest pick's, outline included.
    const double marker = 5.2 * scale + 1.0;
    std::vector<QRectF> markers;
    for (int64_t row : rows) {
        const QPointF c = rowPosition(row);
        markers.emplace_back(c.x() - marker, c.y() - marker, 2 * marker, 2 * marker);
    }
    // Eight directions around the marker, right first, then the same twice as far out.
    static constexpr std::array<std::array<double, 2>, 8> kDirections{
        {{1, -1}, {1, 1}, {-1, -1}, {-1, 1}, {1, 0}, {-1, 0}, {0, -1}, {0, 1}}};
    std::vector<QRectF> placed;
    const auto overlap = [](const QRectF& a, const QRectF& b) {
        const QRectF i = a.intersected(b);
        return i.isEmpty() ? 0.0 : i.width() * i.height();
    };
    for (std::size_t i = 0; i < rows.size(); ++i) {
        const QPointF c = rowPosition(rows[i]);
        if (!plot.contains(c)) {
            continue;  // zoomed out of sight: no number
        }
        const QString text = QString::number(i + 1);
        const QSizeF size(fm.horizontalAdvance(text) + 5.0, fm.height() + 1.0);
        QRectF best;
        double bestCost = std::numeric_limits<double>::infinity();
        for (double distance : {marker + 1.0, 2.6 * marker + 2.0}) {
            for (const auto& d : kDirections) {
                const QPointF centre(c.x() + d[0] * (distance + size.width() / 2),
                                     c.y() + d[1] * (distance + size.height() / 2));
                const QRectF r(centre - QPointF(size.width() / 2, size.height() / 2), size);
                double cost = plot.contains(r) ? 0.0 : 1e9;
                for (const QRectF& other : placed) {
                    cost += 10.0 * overlap(r, other);
                }
                for (std::size_t j = 0; j < markers.size(); ++j) {
                    cost += j == i ? 0.0 : overlap(r, markers[j]);
                }
                if (cost < bestCost) {
                    best = r;
                    bestCost = cost;
                }
            }
            if (bestCost == 0.0) {
                break;  // clear beside the marker: no need to go further out
            }
        }
        rects[i] = best;
        placed.push_back(best);
    }
    return rects;
}

void ActiveCanvas::drawPickNumbers(QPainter& p) const {
    const std::vector<int64_t> rows = latestPicks();
    const std::vector<QRectF> rects = pickNumberRects();
    p.setFont(pickNumberFont());
    const double marker = 5.2 * markerScale(plotRect()) + 1.0;
    for (std::size_t i = 0; i < rows.size(); ++i) {
        const QRectF& r = rects[i];
        if (r.isEmpty()) {
            continue;
        }
        const QPointF c = rowPosition(rows[i]);
        // A number set further out than beside its marker points at it.
        const QPointF near(std::clamp(c.x(), r.left(), r.right()),
                           std::clamp(c.y(), r.top(), r.bottom()));
        const QPointF gap = near - c;
        const double length = std::hypot(gap.x(), gap.y());
        if (length > 1.5 * marker + 2.0) {
            p.setPen(QPen(QColor(20, 20, 20, 200), 1.0));
            p.drawLine(c + gap * (marker / length), near);
        }
        p.setPen(QPen(QColor(20, 20, 20, 200), 0.8));
        p.setBrush(QColor(255, 255, 255, 230));
        p.drawRoundedRect(r, 3.0, 3.0);
        p.setPen(QColor(20, 20, 20));
        drawTextFitted(p, r, Qt::AlignCenter, QString::number(i + 1));
    }
    p.setBrush(Qt::NoBrush);
}

void ActiveCanvas::drawColorBar(QPainter& p, const QRectF& bar) const {
    const HeatImage& h = m_state->heat;
    QFont font = p.font();
    font.setPointSizeF(8.5);
    p.setFont(font);
    const QFontMetricsF fm(font);
    p.drawImage(bar, colorStrip(sequentialColor, static_cast<int>(bar.height()), true));
    p.setPen(QPen(plot::kAxis, 0.8));
    p.setBrush(Qt::NoBrush);
    p.drawRect(bar);
    if (h.high > h.low) {
        const std::vector<double> ticks = niceTicks(h.low, h.high, 4);
        const QStringList labels = tickLabels(ticks);
        for (std::size_t i = 0; i < ticks.size(); ++i) {
            const double y = bar.bottom() - (ticks[i] - h.low) / (h.high - h.low) * bar.height();
            p.setPen(QPen(plot::kAxis, 1.0));
            p.drawLine(QPointF(bar.right(), y), QPointF(bar.right() + 3, y));
            p.setPen(plot::kText);
            drawTextFitted(p, QPointF(bar.right() + 5, y + fm.ascent() / 2 - 1),
                           labels[static_cast<qsizetype>(i)]);
        }
    }
    p.setPen(plot::kText);
    // The function's label along the bar, its short name where the bar is too short for it.
    QString title = acquisitionLabel(m_state->acquisition);
    if (fm.horizontalAdvance(title) > bar.height() + 30) {
        title = QLatin1String(toString(m_state->acquisition));
    }
    drawVerticalText(p, QPointF(bar.right() + 50, bar.center().y()), title);
    p.setPen(plot::kMuted);
    const QString unit = QLatin1String(acquisitionUnit(m_state->acquisition));
    // Below the bottom tick's label, which reaches half a line under the bar.
    drawTextFitted(p, QRectF(bar.left() - 6, bar.bottom() + fm.height(), 80, 34), Qt::TextWordWrap,
                   unit.isEmpty() ? tr("score") : tr("score, %1").arg(unit));
}

void ActiveCanvas::paintDigits(QPainter& p) {
    const QRectF whole = QRectF(rect()).adjusted(8, 8, -8, -8);
    paintGains(p, whole);
    const QRectF area = whole.adjusted(0, 0, 0, -gainsHeight());
    p.setPen(plot::kText);
    if (!m_state || m_state->lastAcquired.empty()) {
        p.setPen(plot::kMuted);
        drawTextFitted(p, area, Qt::AlignCenter | Qt::TextWordWrap,
                       !m_state ? tr("Starting the loop…")
                                : tr("No row acquired yet: Acquire or Play labels the pool's "
                                     "highest-scoring rows, and they show here."));
        return;
    }
    QFont font = p.font();
    font.setPointSizeF(8.5);
    p.setFont(font);
    const QFontMetricsF fm(font);
    const std::vector<ActiveDigit>& digits = m_state->lastAcquired;
    drawTextFitted(p, QRectF(area.left(), area.top(), area.width(), fm.height() + 2), Qt::AlignLeft,
                   tr("Acquired last: %1 rows (label · score)").arg(digits.size()));
    const QRectF grid = area.adjusted(0, fm.height() + 8, 0, 0);
    if (!m_run->isImage) {
        // Table rows have no picture: one line each.
        double y = grid.top();
        for (const ActiveDigit& d : digits) {
            if (y + fm.height() > grid.bottom()) {
                break;
            }
            drawTextFitted(p, QRectF(grid.left(), y, grid.width(), fm.height() + 2), Qt::AlignLeft,
                           tr("row %1 · label %2 · %3")
                               .arg(d.row)
                               .arg(d.label)
                               .arg(std::isnan(d.score) ? tr("picked") : formatValue(d.score)));
            y += fm.height() + 3;
        }
        return;
    }
    const int n = static_cast<int>(digits.size());
    const double caption = fm.height() + 4;
    // The largest square cells (image + caption) that fit every digit.
    int columns = 1;
    double cell = 0.0;
    for (int c = 1; c <= n; ++c) {
        const int rows = (n + c - 1) / c;
        const double side = std::min(grid.width() / c, grid.height() / rows - caption);
        if (side > cell) {
            cell = side;
            columns = c;
        }
    }
    cell = std::max(cell, 8.0);
    p.setRenderHint(QPainter::SmoothPixmapTransform, false);
    for (int i = 0; i < n; ++i) {
        const ActiveDigit& d = digits[static_cast<std::size_t>(i)];
        const double x = grid.left() + (i % columns) * cell;
        const double y = grid.top() + (i / columns) * (cell + caption);
        const QRectF box(x + 3, y + 3, cell - 6, cell - 6);
        if (!d.image.isNull()) {
            p.drawImage(box, d.image);
        } else {
            p.fillRect(box, QColor(236, 236, 236));
        }
        p.setPen(QPen(plot::kAxis, 0.8));
        p.drawRect(box);
        p.setPen(plot::kText);
        const QString score = std::isnan(d.score) ? tr("picked") : formatValue(d.score);
        drawTextFitted(p, QRectF(x, y + cell - 2, cell, caption), Qt::AlignHCenter,
                       QStringLiteral("%1 · %2").arg(d.label).arg(score));
    }
}

namespace {
constexpr double kGainBarsHeight = 36.0;
}  // namespace

double ActiveCanvas::gainsHeight() const {
    if (!m_state || m_state->acquisition != Acquisition::BatchBald ||
        m_state->scores.pickScores.empty()) {
        return 0.0;
    }
    return kGainBarsHeight + 2.0 * QFontMetricsF(font()).height() + 14.0;
}

void ActiveCanvas::paintGains(QPainter& p, const QRectF& area) const {
    const double height = gainsHeight();
    if (height <= 0.0 || area.height() < height) {
        return;
    }
    const std::vector<double>& gains = m_state->scores.pickScores;
    const std::vector<double>& joint = m_state->scores.joint;
    p.save();
    p.setFont(font());
    const QFontMetricsF fm(font());
    const QString title = tr("next picks' greedy gains, nats");
    const QString bound =
        tr("joint %1 of at most log K = %2")
            .arg(formatValue(joint.empty() ? 0.0 : joint.back()))
            .arg(formatValue(std::log(static_cast<double>(std::max(1, m_run->members)))));
    const double bar = 10.0;
    const double gap = 3.0;
    const double width = std::min(
        area.width(), 12.0 + std::max({static_cast<double>(gains.size()) * (bar + gap),
                                       fm.horizontalAdvance(title), fm.horizontalAdvance(bound)}));
    const QRectF box(area.left(), area.bottom() - height, width, height);
    p.setPen(QPen(plot::kAxis, 0.8));
    p.setBrush(QColor(255, 255, 255, 225));
    p.drawRect(box);
    p.setPen(plot::kText);
    drawTextFitted(p, QRectF(box.left() + 6, box.top() + 3, box.width() - 8, fm.height()),
                   Qt::AlignLeft, title);
    double top = 0.0;
    for (double g : gains) {
        top = std::max(top, std::isfinite(g) ? g : 0.0);
    }
    const double base = box.top() + fm.height() + 6.0 + kGainBarsHeight;
    p.setPen(Qt::NoPen);
    p.setBrush(acquisitionColor(Acquisition::BatchBald));
    for (std::size_t i = 0; i < gains.size(); ++i) {
        const double g = std::isfinite(gains[i]) ? std::max(gains[i], 0.0) : 0.0;
        const double h = top > 0.0 ? std::max(1.0, g / top * kGainBarsHeight) : 1.0;
        p.drawRect(QRectF(box.left() + 6 + static_cast<double>(i) * (bar + gap), base - h, bar, h));
    }
    p.setPen(plot::kMuted);
    drawTextFitted(p, QRectF(box.left() + 6, base + 2, box.width() - 8, fm.height()), Qt::AlignLeft,
                   bound);
    p.restore();
}

void ActiveCanvas::mousePressEvent(QMouseEvent* event) {
    setFocus(Qt::MouseFocusReason);
    const int64_t row = event->button() == Qt::LeftButton && m_labelling
                            ? poolRowAt(event->position())
                            : int64_t{-1};
    if (row >= 0) {
        setCursorRow(row);
        Q_EMIT labelRequested(row);
        return;
    }
    PlotCanvas::mousePressEvent(event);  // off a pool point: a drag pans a zoomed map
}

void ActiveCanvas::hover(const QPointF& pos, const QPoint& globalPos) {
    const int64_t row = isPanning() ? int64_t{-1} : poolRowAt(pos);
    if (row < 0) {
        m_hoverText.clear();
        QToolTip::hideText();
        return;
    }
    const float* x = m_run->train.row(row);
    const double score = scoreOf(row);
    m_hoverText = tr("pool row %1 at (%2, %3)\n%4 = %5\nclick: label it")
                      .arg(row)
                      .arg(x[0], 0, 'f', 3)
                      .arg(x[1], 0, 'f', 3)
                      .arg(acquisitionLabel(m_state->acquisition),
                           std::isnan(score) ? tr("not scored") : formatValue(score));
    QToolTip::showText(globalPos, m_hoverText, this);
}

void ActiveCanvas::leaveEvent(QEvent* /*event*/) {
    m_hoverText.clear();
    QToolTip::hideText();
}

void ActiveCanvas::keyPressEvent(QKeyEvent* event) {
    switch (event->key()) {
        case Qt::Key_Right:
        case Qt::Key_Down:
            moveCursor(1);
            return;
        case Qt::Key_Left:
        case Qt::Key_Up:
            moveCursor(-1);
            return;
        case Qt::Key_Home:
            moveCursor(-static_cast<int>(rankedPool().size()));
            return;
        case Qt::Key_Return:
        case Qt::Key_Enter:
            if (m_cursor >= 0 && m_labelling) {
                Q_EMIT labelRequested(m_cursor);
            }
            return;
        default:
            PlotCanvas::keyPressEvent(event);  // + - 0 zoom
    }
}

}  // namespace ensemble::ui
