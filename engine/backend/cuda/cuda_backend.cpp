#include "backend/cuda/cuda_backend.h"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "backend/cuda/batch_kernels.cuh"
#include "backend/cuda/conv_kernels.cuh"
#include "backend/cuda/conv_program.h"
#include "backend/cuda/cublas_loader.h"
#include "backend/cuda/cuda_check.h"
#include "backend/cuda/device_buffer.h"
#include "backend/cuda/layer_kernels.cuh"
#include "backend/cuda/loss_kernels.cuh"
#include "backend/cuda/optim_kernels.cuh"
#include "backend/cuda/step_program.h"
#include "backend/cuda/uncertainty_kernels.cuh"
#include "core/errors.h"

namespace ensemble {

namespace gpu {

namespace {

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

std::string mib(std::size_t bytes) {
    return std::to_string((bytes + (std::size_t{1} << 20) - 1) >> 20) + " MiB";
}

// Runs the operation sequences of step_program.h on the GPU: every call is one kernel launch
// or one cuBLAS call on `stream`, so the sequence can be captured as a graph unchanged.
class DeviceExecutor {
  public:
    DeviceExecutor(cublasHandle_t cublas, cudaStream_t stream)
        : m_cublas(cublas), m_stream(stream) {}

    void prepareRules(const OptimizerRule* base, OptimizerRule* rules, int members,
                      const DeviceStepState* state) {
        launchPrepareRules(base, rules, members, state, m_stream);
    }
    void planBatch(const BatchPlanParams& plan, int members, const DeviceStepState* state,
                   int32_t* rows, float* weights, uint32_t first, uint32_t n) {
        launchPlanBatch(plan, members, state, rows, weights, first, n, m_stream);
    }
    void gatherRows(const float* trainX, int features, const int32_t* rows, int64_t slotCount,
                    float* x) {
        launchGatherRows(trainX, features, rows, slotCount, x, m_stream);
    }
    // C = op(A) op(B) for every member; see GemmArgs for how row-major maps to cuBLAS.
    // Pointer mode is host, so alpha/beta are read at the call and a captured graph holds
    // their values.
    void gemm(const GemmArgs& g, const float* a, const float* b, float* c) {
        const float one = 1.0f;
        const float beta = g.beta;
        ENSEMBLE_CUBLAS_CHECK(cublas().sgemmStridedBatched(
            m_cublas, g.transA ? CUBLAS_OP_T : CUBLAS_OP_N, g.transB ? CUBLAS_OP_T : CUBLAS_OP_N,
            g.m, g.n, g.k, &one, a, g.lda, static_cast<long long>(g.strideA), b, g.ldb,
            static_cast<long long>(g.strideB), &beta, c, g.ldc, static_cast<long long>(g.strideC),
            g.batchCount));
    }
    void biasActivate(float* z, float* post, const float* bias, int members, int rows, int out,
                      Activation act) {
        launchBiasActivate(z, post, bias, members, rows, out, act, m_stream);
    }
    void softmaxCrossEntropy(const float* logits, const int32_t* trainY, const int32_t* rows,
                             const float* weights, int members, int batch, int classes,
                             float* dLogits, float* rowLoss, int normaliser) {
        launchSoftmaxCrossEntropy(logits, trainY, rows, weights, members, batch, classes, dLogits,
                                  rowLoss, normaliser, m_stream);
    }
    void regressionLoss(const float* outputs, const float* trainTargets, const int32_t* rows,
                        const float* weights, int members, int batch, int outputCount,
                        Likelihood likelihood, float* dOutputs, float* rowLoss, int normaliser) {
        launchRegressionLoss(outputs, trainTargets, rows, weights, members, batch, outputCount,
                             likelihood, dOutputs, rowLoss, normaliser, m_stream);
    }
    void headPredictive(float* z, int64_t rows, int outputCount, Likelihood likelihood) {
        launchHeadPredictive(z, rows, outputCount, likelihood, m_stream);
    }
    void memberLoss(const float* rowLoss, const uint8_t* active, int members, int batch,
                    float* loss) {
        launchMemberLoss(rowLoss, active, members, batch, loss, m_stream);
    }
    void biasGradient(const float* delta, float* gradBias, int members, int rows, int out,
                      bool accumulate = false) {
        launchBiasGradient(delta, gradBias, members, rows, out, accumulate, m_stream);
    }
    void adversarialInputs(const float* x, bool shared, int members, int batch, int features,
                           float eps, float* xAdv) {
        launchAdversarialInputs(x, shared, members, batch, features, eps, xAdv, m_stream);
    }
    void adversarialLoss(const float* lossAdv, int members, float* loss) {
        launchAdversarialLoss(lossAdv, members, loss, m_stream);
    }
    void activationBackward(float* delta, const float* pre, const float* post, int64_t count,
                            Activation act) {
        launchActivationBackward(delta, pre, post, count, act, m_stream);
    }
    void applyUpdates(const StepBuffers& b, int64_t total) {
        launchApplyUpdates(b.params, b.grad, b.moment1, b.moment2, b.segments, b.segmentCount,
                           b.rules, b.active, b.loss, b.state, total, m_stream);
    }
    void advanceState(DeviceStepState* state) { launchAdvanceState(state, m_stream); }
    void logSoftmax(float* z, int64_t rows, int classes) {
        launchLogSoftmax(z, rows, classes, m_stream);
    }
    // CNN members (conv_program.h).
    void im2col(const SpatialGeometry& g, const float* in, int64_t inExamples, int64_t examples,
                float* cols) {
        launchIm2col(g, in, inExamples, examples, cols, m_stream);
    }
    void col2im(const SpatialGeometry& g, const float* dCols, int64_t examples, float* dIn) {
        launchCol2im(g, dCols, examples, dIn, m_stream);
    }
    void poolForward(const SpatialGeometry& g, const float* in, int64_t examples, float* out) {
        launchPoolForward(g, in, examples, out, m_stream);
    }
    void poolBackward(const SpatialGeometry& g, const float* in, const float* dOut,
                      int64_t examples, float* dIn) {
        launchPoolBackward(g, in, dOut, examples, dIn, m_stream);
    }
    void flatten(int channels, int64_t plane, int64_t examples, const float* in, float* out) {
        launchFlatten(channels, plane, examples, in, out, m_stream);
    }
    void unflatten(int channels, int64_t plane, int64_t examples, const float* in, float* out) {
        launchUnflatten(channels, plane, examples, in, out, m_stream);
    }
    void sumPartials(const float* partial, int members, int splits, int64_t n, float* out) {
        launchSumPartials(partial, members, splits, n, out, m_stream);
    }
    void fill(float* out, int64_t count, float value) { launchFill(out, count, value, m_stream); }

