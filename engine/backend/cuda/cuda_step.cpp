// CudaBackend's training step (cuda_backend_impl.h): the step program enqueued eagerly or
// replayed from its captured graph, and the data axis's sum between its two phases.

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "backend/cuda/cuda_backend_impl.h"
#include "backend/cuda/cuda_check.h"
#include "backend/cuda/device_executor.h"
#include "core/errors.h"

namespace ensemble::gpu {

void CudaBackend::enqueueStep(DeviceExecutor& ex, StepPhase phase) {
    const StepDropout dropout{m_problem.dropout, m_problem.dropoutSeed};
    if (m_conv) {
        enqueueConvTrainingStep(ex, m_problem.layout, m_problem.plan, m_problem.activation,
                                m_buffers, m_convStep, m_convStepBuffers, m_shard, phase, dropout);
    } else {
        enqueueTrainingStep(ex, m_problem.layout, m_problem.plan, m_problem.activation, m_buffers,
                            m_problem.likelihood, m_problem.adversarialEps, m_shard, phase,
                            dropout);
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

void CudaBackend::uploadStepInputs(uint64_t step, const uint8_t* active) {
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
}

void CudaBackend::step(uint64_t step, const uint8_t* active, float* losses) {
    requireBound("step");
    useDevice();
    if (!m_training) {
        throw RuntimeError("CudaBackend::step: bound without training data");
    }
    cudaStream_t stream = m_stream.get();
    const std::size_t members = static_cast<std::size_t>(m_problem.layout.members());
    uploadStepInputs(step, active);

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

void CudaBackend::gradient(uint64_t step, const uint8_t* active, float* grads, float* losses) {
    requireBound("gradient");
    useDevice();
    if (!m_training) {
        throw RuntimeError("CudaBackend::gradient: bound without training data");
    }
    cudaStream_t stream = m_stream.get();
    const std::size_t members = static_cast<std::size_t>(m_problem.layout.members());
    const std::size_t size = m_grad.size();
    uploadStepInputs(step, active);
    if (m_hostGradient.size() != size + members) {
        m_hostGradient = PinnedBuffer<float>(size + members);
    }
    // Eagerly: the gradient phase leaves the device's step and update count as they are.
    {
        DeviceExecutor ex(m_cublas.get(), stream);
        enqueueStep(ex, StepPhase::Gradient);
    }
    float* host = m_hostGradient.data();
    ENSEMBLE_CUDA_CHECK(
        cudaMemcpyAsync(host, m_grad.data(), m_grad.bytes(), cudaMemcpyDeviceToHost, stream));
    ENSEMBLE_CUDA_CHECK(cudaMemcpyAsync(host + size, m_loss.data(), members * sizeof(float),
                                        cudaMemcpyDeviceToHost, stream));
    sync();
    if (m_sharded) {
        m_problem.shard.sum(host, size + members);
    }
    std::copy(host, host + size, grads);
    std::copy(host + size, host + size + members, losses);
    // As the CPU backend: an inactive member's gradient and loss are zero.
    const ParamLayout& layout = m_problem.layout;
    for (int k = 0; k < layout.members(); ++k) {
        if (active[k] != 0) {
            continue;
        }
        losses[k] = 0.0f;
        for (int l = 0; l < layout.layerCount(); ++l) {
            const LayerSlot& s = layout.layer(l);
            std::fill_n(grads + layout.weightOffset(l, k), static_cast<std::size_t>(s.out) * s.in,
                        0.0f);
            std::fill_n(grads + layout.biasOffset(l, k), s.out, 0.0f);
        }
    }
    std::copy(m_hostActive.data(), m_hostActive.data() + members, m_deviceActive.begin());
    m_deviceStep = step;  // not advanced: no update ran
    m_mirrorValid = true;
}

}  // namespace ensemble::gpu
