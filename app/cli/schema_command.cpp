// ensemble-cli schema: every config key with its default, range and meaning.
#include <cstdio>
#include <string>

#include "cli/cli_common.h"
#include "cli/commands.h"
#include "config/config_schema.h"
#include "core/errors.h"

namespace ensemble::cli {

ExitCode commandSchema(const CliArgs& args) {
    const std::string format = args.get("--format", "markdown");
    if (format == "markdown") {
        std::printf("%s", configTableMarkdown().c_str());
    } else if (format == "json") {
        std::printf("%s\n", configSchemaJson().dump(2).c_str());
    } else {
        throw ConfigError("--format", "expected markdown or json, got '" + format + "'");
    }
    return ExitCode::Ok;
}

}  // namespace ensemble::cli
