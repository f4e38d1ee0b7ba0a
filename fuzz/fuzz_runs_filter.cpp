// Fuzzes the runs store's filter and sort texts (engine/runs/run_store.h: parseFilter,
// parseSort), which the CLI's `runs list` and the app's Runs view read from what people type.
// The input up to the first NUL byte is a filter, the rest a sort field. Every text either
// parses or throws ConfigError; what parses names a field and a value the store can bind.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "fuzz_support.h"
#include "runs/run_store.h"

using namespace ensemble;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    const std::size_t nul = text.find('\0');
    const std::string_view filter = text.substr(0, nul);
    try {
        const runs::RunQuery query = runs::parseFilter(filter);
        for (const runs::RunFilter& f : query.filters) {
            fuzz::check(!f.field.empty(), "a parsed filter names a field");
            fuzz::check(filterOpText(f.op)[0] != '\0', "a parsed filter has an operator");
        }
    } catch (const ConfigError&) {
    }
    if (nul != std::string_view::npos) {
        try {
            const runs::RunSort sort = runs::parseSort(text.substr(nul + 1));
            fuzz::check(!sort.field.empty(), "a parsed sort names a field");
        } catch (const ConfigError&) {
        }
    }
    return 0;
}
