#include "action_reason.h"

#include <QAction>
#include <QVariant>

namespace ensemble::ui {

namespace {

// Dynamic properties: the action's own tooltip and the current reason.
constexpr const char* kBaseToolTip = "ensembleBaseToolTip";
constexpr const char* kReason = "ensembleDisabledReason";

QString plainName(const QAction* action) {
    QString name = action->text();
    name.remove(QLatin1Char('&'));
    while (name.endsWith(QChar(0x2026)) || name.endsWith(QLatin1Char('.'))) {
        name.chop(1);
    }
    return name;
}

}  // namespace

void setActionEnabled(QAction* action, bool enabled, const QString& reason) {
    if (!action->property(kBaseToolTip).isValid()) {
        action->setProperty(kBaseToolTip, action->toolTip());
    }
    const QString base = action->property(kBaseToolTip).toString();
    const QString why = enabled || reason.isEmpty()
                            ? QString()
                            : QStringLiteral("%1: %2").arg(plainName(action), reason);
    action->setProperty(kReason, why);
    action->setEnabled(enabled);
    action->setStatusTip(why);
    action->setToolTip(why.isEmpty() ? base : QStringLiteral("%1\n%2").arg(base, why));
}

void setActionToolTip(QAction* action, const QString& toolTip) {
    action->setProperty(kBaseToolTip, toolTip);
    const QString why = action->property(kReason).toString();
    action->setToolTip(why.isEmpty() || action->isEnabled()
                           ? toolTip
                           : QStringLiteral("%1\n%2").arg(toolTip, why));
}

QString disabledReason(const QAction* action) {
    return action->isEnabled() ? QString() : action->property(kReason).toString();
}

}  // namespace ensemble::ui
