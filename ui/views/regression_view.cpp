#include "views/regression_view.h"

#include <QCheckBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QPainter>
#include <QPainterPath>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>
#include <limits>

#include "render/plot_helpers.h"
#include "render/text_fit.h"
#include "widgets/wrapping_label.h"

namespace ensemble::ui {

namespace {

constexpr double kLeft = 62.0;
constexpr double kBottom = 42.0;
constexpr double kTop = 14.0;
constexpr double kRight = 16.0;

const QColor kMeanColor(8, 69, 148);
const QColor kMemberColor(110, 110, 110, 150);
const QColor kTrainColor(20, 20, 20);
const QColor kTestColor(150, 150, 150);
const QColor kOutside(232, 232, 232);

}  // namespace

RegressionCanvas::RegressionCanvas(QWidget* parent) : PlotCanvas(parent) {
    setFocusPolicy(Qt::ClickFocus);  // + - 0 zoom once the plot is clicked
    setAttribute(Qt::WA_OpaquePaintEvent);
    setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Expanding);
}

QColor RegressionCanvas::outerBandColor() {
    return {198, 219, 239};
}

QColor RegressionCanvas::innerBandColor() {
    return {120, 178, 218};
}

void RegressionCanvas::setSnapshot(SnapshotPtr snapshot) {
    const bool newRun = !snapshot || !m_snapshot || snapshot->run != m_snapshot->run;
    m_snapshot = std::move(snapshot);
    updateRange();
    if (m_snapshot) {
        followRun(m_snapshot->run->members, newRun);
    }
    update();
}

void RegressionCanvas::setShowMembers(bool show) {
    m_showMembers = show;
    update();
}

std::optional<GridBounds> RegressionCanvas::dataBox() const {
    if (!m_snapshot || !m_snapshot->run->hasCurve) {
        return std::nullopt;
    }
    return GridBounds{xMin(), xMax(), m_yMin, m_yMax};
}

double RegressionCanvas::xMin() const {
    return m_snapshot && !m_snapshot->run->curveX.empty() ? m_snapshot->run->curveX.front() : 0.0;
}

double RegressionCanvas::xMax() const {
    return m_snapshot && !m_snapshot->run->curveX.empty() ? m_snapshot->run->curveX.back() : 1.0;
}

void RegressionCanvas::updateRange() {
    if (!m_snapshot || !m_snapshot->run->hasCurve) {
        return;
    }
    const RunInfo& run = *m_snapshot->run;
    double lo = std::numeric_limits<double>::infinity();
    double hi = -lo;
    auto take = [&](double v) {
        if (std::isfinite(v)) {
            lo = std::min(lo, v);
            hi = std::max(hi, v);
        }
    };
    for (float t : run.train.target) {
        take(t);
    }
    for (float t : run.evalTest.target) {
        take(t);
    }
    if (!(lo <= hi)) {
        lo = -1.0;
        hi = 1.0;
    }
    // The mean may extrapolate beyond the data (x^3 does): show it, up to a data span more on
    // each side, so an untrained member's wild line does not squash the picture.
    const double span = std::max(hi - lo, 1e-6);
    double meanLo = lo;
    double meanHi = hi;
    for (double m : m_snapshot->curve.mean) {
        if (std::isfinite(m)) {
            meanLo = std::min(meanLo, m);
            meanHi = std::max(meanHi, m);
        }
    }
    lo = std::max(meanLo, lo - span);
    hi = std::min(meanHi, hi + span);
    const double pad = 0.08 * (hi - lo);
    m_yMin = lo - pad;
    m_yMax = hi + pad;
}

QRectF RegressionCanvas::plotRect() const {
    return {kLeft, kTop, std::max(10.0, width() - kLeft - kRight),
            std::max(10.0, height() - kTop - kBottom)};
}

QPointF RegressionCanvas::toWidget(double x, double y) const {
    return toWidget(x, y, plotRect());
}

