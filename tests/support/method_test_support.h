#pragma once

// Helpers of the ensemble-method suites (tst_methods, tst_mc_dropout, tst_batch_ensemble): a CPU
// trainer with the member backend its method needs, bit-for-bit comparison, and a check that a
// call is refused with a ConfigError naming a key.

#include <QtTest/QtTest>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "core/errors.h"
#include "model/ensemble_methods.h"
#include "train/trainer.h"

namespace ensemble::test {

// A trainer on two CPU threads; a method whose members derive from what it trains
// (derivesMembers) gets its second, predict-only CPU backend.
inline std::unique_ptr<Trainer> makeCpuTrainer(const ExperimentConfig& c) {
    return std::make_unique<Trainer>(
        c, loadDataSplit(c.dataset), std::make_unique<CpuBackend>(2), nullptr,
        derivesMembers(c.ensemble.method) ? std::make_unique<CpuBackend>(2) : nullptr);
}

// The same floats to the bit (two empty vectors match).
inline bool sameBits(const std::vector<float>& a, const std::vector<float>& b) {
    return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
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
