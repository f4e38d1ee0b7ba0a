// The Images view for image datasets: the test images the ensemble finds hardest or most
// uncertain, a pad to draw a digit on, and the confusion matrix. One piece because
// the three panes read the same snapshot and class names.
#include "views/images_view.h"

#include <QHBoxLayout>
#include <QHelpEvent>
#include <QLabel>
#include <QMouseEvent>
#include <QPainter>
#include <QPushButton>
#include <QScrollArea>
#include <QSplitter>
#include <QToolTip>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "render/colormap.h"
#include "render/plot_helpers.h"
#include "render/text_fit.h"
#include "widgets/lazy_refresh.h"
#include "widgets/reflow_row.h"

namespace ensemble::ui {

namespace {

constexpr int kInkSize = 280;
constexpr int kMaxShown = 60;
constexpr int kCellImage = 56;
constexpr int kCellWidth = 68;
constexpr int kCellHeight = kCellImage + 32;

}  // namespace

QStringList classNames(const RunInfo& run) {
    QStringList names;
    // Names exist for the kind's own class count (classNames has `classes` entries).
    const DatasetKindInfo& kind = datasetKindInfo(run.config.dataset.kind);
    if (kind.classNames != nullptr && run.classes == kind.classes) {
        for (int c = 0; c < run.classes; ++c) {
            names << QString::fromUtf8(kind.classNames[c]);
        }
        return names;
    }
    for (int c = 0; c < run.classes; ++c) {
        names << QString::number(c);
    }
    return names;
}

std::vector<float> inkToPixels(const QImage& inkIn, int width, int height, int fit) {
    std::vector<float> out(static_cast<std::size_t>(width) * height, 0.0f);
    const QImage ink = inkIn.convertToFormat(QImage::Format_Grayscale8);
    int x0 = ink.width();
    int y0 = ink.height();
    int x1 = -1;
    int y1 = -1;
    for (int y = 0; y < ink.height(); ++y) {
        const uchar* line = ink.constScanLine(y);
        for (int x = 0; x < ink.width(); ++x) {
            if (line[x] > 10) {
                x0 = std::min(x0, x);
                y0 = std::min(y0, y);
                x1 = std::max(x1, x);
                y1 = std::max(y1, y);
            }
        }
    }
    if (x1 < 0) {
        return out;
    }
    const QImage scaled = ink.copy(QRect(QPoint(x0, y0), QPoint(x1, y1)))
                              .scaled(fit, fit, Qt::KeepAspectRatio, Qt::SmoothTransformation)
                              .convertToFormat(QImage::Format_Grayscale8);
    double mass = 0.0;
    double cx = 0.0;
    double cy = 0.0;
    for (int y = 0; y < scaled.height(); ++y) {
        const uchar* line = scaled.constScanLine(y);
        for (int x = 0; x < scaled.width(); ++x) {
            mass += line[x];
            cx += (x + 0.5) * line[x];
            cy += (y + 0.5) * line[x];
        }
    }
    if (mass <= 0.0) {
        return out;
    }
    cx /= mass;
    cy /= mass;
    const int ox = std::clamp(static_cast<int>(std::lround(width / 2.0 - cx)), 0,
                              std::max(0, width - scaled.width()));
    const int oy = std::clamp(static_cast<int>(std::lround(height / 2.0 - cy)), 0,
                              std::max(0, height - scaled.height()));
    for (int y = 0; y < scaled.height() && y + oy < height; ++y) {
        const uchar* line = scaled.constScanLine(y);
        for (int x = 0; x < scaled.width() && x + ox < width; ++x) {
            out[static_cast<std::size_t>(y + oy) * width + (x + ox)] = line[x];
        }
    }
    return out;
}

// --- UncertainImages ---------------------------------------------------------------------

UncertainImages::UncertainImages(QWidget* parent) : QWidget(parent) {
    QSizePolicy policy(QSizePolicy::Preferred, QSizePolicy::Preferred);
    policy.setHeightForWidth(true);
    setSizePolicy(policy);
}

int UncertainImages::columns(int width) const {
    return std::max(1, (width - 8) / kCellWidth);
}

int UncertainImages::heightForWidth(int width) const {
    const int n = static_cast<int>(m_rows.size());
    return 8 + (n + columns(width) - 1) / columns(width) * kCellHeight;
}

int UncertainImages::rowHeight() {
    return 8 + kCellHeight;
}

QRect UncertainImages::cellRect(int index) const {
    const int cols = columns(width());
    return {4 + (index % cols) * kCellWidth, 4 + (index / cols) * kCellHeight, kCellWidth,
            kCellHeight};
}

void UncertainImages::setSnapshot(SnapshotPtr snapshot) {
    m_snapshot = std::move(snapshot);
    m_rows.clear();
    if (m_snapshot && m_snapshot->run->runId != m_imagesFor) {
        m_imagesFor = m_snapshot->run->runId;
        m_images.assign(static_cast<std::size_t>(m_snapshot->run->evalTest.rows), QImage());
    }
    if (m_snapshot && m_snapshot->hasEnsemble && m_snapshot->run->isImage) {
        const PointStatistics& t = m_snapshot->test;
        std::vector<int64_t> order(static_cast<std::size_t>(t.rows));
        std::iota(order.begin(), order.end(), 0);
        const std::size_t shown = std::min<std::size_t>(order.size(), kMaxShown);
        std::partial_sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(shown),
                          order.end(), [&t](int64_t a, int64_t b) {
                              const double ea = t.epistemic[static_cast<std::size_t>(a)];
                              const double eb = t.epistemic[static_cast<std::size_t>(b)];
                              return ea != eb ? ea > eb
                                              : t.total[static_cast<std::size_t>(a)] >
                                                    t.total[static_cast<std::size_t>(b)];
                          });
        order.resize(shown);
        m_rows = std::move(order);
    }
    setMinimumHeight(heightForWidth(width()));
    updateGeometry();
    update();
}