void RegressionCanvas::paintEvent(QPaintEvent* /*event*/) {
    QPainter p(this);
    p.fillRect(rect(), plot::kBackground);
    p.setRenderHint(QPainter::Antialiasing);
    if (!m_snapshot || !m_snapshot->run->hasCurve) {
        p.setPen(plot::kMuted);
        drawTextFitted(p, rect(), Qt::AlignCenter,
                       m_snapshot
                           ? tr("The regression curve is drawn for 1-D regression inputs only.")
                           : tr("Configure an experiment and press Train."));
        return;
    }
    const Snapshot& s = *m_snapshot;
    const RunInfo& run = *s.run;
    const QRectF plot = plotRect();
    p.fillRect(plot, Qt::white);
    p.save();
    p.setClipRect(plot);
    // Outside the training range: where only the prior and the members' disagreement speak.
    const double inLeft = toWidget(run.trainMin, 0).x();
    const double inRight = toWidget(run.trainMax, 0).x();
    p.fillRect(QRectF(QPointF(plot.left(), plot.top()), QPointF(inLeft, plot.bottom())), kOutside);
    p.fillRect(QRectF(QPointF(inRight, plot.top()), QPointF(plot.right(), plot.bottom())),
               kOutside);

    const std::vector<float>& xs = run.curveX;
    const RegressionPoints& e = s.curve;
    const std::size_t n = xs.size();
    if (s.hasEnsemble && e.rows == static_cast<int64_t>(n)) {
        // A band mean ± 2 sqrt(variance) as one closed polygon.
        auto band = [&](const std::vector<double>& variance, const QColor& color) {
            QPolygonF poly;
            poly.reserve(static_cast<qsizetype>(2 * n));
            for (std::size_t i = 0; i < n; ++i) {
                poly << toWidget(xs[i], e.mean[i] + 2.0 * std::sqrt(std::max(0.0, variance[i])));
            }
            for (std::size_t i = n; i-- > 0;) {
                poly << toWidget(xs[i], e.mean[i] - 2.0 * std::sqrt(std::max(0.0, variance[i])));
            }
            p.setPen(Qt::NoPen);
            p.setBrush(color);
            p.drawPolygon(poly);
        };
        band(e.variance, outerBandColor());
        band(e.aleatoric, innerBandColor());
    }
    // Each included member's mean, thin; the selected one on top in the accent colour.
    const int selected = selectedMember();
    const MemberGaussians& g = s.curveMembers;
    auto memberLine = [&](int k) {
        QPolygonF line;
        line.reserve(static_cast<qsizetype>(n));
        const double* mean = g.mean.data() + static_cast<std::size_t>(k) * n;
        for (std::size_t i = 0; i < n; ++i) {
            if (std::isfinite(mean[i])) {
                line << toWidget(xs[i], mean[i]);
            }
        }
        p.drawPolyline(line);
    };
    if (g.rows == static_cast<int64_t>(n)) {
        p.setBrush(Qt::NoBrush);
        if (m_showMembers) {
            p.setPen(QPen(kMemberColor, 1.0));
            for (int k = 0; k < g.members; ++k) {
                const std::size_t ku = static_cast<std::size_t>(k);
                if (k != selected && ku < s.included.size() && s.included[ku]) {
                    memberLine(k);
                }
            }
        }
        if (selected >= 0 && selected < g.members) {
            QPen pen(plot::kAccent, 1.8);
            pen.setStyle(Qt::DashLine);
            p.setPen(pen);
            memberLine(selected);
        }
    }
    if (s.hasEnsemble && e.rows == static_cast<int64_t>(n)) {
        QPolygonF line;
        for (std::size_t i = 0; i < n; ++i) {
            line << toWidget(xs[i], e.mean[i]);
        }
        p.setPen(QPen(kMeanColor, 2.2));
        p.setBrush(Qt::NoBrush);
        p.drawPolyline(line);
    }
    // Test points hollow and light, train points filled: the train points are few and matter.
    if (showsTest()) {
        p.setPen(QPen(kTestColor, 1.0));
        p.setBrush(Qt::NoBrush);
        const Dataset& t = run.evalTest;
        for (int64_t i = 0; i < t.rows && i < static_cast<int64_t>(t.target.size()); ++i) {
            p.drawEllipse(
                toWidget(t.x[static_cast<std::size_t>(i)], t.target[static_cast<std::size_t>(i)]),
                2.4, 2.4);
        }
    }
    if (showsTrain()) {
        p.setPen(QPen(Qt::white, 0.8));
        p.setBrush(kTrainColor);
        const Dataset& t = run.train;
        for (int64_t i = 0; i < t.rows && i < static_cast<int64_t>(t.target.size()); ++i) {
            p.drawEllipse(
                toWidget(t.x[static_cast<std::size_t>(i)], t.target[static_cast<std::size_t>(i)]),
                3.4, 3.4);
        }
    }
    // The training range's edges.
    QPen edge(plot::kMuted, 1.0);
    edge.setStyle(Qt::DashLine);
    p.setPen(edge);
    p.drawLine(QPointF(inLeft, plot.top()), QPointF(inLeft, plot.bottom()));
    p.drawLine(QPointF(inRight, plot.top()), QPointF(inRight, plot.bottom()));
    p.restore();

    if (!s.hasEnsemble) {
        p.setPen(plot::kMuted);
        drawTextFitted(p, plot, Qt::AlignCenter,
                       tr("No member is switched on:\nno ensemble to show."));
    }
    drawAxes(p, plot);
    p.setPen(QPen(plot::kAxis, 1.0));
    p.setBrush(Qt::NoBrush);
    p.drawRect(plot);
    drawLegend(p, plot);
}

