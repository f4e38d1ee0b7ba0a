#pragma once

// The CPU backend: the Backend interface over the MLP kernels (fast_mlp.h) and the conv path
// (conv_net.h). Kept whole because it is one dispatch: each call picks the kernel family for
// the bound problem and spreads the members over OpenMP threads the same way.

#include <memory>
#include <vector>

#include "backend/backend.h"
#include "backend/cpu/conv_net.h"
#include "backend/cpu/fast_mlp.h"
#include "backend/cpu/mlp_kernels.h"

namespace ensemble {

// The CPU backend and the oracle for every other backend: OpenMP over members (each member's
// whole step runs on one thread, so results are bit-identical for any thread count), the fast
// float kernels of fast_mlp.h (register-blocked SIMD for small layers, Eigen's GEMM for large
// ones, the optimizer update fused into the backward pass), and the shared per-element math
// of engine/math. Members with conv or pool layers take the im2col path of conv_net.h.
class CpuBackend final : public Backend {
  public:
    // threads = 0: all the cores OpenMP reports.
    explicit CpuBackend(int threads = 0);
    ~CpuBackend() override;

    std::string name() const override;
    void bind(const TrainingProblem& problem) override;
    void setRules(const std::vector<OptimizerRule>& rules) override;
    void setParameters(const float* params) override;
    void loadParameters(const float* params) override;
    void parameters(float* out) override;
    OptimizerState optimizerState() override;
    void setOptimizerState(const OptimizerState& state) override;
    void step(uint64_t step, const uint8_t* active, float* losses) override;
    void gradient(uint64_t step, const uint8_t* active, float* grads, float* losses) override;
    void predictLogProbs(const float* x, int64_t rows, float* out) override;

    int threads() const { return m_threads; }

  private:
    struct Workspace;  // one per thread: activations and gradients of one member
    // Trains member k for one step on one thread; returns its batch loss.
    float trainMember(int k, uint64_t step, Workspace& ws, const OptimizerRule& rule,
                      bool firstUpdate);
    // step() for conv members: plans and gathers every member's batch, then ConvNetCpu::train
    // (without the update when gradientOnly: gradient()).
    void stepConv(uint64_t step, const uint8_t* active, float* losses, bool gradientOnly = false);
    // step() of MLP members on a data-axis shard (TrainingProblem::shard): every member's
    // gradient on this replica's rows, the sum over the replicas, then the update.
    void stepShard(uint64_t step, const uint8_t* active, float* losses);
    // Every MLP member's gradient on this replica's rows, packed per member, and its loss, into
    // m_shardBuffer, summed over the replicas on a data axis: stepShard() and gradient().
    void memberGradients(uint64_t step, const uint8_t* active);
    // The dropout masks' key of global member `member` at `step` (off when the rate is 0);
    // firstRow: the batch position of this replica's first row.
    DropoutStep dropoutStep(uint64_t step, uint32_t member, uint32_t firstRow) const;

    int m_threads = 1;
    TrainingProblem m_problem;
    std::vector<float> m_trainX;
    std::vector<int32_t> m_trainY;
    std::vector<float> m_trainTargets;  // regression heads: standardised targets
    FloatBuffer m_params;
    FloatBuffer m_moment1;   // Adam m / SGD momentum buffer
    FloatBuffer m_moment2;   // Adam v
    uint64_t m_updates = 0;  // since bind() / setParameters(): drives bias correction
    std::vector<Workspace> m_workspaces;
    // Shared batch for bootstrap modes where all members read the same rows.
    std::vector<int32_t> m_sharedRows;
    std::vector<float> m_sharedWeights;
    std::vector<int32_t> m_sharedLabels;
    std::vector<float> m_sharedTargets;
    FastBatch m_sharedBatch;
    // Data axis: every member's packed gradient (layout.size()), then the K losses.
    std::vector<float> m_shardBuffer;
    // Prediction scratch, one per thread (allocated on first use).
    std::vector<FastWorkspace> m_predictWorkspaces;
    // Conv members (null for MLPs): the engine and each member's gathered batch (resample:
    // K x B rows; shared modes use m_convX for all; B this replica's rows on a data axis).
    std::unique_ptr<ConvNetCpu> m_conv;
    std::vector<float> m_convX;
    std::vector<int32_t> m_convLabels;     // K x B (resample) or B
    std::vector<float> m_convWeights;      // K x B
    std::vector<int32_t> m_convRows;       // K x B (resample) or B: the planned rows
    std::vector<float> m_convPlanWeights;  // the plan's weights, as m_convRows
};

}  // namespace ensemble