void UncertainImages::paintEvent(QPaintEvent* /*event*/) {
    QPainter p(this);
    p.fillRect(rect(), Qt::white);
    if (!m_snapshot || m_rows.empty()) {
        p.setPen(plot::kMuted);
        drawTextFitted(p, rect(), Qt::AlignCenter, tr("No ensemble predictions yet."));
        return;
    }
    const Snapshot& s = *m_snapshot;
    const RunInfo& run = *s.run;
    const int w = run.imageWidth > 0 ? run.imageWidth : 28;
    const int h = run.imageHeight > 0 ? run.imageHeight : 28;
    const QStringList names = classNames(run);
    QFont small = font();
    small.setPointSizeF(7.5);
    p.setFont(small);
    const int64_t rows = run.evalTest.rows;
    for (int index = 0; index < static_cast<int>(m_rows.size()); ++index) {
        const int64_t i = m_rows[static_cast<std::size_t>(index)];
        const QRect cell = cellRect(index);
        QImage& image = m_images[static_cast<std::size_t>(i)];
        if (image.isNull()) {
            image = QImage(w, h, QImage::Format_Grayscale8);
            const float* px = run.evalTest.row(i);
            for (int y = 0; y < h; ++y) {
                uchar* line = image.scanLine(y);
                for (int x = 0; x < w; ++x) {
                    line[x] = static_cast<uchar>(255 - std::clamp(px[y * w + x], 0.0f, 255.0f));
                }
            }
        }
        const QRect imageRect(cell.left() + (kCellWidth - kCellImage) / 2, cell.top() + 2,
                              kCellImage, kCellImage);
        p.drawImage(imageRect, image);
        const int label = run.evalTest.y[static_cast<std::size_t>(i)];
        const int predicted = s.test.predicted[static_cast<std::size_t>(i)];
        p.setPen(QPen(predicted == label ? QColor(200, 200, 200) : QColor(192, 57, 43), 1));
        p.setBrush(Qt::NoBrush);
        p.drawRect(imageRect.adjusted(0, 0, -1, -1));
        // Votes of the included members, as a bar of class colours.
        std::vector<int> votes(static_cast<std::size_t>(run.classes), 0);
        int total = 0;
        for (int k = 0; k < run.members; ++k) {
            if (s.included[static_cast<std::size_t>(k)]) {
                ++votes[static_cast<std::size_t>(
                    s.memberPredicted[static_cast<std::size_t>(k) * rows + i])];
                ++total;
            }
        }
        const QRect voteBar(imageRect.left(), imageRect.bottom() + 3, imageRect.width(), 5);
        double x = voteBar.left();
        for (int c = 0; c < run.classes && total > 0; ++c) {
            const double span = voteBar.width() * votes[static_cast<std::size_t>(c)] / total;
            if (span > 0) {
                p.fillRect(QRectF(x, voteBar.top(), span, voteBar.height()),
                           classColor(c, run.classes));
                x += span;
            }
        }
        p.setPen(predicted == label ? plot::kText : QColor(192, 57, 43));
        drawTextFitted(p, QRect(cell.left(), voteBar.bottom() + 1, kCellWidth, 14), Qt::AlignCenter,
                       predicted == label ? names.value(predicted)
                                          : QStringLiteral("%1 ≠ %2").arg(names.value(predicted),
                                                                          names.value(label)));
    }
}

