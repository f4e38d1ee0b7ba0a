#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "math/activations.h"
#include "math/likelihood.h"
#include "math/uncertainty.h"
#include "model/mlp.h"
#include "optim/update_rules.h"
#include "sampling/batch_plan.h"

namespace ensemble {

// The data axis of an MPI mesh (docs/scaling.md): the `count` replicas of a group of
// members each take rows [index*B/count, (index+1)*B/count) of every member's batch of B rows,
// after the batch plan chose them (so resamples and Poisson weights do not depend on count). A
// replica's loss and gradient are its shard's sums divided by the whole batch's B, `sum` adds a
// buffer up over the replicas (in a fixed order: the same bits on every replica, every run), and
// every replica applies the same update. count 1 (no data axis): the whole batch, no `sum`.
struct DataShard {
    int index = 0;
    int count = 1;
    std::function<void(float* values, std::size_t n)> sum;
};

// Everything a backend needs to train K members: the model, the (normalised) train split,
// the batch plan parameters and each member's optimizer rule. Pointers are borrowed for the
// duration of bind(); a backend copies (or uploads) what it keeps.
struct TrainingProblem {
    ParamLayout layout;
    Activation activation = Activation::Relu;
    const float* trainX = nullptr;    // rows x inputs, normalised; null for predict-only use
    const int32_t* trainY = nullptr;  // rows; categorical only
    int64_t trainRows = 0;
    // The head (math/likelihood.h); regression heads read trainTargets (rows, standardised)
    // instead of trainY.
    Likelihood likelihood = Likelihood::Categorical;
    const float* trainTargets = nullptr;
    BatchPlanParams plan;
    std::vector<OptimizerRule> rules;  // one per member; bias corrections are set per step
    // training.adversarial_eps: > 0 trains every member on loss(X) + loss(X + eps *
    // sign(dloss/dX)) (fast_mlp.h, fastTrainMember), eps in normalised input units. MLP members
    // only: a backend throws ConfigError (key training.adversarial_eps) from bind() otherwise.
    float adversarialEps = 0.0f;
    // One eps per input, in normalised units, in place of adversarialEps column by column
    // (training.adversarial_eps_unit range); adversarialEps > 0 still switches the objective
    // on. Empty: adversarialEps for every input. The CPU backend's MLP only.
    std::vector<float> adversarialEpsPerInput;
    // This replica's share of every batch. A backend that cannot train shards throws
    // ConfigError (key backend.mesh) from bind() when count > 1.
    DataShard shard;
    // model.dropout (ensemble.method = mc_dropout): > 0 trains with inverted dropout of this
    // rate after every hidden activation (StackLayer::activated; per unit of a dense layer, per
    // channel of a conv), the masks drawn by math/dropout.h from (dropoutSeed, step, member,
    // batch position, layer, unit). 0: no dropout, today's step. Prediction is never masked:
    // mc_dropout's members are folded into plain parameters (model/dropout_masks.h).
    float dropout = 0.0f;
    uint64_t dropoutSeed = 0;
};

// The preconditions of Backend::bind() that hold for every backend; each backend's bind()
// calls it before anything else, so the same problem fails the same way (the same error kind,
// the same exit code) on the CPU and on CUDA. Throws ConfigError (key backend.mesh) for a data
// shard that cannot be trained: a replica index outside [0, count), a batch not divisible by
// the count, or no sum over several replicas; ConfigError (key training.adversarial_eps) for
// adversarial training of members that are not MLPs; ConfigError (key model.dropout) for a
// dropout rate outside [0, 1) or a layer too wide for the masks' counter (math/dropout.h);
// std::invalid_argument for a problem no
// config can make (an empty layout; training data without its labels or targets, a batch of
// 0, plan.rows other than trainRows or 2^31 rows or more, other than one rule per member).
void checkTrainingProblem(const TrainingProblem& problem);

// Every member's probabilities and the ensemble's per-point measures (math/uncertainty.h) for
// a set of points, as a backend computes them where its predictions are.
struct PointUncertainties {
    int64_t rows = 0;
    int classes = 0;
    int members = 0;                         // K, every member
    std::vector<float> memberProbabilities;  // every member: [(k*rows + i)*C + c]
    std::vector<double> probabilities;       // the ensemble of the chosen members: rows x C
    std::vector<PointUncertainty> points;    // rows
};

// The optimizer state of every member, what a checkpoint holds besides the parameters: both
// moment buffers in the parameters' layout order and size, and the update count that drives
// Adam's bias correction and SGD's first-step momentum. `moment1` is Adam(W)'s m or SGD's
// momentum buffer; `moment2` is Adam(W)'s v (SGD leaves it at zero).
struct OptimizerState {
    std::vector<float> moment1;
    std::vector<float> moment2;
    uint64_t updates = 0;  // updates since bind() or setParameters(), the same for every member
};

// A backend runs the batched K-member computation. It is coarse-grained on purpose: one call
// is a whole training step for all members (sample, forward, loss, backward, update), so a
// backend can keep a member's activations in cache (CPU) or capture the step as one graph
// (CUDA) instead of paying a synchronisation per primitive. The primitives themselves, and the
// per-element math in engine/math, are shared between backends.
//
// Precondition for every call but bind(): bind() has succeeded.
class Backend {
  public:
    virtual ~Backend() = default;

