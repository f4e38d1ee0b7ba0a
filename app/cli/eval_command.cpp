// Temporary until the metrics work lands (the metrics engineer replaces this file).
#include "cli/cli_args.h"
#include "io/errors.h"

namespace ensemble::cli {
int commandEval(const CliArgs&) {
    throw RuntimeError("eval is not available in this build yet");
}
}  // namespace ensemble::cli
