// Fuzzes the config reader the way the CLI and the app use it: a config file (its text up to
// the first NUL byte) and `--set key=value` assignments (the NUL-separated pieces after it),
// through composeConfig (file parsing, applyOverride, overlayConfig) and parseConfig with
// locateKey's positions; also each distinct assignment alone over the defaults, and locateKey
// of its key in the file's text. A config that parses must parse again from its own JSON,
// unchanged. Everything runs in memory (composeConfigText): no file per input.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "config/config.h"
#include "fuzz_support.h"

using namespace ensemble;

namespace {

// Most inputs parse to a config some earlier input gave (the defaults, a preset with one value
// changed), so each distinct result is re-parsed once, not once per input: the schema is then
// validated once per input. A crash reproduces alone, where the set starts empty.
void checkFixedPoint(const ExperimentConfig& config) {
    static std::unordered_set<std::size_t> checked;
    const std::size_t hash = std::hash<nlohmann::json>{}(config.json);
    if (checked.contains(hash)) {
        return;
    }
    const ExperimentConfig again = parseConfig(config.json);
    fuzz::check(again.json == config.json, "a parsed config parses to itself");
    if (checked.size() >= 65536) {
        checked.clear();  // bounded memory over a long run
    }
    checked.insert(hash);
}

// Each assignment applied alone over the defaults, without a copy of the defaults per
// assignment (copying them and destroying the copy was half of the target's time): one working
// copy that each assignment changes, put back afterwards. applyOverride writes only under the
// key's first part (`dataset` for `dataset.n=5`), so that part alone is copied back, and only
// when it changed; the check that the copy equals the defaults again holds applyOverride to it.
void checkAssignmentOverDefaults(const std::string& assignment) {
    static const nlohmann::json defaults = defaultConfigJson();
    static nlohmann::json working = defaults;
    try {
        applyOverride(working, assignment);
        checkFixedPoint(parseConfig(working));
    } catch (const Error&) {
    }
    const std::string key = assignment.substr(0, assignment.find('='));
    const std::string section = key.substr(0, key.find('.'));
    const auto original = defaults.find(section);
    if (original == defaults.end()) {
        working.erase(section);
    } else if (working[section] != *original) {
        working[section] = *original;
    }
    fuzz::check(working == defaults, "an override changes nothing outside its key's section");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
    const std::string_view input(reinterpret_cast<const char*>(data), size);
    const std::size_t nul = input.find('\0');
    const std::string_view text = input.substr(0, nul);
    std::vector<std::string> assignments;
    if (nul != std::string_view::npos) {
        std::string_view rest = input.substr(nul + 1);
        while (true) {
            const std::size_t next = rest.find('\0');
            assignments.emplace_back(rest.substr(0, next));
            if (next == std::string_view::npos) {
                break;
            }
            rest.remove_prefix(next + 1);
        }
    }

    try {
        const ComposedConfig composed =
            composeConfigText(std::string(text), "config.json", assignments);
        checkFixedPoint(parseConfig(composed));
    } catch (const Error&) {
    }
    // Each distinct assignment once: what follows is a pure function of the assignment and the
    // text, and most assignments repeat (runs of NUL bytes are runs of empty assignments: the
    // seeds hold 11,251 assignments, 10,074 of them empty, 1,306 distinct within their input).
    std::unordered_set<std::string_view> seen;
    for (const std::string& a : assignments) {
        if (!seen.insert(a).second) {
            continue;
        }
        checkAssignmentOverDefaults(a);
        const FilePosition where = locateKey(text, std::string_view(a).substr(0, a.find('=')));
        fuzz::check(where.line >= 0 && where.column >= 0, "positions are not negative");
    }
    return 0;
}
