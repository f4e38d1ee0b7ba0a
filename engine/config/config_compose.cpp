// Where a config's JSON comes from, and how its layers compose: a file or a built-in preset,
// then the --set assignments over it, with the positions of the file's keys kept so that an
// error names the file, line and column. Reading the values is config.cpp.
#include <algorithm>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "config/config.h"
#include "config/config_schema.h"
#include "config/presets_embedded.h"
#include "core/errors.h"

namespace ensemble {

using nlohmann::json;

void applyOverride(json& root, const std::string& assignment) {
    const auto eq = assignment.find('=');
    if (eq == std::string::npos || eq == 0) {
        throw ConfigError("--set " + assignment + ": expected key=value, e.g. ensemble.members=16");
    }
    const std::string key = assignment.substr(0, eq);
    const std::string text = assignment.substr(eq + 1);
    json value = json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (value.is_discarded()) {
        value = text;
    }
    json* node = &root;
    std::size_t start = 0;
    while (true) {
        const auto dot = key.find('.', start);
        const std::string part = key.substr(start, dot == std::string::npos ? dot : dot - start);
        if (part.empty()) {
            throw ConfigError("--set " + assignment + ": empty part in key '" + key + "'");
        }
        if (dot == std::string::npos) {
            (*node)[part] = value;
            return;
        }
        json& child = (*node)[part];
        if (child.is_null()) {
            child = json::object();
        } else if (!child.is_object()) {
            throw ConfigError("--set " + assignment + ": '" + key.substr(0, dot) +
                              "' is not a section");
        }
        node = &child;
        start = dot + 1;
    }
}

std::vector<std::string> presetNames() {
    std::size_t count = 0;
    const EmbeddedPreset* presets = embeddedPresets(count);
    std::vector<std::string> names;
    for (std::size_t i = 0; i < count; ++i) {
        names.emplace_back(presets[i].name);
    }
    std::sort(names.begin(), names.end());
    return names;
}

std::string presetText(const std::string& presetName) {
    std::size_t count = 0;
    const EmbeddedPreset* presets = embeddedPresets(count);
    for (std::size_t i = 0; i < count; ++i) {
        if (presetName == presets[i].name) {
            return presets[i].text;
        }
    }
    return {};
}

namespace {

struct ConfigText {
    std::string text;
    std::string origin;  // the file, or "preset NAME"
    bool isFile = false;
};

ConfigText readConfigText(const std::string& fileOrPreset) {
    std::ifstream in(fileOrPreset, std::ios::binary);
    if (in) {
        std::ostringstream ss;
        ss << in.rdbuf();
        return {ss.str(), fileOrPreset, true};
    }
    std::string text = presetText(fileOrPreset);
    if (text.empty()) {
        std::string names;
        for (const auto& n : presetNames()) {
            names += names.empty() ? "" : ", ";
            names += n;
        }
        throw ConfigError("--config " + fileOrPreset,
                          "no such file, and not a preset (presets: " + names + ")");
    }
    return {std::move(text), "preset " + fileOrPreset, false};
}

// A config file that is not valid JSON is a config error (exit 2), like a bad key in it.
json parseConfigText(const ConfigText& source) {
    try {
        return json::parse(source.text);
    } catch (const json::out_of_range& e) {
        // A number beyond double's range ("31e3092"): the library knows no position for it.
        throw ConfigError(ErrorKind::Json, {source.isFile ? source.origin : std::string()},
                          source.origin + ": not valid JSON: " + e.what());
    } catch (const json::parse_error& e) {
        // The line and column of the byte where parsing stopped.
        FilePosition where{source.isFile ? source.origin : std::string(), 1, 1};
        const std::size_t end = std::min<std::size_t>(e.byte, source.text.size());
        for (std::size_t i = 0; i + 1 < end; ++i) {
            if (source.text[i] == '\n') {
                ++where.line;
                where.column = 1;
            } else {
                ++where.column;
            }
        }
        throw ConfigError(ErrorKind::Json, where, source.origin + ": not valid JSON: " + e.what());
    }
}

}  // namespace

json loadConfigJson(const std::string& fileOrPreset) {
    return parseConfigText(readConfigText(fileOrPreset));
}

namespace {

// composeConfig over a base already read (none when `source` is null).
ComposedConfig composeFrom(ConfigText* source, const std::vector<std::string>& assignments) {
    ComposedConfig out;
    json base = json::object();
    if (source != nullptr) {
        base = parseConfigText(*source);
        if (!base.is_object()) {
            // An array or a number is no config: refused, never read as the defaults.
            throw ConfigError("config", "expected a JSON object",
                              FilePosition{source->isFile ? source->origin : std::string(), 1, 1});
        }
        if (source->isFile) {
            out.origin = source->origin;
            out.text = std::move(source->text);
        }
    }
    out.overrides = json::object();
    for (const std::string& a : assignments) {
        applyOverride(out.overrides, a);
    }
    out.json = overlayConfig(base, out.overrides, &out.notices);
    return out;
}

}  // namespace

ComposedConfig composeConfig(const std::string& fileOrPreset,
                             const std::vector<std::string>& assignments) {
    if (fileOrPreset.empty()) {
        return composeFrom(nullptr, assignments);
    }
    ConfigText source = readConfigText(fileOrPreset);
    return composeFrom(&source, assignments);
}

ComposedConfig composeConfigText(std::string text, const std::string& origin,
                                 const std::vector<std::string>& assignments) {
    ConfigText source{std::move(text), origin, true};
    return composeFrom(&source, assignments);
}

ExperimentConfig parseConfig(const ComposedConfig& composed) {
    try {
        return parseConfig(composed.json);
    } catch (const ConfigError& e) {
        const std::string& key = e.key();
        const std::string section = key.substr(0, key.find('.'));
        const std::string rest = key.substr(std::min(key.size(), section.size() + 1));
        const std::string name = rest.substr(0, rest.find_first_of(".["));
        const bool overridden = composed.overrides.contains(section) &&
                                composed.overrides[section].is_object() &&
                                composed.overrides[section].contains(name);
        if (key.empty() || composed.text.empty() || overridden) {
            throw;
        }
        FilePosition where = locateKey(composed.text, key);
        if (where.line == 0) {
            throw;
        }
        where.file = composed.origin;
        throw ConfigError(key, e.reason(), where);
    }
}

}  // namespace ensemble
