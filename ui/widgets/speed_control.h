#pragma once

// The pace of a run until paused: "As fast as possible" or a number of steps a second, so a
// person can watch the boundary form. A combo box for the toolbar and the same choices as
// checkable actions for the Run menu (Ctrl+Shift+Up / Down: faster, slower); the choice is
// remembered in the settings (run/stepsPerSecond) when `useSettings`.

#include <QObject>

#include <vector>

class QActionGroup;
class QComboBox;
class QMenu;
class QWidget;

namespace ensemble::ui {

class SpeedControl : public QObject {
    Q_OBJECT

  public:
    SpeedControl(bool useSettings, QWidget* parent);

    QComboBox* comboBox() const { return m_box; }
    // The Run menu's "Speed until paused" submenu, with faster/slower shortcuts.
    void addMenu(QMenu* run);
    double stepsPerSecond() const;                  // 0: as fast as possible
    void setStepsPerSecond(double stepsPerSecond);  // the nearest choice
    void faster();
    void slower();
    // The choices, fastest first: 0 (as fast as possible), then descending steps a second.
    static const std::vector<double>& choices();

  Q_SIGNALS:
    void speedChanged(double stepsPerSecond);

  private:
    void choose(int index);

    bool m_useSettings;
    QComboBox* m_box = nullptr;
    QActionGroup* m_group = nullptr;
    int m_index = 0;
};

}  // namespace ensemble::ui
