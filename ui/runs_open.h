#pragma once

// The Runs view's "Open as experiment", wired to the window: the run's weights through what
// File > Open does with them (the export or checkpoint it left, when it still exists), else its
// config, checked by the engine as Open checks an experiment file, loaded into the Experiment
// panel. Apart from main_window.cpp, which is at its room's limit.

namespace ensemble::ui {

class MainWindow;

void connectRunsOpen(MainWindow* window);

}  // namespace ensemble::ui
