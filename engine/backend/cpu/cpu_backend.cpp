#include "backend/cpu/cpu_backend.h"

#include <omp.h>

#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>

#include "backend/cpu/mlp_kernels.h"
#include "math/loss.h"

namespace ensemble {

namespace {

// Rows per prediction chunk: large enough to amortise the GEMM, small enough for L2.
constexpr int64_t kPredictChunk = 256;

}  // namespace

struct CpuBackend::Workspace {
    std::vector<int32_t> rows;
    std::vector<int32_t> labels;
    std::vector<float> weights;
    AlignedVector<float> input;  // B x D (gathered batch)
    MemberWorkspace<float> member;
    AlignedVector<float> grad;  // one member's parameter gradient, packed per layer
};

CpuBackend::CpuBackend(int threads) {
    m_threads = threads > 0 ? threads : std::max(1, omp_get_max_threads());
}

CpuBackend::~CpuBackend() = default;

std::string CpuBackend::name() const {
    return "cpu (" + std::to_string(m_threads) + (m_threads == 1 ? " thread)" : " threads)");
}

void CpuBackend::bind(const TrainingProblem& problem) {
    m_problem = problem;
    const ParamLayout& layout = m_problem.layout;
    const int inputs = layout.inputs();
    if (problem.trainX != nullptr && problem.trainRows > 0) {
        m_trainX.assign(problem.trainX, problem.trainX + problem.trainRows * inputs);
        m_trainY.assign(problem.trainY, problem.trainY + problem.trainRows);
    } else {
        m_trainX.clear();
        m_trainY.clear();
    }
    m_problem.trainX = m_trainX.data();
    m_problem.trainY = m_trainY.data();
    m_params.assign(layout.size(), 0.0f);
    m_moment1.assign(layout.size(), 0.0f);
    m_moment2.assign(layout.size(), 0.0f);
    m_updates = 0;

    const int batch = static_cast<int>(problem.plan.batch);
    m_workspaces.assign(static_cast<std::size_t>(m_threads), Workspace{});
    for (Workspace& ws : m_workspaces) {
        ws.rows.resize(static_cast<std::size_t>(batch));
        ws.labels.resize(static_cast<std::size_t>(batch));
        ws.weights.resize(static_cast<std::size_t>(batch));
        ws.input.resize(static_cast<std::size_t>(batch) * inputs);
        ws.member.resize(layout, batch);
        ws.grad.resize(layout.perMember());
    }
    m_sharedRows.resize(static_cast<std::size_t>(batch));
    m_sharedWeights.resize(static_cast<std::size_t>(batch));
    m_sharedX.resize(static_cast<std::size_t>(batch) * inputs);
}

void CpuBackend::setParameters(const float* params) {
    std::copy(params, params + m_params.size(), m_params.begin());
    std::fill(m_moment1.begin(), m_moment1.end(), 0.0f);
    std::fill(m_moment2.begin(), m_moment2.end(), 0.0f);
    m_updates = 0;
}

void CpuBackend::parameters(float* out) {
    std::copy(m_params.begin(), m_params.end(), out);
}

void CpuBackend::step(uint64_t step, const uint8_t* active, float* losses) {
    const ParamLayout& layout = m_problem.layout;
    const BatchPlanParams& plan = m_problem.plan;
    const int members = layout.members();
    const int inputs = layout.inputs();
    const bool firstUpdate = m_updates == 0;
    const uint64_t updateNumber = m_updates + 1;

    // Shared modes read the same rows for every member: gather them once.
    const bool shared = plan.mode != BootstrapMode::Resample;
    if (shared) {
        // Weights from the shared plan are all 1; Poisson weights are per member (below).
        planMember(plan, 0, step, reinterpret_cast<uint32_t*>(m_sharedRows.data()),
                   m_sharedWeights.data());
        for (uint32_t b = 0; b < plan.batch; ++b) {
            std::memcpy(m_sharedX.data() + static_cast<std::size_t>(b) * inputs,
                        m_trainX.data() + static_cast<std::size_t>(m_sharedRows[b]) * inputs,
                        sizeof(float) * static_cast<std::size_t>(inputs));
        }
    }

#pragma omp parallel for num_threads(m_threads) schedule(static)
    for (int k = 0; k < members; ++k) {
        Workspace& ws = m_workspaces[static_cast<std::size_t>(omp_get_thread_num())];
        if (!active[k]) {
            losses[k] = 0.0f;
            continue;
        }
        OptimizerRule rule = m_problem.rules[static_cast<std::size_t>(k)];
        prepareStep(rule, updateNumber);
        losses[k] = trainMember(k, step, ws, shared ? m_sharedX.data() : nullptr,
                                shared ? m_sharedRows.data() : nullptr, rule, firstUpdate);
    }
    ++m_updates;
}

float CpuBackend::trainMember(int k, uint64_t step, Workspace& ws, const float* sharedX,
                              const int32_t* sharedRows, const OptimizerRule& rule,
                              bool firstUpdate) {
    const ParamLayout& layout = m_problem.layout;
    const BatchPlanParams& plan = m_problem.plan;
    const int batch = static_cast<int>(plan.batch);
    const int inputs = layout.inputs();
    const int layers = layout.layerCount();

    // 1. The member's batch: rows, weights and inputs.
    const int32_t* rows = sharedRows;
    const float* x = sharedX;
    if (plan.mode == BootstrapMode::Resample) {
        planMember(plan, static_cast<uint32_t>(k), step,
                   reinterpret_cast<uint32_t*>(ws.rows.data()), ws.weights.data());
        for (int b = 0; b < batch; ++b) {
            std::memcpy(ws.input.data() + static_cast<std::size_t>(b) * inputs,
                        m_trainX.data() + static_cast<std::size_t>(ws.rows[b]) * inputs,
                        sizeof(float) * static_cast<std::size_t>(inputs));
        }
        rows = ws.rows.data();
        x = ws.input.data();
    } else if (plan.mode == BootstrapMode::Poisson) {
        for (int b = 0; b < batch; ++b) {
            ws.weights[b] = static_cast<float>(
                poissonCount(plan.seed, static_cast<uint32_t>(k), static_cast<uint32_t>(rows[b])));
        }
    } else {
        std::fill(ws.weights.begin(), ws.weights.end(), 1.0f);
    }

    for (int b = 0; b < batch; ++b) {
        ws.labels[static_cast<std::size_t>(b)] = m_trainY[static_cast<std::size_t>(rows[b])];
    }

    // 2. Forward and backward (mlp_kernels.h), then the update unless the loss diverged.
    float* grad = ws.grad.data();
    const float loss =
        memberForwardBackward(layout, k, m_problem.activation, m_params.data(), x, ws.labels.data(),
                              ws.weights.data(), batch, ws.member, grad);
    if (!std::isfinite(loss)) {
        return loss;  // diverged: leave this member's parameters as they are
    }

    // 3. Update: the member's gradient is packed per layer as [W_l (out x in), b_l (out)].
    std::size_t g = 0;
    for (int l = 0; l < layers; ++l) {
        const LayerSlot& s = layout.layer(l);
        const std::size_t wOff = layout.weightOffset(l, k);
        const std::size_t wCount = static_cast<std::size_t>(s.out) * s.in;
        for (std::size_t i = 0; i < wCount; ++i, ++g) {
            applyUpdate(rule, firstUpdate, m_params[wOff + i], grad[g], m_moment1[wOff + i],
                        m_moment2[wOff + i]);
        }
        const std::size_t bOff = layout.biasOffset(l, k);
        for (std::size_t i = 0; i < static_cast<std::size_t>(s.out); ++i, ++g) {
            applyUpdate(rule, firstUpdate, m_params[bOff + i], grad[g], m_moment1[bOff + i],
                        m_moment2[bOff + i]);
        }
    }
    return loss;
}

void CpuBackend::predictLogProbs(const float* x, int64_t rows, float* out) {
    const ParamLayout& layout = m_problem.layout;
    const int members = layout.members();
    const int classes = layout.classes();
    const int64_t chunks = (rows + kPredictChunk - 1) / kPredictChunk;
    const int64_t tasks = chunks * members;

    // Tasks are (member, chunk of rows) pairs: independent, so any thread count gives the same
    // bits.
#pragma omp parallel num_threads(m_threads)
    {
        MemberWorkspace<float> ws;
        ws.resize(layout, static_cast<int>(kPredictChunk));
#pragma omp for schedule(static)
        for (int64_t task = 0; task < tasks; ++task) {
            const int k = static_cast<int>(task / chunks);
            const int64_t begin = (task % chunks) * kPredictChunk;
            const int n = static_cast<int>(std::min<int64_t>(kPredictChunk, rows - begin));
            const float* logits = memberForward(layout, k, m_problem.activation, m_params.data(),
                                                x + begin * layout.inputs(), n, ws);
            float* o = out + (static_cast<std::size_t>(k) * rows + begin) * classes;
            for (int i = 0; i < n; ++i) {
                const float* z = logits + static_cast<std::size_t>(i) * classes;
                const float lse = logSumExp(z, classes);
                for (int c = 0; c < classes; ++c) {
                    o[static_cast<std::size_t>(i) * classes + c] = z[c] - lse;
                }
            }
        }
    }
}

}  // namespace ensemble
