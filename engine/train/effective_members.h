#pragma once

// How a one-network method (model/ensemble_methods.h: oneNetwork) turns the network the backend
// trains into its K effective members, and what it asks of the step loop. The Trainer holds the
// members' parameters and predicts with them on a second, predict-only backend of K members;
// a method says three things:
//   - the factor on optimizer.lr at each step (its own learning-rate schedule, if any),
//   - how many members are fixed ("taken") after a number of steps: member k < taken is the
//     network as it was when k was taken, the others follow the network in training,
//   - how member k's parameters derive from the network's (snapshot: a copy; mc_dropout: member
//     k's fixed dropout mask folded into the weights).
// Everything is a function of the step, so a resumed run derives the same members.

#include <cstdint>
#include <memory>
#include <vector>

#include "config/config.h"
#include "model/mlp.h"

namespace ensemble {

class EffectiveMembers {
  public:
    virtual ~EffectiveMembers() = default;
    // The factor on optimizer.lr for the step with 0-based index `step`.
    virtual double lrFactor(int64_t step) const = 0;
    // Members fixed after `stepsDone` steps (non-decreasing in stepsDone, at most K).
    virtual int takenAfter(int64_t stepsDone) const = 0;
    // Member k's parameters (the members' layout, slot k of `members`) from the trained
    // network's (`trained`, a 1-member layout of the same architecture).
    virtual void derive(int k, const ParamLayout& trainedLayout, const float* trained,
                        const ParamLayout& memberLayout, float* members) const = 0;
    // The size of what the backend trains for `trainedLayout`: its parameters, or BatchEnsemble's
    // shared and fast weights (model/batch_ensemble.h).
    virtual std::size_t trainedSize(const ParamLayout& trainedLayout) const {
        return trainedLayout.size();
    }
};

// The snapshot method's cycle plan (Huang et al. 2017): `steps` steps in K cycles. Cycles
// 0..K-2 have floor(steps / K) steps and the last takes the rest (floor(steps / K) plus the
// remainder), so every member ends at the bottom of a full cosine. Within a cycle of length L
// the step at position t (0-based) has lr = optimizer.lr / 2 * (1 + cos(pi * t / L)): the
// paper's alpha(t) with its ceil(T/M) replaced by the cycle's own length. Member k is the network
// at the end of cycle k. Precondition: 1 <= members <= steps.
class SnapshotCycles {
  public:
    SnapshotCycles(int members, int64_t steps);
    int members() const { return m_members; }
    int64_t steps() const { return m_steps; }
    int64_t cycleStart(int cycle) const;
    int64_t cycleLength(int cycle) const;
    // The cycle the step with index `step` belongs to (the last for steps past the end).
    int cycleOf(int64_t step) const;
    double lrFactor(int64_t step) const;
    // Cycles that have ended after `stepsDone` steps.
    int endedAfter(int64_t stepsDone) const;

  private:
    int m_members;
    int64_t m_steps;
    int64_t m_length;  // of every cycle but the last
};

// mc_dropout's mask seed: ensemble.seed itself. The dropout draws have Philox purposes of their
// own (math/dropout.h: RngPurpose::Dropout in training, DropoutMember for the members' masks),
// so they are independent of the initialisation, batches and bootstrap keyed by the same seed.
// Exports store it (metadata "dropout_seed") and reading a file folds the masks from that.
inline uint64_t dropoutMaskSeed(const ExperimentConfig& config) {
    return config.ensemble.seed;
}

// mc_dropout's K members from its one network (`trained`, ParamLayout(architecture, 1) order):
// member k is the network with member k's fixed mask folded in (model/dropout_masks.h).
std::vector<float> mcDropoutMembers(const Architecture& architecture, const float* trained,
                                    double rate, uint64_t seed, int members);

// Member k of `params` (in `layout`) as a 1-member layout of the same architecture.
std::vector<float> memberParameters(const ParamLayout& layout, const float* params, int k);

// The effective members of `config`'s method for a run of `totalSteps` steps; null for a method
// that trains its members itself (independent). Throws ConfigError (key training.steps) when the
// run is too short for the method's plan.
std::unique_ptr<EffectiveMembers> makeEffectiveMembers(const ExperimentConfig& config,
                                                       int64_t totalSteps);

}  // namespace ensemble
