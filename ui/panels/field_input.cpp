#include "panels/field_input.h"

#include <QAbstractScrollArea>
#include <QAbstractSpinBox>
#include <QComboBox>
#include <QCoreApplication>
#include <QDockWidget>
#include <QKeyEvent>
#include <QLineEdit>
#include <QWheelEvent>

namespace ensemble::ui {

namespace {

bool isValueField(const QWidget* w) {
    return qobject_cast<const QAbstractSpinBox*>(w) != nullptr ||
           qobject_cast<const QComboBox*>(w) != nullptr;
}

}  // namespace

void FieldInputFilter::install(QWidget* root) {
    for (QWidget* w : root->findChildren<QWidget*>()) {
        if (isValueField(w)) {
            w->setFocusPolicy(Qt::StrongFocus);
            w->installEventFilter(this);
        } else if (auto* edit = qobject_cast<QLineEdit*>(w)) {
            // A spin box's or combo box's own line edit: its owner is watched instead.
            if (!isValueField(edit->parentWidget())) {
                edit->installEventFilter(this);
            }
        }
    }
}

QWidget* shortcutWindowOf(QWidget* field) {
    QWidget* top = field->window();
    if (qobject_cast<QDockWidget*>(top) != nullptr && top->parentWidget() != nullptr) {
        top = top->parentWidget()->window();
    }
    return top;
}

bool FieldInputFilter::eventFilter(QObject* watched, QEvent* event) {
    auto* field = qobject_cast<QWidget*>(watched);
    if (field == nullptr) {
        return false;
    }
    if (event->type() == QEvent::Wheel && isValueField(field) && !field->hasFocus()) {
        // Not delivered to the field: handed to the scroll area around it, which scrolls.
        // (Sent explicitly: Qt propagates only spontaneous wheel events to parents.)
        for (QWidget* p = field->parentWidget(); p != nullptr; p = p->parentWidget()) {
            if (auto* area = qobject_cast<QAbstractScrollArea*>(p)) {
                QCoreApplication::sendEvent(area->viewport(), event);
                return true;
            }
        }
        event->ignore();
        return true;
    }
    if (event->type() == QEvent::KeyPress) {
        const int key = static_cast<QKeyEvent*>(event)->key();
        if (key != Qt::Key_Return && key != Qt::Key_Enter && key != Qt::Key_Escape) {
            return false;
        }
        if (auto* combo = qobject_cast<QComboBox*>(field);
            combo != nullptr && combo->isEditable()) {
            return false;
        }
        if (auto* spin = qobject_cast<QAbstractSpinBox*>(field)) {
            spin->interpretText();  // what was typed counts, as on Enter
        }
        // Leaving the field (focus out) runs its fix-up and editingFinished as usual.
        QWidget* window = shortcutWindowOf(field);
        window->activateWindow();
        window->setFocus(Qt::ShortcutFocusReason);
        return true;
    }
    return false;
}

}  // namespace ensemble::ui
