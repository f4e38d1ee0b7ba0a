#include "views/filters_view.h"

#include <QHBoxLayout>
#include <QLabel>
#include <QPainter>
#include <QPushButton>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>

#include "config/config_schema.h"
#include "render/colormap.h"
#include "render/text_fit.h"
#include "views/images_view.h"
#include "widgets/lazy_refresh.h"

namespace ensemble::ui {

QImage renderTiles(const std::vector<float>& values, int rows, int cols, int th, int tw,
                   bool diverging) {
    if (rows <= 0 || cols <= 0 || th <= 0 || tw <= 0 ||
        values.size() < static_cast<std::size_t>(rows) * cols * th * tw) {
        return {};
    }
    QImage image(cols * (tw + kTileGap) - kTileGap, rows * (th + kTileGap) - kTileGap,
                 QImage::Format_RGB32);
    image.fill(kTileBackground);
    const std::size_t rowSize = static_cast<std::size_t>(cols) * th * tw;
    for (int r = 0; r < rows; ++r) {
        const float* row = values.data() + rowSize * r;
        float lo = 0.0f;
        float hi = 0.0f;
        for (std::size_t i = 0; i < rowSize; ++i) {
            if (std::isfinite(row[i])) {
                lo = std::min(lo, row[i]);
                hi = std::max(hi, row[i]);
            }
        }
        // One scale per member: members differ in scale, a filter's pattern is what is read.
        const bool symmetric = diverging || lo < 0.0f;
        const double m = symmetric ? std::max(-lo, hi) : hi;
        for (int c = 0; c < cols; ++c) {
            const float* tile = row + static_cast<std::size_t>(c) * th * tw;
            for (int y = 0; y < th; ++y) {
                auto* line = reinterpret_cast<QRgb*>(image.scanLine(r * (th + kTileGap) + y));
                for (int x = 0; x < tw; ++x) {
                    const double v = std::isfinite(tile[y * tw + x]) ? tile[y * tw + x] : 0.0;
                    QRgb px = 0;
                    if (symmetric) {
                        // divergingColor: 0 blue, 0.5 neutral, 1 red.
                        px = divergingColor(m > 0.0 ? 0.5 + 0.5 * v / m : 0.5);
                    } else {
                        const int g = m > 0.0 ? static_cast<int>(std::lround(255.0 * v / m)) : 0;
                        px = qRgb(g, g, g);
                    }
                    line[c * (tw + kTileGap) + x] = px;
                }
            }
        }
    }
    return image;
}

TileGrid::TileGrid(QWidget* parent) : QWidget(parent) {
    setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Preferred);
}

void TileGrid::setTiles(QImage image, int rows, int cols, QStringList rowLabels) {
    m_image = std::move(image);
    m_rows = rows;
    m_cols = cols;
    m_labels = std::move(rowLabels);
    m_message.clear();
    updateGeometry();
    update();
}

void TileGrid::clearTiles(const QString& message) {
    m_image = QImage();
    m_rows = 0;
    m_cols = 0;
    m_labels.clear();
    m_message = message;
    updateGeometry();
    update();
}

int TileGrid::labelWidth() const {
    int w = 0;
    for (const QString& l : m_labels) {
        w = std::max(w, fontMetrics().horizontalAdvance(l));
    }
    return w > 0 ? w + 8 : 0;
}

TileGrid::Layout TileGrid::layoutFor(int width) const {
    Layout l;
    if (m_image.isNull() || m_rows <= 0 || m_cols <= 0) {
        return l;
    }
    l.tileWidth = (m_image.width() + kTileGap) / m_cols - kTileGap;
    l.tileHeight = (m_image.height() + kTileGap) / m_rows - kTileGap;
    const int room = std::max(1, width - labelWidth());
    // Legible tiles: at least kMinTilePixels wide (a 3x3 kernel at 10x, a 28x28 map at 1x);
    // larger while one line per member still fits, up to 8x the smallest.
    const int smallest = std::max(1, (kMinTilePixels + l.tileWidth - 1) / l.tileWidth);
    l.scale = smallest;
    for (int s = smallest + 1; s <= 8 * smallest; ++s) {
        if (m_cols * (l.tileWidth * s + kScreenGap) - kScreenGap > room) {
            break;
        }
        l.scale = s;
    }
    // Tiles that do not fit on one line wrap onto more lines per member.
    l.perLine = std::clamp((room + kScreenGap) / (l.tileWidth * l.scale + kScreenGap), 1, m_cols);
    l.lines = (m_cols + l.perLine - 1) / l.perLine;
    return l;
}