bool UncertainImages::event(QEvent* event) {
    if (event->type() == QEvent::ToolTip && m_snapshot) {
        auto* help = static_cast<QHelpEvent*>(event);
        for (int index = 0; index < static_cast<int>(m_rows.size()); ++index) {
            if (!cellRect(index).contains(help->pos())) {
                continue;
            }
            const Snapshot& s = *m_snapshot;
            const RunInfo& run = *s.run;
            const QStringList names = classNames(run);
            const int64_t i = m_rows[static_cast<std::size_t>(index)];
            const std::size_t iu = static_cast<std::size_t>(i);
            std::vector<int> votes(static_cast<std::size_t>(run.classes), 0);
            for (int k = 0; k < run.members; ++k) {
                if (s.included[static_cast<std::size_t>(k)]) {
                    ++votes[static_cast<std::size_t>(
                        s.memberPredicted[static_cast<std::size_t>(k) * run.evalTest.rows + i])];
                }
            }
            QStringList voteText;
            for (int c = 0; c < run.classes; ++c) {
                if (votes[static_cast<std::size_t>(c)] > 0) {
                    voteText << QStringLiteral("%1: %2")
                                    .arg(names.value(c))
                                    .arg(votes[static_cast<std::size_t>(c)]);
                }
            }
            const int predicted = s.test.predicted[iu];
            QToolTip::showText(
                help->globalPos(),
                tr("test image %1\nensemble: %2 (p = %3), true: %4\nvotes: %5\nepistemic %6, "
                   "total %7 nats")
                    .arg(i)
                    .arg(names.value(predicted))
                    .arg(s.test.confidence[iu], 0, 'f', 3)
                    .arg(names.value(run.evalTest.y[iu]))
                    .arg(voteText.join(QStringLiteral(", ")))
                    .arg(s.test.epistemic[iu], 0, 'f', 3)
                    .arg(s.test.total[iu], 0, 'f', 3),
                this);
            return true;
        }
        QToolTip::hideText();
        return true;
    }
    return QWidget::event(event);
}

// --- ConfusionMatrix ----------------------------------------------------------------------

ConfusionMatrix::ConfusionMatrix(QWidget* parent) : QWidget(parent) {
    setMinimumSize(240, 220);
}

void ConfusionMatrix::setSnapshot(SnapshotPtr snapshot) {
    m_snapshot = std::move(snapshot);
    update();
}

