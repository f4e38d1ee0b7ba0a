#pragma once

// Steps a bound CPU backend through `steps` from `init` and returns the parameters: the reference
// side of the layer suites' comparisons (tst_dropout_layer, tst_l2_layer).

#include <cstdint>
#include <vector>

#include "backend/backend.h"
#include "backend/cpu/cpu_backend.h"

namespace ensemble::test {

inline std::vector<float> cpuRun(const TrainingProblem& problem, const std::vector<float>& init,
                                 const std::vector<uint64_t>& steps, int threads = 1) {
    CpuBackend cpu(threads);
    cpu.bind(problem);
    cpu.setParameters(init.data());
    std::vector<uint8_t> active(static_cast<std::size_t>(problem.layout.members()), 1);
    std::vector<float> loss(active.size());
    for (uint64_t s : steps) {
        cpu.step(s, active.data(), loss.data());
    }
    std::vector<float> out(init.size());
    cpu.parameters(out.data());
    return out;
}

}  // namespace ensemble::test
