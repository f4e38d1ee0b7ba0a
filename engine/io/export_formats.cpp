#include "io/export_formats.h"

#include <algorithm>
#include <cctype>

#include "core/errors.h"
#include "io/npz.h"
#include "io/onnx_export.h"

namespace ensemble {

namespace {

bool endsWith(const std::string& text, const std::string& suffix) {
    if (text.size() < suffix.size()) {
        return false;
    }
    return std::equal(suffix.rbegin(), suffix.rend(), text.rbegin(), [](char a, char b) {
        return a == std::tolower(static_cast<unsigned char>(b));
    });
}

}  // namespace

const char* exportFormatName(ExportFormat format) {
    switch (format) {
        case ExportFormat::Onnx:
            return "onnx";
        case ExportFormat::Npz:
            return "npz";
        case ExportFormat::Safetensors:
            break;
    }
    return "safetensors";
}

ExportFormat parseExportFormat(const std::string& text, const std::string& flag) {
    for (ExportFormat f : {ExportFormat::Safetensors, ExportFormat::Onnx, ExportFormat::Npz}) {
        if (text == exportFormatName(f)) {
            return f;
        }
    }
    throw ConfigError(flag + ": expected safetensors, onnx or npz, got '" + text + "'");
}

ExportFormat exportFormatForPath(const std::string& path) {
    if (endsWith(path, ".onnx")) {
        return ExportFormat::Onnx;
    }
    if (endsWith(path, ".npz")) {
        return ExportFormat::Npz;
    }
    return ExportFormat::Safetensors;
}

namespace {

// What only a checkpoint holds: the optimizer state and a one-network method's network in
// training (io/checkpoint.h).
bool checkpointTensor(const Tensor& t) {
    return t.name.rfind("optimizer.", 0) == 0 || t.name.rfind("trained.", 0) == 0;
}

}  // namespace

SafetensorsFile exportPart(const SafetensorsFile& file) {
    SafetensorsFile out;
    out.origin = file.origin;
    for (const Tensor& t : file.tensors) {
        if (!checkpointTensor(t)) {
            out.tensors.push_back(t);
        }
    }
    out.metadata = file.metadata;
    out.metadata.erase("checkpoint_format_version");
    out.metadata.erase("curves");
    return out;
}

void writeExport(const std::string& path, const SafetensorsFile& file, ExportFormat format) {
    const bool checkpoint = file.metadata.count("checkpoint_format_version") > 0 ||
                            file.metadata.count("curves") > 0 ||
                            std::any_of(file.tensors.begin(), file.tensors.end(), checkpointTensor);
    // An export is written as it is, without a copy of its tensors.
    SafetensorsFile stripped;
    if (checkpoint) {
        stripped = exportPart(file);
    }
    const SafetensorsFile& part = checkpoint ? stripped : file;
    switch (format) {
        case ExportFormat::Safetensors:
            writeSafetensors(path, part);
            return;
        case ExportFormat::Onnx:
            writeOnnx(path, part);
            return;
        case ExportFormat::Npz:
            writeNpz(path, part);
            return;
    }
}

}  // namespace ensemble