    // "cpu (2 threads)", "cuda:0 (NVIDIA H100)".
    virtual std::string name() const = 0;

    // Takes the problem and allocates everything a step needs; no allocation happens later in
    // step(). Optimizer state starts at zero. Begins with checkTrainingProblem(problem).
    virtual void bind(const TrainingProblem& problem) = 0;

    // Replaces every member's optimizer hyperparameters (a live edit in the app, an entry of
    // training.schedule); the parameters, the optimizer state and the update count stay.
    // Takes effect at the next step. Precondition: one rule per member.
    virtual void setRules(const std::vector<OptimizerRule>& rules) = 0;

    // Replaces all members' parameters (layout order) and resets the optimizer state.
    virtual void setParameters(const float* params) = 0;
    // Replaces all members' parameters and leaves the optimizer state and update count as they
    // are: for a caller that only asks for gradients (BatchEnsemble's, which replaces the
    // members before every step). Defaults to setParameters().
    virtual void loadParameters(const float* params) { setParameters(params); }
    // Copies all members' parameters out (layout order).
    virtual void parameters(float* out) = 0;

    // Copies the optimizer state out, and puts a copied-out state back (after setParameters(),
    // which resets it): a run resumed this way goes on bit for bit. Backends that cannot train
    // throw std::logic_error. setOptimizerState throws std::invalid_argument when a moment
    // buffer's size is not the layout's.
    virtual OptimizerState optimizerState() {
        throw std::logic_error(name() + ": this backend has no optimizer state to save");
    }
    virtual void setOptimizerState(const OptimizerState& state) {
        (void)state;
        throw std::logic_error(name() + ": this backend cannot restore an optimizer state");
    }

    // One optimisation step of every member whose `active[k]` is non-zero, at global step
    // index `step` (0-based; it selects the batch). Bias correction counts the updates since
    // bind() or setParameters(). Writes member k's
    // batch loss (mean over the batch of weighted cross-entropy) to losses[k]. A non-finite
    // loss means that member's update was skipped; the caller then freezes it. With a data
    // shard (TrainingProblem::shard) the losses are the whole batch's, the same on every
    // replica, and every replica makes the same update.
    virtual void step(uint64_t step, const uint8_t* active, float* losses) = 0;

    // Every member's gradient of its batch loss at the current parameters, without an update:
    // what step() computes before it updates (the same batch for the same `step`). grads are in
    // the layout's order, zero for a member with active[k] == 0 and unspecified for one whose
    // loss (losses[k], as step() writes it) is not finite. With a data shard they are the sums
    // over the replicas, the same on every replica. The parameters, the optimizer state and the
    // update count do not change. BatchEnsemble's chain rule needs them
    // (backend/batch_ensemble_backend.h); backends that cannot give them throw std::logic_error.
    virtual void gradient(uint64_t step, const uint8_t* active, float* grads, float* losses) {
        (void)step;
        (void)active;
        (void)grads;
        (void)losses;
        throw std::logic_error(name() + ": this backend cannot give gradients without a step");
    }

    // Log-probabilities of every member for `rows` normalised inputs: out[(k*rows + i)*C + c],
    // C = layout.classes() outputs. For a regression head the outputs are its predictive in
    // standardised target units instead (headPredictiveInPlace, math/loss.h): [mu, sigma^2]
    // (gaussian) or [mu] (mse).
    virtual void predictLogProbs(const float* x, int64_t rows, float* out) = 0;
    // Whether predictUncertainty computes the measures itself (the CUDA backend: only the
    // results cross the bus) instead of leaving them to the host (metrics/grid.h).
    virtual bool measuresUncertainty() const { return false; }
    // predictLogProbs followed by the per-point measures over `members` (ascending member
    // indices, at least one). Returns false, writing nothing, when the backend leaves that work
    // to the host, which then does it from predictLogProbs.
    virtual bool predictUncertainty(const float* x, int64_t rows, const std::vector<int>& members,
                                    PointUncertainties& out) {
        (void)x;
        (void)rows;
        (void)members;
        (void)out;
        return false;
    }
};

// The CPU backend with `threads` OpenMP threads (0: all cores), for code above the backends
// that needs one without choosing by config (a loaded ensemble's prediction); the registry
// (registry/registry.h) makes the backend a config asks for.
std::unique_ptr<Backend> makeCpuBackend(int threads = 0);
// Bytes the CPU backend's bind() allocates for convolutional members of `layout` at `batch`
// examples per step on `threads` threads (the trainer's memory estimate before a run).
std::size_t cpuConvWorkspaceBytes(const ParamLayout& layout, int batch, int threads);

}  // namespace ensemble
