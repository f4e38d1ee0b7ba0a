#pragma once

// Configs the engine refuses, each with a part of the message it must give: tst_config checks
// parseConfig's message, the window suites that ensemble-lab refuses the same files with the
// same message (one validation for both programs).

#include <string>
#include <vector>

namespace ensemble::test {

struct InvalidConfig {
    std::string name;
    std::string config;    // the file's JSON text
    std::string expected;  // a part of the ConfigError's message
};

inline const std::vector<InvalidConfig>& invalidConfigs() {
    static const std::vector<InvalidConfig> rows = {
        {"unknown section", R"({"modle": {}})", "modle: unknown section"},
        {"unknown key", R"({"model": {"hiden": [3]}})", "model.hiden: unknown key"},
        {"wrong type", R"({"ensemble": {"members": "ten"}})",
         "ensemble.members: expected an integer"},
        {"out of range", R"({"ensemble": {"members": 0}})",
         "ensemble.members: expected an integer in [1, 100000]"},
        {"bad enum", R"({"ensemble": {"bootstrap": "bagging"}})",
         "ensemble.bootstrap: expected one of none | resample | poisson"},
        {"bad width", R"({"model": {"hidden": [32, 0]}})", "model.hidden[1]"},
        {"lr list length", R"({"ensemble": {"members": 3}, "optimizer": {"lr": [0.1, 0.2]}})",
         "optimizer.lr: a list needs one value per member: expected 3"},
        {"negative lr", R"({"optimizer": {"lr": -1}})", "optimizer.lr"},
        {"bad log range", R"({"optimizer": {"lr": {"log_uniform": [0, 1]}}})",
         "optimizer.lr.log_uniform[0]"},
        {"csv without path", R"({"dataset": {"kind": "csv"}})", "dataset.path"},
        {"betas", R"({"optimizer": {"betas": [0.9]}})", "optimizer.betas"},
        {"not an object", R"([1, 2])", "config: expected a JSON object"},
        {"switched off: no such member", R"({"ensemble": {"members": 3, "switched_off": [0, 3]}})",
         "ensemble.switched_off[1]: expected a member index in [0, 2] (ensemble.members is 3), "
         "got 3"},
        {"switched off: twice", R"({"ensemble": {"switched_off": [1, 1]}})",
         "ensemble.switched_off[1]: member 1 is listed twice"},
        {"switched off: not a list", R"({"ensemble": {"switched_off": 2}})",
         "ensemble.switched_off: expected a list"},
        {"switched off: in the schedule",
         R"({"ensemble": {"members": 3}, "training": {"schedule": [
               {"step": 5, "set": {"ensemble.switched_off": [-1]}}]}})",
         "training.schedule[0].set.ensemble.switched_off[0]: expected a member index"},
        {"schedule: a key that needs a new run",
         R"({"training": {"schedule": [{"step": 5, "set": {"ensemble.seed": 2}}]}})",
         "training.schedule[0].set.ensemble.seed: cannot change during a run (these can: "
         "ensemble.switched_off, optimizer.lr, optimizer.momentum, optimizer.weight_decay)"},
        {"negative adversarial eps", R"({"training": {"adversarial_eps": -0.1}})",
         "training.adversarial_eps"},
        {"adversarial cnn",
         R"({"dataset": {"kind": "mnist"}, "model": {"kind": "cnn"},
               "training": {"adversarial_eps": 0.01}})",
         "training.adversarial_eps: adversarial training is implemented for model.kind mlp; "
         "model.kind is cnn"},
        {"negative members", R"({"ensemble": {"members": -3}})",
         "ensemble.members: expected an integer in [1, 100000]"},
        {"unknown dataset kind", R"({"dataset": {"kind": "nope"}})",
         "dataset.kind: expected one of"},
        {"misspelled key", R"({"ensemble": {"memberz": 4}})", "ensemble.memberz: unknown key"},
    };
    return rows;
}

}  // namespace ensemble::test
