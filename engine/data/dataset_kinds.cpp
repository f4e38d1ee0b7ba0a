#include "data/dataset_kinds.h"

namespace ensemble {

bool datasetKindReads(const DatasetKindInfo& row, std::string_view name) {
    std::string_view keys = row.keys;
    while (!keys.empty()) {
        const std::size_t space = keys.find(' ');
        if (keys.substr(0, space) == name) {
            return true;
        }
        keys = space == std::string_view::npos ? std::string_view() : keys.substr(space + 1);
    }
    return false;
}

}  // namespace ensemble
