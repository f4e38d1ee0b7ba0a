// The Boundary view: the canvas (heatmap, contour, points, zoom and pan) and the controls
// around it. Kept whole because the controls only set the canvas's state; what the canvas reads
// under the pointer is boundary_readout.cpp.
#include "views/boundary_view.h"

#include <QCheckBox>
#include <QComboBox>
#include <QElapsedTimer>
#include <QHBoxLayout>
#include <QLabel>
#include <QPainter>
#include <QPainterPath>
#include <QStandardItemModel>
#include <QToolTip>
#include <QTransform>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>

#include "render/colormap.h"
#include "render/plot_helpers.h"
#include "render/text_fit.h"
#include "widgets/wrapping_label.h"

namespace ensemble::ui {

namespace {

constexpr double kPlotLeft = 54.0;
constexpr double kPlotBottom = 42.0;
constexpr double kPlotTop = 14.0;
constexpr double kPlotRight = 124.0;  // colour bar and its labels

QString featureName(const RunInfo& run, int f) {
    if (static_cast<int>(run.train.featureNames.size()) > f) {
        return QString::fromStdString(run.train.featureNames[static_cast<std::size_t>(f)]);
    }
    return QStringLiteral("x%1").arg(f);
}

}  // namespace

BoundaryCanvas::BoundaryCanvas(QWidget* parent) : PlotCanvas(parent) {
    setFocusPolicy(Qt::ClickFocus);  // + - 0 zoom once the plot is clicked
    setAttribute(Qt::WA_OpaquePaintEvent);
    setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Expanding);
}

void BoundaryCanvas::setSnapshot(SnapshotPtr snapshot) {
    const bool newRun = !snapshot || !m_snapshot || snapshot->run != m_snapshot->run;
    if (newRun) {
        m_markers.clear();  // class colours may differ
    }
    m_snapshot = std::move(snapshot);
    m_pixmap = QPixmap();
    m_pixmapFor = -1;
    if (m_snapshot) {
        followRun(m_snapshot->run->members, newRun);  // another run: another box
    }
    update();
}

void BoundaryCanvas::setQuantity(HeatQuantity quantity) {
    if (quantity != m_quantity) {
        m_quantity = quantity;
        m_pixmapFor = -1;
        update();
    }
}

QRectF BoundaryCanvas::plotRect() const {
    const QRectF area(kPlotLeft, kPlotTop, std::max(10.0, width() - kPlotLeft - kPlotRight),
                      std::max(10.0, height() - kPlotTop - kPlotBottom));
    if (!m_snapshot || !m_snapshot->run->hasGrid) {
        return area;
    }
    const GridBounds& b = m_snapshot->run->bounds;
    return fitAspect(area, (b.xMax - b.xMin) / std::max(1e-12, b.yMax - b.yMin));
}

std::optional<GridBounds> BoundaryCanvas::dataBox() const {
    if (!m_snapshot || !m_snapshot->run->hasGrid) {
        return std::nullopt;
    }
    return m_snapshot->run->bounds;
}

