#pragma once

// Where the app keeps a run through a crash: recovery checkpoints in the app's data folder
// (QStandardPaths::AppDataLocation/recovery), one per running instance, each guarded by a lock
// file so that two windows never take each other's. The engine thread writes them
// (EngineWorker::setRecovery); this is the GUI thread's side: which file is this instance's,
// which ones crashed instances left, and what becomes of them (restored, discarded, removed on
// a clean exit).
//
// A slot is two files: <id>.safetensors (the checkpoint, written atomically) and <id>.lock
// (a QLockFile holding the pid of the instance that owns it), and a third after a Reset:
// <id>-replaced.safetensors, the run the Reset replaced (its latest step), which the slot's lock
// guards too. The checkpoint follows the run that trains; the replaced run stays recoverable. A
// lock whose pid no longer runs (kill -9, a crash, a power cut) is stale: the next start takes it
// over.

#include <QDateTime>
#include <QString>

#include <cstdint>
#include <memory>
#include <optional>

class QLockFile;

namespace ensemble::ui {

// A recovery checkpoint an instance left, as the banner offers it.
struct RecoveryFile {
    QString path;
    QDateTime written;  // its last write (the file's modification time)
    int64_t step = 0;   // the step it holds (its metadata)
    QString dataset;    // the dataset's name (its metadata)
    // This file holds the run a Reset replaced (the run after the Reset wrote nothing yet).
    bool beforeReset = false;
    // The run a Reset replaced, kept beside this one (path empty: none).
    QString replacedPath;
    QDateTime replacedWritten;
    int64_t replacedStep = 0;
};

// The banner's question: "Restore the run of 14:02, step 18,400?" (the date too when it was
// not written today).
QString recoveryQuestion(const RecoveryFile& file);
// "14:02, step 18,400" (the date too when not today).
QString recoveryWhen(const QDateTime& written, int64_t step);

class RecoveryStore {
  public:
    // `folder`: where the slots live; empty: defaultFolder().
    explicit RecoveryStore(QString folder = {});
    // Releases the locks held; the files stay (a clean exit calls removeOwn() first).
    ~RecoveryStore();
    RecoveryStore(const RecoveryStore&) = delete;
    RecoveryStore& operator=(const RecoveryStore&) = delete;

    // QStandardPaths::AppDataLocation + "/recovery" (in QStandardPaths' test mode under
    // ~/.qttest).
    static QString defaultFolder();
    QString folder() const { return m_folder; }

    // This instance's checkpoint path, its slot's lock held: a new slot on the first call.
    // Empty when the folder cannot be created or the lock cannot be taken.
    QString ownPath();
    // ownPath() if a slot is held, else empty (takes none).
    QString ownPathIfAny() const { return m_own ? m_own->checkpoint : QString(); }
    // Where the run a Reset replaces goes beside `checkpoint` (<id>-replaced.safetensors).
    static QString replacedPathOf(const QString& checkpoint);
    // Claims the newest checkpoint that an instance no longer running left (its lock free or
    // stale), holding its lock so that no other window offers it too; lock files without a
    // checkpoint that nobody holds are removed on the way. Nothing when there is none; a
    // claim already held is returned again.
    std::optional<RecoveryFile> claimOrphan();
    // Restore: the claimed slot becomes this instance's own (writes go there from now on, its
    // file stays until they replace it); the own slot before it is removed. Returns its path.
    // `beforeReset`: the run restored was the replaced one: the two files swap, so that the
    // checkpoint holds the run restored and the run after the Reset stays recoverable.
    QString adoptClaimed(bool beforeReset = false);
    // Discard: removes the claimed checkpoints (the replaced one too) and the lock.
    void discardClaimed();
    // Lets the claim go, the file kept for the next start.
    void releaseClaimed();
    // A clean exit: removes this instance's checkpoint and lock.
    void removeOwn();

    // The metadata of a checkpoint file (step, dataset, time), nothing when it cannot be read.
    static std::optional<RecoveryFile> describe(const QString& path);

  private:
    struct Slot {
        QString checkpoint;               // <folder>/<id>.safetensors
        std::unique_ptr<QLockFile> lock;  // <folder>/<id>.lock, held
    };
    // The slot `id` with its lock taken; nothing when another running instance holds it.
    std::optional<Slot> lockSlot(const QString& id) const;
    static void remove(std::optional<Slot>& slot);

    QString m_folder;
    std::optional<Slot> m_own;
    std::optional<Slot> m_claimed;
};

}  // namespace ensemble::ui
