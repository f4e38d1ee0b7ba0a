// Values the schema accepts but that cannot train: each row's TrainingRange read over a config
// that parses. A warning, never an error: the CLI prints it and runs, the app marks the field and
// keeps Train enabled.
#include <charconv>
#include <string>
#include <vector>

#include "config/config_schema.h"

namespace ensemble {

namespace {

using nlohmann::json;

// The shortest text that reads back to the value: 0 whether it was written 0 or 0.0 (the app's
// form stores numbers as floats; its warning must read as the CLI's).
std::string warnedValueText(double v) {
    char buffer[64];
    const auto r = std::to_chars(buffer, buffer + sizeof buffer, v);
    return std::string(buffer, r.ptr);
}

void checkNumber(const KeySpec& spec, const json& value, const std::string& where,
                 std::vector<ConfigWarning>& out) {
    if (!value.is_number() || spec.trains->holds(value.get<double>())) {
        return;
    }
    out.push_back({where, warnedValueText(value.get<double>()) + " cannot train: " +
                              spec.trains->why + " (trains in " + spec.trains->text() + ")"});
}

// A value in any form the key takes: a number, a per-member list, {"log_uniform": [lo, hi]}.
void checkValue(const KeySpec& spec, const json& value, const std::string& where,
                std::vector<ConfigWarning>& out) {
    if (value.is_array()) {
        for (std::size_t i = 0; i < value.size(); ++i) {
            checkNumber(spec, value[i], where + "[" + std::to_string(i) + "]", out);
        }
    } else if (value.is_object()) {
        for (const auto& [name, inner] : value.items()) {
            checkValue(spec, inner, where + "." + name, out);
        }
    } else {
        checkNumber(spec, value, where, out);
    }
}

}  // namespace

std::vector<ConfigWarning> configWarnings(const json& config) {
    std::vector<ConfigWarning> out;
    for (const KeySpec& spec : configSchema()) {
        if (spec.trains && keyApplies(spec, config)) {
            checkValue(spec, *valueOrDefault(config, spec), spec.key, out);
        }
    }
    const json* schedule = valueOrDefault(config, keySpec("training.schedule"));
    if (schedule == nullptr || !schedule->is_array()) {
        return out;
    }
    for (std::size_t i = 0; i < schedule->size(); ++i) {
        const json& entry = (*schedule)[i];
        if (!entry.is_object() || !entry.contains("set") || !entry["set"].is_object()) {
            continue;
        }
        for (const auto& [key, value] : entry["set"].items()) {
            const KeySpec* spec = findKeySpec(key);
            if (spec != nullptr && spec->trains) {
                checkValue(*spec, value, "training.schedule[" + std::to_string(i) + "].set." + key,
                           out);
            }
        }
    }
    return out;
}

}  // namespace ensemble
