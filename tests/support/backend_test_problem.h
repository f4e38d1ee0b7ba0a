#pragma once

// A small two-spirals training problem the backend tests share: the CUDA step program
// emulated on the CPU (tst_cuda_plan) and the real CUDA backend (tst_cuda_parity) are both
// checked against CpuBackend on problems made here (with nmse and the tolerances of
// test_support.h).

#include <cstdint>
#include <vector>

#include "backend/backend.h"
#include "data/dataset.h"
#include "model/architecture.h"
#include "model/mlp.h"
#include "optim/update_rules.h"
#include "support/test_support.h"

namespace ensemble::test {

// model.layers entries, as a test writes a layer stack.
inline LayerSpec conv(int filters, int kernel, int stride = 1, Padding padding = Padding::Same) {
    LayerSpec s;
    s.kind = LayerKind::Conv;
    s.filters = filters;
    s.kernel = kernel;
    s.stride = stride;
    s.padding = padding;
    return s;
}

inline LayerSpec pool(PoolKind kind, int size) {
    LayerSpec s;
    s.kind = LayerKind::Pool;
    s.pool = kind;
    s.size = size;
    return s;
}

inline LayerSpec dense(int units) {
    LayerSpec s;
    s.kind = LayerKind::Dense;
    s.units = units;
    return s;
}

inline LayerSpec dropout(double rate) {
    LayerSpec s;
    s.kind = LayerKind::Dropout;
    s.rate = rate;
    return s;
}

struct ProblemShape {
    int64_t rows = 250;
    uint64_t dataSeed = 7;
    std::vector<int> widths = {2, 16, 12, 2};
    int members = 6;
    int batch = 24;
    uint64_t planSeed = 1234;
    double adamLr = 0.005;  // member k: adamLr * (1 + k % lrCycle); SGD: 0.05 * (1 + k % lrCycle)
    int lrCycle = 3;
};

struct Problem {
    Dataset data;
    TrainingProblem training;
};

// Spirals (noise 0.1, 1.5 turns) and an MLP with per-member learning rates; even members use
// momentum 0.9 under SGD, every third member weight decay 1e-3.
inline Problem makeProblem(BootstrapMode mode, OptimizerKind kind, Activation act,
                           const ProblemShape& shape = {}) {
    Problem p;
    p.data = makeSpirals(shape.rows, 0.1, 1.5, shape.dataSeed);
    p.training.layout = ParamLayout(shape.widths, shape.members);
    p.training.activation = act;
    p.training.trainX = p.data.x.data();
    p.training.trainY = p.data.y.data();
    p.training.trainRows = p.data.rows;
    p.training.plan.seed = shape.planSeed;
    p.training.plan.rows = static_cast<uint32_t>(p.data.rows);
    p.training.plan.batch = static_cast<uint32_t>(shape.batch);
    p.training.plan.mode = mode;
    for (int k = 0; k < shape.members; ++k) {
        const double scale = 1 + k % shape.lrCycle;
        const double lr = kind == OptimizerKind::Sgd ? 0.05 * scale : shape.adamLr * scale;
        const double momentum = kind == OptimizerKind::Sgd && k % 2 == 0 ? 0.9 : 0.0;
        const double weightDecay = k % 3 == 2 ? 1e-3 : 0.0;
        p.training.rules.push_back(makeRule(kind, lr, weightDecay, momentum));
    }
    return p;
}

// The parameters a comparison starts every backend from: initParameters of `layout` with
// `seed`.
inline std::vector<float> initialParameters(const ParamLayout& layout, uint64_t seed) {
    std::vector<float> init(layout.size());
    initParameters(layout, seed, init.data());
    return init;
}

// side x side points evenly over [-1.5, 1.5]^2, interleaved (x, y), row by row.
inline std::vector<float> gridPoints(int side) {
    std::vector<float> x;
    x.reserve(static_cast<std::size_t>(side) * side * 2);
    for (int i = 0; i < side; ++i) {
        for (int j = 0; j < side; ++j) {
            x.push_back(-1.5f + 3.0f * static_cast<float>(j) / static_cast<float>(side - 1));
            x.push_back(-1.5f + 3.0f * static_cast<float>(i) / static_cast<float>(side - 1));
        }
    }
    return x;
}

}  // namespace ensemble::test
