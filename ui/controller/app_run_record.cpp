#include "controller/app_run_record.h"

#include <QCoreApplication>
#include <QFileInfo>

#include <cstdio>
#include <utility>

#include "config/command_line.h"
#include "controller/snapshot.h"
#include "runs/run_figures.h"
#include "train/trainer.h"

namespace ensemble::ui {

AppRunRecord::AppRunRecord() = default;

AppRunRecord::~AppRunRecord() {
    end();
}

void AppRunRecord::setStore(std::filesystem::path store) {
    m_store = std::move(store);
}

std::optional<std::string> AppRunRecord::takeWarning() {
    const std::lock_guard lock(m_warnings->mutex);
    return std::exchange(m_warnings->message, std::nullopt);
}

void AppRunRecord::setPreset(std::string preset) {
    m_preset = std::move(preset);
}

void AppRunRecord::begin(const Trainer& trainer, const std::string& openedFrom) {
    end();
    if (m_store.empty()) {
        return;
    }
    runs::RunEntry entry = newEntry("app-train", trainer.config().json);
    entry.backend = trainer.backend().name();
    // The command that trains the same run from its start (a live edit later is the same
    // entry: the command the window copies then holds it).
    entry.commandLine = trainCommandLine(m_preset, entry.config);
    m_recorder = recorderFor(std::move(entry));
    if (!openedFrom.empty()) {
        const std::string path =
            QFileInfo(QString::fromStdString(openedFrom)).absoluteFilePath().toStdString();
        m_recorder->addFile(path, "opened");
        // The run that wrote the file, when the store knows it: read once, at the run's setup.
        try {
            if (const std::optional<std::int64_t> parent =
                    runs::RunStore::open(m_store).writerOf(path)) {
                m_recorder->setParent(*parent, "opened");
            }
        } catch (const std::exception&) {
            // The recorder says once why the store cannot be used; a missing link is no failure.
        }
    }
    m_curves = runs::RunCurves();
    m_figures.clear();
    m_pending = false;
}

void AppRunRecord::addPoint(const HistoryPoint& point, bool gaussian) {
    if (!m_recorder) {
        return;
    }
    Evaluation e;
    e.step = point.step;
    e.epoch = point.epoch;
    e.ensembleTrain = point.ensembleTrain;
    e.ensembleTest = point.ensembleTest;
    m_curves.add(e);
    m_figures = runs::evaluationFigures(e, gaussian);
    m_pending = true;
    const auto now = std::chrono::steady_clock::now();
    if (now - m_flushedAt >= std::chrono::seconds(1)) {
        flushCurves();
        m_flushedAt = now;
    }
}

void AppRunRecord::flushCurves() {
    if (m_recorder && m_pending) {
        m_recorder->setCurves(m_curves.json());
        m_recorder->setFigures(m_figures);
        m_pending = false;
    }
}

void AppRunRecord::addFile(const QString& path, const std::string& role) {
    if (m_recorder) {
        m_recorder->addFile(QFileInfo(path).absoluteFilePath().toStdString(), role);
    }
}

void AppRunRecord::end(runs::RunState state) {
    if (!m_recorder) {
        return;
    }
    flushCurves();
    m_recorder->finish(state, m_figures);
    m_recorder.reset();  // flushes with a bounded wait
}

std::unique_ptr<runs::RunRecorder> AppRunRecord::beginJob(const std::string& kind,
                                                          const nlohmann::json& config) const {
    if (!m_recorder) {
        return nullptr;  // not recording, or no run to measure
    }
    runs::RunEntry entry = newEntry(kind, config);
    // The run's insert was queued long before a person could start a job; a short wait covers
    // a store that is slow to answer.
    entry.parentId = m_recorder->id(std::chrono::milliseconds(500));
    entry.relation = entry.parentId > 0 ? "measured" : "";
    return recorderFor(std::move(entry));
}

std::unique_ptr<runs::RunRecorder> AppRunRecord::beginCommand(
    const std::string& kind, const nlohmann::json& config, const std::string& commandLine) const {
    if (m_store.empty()) {
        return nullptr;
    }
    runs::RunEntry entry = newEntry(kind, config);
    entry.preset.clear();  // the CLI's entry has none: no --config names one
    entry.commandLine = commandLine;
    return recorderFor(std::move(entry));
}

void finishJobEntry(runs::RunRecorder* entry, bool cancelled, bool failed,
                    const std::map<std::string, double>& figures) {
    if (entry != nullptr) {
        entry->finish(cancelled ? runs::RunState::Cancelled
                      : failed  ? runs::RunState::Failed
                                : runs::RunState::Finished,
                      figures);
    }
}

runs::RunEntry AppRunRecord::newEntry(const std::string& kind, const nlohmann::json& config) const {
    runs::RunEntry entry;
    entry.program = "ensemble-lab";
    entry.kind = kind;
    entry.version = QCoreApplication::applicationVersion().toStdString();
    entry.config = config;
    entry.preset = m_preset;
    return entry;
}

std::unique_ptr<runs::RunRecorder> AppRunRecord::recorderFor(runs::RunEntry entry) const {
    // The warning waits in the box for the engine thread (takeWarning); the sink may run on the
    // recorder's thread after the entry ended.
    return std::make_unique<runs::RunRecorder>(
        m_store, std::move(entry), [box = m_warnings](const std::string& message) {
            std::fprintf(stderr, "ensemble-lab: warning: %s\n", message.c_str());
            const std::lock_guard lock(box->mutex);
            box->message = message;
        });
}

std::int64_t AppRunRecord::id() const {
    return m_recorder ? m_recorder->id(std::chrono::milliseconds(0)) : 0;
}

}  // namespace ensemble::ui
