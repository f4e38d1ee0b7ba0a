#pragma once

// Which files the window opens: an experiment (a JSON object of config sections) or a trained
// ensemble (.safetensors: an export or a checkpoint). Anything else is refused before the
// current experiment is touched, and the Open dialog does not offer the files the app writes
// beside an export (its metrics).

#include <QString>

#include <nlohmann/json.hpp>

class QWidget;

namespace ensemble::ui {

// Why `config`, the JSON read from `path`, is not an experiment (empty when it is one): not an
// object, a top-level key that is no config section, a section that is not an object. The
// message names the file and the key; for the metrics an export writes, the weights to open
// instead.
QString notAnExperiment(const QString& path, const nlohmann::json& config);

// Whether the Open dialog lists `fileName`: experiments and trained ensembles, not the
// <base>.metrics.json an export writes.
bool offeredByOpen(const QString& fileName);

// The Open dialog, starting in `dir`, hiding what offeredByOpen() refuses; the chosen path,
// empty when cancelled.
QString askFileToOpen(QWidget* parent, const QString& dir);

}  // namespace ensemble::ui
