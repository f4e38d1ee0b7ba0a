#pragma once

// An entry's fields as people read them: the text of one field for a table's cell (the CLI's
// `runs list`, the app's Runs view), the entry as JSON (`runs show --format json`, `runs list
// --format json`), and what differs between two entries (`runs diff`, the Runs view's
// comparison). Field names are the store's filter fields (run_store.h, RunFilter).

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "runs/run_store.h"

namespace ensemble::runs {

// The text of `field` for `entry`, empty when the entry has none: a column (started and ended as
// "2024-05-01 12:34:56" UTC, wall in seconds to 0.1, state by name), tag (the tags,
// comma-separated), figure.<name> (%.6g), config.<dotted.key> (a number %.6g, a string as is,
// an array or object as compact JSON; needs the entry's config: RunQuery::full).
// Throws ConfigError for a field the store does not know (parseSort's rules).
std::string runFieldText(const RunEntry& entry, std::string_view field);

// Every field of the entry, with its times both as unix seconds and ISO text.
nlohmann::json runEntryJson(const RunEntry& entry);

// One difference between two entries: a config key, a figure or a column whose values differ
// (a side without it: nullopt).
struct RunDifference {
    std::string field;  // "config.optimizer.lr", "figure.test_nll", "preset"
    std::optional<std::string> a;
    std::optional<std::string> b;
};

// What tells `a` and `b` apart (their configs needed): the columns a run is told apart by
// (program, kind, version, preset, dataset, method, members, seed, backend, fingerprint), then
// the config keys that differ, then every figure of either side by side (equal or not: they
// are what is compared), each group sorted by name.
std::vector<RunDifference> runDifferences(const RunEntry& a, const RunEntry& b);

}  // namespace ensemble::runs
