// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <string>

namespace ensemble {

// Messages name the source tree's helper scripts (`scripts/fetch-mnist.sh`). An installed
// program has no source tree: it has the same scripts installed next to it under other names
// (`ensemble-fetch-mnist` in the same bin folder). This returns `text` with each script named
// as this running program can reach it: unchanged in a build tree, the installed command's
// name where that command sits beside the executable.
std::string scriptHints(std::string text);
// The same for a program whose executable lies in `folder` (with or without a trailing '/').
std::string scriptHintsFor(std::string text, const std::string& folder);

// The installed name of a source-tree helper script (scripts/fetch-mnist.sh ->
// ensemble-fetch-mnist); what CMake's install rules install it as.
inline constexpr const char* kFetchMnistScript = "scripts/fetch-mnist.sh";
inline constexpr const char* kFetchMnistCommand = "ensemble-fetch-mnist";

}  // namespace ensemble
