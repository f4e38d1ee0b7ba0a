#pragma once

// The small active-learning problem tst_active and tst_batch_bald share: 240 moons points, K = 3
// one-layer MLPs on one thread, 6 initial labels, 4 a round, 40 steps a round.

#include <nlohmann/json.hpp>

#include "config/config.h"

namespace ensemble::test {

inline nlohmann::json activeMoonsConfig() {
    nlohmann::json c = defaultConfigJson();
    c["dataset"]["kind"] = "moons";
    c["dataset"]["n"] = 240;
    c["dataset"]["noise"] = 0.15;
    c["model"]["hidden"] = {12};
    c["ensemble"]["members"] = 3;
    c["ensemble"]["seed"] = 5;
    c["training"]["batch_size"] = 16;
    c["backend"] = {{"kind", "cpu"}, {"threads", 1}};
    c["active"]["initial"] = 6;
    c["active"]["per_round"] = 4;
    c["active"]["steps"] = 40;
    return c;
}

}  // namespace ensemble::test