void ConfusionMatrix::paintEvent(QPaintEvent* /*event*/) {
    QPainter p(this);
    p.fillRect(rect(), plot::kBackground);
    if (!m_snapshot || !m_snapshot->hasEnsemble) {
        return;
    }
    const Snapshot& s = *m_snapshot;
    const int c = s.run->classes;
    const QStringList names = classNames(*s.run);
    QFont small = font();
    small.setPointSizeF(7.5);
    p.setFont(small);
    const double left = 62;
    const double top = 22;
    const double side = std::min(width() - left - 10, height() - top - 46);
    const double cell = side / c;
    m_cells = QRectF(left, top, side, side);
    p.setPen(plot::kText);
    drawTextFitted(p, QPointF(left, 14),
                   tr("Confusion (test, ensemble)  rows: true · columns: predicted"));
    // Counts only where every one fits its cell ("1124" in a 20 px cell does not): the
    // colours carry the shares, the tooltip the numbers.
    int64_t largest = 0;
    for (int64_t n : s.confusion) {
        largest = std::max(largest, n);
    }
    const bool showCounts = cell >= 14 && textWidth(p, QString::number(largest)) + 2 <= cell;
    for (int t = 0; t < c; ++t) {
        int64_t rowTotal = 0;
        for (int q = 0; q < c; ++q) {
            rowTotal += s.confusion[static_cast<std::size_t>(t) * c + q];
        }
        for (int q = 0; q < c; ++q) {
            const int64_t n = s.confusion[static_cast<std::size_t>(t) * c + q];
            const double share = rowTotal > 0 ? static_cast<double>(n) / rowTotal : 0.0;
            const QRectF r(left + q * cell, top + t * cell, cell, cell);
            QColor color = t == q ? QColor(42, 111, 184) : QColor(200, 65, 60);
            const double a = t == q ? share : std::min(1.0, share * 4);
            p.fillRect(r, QColor::fromRgbF(1 - a * (1 - color.redF()), 1 - a * (1 - color.greenF()),
                                           1 - a * (1 - color.blueF())));
            if (n > 0 && showCounts) {
                p.setPen(a > 0.6 ? Qt::white : plot::kText);
                drawTextFitted(p, r, Qt::AlignCenter, QString::number(n));
            }
        }
        p.setPen(plot::kText);
        drawTextFitted(p, QRectF(0, top + t * cell, left - 6, cell),
                       Qt::AlignRight | Qt::AlignVCenter, names.value(t));
    }
    p.setPen(QPen(QColor(220, 220, 220), 1));
    for (int i = 0; i <= c; ++i) {
        p.drawLine(QPointF(left + i * cell, top), QPointF(left + i * cell, top + side));
        p.drawLine(QPointF(left, top + i * cell), QPointF(left + side, top + i * cell));
    }
    p.setPen(plot::kText);
    for (int q = 0; q < c; ++q) {
        p.save();
        p.translate(left + (q + 0.5) * cell, top + side + 4);
        if (c > 10 || names.value(q).size() > 2) {
            p.rotate(45);
            drawTextFitted(p, QPointF(0, 8), names.value(q));
        } else {
            drawTextFitted(p, QRectF(-cell / 2, 0, cell, 14), Qt::AlignHCenter | Qt::AlignTop,
                           names.value(q));
        }
        p.restore();
    }
}

