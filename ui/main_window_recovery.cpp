// The window's part in keeping a run through a crash (recovery.h holds the files and their
// locks): the autosave interval and its menu, the restore banner's offer, Restore and Discard,
// and the flush on SIGTERM / SIGHUP. Apart from main_window.cpp, which wires everything once.
#include "main_window.h"

#include <QActionGroup>
#include <QDir>
#include <QLabel>
#include <QMenu>
#include <QSettings>

#include <algorithm>
#include <exception>

#include "controller/engine_controller.h"
#include "file_actions.h"
#include "recovery.h"
#include "run_session.h"
#include "std_string.h"

namespace ensemble::ui {

namespace {

const QString kAutosaveKey = QStringLiteral("recovery/autosaveSeconds");
constexpr int kDefaultAutosaveSeconds = 60;

}  // namespace

int MainWindow::rememberedAutosaveSeconds() {
    return std::max(0, QSettings().value(kAutosaveKey, kDefaultAutosaveSeconds).toInt());
}

void MainWindow::setAutosaveSeconds(int seconds) {
    m_autosaveSeconds = std::max(0, seconds);
    applyRecovery();
}

QString MainWindow::recoveryPath() const {
    return m_autosaveSeconds > 0 ? m_recovery.ownPathIfAny() : QString();
}

void MainWindow::applyRecovery() {
    if (!m_restoring.isEmpty()) {
        return;  // nothing is written while a restored run replaces the current one
    }
    if (m_autosaveSeconds <= 0) {
        m_controller->setRecovery(QString(), 0.0);
        return;
    }
    const QString path = m_recovery.ownPath();
    if (path.isEmpty()) {
        m_controller->setRecovery(QString(), 0.0);
        showStatus(tr("Recovery checkpoints are off: %1 cannot be written")
                       .arg(QDir::toNativeSeparators(m_recovery.folder())),
                   15000);
    }
    m_controller->setRecovery(path, m_autosaveSeconds, RecoveryStore::replacedPathOf(path));
}

void MainWindow::addRecoveryMenu(QMenu* file) {
    QMenu* menu = file->addMenu(tr("Recovery Checkpoint"));
    menu->setObjectName(QStringLiteral("RecoveryMenu"));
    menu->setToolTipsVisible(true);
    auto* group = new QActionGroup(menu);
    group->setExclusive(true);
    const QList<int> choices{0, 30, 60, 120, 300, 600};
    for (const int seconds : choices) {
        const QString text = seconds == 0   ? tr("Off")
                             : seconds < 60 ? tr("Every %1 s").arg(seconds)
                                            : tr("Every %1 min").arg(seconds / 60);
        QAction* a = menu->addAction(text);
        a->setCheckable(true);
        a->setChecked(seconds == m_autosaveSeconds);
        a->setToolTip(
            tr("While training, keep the run in the app's data folder this often and "
               "when training pauses, so a crash loses at most that much"));
        group->addAction(a);
        connect(a, &QAction::triggered, this, [this, seconds] {
            setAutosaveSeconds(seconds);
            if (m_options.useSettings) {
                QSettings().setValue(kAutosaveKey, seconds);
            }
        });
    }
}

bool MainWindow::offerRecovery() {
    m_recoveryOffer = m_recovery.claimOrphan();
    if (!m_recoveryOffer) {
        hideRecoveryOffer();
        return false;
    }
    const RecoveryFile& offer = *m_recoveryOffer;
    QString text = recoveryQuestion(offer);
    if (offer.beforeReset) {
        text += QStringLiteral(" ") + tr("A Reset replaced it just before the app ended "
                                         "without closing; the run after it had not been kept "
                                         "yet.");
    } else if (!offer.dataset.isEmpty()) {
        text += QStringLiteral(" ") +
                tr("It was training on %1 when the app ended without closing.").arg(offer.dataset);
    }
    if (!offer.replacedPath.isEmpty()) {
        text +=
            QStringLiteral(" ") + tr("The run a Reset replaced before it is kept too (%1).")
                                      .arg(recoveryWhen(offer.replacedWritten, offer.replacedStep));
    }
    if (auto* other = m_recoveryBanner->findChild<QWidget*>(
            QStringLiteral("RestoreReplacedRecoveryButton"))) {
        other->setVisible(!offer.replacedPath.isEmpty());
    }
    m_recoveryBannerText->setText(text);
    m_recoveryBannerText->setToolTip(QDir::toNativeSeparators(m_recoveryOffer->path));
    m_recoveryBanner->setVisible(true);
    return true;
}

QString MainWindow::recoveryOffer() const {
    return m_recoveryOffer && !m_recoveryBanner->isHidden() ? recoveryQuestion(*m_recoveryOffer)
                                                            : QString();
}

void MainWindow::hideRecoveryOffer() {
    m_recoveryBanner->setVisible(false);
    m_recoveryOffer.reset();
}

void MainWindow::restoreRecovery(bool beforeReset) {
    if (!m_recoveryOffer || !m_restoring.isEmpty() ||
        (beforeReset && m_recoveryOffer->replacedPath.isEmpty())) {
        return;
    }
    const QString path = beforeReset ? m_recoveryOffer->replacedPath : m_recoveryOffer->path;
    m_restoringBeforeReset = beforeReset || m_recoveryOffer->beforeReset;
    m_files->confirmReplace(tr("restoring the run"), [this, path] {
        std::shared_ptr<const OpenedEnsemble> opened;
        try {
            opened = readOpenedEnsemble(path);
        } catch (const std::exception& e) {
            hideRecoveryOffer();
            m_recovery.releaseClaimed();  // kept as it is: never silently deleted
            showError(
                tr("Could not restore the run"), str(e.what()),
                tr("The file stays in %1.").arg(QDir::toNativeSeparators(m_recovery.folder())));
            Q_EMIT recoveryRestored(false, str(e.what()));
            return;
        }
        hideRecoveryOffer();
        // Neither file is written while the run is replaced: the current run's pause would
        // otherwise land in the file being restored.
        m_controller->setRecovery(QString(), 0.0);
        m_restoring = path;
        m_session->open(std::move(opened));
    });
}

void MainWindow::finishRestore(const RunInfo& run) {
    m_restoredRun = 0;
    m_restoring.clear();
    if (!run.missingData.empty()) {
        // Shown without its data, the run can neither train nor be saved: its file stays, not
        // this window's (a clean exit would remove it), for a start where the data is there.
        m_recovery.releaseClaimed();
        applyRecovery();
        Q_EMIT recoveryRestored(
            false, tr("its data is missing here (%1); the recovery checkpoint "
                      "stays in %2 for the next start")
                       .arg(str(run.missingData), QDir::toNativeSeparators(m_recovery.folder())));
        return;
    }
    // The file becomes this window's recovery checkpoint; it holds the run as it stands (a
    // replaced run restored swaps with the other, which stays recoverable).
    m_recovery.adoptClaimed(m_restoringBeforeReset);
    applyRecovery();
    Q_EMIT recoveryRestored(true, QString());
}

void MainWindow::onRecoveryOpenFailed(const QString& message) {
    if (m_restoring.isEmpty()) {
        return;
    }
    m_restoring.clear();
    m_restoredRun = 0;
    m_recovery.releaseClaimed();  // the file stays for a start where its data is there
    applyRecovery();
    Q_EMIT recoveryRestored(false, message);
}

void MainWindow::discardRecovery() {
    if (!m_recoveryOffer || !m_restoring.isEmpty()) {
        return;
    }
    m_recovery.discardClaimed();
    hideRecoveryOffer();
    offerRecovery();  // an older one, if an earlier crash left it
}

void MainWindow::flushRecovery() {
    m_keepRecovery = true;
    m_controller->flushRecovery();
}

}  // namespace ensemble::ui