void BoundaryCanvas::paintEvent(QPaintEvent* /*event*/) {
    QElapsedTimer paintClock;
    paintClock.start();
    struct Report {
        QElapsedTimer& clock;
        ~Report() {
            if (qEnvironmentVariableIsSet("ENSEMBLE_UI_PROFILE")) {
                qDebug("boundary paint %.1f ms", clock.nsecsElapsed() * 1e-6);
            }
        }
    } report{paintClock};
    QPainter p(this);
    p.fillRect(rect(), plot::kBackground);
    p.setRenderHint(QPainter::Antialiasing);
    if (!m_snapshot || !m_snapshot->hasGrid) {
        p.setPen(plot::kMuted);
        drawTextFitted(p, rect(), Qt::AlignCenter,
                       m_snapshot ? tr("The boundary is drawn for 2-D data only.")
                                  : tr("Configure an experiment and press Train."));
        return;
    }
    const Snapshot& s = *m_snapshot;
    const QRectF plot = plotRect();
    const int q = static_cast<int>(m_quantity);
    if (s.hasEnsemble && !s.heat[static_cast<std::size_t>(q)].image.isNull()) {
        if (m_pixmapFor != q || m_pixmap.isNull()) {
            m_pixmap = QPixmap::fromImage(s.heat[static_cast<std::size_t>(q)].image);
            m_pixmapFor = q;
        }
        p.setRenderHint(QPainter::SmoothPixmapTransform);
        // The part of the grid image the (zoomed) view covers.
        drawGridImage(p, plot, m_pixmap);
    } else {
        p.fillRect(plot, QColor(236, 236, 236));
        p.setPen(plot::kMuted);
        drawTextFitted(p, plot, Qt::AlignCenter,
                       tr("No member is switched on:\nno ensemble to show."));
    }
    drawAxes(p, plot);
    p.save();
    p.setClipRect(plot);
    if (s.hasEnsemble) {
        const bool onProbability = m_quantity == HeatQuantity::Probability;
        QPen pen(onProbability ? QColor(25, 25, 25, 230) : QColor(255, 255, 255, 220));
        pen.setWidthF(1.8);
        drawContour(p, plot, s.ensembleContour, pen);
    }
    if (const int k = selectedMember(); k >= 0 && k < static_cast<int>(s.memberContours.size())) {
        QPen pen(plot::kAccent);
        pen.setWidthF(2.0);
        pen.setStyle(Qt::DashLine);
        drawContour(p, plot, s.memberContours[static_cast<std::size_t>(k)], pen);
    }
    drawPoints(p, plot);
    p.restore();
    p.setPen(QPen(plot::kAxis, 1.0));
    p.setBrush(Qt::NoBrush);
    p.drawRect(plot);

    const double barHeight = std::min(plot.height(), 260.0);
    const QRectF bar(plot.right() + 18, plot.top() + (plot.height() - barHeight) / 2, 14,
                     barHeight);
    drawColorBar(p, bar);
}

void BoundaryCanvas::drawContour(QPainter& p, const QRectF& plot,
                                 const std::vector<QPolygonF>& lines, const QPen& pen) const {
    const QTransform toPlot = gridToWidget(m_snapshot->run->gridSize, plot);
    p.setPen(pen);
    p.setBrush(Qt::NoBrush);
    for (const QPolygonF& line : lines) {
        p.drawPolyline(toPlot.map(line));  // mapped first, so the pen width is not scaled
    }
}

void BoundaryCanvas::drawAxes(QPainter& p, const QRectF& plot) const {
    const RunInfo& run = *m_snapshot->run;
    const GridBounds b = viewBounds();
    QFont font = p.font();
    font.setPointSizeF(8.5);
    p.setFont(font);
    const QFontMetricsF fm(font);
    p.setPen(QPen(plot::kAxis, 1.0));
    const std::vector<double> xTicks = niceTicks(b.xMin, b.xMax, 6);
    const QStringList xLabels = tickLabels(xTicks);
    for (std::size_t i = 0; i < xTicks.size(); ++i) {
        const double x = toWidget(xTicks[i], b.yMin, plot).x();
        p.drawLine(QPointF(x, plot.bottom()), QPointF(x, plot.bottom() + 4));
        const QString& text = xLabels[static_cast<qsizetype>(i)];
        drawTextFitted(
            p, QPointF(x - fm.horizontalAdvance(text) / 2, plot.bottom() + 6 + fm.ascent()), text);
    }
    const std::vector<double> yTicks = niceTicks(b.yMin, b.yMax, 6);
    const QStringList yLabels = tickLabels(yTicks);
    for (std::size_t i = 0; i < yTicks.size(); ++i) {
        const double y = toWidget(b.xMin, yTicks[i], plot).y();
        p.drawLine(QPointF(plot.left() - 4, y), QPointF(plot.left(), y));
        const QString& text = yLabels[static_cast<qsizetype>(i)];
        drawTextFitted(
            p, QPointF(plot.left() - 7 - fm.horizontalAdvance(text), y + fm.ascent() / 2 - 1),
            text);
    }
    p.setPen(plot::kText);
    const QString xName = featureName(run, 0);
    drawTextFitted(
        p, QPointF(plot.center().x() - fm.horizontalAdvance(xName) / 2, plot.bottom() + 34), xName);
    drawVerticalText(p, QPointF(plot.left() - 42, plot.center().y()), featureName(run, 1));
}

