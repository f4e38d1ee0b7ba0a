// What a config must satisfy for its ensemble.method (model/ensemble_methods.h): the checks read
// the method's row, so a new method with the same capabilities needs nothing here.
#include <string>
#include <vector>

#include "config/config.h"
#include "core/errors.h"

namespace ensemble {

namespace {

bool allEqual(const std::vector<double>& values) {
    for (double v : values) {
        if (v != values.front()) {
            return false;
        }
    }
    return true;
}

}  // namespace

void checkEnsembleMethod(const ExperimentConfig& c) {
    const EnsembleMethodInfo& method = ensembleMethodInfo(c.ensemble.method);
    const std::string name = method.name;
    if (method.sharedTraining && c.backend.meshEnsemble > 1) {
        throw ConfigError("backend.mesh",
                          name +
                              " trains what its members share in one piece: the ensemble "
                              "axis cannot split it over ranks (use {\"ensemble\": 1, "
                              "\"data\": N}: the data axis works)");
    }
    if (!method.oneOptimizer) {
        return;
    }
    const std::string why =
        name + (method.oneNetwork ? " trains one network" : " trains one shared weight per layer") +
        ", so its members share one optimizer: per-member values (a list or log_uniform) do "
        "not apply; give one number";
    const struct {
        const char* key;
        const std::vector<double>& values;
    } perMember[] = {{"optimizer.lr", c.optimizer.lr},
                     {"optimizer.momentum", c.optimizer.momentum},
                     {"optimizer.weight_decay", c.optimizer.weightDecay}};
    for (const auto& [key, values] : perMember) {
        if (!allEqual(values)) {
            throw ConfigError(key, why);
        }
    }
    if (method.oneNetwork && c.ensemble.bootstrap != BootstrapMode::None) {
        throw ConfigError("ensemble.bootstrap",
                          name +
                              " trains one network on one stream of batches: its members "
                              "cannot see their own bootstrap data (a bootstrap would only "
                              "thin the data of all of them); use none");
    }
    for (const ScheduledChange& change : c.training.schedule) {
        const std::string at =
            " (training.schedule entry at step " + std::to_string(change.step) + ")";
        if (!change.lr.empty() && method.ownsLrSchedule) {
            throw ConfigError("optimizer.lr",
                              name +
                                  " sets the learning rate itself (its cycles start from "
                                  "optimizer.lr): it cannot be edited during the run" +
                                  at);
        }
        for (const auto& [key, values] :
             {std::pair<const char*, const std::vector<double>&>{"optimizer.lr", change.lr},
              {"optimizer.momentum", change.momentum},
              {"optimizer.weight_decay", change.weightDecay}}) {
            if (!values.empty() && !allEqual(values)) {
                throw ConfigError(key, why + at);
            }
        }
    }
}

}  // namespace ensemble
