#include "runs/run_fields.h"

#include <cstdio>
#include <map>
#include <set>

#include "runs/run_db.h"

namespace ensemble::runs {

namespace {

constexpr std::string_view kFieldFigurePrefix = "figure.";
constexpr std::string_view kFieldConfigPrefix = "config.";

std::string numberText(double value) {
    char buffer[32];
    std::snprintf(buffer, sizeof buffer, "%.6g", value);
    return buffer;
}

std::string dateText(double unixSeconds) {
    std::string iso = isoUtc(unixSeconds);  // 2024-05-01T12:34:56Z
    if (iso.size() == 20) {
        iso[10] = ' ';
        iso.pop_back();
    }
    return iso;
}

std::string wallText(double seconds) {
    char buffer[32];
    std::snprintf(buffer, sizeof buffer, "%.1f", seconds);
    return buffer;
}

std::string tagsText(const std::vector<std::string>& tags) {
    std::string out;
    for (const std::string& tag : tags) {
        out += (out.empty() ? "" : ",") + tag;
    }
    return out;
}

// The config leaf at a dotted key, or nullptr.
const nlohmann::json* configLeaf(const nlohmann::json& config, std::string_view key) {
    const nlohmann::json* node = &config;
    while (!key.empty()) {
        const std::size_t dot = key.find('.');
        const std::string part(key.substr(0, dot));
        if (!node->is_object() || !node->contains(part)) {
            return nullptr;
        }
        node = &(*node)[part];
        key = dot == std::string_view::npos ? std::string_view{} : key.substr(dot + 1);
    }
    return node;
}

std::string leafText(const nlohmann::json& leaf) {
    if (leaf.is_number()) {
        return numberText(leaf.get<double>());
    }
    return detail::configCell(leaf).text;
}

// The columns two runs are told apart by, in runDifferences' order.
constexpr const char* kComparedColumns[] = {"program", "kind",       "version", "preset",
                                            "dataset", "method",     "members", "seed",
                                            "backend", "fingerprint"};

}  // namespace

std::string runFieldText(const RunEntry& entry, std::string_view field) {
    if (field.substr(0, kFieldFigurePrefix.size()) == kFieldFigurePrefix) {
        const auto it = entry.figures.find(std::string(field.substr(kFieldFigurePrefix.size())));
        return it == entry.figures.end() ? std::string() : numberText(it->second);
    }
    if (field.substr(0, kFieldConfigPrefix.size()) == kFieldConfigPrefix) {
        const nlohmann::json* leaf =
            configLeaf(entry.config, field.substr(kFieldConfigPrefix.size()));
        return leaf == nullptr ? std::string() : leafText(*leaf);
    }
    // The columns, by the names the store's filters take.
    const std::map<std::string_view, std::string> columns = {
        {"id", std::to_string(entry.id)},
        {"started", dateText(entry.started)},
        {"ended", dateText(entry.ended)},
        {"wall", entry.wallSeconds > 0.0 ? wallText(entry.wallSeconds) : std::string()},
        {"members", entry.members > 0 ? std::to_string(entry.members) : std::string()},
        {"seed", std::to_string(entry.seed)},
        {"parent", entry.parentId > 0 ? std::to_string(entry.parentId) : std::string()},
        {"program", entry.program},
        {"kind", entry.kind},
        {"version", entry.version},
        {"state", std::string(toString(entry.state))},
        {"preset", entry.preset},
        {"dataset", entry.dataset},
        {"method", entry.method},
        {"backend", entry.backend},
        {"fingerprint", entry.dataFingerprint},
        {"relation", entry.relation},
        {"host", entry.host},
        {"note", entry.note},
        {"command", entry.commandLine},
        {"tag", tagsText(entry.tags)},
    };
    const auto it = columns.find(field);
    if (it == columns.end()) {
        // parseSort names every field the store knows in its message.
        parseSort(field);
        throw ConfigError("runs: no column '" + std::string(field) + "'");
    }
    return it->second;
}

nlohmann::json runEntryJson(const RunEntry& entry) {
    nlohmann::json files = nlohmann::json::array();
    for (const RunFile& file : entry.files) {
        files.push_back({{"path", file.path}, {"role", file.role}});
    }
    nlohmann::json out = {
        {"id", entry.id},
        {"program", entry.program},
        {"kind", entry.kind},
        {"version", entry.version},
        {"state", toString(entry.state)},
        {"started", entry.started},
        {"started_utc", isoUtc(entry.started)},
        {"ended", entry.ended > 0.0 ? nlohmann::json(entry.ended) : nlohmann::json()},
        {"ended_utc", entry.ended > 0.0 ? nlohmann::json(isoUtc(entry.ended)) : nlohmann::json()},
        {"updated", entry.updated},
        {"wall_seconds", entry.wallSeconds},
        {"preset", entry.preset},
        {"dataset", entry.dataset},
        {"method", entry.method},
        {"members", entry.members},
        {"seed", entry.seed},
        {"backend", entry.backend},
        {"data_fingerprint", entry.dataFingerprint},
        {"figures", entry.figures},
        {"tags", entry.tags},
        {"note", entry.note},
        {"command", entry.commandLine},
        {"parent", entry.parentId > 0 ? nlohmann::json(entry.parentId) : nlohmann::json()},
        {"relation", entry.relation},
        {"host", entry.host},
        {"pid", entry.pid},
        {"files", files},
        {"config", entry.config},
        {"curves", entry.curves},
    };
    return out;
}

std::vector<RunDifference> runDifferences(const RunEntry& a, const RunEntry& b) {
    std::vector<RunDifference> out;
    for (const char* column : kComparedColumns) {
        const std::string left = runFieldText(a, column);
        const std::string right = runFieldText(b, column);
        if (left != right) {
            out.push_back({column, left, right});
        }
    }
    std::map<std::string, std::pair<std::optional<std::string>, std::optional<std::string>>> keys;
    for (const auto& [key, leaf] : detail::flattenConfig(a.config)) {
        keys[key].first = leafText(leaf);
    }
    for (const auto& [key, leaf] : detail::flattenConfig(b.config)) {
        keys[key].second = leafText(leaf);
    }
    for (const auto& [key, values] : keys) {
        if (values.first != values.second) {
            out.push_back({std::string(kFieldConfigPrefix) + key, values.first, values.second});
        }
    }
    std::set<std::string> names;
    for (const auto& [name, value] : a.figures) {
        names.insert(name);
    }
    for (const auto& [name, value] : b.figures) {
        names.insert(name);
    }
    for (const std::string& name : names) {
        const auto left = a.figures.find(name);
        const auto right = b.figures.find(name);
        const std::optional<std::string> l =
            left == a.figures.end() ? std::nullopt : std::optional(numberText(left->second));
        const std::optional<std::string> r =
            right == b.figures.end() ? std::nullopt : std::optional(numberText(right->second));
        // Figures are listed side by side even when equal: they are what is compared.
        out.push_back({std::string(kFieldFigurePrefix) + name, l, r});
    }
    return out;
}

}  // namespace ensemble::runs
