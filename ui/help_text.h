#pragma once

// The Help menu's texts: the keyboard and mouse reference (built from the window's actions, so
// it lists the shortcuts that are really bound) and About (version, backend and device in use,
// thread count, build options).

#include <QString>

#include "controller/snapshot.h"

class QWidget;

namespace ensemble::ui {

// An HTML table of every action under `window` that has a shortcut, then the Boundary view's
// mouse gestures and the panel's field keys.
QString shortcutsHtml(const QWidget* window);

// HTML for About; `snapshot` (may be null) names the backend and device of the current run.
QString aboutHtml(const SnapshotPtr& snapshot);

// Opens (window-modal, deleted on close) a dialog named `name` over `parent` with `html` in a
// text that scrolls: no taller than the screen, as the key list is longer than a small one.
void openHelpDialog(QWidget* parent, const QString& name, const QString& title,
                    const QString& html);

// The build's configuration in one line ("Release, CUDA off, -march=native, Qt 6.4.2").
QString buildOptions();

}  // namespace ensemble::ui