void RegressionCanvas::drawAxes(QPainter& p, const QRectF& plot) const {
    const RunInfo& run = *m_snapshot->run;
    QFont font = p.font();
    font.setPointSizeF(8.5);
    p.setFont(font);
    const QFontMetricsF fm(font);
    p.setPen(QPen(plot::kAxis, 1.0));
    const GridBounds v = viewBounds();
    const std::vector<double> xTicks = niceTicks(v.xMin, v.xMax, 8);
    const QStringList xLabels = tickLabels(xTicks);
    for (std::size_t i = 0; i < xTicks.size(); ++i) {
        const double x = toWidget(xTicks[i], v.yMin).x();
        p.drawLine(QPointF(x, plot.bottom()), QPointF(x, plot.bottom() + 4));
        const QString& text = xLabels[static_cast<qsizetype>(i)];
        drawTextFitted(
            p, QPointF(x - fm.horizontalAdvance(text) / 2, plot.bottom() + 6 + fm.ascent()), text);
    }
    const std::vector<double> yTicks = niceTicks(v.yMin, v.yMax, 6);
    const QStringList yLabels = tickLabels(yTicks);
    for (std::size_t i = 0; i < yTicks.size(); ++i) {
        const double y = toWidget(v.xMin, yTicks[i]).y();
        p.drawLine(QPointF(plot.left() - 4, y), QPointF(plot.left(), y));
        const QString& text = yLabels[static_cast<qsizetype>(i)];
        drawTextFitted(
            p, QPointF(plot.left() - 7 - fm.horizontalAdvance(text), y + fm.ascent() / 2 - 1),
            text);
    }
    p.setPen(plot::kText);
    const QString xName = run.train.featureNames.empty()
                              ? QStringLiteral("x0")
                              : QString::fromStdString(run.train.featureNames.front());
    drawTextFitted(
        p, QPointF(plot.center().x() - fm.horizontalAdvance(xName) / 2, plot.bottom() + 34), xName);
    const QString yName = run.train.targetName.empty()
                              ? QStringLiteral("y")
                              : QString::fromStdString(run.train.targetName);
    drawVerticalText(p, QPointF(plot.left() - 48, plot.center().y()), yName);
}

