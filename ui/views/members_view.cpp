#include "views/members_view.h"

#include <QComboBox>
#include <QHBoxLayout>
#include <QHelpEvent>
#include <QLabel>
#include <QMouseEvent>
#include <QPainter>
#include <QPushButton>
#include <QScrollArea>
#include <QScrollBar>
#include <QToolTip>
#include <QTransform>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "render/colormap.h"
#include "render/plot_helpers.h"
#include "render/text_fit.h"

namespace ensemble::ui {

namespace {

constexpr int kTileMargin = 8;
constexpr int kGap = 8;
constexpr int kThumb = 124;
constexpr int kTextHeight = 36;
constexpr int kSwitch = 14;

}  // namespace

MembersGrid::MembersGrid(QWidget* parent) : QWidget(parent) {
    QSizePolicy policy(QSizePolicy::Preferred, QSizePolicy::Preferred);
    policy.setHeightForWidth(true);
    setSizePolicy(policy);
    setMouseTracking(false);
}

QSize MembersGrid::tileSize() const {
    const bool grid = m_snapshot && m_snapshot->hasGrid;
    return {kThumb + 8, (grid ? kThumb + 8 : 40) + kTextHeight};
}

int MembersGrid::columns(int width) const {
    const int w = tileSize().width() + kGap;
    return std::max(1, (width - 2 * kTileMargin + kGap) / w);
}

int MembersGrid::heightForWidth(int width) const {
    const int n = m_snapshot ? m_snapshot->run->members : 0;
    const int cols = columns(width);
    const int rows = (n + cols - 1) / cols;
    return 2 * kTileMargin + rows * (tileSize().height() + kGap);
}

QSize MembersGrid::sizeHint() const {
    const int w = 4 * (tileSize().width() + kGap) + 2 * kTileMargin;
    return {w, heightForWidth(w)};
}

void MembersGrid::resizeEvent(QResizeEvent* event) {
    QWidget::resizeEvent(event);
    const int h = heightForWidth(width());
    if (h != height()) {
        setMinimumHeight(h);
    }
}

void MembersGrid::setSnapshot(SnapshotPtr snapshot) {
    const bool newRun = !m_snapshot || !snapshot || m_snapshot->run != snapshot->run;
    m_snapshot = std::move(snapshot);
    m_thumbs.clear();
    if (m_snapshot) {
        m_thumbs.resize(m_snapshot->memberImages.size());
        if (newRun && m_selected >= m_snapshot->run->members) {
            m_selected = -1;
        }
    }
    updateOrder();
    setMinimumHeight(heightForWidth(width()));
    updateGeometry();
    update();
}

void MembersGrid::setSelectedMember(int member) {
    if (member != m_selected) {
        m_selected = member;
        update();
    }
}

void MembersGrid::setSortByLoss(bool byLoss) {
    m_byLoss = byLoss;
    updateOrder();
    update();
}

void MembersGrid::updateOrder() {
    const int n = m_snapshot ? m_snapshot->run->members : 0;
    m_order.resize(static_cast<std::size_t>(n));
    std::iota(m_order.begin(), m_order.end(), 0);
    if (m_byLoss && m_snapshot && m_snapshot->memberMetrics.size() == m_order.size()) {
        const auto& metrics = m_snapshot->memberMetrics;
        std::stable_sort(m_order.begin(), m_order.end(), [&](int a, int b) {
            const double la = metrics[static_cast<std::size_t>(a)].nll;
            const double lb = metrics[static_cast<std::size_t>(b)].nll;
            const double fa = std::isfinite(la) ? la : 1e300;
            const double fb = std::isfinite(lb) ? lb : 1e300;
            return fa < fb;
        });
    }
}

QRect MembersGrid::tileRect(int member) const {
    const auto it = std::find(m_order.begin(), m_order.end(), member);
    if (it == m_order.end()) {
        return {};
    }
    const int index = static_cast<int>(it - m_order.begin());
    const int cols = columns(width());
    const QSize t = tileSize();
    return {kTileMargin + (index % cols) * (t.width() + kGap),
            kTileMargin + (index / cols) * (t.height() + kGap), t.width(), t.height()};
}

QRect MembersGrid::switchRect(int member) const {
    const QRect t = tileRect(member);
    return t.isEmpty() ? QRect() : QRect(t.left() + 7, t.top() + 7, kSwitch, kSwitch);
}

void MembersGrid::paintEvent(QPaintEvent* event) {
    QPainter p(this);
    p.fillRect(rect(), palette().window());
    if (!m_snapshot) {
        return;
    }
    const Snapshot& s = *m_snapshot;
    const RunInfo& run = *s.run;
    QFont small = font();
    small.setPointSizeF(8.0);
    QFont bold = small;
    bold.setBold(true);
    const QFontMetrics fm(small);
    for (int k = 0; k < run.members; ++k) {
        const QRect tile = tileRect(k);
        if (!tile.intersects(event->rect())) {
            continue;
        }
        const std::size_t ku = static_cast<std::size_t>(k);
        const bool enabled = s.switchedOn[ku] != 0;
        const bool diverged = s.diverged[ku] != 0;
        const bool selected = k == m_selected;
        p.setRenderHint(QPainter::Antialiasing, false);
        p.setPen(QPen(selected ? plot::kAccent : QColor(210, 210, 210), selected ? 2 : 1));
        p.setBrush(Qt::white);
        p.drawRect(tile.adjusted(0, 0, -1, -1));
        const QRect thumb(tile.left() + 4, tile.top() + 4, tile.width() - 8,
                          s.hasGrid ? tile.width() - 8 : 32);
        if (s.hasGrid && ku < s.memberImages.size()) {
            if (m_thumbs[ku].isNull()) {
                m_thumbs[ku] = QPixmap::fromImage(s.memberImages[ku]);
            }
            p.setRenderHint(QPainter::SmoothPixmapTransform);
            p.drawPixmap(thumb, m_thumbs[ku]);
            const double g = run.gridSize;
            const QTransform toThumb = QTransform::fromTranslate(thumb.left(), thumb.top())
                                           .scale(thumb.width() / g, thumb.height() / g);
            p.setRenderHint(QPainter::Antialiasing);
            p.setPen(QPen(QColor(20, 20, 20, 200), 1.1));
            p.setBrush(Qt::NoBrush);
            for (const QPolygonF& line : s.memberContours[ku]) {
                p.drawPolyline(toThumb.map(line));
            }
        } else {
            // No grid (image data): the member's test accuracy as a bar.
            const double acc =
                ku < s.memberMetrics.size() ? s.memberMetrics[ku].accuracy : std::nan("");
            p.fillRect(thumb, QColor(240, 240, 240));
            if (std::isfinite(acc)) {
                p.fillRect(QRect(thumb.left(), thumb.top(),
                                 static_cast<int>(thumb.width() * std::clamp(acc, 0.0, 1.0)),
                                 thumb.height()),
                           QColor(120, 170, 210));
            }
            p.setPen(plot::kText);
            p.setFont(bold);
            drawTextFitted(p, thumb, Qt::AlignCenter,
                           std::isfinite(acc) ? tr("%1 %").arg(acc * 100, 0, 'f', 1) : tr("–"));
        }
        if (!enabled) {
            p.fillRect(thumb, QColor(255, 255, 255, 175));
            p.setFont(bold);
            p.setPen(plot::kMuted);
            drawTextFitted(p, thumb, Qt::AlignCenter, tr("off"));
        }
        // On/off box.
        const QRect box = switchRect(k);
        p.setRenderHint(QPainter::Antialiasing, false);
        p.setPen(QPen(QColor(90, 90, 90), 1));
        p.setBrush(QColor(255, 255, 255, 235));
        p.drawRect(box.adjusted(0, 0, -1, -1));
        if (enabled) {
            p.setRenderHint(QPainter::Antialiasing);
            p.setPen(QPen(QColor(30, 110, 60), 2.0));
            p.drawLine(QPointF(box.left() + 3, box.top() + 7.5),
                       QPointF(box.left() + 6, box.bottom() - 3));
            p.drawLine(QPointF(box.left() + 6, box.bottom() - 3),
                       QPointF(box.right() - 2, box.top() + 3));
        }
        if (diverged) {
            p.setRenderHint(QPainter::Antialiasing);
            p.setFont(bold);
            const QString text = tr("diverged");
            const int w = QFontMetrics(bold).horizontalAdvance(text) + 10;
            const QRect badge(thumb.right() - w - 2, thumb.top() + 3, w, 16);
            p.setPen(Qt::NoPen);
            p.setBrush(QColor(192, 57, 43));
            p.drawRoundedRect(badge, 7, 7);
            p.setPen(Qt::white);
            drawTextFitted(p, badge, Qt::AlignCenter, text);
        }
        // Labels.
        const int textTop = thumb.bottom() + 3;
        p.setPen(plot::kText);
        p.setFont(bold);
        drawTextFitted(p, QRect(tile.left() + 5, textTop, tile.width() - 10, 16),
                       Qt::AlignLeft | Qt::AlignVCenter, tr("#%1").arg(k));
        if (ku < run.memberOrigins.size()) {
            // Where it was trained (an opened file from an MPI mesh), over the thumbnail.
            p.setFont(small);
            const QString origin = QString::fromStdString(run.memberOrigins[ku]);
            const int w = QFontMetrics(small).horizontalAdvance(origin) + 8;
            const QRect badge(thumb.left() + 3, thumb.bottom() - 17, std::min(w, thumb.width() - 6),
                              15);
            p.setPen(Qt::NoPen);
            p.setBrush(QColor(255, 255, 255, 215));
            p.drawRect(badge);
            p.setPen(plot::kText);
            drawTextFitted(p, badge, Qt::AlignCenter, origin);
            p.setFont(bold);
        }
        p.setFont(small);
        drawTextFitted(p, QRect(tile.left() + 5, textTop, tile.width() - 10, 16),
                       Qt::AlignRight | Qt::AlignVCenter, tr("lr %1").arg(formatValue(run.lr[ku])));
        const double loss = ku < s.lastLosses.size() ? s.lastLosses[ku] : std::nan("");
        const double acc =
            ku < s.memberMetrics.size() ? s.memberMetrics[ku].accuracy : std::nan("");
        p.setPen(diverged ? QColor(192, 57, 43) : plot::kMuted);
        drawTextFitted(p, QRect(tile.left() + 5, textTop + 16, tile.width() - 10, 16),
                       Qt::AlignLeft | Qt::AlignVCenter,
                       diverged ? tr("loss non-finite")
                                : tr("loss %1 · %2")
                                      .arg(std::isfinite(loss) ? QString::number(loss, 'g', 2)
                                                               : QStringLiteral("–"))
                                      .arg(std::isfinite(acc) ? QString::number(acc * 100, 'f', 1) +
                                                                    QStringLiteral("%")
                                                              : QStringLiteral("–")));
    }
}

bool MembersGrid::event(QEvent* event) {
    if (event->type() != QEvent::ToolTip || !m_snapshot) {
        return QWidget::event(event);
    }
    auto* help = static_cast<QHelpEvent*>(event);
    const Snapshot& s = *m_snapshot;
    const RunInfo& run = *s.run;
    for (int k = 0; k < run.members; ++k) {
        if (!tileRect(k).contains(help->pos())) {
            continue;
        }
        const std::size_t ku = static_cast<std::size_t>(k);
        QStringList lines;
        lines << tr("member #%1%2")
                     .arg(k)
                     .arg(s.diverged[ku]      ? tr(" (diverged, frozen)")
                          : !s.switchedOn[ku] ? tr(" (switched off)")
                                              : QString());
        lines << tr("lr %1 · momentum %2 · weight decay %3")
                     .arg(formatValue(run.lr[ku]), formatValue(run.momentum[ku]),
                          formatValue(run.weightDecay[ku]));
        if (ku < run.memberOrigins.size()) {
            lines << tr("trained on %1 of a %2 mesh")
                         .arg(QString::fromStdString(run.memberOrigins[ku]),
                              QString::fromStdString(run.mesh));
        }
        lines << tr("last batch loss %1").arg(formatValue(s.lastLosses[ku]));
        if (ku < s.memberMetrics.size()) {
            lines << tr("test: accuracy %1 %, NLL %2, ECE %3")
                         .arg(s.memberMetrics[ku].accuracy * 100, 0, 'f', 2)
                         .arg(formatValue(s.memberMetrics[ku].nll))
                         .arg(formatValue(s.memberMetrics[ku].ece));
        }
        if (!run.counts.empty() && run.config.ensemble.bootstrap != BootstrapMode::None) {
            const int32_t* c = run.counts.data() + ku * static_cast<std::size_t>(run.trainRows);
            const auto oob = std::count(c, c + run.trainRows, 0);
            lines << tr("out of bag: %1 of %2 train rows").arg(oob).arg(run.trainRows);
        }
        QToolTip::showText(help->globalPos(), lines.join(QLatin1Char('\n')), this);
        return true;
    }
    QToolTip::hideText();
    return true;
}

void MembersGrid::mousePressEvent(QMouseEvent* event) {
    if (!m_snapshot || event->button() != Qt::LeftButton) {
        return;
    }
    const QPoint pos = event->position().toPoint();
    for (int k = 0; k < m_snapshot->run->members; ++k) {
        if (switchRect(k).adjusted(-3, -3, 3, 3).contains(pos)) {
            Q_EMIT memberToggled(k, m_snapshot->switchedOn[static_cast<std::size_t>(k)] == 0);
            return;
        }
        if (tileRect(k).contains(pos)) {
            m_selected = m_selected == k ? -1 : k;
            update();
            Q_EMIT memberSelected(m_selected);
            return;
        }
    }
}

MembersView::MembersView(QWidget* parent) : QWidget(parent) {
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(6, 6, 6, 6);
    auto* bar = new QHBoxLayout;
    auto* allOn = new QPushButton(tr("All on"));
    auto* allOff = new QPushButton(tr("All off"));
    m_sort = new QComboBox;
    m_sort->addItem(tr("Member order"));
    m_sort->addItem(tr("Best test NLL first"));
    m_info =
        new QLabel(tr("Click a member to draw it in Boundary; its box switches it in or out "
                      "of the ensemble."));
    m_info->setStyleSheet(QStringLiteral("color: #666;"));
    m_info->setWordWrap(true);  // a narrow window wraps it instead of widening the view
    bar->addWidget(allOn);
    bar->addWidget(allOff);
    bar->addSpacing(10);
    bar->addWidget(new QLabel(tr("Sort")));
    bar->addWidget(m_sort);
    bar->addSpacing(10);
    bar->addWidget(m_info, 1);
    layout->addLayout(bar);
    m_scroll = new QScrollArea;
    m_scroll->setWidgetResizable(true);
    m_scroll->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
    m_grid = new MembersGrid;
    m_scroll->setWidget(m_grid);
    layout->addWidget(m_scroll, 1);
    connect(m_grid, &MembersGrid::memberSelected, this, &MembersView::memberSelected);
    connect(m_grid, &MembersGrid::memberToggled, this, &MembersView::memberToggled);
    connect(allOn, &QPushButton::clicked, this, [this] { Q_EMIT allMembersSet(true); });
    connect(allOff, &QPushButton::clicked, this, [this] { Q_EMIT allMembersSet(false); });
    connect(m_sort, &QComboBox::currentIndexChanged, this,
            [this](int index) { m_grid->setSortByLoss(index == 1); });
}

void MembersView::setSnapshot(SnapshotPtr snapshot) {
    if (snapshot && snapshot->run) {
        const std::string& mesh = snapshot->run->mesh;
        const QString text =
            mesh.empty()
                ? tr("Click a member to draw it in Boundary; its box switches it in or out of "
                     "the ensemble.")
                : tr("Trained on a mesh of %1: each tile shows the rank (and device) that "
                     "trained the member. Click a member to draw it in Boundary; its box "
                     "switches it in or out of the ensemble.")
                      .arg(QString::fromStdString(mesh));
        if (m_info->text() != text) {
            m_info->setText(text);
        }
    }
    m_grid->setSnapshot(std::move(snapshot));
}

void MembersView::setSelectedMember(int member) {
    m_grid->setSelectedMember(member);
}

}  // namespace ensemble::ui
