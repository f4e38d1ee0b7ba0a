#pragma once

// The files the app writes of a run, on the engine thread: the export (weights, metrics) and
// the checkpoint with the curves the window measured.

#include <QString>
#include <QStringList>

#include <cstdint>
#include <memory>
#include <vector>

#include <nlohmann/json.hpp>

#include "controller/snapshot.h"
#include "io/export_formats.h"
#include "train/trainer.h"

namespace ensemble::ui {

// Writes <base>.safetensors (or .onnx, .npz: `format`), <base>.metrics.json and
// <base>.metrics.csv and returns them. On failure removes the files it wrote and throws.
QStringList exportRun(Trainer& trainer, const QString& basePath, ExportFormat format);

// Writes a checkpoint of `trainer` after its last finished step, with `history` (the Curves
// view's points) as its curves, so a reopened checkpoint shows them again. `storedSteps`: the
// run length stored (-1: the trainer's). `active`: the Active learning view's loop, stored as
// the metadata "active" when not null (activeCheckpointJson). `withReport`: store the metrics
// report (every member predicted on both splits; most of the write's time), as Save Checkpoint
// does; the recovery file leaves it out, as the CLI's periodic checkpoints do. `untilPaused`:
// the run had no end, so a window that opens the file plays it on (the metadata
// "until_paused"). Throws what the writer throws.
void writeRunCheckpoint(const QString& path, Trainer& trainer,
                        const std::vector<std::shared_ptr<const HistoryPoint>>& history,
                        int64_t storedSteps, const nlohmann::json& active = nullptr,
                        bool withReport = true, bool untilPaused = false);

}  // namespace ensemble::ui
