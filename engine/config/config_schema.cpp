// What reads the config schema's table generically: defaults, conditions, overlays and key
// positions in a file. The table itself (every key once: type, default, range, help, condition)
// is config_schema_table.cpp; typed parsing is config.cpp; the docs' table and the JSON schema
// are config_docs.cpp.
#include "config/config_schema.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <map>
#include <stdexcept>
#include <string_view>
#include <unordered_map>

namespace ensemble {

namespace {

using nlohmann::json;

const json* find(const json& config, const std::string& section, const std::string& name) {
    if (!config.is_object()) {
        return nullptr;
    }
    const auto s = config.find(section);
    if (s == config.end() || !s->is_object()) {
        return nullptr;
    }
    const auto k = s->find(name);
    return k == s->end() ? nullptr : &*k;
}

std::string valueText(const json& v) {
    return v.is_string() ? v.get<std::string>() : jsonForMessage(v);
}

}  // namespace

const std::vector<std::string>& configSections() {
    static const std::vector<std::string> sections = [] {
        std::vector<std::string> out;
        for (const KeySpec& k : configSchema()) {
            if (std::find(out.begin(), out.end(), k.section()) == out.end()) {
                out.push_back(k.section());
            }
        }
        return out;
    }();
    return sections;
}

std::string schedulableKeysText() {
    std::string out;
    for (const KeySpec& k : configSchema()) {
        if (schedulable(k)) {
            out += (out.empty() ? "" : ", ") + k.key;
        }
    }
    return out;
}

const KeySpec* findKeySpec(std::string_view key) {
    // keyApplies and withDefaults look up deciders for every row of every config: an index
    // instead of a scan of the table (the config fuzz target spent a third of its time here).
    static const std::unordered_map<std::string_view, const KeySpec*> index = [] {
        std::unordered_map<std::string_view, const KeySpec*> out;
        for (const KeySpec& k : configSchema()) {
            out.emplace(k.key, &k);
        }
        return out;
    }();
    const auto it = index.find(key);
    return it != index.end() ? it->second : nullptr;
}

const KeySpec& keySpec(std::string_view key) {
    const KeySpec* spec = findKeySpec(key);
    if (spec == nullptr) {
        throw std::logic_error("config schema has no key " + std::string(key));
    }
    return *spec;
}

const json* valueOrDefault(const json& config, const KeySpec& spec) {
    const json* v = find(config, spec.section(), spec.name());
    return v != nullptr ? v : &spec.defaultValue;
}

bool keyApplies(const KeySpec& spec, const json& config) {
    if (spec.when.always()) {
        return true;
    }
    const KeySpec& decider = keySpec(spec.when.key);
    if (!keyApplies(decider, config)) {
        return false;
    }
    const json* v = valueOrDefault(config, decider);
    const std::string text = valueText(*v);
    return std::find(spec.when.values.begin(), spec.when.values.end(), text) !=
           spec.when.values.end();
}

std::string conditionText(const Condition& when, bool markdown) {
    if (when.always()) {
        return {};
    }
    const std::string q = markdown ? "`" : "";
    std::string values;
    for (std::size_t i = 0; i < when.values.size(); ++i) {
        values +=
            (i == 0 ? "" : (i + 1 == when.values.size() ? " or " : ", ")) + q + when.values[i] + q;
    }
    return "only when " + q + when.key + q + " is " + values;
}

void checkConfigKeys(const json& config) {
    if (!config.is_object()) {
        throw ConfigError("config", "expected a JSON object, got " + jsonForMessage(config));
    }
    const auto& sections = configSections();
    for (auto it = config.begin(); it != config.end(); ++it) {
        if (std::find(sections.begin(), sections.end(), it.key()) == sections.end()) {
            std::string list;
            for (std::size_t i = 0; i < sections.size(); ++i) {
                list += (i == 0 ? "" : (i + 1 == sections.size() ? " or " : ", ")) + sections[i];
            }
            throw ConfigError(it.key(), "unknown section (expected " + list + ")");
        }
        if (!it.value().is_object()) {
            throw ConfigError(it.key(), "expected an object, got " + jsonForMessage(it.value()));
        }
        for (auto kv = it.value().begin(); kv != it.value().end(); ++kv) {
            const std::string key = it.key() + "." + kv.key();
            const KeySpec* spec = findKeySpec(key);
            if (spec == nullptr) {
                std::vector<std::string> known;
                for (const KeySpec& k : configSchema()) {
                    if (k.section() == it.key()) {
                        known.push_back(k.name());
                    }
                }
                std::sort(known.begin(), known.end());
                std::string list;
                for (const std::string& k : known) {
                    list += (list.empty() ? "" : ", ") + k;
                }
                throw ConfigError(key, "unknown key (known: " + list + ")");
            }
            if (!keyApplies(*spec, config)) {
                const KeySpec& decider = keySpec(spec->when.key);
                throw ConfigError(key, "applies " + conditionText(spec->when, false) + ", and " +
                                           decider.key + " is " +
                                           valueText(*valueOrDefault(config, decider)));
            }
        }
    }
}

json withDefaults(const json& config) {
    json out = config.is_object() ? config : json::object();
    for (const KeySpec& k : configSchema()) {
        if (!out.contains(k.section())) {
            out[k.section()] = json::object();
        }
        json& section = out[k.section()];
        if (!section.is_object()) {
            continue;  // checkConfigKeys reports it
        }
        if (!section.contains(k.name()) && keyApplies(k, out)) {
            section[k.name()] = k.defaultValue;
        }
    }
    // A section none of whose keys apply (active for regression data) is left out, not kept
    // empty, so a config holds the same sections however it was written.
    for (const std::string& name : configSections()) {
        if (out[name].is_object() && out[name].empty()) {
            out.erase(name);
        }
    }
    return out;
}

void dropInapplicable(json& config, std::vector<std::string>* notices) {
    if (!config.is_object()) {
        return;
    }
    // Table order: a key dropped here cannot revive one that comes later.
    for (const KeySpec& k : configSchema()) {
        if (find(config, k.section(), k.name()) != nullptr && !keyApplies(k, config)) {
            config[k.section()].erase(k.name());
            if (notices != nullptr) {
                const KeySpec& decider = keySpec(k.when.key);
                notices->push_back(k.key + " dropped: it applies " + conditionText(k.when, false) +
                                   ", and " + decider.key + " is now " +
                                   valueText(*valueOrDefault(config, decider)));
            }
        }
    }
}

json overlayConfig(const json& base, const json& layer, std::vector<std::string>* notices) {
    json merged = base.is_object() ? base : json::object();
    if (!layer.is_object()) {
        checkConfigKeys(layer);  // throws: not an object
    }
    for (auto s = layer.begin(); s != layer.end(); ++s) {
        if (!s.value().is_object() || !merged[s.key()].is_object()) {
            merged[s.key()] = s.value();
            continue;
        }
        for (auto kv = s.value().begin(); kv != s.value().end(); ++kv) {
            merged[s.key()][kv.key()] = kv.value();  // a value replaces, never merges
        }
    }
    // The layer's own keys must apply; the base's are dropped when the layer ruled them out.
    for (const KeySpec& k : configSchema()) {
        if (find(layer, k.section(), k.name()) != nullptr &&
            find(merged, k.section(), k.name()) != nullptr && !keyApplies(k, merged)) {
            const KeySpec& decider = keySpec(k.when.key);
            throw ConfigError(k.key, "applies " + conditionText(k.when, false) + ", and " +
                                         decider.key + " is " +
                                         valueText(*valueOrDefault(merged, decider)));
        }
    }
    dropInapplicable(merged, notices);
    return merged;
}

std::vector<std::string> changedKeys(const json& a, const json& b) {
    const json fullA = withDefaults(a);
    const json fullB = withDefaults(b);
    std::vector<std::string> out;
    for (const KeySpec& k : configSchema()) {
        const json* x = find(fullA, k.section(), k.name());
        const json* y = find(fullB, k.section(), k.name());
        if ((x == nullptr) != (y == nullptr) || (x != nullptr && *x != *y)) {
            out.push_back(k.key);
        }
    }
    return out;
}

FilePosition locateKey(std::string_view text, std::string_view dottedKey) {
    // The key's path: "optimizer.lr.log_uniform[0]" -> optimizer, lr, log_uniform (indices are
    // inside a value; the position of the name that holds them is close enough).
    std::vector<std::string> target;
    std::string part;
    bool inIndex = false;
    for (char c : dottedKey) {
        if (c == '[') {
            inIndex = true;
        } else if (c == ']') {
            inIndex = false;
        } else if (c == '.' && !inIndex) {
            target.push_back(part);
            part.clear();
        } else if (!inIndex) {
            part += c;
        }
    }
    if (!part.empty()) {
        target.push_back(part);
    }
    // A small scanner over the JSON text: a stack of the object keys we are inside, and for
    // each string that is followed by ':' the path it names.
    FilePosition best;
    std::size_t bestDepth = 0;
    std::vector<std::string> path;  // names of the enclosing members; "" for arrays
    std::vector<char> open;         // '{' or '['
    int64_t line = 1;
    int64_t column = 1;
    std::string lastString;
    int64_t lastLine = 0;
    int64_t lastColumn = 0;
    bool haveString = false;
    for (std::size_t i = 0; i < text.size(); ++i) {
        const char c = text[i];
        if (c == '"') {
            const int64_t startLine = line;
            const int64_t startColumn = column;
            // One buffer for every string of the text, not an allocation each.
            lastString.clear();
            ++i;
            ++column;
            while (i < text.size() && text[i] != '"') {
                if (text[i] == '\\' && i + 1 < text.size()) {
                    ++i;
                    ++column;
                }
                lastString += text[i];
                ++i;
                ++column;
            }
            ++column;
            lastLine = startLine;
            lastColumn = startColumn;
            haveString = true;
            continue;
        }
        if (c == '\n') {
            ++line;
            column = 1;
            continue;
        }
        ++column;
        if (c == ':' && haveString && !open.empty() && open.back() == '{') {
            // lastString is a member name at depth open.size().
            const std::size_t depth = open.size();
            path.resize(depth);
            path[depth - 1] = lastString;
            std::size_t match = 0;
            while (match < depth && match < target.size() && path[match] == target[match]) {
                ++match;
            }
            if (match == depth && depth > bestDepth) {
                best = {"", lastLine, lastColumn};
                bestDepth = depth;
            }
        } else if (c == '{' || c == '[') {
            open.push_back(c);
        } else if (c == '}' || c == ']') {
            if (!open.empty()) {
                open.pop_back();
            }
            path.resize(std::min(path.size(), open.size()));
        }
        if (c != ' ' && c != '\t' && c != '\r') {
            haveString = false;
        }
    }
    return best;
}

}  // namespace ensemble