  private:
    cublasHandle_t m_cublas;
    cudaStream_t m_stream;
};

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
    explicit CudaBackend(int device);
    ~CudaBackend() override;

    std::string name() const override { return m_name; }
    void bind(const TrainingProblem& problem) override;
    void setRules(const std::vector<OptimizerRule>& rules) override;
    void setParameters(const float* params) override;
    void parameters(float* out) override;
    OptimizerState optimizerState() override;
    void setOptimizerState(const OptimizerState& state) override;
    void step(uint64_t step, const uint8_t* active, float* losses) override;
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
    bool m_warm = false;  // a step ran eagerly: every kernel is loaded, graphs may be captured

    GraphExecHandle m_updateGraph;  // the update phase, when sharded
    GraphExecHandle m_graph;        // declared last: destroyed first
};

CudaBackend::CudaBackend(int device) : m_device(device) {
    useDevice();
    cudaDeviceProp prop{};
    ENSEMBLE_CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
    m_name = "cuda:" + std::to_string(device) + " (" + prop.name + ")";
    if (const char* env = std::getenv("ENSEMBLE_CUDA_GRAPHS")) {
        m_useGraphs = std::strcmp(env, "0") != 0;
    }
    cudaStream_t stream = nullptr;
    ENSEMBLE_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    m_stream.reset(stream);
    cublasHandle_t handle = nullptr;
    ENSEMBLE_CUBLAS_CHECK(cublas().create(&handle));
    m_cublas.reset(handle);
    // cublasSetStream resets the workspace to cuBLAS's own pool; ours is set in bind().
    ENSEMBLE_CUBLAS_CHECK(cublas().setStream(handle, stream));
    // Plain FP32 products (no TF32): the CPU oracle computes in FP32.
    ENSEMBLE_CUBLAS_CHECK(cublas().setMathMode(handle, CUBLAS_DEFAULT_MATH));
}

CudaBackend::~CudaBackend() {
    if (m_stream) {
        (void)cudaSetDevice(m_device);
        (void)cudaStreamSynchronize(m_stream.get());
    }
    (void)cudaGetLastError();
}

void CudaBackend::release() {
    m_graph.reset();
    m_updateGraph.reset();
    m_warm = false;
    m_sharded = false;
    m_shard = StepShard{};
    m_bound = false;
    m_training = false;
    m_mirrorValid = false;
    m_params.reset();
    m_grad.reset();
    m_moment1.reset();
    m_moment2.reset();
    m_trainX.reset();
    m_trainY.reset();
    m_trainTargets.reset();
    m_stepArena.reset();
    m_rows.reset();
    m_predictArena.reset();
    m_baseRules.reset();
    m_rules.reset();
    m_active.reset();
    m_loss.reset();
    m_state.reset();
    m_segments.reset();
    m_uncertaintyMembers.reset();
    m_uncertaintyMemberProbs.reset();
    m_uncertaintyEnsemble.reset();
    m_uncertaintyPoints.reset();
    m_buffers = StepBuffers{};
    m_conv = false;
    m_convStep = ConvArena{};
    m_convStepBuffers = ConvBuffers{};
    m_convPredict = ConvArena{};
    m_convPredictBuffers = ConvBuffers{};
    if (!m_cublasWorkspace.empty()) {
        // Back to cuBLAS's own pool before our workspace is freed.
        ENSEMBLE_CUBLAS_CHECK(cublas().setStream(m_cublas.get(), m_stream.get()));
        m_cublasWorkspace.reset();
    }
}

void CudaBackend::checkMemory(const MemoryEstimate& e) const {
    std::size_t freeBytes = 0;
    std::size_t totalBytes = 0;
    ENSEMBLE_CUDA_CHECK(cudaMemGetInfo(&freeBytes, &totalBytes));
    const std::size_t needed = e.total() + kDeviceReserveBytes;
    if (needed > freeBytes) {
        throw RuntimeError(
            ErrorKind::Memory,
            "CUDA backend: this run needs about " + mib(needed) + " of device memory on " + m_name +
                " but cudaMemGetInfo reports " + mib(freeBytes) + " free of " + mib(totalBytes) +
                " (parameters, gradient and optimizer state " + mib(e.parameters) + ", train set " +
                mib(e.trainSet) + ", batch workspace " + mib(e.stepWorkspace) +
                ", prediction workspace " + mib(e.predictWorkspace) + ", cuBLAS workspace " +
                mib(e.cublasWorkspace) + ", reserve " + mib(kDeviceReserveBytes) +
                "); reduce ensemble.members, model.hidden or training.batch_size, or use the CPU "
                "backend");
    }
}

void CudaBackend::bind(const TrainingProblem& problem) {
    checkTrainingProblem(problem);
    useDevice();
    const ParamLayout& layout = problem.layout;
    const int members = layout.members();
    const bool conv = !layout.isMlp();
    if (conv && problem.likelihood != Likelihood::Categorical) {
        throw std::invalid_argument("CudaBackend::bind: CNN members train classifiers");
    }
    const bool adversarial = problem.adversarialEps > 0.0f;
    // Uploaded below for prediction alone too (the shared check asks for them when training).
    if (problem.rules.size() != static_cast<std::size_t>(members)) {
        throw std::invalid_argument("CudaBackend::bind: one optimizer rule per member needed");
    }
    const DataShard& shard = problem.shard;
    // A replica's rows of every batch (the whole batch without a data axis).
    const uint32_t stepRows = shard.count > 1
                                  ? problem.plan.batch / static_cast<uint32_t>(shard.count)
                                  : problem.plan.batch;
    const bool training = problem.trainX != nullptr && problem.trainRows > 0;

    sync();
    release();
    const int64_t convChunk = conv ? convPredictChunkRows(layout) : 0;
    const MemoryEstimate estimate =
        conv ? estimateConvDeviceMemory(layout, training ? problem.trainRows : 0, stepRows,
                                        problem.plan.mode, convChunk)
             : estimateDeviceMemory(layout, training ? problem.trainRows : 0, stepRows,
                                    problem.plan.mode, adversarial);
    checkMemory(estimate);

    m_problem = problem;
    m_problem.trainX = nullptr;
    m_problem.trainY = nullptr;
    m_problem.trainTargets = nullptr;
    cudaStream_t stream = m_stream.get();

    m_cublasWorkspace = DeviceBuffer<unsigned char>(estimate.cublasWorkspace);
    // A fixed workspace: capture never allocates, and results do not depend on which pool
    // cuBLAS would have picked.
    ENSEMBLE_CUBLAS_CHECK(
        cublas().setWorkspace(m_cublas.get(), m_cublasWorkspace.data(), m_cublasWorkspace.bytes()));

    const std::size_t size = layout.size();
    m_params = DeviceBuffer<float>(size);
    m_grad = DeviceBuffer<float>(size);
    m_moment1 = DeviceBuffer<float>(size);
    m_moment2 = DeviceBuffer<float>(size);
    for (DeviceBuffer<float>* b : {&m_params, &m_grad, &m_moment1, &m_moment2}) {
        ENSEMBLE_CUDA_CHECK(cudaMemsetAsync(b->data(), 0, b->bytes(), stream));
    }
    m_baseRules = DeviceBuffer<OptimizerRule>(static_cast<std::size_t>(members));
    m_rules = DeviceBuffer<OptimizerRule>(static_cast<std::size_t>(members));
    ENSEMBLE_CUDA_CHECK(cudaMemcpyAsync(m_baseRules.data(), problem.rules.data(),
                                        m_baseRules.bytes(), cudaMemcpyHostToDevice, stream));
    m_active = DeviceBuffer<uint8_t>(static_cast<std::size_t>(members));
    ENSEMBLE_CUDA_CHECK(cudaMemsetAsync(m_active.data(), 1, m_active.bytes(), stream));
    m_loss = DeviceBuffer<float>(static_cast<std::size_t>(members));
    m_state = DeviceBuffer<DeviceStepState>(1);
    ENSEMBLE_CUDA_CHECK(cudaMemsetAsync(m_state.data(), 0, m_state.bytes(), stream));
    const std::vector<ParamSegment> segments = paramSegments(layout);
    m_segments = DeviceBuffer<ParamSegment>(segments.size());
    ENSEMBLE_CUDA_CHECK(cudaMemcpyAsync(m_segments.data(), segments.data(), m_segments.bytes(),
                                        cudaMemcpyHostToDevice, stream));
    m_hostStep = PinnedBuffer<uint64_t>(1);
    m_hostActive = PinnedBuffer<uint8_t>(static_cast<std::size_t>(members));
    m_hostLoss = PinnedBuffer<float>(static_cast<std::size_t>(members));

    m_conv = conv;
    if (conv) {
        m_convPredict = planConvArena(layout, convChunk, true, false);
        m_predictArena = DeviceBuffer<float>(m_convPredict.floats);
        m_convPredictBuffers = placeConvBuffers(m_convPredict, m_predictArena.data());
    } else {
        m_predict = planPredictArena(layout);
        m_predictArena = DeviceBuffer<float>(m_predict.floats);
    }

    m_buffers = StepBuffers{};
    m_buffers.params = m_params.data();
    m_buffers.grad = m_grad.data();
    m_buffers.moment1 = m_moment1.data();
    m_buffers.moment2 = m_moment2.data();
    m_buffers.loss = m_loss.data();
    m_buffers.active = m_active.data();
    m_buffers.baseRules = m_baseRules.data();
    m_buffers.rules = m_rules.data();
    m_buffers.state = m_state.data();
    m_buffers.segments = m_segments.data();
    m_buffers.segmentCount = static_cast<int>(segments.size());

    if (training) {
        const std::size_t rows = static_cast<std::size_t>(problem.trainRows);
        m_trainX = DeviceBuffer<float>(rows * static_cast<std::size_t>(layout.inputs()));
        ENSEMBLE_CUDA_CHECK(cudaMemcpyAsync(m_trainX.data(), problem.trainX, m_trainX.bytes(),
                                            cudaMemcpyHostToDevice, stream));
        if (isRegression(problem.likelihood)) {
            m_trainTargets = DeviceBuffer<float>(rows);
            ENSEMBLE_CUDA_CHECK(cudaMemcpyAsync(m_trainTargets.data(), problem.trainTargets,
                                                m_trainTargets.bytes(), cudaMemcpyHostToDevice,
                                                stream));
        } else {
            m_trainY = DeviceBuffer<int32_t>(rows);
            ENSEMBLE_CUDA_CHECK(cudaMemcpyAsync(m_trainY.data(), problem.trainY, m_trainY.bytes(),
                                                cudaMemcpyHostToDevice, stream));
        }
        if (conv) {
            m_convStep =
                planConvArena(layout, stepRows, problem.plan.mode != BootstrapMode::Resample, true);
            m_stepArena = DeviceBuffer<float>(m_convStep.floats);
            m_rows = DeviceBuffer<int32_t>(m_convStep.rowSlots);
            placeConvStepBuffers(m_convStep, m_stepArena.data(), m_rows.data(), m_buffers,
                                 m_convStepBuffers);
        } else {
            const StepArena arena = planStepArena(layout, stepRows, problem.plan.mode, adversarial);
            m_stepArena = DeviceBuffer<float>(arena.floats);
            m_rows = DeviceBuffer<int32_t>(arena.rowSlots);
            placeStepBuffers(arena, m_stepArena.data(), m_rows.data(), m_buffers);
        }
        m_buffers.trainX = m_trainX.data();
        m_buffers.trainY = m_trainY.data();
        m_buffers.trainTargets = m_trainTargets.data();
    }
    m_sharded = shard.count > 1;
    if (m_sharded) {
        m_shard.first = static_cast<uint32_t>(shard.index) * stepRows;
        m_shard.rows = stepRows;
        m_hostSum = PinnedBuffer<float>(size + static_cast<std::size_t>(members));
    }
    sync();
    m_deviceActive.assign(static_cast<std::size_t>(members), 1);
    m_training = training;
    m_bound = true;
}

void CudaBackend::setRules(const std::vector<OptimizerRule>& rules) {
    requireBound("setRules");
    if (rules.size() != m_baseRules.size()) {
        throw std::invalid_argument("CudaBackend::setRules: " + std::to_string(rules.size()) +
                                    " rules for " + std::to_string(m_baseRules.size()) +
                                    " members");
    }
    useDevice();
    // The captured step reads the base rules through the same pointer: new contents, same graph.
    // Ordered on the step's stream, so the next step sees them.
    ENSEMBLE_CUDA_CHECK(cudaMemcpyAsync(m_baseRules.data(), rules.data(), m_baseRules.bytes(),
                                        cudaMemcpyHostToDevice, m_stream.get()));
    ENSEMBLE_CUDA_CHECK(cudaStreamSynchronize(m_stream.get()));  // `rules` may go away
}

void CudaBackend::setParameters(const float* params) {
    requireBound("setParameters");
    useDevice();
    cudaStream_t stream = m_stream.get();
    ENSEMBLE_CUDA_CHECK(
        cudaMemcpyAsync(m_params.data(), params, m_params.bytes(), cudaMemcpyHostToDevice, stream));
    ENSEMBLE_CUDA_CHECK(cudaMemsetAsync(m_moment1.data(), 0, m_moment1.bytes(), stream));
    ENSEMBLE_CUDA_CHECK(cudaMemsetAsync(m_moment2.data(), 0, m_moment2.bytes(), stream));
    // Bias correction restarts: updates = 0 (the step index is reconciled by step()).
    ENSEMBLE_CUDA_CHECK(cudaMemsetAsync(&m_state.data()->updates, 0, sizeof(uint64_t), stream));
    sync();
}

void CudaBackend::parameters(float* out) {
    requireBound("parameters");
    useDevice();
    ENSEMBLE_CUDA_CHECK(cudaMemcpyAsync(out, m_params.data(), m_params.bytes(),
                                        cudaMemcpyDeviceToHost, m_stream.get()));
    sync();
}

OptimizerState CudaBackend::optimizerState() {
    requireBound("optimizerState");
    useDevice();
    cudaStream_t stream = m_stream.get();
    OptimizerState state;
    state.moment1.resize(m_moment1.size());
    state.moment2.resize(m_moment2.size());
    ENSEMBLE_CUDA_CHECK(cudaMemcpyAsync(state.moment1.data(), m_moment1.data(), m_moment1.bytes(),
                                        cudaMemcpyDeviceToHost, stream));
    ENSEMBLE_CUDA_CHECK(cudaMemcpyAsync(state.moment2.data(), m_moment2.data(), m_moment2.bytes(),
                                        cudaMemcpyDeviceToHost, stream));
    ENSEMBLE_CUDA_CHECK(cudaMemcpyAsync(&state.updates, &m_state.data()->updates, sizeof(uint64_t),
                                        cudaMemcpyDeviceToHost, stream));
    sync();
    return state;
}

void CudaBackend::setOptimizerState(const OptimizerState& state) {
    requireBound("setOptimizerState");
    if (state.moment1.size() != m_moment1.size() || state.moment2.size() != m_moment2.size()) {
        throw std::invalid_argument("CudaBackend::setOptimizerState: moments of " +
                                    std::to_string(state.moment1.size()) + " and " +
                                    std::to_string(state.moment2.size()) + " values for " +
                                    std::to_string(m_moment1.size()) + " parameters");
    }
    useDevice();
    cudaStream_t stream = m_stream.get();
    // The captured step reads the moments and the update count from these same addresses.
    ENSEMBLE_CUDA_CHECK(cudaMemcpyAsync(m_moment1.data(), state.moment1.data(), m_moment1.bytes(),
                                        cudaMemcpyHostToDevice, stream));
    ENSEMBLE_CUDA_CHECK(cudaMemcpyAsync(m_moment2.data(), state.moment2.data(), m_moment2.bytes(),
                                        cudaMemcpyHostToDevice, stream));
    ENSEMBLE_CUDA_CHECK(cudaMemcpyAsync(&m_state.data()->updates, &state.updates, sizeof(uint64_t),
                                        cudaMemcpyHostToDevice, stream));
    sync();  // `state` may go away
}

void CudaBackend::enqueueStep(DeviceExecutor& ex, StepPhase phase) {
    if (m_conv) {
        enqueueConvTrainingStep(ex, m_problem.layout, m_problem.plan, m_problem.activation,
                                m_buffers, m_convStep, m_convStepBuffers, m_shard, phase);
    } else {
        enqueueTrainingStep(ex, m_problem.layout, m_problem.plan, m_problem.activation, m_buffers,
                            m_problem.likelihood, m_problem.adversarialEps, m_shard, phase);
    }
}

void CudaBackend::runPhase(StepPhase phase, GraphExecHandle& graph) {
    if (graph) {
        ENSEMBLE_CUDA_CHECK(cudaGraphLaunch(graph.get(), m_stream.get()));
    } else {
        // Eager: the first step (a warm-up that loads every kernel before any capture), or
        // every step with ENSEMBLE_CUDA_GRAPHS=0.
        DeviceExecutor ex(m_cublas.get(), m_stream.get());
        enqueueStep(ex, phase);
    }
}

float* CudaBackend::predictInput() {
    return m_conv ? m_convPredictBuffers.x : m_predictArena.data() + m_predict.x;
}

float* CudaBackend::enqueuePredictChunk(DeviceExecutor& ex, int n) {
    if (m_conv) {
        ConvArena chunk = m_convPredict;  // same buffers, n <= their rows
        chunk.rows = n;
        return enqueueConvPrediction(ex, m_problem.layout, m_problem.activation, m_params.data(),
                                     chunk, m_convPredictBuffers);
    }
    float* arena = m_predictArena.data();
    return enqueuePrediction(ex, m_problem.layout, m_problem.activation, m_params.data(),
                             arena + m_predict.x, n, arena + m_predict.bufA, arena + m_predict.bufB,
                             m_problem.likelihood);
}

GraphExecHandle CudaBackend::captureStep(StepPhase phase) {
    cudaStream_t stream = m_stream.get();
    // Thread-local mode: other threads' CUDA calls (a GUI thread, another backend) neither
    // break this capture nor get caught in it.
    ENSEMBLE_CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
    try {
        DeviceExecutor ex(m_cublas.get(), stream);
        enqueueStep(ex, phase);
    } catch (...) {
        cudaGraph_t broken = nullptr;
        (void)cudaStreamEndCapture(stream, &broken);
        if (broken != nullptr) {
            (void)cudaGraphDestroy(broken);
        }
        (void)cudaGetLastError();
        throw;
    }
    cudaGraph_t graph = nullptr;
    ENSEMBLE_CUDA_CHECK(cudaStreamEndCapture(stream, &graph));
    const GraphHandle owned(graph);
    cudaGraphExec_t exec = nullptr;
    ENSEMBLE_CUDA_CHECK(cudaGraphInstantiate(&exec, graph, 0));
    return GraphExecHandle(exec);
}

void CudaBackend::step(uint64_t step, const uint8_t* active, float* losses) {
    requireBound("step");
    useDevice();
    if (!m_training) {
        throw RuntimeError("CudaBackend::step: bound without training data");
    }
    cudaStream_t stream = m_stream.get();
    const std::size_t members = static_cast<std::size_t>(m_problem.layout.members());

    // Upload only what differs from what the device already holds.
    bool activeChanged = !m_mirrorValid;
    for (std::size_t k = 0; k < members; ++k) {
        const uint8_t flag = active[k] != 0 ? 1 : 0;
        activeChanged = activeChanged || flag != m_deviceActive[k];
        m_hostActive.data()[k] = flag;
    }
    const bool stepChanged = !m_mirrorValid || step != m_deviceStep;
    m_mirrorValid = false;  // until this step has completed
    if (activeChanged) {
        ENSEMBLE_CUDA_CHECK(cudaMemcpyAsync(m_active.data(), m_hostActive.data(), members,
                                            cudaMemcpyHostToDevice, stream));
    }
    if (stepChanged) {
        *m_hostStep.data() = step;
        ENSEMBLE_CUDA_CHECK(cudaMemcpyAsync(&m_state.data()->step, m_hostStep.data(),
                                            sizeof(uint64_t), cudaMemcpyHostToDevice, stream));
    }

    if (!m_sharded) {
        runPhase(StepPhase::All, m_graph);
        ENSEMBLE_CUDA_CHECK(cudaMemcpyAsync(m_hostLoss.data(), m_loss.data(),
                                            members * sizeof(float), cudaMemcpyDeviceToHost,
                                            stream));
        sync();
        std::copy(m_hostLoss.data(), m_hostLoss.data() + members, losses);
    } else {
        // The data axis: this replica's gradients and losses (its rows, scaled by the whole
        // batch's 1/B) are summed over the replicas on the host, in the collective's fixed
        // order, and every replica applies the same update from the same sums.
        runPhase(StepPhase::Gradient, m_graph);
        const std::size_t size = m_grad.size();
        float* host = m_hostSum.data();
        ENSEMBLE_CUDA_CHECK(
            cudaMemcpyAsync(host, m_grad.data(), m_grad.bytes(), cudaMemcpyDeviceToHost, stream));
        ENSEMBLE_CUDA_CHECK(cudaMemcpyAsync(host + size, m_loss.data(), members * sizeof(float),
                                            cudaMemcpyDeviceToHost, stream));
        sync();
        m_problem.shard.sum(host, size + members);
        ENSEMBLE_CUDA_CHECK(
            cudaMemcpyAsync(m_grad.data(), host, m_grad.bytes(), cudaMemcpyHostToDevice, stream));
        ENSEMBLE_CUDA_CHECK(cudaMemcpyAsync(m_loss.data(), host + size, members * sizeof(float),
                                            cudaMemcpyHostToDevice, stream));
        runPhase(StepPhase::Update, m_updateGraph);
        sync();
        std::copy(host + size, host + size + members, losses);
    }
    std::copy(m_hostActive.data(), m_hostActive.data() + members, m_deviceActive.begin());
    m_deviceStep = step + 1;
    m_mirrorValid = true;

    if (m_useGraphs && !m_warm) {
        // Records only; the next step() replays them.
        if (m_sharded) {
            m_graph = captureStep(StepPhase::Gradient);
            m_updateGraph = captureStep(StepPhase::Update);
        } else {
            m_graph = captureStep(StepPhase::All);
        }
    }
    m_warm = true;
}

void CudaBackend::predictLogProbs(const float* x, int64_t rows, float* out) {
    requireBound("predictLogProbs");
    useDevice();
    if (rows <= 0) {
        return;
    }
    const ParamLayout& layout = m_problem.layout;
    const std::size_t inputs = static_cast<std::size_t>(layout.inputs());
    const std::size_t classes = static_cast<std::size_t>(layout.classes());
    const std::size_t members = static_cast<std::size_t>(layout.members());
    cudaStream_t stream = m_stream.get();
    DeviceExecutor ex(m_cublas.get(), stream);
    const int64_t chunkRows = predictChunkRows();
    for (int64_t begin = 0; begin < rows; begin += chunkRows) {
        const int n = static_cast<int>(std::min<int64_t>(chunkRows, rows - begin));
        const std::size_t first = static_cast<std::size_t>(begin);
        ENSEMBLE_CUDA_CHECK(cudaMemcpyAsync(predictInput(), x + first * inputs,
                                            sizeof(float) * inputs * static_cast<std::size_t>(n),
                                            cudaMemcpyHostToDevice, stream));
        const float* logProbs = enqueuePredictChunk(ex, n);
        // The chunk's block of member k is [n][C] at logProbs + k * n * C; it goes to
        // out[(k * rows + begin) * C]. Stream order keeps the next chunk's upload behind
        // these copies.
        const std::size_t block = static_cast<std::size_t>(n) * classes;
        for (std::size_t k = 0; k < members; ++k) {
            ENSEMBLE_CUDA_CHECK(cudaMemcpyAsync(
                out + (k * static_cast<std::size_t>(rows) + first) * classes, logProbs + k * block,
                sizeof(float) * block, cudaMemcpyDeviceToHost, stream));
        }
    }
    sync();
}

bool CudaBackend::predictUncertainty(const float* x, int64_t rows, const std::vector<int>& members,
                                     PointUncertainties& out) {
    requireBound("predictUncertainty");
    if (m_problem.likelihood != Likelihood::Categorical) {
        return false;  // the measures are the classification ones
    }
    useDevice();
    const ParamLayout& layout = m_problem.layout;
    const std::size_t inputs = static_cast<std::size_t>(layout.inputs());
    const std::size_t classes = static_cast<std::size_t>(layout.classes());
    const std::size_t memberCount = static_cast<std::size_t>(layout.members());
    if (members.empty() || members.size() > memberCount) {
        throw std::invalid_argument(
            "CudaBackend::predictUncertainty: " + std::to_string(members.size()) +
            " members chosen of " + std::to_string(memberCount));
    }
    const int64_t chunkRows = predictChunkRows();
    const std::size_t chunk = static_cast<std::size_t>(chunkRows);
    if (m_uncertaintyPoints.size() != chunk ||
        m_uncertaintyMemberProbs.size() != memberCount * chunk * classes) {
        m_uncertaintyMembers = DeviceBuffer<int32_t>(memberCount);
        m_uncertaintyMemberProbs = DeviceBuffer<float>(memberCount * chunk * classes);
        m_uncertaintyEnsemble = DeviceBuffer<double>(chunk * classes);
        m_uncertaintyPoints = DeviceBuffer<PointUncertainty>(chunk);
    }
    out.rows = rows;
    out.classes = static_cast<int>(classes);
    out.members = static_cast<int>(memberCount);
    const std::size_t total = rows > 0 ? static_cast<std::size_t>(rows) : 0;
    out.memberProbabilities.resize(memberCount * total * classes);
    out.probabilities.resize(total * classes);
    out.points.resize(total);
    if (rows <= 0) {
        return true;
    }
    cudaStream_t stream = m_stream.get();
    const std::vector<int32_t> chosen(members.begin(), members.end());
    ENSEMBLE_CUDA_CHECK(cudaMemcpyAsync(m_uncertaintyMembers.data(), chosen.data(),
                                        sizeof(int32_t) * chosen.size(), cudaMemcpyHostToDevice,
                                        stream));
    DeviceExecutor ex(m_cublas.get(), stream);
    for (int64_t begin = 0; begin < rows; begin += chunkRows) {
        const int n = static_cast<int>(std::min<int64_t>(chunkRows, rows - begin));
        const std::size_t first = static_cast<std::size_t>(begin);
        const std::size_t nu = static_cast<std::size_t>(n);
        ENSEMBLE_CUDA_CHECK(cudaMemcpyAsync(predictInput(), x + first * inputs,
                                            sizeof(float) * inputs * nu, cudaMemcpyHostToDevice,
                                            stream));
        const float* logProbs = enqueuePredictChunk(ex, n);
        const std::size_t block = nu * classes;
        launchMemberProbabilities(logProbs, static_cast<int64_t>(memberCount * block),
                                  m_uncertaintyMemberProbs.data(), stream);
        launchPointUncertainty(logProbs, n, static_cast<int>(classes), m_uncertaintyMembers.data(),
                               static_cast<int>(chosen.size()), m_uncertaintyEnsemble.data(),
                               m_uncertaintyPoints.data(), stream);
        for (std::size_t k = 0; k < memberCount; ++k) {
            ENSEMBLE_CUDA_CHECK(
                cudaMemcpyAsync(out.memberProbabilities.data() + (k * total + first) * classes,
                                m_uncertaintyMemberProbs.data() + k * block, sizeof(float) * block,
                                cudaMemcpyDeviceToHost, stream));
        }
        ENSEMBLE_CUDA_CHECK(cudaMemcpyAsync(out.probabilities.data() + first * classes,
                                            m_uncertaintyEnsemble.data(), sizeof(double) * block,
                                            cudaMemcpyDeviceToHost, stream));
        ENSEMBLE_CUDA_CHECK(cudaMemcpyAsync(out.points.data() + first, m_uncertaintyPoints.data(),
                                            sizeof(PointUncertainty) * nu, cudaMemcpyDeviceToHost,
                                            stream));
    }
    sync();
    return true;
}

}  // namespace

}  // namespace gpu

