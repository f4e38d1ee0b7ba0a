// Fuzzes the CSV reader (header, quoting, numbers, labels, BOM, CRLF) through its in-memory
// entry points, both as a labelled training table and as features for predict.
#include <cstddef>
#include <cstdint>
#include <string>

#include "data/dataset.h"
#include "fuzz_support.h"

using namespace ensemble;

namespace {

void checkShape(const Dataset& data, bool labelled) {
    fuzz::check(data.rows > 0 && data.features > 0, "a table has rows and features");
    fuzz::check(data.x.size() ==
                    static_cast<std::size_t>(data.rows) * static_cast<std::size_t>(data.features),
                "x is rows x features");
    fuzz::check(data.featureNames.size() == static_cast<std::size_t>(data.features),
                "one name per feature");
    fuzz::check(labelled ? data.y.size() == static_cast<std::size_t>(data.rows) : data.y.empty(),
                "one label per row, or none");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
    const std::string text(reinterpret_cast<const char*>(data), size);
    try {
        int classes = 0;
        const Dataset table = parseCsv(text, "fuzz.csv", classes);
        checkShape(table, true);
        for (int32_t label : table.y) {
            fuzz::check(label >= 0 && label < classes, "labels are in [0, classes)");
        }
    } catch (const Error&) {
    }
    try {
        checkShape(parseCsvFeatures(text, "fuzz.csv", -1), false);
    } catch (const Error&) {
    }
    return 0;
}
