#pragma once

// The ensemble methods, one row each: what `ensemble.method` may name and what each method
// needs. The config's checks, the schema's choices, the panel, `ensemble-cli compare` and the
// docs read the rows, so a method is added here and in the code that trains it, nowhere else.
//
// Every method ends with K members that predict as K networks of the model's architecture (the
// "effective members"): the views, metrics, `eval` and `predict` see those. What differs is
// how they are trained and what an export stores.

#include <cstddef>
#include <cstdint>

#include "core/named_enum.h"

namespace ensemble {

enum class EnsembleMethod : uint8_t { Independent };
inline constexpr std::size_t kEnsembleMethodCount = 1;

struct EnsembleMethodInfo {
    EnsembleMethod value;
    const char* name;   // ensemble.method
    const char* label;  // for people
    const char* help;   // one line (docs, tooltips)
    // The members share what is trained (one network, or one shared weight): the MPI mesh's
    // ensemble axis cannot split them over ranks (the data axis can).
    bool sharedTraining;
};

template <>
struct EnumNames<EnsembleMethod> {
    // clang-format off
    static constexpr EnsembleMethodInfo table[] = {
        {EnsembleMethod::Independent, "independent", "Deep ensemble",
         "K networks trained independently (Lakshminarayanan et al. 2017)", false},
    };
    // clang-format on
};
static_assert(tableMatchesEnum<EnsembleMethod>(kEnsembleMethodCount),
              "one row per EnsembleMethod, in the enum's order");

inline const EnsembleMethodInfo& ensembleMethodInfo(EnsembleMethod method) {
    return enumRow(method);
}

}  // namespace ensemble