int TileGrid::Layout::blockHeight() const {
    return lines * (tileHeight * scale + kScreenGap) - kScreenGap;
}

int TileGrid::heightForWidth(int width) const {
    if (m_image.isNull()) {
        // The message wrapped to the width (three lines beside the canvas at 900 x 600).
        const QRect wrapped = fontMetrics().boundingRect(
            QRect(0, 0, std::max(1, width), 100000), Qt::AlignCenter | Qt::TextWordWrap, m_message);
        return std::max(fontMetrics().lineSpacing() * 2, wrapped.height() + 2);
    }
    const Layout l = layoutFor(width);
    return m_rows * (l.blockHeight() + kMemberGap) - kMemberGap + 2;
}

void TileGrid::paintEvent(QPaintEvent*) {
    QPainter p(this);
    if (m_image.isNull()) {
        p.setPen(palette().color(QPalette::PlaceholderText));
        drawTextFitted(p, rect(), Qt::AlignCenter | Qt::TextWordWrap, m_message);
        return;
    }
    const Layout l = layoutFor(width());
    const int left = labelWidth();
    const int tw = l.tileWidth * l.scale;
    const int th = l.tileHeight * l.scale;
    // Whole-number scales keep every value a crisp square.
    p.setRenderHint(QPainter::SmoothPixmapTransform, false);
    for (int r = 0; r < m_rows; ++r) {
        const int top = 1 + r * (l.blockHeight() + kMemberGap);
        for (int c = 0; c < m_cols; ++c) {
            const QRect target(left + (c % l.perLine) * (tw + kScreenGap),
                               top + (c / l.perLine) * (th + kScreenGap), tw, th);
            const QRect source(c * (l.tileWidth + kTileGap), r * (l.tileHeight + kTileGap),
                               l.tileWidth, l.tileHeight);
            // A frame in the gap colour: the tiles stand apart as in the image.
            p.fillRect(target.adjusted(-1, -1, 1, 1), QColor(kTileBackground));
            // The tile copied out first: Qt's SVG generator ignores a source rectangle and
            // draws the whole image, so an export would repeat every member's sheet per tile.
            p.drawImage(target, m_image.copy(source));
        }
        if (r < m_labels.size()) {
            // The label beside the member's first line of tiles.
            p.setPen(palette().color(QPalette::WindowText));
            drawTextFitted(p, QRectF(0, top, left - 6, std::max(th, fontMetrics().height())),
                           Qt::AlignRight | Qt::AlignVCenter, m_labels[r]);
        }
    }
}

FiltersView::FiltersView(QWidget* parent) : QWidget(parent) {
    m_lazyRefresh = new LazyRefresh(this, [this] { refresh(); });
    auto* layout = new QVBoxLayout(this);
    m_title = new QLabel;
    m_title->setWordWrap(true);
    m_title->setStyleSheet(QStringLiteral("font-weight: bold;"));
    layout->addWidget(m_title);
    m_kernels = new TileGrid;
    m_kernels->setObjectName(QStringLiteral("kernels"));
    layout->addWidget(m_kernels);
    auto* legend =
        new QLabel(tr("each tile one filter's weights: blue negative, white 0, red "
                      "positive (scaled per member)"));
    legend->setWordWrap(true);
    legend->setStyleSheet(QStringLiteral("color: #666;"));
    layout->addWidget(legend);

    m_mapsTitle = new QLabel;
    m_mapsTitle->setWordWrap(true);
    m_mapsTitle->setStyleSheet(QStringLiteral("font-weight: bold;"));
    layout->addWidget(m_mapsTitle);
    auto* row = new QHBoxLayout;
    auto* canvasColumn = new QVBoxLayout;
    m_canvas = new DigitCanvas;
    auto* clear = new QPushButton(tr("Clear"));
    canvasColumn->addWidget(m_canvas);
    canvasColumn->addWidget(clear);
    canvasColumn->addStretch(1);
    row->addLayout(canvasColumn);
    m_maps = new TileGrid;
    m_maps->setObjectName(QStringLiteral("featureMaps"));
    m_maps->clearTiles(tr("Draw a digit: each member's first-layer feature maps appear here."));
    row->addWidget(m_maps, 1, Qt::AlignTop);
    layout->addLayout(row, 1);

    m_throttle.setSingleShot(true);
    m_throttle.setInterval(40);
    connect(&m_throttle, &QTimer::timeout, this, &FiltersView::requestMaps);
    connect(m_canvas, &DigitCanvas::changed, this, [this] {
        if (m_canvas->isEmpty()) {
            m_maps->clearTiles(
                tr("Draw a digit: each member's first-layer feature maps appear here."));
        } else if (!m_throttle.isActive()) {
            m_throttle.start();
        }
    });
    connect(clear, &QPushButton::clicked, m_canvas, &DigitCanvas::clear);
    refresh();
}