const QPixmap& BoundaryCanvas::marker(int cls, int style, double radius) const {
    // Antialiased ellipses cost tens of microseconds each; a thousand points per frame add up
    // on the GUI thread while the engine trains, so each marker is drawn once and blitted.
    const qreal dpr = devicePixelRatioF();
    const int r10 = static_cast<int>(std::lround(radius * 10));
    const quint64 key = (static_cast<quint64>(cls) << 40) | (static_cast<quint64>(style) << 32) |
                        static_cast<quint64>(r10) | (static_cast<quint64>(dpr * 4) << 20);
    auto it = m_markers.find(key);
    if (it != m_markers.end()) {
        return it->second;
    }
    // A regression run has no classes: its points take the first class colour.
    const int classes = m_snapshot ? std::max(2, m_snapshot->run->classes) : 2;
    const QColor color = classColor(cls, classes);
    const double half = radius + 2.5;
    const int side = static_cast<int>(std::ceil(2 * half * dpr));
    QPixmap pm(side, side);
    pm.setDevicePixelRatio(dpr);
    pm.fill(Qt::transparent);
    QPainter p(&pm);
    p.setRenderHint(QPainter::Antialiasing);
    const QPointF c(side / dpr / 2.0, side / dpr / 2.0);
    switch (style) {
        case 0:  // train: filled, thin white rim
            p.setBrush(color);
            p.setPen(QPen(QColor(255, 255, 255, 210), 0.8));
            p.drawEllipse(c, radius, radius);
            break;
        case 1:  // test: hollow ring with a light halo
            p.setBrush(Qt::NoBrush);
            p.setPen(QPen(QColor(255, 255, 255, 150), 2.8 * radius / 3.8));
            p.drawEllipse(c, radius, radius);
            p.setPen(QPen(color.darker(115), 1.5 * radius / 3.8));
            p.drawEllipse(c, radius, radius);
            break;
        default:  // out of bag for the selected member: hollow
            p.setBrush(Qt::NoBrush);
            p.setPen(QPen(color.darker(120), 1.2 * radius / 2.6));
            p.drawEllipse(c, radius, radius);
            break;
    }
    p.end();
    return m_markers.emplace(key, pm).first->second;
}

void BoundaryCanvas::drawPoints(QPainter& p, const QRectF& plot) const {
    const Snapshot& s = *m_snapshot;
    const RunInfo& run = *s.run;
    const bool sized = selectedMember() >= 0 && !run.counts.empty() &&
                       run.config.ensemble.bootstrap != BootstrapMode::None;
    const double scale = std::clamp(plot.width() / 520.0, 0.75, 1.4);
    auto blit = [&](const QPointF& c, const QPixmap& pm) {
        const QSizeF size = QSizeF(pm.size()) / pm.devicePixelRatio();
        p.drawPixmap(QPointF(c.x() - size.width() / 2, c.y() - size.height() / 2), pm);
    };
    if (showsTest()) {
        for (int64_t i = 0; i < run.evalTest.rows; ++i) {
            const float* x = run.evalTest.row(i);
            const int cls = run.regression ? 0 : run.evalTest.y[static_cast<std::size_t>(i)];
            blit(toWidget(x[0], x[1], plot), marker(cls, 1, 3.8 * scale));
        }
    }
    if (showsTrain()) {
        const int64_t n = run.train.rows;
        const int32_t* counts =
            sized ? run.counts.data() + static_cast<std::size_t>(selectedMember()) * n : nullptr;
        for (int64_t i = 0; i < n; ++i) {
            const float* x = run.train.row(i);
            const int cls = run.regression ? 0 : run.train.y[static_cast<std::size_t>(i)];
            double r = 3.0 * scale;
            int style = 0;
            if (counts != nullptr) {
                const int count = counts[i];
                if (count == 0) {
                    style = 2;
                    r = 2.6 * scale;
                } else {
                    r = (1.6 + 1.5 * std::sqrt(static_cast<double>(count))) * scale;
                }
            }
            blit(toWidget(x[0], x[1], plot), marker(cls, style, r));
        }
    }
}