bool ConfusionMatrix::event(QEvent* event) {
    if (event->type() != QEvent::ToolTip || !m_snapshot || !m_snapshot->hasEnsemble ||
        m_cells.isEmpty()) {
        return QWidget::event(event);
    }
    const auto* help = static_cast<QHelpEvent*>(event);
    const Snapshot& s = *m_snapshot;
    const int c = s.run->classes;
    if (!m_cells.contains(help->pos()) || c <= 0) {
        QToolTip::hideText();
        return true;
    }
    const double cell = m_cells.width() / c;
    const int q = std::clamp(static_cast<int>((help->pos().x() - m_cells.left()) / cell), 0, c - 1);
    const int t = std::clamp(static_cast<int>((help->pos().y() - m_cells.top()) / cell), 0, c - 1);
    int64_t rowTotal = 0;
    for (int j = 0; j < c; ++j) {
        rowTotal += s.confusion[static_cast<std::size_t>(t) * c + j];
    }
    const int64_t n = s.confusion[static_cast<std::size_t>(t) * c + q];
    const QStringList names = classNames(*s.run);
    QToolTip::showText(
        help->globalPos(),
        tr("true %1, predicted %2: %3 of %4 (%5 %)")
            .arg(names.value(t), names.value(q), formatCount(n), formatCount(rowTotal))
            .arg(rowTotal > 0 ? 100.0 * n / rowTotal : 0.0, 0, 'f', 1),
        this);
    return true;
}

// --- DigitCanvas -------------------------------------------------------------------------

DigitCanvas::DigitCanvas(QWidget* parent) : QWidget(parent) {
    m_ink = QImage(kInkSize, kInkSize, QImage::Format_Grayscale8);
    m_ink.fill(0);
    setCursor(Qt::CrossCursor);
    setSizePolicy(QSizePolicy::Fixed, QSizePolicy::Fixed);
    setFixedSize(224, 224);
}

void DigitCanvas::clear() {
    m_ink.fill(0);
    m_empty = true;
    update();
    Q_EMIT changed();
}

QPointF DigitCanvas::toInk(const QPointF& p) const {
    return {p.x() * kInkSize / width(), p.y() * kInkSize / height()};
}

void DigitCanvas::drawStroke(const QList<QPointF>& points) {
    if (points.isEmpty()) {
        return;
    }
    QPainter p(&m_ink);
    p.setRenderHint(QPainter::Antialiasing);
    p.setPen(QPen(Qt::white, 22, Qt::SolidLine, Qt::RoundCap, Qt::RoundJoin));
    if (points.size() == 1) {
        p.drawPoint(toInk(points.first()));
    }
    for (int i = 1; i < points.size(); ++i) {
        p.drawLine(toInk(points.at(i - 1)), toInk(points.at(i)));
    }
    m_empty = false;
    update();
    Q_EMIT changed();
}

void DigitCanvas::paintEvent(QPaintEvent* /*event*/) {
    QPainter p(this);
    QImage shown = m_ink;
    shown.invertPixels();
    p.setRenderHint(QPainter::SmoothPixmapTransform);
    p.drawImage(rect(), shown);
    p.setPen(QPen(QColor(170, 170, 170), 1));
    p.drawRect(rect().adjusted(0, 0, -1, -1));
    if (m_empty) {
        p.setPen(plot::kMuted);
        drawTextFitted(p, rect(), Qt::AlignCenter, tr("draw a digit here"));
    }
}

void DigitCanvas::mousePressEvent(QMouseEvent* event) {
    m_last = event->position();
    drawStroke({m_last});
}

void DigitCanvas::mouseMoveEvent(QMouseEvent* event) {
    if (event->buttons() & Qt::LeftButton) {
        drawStroke({m_last, event->position()});
        m_last = event->position();
    }
}

// --- PredictionBars ----------------------------------------------------------------------

PredictionBars::PredictionBars(QWidget* parent) : QWidget(parent) {
    setMinimumSize(260, 180);
}

void PredictionBars::setPrediction(std::vector<double> probs, int members, int classes,
                                   std::vector<uint8_t> included, QStringList names) {
    m_probs = std::move(probs);
    m_members = members;
    m_classes = classes;
    m_included = std::move(included);
    m_names = std::move(names);
    m_ensemble.assign(static_cast<std::size_t>(classes), 0.0);
    int used = 0;
    for (int k = 0; k < members; ++k) {
        if (static_cast<std::size_t>(k) < m_included.size() &&
            !m_included[static_cast<std::size_t>(k)]) {
            continue;
        }
        ++used;
        for (int c = 0; c < classes; ++c) {
            m_ensemble[static_cast<std::size_t>(c)] +=
                m_probs[static_cast<std::size_t>(k) * classes + c];
        }
    }
    for (double& v : m_ensemble) {
        v = used > 0 ? v / used : 0.0;
    }
    if (used == 0) {
        m_ensemble.clear();
    }
    update();
}

