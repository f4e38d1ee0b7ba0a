#pragma once

// The entries the runs benchmarks fill a store with (ensemble-runs-bench,
// ensemble-runs-view-bench): each the full default config with a preset, learning rate, member
// count and seed drawn from `rng`, four figures, a tag now and then, a note; started a minute apart
// from `firstIndex` on.

#include <random>
#include <vector>

#include "config/config.h"
#include "runs/run_store.h"

namespace ensemble::bench {

inline std::vector<runs::RunEntry> benchEntries(int count, int firstIndex, std::mt19937& rng) {
    const nlohmann::json base = defaultConfigJson();
    const char* presets[] = {"spirals", "moons", "mnist-mlp", "cubic", "sine"};
    const double lrs[] = {0.001, 0.003, 0.01, 0.03, 0.1};
    const int members[] = {1, 4, 8, 16, 32, 100};
    std::uniform_real_distribution<double> unit(0.0, 1.0);
    std::vector<runs::RunEntry> out;
    out.reserve(static_cast<std::size_t>(count));
    for (int i = 0; i < count; ++i) {
        runs::RunEntry e;
        e.program = i % 3 == 0 ? "ensemble-lab" : "ensemble-cli";
        e.kind = i % 3 == 0 ? "app-train" : "train";
        e.version = "1.0.0";
        e.started = 1.7e9 + (firstIndex + i) * 60.0;
        e.wallSeconds = 10.0 + 100.0 * unit(rng);
        e.ended = e.started + e.wallSeconds;
        e.updated = e.ended;
        e.state = runs::RunState::Finished;
        e.preset = presets[rng() % 5];
        e.config = base;
        e.config["optimizer"]["lr"] = lrs[rng() % 5];
        e.config["ensemble"]["members"] = members[rng() % 6];
        e.config["ensemble"]["seed"] = static_cast<int>(rng() % 1000);
        runs::fillFromConfig(e);
        e.backend = "cpu";
        e.figures = {{"test_accuracy", unit(rng)},
                     {"test_nll", unit(rng)},
                     {"test_brier", unit(rng)},
                     {"test_ece", 0.2 * unit(rng)}};
        if (rng() % 10 == 0) {
            e.tags = {"sweep"};
        }
        e.note = rng() % 20 == 0 ? "diverged at step 1200" : "";
        out.push_back(std::move(e));
    }
    return out;
}

}  // namespace ensemble::bench
