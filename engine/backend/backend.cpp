#include "backend/backend.h"

#include <limits>
#include <stdexcept>
#include <string>

#include "core/errors.h"
#include "math/dropout.h"

namespace ensemble {

void checkTrainingProblem(const TrainingProblem& problem) {
    const ParamLayout& layout = problem.layout;
    if (layout.members() < 1 || layout.layerCount() < 1) {
        throw std::invalid_argument("Backend::bind: empty layout");
    }
    const DataShard& shard = problem.shard;
    const uint32_t batch = problem.plan.batch;
    if (shard.count < 1 || shard.index < 0 || shard.index >= shard.count ||
        batch % static_cast<uint32_t>(shard.count) != 0 || (shard.count > 1 && !shard.sum)) {
        throw ConfigError("backend.mesh",
                          "the data axis (data = " + std::to_string(shard.count) +
                              ") needs a batch divisible by it, a replica index below it and a "
                              "sum over the replicas (replica " +
                              std::to_string(shard.index) + " of a batch of " +
                              std::to_string(batch) + " rows)");
    }
    if (!layout.isMlp() && problem.adversarialEps > 0.0f) {
        throw ConfigError("training.adversarial_eps",
                          "adversarial training is implemented for mlp members; set it to 0 "
                          "for model.kind cnn");
    }
    if (!problem.adversarialEpsPerInput.empty() &&
        problem.adversarialEpsPerInput.size() != static_cast<std::size_t>(layout.inputs())) {
        throw std::invalid_argument(
            "TrainingProblem: " + std::to_string(problem.adversarialEpsPerInput.size()) +
            " per-input eps for " + std::to_string(layout.inputs()) + " inputs");
    }
    if (!(problem.dropout >= 0.0f && problem.dropout < 1.0f)) {
        throw ConfigError("model.dropout", "the dropout rate must be in [0, 1), not " +
                                               std::to_string(problem.dropout));
    }
    if (problem.dropout > 0.0f) {
        const Architecture& arch = layout.architecture();
        for (const StackLayer& layer : arch.layers()) {
            if (layer.activated &&
                (layer.param >= kDropoutMaxLayers || layer.units() > kDropoutMaxUnits)) {
                throw ConfigError("model.dropout",
                                  "dropout masks cover " + std::to_string(kDropoutMaxLayers) +
                                      " layers of at most " + std::to_string(kDropoutMaxUnits) +
                                      " units or channels each");
            }
        }
    }
    const bool training = problem.trainX != nullptr && problem.trainRows > 0;
    if (!training) {
        return;
    }
    const bool targets = isRegression(problem.likelihood) ? problem.trainTargets != nullptr
                                                          : problem.trainY != nullptr;
    if (!targets || batch == 0 || static_cast<int64_t>(problem.plan.rows) != problem.trainRows ||
        problem.trainRows > std::numeric_limits<int32_t>::max()) {
        throw std::invalid_argument(
            "Backend::bind: training needs labels (or targets), batch > 0 and plan.rows == "
            "trainRows < 2^31");
    }
    if (problem.rules.size() != static_cast<std::size_t>(layout.members())) {
        throw std::invalid_argument("Backend::bind: one optimizer rule per member needed");
    }
}

}  // namespace ensemble
