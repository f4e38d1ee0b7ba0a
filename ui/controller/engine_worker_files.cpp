// EngineWorker's files: export, Save Checkpoint and the recovery writer (when a recovery
// checkpoint is due, written between chunks on this thread).
#include "controller/engine_worker.h"

#include <QFile>
#include <QTimer>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <exception>
#include <filesystem>
#include <limits>
#include <system_error>

#include "controller/run_files.h"

namespace ensemble::ui {

void EngineWorker::exportTo(const QString& basePath, ExportFormat format) {
    if (!m_trainer) {
        Q_EMIT exportFinished(false, QStringLiteral("There is no trained ensemble to export yet."),
                              {});
        return;
    }
    QStringList written;
    try {
        written = exportRun(*m_trainer, basePath, format);
    } catch (const std::exception& e) {
        Q_EMIT exportFinished(false, QString::fromStdString(e.what()), {});
        return;
    }
    for (const QString& file : written) {
        const bool weights = file.endsWith(QStringLiteral(".safetensors")) ||
                             file.endsWith(QStringLiteral(".onnx")) ||
                             file.endsWith(QStringLiteral(".npz"));
        m_record.addFile(file, weights ? "export" : "report");
    }
    Q_EMIT exportFinished(true, {}, written);
}

void EngineWorker::saveCheckpoint(const QString& path) {
    if (!m_trainer) {
        Q_EMIT checkpointSaved(false, QStringLiteral("There is no run to save yet."), path, 0);
        return;
    }
    try {
        writeRunState(path, true);
    } catch (const std::exception& e) {
        Q_EMIT checkpointSaved(false, QString::fromStdString(e.what()), path, m_trainer->step());
        return;
    }
    m_record.addFile(path, "checkpoint");
    Q_EMIT checkpointSaved(true, {}, path, m_trainer->step());
}

void EngineWorker::writeRunState(const QString& path, bool withReport) {
    // The stored length is where this run ends (Stop after, moved by Continue), so the CLI and
    // a reopened window continue to the same step; until paused has no end: the steps trained.
    const nlohmann::json active =
        m_activeMetadata ? m_activeMetadata(m_run->runId) : nlohmann::json(nullptr);
    writeRunCheckpoint(path, *m_trainer, m_history, m_untilPaused ? m_trainer->step() : -1, active,
                       withReport, m_untilPaused);
}

void EngineWorker::retireRecovery(bool keepReplaced) {
    if (m_recoveryPath.isEmpty() || !m_trainer) {
        return;  // no file, or no run it could hold (a restore sets the path only after)
    }
    if (keepReplaced) {
        writeRecovery();  // the replaced run's latest step, if the file is behind
    }
    namespace fs = std::filesystem;
    const fs::path file = QFile::encodeName(m_recoveryPath).toStdString();
    std::error_code error;
    if (!fs::exists(file, error)) {
        return;  // nothing trained since the last new run: an earlier replaced file stays
    }
    if (keepReplaced && !m_replacedRecoveryPath.isEmpty()) {
        // rename(2) replaces the older replaced-run file in one step.
        fs::rename(file, QFile::encodeName(m_replacedRecoveryPath).toStdString(), error);
    } else {
        fs::remove(file, error);
    }
    if (error) {
        Q_EMIT recoveryFailed(QStringLiteral("%1: %2").arg(
            m_recoveryPath, QString::fromLocal8Bit(error.message().c_str())));
    }
}

void EngineWorker::setRecovery(const QString& path, double intervalSeconds,
                               const QString& replacedPath) {
    m_replacedRecoveryPath = intervalSeconds > 0.0 ? replacedPath : QString();
    const QString next = intervalSeconds > 0.0 ? path : QString();
    if (next != m_recoveryPath) {
        // A new file starts from the run as it is now: a restored run's file holds it already.
        m_recoveryStep = m_trainer ? m_trainer->step() : -1;
    }
    m_recoveryPath = next;
    m_recoveryInterval = intervalSeconds;
    m_recoveryDue.reset();
    if (m_recoveryTimer == nullptr) {
        // Created here, on this thread, so that it fires here.
        m_recoveryTimer = new QTimer(this);
        m_recoveryTimer->setSingleShot(true);
        connect(m_recoveryTimer, &QTimer::timeout, this, [this] { writeRecovery(); });
    }
    m_recoveryTimer->stop();
}

void EngineWorker::scheduleRecovery() {
    if (m_recoveryPath.isEmpty() || !m_trainer || m_trainer->step() == m_recoveryStep ||
        m_recoveryDue) {
        return;
    }
    const auto interval = std::chrono::duration_cast<Clock::duration>(
        std::chrono::duration<double>(m_recoveryInterval));
    m_recoveryDue = Clock::now() + interval;
    // While training, the chunks check the deadline; once paused (Step), the timer does.
    // (QTimer counts int milliseconds: a longer interval waits for the chunks' check.)
    m_recoveryTimer->start(static_cast<int>(
        std::min(std::ceil(m_recoveryInterval * 1000.0), double{std::numeric_limits<int>::max()})));
}

void EngineWorker::writeRecovery() {
    m_recoveryDue.reset();
    if (m_recoveryTimer != nullptr) {
        m_recoveryTimer->stop();
    }
    if (m_recoveryPath.isEmpty() || !m_trainer || m_trainer->step() == m_recoveryStep ||
        m_trainer->step() == 0) {
        return;  // nothing changed since the last write, or nothing trained to lose
    }
    const int64_t step = m_trainer->step();
    // A failed write is not retried until the run moves on (a full disk stays full).
    m_recoveryStep = step;
    const auto start = Clock::now();
    try {
        // No metrics report: the file only has to resume the run, and the report is most of
        // the write's time (a K = 1000 spirals run: seconds).
        writeRunState(m_recoveryPath, false);
    } catch (const std::exception& e) {
        Q_EMIT recoveryFailed(QString::fromStdString(e.what()));
        return;
    }
    Q_EMIT recoveryWritten(m_recoveryPath, step, secondsOf(Clock::now() - start));
}

void EngineWorker::flushRecovery() {
    writeRecovery();
    Q_EMIT recoveryFlushed(m_trainer ? m_trainer->step() : -1);
}

}  // namespace ensemble::ui
