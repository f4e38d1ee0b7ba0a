#pragma once

// Questions the app asks about a run's data, answered in one place. Today they read the
// dataset kind and the loaded data's shape; the engine's dataset registry will answer them
// from its rows.

#include <optional>
#include <string>

namespace ensemble::ui {

// Whether the data is two plain input columns, drawn on the plane (the Boundary view's grid;
// a 2-D preset plays until paused). With `loadedFeatures` (the data is loaded) its shape
// decides: two feature columns that are not an image, whatever the file (a 2-column CSV is
// 2-D). Before loading, `kind` (dataset.kind) decides: the 2-D generators.
bool isTwoDimensional(const std::string& kind, std::optional<int> loadedFeatures = std::nullopt,
                      bool isImage = false);

}  // namespace ensemble::ui
