#pragma once

// The window's one conversion of the engine's UTF-8 std::string to a QString.

#include <QString>

#include <string>

namespace ensemble::ui {

inline QString str(const std::string& s) {
    return QString::fromStdString(s);
}

}  // namespace ensemble::ui