void PredictionBars::clearPrediction() {
    m_probs.clear();
    m_ensemble.clear();
    update();
}

void PredictionBars::paintEvent(QPaintEvent* /*event*/) {
    QPainter p(this);
    p.fillRect(rect(), plot::kBackground);
    p.setRenderHint(QPainter::Antialiasing);
    QFont small = font();
    small.setPointSizeF(8);
    p.setFont(small);
    if (m_ensemble.empty()) {
        p.setPen(plot::kMuted);
        drawTextFitted(p, rect(), Qt::AlignCenter,
                       tr("Draw on the canvas to see every member's\n"
                          "probabilities and the ensemble's."));
        return;
    }
    const int best = static_cast<int>(std::max_element(m_ensemble.begin(), m_ensemble.end()) -
                                      m_ensemble.begin());
    int agree = 0;
    int used = 0;
    for (int k = 0; k < m_members; ++k) {
        if (static_cast<std::size_t>(k) < m_included.size() &&
            !m_included[static_cast<std::size_t>(k)]) {
            continue;
        }
        ++used;
        const double* row = m_probs.data() + static_cast<std::size_t>(k) * m_classes;
        agree += static_cast<int>(std::max_element(row, row + m_classes) - row) == best;
    }
    QFont bold = small;
    bold.setBold(true);
    p.setFont(bold);
    p.setPen(plot::kText);
    // The verdict wraps onto a second line beside a narrow canvas.
    const QString verdict = tr("ensemble %1 (p %2) · %3/%4 members agree")
                                .arg(m_names.value(best))
                                .arg(m_ensemble[static_cast<std::size_t>(best)], 0, 'f', 3)
                                .arg(agree)
                                .arg(used);
    const QRectF titleRoom(8, 4, width() - 16, 2 * QFontMetricsF(bold).lineSpacing());
    const double titleHeight =
        QFontMetricsF(bold).boundingRect(titleRoom, Qt::TextWordWrap, verdict).height();
    drawTextFitted(p, titleRoom, Qt::AlignLeft | Qt::AlignTop | Qt::TextWordWrap, verdict);
    p.setFont(small);
    const double areaTop = 4 + titleHeight + 10;
    const QRectF area(34, areaTop, width() - 44, height() - areaTop - 30);
    p.setPen(QPen(plot::kGrid, 1));
    for (double t : {0.0, 0.25, 0.5, 0.75, 1.0}) {
        const double y = area.bottom() - t * area.height();
        p.drawLine(QPointF(area.left(), y), QPointF(area.right(), y));
    }
    p.setPen(plot::kMuted);
    const std::vector<double> ticks{0.0, 0.5, 1.0};
    const QStringList tickText = tickLabels(ticks);
    for (std::size_t i = 0; i < ticks.size(); ++i) {
        const double t = ticks[i];
        drawTextFitted(p, QRectF(0, area.bottom() - t * area.height() - 7, area.left() - 4, 14),
                       Qt::AlignRight | Qt::AlignVCenter, tickText[static_cast<int>(i)]);
    }
    const double column = area.width() / m_classes;
    for (int c = 0; c < m_classes; ++c) {
        const double x0 = area.left() + c * column;
        const double pe = m_ensemble[static_cast<std::size_t>(c)];
        const QRectF bar(x0 + column * 0.18, area.bottom() - pe * area.height(), column * 0.64,
                         pe * area.height());
        p.fillRect(bar, c == best ? plot::kAccent : QColor(74, 127, 181));
        // Every member's probability of the class as a tick.
        p.setPen(QPen(QColor(20, 20, 20, m_members > 20 ? 90 : 170), 1.4));
        for (int k = 0; k < m_members; ++k) {
            if (static_cast<std::size_t>(k) < m_included.size() &&
                !m_included[static_cast<std::size_t>(k)]) {
                continue;
            }
            const double v = m_probs[static_cast<std::size_t>(k) * m_classes + c];
            const double y = area.bottom() - v * area.height();
            p.drawLine(QPointF(x0 + column * 0.1, y), QPointF(x0 + column * 0.9, y));
        }
        p.setPen(c == best ? plot::kText : plot::kMuted);
        drawTextFitted(p, QRectF(x0, area.bottom() + 4, column, 14), Qt::AlignCenter,
                       QFontMetrics(small).elidedText(m_names.value(c), Qt::ElideRight,
                                                      static_cast<int>(column)));
    }
    p.setPen(plot::kMuted);
    drawTextFitted(p, QRectF(area.left(), height() - 14, area.width(), 14), Qt::AlignLeft,
                   tr("bars: ensemble · ticks: each member"));
}

