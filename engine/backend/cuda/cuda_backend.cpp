#include "backend/cuda/cuda_backend.h"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <limits>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "backend/cuda/batch_kernels.cuh"
#include "backend/cuda/conv_program.h"
#include "backend/cuda/cublas_loader.h"
#include "backend/cuda/cuda_backend_impl.h"
#include "backend/cuda/cuda_check.h"
#include "backend/cuda/device_buffer.h"
#include "backend/cuda/step_program.h"
#include "core/errors.h"

namespace ensemble {

namespace gpu {

namespace {

// ENSEMBLE_CUDA_CONV=implicit: the implicit-GEMM convolution instead of im2col + cuBLAS
// (ConvArena::implicitGemm; the first, untiled kernels, not measured yet).
bool implicitConvRequested() {
    const char* env = std::getenv("ENSEMBLE_CUDA_CONV");
    return env != nullptr && std::strcmp(env, "implicit") == 0;
}

std::string mib(std::size_t bytes) {
    return std::to_string((bytes + (std::size_t{1} << 20) - 1) >> 20) + " MiB";
}

}  // namespace

CudaBackend::CudaBackend(int device, MathMode math) : m_device(device) {
    useDevice();
    cudaDeviceProp prop{};
    ENSEMBLE_CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
    m_name = "cuda:" + std::to_string(device) + " (" + prop.name + ")" +
             (math == MathMode::Tf32 ? ", tf32" : "");
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
    // backend.math. fp32: plain FP32 products (no TF32), as the CPU oracle computes them.
    // tf32: cuBLAS may run every single-precision GEMM of this handle (the dense layers' and
    // the im2col convolutions' cublasSgemmStridedBatched) on the tensor cores, inputs rounded
    // to TF32 (10-bit mantissa) and sums in FP32; the element kernels are unchanged.
    ENSEMBLE_CUBLAS_CHECK(cublas().setMathMode(
        handle, math == MathMode::Tf32 ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH));
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
    if (adversarial && !problem.adversarialEpsPerInput.empty()) {
        // The adversarial kernel takes one eps (batch_kernels.cu); per-input eps is the CPU's.
        throw ConfigError("training.adversarial_eps_unit",
                          "range (an eps per input) trains on the CPU backend only; use "
                          "backend.kind cpu, or standardised");
    }
    // The step programs draw the CPU backend's masks (math/dropout.h) into the arena.
    const bool dropout = problem.dropout > 0.0f;
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
                                        problem.plan.mode, convChunk, dropout)
             : estimateDeviceMemory(layout, training ? problem.trainRows : 0, stepRows,
                                    problem.plan.mode, adversarial, dropout);
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
        m_convPredict.implicitGemm = implicitConvRequested();
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
                planConvArena(layout, stepRows, !ownBatches(problem.plan.mode), true, dropout);
            m_convStep.implicitGemm = implicitConvRequested();
            m_stepArena = DeviceBuffer<float>(m_convStep.floats);
            m_rows = DeviceBuffer<int32_t>(m_convStep.rowSlots);
            placeConvStepBuffers(m_convStep, m_stepArena.data(), m_rows.data(), m_buffers,
                                 m_convStepBuffers);
        } else {
            const StepArena arena =
                planStepArena(layout, stepRows, problem.plan.mode, adversarial, dropout);
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
    if (!gpu::kernelsRunnable(reason)) {
        return false;
    }
    // cuBLAS is opened on demand (cublas_loader.cpp): a machine with a driver but without the
    // toolkit's cuBLAS trains on the CPU, saying why, rather than failing at the first product.
    try {
        (void)gpu::cublas();
    } catch (const std::exception& e) {
        reason = e.what();
        return false;
    }
    return true;
}

std::string cudaDeviceSignature(int device) {
    cudaDeviceProp prop{};
    ENSEMBLE_CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
    int driver = 0;
    ENSEMBLE_CUDA_CHECK(cudaDriverGetVersion(&driver));
    return std::string(prop.name) + ", compute capability " + std::to_string(prop.major) + "." +
           std::to_string(prop.minor) + ", driver " + std::to_string(driver / 1000) + "." +
           std::to_string((driver % 1000) / 10);
}

std::unique_ptr<Backend> makeCudaBackend(int device, MathMode math) {
    std::string reason;
    if (!cudaDeviceUsable(device, reason)) {
        throw RuntimeError(ErrorKind::BackendMissing,
                           "CUDA device " + std::to_string(device) + " is not usable: " + reason);
    }
    return std::make_unique<gpu::CudaBackend>(device, math);
}

}  // namespace ensemble
