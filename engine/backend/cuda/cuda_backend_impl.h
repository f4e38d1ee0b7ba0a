#pragma once

// The CudaBackend class, shared by the files that implement it: cuda_backend.cpp (construction,
// bind and the device memory, parameters and optimizer state), cuda_step.cpp (the training
// step, its graphs and the data axis) and cuda_predict.cpp (prediction and the uncertainty
// measures). Host C++; only makeCudaBackend (cuda_backend.h) is public.

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "backend/backend.h"
#include "backend/cuda/conv_program.h"
#include "backend/cuda/cublas_loader.h"
#include "backend/cuda/cuda_check.h"
#include "backend/cuda/device_buffer.h"
#include "backend/cuda/step_program.h"
#include "backend/cuda/uncertainty_kernels.cuh"
#include "config/config_schema.h"

namespace ensemble::gpu {

class DeviceExecutor;

struct StreamDeleter {
    void operator()(cudaStream_t s) const noexcept { (void)cudaStreamDestroy(s); }
};
using StreamHandle = std::unique_ptr<std::remove_pointer_t<cudaStream_t>, StreamDeleter>;

struct CublasDeleter {
    void operator()(cublasHandle_t h) const noexcept { (void)cublas().destroy(h); }
};
using CublasHandle = std::unique_ptr<std::remove_pointer_t<cublasHandle_t>, CublasDeleter>;

struct GraphDeleter {
    void operator()(cudaGraph_t g) const noexcept { (void)cudaGraphDestroy(g); }
};
using GraphHandle = std::unique_ptr<std::remove_pointer_t<cudaGraph_t>, GraphDeleter>;

struct GraphExecDeleter {
    void operator()(cudaGraphExec_t g) const noexcept { (void)cudaGraphExecDestroy(g); }
};
using GraphExecHandle = std::unique_ptr<std::remove_pointer_t<cudaGraphExec_t>, GraphExecDeleter>;

// The K-member training step on one GPU. Everything a step touches is allocated in bind() and
// stays resident: parameters, gradient and optimizer state in the stacked layout, the whole
// train split, the batch workspace and the per-member rules, flags, losses and counters.
//
// A step is one CUDA graph (captured from enqueueTrainingStep after one eager warm-up step,
// which loads every kernel outside the capture): prepare rules -> plan -> gather -> per layer
// GEMM + bias/activation -> softmax cross-entropy -> per-member loss -> per layer weight GEMM,
// bias gradient, input GEMM, activation backward -> update of all members -> advance the
// counters. The step index and update count live in device memory and the graph's last kernel
// advances them, so replaying the graph needs nothing from the host.
//
// Host traffic per step(): the step index (8 bytes) only when the caller's index is not the
// one the device expects next, the active flags (K bytes) only when they changed, the graph
// launch, and the K losses back (one async copy into pinned memory and one stream
// synchronisation, which Backend::step needs because it returns the losses). The sync costs a
// round trip of some microseconds per step; an interface that trained N steps per call could
// replay the graph N times and synchronise once.
//
// Set the environment variable ENSEMBLE_CUDA_GRAPHS=0 to run every step eagerly instead (same
// kernels, same order, same results), for debugging with compute-sanitizer or nsys.
class CudaBackend final : public Backend {
  public:
    // `math`: backend.math, the cuBLAS handle's math mode for every GEMM of this backend.
    CudaBackend(int device, MathMode math);
    ~CudaBackend() override;

    std::string name() const override { return m_name; }
    void bind(const TrainingProblem& problem) override;
    void setRules(const std::vector<OptimizerRule>& rules) override;
    void setParameters(const float* params) override;
    void parameters(float* out) override;
    OptimizerState optimizerState() override;
    void setOptimizerState(const OptimizerState& state) override;
    void step(uint64_t step, const uint8_t* active, float* losses) override;
    // The gradient phase of the step program, eagerly, and its gradients and losses back to the
    // host (summed over a data axis's replicas there): BatchEnsemble's inner step.
    void gradient(uint64_t step, const uint8_t* active, float* grads, float* losses) override;
    void predictLogProbs(const float* x, int64_t rows, float* out) override;
    // The classification measures; a regression head's predictive comes back as it is.
    bool measuresUncertainty() const override {
        return m_problem.likelihood == Likelihood::Categorical;
    }
    bool predictUncertainty(const float* x, int64_t rows, const std::vector<int>& members,
                            PointUncertainties& out) override;

