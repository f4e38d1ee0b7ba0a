#pragma once

// The CPU backend's path for members with convolution and pooling layers (model.kind cnn).
//
// A conv is lowered to a GEMM over im2col columns: activations are kept channel-major over the
// examples ([C][examples][H][W]), so a conv's output W [F, C k k] x cols [C k k, examples H W]
// is the next layer's input as it stands, and the weight gradient dY x cols^T and the input
// gradient W^T x dY are GEMMs too. A conv runs slice by slice of a task's examples, each slice's
// columns made (and for the gradients made again) while the previous slice's are still in the
// core's cache; a stride-1 "same" conv makes each column row as one shifted copy of the plane.
// Pooling and the flatten before the first dense layer are plain loops; dense layers are GEMMs
// over [examples, features].
//
// Work is cut into tasks of (member, group of kConvGroup examples of its batch): each task runs
// forward and backward for its examples and leaves its part of the member's gradient; the parts
// are then summed in group order and the update applied. The cut depends only on the batch
// size, never on the thread count or K, so results are bit-identical for any number of threads
// and member k's trajectory does not depend on K; a single member still keeps every core busy.
//
// Everything here is compiled with the engine's flags (-march=native), as fast_mlp.cpp is.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

#include "backend/cpu/fast_mlp.h"
#include "math/activations.h"
#include "model/mlp.h"
#include "optim/update_rules.h"

namespace ensemble {

// Examples per task.
constexpr int kConvGroup = 32;

// One member's batch for a step: inputs (batch x inputs, normalised, row-major: each row an
// image [C][H][W]), labels and example weights.
struct ConvMemberBatch {
    const float* x = nullptr;
    const int32_t* labels = nullptr;
    const float* weights = nullptr;
};

class ConvNetCpu {
  public:
    ConvNetCpu();
    ~ConvNetCpu();
    ConvNetCpu(const ConvNetCpu&) = delete;
    ConvNetCpu& operator=(const ConvNetCpu&) = delete;

    // Sizes everything for `layout` and steps of `batch` examples on `threads` threads. Losses
    // and gradients are the batch's weighted sums divided by `normaliser` (0: batch, the mean;
    // a data-axis shard of a B-row batch passes B). dropout > 0: train() and gradient() apply
    // inverted dropout of that rate after every activated layer (math/dropout.h), keyed by
    // setDropoutStep(); prediction never does.
    void bind(const ParamLayout& layout, Activation activation, int batch, int threads,
              int normaliser = 0, float dropout = 0.0f);

    // The dropout masks' key for the next train() or gradient(): member k is global member
    // memberOffset + k, example b of the batch is at batch position firstRow + b (a data
    // axis's replica passes its first row). Ignored when bind()'s dropout is 0.
    void setDropoutStep(uint64_t seed, uint64_t step, uint32_t memberOffset, uint32_t firstRow);

    // One step of every member with active[k] != 0: forward, loss (the mean over the batch of
    // weight_b * CE_b), backward and the update of its parameters and optimizer moments in
    // place. `rules` are prepared for this update (prepareStep). `sharedInput`: every member's
    // batch has the same x (same batches, Poisson), so the first layer's columns are made once.
    // A member whose loss is not finite is left as it was. With `replicaSum` (the data axis,
    // DataShard::sum) every member's gradient and loss are added up over the replicas between
    // the backward pass and the update; `losses` are then the sums. Without `rules` (null) it
    // stops before the update: packedGradients() then holds every member's gradient (the sum
    // over the replicas with `replicaSum`), zero for an inactive member, and nothing changes.
    void train(const ConvMemberBatch* batches, bool sharedInput, const uint8_t* active,
               const OptimizerRule* rules, bool firstUpdate, float* params, float* moment1,
               float* moment2, float* losses,
               const std::function<void(float*, std::size_t)>* replicaSum = nullptr);

    // After a train() without rules: member k's gradient, packed per layer ([W_l, b_l]), at
    // k * perMember. Unspecified for a member whose loss is not finite.
    const float* packedGradients() const { return m_reduce.data(); }

    // Member k's gradient over `batch` examples, packed per layer ([W_l (out x in), b_l (out)]),
    // and its loss: the same computation train() makes, without the update.
    float gradient(int k, const float* params, const ConvMemberBatch& batch, int batchSize,
                   float* grad);

    // Log-probabilities of every member for `rows` normalised inputs: out[(k*rows + i)*C + c].
    void predictLogProbs(const float* params, const float* x, int64_t rows, float* out);

    // Floats of a conv layer's columns, pre-activations and outputs made at a time (a slice of
    // a task's examples; conv_net.cpp): a core's L2 cache. Tests set far fewer with
    // setSliceFloats() before bind(), so that every task is cut into slices of one example.
    static constexpr std::size_t kSliceFloats = std::size_t{1} << 17;
    void setSliceFloats(std::size_t floats) { m_sliceFloats = floats; }

    // Bytes bind() allocates (for the memory estimate before a run).
    static std::size_t workspaceBytes(const ParamLayout& layout, int batch, int threads,
                                      bool dropout = false);

    struct Workspace;

  private:
    // The masks' key of member k's group of examples starting at `begin`.
    DropoutStep groupDropout(int k, int begin) const;

    ParamLayout m_layout;
    DropoutStep m_dropout;               // rate from bind(), the rest from setDropoutStep()
    std::vector<std::size_t> m_offsets;  // each layer's [W, b] in a packed member gradient
    Activation m_activation = Activation::Relu;
    int m_batch = 0;
    int m_normaliser = 0;  // what a batch's weighted loss sum is divided by
    int m_threads = 1;
    int m_groups = 0;
    std::size_t m_sliceFloats = kSliceFloats;
    std::vector<Workspace> m_workspaces;  // one per thread
    // Per (member, group): its part of the gradient (packed, perMember floats) and of the loss.
    FloatBuffer m_partials;
    std::vector<float> m_partialLoss;
    FloatBuffer m_sharedCols;  // the first conv's columns of a shared batch
    // Data axis: every member's summed gradient (packed), then the losses, for the replica sum.
    std::vector<float> m_reduce;
};

}  // namespace ensemble
