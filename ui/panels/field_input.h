#pragma once

// Input rules for a form inside a scroll area, as desktop users expect them:
// - the mouse wheel over a spin box or combo box that does not have focus scrolls the form
//   instead of changing the value under the pointer (the field gets Qt::StrongFocus, so the
//   wheel no longer gives it focus either; a click or Tab does);
// - Enter or Escape in a field hands focus back to the main window, so its one-key shortcuts
//   (Space, S, R) work again; while a text field has focus those keys type into it.

#include <QObject>

class QWidget;

namespace ensemble::ui {

class FieldInputFilter : public QObject {
    Q_OBJECT

  public:
    explicit FieldInputFilter(QObject* parent = nullptr) : QObject(parent) {}

    // Watches every spin box, combo box and line edit under `root` (call after building it).
    void install(QWidget* root);

  protected:
    bool eventFilter(QObject* watched, QEvent* event) override;
};

// The window whose shortcuts should get the keys after `field` is left: the main window,
// also when the field sits in a floating dock.
QWidget* shortcutWindowOf(QWidget* field);

}  // namespace ensemble::ui
