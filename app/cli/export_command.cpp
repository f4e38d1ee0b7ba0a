// ensemble-cli export: converts an export (or a checkpoint's export) to safetensors, ONNX or
// .npz (io/export_formats.h).
#include <cstdio>
#include <string>

#include "cli/cli_common.h"
#include "cli/commands.h"
#include "io/export_formats.h"
#include "io/model_io.h"
#include "io/safetensors.h"

namespace ensemble::cli {

ExitCode commandExport(const CliArgs& args) {
    const std::string weights = args.require("--weights");
    const std::string out = args.require("--out");
    // Usage errors first (exit 2), then the input (exit 3), then the write (exit 4): each
    // before anything is written.
    const ExportFormat format =
        args.has("--format") ? parseExportFormat(args.get("--format")) : exportFormatForPath(out);
    const SafetensorsFile file = readSafetensors(weights);
    importEnsemble(file);  // DataError for a file that is not an ensemble export
    writeExport(out, file, format);
    std::fprintf(stderr, "exported %s as %s to %s\n", weights.c_str(), exportFormatName(format),
                 out.c_str());
    return ExitCode::Ok;
}

}  // namespace ensemble::cli
