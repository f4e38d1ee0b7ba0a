#pragma once

// The Help menu's texts: the keyboard and mouse reference (built from the window's actions, so
// it lists the shortcuts that are really bound), About (version, backend and device in use,
// thread count, build options, where the documentation is), and where the documentation that
// Help opens is found.

#include <QList>
#include <QString>
#include <QStringList>

#include <functional>

#include "controller/snapshot.h"

class QMenu;
class QUrl;
class QWidget;

namespace ensemble::ui {

// An HTML table of every action under `window` that has a shortcut, then the Boundary view's
// mouse gestures and the panel's field keys.
QString shortcutsHtml(const QWidget* window);

// HTML for About; `snapshot` (may be null) names the backend and device of the current run,
// `documentation` the documentation folder (empty: not found).
QString aboutHtml(const SnapshotPtr& snapshot, const QString& documentation = {});

// Opens (window-modal, deleted on close) a dialog named `name` over `parent` with `html` in a
// text that scrolls: no taller than the screen, as the key list is longer than a small one.
void openHelpDialog(QWidget* parent, const QString& name, const QString& title,
                    const QString& html);

// The build's configuration in one line ("Release, CUDA off, -march=native, Qt 6.4.2").
QString buildOptions();

// --- Help's documentation entries ---------------------------------------------------------
// The documentation is a folder that holds README.md and docs/ (docs/app.md, docs/images/...),
// as the source tree has it and as the package installs it (/usr/share/doc/ensemblelab).

// Where to look, in order, for a program in `programDir` (QCoreApplication::applicationDirPath()):
// the installed documentation beside the installed program (<prefix>/share/doc/ensemblelab for
// <prefix>/bin), then, only for a program of the build tree it was compiled in (ensemble-lab
// or a test run where they were built), the source tree.
QStringList documentationFolderCandidates(const QString& programDir);

// The first of `candidates` that holds README.md and docs/app.md; empty when none does.
QString documentationFolder(const QStringList& candidates);

// A page Help opens: its menu entry, what it is, its file relative to the documentation folder.
struct DocumentationPage {
    QString title;
    QString toolTip;
    QString file;
};
// Getting started (README.md), The desktop app (docs/app.md), Documentation (docs/README.md,
// the index of every page).
QList<DocumentationPage> documentationPages();

// Why a page cannot be opened: empty when `folder` has the page; else "no documentation found
// (looked in A and B)" or "docs/app.md is missing from F".
QString documentationMissing(const QString& folder, const QStringList& candidates,
                             const QString& page);

// What opens a page's file URL (empty: QDesktopServices::openUrl), and how a failure is shown
// (the window's error box: title, message, advice).
using UrlOpener = std::function<bool(const QUrl&)>;
using ErrorShower =
    std::function<void(const QString& title, const QString& message, const QString& advice)>;

// Adds an entry per documentationPages() to `help`, each opening its file from the first of
// `folders` that has the documentation (empty: documentationFolderCandidates() of this
// program). Where none has it, the entries stay enabled and, triggered, show the folders they
// looked in. Returns the folder found, empty when none (About names it).
QString addDocumentationActions(QMenu* help, const QStringList& folders, const UrlOpener& open,
                                const ErrorShower& showError);

}  // namespace ensemble::ui