  private:
    void useDevice() const { ENSEMBLE_CUDA_CHECK(cudaSetDevice(m_device)); }
    void requireBound(const char* what) const {
        if (!m_bound) {
            throw std::logic_error(std::string("CudaBackend::") + what + " before bind()");
        }
    }
    void release();
    // Uploads the step index and the active flags where the device holds others (step() and
    // gradient()); the caller sets the mirror again once the work completed.
    void uploadStepInputs(uint64_t step, const uint8_t* active);
    void checkMemory(const MemoryEstimate& estimate) const;
    // Records `phase` of a step as a graph (the whole step, or one side of the data axis's sum).
    GraphExecHandle captureStep(StepPhase phase);
    // `phase` of one training step's operations on the stream (MLP or CNN program).
    void enqueueStep(DeviceExecutor& ex, StepPhase phase);
    // Runs `phase` from its graph (captured after the first, eager, step) or eagerly.
    void runPhase(StepPhase phase, GraphExecHandle& graph);
    // The members' outputs for the `n` rows already uploaded to predictInput(); returns the
    // device buffer holding them ([K][n][C]).
    float* enqueuePredictChunk(DeviceExecutor& ex, int n);
    float* predictInput();
    int64_t predictChunkRows() const { return m_conv ? m_convPredict.rows : m_predict.chunkRows; }
    void sync() { ENSEMBLE_CUDA_CHECK(cudaStreamSynchronize(m_stream.get())); }

    int m_device = 0;
    std::string m_name;
    bool m_useGraphs = true;
    // Declared first, destroyed last: everything below is enqueued on this stream.
    StreamHandle m_stream;
    DeviceBuffer<unsigned char> m_cublasWorkspace;
    CublasHandle m_cublas;  // destroyed before its workspace is freed

    TrainingProblem m_problem;  // pointers cleared: what bind() was given, minus the data
    bool m_bound = false;
    bool m_training = false;
    DeviceBuffer<float> m_params;
    DeviceBuffer<float> m_grad;
    DeviceBuffer<float> m_moment1;
    DeviceBuffer<float> m_moment2;
    DeviceBuffer<float> m_trainX;
    DeviceBuffer<int32_t> m_trainY;
    DeviceBuffer<float> m_trainTargets;  // regression heads
    DeviceBuffer<float> m_stepArena;
    DeviceBuffer<int32_t> m_rows;
    DeviceBuffer<float> m_predictArena;
    DeviceBuffer<OptimizerRule> m_baseRules;
    DeviceBuffer<OptimizerRule> m_rules;
    DeviceBuffer<uint8_t> m_active;
    DeviceBuffer<float> m_loss;
    DeviceBuffer<DeviceStepState> m_state;
    DeviceBuffer<ParamSegment> m_segments;
    PinnedBuffer<uint64_t> m_hostStep;
    PinnedBuffer<uint8_t> m_hostActive;
    PinnedBuffer<float> m_hostLoss;
    StepBuffers m_buffers;
    PredictArena m_predict;
    // CNN members: their step and prediction workspaces (conv_program.h).
    bool m_conv = false;
    ConvArena m_convStep;
    ConvBuffers m_convStepBuffers;
    ConvArena m_convPredict;
    ConvBuffers m_convPredictBuffers;
    // predictUncertainty's per-chunk outputs, allocated on its first call (the live view's).
    DeviceBuffer<int32_t> m_uncertaintyMembers;
    DeviceBuffer<float> m_uncertaintyMemberProbs;
    DeviceBuffer<double> m_uncertaintyEnsemble;
    DeviceBuffer<PointUncertainty> m_uncertaintyPoints;

    // What the device holds, as far as the host knows: valid only after a step completed.
    bool m_mirrorValid = false;
    uint64_t m_deviceStep = 0;            // the index state.step holds
    std::vector<uint8_t> m_deviceActive;  // the flags d_active holds (0/1)

    // The data axis (TrainingProblem::shard, count > 1): this replica's rows of every batch, and
    // the host buffer its gradients and losses are summed in between the two phases.
    bool m_sharded = false;
    StepShard m_shard;
    PinnedBuffer<float> m_hostSum;
    // gradient(): the gradients and losses on the host (allocated on its first call).
    PinnedBuffer<float> m_hostGradient;
    bool m_warm = false;  // a step ran eagerly: every kernel is loaded, graphs may be captured

    GraphExecHandle m_updateGraph;  // the update phase, when sharded
    GraphExecHandle m_graph;        // declared last: destroyed first
};

}  // namespace ensemble::gpu
