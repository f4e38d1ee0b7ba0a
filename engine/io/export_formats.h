#pragma once

#include <string>

#include "io/safetensors.h"

namespace ensemble {

// The formats an ensemble exports to: safetensors (the weights, what every command reads),
// ONNX (the whole ensemble as one graph: io/onnx_export.h) and NumPy's .npz (io/npz.h).
enum class ExportFormat { Safetensors, Onnx, Npz };

// "safetensors", "onnx", "npz".
const char* exportFormatName(ExportFormat format);
// The --format value. ConfigError naming `flag` for any other word.
ExportFormat parseExportFormat(const std::string& text, const std::string& flag = "--format");
// The format a file name selects: a name ending in ".onnx" or ".npz" (any case) that format,
// any other name safetensors (so `--export run.bin` stays safetensors).
ExportFormat exportFormatForPath(const std::string& path);

// The export in `file`: a checkpoint's optimizer state (optimizer.* tensors) and its
// checkpoint-only metadata (checkpoint_format_version, curves) left out; an export as it is.
SafetensorsFile exportPart(const SafetensorsFile& file);

// Writes exportPart(file) to `path` in `format`, atomically. An ONNX export first checks that
// `file` is an ensemble export (importEnsemble: DataError otherwise); every format writes
// nothing when it fails (RuntimeError for the write itself).
void writeExport(const std::string& path, const SafetensorsFile& file, ExportFormat format);

}  // namespace ensemble