int cudaVisibleDevices() {
    int count = 0;
    if (cudaGetDeviceCount(&count) != cudaSuccess) {
        (void)cudaGetLastError();
        return 0;
    }
    return count;
}

bool cudaDeviceUsable(int device, std::string& reason) {
    int count = 0;
    cudaError_t error = cudaGetDeviceCount(&count);
    if (error != cudaSuccess) {
        // 35 (insufficient driver) where no driver is installed, 100 (no device) where one is
        // but no GPU is visible.
        reason = std::string("cudaGetDeviceCount failed: ") + cudaGetErrorString(error) + " (" +
                 cudaGetErrorName(error) + ")";
        (void)cudaGetLastError();
        return false;
    }
    if (device < 0 || device >= count) {
        reason = "CUDA device " + std::to_string(device) + " does not exist (" +
                 std::to_string(count) + " visible)";
        return false;
    }
    error = cudaSetDevice(device);
    if (error == cudaSuccess) {
        error = cudaFree(nullptr);  // creates the context: a broken device fails here
    }
    if (error != cudaSuccess) {
        reason = "CUDA device " + std::to_string(device) + ": " + cudaGetErrorString(error) + " (" +
                 cudaGetErrorName(error) + ")";
        (void)cudaGetLastError();
        return false;
    }
    return gpu::kernelsRunnable(reason);
}

std::unique_ptr<Backend> makeCudaBackend(int device) {
    std::string reason;
    if (!cudaDeviceUsable(device, reason)) {
        throw RuntimeError(ErrorKind::BackendMissing,
                           "CUDA device " + std::to_string(device) + " is not usable: " + reason);
    }
    return std::make_unique<gpu::CudaBackend>(device);
}

}  // namespace ensemble