// --- ImagesView --------------------------------------------------------------------------

ImagesView::ImagesView(QWidget* parent) : QWidget(parent) {
    m_lazyRefresh = new LazyRefresh(this, [this] { refresh(); });
    auto* layout = new QHBoxLayout(this);
    layout->setContentsMargins(6, 6, 6, 6);
    auto* split = new QSplitter(Qt::Horizontal);
    m_split = split;
    split->setChildrenCollapsible(false);  // a pane never shrinks below what it can show
    auto* left = new QWidget;
    auto* leftLayout = new QVBoxLayout(left);
    leftLayout->setContentsMargins(0, 0, 0, 0);
    m_title = new QLabel(tr("Test images the members disagree on most (epistemic uncertainty)"));
    m_title->setStyleSheet(QStringLiteral("font-weight: bold;"));
    m_title->setWordWrap(true);
    leftLayout->addWidget(m_title);
    auto* scroll = new QScrollArea;
    scroll->setWidgetResizable(true);
    scroll->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
    m_uncertain = new UncertainImages;
    scroll->setWidget(m_uncertain);
    // At least the first row of tiles whole: the splitter stacking the panes (900 x 600) left
    // the pane 55 px tall, the labels under the digits below its edge.
    scroll->setMinimumHeight(UncertainImages::rowHeight() + 2 * scroll->frameWidth());
    leftLayout->addWidget(scroll, 1);
    auto* legend =
        new QLabel(tr("under each image: the members' votes (class colours) and the "
                      "ensemble's label; red: wrong (predicted ≠ true)"));
    legend->setWordWrap(true);
    legend->setStyleSheet(QStringLiteral("color: #666;"));
    leftLayout->addWidget(legend);
    split->addWidget(left);
    // QSplitter ignores height-for-width: room for the title and the legend wrapping to one
    // more line each in a narrow window, so the image list keeps its minimum height.
    left->setMinimumHeight(left->minimumSizeHint().height() + 2 * fontMetrics().lineSpacing());

    auto* right = new QWidget;
    auto* rightLayout = new QVBoxLayout(right);
    rightLayout->setContentsMargins(0, 0, 0, 0);
    m_confusion = new ConfusionMatrix;
    rightLayout->addWidget(m_confusion, 3);
    // The canvas beside its bars, or above them in a narrow window (the view scrolls down).
    auto* drawRow = new ReflowRow(230);
    auto* canvasPane = new QWidget;
    auto* canvasColumn = new QVBoxLayout(canvasPane);
    canvasColumn->setContentsMargins(0, 0, 0, 0);
    m_canvas = new DigitCanvas;
    auto* clear = new QPushButton(tr("Clear"));
    canvasColumn->addWidget(m_canvas);
    canvasColumn->addWidget(clear);
    canvasColumn->addStretch(1);
    drawRow->addWidget(canvasPane, 0);
    m_bars = new PredictionBars;
    drawRow->addWidget(m_bars, 1);
    rightLayout->addWidget(drawRow, 2);
    split->addWidget(right);
    split->setStretchFactor(0, 3);
    split->setStretchFactor(1, 2);
    layout->addWidget(split);

    m_throttle.setSingleShot(true);
    m_throttle.setInterval(40);
    connect(&m_throttle, &QTimer::timeout, this, &ImagesView::requestPrediction);
    connect(m_canvas, &DigitCanvas::changed, this, [this] {
        if (m_canvas->isEmpty()) {
            m_bars->clearPrediction();
        } else if (!m_throttle.isActive()) {
            m_throttle.start();
        }
    });
    connect(clear, &QPushButton::clicked, m_canvas, &DigitCanvas::clear);
}