void FiltersView::setSnapshot(SnapshotPtr snapshot) {
    m_snapshot = std::move(snapshot);
    m_lazyRefresh->request();
}

void FiltersView::refresh() {
    const std::shared_ptr<const FirstConv> shared =
        m_snapshot ? m_snapshot->firstConv : std::shared_ptr<const FirstConv>();
    const FirstConv* conv = shared.get();
    if (conv == nullptr || conv->empty()) {
        m_shownConv = nullptr;
        m_title->setText(tr("First-layer filters"));
        m_mapsTitle->clear();
        m_kernels->clearTiles(
            tr("The Filters view shows CNN members (model.kind cnn): this "
               "ensemble has no convolution."));
        return;
    }
    const int members = conv->members;
    const int filters = conv->filters();
    const int k = conv->kernel();
    m_title->setText(tr("First-layer kernels: %1 filters of %2x%2%3, one row per member")
                         .arg(filters)
                         .arg(k)
                         .arg(conv->channels() > 1 ? tr(" (channel 0 of %1)").arg(conv->channels())
                                                   : QString()));
    m_mapsTitle->setText(
        tr("Feature maps of the drawn digit (%1x%2, after %3)")
            .arg(conv->layer.out.height)
            .arg(conv->layer.out.width)
            .arg(QString::fromLatin1(toString(m_snapshot->run->config.model.activation))));
    if (shared != m_shownConv) {
        m_shownConv = shared;
        // Channel 0 of each kernel (the images have one channel).
        const int c = conv->channels();
        std::vector<float> tiles(static_cast<std::size_t>(members) * filters * k * k);
        for (std::size_t t = 0; t < static_cast<std::size_t>(members) * filters; ++t) {
            std::copy_n(conv->weights.data() + t * c * k * k, k * k, tiles.data() + t * k * k);
        }
        QStringList labels;
        for (int m = 0; m < members; ++m) {
            labels << tr("member %1").arg(m);
        }
        m_kernels->setTiles(renderTiles(tiles, members, filters, k, k, true), members, filters,
                            labels);
    }
    // Live: the drawing follows the training.
    if (!m_canvas->isEmpty() && m_snapshot->step != m_requestedAtStep && !m_throttle.isActive()) {
        m_throttle.start();
    }
}

void FiltersView::requestMaps() {
    if (!m_snapshot || !m_snapshot->firstConv || m_canvas->isEmpty()) {
        return;
    }
    const RunInfo& run = *m_snapshot->run;
    const int w = run.imageWidth > 0 ? run.imageWidth : 28;
    const int h = run.imageHeight > 0 ? run.imageHeight : 28;
    std::vector<float> pixels =
        inkToPixels(m_canvas->ink(), w, h, static_cast<int>(std::lround(w * 20.0 / 28.0)));
    m_requestedAtStep = m_snapshot->step;
    Q_EMIT predictionRequested(++m_requestId, pixels);
}

void FiltersView::showFeatureMaps(quint64 id, const QList<float>& maps, int members, int filters,
                                  int height, int width) {
    if (id != m_requestId || m_canvas->isEmpty()) {
        return;
    }
    QStringList labels;
    for (int m = 0; m < members; ++m) {
        labels << tr("member %1").arg(m);
    }
    m_maps->setTiles(renderTiles(std::vector<float>(maps.begin(), maps.end()), members, filters,
                                 height, width, false),
                     members, filters, labels);
}

}  // namespace ensemble::ui
