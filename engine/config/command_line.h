#pragma once

// The `ensemble-cli train` command that reproduces an experiment: its preset, then one --set per
// key that differs from the preset. The app's Copy as Command writes it; the CLI and the runs
// store can write the same line for any config.

#include <string>

#include <nlohmann/json.hpp>

namespace ensemble {

// `text` quoted for a POSIX shell: in single quotes, each single quote inside as '\''.
std::string shellQuoted(const std::string& text);

// `ensemble-cli train [--config PRESET] [--set 'key=value' ...]` whose composed config
// (composeConfig) equals `config` in every key that applies to it. `preset` names a built-in
// preset (empty: the defaults are the base); the keys are in the schema's order.
std::string trainCommandLine(const std::string& preset, const nlohmann::json& config);

}  // namespace ensemble