void ImagesView::setSnapshot(SnapshotPtr snapshot) {
    m_snapshot = std::move(snapshot);
    m_lazyRefresh->request();
}

void ImagesView::resizeEvent(QResizeEvent* event) {
    QWidget::resizeEvent(event);
    // Side by side the panes need about 960 px; below that they stack (and the window's tab
    // scrolls if even that does not fit).
    const Qt::Orientation o = width() < 960 ? Qt::Vertical : Qt::Horizontal;
    if (m_split->orientation() != o) {
        m_split->setOrientation(o);
    }
}

void ImagesView::refresh() {
    m_uncertain->setSnapshot(m_snapshot);
    m_confusion->setSnapshot(m_snapshot);
    if (m_snapshot && m_snapshot->run->isImage) {
        const Snapshot& s = *m_snapshot;
        QString title = tr("The %1 test images with the most epistemic uncertainty (of %2 "
                           "evaluated)")
                            .arg(m_uncertain->shownRows().size())
                            .arg(formatCount(s.run->evalTest.rows));
        if (s.hasEnsemble && s.run->testRows > 0) {
            // The ensemble's figure: live subset while training, every test image once stopped.
            const QString note = liveSubsetNote(*s.run, s.testRowsMeasured);
            title += note.isEmpty() ? tr(" · ensemble accuracy %1 % on all %2 test images")
                                          .arg(100.0 * s.ensembleMetrics.accuracy, 0, 'f', 2)
                                          .arg(formatCount(s.run->testRows))
                                    : tr(" · ensemble accuracy %1 % (%2)")
                                          .arg(100.0 * s.ensembleMetrics.accuracy, 0, 'f', 2)
                                          .arg(note);
        }
        m_title->setText(title);
        // Live: the drawing follows the training.
        if (!m_canvas->isEmpty() && m_snapshot->step != m_predictedAtStep &&
            !m_throttle.isActive()) {
            m_throttle.start();
        }
    }
}

void ImagesView::requestPrediction() {
    if (!m_snapshot || !m_snapshot->run->isImage || m_canvas->isEmpty()) {
        return;
    }
    const RunInfo& run = *m_snapshot->run;
    const int w = run.imageWidth > 0 ? run.imageWidth : 28;
    const int h = run.imageHeight > 0 ? run.imageHeight : 28;
    std::vector<float> pixels =
        inkToPixels(m_canvas->ink(), w, h, static_cast<int>(std::lround(w * 20.0 / 28.0)));
    m_predictedAtStep = m_snapshot->step;
    Q_EMIT predictionRequested(++m_requestId, pixels);
}

void ImagesView::showPrediction(quint64 id, const QList<float>& logProbs, int members,
                                int classes) {
    if (id != m_requestId || !m_snapshot) {
        return;
    }
    std::vector<double> probs(static_cast<std::size_t>(logProbs.size()));
    for (qsizetype i = 0; i < logProbs.size(); ++i) {
        probs[static_cast<std::size_t>(i)] = std::exp(static_cast<double>(logProbs.at(i)));
    }
    m_bars->setPrediction(std::move(probs), members, classes, m_snapshot->included,
                          classNames(*m_snapshot->run));
}

}  // namespace ensemble::ui