void BoundaryCanvas::drawColorBar(QPainter& p, const QRectF& bar) const {
    const Snapshot& s = *m_snapshot;
    const int classes = s.run->classes;
    QFont font = p.font();
    font.setPointSizeF(8.5);
    p.setFont(font);
    const QFontMetricsF fm(font);
    p.setPen(plot::kText);
    if (!s.hasEnsemble) {
        return;
    }
    auto label = [&](double t, const QString& text) {
        const double y = bar.bottom() - t * bar.height();
        p.setPen(QPen(plot::kAxis, 1.0));
        p.drawLine(QPointF(bar.right(), y), QPointF(bar.right() + 3, y));
        p.setPen(plot::kText);
        drawTextFitted(p, QPointF(bar.right() + 6, y + fm.ascent() / 2 - 1), text);
    };
    const bool regression = s.run->regression;
    if (m_quantity == HeatQuantity::Probability && classes > 2 && !regression) {
        // Class swatches; saturation stands for the confidence.
        double y = bar.top();
        drawTextFitted(p, QPointF(bar.left(), y - 4), tr("class"));
        for (int c = 0; c < std::min(classes, 12); ++c) {
            p.setBrush(QColor(classConfidenceColor(c, 1.0, classes)));
            p.setPen(QPen(plot::kAxis, 0.8));
            p.drawRect(QRectF(bar.left(), y + 2, 14, 12));
            p.setPen(plot::kText);
            drawTextFitted(p, QPointF(bar.left() + 20, y + 12), QString::number(c));
            y += 17;
        }
        p.setPen(plot::kMuted);
        drawTextFitted(p, QRectF(bar.left(), y + 6, 90, 40), Qt::TextWordWrap,
                       tr("saturation:\nconfidence"));
        return;
    }
    const bool probability = m_quantity == HeatQuantity::Probability && !regression;
    const QImage strip = colorStrip(probability ? divergingColor : sequentialColor,
                                    static_cast<int>(bar.height()), true);
    p.drawImage(bar, strip);
    p.setPen(QPen(plot::kAxis, 0.8));
    p.setBrush(Qt::NoBrush);
    p.drawRect(bar);
    const HeatImage& h = s.heat[static_cast<std::size_t>(m_quantity)];
    if (probability) {
        label(0.0, QStringLiteral("0"));
        label(0.5, QStringLiteral("0.5"));
        label(1.0, QStringLiteral("1"));
    } else {
        const std::vector<double> ticks = niceTicks(h.low, h.high, 4);
        const QStringList labels = tickLabels(ticks);
        for (std::size_t i = 0; i < ticks.size(); ++i) {
            label((ticks[i] - h.low) / (h.high - h.low), labels[static_cast<qsizetype>(i)]);
        }
    }
    p.setPen(plot::kText);
    const QString title = probability ? tr("p(class 1)")
                          : regression
                              ? regressionQuantityLabel(m_quantity)
                              : quantityLabel(m_quantity) +
                                    (quantityUnit(m_quantity).isEmpty()
                                         ? QString()
                                         : QStringLiteral(" [%1]").arg(quantityUnit(m_quantity)));
    drawVerticalText(p, QPointF(bar.right() + 58, bar.center().y()), title);
    p.setPen(plot::kMuted);
    const QString range =
        probability
            ? tr("p in [%1, %2]")
                  .arg(QString::number(h.dataMin, 'f', 2), QString::number(h.dataMax, 'f', 2))
            : tr("range %1 – %2")
                  .arg(std::abs(h.dataMin) < 1e-4 * std::abs(h.dataMax) ? QStringLiteral("0")
                                                                        : formatValue(h.dataMin),
                       formatValue(h.dataMax));
    drawTextFitted(p, QRectF(bar.left() - 14, bar.bottom() + 8, 96, 34), Qt::TextWordWrap, range);
}

