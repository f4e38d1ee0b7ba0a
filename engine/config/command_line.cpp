#include "config/command_line.h"

#include "config/config.h"
#include "config/config_schema.h"

namespace ensemble {

std::string shellQuoted(const std::string& text) {
    std::string out = "'";
    for (char c : text) {
        out += c == '\'' ? std::string("'\\''") : std::string(1, c);
    }
    return out + "'";
}

std::string trainCommandLine(const std::string& preset, const nlohmann::json& config) {
    const nlohmann::json base =
        preset.empty() ? nlohmann::json::object() : nlohmann::json::parse(presetText(preset));
    std::string line = "ensemble-cli train";
    if (!preset.empty()) {
        line += " --config " + preset;
    }
    for (const std::string& key : changedKeys(base, config)) {
        const KeySpec& spec = keySpec(key);
        if (!config.contains(spec.section()) || !config[spec.section()].contains(spec.name())) {
            continue;  // a key that does not apply here: nothing to set
        }
        line += " --set " + shellQuoted(key + "=" + config[spec.section()][spec.name()].dump());
    }
    return line;
}

}  // namespace ensemble