void RegressionCanvas::drawLegend(QPainter& p, const QRectF& plot) const {
    QFont font = p.font();
    font.setPointSizeF(8.5);
    p.setFont(font);
    const QFontMetricsF fm(font);
    const bool gaussian = m_snapshot->run->likelihood == Likelihood::Gaussian;
    struct Entry {
        QString text;
        int kind;  // 0 line, 1 swatch, 2 filled dot, 3 ring, 4 thin line
        QColor color;
    };
    std::vector<Entry> entries{
        {tr("ensemble mean μ"), 0, kMeanColor},
        {tr("±2σ total"), 1, outerBandColor()},
    };
    if (gaussian) {
        entries.push_back({tr("±2σ aleatoric"), 1, innerBandColor()});
    }
    entries.push_back({tr("member means"), 4, kMemberColor});
    entries.push_back({tr("train"), 2, kTrainColor});
    entries.push_back({tr("test"), 3, kTestColor});
    entries.push_back({tr("outside the train range"), 1, kOutside});
    double w = 0.0;
    for (const Entry& e : entries) {
        w = std::max(w, fm.horizontalAdvance(e.text));
    }
    const double row = fm.height() + 2;
    const QRectF box(plot.left() + 8, plot.top() + 8, w + 40,
                     row * static_cast<double>(entries.size()) + 8);
    p.setPen(QPen(plot::kGrid, 1.0));
    p.setBrush(QColor(255, 255, 255, 225));
    p.drawRect(box);
    double y = box.top() + 4;
    for (const Entry& e : entries) {
        const QPointF mid(box.left() + 16, y + row / 2);
        switch (e.kind) {
            case 0:
            case 4:
                p.setPen(QPen(e.color, e.kind == 0 ? 2.2 : 1.0));
                p.drawLine(mid - QPointF(9, 0), mid + QPointF(9, 0));
                break;
            case 1:
                p.setPen(QPen(plot::kGrid, 0.8));
                p.setBrush(e.color);
                p.drawRect(QRectF(mid - QPointF(9, 5), QSizeF(18, 10)));
                break;
            case 2:
                p.setPen(Qt::NoPen);
                p.setBrush(e.color);
                p.drawEllipse(mid, 3.4, 3.4);
                break;
            default:
                p.setPen(QPen(e.color, 1.0));
                p.setBrush(Qt::NoBrush);
                p.drawEllipse(mid, 2.4, 2.4);
                break;
        }
        p.setPen(plot::kText);
        drawTextFitted(p, QPointF(box.left() + 32, y + row / 2 + fm.ascent() / 2 - 1), e.text);
        y += row;
    }
}

RegressionView::RegressionView(QWidget* parent) : QWidget(parent) {
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(6, 6, 6, 6);
    auto* bar = new QHBoxLayout;
    m_members = new QCheckBox(tr("Members"));
    m_members->setChecked(true);
    m_members->setToolTip(tr("Each switched-on member's mean as a thin line"));
    m_train = new QCheckBox(tr("Train"));
    m_train->setChecked(true);
    m_test = new QCheckBox(tr("Test"));
    m_test->setChecked(true);
    m_caption = new WrappingLabel;
    m_caption->setStyleSheet(QStringLiteral("color: #555;"));
    // Its own line under the controls, wrapping: step, loss and accuracy stay readable at
    // 900 x 600 with the Experiment panel open.
    bar->addWidget(new QLabel(tr("Show")));
    bar->addWidget(m_members);
    bar->addWidget(m_train);
    bar->addWidget(m_test);
    bar->addStretch(1);
    layout->addLayout(bar);
    layout->addWidget(m_caption);
    m_canvas = new RegressionCanvas;
    layout->addWidget(m_canvas, 1);
    connect(m_members, &QCheckBox::toggled, m_canvas, &RegressionCanvas::setShowMembers);
    connect(m_train, &QCheckBox::toggled, m_canvas, &RegressionCanvas::setShowTrain);
    connect(m_test, &QCheckBox::toggled, m_canvas, &RegressionCanvas::setShowTest);
}

void RegressionView::setSnapshot(SnapshotPtr snapshot) {
    m_snapshot = snapshot;
    m_canvas->setSnapshot(std::move(snapshot));
    updateCaption();
}

void RegressionView::setSelectedMember(int member) {
    m_canvas->setSelectedMember(member);
}

void RegressionView::updateCaption() {
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
    if (s.hasEnsemble && s.regression.ensemble.rows > 0) {
        const RegressionMetrics& m = s.regression.ensemble;
        text += tr("<br>test RMSE %1 · NLL %2 · 95% coverage %3")
                    .arg(formatValue(m.rmse))
                    .arg(m.probabilistic() ? formatValue(m.nll) : QStringLiteral("–"))
                    .arg(m.probabilistic()
                             ? QString::number(100.0 * m.coverage[2], 'f', 1) + QStringLiteral(" %")
                             : QStringLiteral("–"));
    }
    m_caption->setText(text);
}

}  // namespace ensemble::ui