void BoundaryCanvas::hover(const QPointF& pos, const QPoint& globalPos) {
    m_hoverText = readout(pos);
    if (m_hoverText.isEmpty()) {
        QToolTip::hideText();
    } else {
        QToolTip::showText(globalPos, m_hoverText, this);
    }
}

void BoundaryCanvas::leaveEvent(QEvent* /*event*/) {
    m_hoverText.clear();
    QToolTip::hideText();
}

BoundaryView::BoundaryView(QWidget* parent) : QWidget(parent) {
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(6, 6, 6, 6);
    auto* bar = new QHBoxLayout;
    m_quantityBox = new QComboBox;
    for (int q = 0; q < kHeatQuantityCount; ++q) {
        m_quantityBox->addItem(quantityLabel(static_cast<HeatQuantity>(q)),
                               quantityKey(static_cast<HeatQuantity>(q)));
    }
    m_quantityBox->setToolTip(
        tr("Mean probability of the class; total uncertainty H[p] = aleatoric E_k H[P_k] + "
           "epistemic (mutual information); the members' spread of p(ŷ); the share of members "
           "voting against the ensemble"));
    m_train = new QCheckBox(tr("Train"));
    m_train->setChecked(true);
    m_test = new QCheckBox(tr("Test"));
    m_test->setChecked(true);
    m_caption = new WrappingLabel;
    m_caption->setStyleSheet(QStringLiteral("color: #555;"));
    // Its own line under the controls, wrapping: step, loss and accuracy stay readable at
    // 900 x 600 with the Experiment panel open.
    bar->addWidget(new QLabel(tr("Show")));
    bar->addWidget(m_quantityBox);
    bar->addSpacing(12);
    bar->addWidget(m_train);
    bar->addWidget(m_test);
    bar->addStretch(1);
    layout->addLayout(bar);
    layout->addWidget(m_caption);
    m_canvas = new BoundaryCanvas;
    layout->addWidget(m_canvas, 1);
    connect(m_quantityBox, &QComboBox::currentIndexChanged, this,
            [this](int index) { m_canvas->setQuantity(static_cast<HeatQuantity>(index)); });
    connect(m_canvas, &BoundaryCanvas::viewChanged, this, &BoundaryView::updateCaption);
    connect(m_train, &QCheckBox::toggled, m_canvas, &BoundaryCanvas::setShowTrain);
    connect(m_test, &QCheckBox::toggled, m_canvas, &BoundaryCanvas::setShowTest);
}

void BoundaryView::setSnapshot(SnapshotPtr snapshot) {
    if (snapshot && (!m_snapshot || snapshot->run != m_snapshot->run)) {
        setRegressionQuantities(snapshot->run->regression);
    }
    m_snapshot = snapshot;
    m_canvas->setSnapshot(std::move(snapshot));
    updateCaption();
}

