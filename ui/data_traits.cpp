#include "data_traits.h"

#include "data/dataset.h"

namespace ensemble::ui {

bool isTwoDimensional(const std::string& kind, std::optional<int> loadedFeatures, bool isImage) {
    if (loadedFeatures.has_value()) {
        return *loadedFeatures == 2 && !isImage;
    }
    return isGenerated(kind);
}

}  // namespace ensemble::ui
