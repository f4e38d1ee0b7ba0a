// The strips above the views: the pending Reset (an edit waits for it), the crash recovery's
// offer (Restore / Discard) and the missing data of an opened ensemble. Each is a message with
// the buttons that answer it, hidden until the window has something to say there.
#include "main_window.h"

#include <QFrame>
#include <QHBoxLayout>
#include <QLabel>
#include <QPushButton>

namespace ensemble::ui {

namespace {

// A strip above the views: a message and the buttons that answer it, in the colours of a note
// (background, border, text).
QFrame* makeBanner(const QString& name, const char* background, const char* border,
                   const char* text, QLabel** label, const QList<QPushButton*>& buttons) {
    auto* banner = new QFrame;
    banner->setObjectName(name);
    banner->setStyleSheet(
        QStringLiteral("#%1 { background: %2; border-bottom: 1px solid %3; } #%1 QLabel { color: "
                       "%4; }")
            .arg(name, QLatin1String(background), QLatin1String(border), QLatin1String(text)));
    auto* row = new QHBoxLayout(banner);
    row->setContentsMargins(10, 4, 10, 4);
    *label = new QLabel;
    row->addWidget(*label, 1);
    for (QPushButton* b : buttons) {
        row->addWidget(b);
    }
    banner->setVisible(false);
    return banner;
}

}  // namespace

void MainWindow::buildBanners() {
    // Above the views: the one place that says an edit waits for Reset.
    auto* bannerReset = new QPushButton(tr("Reset (R)"));
    connect(bannerReset, &QPushButton::clicked, this, [this] { resetAction()->trigger(); });
    m_banner = makeBanner(QStringLiteral("RestartBanner"), "#fff4d6", "#f0d68a", "#7a5a00",
                          &m_bannerText, {bannerReset});
    // After a crash: the run a recovery checkpoint kept, to restore or discard. A banner, not a
    // dialog: the window works meanwhile and the question waits for the person.
    auto* restore = new QPushButton(tr("Restore"));
    restore->setObjectName(QStringLiteral("RestoreRecoveryButton"));
    connect(restore, &QPushButton::clicked, this, [this] { restoreRecovery(); });
    // Shown when a Reset replaced a run before the crash: that run is kept too.
    auto* beforeReset = new QPushButton(tr("Restore the run before Reset"));
    beforeReset->setObjectName(QStringLiteral("RestoreReplacedRecoveryButton"));
    connect(beforeReset, &QPushButton::clicked, this, [this] { restoreRecovery(true); });
    auto* discard = new QPushButton(tr("Discard"));
    discard->setObjectName(QStringLiteral("DiscardRecoveryButton"));
    connect(discard, &QPushButton::clicked, this, &MainWindow::discardRecovery);
    m_recoveryBanner = makeBanner(QStringLiteral("RecoveryBanner"), "#e3f0fb", "#a9cbe8", "#123e63",
                                  &m_recoveryBannerText, {restore, beforeReset, discard});
    m_recoveryBannerText->setWordWrap(true);  // fits beside its buttons at 900 × 600
    m_dataBanner = new QFrame;
    m_dataBanner->setObjectName(QStringLiteral("MissingDataBanner"));
    m_dataBanner->setStyleSheet(
        QStringLiteral("#MissingDataBanner { background: #fde8e6; border-bottom: 1px solid "
                       "#f0b4ae; } #MissingDataBanner QLabel { color: #7a1f16; }"));
    auto* dataRow = new QHBoxLayout(m_dataBanner);
    dataRow->setContentsMargins(10, 4, 10, 4);
    m_dataBannerText = new QLabel;
    m_dataBannerText->setWordWrap(true);
    m_dataBannerText->setTextInteractionFlags(Qt::TextSelectableByMouse);
    dataRow->addWidget(m_dataBannerText, 1);
    m_dataBanner->setVisible(false);
}

}  // namespace ensemble::ui