void BoundaryView::setRegressionQuantities(bool regression) {
    // A regression grid has a mean and three stds in the first four slots; the class-only
    // quantities are disabled.
    auto* model = qobject_cast<QStandardItemModel*>(m_quantityBox->model());
    for (int q = 0; q < kHeatQuantityCount; ++q) {
        const auto quantity = static_cast<HeatQuantity>(q);
        const bool available = !regression || regressionHasQuantity(quantity);
        m_quantityBox->setItemText(q, regression && available ? regressionQuantityLabel(quantity)
                                                              : quantityLabel(quantity));
        if (model != nullptr) {
            if (QStandardItem* item = model->item(q)) {
                item->setEnabled(available);
            }
        }
    }
    if (regression && !regressionHasQuantity(m_canvas->quantity())) {
        m_quantityBox->setCurrentIndex(static_cast<int>(HeatQuantity::Total));
    }
}

void BoundaryView::setSelectedMember(int member) {
    m_canvas->setSelectedMember(member);
    updateCaption();
}

void BoundaryView::setQuantity(HeatQuantity quantity) {
    m_quantityBox->setCurrentIndex(static_cast<int>(quantity));
}

void BoundaryView::updateCaption() {
    if (!m_snapshot) {
        m_caption->clear();
        return;
    }
    const Snapshot& s = *m_snapshot;
    QString text = tr("ensemble of %1 / %2 members · step %3 · epoch %4")
                       .arg(s.includedCount)
                       .arg(s.run->members)
                       .arg(formatCount(s.step))
                       .arg(s.epoch, 0, 'f', 2);
    // The ensemble's latest train and test figures, above the picture as Playground has them.
    if (!s.history.empty() && s.run->regression) {
        const HistoryPoint& h = *s.history.back();
        text += tr("<br>train loss %1, RMSE %2 · test loss %3, RMSE %4")
                    .arg(formatValue(h.ensembleTrain.loss), formatValue(h.ensembleTrain.rmse),
                         formatValue(h.ensembleTest.loss), formatValue(h.ensembleTest.rmse));
    } else if (!s.history.empty()) {
        const HistoryPoint& h = *s.history.back();
        // The curves' test figures come from the live subset; a stopped run has them on the
        // whole test split.
        QString note = liveSubsetNote(*s.run, s.run->evalTest.rows);
        double testLoss = h.ensembleTest.loss;
        double testAccuracy = h.ensembleTest.accuracy;
        if (!note.isEmpty() && !s.figuresOnSubset() && s.hasEnsemble) {
            testLoss = s.ensembleMetrics.nll;
            testAccuracy = s.ensembleMetrics.accuracy;
            note.clear();
        }
        text += tr("<br>train loss %1, acc %2% · test loss %3, acc %4%%5")
                    .arg(h.ensembleTrain.loss, 0, 'f', 3)
                    .arg(100.0 * h.ensembleTrain.accuracy, 0, 'f', 1)
                    .arg(testLoss, 0, 'f', 3)
                    .arg(100.0 * testAccuracy, 0, 'f', 1)
                    .arg(note.isEmpty() ? QString() : QStringLiteral(" (%1)").arg(note));
    }
    const int k = m_canvas->selectedMember();
    if (k >= 0 && k < s.run->members) {
        text += tr("  ·  <span style='color:#e67e22'>- - member #%1</span> (lr %2)")
                    .arg(k)
                    .arg(formatValue(s.run->lr[static_cast<std::size_t>(k)]));
        if (s.run->config.ensemble.bootstrap != BootstrapMode::None) {
            text += tr(" · size = multiplicity, hollow = out of bag");
        }
    }
    if (m_canvas->isZoomed() && s.run->hasGrid) {
        const GridBounds v = m_canvas->viewBounds();
        const GridBounds& b = s.run->bounds;
        text += tr(" · zoom ×%1, double-click: all")
                    .arg((b.xMax - b.xMin) / (v.xMax - v.xMin), 0, 'f', 1);
    }
    m_caption->setText(text);
}

}  // namespace ensemble::ui
