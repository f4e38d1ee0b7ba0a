#include "views/methods_maps.h"

#include <QGridLayout>
#include <QPainter>
#include <QTransform>

#include <algorithm>
#include <cmath>

#include "render/colormap.h"
#include "render/plot_helpers.h"
#include "render/text_fit.h"

namespace ensemble::ui {

namespace {

// Room around a map's plot: the title above, the mean MI below.
constexpr double kTitleHeight = 22.0;
constexpr double kCaptionHeight = 18.0;
constexpr double kMapMargin = 4.0;
// The most train points a map draws (spirals has 1,000; a 2-D CSV may have many more).
constexpr int64_t kMaxPoints = 3000;
// Canvas width below which the row wraps.
constexpr int kMapColumnWidth = 150;

bool sameBox(const GridBounds& a, const GridBounds& b) {
    return a.xMin == b.xMin && a.xMax == b.xMax && a.yMin == b.yMin && a.yMax == b.yMax;
}

}  // namespace

QString methodLabel(EnsembleMethod method) {
    return QString::fromUtf8(ensembleMethodInfo(method).label);
}

MethodMap::MethodMap(QWidget* parent) : QWidget(parent) {
    setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Expanding);
}

void MethodMap::setFigure(const MethodFigure& figure, const GridBounds& bounds,
                          std::shared_ptr<const RunInfo> run) {
    m_figure = figure;
    m_bounds = bounds;
    m_run = std::move(run);
    m_pixmap = m_figure.epistemic.image.isNull() ? QPixmap()
                                                 : QPixmap::fromImage(m_figure.epistemic.image);
    setToolTip(tr("%1: %2. Epistemic uncertainty (mutual information) of its ensemble over the "
                  "plane, mean %3 nats; the line is its decision boundary.")
                   .arg(title(), QString::fromUtf8(ensembleMethodInfo(m_figure.method).help),
                        formatValue(m_figure.meanEpistemic)));
    update();
}

QString MethodMap::title() const {
    return methodLabel(m_figure.method);
}

QRectF MethodMap::plotRect() const {
    const QRectF area(kMapMargin, kTitleHeight, std::max(10.0, width() - 2 * kMapMargin),
                      std::max(10.0, height() - kTitleHeight - kCaptionHeight));
    return fitAspect(
        area, (m_bounds.xMax - m_bounds.xMin) / std::max(1e-12, m_bounds.yMax - m_bounds.yMin));
}

void MethodMap::paintEvent(QPaintEvent* /*event*/) {
    QPainter p(this);
    p.fillRect(rect(), plot::kBackground);
    p.setRenderHint(QPainter::Antialiasing);
    const QRectF plot = plotRect();
    QFont font = p.font();
    font.setBold(true);
    p.setFont(font);
    p.setPen(plot::kText);
    drawTextFitted(p, QRectF(kMapMargin, 2, width() - 2 * kMapMargin, kTitleHeight - 4),
                   Qt::AlignHCenter | Qt::AlignVCenter, title());
    font.setBold(false);
    p.setFont(font);
    if (m_pixmap.isNull()) {
        p.fillRect(plot, QColor(236, 236, 236));
        p.setPen(plot::kMuted);
        drawTextFitted(p, plot.adjusted(6, 6, -6, -6), Qt::AlignCenter | Qt::TextWordWrap,
                       tr("every member diverged"));
    } else {
        p.setRenderHint(QPainter::SmoothPixmapTransform);
        p.drawPixmap(plot, m_pixmap, QRectF(m_pixmap.rect()));
        // The train points (of the run, whose grid box is the comparison's: the same config).
        if (m_run && m_run->hasGrid && sameBox(m_run->bounds, m_bounds)) {
            const Dataset& train = m_run->train;
            const int classes = std::max(2, m_run->classes);
            const int64_t every = std::max<int64_t>(1, train.rows / kMaxPoints);
            const double r = std::clamp(plot.width() / 110.0, 1.2, 2.4);
            p.setPen(QPen(QColor(255, 255, 255, 170), 0.5));
            p.save();
            p.setClipRect(plot);
            for (int64_t i = 0; i < train.rows; i += every) {
                const float* x = train.row(i);
                const QPointF at(plot.left() + (x[0] - m_bounds.xMin) /
                                                   (m_bounds.xMax - m_bounds.xMin) * plot.width(),
                                 plot.top() + (m_bounds.yMax - x[1]) /
                                                  (m_bounds.yMax - m_bounds.yMin) * plot.height());
                p.setBrush(classColor(train.y.empty() ? 0 : train.y[static_cast<std::size_t>(i)],
                                      classes));
                p.drawEllipse(at, r, r);
            }
            p.restore();
        }
        // The decision boundary, in grid units (0..G, row 0 at the top).
        const double g = std::max(1, m_figure.epistemic.image.width());
        const QTransform toPlot = QTransform::fromTranslate(plot.left(), plot.top())
                                      .scale(plot.width() / g, plot.height() / g);
        QPen pen(QColor(255, 255, 255, 220));
        pen.setWidthF(1.4);
        p.setPen(pen);
        p.setBrush(Qt::NoBrush);
        for (const QPolygonF& line : m_figure.boundary) {
            p.drawPolyline(toPlot.map(line));
        }
    }
    p.setPen(QPen(plot::kAxis, 1.0));
    p.setBrush(Qt::NoBrush);
    p.drawRect(plot);
    p.setPen(plot::kMuted);
    drawTextFitted(
        p, QRectF(kMapMargin, plot.bottom() + 2, width() - 2 * kMapMargin, kCaptionHeight - 2),
        Qt::AlignHCenter | Qt::AlignVCenter,
        tr("mean MI %1").arg(formatValue(m_figure.meanEpistemic)));
}

