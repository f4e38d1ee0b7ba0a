// ensemble-cli config: validates --config and --set and prints the config that results.
#include <cstdio>

#include "cli/cli_common.h"
#include "cli/commands.h"

namespace ensemble::cli {

ExitCode commandConfig(const CliArgs& args) {
    const ExperimentConfig config = configFrom(args);
    std::printf("%s\n", config.json.dump(2).c_str());
    return ExitCode::Ok;
}

}  // namespace ensemble::cli
