#pragma once

// The model kinds, one row each: what `model.kind` may name and what each kind needs and offers.
// The config's checks, the schema's choices, the panel and the docs read the rows.

#include <cstddef>

#include "core/named_enum.h"

namespace ensemble {

enum class ModelKind { Mlp, Cnn };
inline constexpr std::size_t kModelKindCount = 2;

struct ModelKindInfo {
    ModelKind value;
    const char* name;   // model.kind
    const char* label;  // for people
    const char* help;   // one line (docs, tooltips)
    // Its input is an image ([1, 28, 28]): the dataset must be an IdxImages kind.
    bool needsImages;
    // Trains with training.adversarial_eps > 0 (the input gradient is implemented).
    bool adversarialTraining;
};

template <>
struct EnumNames<ModelKind> {
    // clang-format off
    static constexpr ModelKindInfo table[] = {
        {ModelKind::Mlp, "mlp", "MLP", "dense layers of widths model.hidden", false, true},
        {ModelKind::Cnn, "cnn", "CNN", "the layer stack model.layers on [1, 28, 28] images", true, false},
    };
    // clang-format on
};
static_assert(tableMatchesEnum<ModelKind>(kModelKindCount),
              "one row per ModelKind, in the enum's order");

inline const ModelKindInfo& modelKindInfo(ModelKind kind) {
    return enumRow(kind);
}

}  // namespace ensemble
