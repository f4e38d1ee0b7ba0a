#pragma once

// JSON values quoted in error messages, for every folder that reads JSON (the config, the
// layers of a model, the weights files' metadata).

#include <string>

#include <nlohmann/json.hpp>

namespace ensemble {

// A JSON value as text for a message. A string from `--set` is taken as given, so it may be
// invalid UTF-8, where dump() would throw json's type_error instead of our ConfigError: such
// bytes are shown as U+FFFD.
std::string jsonForMessage(const nlohmann::json& value);

}  // namespace ensemble
