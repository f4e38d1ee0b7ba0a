// CudaBackend's predictions (cuda_backend_impl.h): every member's log-probabilities in chunks
// of rows, and the live view's uncertainty measures computed on the device.

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "backend/cuda/cuda_backend_impl.h"
#include "backend/cuda/cuda_check.h"
#include "backend/cuda/device_executor.h"
#include "backend/cuda/uncertainty_kernels.cuh"

namespace ensemble::gpu {

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

}  // namespace ensemble::gpu