EpistemicBar::EpistemicBar(QWidget* parent) : QWidget(parent) {
    setSizePolicy(QSizePolicy::Fixed, QSizePolicy::Expanding);
    setToolTip(
        tr("One scale for every map: 0 to the largest mutual information any method reaches, "
           "in nats"));
}

void EpistemicBar::setRange(double high) {
    m_high = high;
    update();
}

void EpistemicBar::paintEvent(QPaintEvent* /*event*/) {
    QPainter p(this);
    p.fillRect(rect(), plot::kBackground);
    QFont font = p.font();
    font.setPointSizeF(8.5);
    p.setFont(font);
    const QFontMetricsF fm(font);
    // Level with the maps' plots: below their titles, above their captions.
    const QRectF bar(6, kTitleHeight + 4, 12,
                     std::max(30.0, height() - kTitleHeight - kCaptionHeight - 8));
    p.drawImage(bar, colorStrip(sequentialColor, static_cast<int>(bar.height()), true));
    p.setPen(QPen(plot::kAxis, 0.8));
    p.setBrush(Qt::NoBrush);
    p.drawRect(bar);
    if (m_high > 0) {
        const std::vector<double> ticks = niceTicks(0.0, m_high, 4);
        const QStringList labels = tickLabels(ticks);
        for (std::size_t i = 0; i < ticks.size(); ++i) {
            const double y = bar.bottom() - ticks[i] / m_high * bar.height();
            p.setPen(QPen(plot::kAxis, 1.0));
            p.drawLine(QPointF(bar.right(), y), QPointF(bar.right() + 3, y));
            p.setPen(plot::kText);
            drawTextFitted(p, QPointF(bar.right() + 5, y + fm.ascent() / 2 - 1),
                           labels[static_cast<qsizetype>(i)]);
        }
    }
    p.setPen(plot::kText);
    QString title = tr("mutual information, nats");
    if (fm.horizontalAdvance(title) > bar.height()) {
        title = tr("MI, nats");
    }
    drawVerticalText(p, QPointF(width() - fm.height() / 2 - 2, bar.center().y()), title);
}

MethodsMaps::MethodsMaps(QWidget* parent) : QWidget(parent) {
    m_grid = new QGridLayout(this);
    m_grid->setContentsMargins(0, 0, 0, 0);
    m_grid->setSpacing(6);
    m_bar = new EpistemicBar(this);
    m_bar->setVisible(false);
}

void MethodsMaps::clear() {
    for (MethodMap* map : m_maps) {
        m_grid->removeWidget(map);
        delete map;
    }
    m_maps.clear();
    m_grid->removeWidget(m_bar);
    m_bar->setParent(this);
    m_bar->setVisible(false);
    m_columns = 0;
}

void MethodsMaps::setOutcome(const MethodsOutcomePtr& outcome, std::shared_ptr<const RunInfo> run) {
    clear();
    if (!outcome) {
        return;
    }
    for (const MethodFigure& figure : outcome->figures) {
        auto* map = new MethodMap(this);
        map->setFigure(figure, outcome->bounds, run);
        m_maps.push_back(map);
    }
    if (!m_maps.empty()) {
        m_bar->setRange(outcome->epistemicHigh);
        m_bar->setVisible(true);
    }
    arrange();
}

void MethodsMaps::resizeEvent(QResizeEvent* event) {
    QWidget::resizeEvent(event);
    arrange();
}

void MethodsMaps::arrange() {
    if (m_maps.empty()) {
        return;
    }
    const int room = std::max(1, width() - m_bar->sizeHint().width());
    const int columns = std::clamp(room / kMapColumnWidth, 1, static_cast<int>(m_maps.size()));
    if (columns == m_columns) {
        return;
    }
    m_columns = columns;
    for (MethodMap* map : m_maps) {
        m_grid->removeWidget(map);
    }
    m_grid->removeWidget(m_bar);
    for (int c = 0; c <= static_cast<int>(m_maps.size()); ++c) {
        m_grid->setColumnStretch(c, 0);  // the columns of a wider arrangement before
    }
    for (std::size_t i = 0; i < m_maps.size(); ++i) {
        const int at = static_cast<int>(i);
        m_grid->addWidget(m_maps[i], at / columns, at % columns);
        m_maps[i]->setVisible(true);
    }
    const int rows = (static_cast<int>(m_maps.size()) + columns - 1) / columns;
    m_grid->addWidget(m_bar, 0, columns, rows, 1);
    for (int c = 0; c < columns; ++c) {
        m_grid->setColumnStretch(c, 1);
    }
}

}  // namespace ensemble::ui
