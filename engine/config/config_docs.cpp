// The schema written out for people and tools: the configuration table of
// docs/configuration.md, the tooltips' plain help and `ensemble-cli schema`'s JSON.
#include <algorithm>
#include <charconv>
#include <cmath>
#include <string>

#include "config/config_schema.h"

namespace ensemble {

namespace {

using nlohmann::json;

// "1e-08" -> "1e-8", [32,32] -> [32, 32]: the config table's spelling of a default.
std::string readableJson(const json& v) {
    if (v.is_array()) {
        std::string out = "[";
        for (std::size_t i = 0; i < v.size(); ++i) {
            out += (i ? ", " : "") + readableJson(v[i]);
        }
        return out + "]";
    }
    if (v.is_number_float()) {
        char buffer[64];
        const auto r = std::to_chars(buffer, buffer + sizeof buffer, v.get<double>());
        std::string text(buffer, r.ptr);
        const auto e = text.find("e-0");
        if (e != std::string::npos) {
            text.erase(e + 2, 1);
        }
        return text;
    }
    return jsonForMessage(v);
}

std::string numberText(double v) {
    if (v == std::floor(v) && std::abs(v) < 1e15) {
        return std::to_string(static_cast<int64_t>(v));  // 50000000, not 5e+07
    }
    char buffer[64];
    const auto r = std::to_chars(buffer, buffer + sizeof buffer, v);
    return std::string(buffer, r.ptr);
}

std::string rangeText(const KeySpec& spec) {
    switch (spec.type) {
        case KeyType::Integer:
        case KeyType::Number:
        case KeyType::PerMember:
            return (spec.minExclusive ? "(" : "[") + numberText(spec.min) + ", " +
                   numberText(spec.max) + (spec.maxExclusive ? ")" : "]");
        case KeyType::Widths:
            return "each in [" + numberText(spec.min) + ", " + numberText(spec.max) + "]";
        case KeyType::NumberPair:
            return "each in [" + numberText(spec.min) + ", " + numberText(spec.max) + ")";
        case KeyType::Seed:
            return "≥ 0";
        case KeyType::Choice: {
            std::string out;
            for (const Choice& c : spec.choices) {
                out += (out.empty() ? "`" : ", `") + std::string(c.name) + "`";
            }
            return out;
        }
        case KeyType::Mesh:
            return "`auto`, or E, D each in [" + numberText(spec.min) + ", " +
                   numberText(spec.max) + "]";
        case KeyType::Members:
            return "each in [0, K - 1], distinct";
        case KeyType::Boolean:
            return "`true`, `false`";
        case KeyType::String:
        case KeyType::Schedule:
        case KeyType::Layers:
            break;
    }
    return "";
}

const char* typeName(KeyType t) {
    switch (t) {
        case KeyType::Integer:
            return "integer";
        case KeyType::Number:
            return "number";
        case KeyType::Seed:
            return "seed";
        case KeyType::String:
            return "string";
        case KeyType::Choice:
            return "choice";
        case KeyType::Widths:
            return "widths";
        case KeyType::PerMember:
            return "per-member";
        case KeyType::NumberPair:
            return "pair";
        case KeyType::Schedule:
            return "schedule";
        case KeyType::Layers:
            return "layers";
        case KeyType::Mesh:
            return "mesh";
        case KeyType::Members:
            return "members";
        case KeyType::Boolean:
            return "boolean";
    }
    return "?";
}

}  // namespace

std::string TrainingRange::text() const {
    return (minExclusive ? "(" : "[") + numberText(min) + ", " + numberText(max) + "]";
}

std::string plainHelp(const KeySpec& spec) {
    std::string out;
    for (char c : spec.help) {
        if (c != '`') {
            out += c;
        }
    }
    const std::string when = conditionText(spec.when, false);
    if (!when.empty()) {
        out += " (" + when + ")";
    }
    if (spec.trains) {
        out += ". Trains in " + spec.trains->text() + "; outside it a warning: " + spec.trains->why;
    }
    return out;
}

std::string configTableMarkdown() {
    std::string out = "| key | default | range | meaning |\n|---|---|---|---|\n";
    for (const KeySpec& k : configSchema()) {
        std::string meaning = k.help;
        const std::string when = conditionText(k.when, true);
        if (!when.empty()) {
            meaning += "; " + when;
        }
        if (k.live) {
            meaning += " (the app applies an edit live)";
        }
        std::string range = rangeText(k);
        if (k.trains) {
            range += "; trains in " + k.trains->text();
            meaning +=
                "; outside " + k.trains->text() + " a warning, not an error: " + k.trains->why;
        }
        out += "| `" + k.key + "` | `" + readableJson(k.defaultValue) + "` | " + range + " | " +
               meaning + " |\n";
    }
    return out;
}

json configSchemaJson() {
    json out = json::array();
    for (const KeySpec& k : configSchema()) {
        json row = {{"key", k.key},
                    {"type", typeName(k.type)},
                    {"default", k.defaultValue},
                    {"help", k.help}};
        if (k.min != 0.0 || k.max != 0.0) {
            row["min"] = k.min;
            row["max"] = k.max;
            if (k.minExclusive) {
                row["min_exclusive"] = true;
            }
            if (k.maxExclusive) {
                row["max_exclusive"] = true;
            }
        }
        if (!k.choices.empty()) {
            row["choices"] = json::array();
            for (const Choice& c : k.choices) {
                row["choices"].push_back(c.name);
            }
        }
        if (k.live) {
            row["live"] = true;
        }
        if (k.trains) {
            row["trains"] = {{"min", k.trains->min},
                             {"max", k.trains->max},
                             {"min_exclusive", k.trains->minExclusive},
                             {"why", k.trains->why}};
        }
        if (!k.when.always()) {
            row["only_when"] = {{"key", k.when.key}, {"values", k.when.values}};
        }
        out.push_back(row);
    }
    return out;
}

}  // namespace ensemble
