// SPDX-License-Identifier: GPL-3.0-or-later
// ensemble-cli presets: the built-in preset names, one a line (for --config PRESET; the shell
// completion reads them from here).
#include <cstdio>
#include <string>

#include "cli/cli_common.h"
#include "cli/commands.h"
#include "config/config.h"

namespace ensemble::cli {

ExitCode commandPresets(const CliArgs&) {
    for (const std::string& name : presetNames()) {
        std::printf("%s\n", name.c_str());
    }
    return ExitCode::Ok;
}

}  // namespace ensemble::cli
