#include "backend/batch_ensemble_backend.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <utility>

#include "backend/cpu/fast_mlp.h"

namespace ensemble {

namespace {

// The rule of a fast weight: the member's, without weight decay. Decay pulls r and s towards
// 0, which would shrink the member's whole weight matrix rather than regularise it (the shared
// weight and the biases keep optimizer.weight_decay).
OptimizerRule fastRule(OptimizerRule rule) {
    rule.weightDecay = 0.0f;
    rule.decayFactor = 1.0f;
    return rule;
}

// applyUpdate on each of `count` parameters, vectorised (the CPU backend's update kernel: the
// same float operations as the scalar rule).
void update(const OptimizerRule& rule, bool firstStep, float* param, const float* grad, float* m1,
            float* m2, std::size_t count) {
    // Chunks on the threads for a large shared weight (every element's update is its own).
    constexpr std::size_t kChunk = std::size_t{1} << 14;
    const auto chunks = static_cast<int64_t>((count + kChunk - 1) / kChunk);
#pragma omp parallel for schedule(static) if (chunks >= 4)
    for (int64_t c = 0; c < chunks; ++c) {
        const std::size_t begin = static_cast<std::size_t>(c) * kChunk;
        const std::size_t n = std::min(kChunk, count - begin);
        fastApplyUpdate(rule, firstStep, param + begin, grad + begin, m1 + begin, m2 + begin, n);
    }
}

}  // namespace

BatchEnsembleBackend::BatchEnsembleBackend(std::unique_ptr<Backend> inner)
    : m_inner(std::move(inner)) {
    if (!m_inner) {
        throw std::invalid_argument("BatchEnsembleBackend: no backend to train the members on");
    }
}

void BatchEnsembleBackend::bind(const TrainingProblem& problem) {
    m_inner->bind(problem);
    m_layout = BatchEnsembleLayout(problem.layout);
    m_rules = problem.rules;
    m_theta.assign(m_layout.size(), 0.0f);
    m_moment1.assign(m_layout.size(), 0.0f);
    m_moment2.assign(m_layout.size(), 0.0f);
    m_thetaGrad.assign(m_layout.size(), 0.0f);
    m_members.assign(problem.layout.size(), 0.0f);
    m_memberGrads.assign(problem.layout.size(), 0.0f);
    m_include.assign(static_cast<std::size_t>(problem.layout.members()), 0);
    m_updates = 0;
    m_membersCurrent = false;
}

void BatchEnsembleBackend::setRules(const std::vector<OptimizerRule>& rules) {
    if (rules.size() != m_rules.size()) {
        throw std::invalid_argument("BatchEnsembleBackend::setRules: one rule per member");
    }
    m_rules = rules;
}

void BatchEnsembleBackend::setParameters(const float* theta) {
    std::copy_n(theta, m_layout.size(), m_theta.begin());
    std::fill(m_moment1.begin(), m_moment1.end(), 0.0f);
    std::fill(m_moment2.begin(), m_moment2.end(), 0.0f);
    m_updates = 0;
    m_membersCurrent = false;
}

void BatchEnsembleBackend::parameters(float* out) {
    std::copy(m_theta.begin(), m_theta.end(), out);
}

OptimizerState BatchEnsembleBackend::optimizerState() {
    OptimizerState state;
    state.moment1 = m_moment1;
    state.moment2 = m_moment2;
    state.updates = m_updates;
    return state;
}

void BatchEnsembleBackend::setOptimizerState(const OptimizerState& state) {
    if (state.moment1.size() != m_layout.size() || state.moment2.size() != m_layout.size()) {
        throw std::invalid_argument("BatchEnsembleBackend::setOptimizerState: moments of " +
                                    std::to_string(state.moment1.size()) + " and " +
                                    std::to_string(state.moment2.size()) + " values for " +
                                    std::to_string(m_layout.size()) + " parameters");
    }
    m_moment1 = state.moment1;
    m_moment2 = state.moment2;
    m_updates = state.updates;
}

void BatchEnsembleBackend::pushMembers() {
    if (m_membersCurrent) {
        return;
    }
    batchEnsembleExpand(m_layout, m_theta.data(), m_members.data());
    m_inner->loadParameters(m_members.data());
    m_membersCurrent = true;
}

void BatchEnsembleBackend::step(uint64_t step, const uint8_t* active, float* losses) {
    pushMembers();
    const int k = m_layout.members();
    m_inner->gradient(step, active, m_memberGrads.data(), losses);
    bool any = false;
    for (int m = 0; m < k; ++m) {
        // A member whose loss is not finite is skipped, as a backend's step skips it.
        m_include[static_cast<std::size_t>(m)] = active[m] != 0 && std::isfinite(losses[m]);
        any = any || m_include[static_cast<std::size_t>(m)] != 0;
    }
    if (!any) {
        return;
    }
    batchEnsembleGradient(m_layout, m_theta.data(), m_memberGrads.data(), m_include.data(),
                          m_thetaGrad.data());
    const bool firstStep = m_updates == 0;
    const uint64_t updateNumber = m_updates + 1;
    OptimizerRule shared = m_rules.front();
    prepareStep(shared, updateNumber);
    for (int l = 0; l < m_layout.layerCount(); ++l) {
        const BatchEnsembleLayout::Layer& b = m_layout.layer(l);
        const std::size_t w = static_cast<std::size_t>(b.out) * b.in;
        update(shared, firstStep, m_theta.data() + b.weight, m_thetaGrad.data() + b.weight,
               m_moment1.data() + b.weight, m_moment2.data() + b.weight, w);
        for (int m = 0; m < k; ++m) {
            if (m_include[static_cast<std::size_t>(m)] == 0) {
                continue;
            }
            OptimizerRule own = m_rules[static_cast<std::size_t>(m)];
            prepareStep(own, updateNumber);
            const OptimizerRule fast = fastRule(own);
            const auto mm = static_cast<std::size_t>(m);
            const std::size_t in = b.fastIn + mm * static_cast<std::size_t>(b.inUnits);
            const std::size_t out = b.fastOut + mm * static_cast<std::size_t>(b.out);
            const std::size_t bias = b.bias + mm * static_cast<std::size_t>(b.out);
            update(fast, firstStep, m_theta.data() + in, m_thetaGrad.data() + in,
                   m_moment1.data() + in, m_moment2.data() + in,
                   static_cast<std::size_t>(b.inUnits));
            update(fast, firstStep, m_theta.data() + out, m_thetaGrad.data() + out,
                   m_moment1.data() + out, m_moment2.data() + out, static_cast<std::size_t>(b.out));
            update(own, firstStep, m_theta.data() + bias, m_thetaGrad.data() + bias,
                   m_moment1.data() + bias, m_moment2.data() + bias,
                   static_cast<std::size_t>(b.out));
        }
    }
    ++m_updates;
    m_membersCurrent = false;
}

void BatchEnsembleBackend::predictLogProbs(const float* x, int64_t rows, float* out) {
    pushMembers();
    m_inner->predictLogProbs(x, rows, out);
}

bool BatchEnsembleBackend::predictUncertainty(const float* x, int64_t rows,
                                              const std::vector<int>& members,
                                              PointUncertainties& out) {
    pushMembers();
    return m_inner->predictUncertainty(x, rows, members, out);
}

}  // namespace ensemble
