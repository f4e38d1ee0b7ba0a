#include "widgets/busy_overlay.h"

#include <QEvent>
#include <QLabel>
#include <QPainter>
#include <QProgressBar>
#include <QPushButton>
#include <QVBoxLayout>

#include <algorithm>

namespace ensemble::ui {

BusyOverlay::BusyOverlay(QWidget* covered) : QWidget(covered), m_covered(covered) {
    setObjectName(QStringLiteral("BusyOverlay"));
    auto* column = new QVBoxLayout(this);
    column->setContentsMargins(16, 10, 16, 10);
    column->addStretch(1);
    m_label = new QLabel;
    m_label->setObjectName(QStringLiteral("BusyText"));
    m_label->setAlignment(Qt::AlignCenter);
    m_label->setWordWrap(true);
    QFont font = m_label->font();
    font.setPointSizeF(font.pointSizeF() * 1.1);
    m_label->setFont(font);
    m_bar = new QProgressBar;
    m_bar->setRange(0, 0);  // busy: no fraction is known
    m_bar->setTextVisible(false);
    m_bar->setMaximumWidth(280);
    m_bar->setMaximumHeight(8);
    m_cancel = new QPushButton(tr("Cancel"));
    m_cancel->setObjectName(QStringLiteral("BusyCancel"));
    m_cancel->setShortcut(QKeySequence(Qt::Key_Escape));
    m_cancel->setToolTip(
        tr("Stop setting up this run (Esc): no run is left; Train or Reset "
           "starts it again"));
    m_cancel->hide();
    connect(m_cancel, &QPushButton::clicked, this, &BusyOverlay::cancelRequested);
    column->addWidget(m_label);
    column->addWidget(m_bar, 0, Qt::AlignHCenter);
    column->addSpacing(6);
    column->addWidget(m_cancel, 0, Qt::AlignHCenter);
    column->addStretch(1);
    covered->installEventFilter(this);
    m_delay.setSingleShot(true);
    m_delay.setInterval(200);
    connect(&m_delay, &QTimer::timeout, this, [this] {
        place();
        raise();
        show();
    });
    hide();
}

void BusyOverlay::showWork(const QString& what, Cover cover) {
    m_label->setText(what);
    m_cover = cover;
    if (isHidden() && m_delay.interval() > 0) {
        if (!m_delay.isActive()) {
            m_delay.start();
        }
        return;
    }
    m_delay.stop();
    place();
    raise();
    show();
    update();
}

void BusyOverlay::finish() {
    m_delay.stop();
    hide();
}

void BusyOverlay::setCancellable(bool cancellable) {
    m_cancel->setVisible(cancellable);
    m_cancel->setEnabled(cancellable);
}

QString BusyOverlay::text() const {
    return isHidden() ? QString() : m_label->text();
}

bool BusyOverlay::eventFilter(QObject* watched, QEvent* event) {
    if (watched == m_covered && event->type() == QEvent::Resize) {
        place();
    }
    return QWidget::eventFilter(watched, event);
}

void BusyOverlay::place() {
    const QRect all = m_covered->rect();
    if (m_cover == Cover::Everything) {
        setGeometry(all);
        return;
    }
    const int height = std::min(all.height(), sizeHint().height());
    setGeometry(all.left(), all.bottom() - height + 1, all.width(), height);
}

void BusyOverlay::paintEvent(QPaintEvent*) {
    QPainter p(this);
    QColor sheet = palette().color(QPalette::Window);
    // Everything: the old views are gone at once. Strip: the views show through a little.
    sheet.setAlpha(m_cover == Cover::Everything ? 255 : 235);
    p.fillRect(rect(), sheet);
    if (m_cover == Cover::Strip) {
        p.setPen(palette().color(QPalette::Mid));
        p.drawLine(rect().topLeft(), rect().topRight());
    }
}

}  // namespace ensemble::ui
