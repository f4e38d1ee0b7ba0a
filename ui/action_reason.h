#pragma once

// A disabled action says why. setActionEnabled() enables `action`, or disables it and puts the
// reason in its tooltip and its status tip ("Export: train at least one step first"), which
// the status bar shows while the pointer is on its button or menu entry. The action's own
// tooltip (set before the first call) is kept and restored when it is enabled again.

#include <QString>

class QAction;

namespace ensemble::ui {

// `reason` is a short imperative clause without the action's name ("pause first"); it is
// ignored when `enabled` is true.
void setActionEnabled(QAction* action, bool enabled, const QString& reason = {});

// Changes the action's own tooltip (Train -> Continue) keeping a shown reason.
void setActionToolTip(QAction* action, const QString& toolTip);

// "Export: train at least one step first" for a disabled action with a reason, else empty.
QString disabledReason(const QAction* action);

}  // namespace ensemble::ui
