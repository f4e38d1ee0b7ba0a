#pragma once

// The engine's kind registries (data/dataset_kinds.h, model/model_kinds.h) for Qt code: a
// combo box's data is a row's name; these find the row.

#include <QString>

#include "data/dataset_kinds.h"
#include "model/model_kinds.h"

namespace ensemble::ui {

// The row named `name`. The panel's lists hold only the registry's names; an empty name (a
// list not filled yet) reads as the first row, the schema's default kind.
template <NamedEnum E>
const auto& kindNamed(const QString& name) {
    E kind = EnumNames<E>::table[0].value;
    enumFromName(name.toStdString(), kind);
    return enumRow(kind);
}

inline const DatasetKindInfo& datasetKindNamed(const QString& name) {
    return kindNamed<DatasetKind>(name);
}

inline const ModelKindInfo& modelKindNamed(const QString& name) {
    return kindNamed<ModelKind>(name);
}

}  // namespace ensemble::ui
