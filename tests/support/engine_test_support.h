#pragma once

// Helpers of the suites that drive the engine's Trainer directly (the trainer, checkpoints, the
// ensemble methods, backend.kind = auto): the small experiment they train, a CPU trainer with
// the member backend its method needs, and a check that a call is refused with a ConfigError
// naming a key. Defined here once so that every suite builds its runs and checks its refusals
// the same way.

#include <QtTest/QtTest>

#include <memory>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "backend/cpu/cpu_backend.h"
#include "core/errors.h"
#include "model/ensemble_methods.h"
#include "support/test_support.h"
#include "train/trainer.h"

namespace ensemble::test {

// The small experiment of the suites that train: spirals (n = 300, noise 0.05, seed 3), a 12-12
// tanh MLP, K = 4 without bootstrap (seed 5), Adam with each member's learning rate drawn
// log-uniform from [0.003, 0.03], batches of 16, 60 steps, no evaluation, the CPU backend.
// Each of `patches` (JSON text) is merged over it in turn (a JSON merge patch, RFC 7386: a null
// removes a key): a suite names its variant as one patch, a test adds what it changes.
template <typename... Patches>
nlohmann::json smallSpiralsJson(const Patches&... patches) {
    nlohmann::json root = nlohmann::json::parse(R"({
        "dataset": {"kind": "spirals", "n": 300, "noise": 0.05, "seed": 3},
        "model": {"hidden": [12, 12], "activation": "tanh"},
        "ensemble": {"members": 4, "bootstrap": "none", "seed": 5},
        "optimizer": {"kind": "adam", "lr": {"log_uniform": [0.003, 0.03]}},
        "training": {"batch_size": 16, "steps": 60, "eval_every": 0},
        "backend": {"kind": "cpu"}})");
    (root.merge_patch(nlohmann::json::parse(std::string_view(patches))), ...);
    return root;
}

// A trainer on `threads` CPU threads; a method whose members derive from what it trains
// (derivesMembers) gets its second, predict-only CPU backend, as the CLI builds it.
inline std::unique_ptr<Trainer> makeCpuTrainer(const ExperimentConfig& c, int threads = 2) {
    return std::make_unique<Trainer>(
        c, loadDataSplit(c.dataset), std::make_unique<CpuBackend>(threads), nullptr,
        derivesMembers(c.ensemble.method) ? std::make_unique<CpuBackend>(threads) : nullptr);
}

// What differs, bit for bit, between two runs' training states: the members' parameters, the
// network a one-network method trains, the optimizer's moments and update count (all that a
// resume must restore). Empty when nothing does.
inline std::string trainingStateDifference(const TrainingState& a, const TrainingState& b) {
    std::string diff;
    const auto check = [&diff](bool same, const char* what) {
        if (!same) {
            diff += diff.empty() ? what : std::string(", ") + what;
        }
    };
    check(sameBits(a.params, b.params), "params");
    check(sameBits(a.trained, b.trained), "trained");
    check(sameBits(a.optimizer.moment1, b.optimizer.moment1), "moment1");
    check(sameBits(a.optimizer.moment2, b.optimizer.moment2), "moment2");
    check(a.optimizer.updates == b.optimizer.updates, "updates");
    return diff.empty() ? diff : "differ: " + diff;
}

// f() throws a ConfigError whose key is `key` (a QFAIL otherwise; returns from this function
// only: callers check QTest::currentTestFailed() when it matters).
template <typename F>
void expectConfigError(F&& f, const std::string& key) {
    try {
        f();
        QFAIL(qPrintable(QString::fromStdString("expected a ConfigError naming " + key)));
    } catch (const ConfigError& e) {
        QVERIFY2(e.key() == key, e.what());
    }
}

}  // namespace ensemble::test
