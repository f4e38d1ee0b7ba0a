#include "widgets/job_status_row.h"

#include <QAbstractButton>
#include <QHBoxLayout>
#include <QKeySequence>
#include <QProgressBar>
#include <QPushButton>
#include <QShortcut>

#include <algorithm>
#include <cmath>

#include <QLabel>

#include "widgets/elided_label.h"

namespace ensemble::ui {

JobStatusRow::JobStatusRow(QWidget* scope, const QString& cancelTip, QWidget* parent)
    : QWidget(parent) {
    auto* row = new QHBoxLayout(this);
    row->setContentsMargins(0, 0, 0, 0);
    m_progress = new QProgressBar;
    m_progress->setMaximumWidth(180);
    m_progress->setTextVisible(true);
    m_progress->setVisible(false);
    // The message wraps: it reads out figures (a shift's rows and temperature, a comparison's
    // K and steps) that an elided line would leave to a tooltip.
    m_message = new QLabel;
    m_message->setWordWrap(true);
    m_message->setTextFormat(Qt::PlainText);
    m_message->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_message->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);
    markReadout(m_message);
    m_cancel = new QPushButton(tr("&Cancel"));
    m_cancel->setToolTip(cancelTip);
    m_cancel->setEnabled(false);
    row->addWidget(m_progress);
    row->addWidget(m_message, 1);
    row->addWidget(m_cancel);
    connect(m_cancel, &QPushButton::clicked, this, &JobStatusRow::cancelRequested);
    auto* escape = new QShortcut(QKeySequence(Qt::Key_Escape), scope);
    escape->setContext(Qt::WidgetWithChildrenShortcut);
    connect(escape, &QShortcut::activated, this, [this] {
        if (m_cancel->isEnabled()) {
            Q_EMIT cancelRequested();
        }
    });
}

void JobStatusRow::start(const QString& message) {
    showBusy();
    m_cancel->setEnabled(true);
    setMessage(message);
}

void JobStatusRow::finish() {
    hideProgress();
    m_cancel->setEnabled(false);
}

void JobStatusRow::setCancellable(bool cancellable) {
    m_cancel->setEnabled(cancellable);
}

bool JobStatusRow::isCancellable() const {
    return m_cancel->isEnabled();
}

void JobStatusRow::setProgress(int64_t done, int64_t total) {
    if (total <= 0) {
        return;
    }
    m_progress->setVisible(true);
    m_progress->setRange(0, 1000);
    m_progress->setValue(static_cast<int>(std::clamp<int64_t>(done * 1000 / total, 0, 1000)));
    m_progress->setFormat(QStringLiteral("%1 %").arg(done * 100 / total));
}

void JobStatusRow::setProgress(double fraction, const QString& text) {
    m_progress->setVisible(true);
    m_progress->setRange(0, 1000);
    m_progress->setValue(static_cast<int>(std::lround(1000.0 * std::clamp(fraction, 0.0, 1.0))));
    m_progress->setFormat(text);
}

void JobStatusRow::showBusy() {
    m_progress->setRange(0, 0);
    m_progress->setVisible(true);
}

void JobStatusRow::hideProgress() {
    m_progress->setVisible(false);
}

QString JobStatusRow::progressText() const {
    return m_progress->isVisible() ? m_progress->text() : QString();
}

void JobStatusRow::setMessage(const QString& text, bool error) {
    m_error = error;
    m_message->setText(text);
    m_message->setStyleSheet(error ? QStringLiteral("color: #b03a2e;")
                                   : QStringLiteral("color: #555;"));
}

QString JobStatusRow::message() const {
    return m_message->text();
}

void JobStatusRow::addStartShortcut(QWidget* scope, const QAbstractButton* button,
                                    std::function<void()> start) {
    for (const QKeySequence& key :
         {QKeySequence(Qt::CTRL | Qt::Key_Return), QKeySequence(Qt::CTRL | Qt::Key_Enter)}) {
        auto* shortcut = new QShortcut(key, scope);
        shortcut->setContext(Qt::WidgetWithChildrenShortcut);
        QObject::connect(shortcut, &QShortcut::activated, scope, [button, start] {
            if (button->isEnabled()) {
                start();
            }
        });
    }
}

}  // namespace ensemble::ui
