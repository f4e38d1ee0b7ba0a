#include "recovery.h"

#include <QCoreApplication>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QLockFile>
#include <QStandardPaths>
#include <QUuid>

#include <algorithm>
#include <cstring>
#include <vector>

#include <nlohmann/json.hpp>

#include "render/plot_helpers.h"

namespace ensemble::ui {

namespace {

const QString kCheckpointSuffix = QStringLiteral(".safetensors");
const QString kLockSuffix = QStringLiteral(".lock");
const QString kReplacedSuffix = QStringLiteral("-replaced");
// A real checkpoint's header is kilobytes; this bounds what a damaged file makes us read.
constexpr quint64 kMaxHeaderBytes = 100u << 20;

}  // namespace

QString recoveryWhen(const QDateTime& written, int64_t step) {
    const QDateTime local = written.toLocalTime();
    const QString when = local.date() == QDate::currentDate()
                             ? local.toString(QStringLiteral("HH:mm"))
                             : local.toString(QStringLiteral("yyyy-MM-dd HH:mm"));
    return QCoreApplication::translate("RecoveryStore", "%1, step %2").arg(when, formatCount(step));
}

QString recoveryQuestion(const RecoveryFile& file) {
    return QCoreApplication::translate("RecoveryStore", "Restore the run of %1?")
        .arg(recoveryWhen(file.written, file.step));
}

RecoveryStore::RecoveryStore(QString folder)
    : m_folder(folder.isEmpty() ? defaultFolder() : std::move(folder)) {}

RecoveryStore::~RecoveryStore() = default;  // QLockFile unlocks (and removes) on destruction

QString RecoveryStore::defaultFolder() {
    return QStandardPaths::writableLocation(QStandardPaths::AppDataLocation) +
           QStringLiteral("/recovery");
}

std::optional<RecoveryStore::Slot> RecoveryStore::lockSlot(const QString& id) const {
    auto lock = std::make_unique<QLockFile>(QDir(m_folder).filePath(id + kLockSuffix));
    // Only a dead owner makes a lock stale: by default QLockFile also takes over locks older
    // than 30 s, which would hand a window's live slot to the next one started.
    lock->setStaleLockTime(0);
    if (!lock->tryLock(0)) {
        return std::nullopt;
    }
    return Slot{QDir(m_folder).filePath(id + kCheckpointSuffix), std::move(lock)};
}

QString RecoveryStore::replacedPathOf(const QString& checkpoint) {
    return checkpoint.chopped(kCheckpointSuffix.size()) + kReplacedSuffix + kCheckpointSuffix;
}

void RecoveryStore::remove(std::optional<Slot>& slot) {
    if (slot) {
        QFile::remove(slot->checkpoint);
        QFile::remove(replacedPathOf(slot->checkpoint));
        slot->lock->unlock();  // removes the lock file
        slot.reset();
    }
}

QString RecoveryStore::ownPath() {
    if (!m_own) {
        if (!QDir().mkpath(m_folder)) {
            return {};
        }
        // pid and a random part: unique among the instances that share the folder.
        const QString id = QStringLiteral("run-%1-%2")
                               .arg(QCoreApplication::applicationPid())
                               .arg(QUuid::createUuid().toString(QUuid::WithoutBraces).left(8));
        m_own = lockSlot(id);
        if (!m_own) {
            return {};
        }
    }
    return m_own->checkpoint;
}

std::optional<RecoveryFile> RecoveryStore::describe(const QString& path) {
    QFile file(path);
    if (!file.open(QIODevice::ReadOnly)) {
        return std::nullopt;
    }
    // safetensors: an 8-byte little-endian header length, then the header's JSON, whose
    // "__metadata__" holds the export's step and dataset.
    unsigned char size[8];
    if (file.read(reinterpret_cast<char*>(size), 8) != 8) {
        return std::nullopt;
    }
    quint64 n = 0;
    for (int i = 7; i >= 0; --i) {
        n = (n << 8) | size[i];
    }
    if (n == 0 || n > kMaxHeaderBytes || n > static_cast<quint64>(file.size()) - 8) {
        return std::nullopt;
    }
    const QByteArray header = file.read(static_cast<qint64>(n));
    const nlohmann::json json = nlohmann::json::parse(header.begin(), header.end(), nullptr, false);
    if (json.is_discarded() || !json.is_object() || !json.contains("__metadata__") ||
        !json["__metadata__"].is_object()) {
        return std::nullopt;
    }
    const nlohmann::json& meta = json["__metadata__"];
    if (!meta.contains("checkpoint_format_version") || !meta.contains("step") ||
        !meta["step"].is_string()) {
        return std::nullopt;  // not a checkpoint
    }
    RecoveryFile out;
    out.path = path;
    out.written = QFileInfo(path).lastModified();
    bool ok = false;
    out.step = QString::fromStdString(meta["step"].get<std::string>()).toLongLong(&ok);
    if (!ok) {
        return std::nullopt;
    }
    if (meta.contains("dataset") && meta["dataset"].is_string()) {
        out.dataset = QString::fromStdString(meta["dataset"].get<std::string>());
    }
    return out;
}

std::optional<RecoveryFile> RecoveryStore::claimOrphan() {
    if (m_claimed) {
        if (std::optional<RecoveryFile> held = describe(m_claimed->checkpoint)) {
            return held;
        }
        m_claimed.reset();  // unreadable now: let it go, never delete what we cannot read
    }
    const QDir dir(m_folder);
    // Newest first: the run the person most likely wants back.
    const QFileInfoList checkpoints =
        dir.entryInfoList({QStringLiteral("*") + kCheckpointSuffix}, QDir::Files, QDir::Time);
    for (const QFileInfo& info : checkpoints) {
        QString id = info.completeBaseName();
        if (id.endsWith(kReplacedSuffix)) {
            id.chop(kReplacedSuffix.size());  // the slot's: its lock guards both files
        }
        const QString main = dir.filePath(id + kCheckpointSuffix);
        if (m_own && m_own->checkpoint == main) {
            continue;
        }
        std::optional<Slot> slot = lockSlot(id);
        if (!slot) {
            continue;  // a running instance's
        }
        std::optional<RecoveryFile> file = describe(main);
        const std::optional<RecoveryFile> replaced = describe(replacedPathOf(main));
        if (!file && replaced) {
            // Killed before the run after a Reset was first written: the replaced run alone.
            file = replaced;
            file->beforeReset = true;
        } else if (file && replaced) {
            file->replacedPath = replaced->path;
            file->replacedWritten = replaced->written;
            file->replacedStep = replaced->step;
        }
        if (file) {
            m_claimed = std::move(slot);
            return file;
        }
        // Not a checkpoint we can read (a damaged file): left as it is, never offered.
    }
    // Locks without their checkpoint (an instance killed between taking its slot and its first
    // write) that nobody holds: nothing to recover.
    for (const QFileInfo& info :
         dir.entryInfoList({QStringLiteral("*") + kLockSuffix}, QDir::Files)) {
        const QString id = info.completeBaseName();
        if (QFileInfo::exists(dir.filePath(id + kCheckpointSuffix)) ||
            (m_own && m_own->lock->fileName() == info.absoluteFilePath())) {
            continue;
        }
        std::optional<Slot> slot = lockSlot(id);
        remove(slot);
    }
    return std::nullopt;
}

QString RecoveryStore::adoptClaimed(bool beforeReset) {
    if (!m_claimed) {
        return {};
    }
    const QString main = m_claimed->checkpoint;
    const QString replaced = replacedPathOf(main);
    if (beforeReset && QFile::exists(replaced)) {
        // The run restored is the checkpoint from now on; the other one is the replaced run.
        const QString swap = main + QStringLiteral(".swap");
        QFile::remove(swap);
        const bool hadMain = QFile::rename(main, swap);
        QFile::rename(replaced, main);
        if (hadMain) {
            QFile::rename(swap, replaced);
        }
    }
    remove(m_own);
    m_own = std::move(m_claimed);
    m_claimed.reset();
    return m_own->checkpoint;
}

void RecoveryStore::discardClaimed() {
    remove(m_claimed);
}

void RecoveryStore::releaseClaimed() {
    m_claimed.reset();  // unlocks; the checkpoint stays
}

void RecoveryStore::removeOwn() {
    remove(m_own);
}

}  // namespace ensemble::ui
