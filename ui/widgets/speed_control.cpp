#include "widgets/speed_control.h"

#include <QAction>
#include <QActionGroup>
#include <QComboBox>
#include <QMenu>
#include <QSettings>

#include <cmath>

#include "render/plot_helpers.h"

namespace ensemble::ui {

namespace {

const QString kSettingsKey = QStringLiteral("run/stepsPerSecond");

QString choiceText(double stepsPerSecond) {
    return stepsPerSecond <= 0.0
               ? SpeedControl::tr("As fast as possible")
               : SpeedControl::tr("%1 steps/s").arg(formatCount(std::llround(stepsPerSecond)));
}

}  // namespace

const std::vector<double>& SpeedControl::choices() {
    static const std::vector<double> values{0.0, 3000.0, 1000.0, 300.0, 100.0, 30.0, 10.0, 3.0};
    return values;
}

SpeedControl::SpeedControl(bool useSettings, QWidget* parent)
    : QObject(parent), m_useSettings(useSettings) {
    m_box = new QComboBox(parent);
    m_box->setObjectName(QStringLiteral("SpeedBox"));
    for (double v : choices()) {
        m_box->addItem(choiceText(v), v);
    }
    m_box->setToolTip(
        tr("How fast a run until paused trains: slow it down to watch the boundary "
           "form (Ctrl+Shift+Up / Down: faster, slower)"));
    m_box->setAccessibleName(tr("Speed until paused"));
    m_box->setFocusPolicy(Qt::StrongFocus);
    m_group = new QActionGroup(this);
    m_group->setExclusive(true);
    for (std::size_t i = 0; i < choices().size(); ++i) {
        QAction* a = m_group->addAction(choiceText(choices()[i]));
        a->setCheckable(true);
        connect(a, &QAction::triggered, this, [this, i] { choose(static_cast<int>(i)); });
    }
    if (m_useSettings) {
        setStepsPerSecond(QSettings().value(kSettingsKey, 0.0).toDouble());
    }
    m_group->actions().at(m_index)->setChecked(true);
    m_box->setCurrentIndex(m_index);
    connect(m_box, &QComboBox::activated, this, &SpeedControl::choose);
}

void SpeedControl::addMenu(QMenu* run) {
    QMenu* menu = run->addMenu(tr("Speed until paused"));
    auto* faster = menu->addAction(tr("Faster"));
    faster->setShortcut(QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_Up));
    faster->setToolTip(tr("Train faster until paused"));
    connect(faster, &QAction::triggered, this, &SpeedControl::faster);
    auto* slower = menu->addAction(tr("Slower"));
    slower->setShortcut(QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_Down));
    slower->setToolTip(tr("Train slower until paused, to watch the boundary form"));
    connect(slower, &QAction::triggered, this, &SpeedControl::slower);
    menu->addSeparator();
    menu->addActions(m_group->actions());
}

double SpeedControl::stepsPerSecond() const {
    return choices()[static_cast<std::size_t>(m_index)];
}

void SpeedControl::setStepsPerSecond(double stepsPerSecond) {
    // The nearest choice on a log scale; 0 (or less) is "as fast as possible".
    int best = 0;
    if (stepsPerSecond > 0.0 && std::isfinite(stepsPerSecond)) {
        double bestDistance = INFINITY;
        for (std::size_t i = 1; i < choices().size(); ++i) {
            const double d = std::abs(std::log(choices()[i] / stepsPerSecond));
            if (d < bestDistance) {
                bestDistance = d;
                best = static_cast<int>(i);
            }
        }
    }
    choose(best);
}

void SpeedControl::faster() {
    choose(std::max(0, m_index - 1));
}

void SpeedControl::slower() {
    choose(std::min(static_cast<int>(choices().size()) - 1, m_index + 1));
}

void SpeedControl::choose(int index) {
    if (index < 0 || index >= static_cast<int>(choices().size())) {
        return;
    }
    const bool changed = index != m_index;
    m_index = index;
    if (m_box != nullptr && m_box->currentIndex() != index) {
        m_box->setCurrentIndex(index);
    }
    if (m_group != nullptr) {
        m_group->actions().at(index)->setChecked(true);
    }
    if (changed) {
        if (m_useSettings) {
            QSettings().setValue(kSettingsKey, stepsPerSecond());
        }
        Q_EMIT speedChanged(stepsPerSecond());
    }
}

}  // namespace ensemble::ui
