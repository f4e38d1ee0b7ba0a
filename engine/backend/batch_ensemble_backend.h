#pragma once

// BatchEnsemble's training (model/batch_ensemble.h) on any backend that gives gradients
// (Backend::gradient): before each step the K members' weights are expanded from the shared and
// fast ones into the inner backend, which computes every member's gradient on its own batch (as
// ensemble.bootstrap says) exactly as for an independent ensemble; the chain rule carries them
// back to the shared weight (summed over the members), the fast weights and the biases, and the
// optimizer updates those here with the shared update rules (optim/update_rules.h). So the
// method runs wherever the members' step runs (CPU, CUDA, MLP, CNN, a data axis), with the
// backend's own forward and backward passes.
//
// parameters() and setParameters() speak the trained parameters (BatchEnsembleLayout order);
// the optimizer state has their size. The members' parameters for prediction are
// batchEnsembleExpand() of them.

#include <memory>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "model/batch_ensemble.h"

namespace ensemble {

class BatchEnsembleBackend final : public Backend {
  public:
    explicit BatchEnsembleBackend(std::unique_ptr<Backend> inner);

    std::string name() const override { return m_inner->name(); }
    // problem.layout is the K members' (effective) layout. One rule per member; the shared
    // weight follows member 0's (the config makes them equal).
    void bind(const TrainingProblem& problem) override;
    void setRules(const std::vector<OptimizerRule>& rules) override;
    void setParameters(const float* theta) override;
    void parameters(float* out) override;
    OptimizerState optimizerState() override;
    void setOptimizerState(const OptimizerState& state) override;
    void step(uint64_t step, const uint8_t* active, float* losses) override;
    void predictLogProbs(const float* x, int64_t rows, float* out) override;
    bool measuresUncertainty() const override { return m_inner->measuresUncertainty(); }
    bool predictUncertainty(const float* x, int64_t rows, const std::vector<int>& members,
                            PointUncertainties& out) override;

    const BatchEnsembleLayout& trainedLayout() const { return m_layout; }
    Backend& inner() { return *m_inner; }

  private:
    // Expands the trained parameters into the inner backend's members when they changed.
    void pushMembers();

    std::unique_ptr<Backend> m_inner;
    BatchEnsembleLayout m_layout;
    std::vector<OptimizerRule> m_rules;
    std::vector<float> m_theta;
    std::vector<float> m_moment1;
    std::vector<float> m_moment2;
    std::vector<float> m_members;      // the members' parameters (inner layout)
    std::vector<float> m_memberGrads;  // their gradients
    std::vector<float> m_thetaGrad;
    std::vector<uint8_t> m_include;  // members whose gradient counts this step
    uint64_t m_updates = 0;
    bool m_membersCurrent = false;
};

}  // namespace ensemble
