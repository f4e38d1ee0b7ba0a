// The Runs view's edits: tags, the note, deleting runs (their files when asked), exporting
// the table as CSV (runs/run_table.h: the CLI's writer), opening a run as the experiment and
// copying its command. Apart from runs_view.cpp (the table) and runs_view_details.cpp.
#include <QApplication>
#include <QCheckBox>
#include <QClipboard>
#include <QFileDialog>
#include <QInputDialog>
#include <QLineEdit>
#include <QMessageBox>

#include <filesystem>
#include <set>

#include "runs/run_table.h"
#include "sys/atomic_file.h"
#include "views/runs_model.h"
#include "views/runs_view.h"

namespace ensemble::ui {

namespace {

QString runsActionText(const std::string& text) {
    return QString::fromStdString(text);
}

// The export or checkpoint (.safetensors) the entry wrote last that still exists.
QString runsWeightsOf(const runs::RunEntry& entry) {
    for (auto it = entry.files.rbegin(); it != entry.files.rend(); ++it) {
        std::error_code error;
        if ((it->role == "export" || it->role == "checkpoint") &&
            std::filesystem::path(it->path).extension() == ".safetensors" &&
            std::filesystem::exists(it->path, error)) {
            return runsActionText(it->path);
        }
    }
    return {};
}

}  // namespace

bool RunsView::tagRuns(const std::vector<std::int64_t>& ids, const QString& tag, bool remove,
                       QString* error) {
    const std::string word = tag.trimmed().toStdString();
    if (word.empty() || word.find_first_of(" ,\t\n") != std::string::npos) {
        if (error != nullptr) {
            *error = tr("A tag is one word without commas, got '%1'").arg(tag);
        }
        return false;
    }
    runs::RunStore* store = m_model->store();
    try {
        for (const std::int64_t id : ids) {
            if (store != nullptr) {
                remove ? store->removeTag(id, word) : store->addTag(id, word);
            }
        }
    } catch (const std::exception& e) {
        if (error != nullptr) {
            *error = runsActionText(e.what());
        }
        return false;
    }
    refresh();
    return store != nullptr;
}

bool RunsView::setNote(std::int64_t id, const QString& note, QString* error) {
    runs::RunStore* store = m_model->store();
    try {
        if (store == nullptr || !store->setNote(id, note.toStdString())) {
            if (error != nullptr) {
                *error = tr("No run %1 in the store").arg(id);
            }
            return false;
        }
    } catch (const std::exception& e) {
        if (error != nullptr) {
            *error = runsActionText(e.what());
        }
        return false;
    }
    refresh();
    return true;
}

bool RunsView::removeRuns(const std::vector<std::int64_t>& ids, bool withFiles, QString* error) {
    runs::RunStore* store = m_model->store();
    if (store == nullptr) {
        return false;
    }
    QStringList failed;
    int removedFiles = 0;
    try {
        for (const std::int64_t id : ids) {
            const std::optional<std::vector<runs::RunFile>> files = store->remove(id);
            if (!files || !withFiles) {
                continue;
            }
            for (const runs::RunFile& f : *files) {
                std::error_code code;
                if (std::filesystem::remove(f.path, code)) {
                    ++removedFiles;
                } else if (code) {
                    failed << runsActionText(f.path);
                }
            }
        }
    } catch (const std::exception& e) {
        if (error != nullptr) {
            *error = runsActionText(e.what());
        }
        refresh();
        return false;
    }
    refresh();
    setMessage(failed.isEmpty()
                   ? tr("Removed %Ln run(s)", "", static_cast<int>(ids.size())) +
                         (withFiles ? tr(" and %Ln file(s)", "", removedFiles) : QString())
                   : tr("Could not remove %1").arg(failed.join(QStringLiteral(", "))),
               !failed.isEmpty());
    return failed.isEmpty();
}

bool RunsView::exportCsv(const QString& path, QString* error) {
    runs::RunStore* store = m_model->store();
    if (store == nullptr) {
        if (error != nullptr) {
            *error = m_model->errorText();
        }
        return false;
    }
    try {
        runs::RunQuery q = m_model->query();
        q.full = runs::runColumnsNeedConfig(m_model->columns());
        const std::vector<runs::RunEntry> entries = store->list(q);
        writeFileAtomic(path.toStdString(),
                        runs::runTableCsv(m_model->columns(),
                                          runs::runTableCells(entries, m_model->columns())));
        setMessage(tr("Wrote %Ln run(s) to %1", "", static_cast<int>(entries.size())).arg(path),
                   false);
        return true;
    } catch (const std::exception& e) {
        if (error != nullptr) {
            *error = runsActionText(e.what());
        }
        return false;
    }
}

void RunsView::chooseExport() {
    const QString path = QFileDialog::getSaveFileName(
        this, tr("Export the runs table"), QStringLiteral("runs.csv"), tr("CSV (*.csv)"));
    if (path.isEmpty()) {
        return;
    }
    QString error;
    if (!exportCsv(path, &error)) {
        setMessage(tr("Export failed: %1").arg(error), true);
    }
}

void RunsView::commitNote() {
    if (m_shown.size() != 1 || runsActionText(m_shown.front().note) == m_note->text()) {
        return;
    }
    QString error;
    if (!setNote(m_shown.front().id, m_note->text(), &error)) {
        setMessage(tr("The note was not saved: %1").arg(error), true);
    }
}

void RunsView::commitTags() {
    if (m_shown.size() != 1) {
        return;
    }
    const runs::RunEntry& e = m_shown.front();
    std::set<std::string> wanted;
    for (const QString& t : m_tags->text().split(QLatin1Char(','), Qt::SkipEmptyParts)) {
        if (!t.trimmed().isEmpty()) {
            wanted.insert(t.trimmed().toStdString());
        }
    }
    const std::set<std::string> had(e.tags.begin(), e.tags.end());
    if (wanted == had) {
        return;
    }
    const std::int64_t id = e.id;
    QString error;
    for (const std::string& t : had) {
        if (wanted.count(t) == 0 && !tagRuns({id}, runsActionText(t), true, &error)) {
            break;
        }
    }
    for (const std::string& t : wanted) {
        if (error.isEmpty() && had.count(t) == 0) {
            tagRuns({id}, runsActionText(t), false, &error);
        }
    }
    if (!error.isEmpty()) {
        setMessage(tr("The tags were not saved: %1").arg(error), true);
    }
}

void RunsView::askTag() {
    const std::vector<std::int64_t> ids = selectedIds();
    if (ids.empty()) {
        return;
    }
    bool ok = false;
    QString tag =
        QInputDialog::getText(this, tr("Tag runs"),
                              tr("A tag for the %Ln selected run(s) (-tag removes it):", "",
                                 static_cast<int>(ids.size())),
                              QLineEdit::Normal, QString(), &ok);
    if (!ok || tag.trimmed().isEmpty()) {
        return;
    }
    tag = tag.trimmed();
    const bool remove = tag.startsWith(QLatin1Char('-'));
    QString error;
    if (!tagRuns(ids, remove ? tag.mid(1) : tag, remove, &error)) {
        setMessage(error, true);
    }
}

void RunsView::deleteSelected() {
    const std::vector<std::int64_t> ids = selectedIds();
    if (ids.empty() || m_model->store() == nullptr) {
        return;
    }
    int present = 0;
    for (const runs::RunEntry& e : m_shown) {
        for (const runs::RunFile& f : e.files) {
            std::error_code error;
            present += std::filesystem::exists(f.path, error) ? 1 : 0;
        }
    }
    QMessageBox box(QMessageBox::Question, tr("Delete runs"),
                    tr("Remove %Ln run(s) from the runs store?", "", static_cast<int>(ids.size())),
                    QMessageBox::Yes | QMessageBox::Cancel, this);
    box.setObjectName(QStringLiteral("runsDeleteBox"));
    box.setDefaultButton(QMessageBox::Cancel);
    QCheckBox* files = nullptr;
    if (present > 0) {
        files = new QCheckBox(tr("Also delete the %Ln file(s) they wrote", "", present));
        files->setObjectName(QStringLiteral("runsDeleteFiles"));
        box.setCheckBox(files);
    }
    if (box.exec() != QMessageBox::Yes) {
        return;
    }
    QString error;
    if (!removeRuns(ids, files != nullptr && files->isChecked(), &error) && !error.isEmpty()) {
        setMessage(tr("Delete failed: %1").arg(error), true);
    }
}

void RunsView::openSelected() {
    if (m_shown.size() != 1 || !m_shown.front().config.is_object()) {
        return;
    }
    const runs::RunEntry& e = m_shown.front();
    Q_EMIT openRequested(runsActionText(e.config.dump()), runsWeightsOf(e));
}

void RunsView::copyCommand() {
    if (m_shown.size() == 1 && !m_shown.front().commandLine.empty()) {
        QApplication::clipboard()->setText(runsActionText(m_shown.front().commandLine));
        setMessage(tr("Copied the command of run %1").arg(m_shown.front().id), false);
    }
}

}  // namespace ensemble::ui
