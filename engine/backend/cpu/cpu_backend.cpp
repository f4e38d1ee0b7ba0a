#include "backend/cpu/cpu_backend.h"

#include <omp.h>

#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>

#include "math/loss.h"

namespace ensemble {

namespace {

using RowMatrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using MatrixMap = Eigen::Map<RowMatrix>;
using ConstMatrixMap = Eigen::Map<const RowMatrix>;
using VectorMap = Eigen::Map<Eigen::VectorXf>;
using ConstRowVectorMap = Eigen::Map<const Eigen::RowVectorXf>;

// Rows per prediction chunk: large enough to amortise the GEMM, small enough for L2.
constexpr int64_t kPredictChunk = 256;

}  // namespace

struct CpuBackend::Workspace {
    std::vector<int32_t> rows;
    std::vector<float> weights;
    std::vector<float> input;                // B x D (gathered batch)
    std::vector<std::vector<float>> pre;     // per layer: B x out, pre-activations
    std::vector<std::vector<float>> post;    // per hidden layer: B x out, activations
    std::vector<float> delta;                // B x maxWidth: gradient w.r.t. current pre-act
    std::vector<float> deltaPrev;            // B x maxWidth
    std::vector<float> grad;                 // one member's parameter gradient, layout order
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
    const int layers = layout.layerCount();
    m_workspaces.assign(static_cast<std::size_t>(m_threads), Workspace{});
    for (Workspace& ws : m_workspaces) {
        ws.rows.resize(static_cast<std::size_t>(batch));
        ws.weights.resize(static_cast<std::size_t>(batch));
        ws.input.resize(static_cast<std::size_t>(batch) * inputs);
        ws.pre.resize(static_cast<std::size_t>(layers));
        ws.post.resize(static_cast<std::size_t>(layers));
        for (int l = 0; l < layers; ++l) {
            const std::size_t n = static_cast<std::size_t>(batch) * layout.layer(l).out;
            ws.pre[static_cast<std::size_t>(l)].resize(n);
            if (l + 1 < layers) {
                ws.post[static_cast<std::size_t>(l)].resize(n);
            }
        }
        ws.delta.resize(static_cast<std::size_t>(batch) * layout.maxWidth());
        ws.deltaPrev.resize(static_cast<std::size_t>(batch) * layout.maxWidth());
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
    const double t = static_cast<double>(m_updates + 1);

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
        rule.biasCorrection1 = static_cast<float>(1.0 - std::pow(double(rule.beta1), t));
        rule.biasCorrection2 = static_cast<float>(1.0 - std::pow(double(rule.beta2), t));
        losses[k] = trainMember(k, step, ws, shared ? m_sharedX.data() : nullptr,
                                shared ? m_sharedRows.data() : nullptr, rule, firstUpdate);
    }
    ++m_updates;
}

float CpuBackend::trainMember(int k, uint64_t step, Workspace& ws, const float* sharedX,
                              const int32_t* sharedRows, const OptimizerRule& rule, bool firstUpdate) {
    const ParamLayout& layout = m_problem.layout;
    const BatchPlanParams& plan = m_problem.plan;
    const int batch = static_cast<int>(plan.batch);
    const int inputs = layout.inputs();
    const int layers = layout.layerCount();
    const int classes = layout.classes();
    const Activation act = m_problem.activation;

    // 1. The member's batch: rows, weights and inputs.
    const int32_t* rows = sharedRows;
    const float* x = sharedX;
    if (plan.mode == BootstrapMode::Resample) {
        planMember(plan, static_cast<uint32_t>(k), step, reinterpret_cast<uint32_t*>(ws.rows.data()),
                   ws.weights.data());
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

    // 2. Forward: Z_l = A_{l-1} W_l^T + b_l, A_l = f(Z_l) for hidden layers.
    const float* params = m_params.data();
    const float* prev = x;
    for (int l = 0; l < layers; ++l) {
        const LayerSlot& s = layout.layer(l);
        ConstMatrixMap a(prev, batch, s.in);
        ConstMatrixMap w(params + layout.weightOffset(l, k), s.out, s.in);
        ConstRowVectorMap bias(params + layout.biasOffset(l, k), s.out);
        MatrixMap z(ws.pre[static_cast<std::size_t>(l)].data(), batch, s.out);
        z.noalias() = a * w.transpose();
        z.rowwise() += bias;
        if (l + 1 < layers) {
            float* post = ws.post[static_cast<std::size_t>(l)].data();
            const float* zp = z.data();
            for (std::size_t i = 0, n = static_cast<std::size_t>(batch) * s.out; i < n; ++i) {
                post[i] = activate(act, zp[i]);
            }
            prev = post;
        }
    }

    // 3. Loss and its gradient w.r.t. the logits.
    const float scale = 1.0f / static_cast<float>(batch);
    float loss = 0.0f;
    const float* logits = ws.pre[static_cast<std::size_t>(layers - 1)].data();
    for (int b = 0; b < batch; ++b) {
        const int label = m_trainY[static_cast<std::size_t>(rows[b])];
        loss += softmaxCrossEntropy(logits + static_cast<std::size_t>(b) * classes, classes, label,
                                    ws.weights[static_cast<std::size_t>(b)], scale,
                                    ws.delta.data() + static_cast<std::size_t>(b) * classes);
    }
    if (!std::isfinite(loss)) {
        return loss;  // diverged: leave this member's parameters as they are
    }

    // 4. Backward: dW_l = dZ_l^T A_{l-1}, db_l = sum_b dZ_l, dZ_{l-1} = (dZ_l W_l) .* f'(Z_{l-1}).
    float* grad = ws.grad.data();
    std::size_t gradOffset = layout.perMember();
    for (int l = layers - 1; l >= 0; --l) {
        const LayerSlot& s = layout.layer(l);
        const float* aPrev = l > 0 ? ws.post[static_cast<std::size_t>(l - 1)].data() : x;
        ConstMatrixMap a(aPrev, batch, s.in);
        ConstMatrixMap dz(ws.delta.data(), batch, s.out);
        gradOffset -= static_cast<std::size_t>(s.out) * (s.in + 1);
        MatrixMap dw(grad + gradOffset, s.out, s.in);
        VectorMap db(grad + gradOffset + static_cast<std::size_t>(s.out) * s.in, s.out);
        dw.noalias() = dz.transpose() * a;
        db = dz.colwise().sum().transpose();
        if (l > 0) {
            ConstMatrixMap w(params + layout.weightOffset(l, k), s.out, s.in);
            MatrixMap dPrev(ws.deltaPrev.data(), batch, s.in);
            dPrev.noalias() = dz * w;
            const float* zp = ws.pre[static_cast<std::size_t>(l - 1)].data();
            const float* ap = ws.post[static_cast<std::size_t>(l - 1)].data();
            float* d = dPrev.data();
            for (std::size_t i = 0, n = static_cast<std::size_t>(batch) * s.in; i < n; ++i) {
                d[i] *= activateGrad(act, zp[i], ap[i]);
            }
            std::swap(ws.delta, ws.deltaPrev);
        }
    }

    // 5. Update: the member's gradient is packed per layer as [W_l (out x in), b_l (out)].
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
    const int layers = layout.layerCount();
    const int classes = layout.classes();
    const Activation act = m_problem.activation;
    const int64_t chunks = (rows + kPredictChunk - 1) / kPredictChunk;
    const int64_t tasks = chunks * members;
    const float* params = m_params.data();

#pragma omp parallel num_threads(m_threads)
    {
        std::vector<float> bufA(static_cast<std::size_t>(kPredictChunk) * layout.maxWidth());
        std::vector<float> bufB(bufA.size());
#pragma omp for schedule(static)
        for (int64_t task = 0; task < tasks; ++task) {
            const int k = static_cast<int>(task / chunks);
            const int64_t begin = (task % chunks) * kPredictChunk;
            const int n = static_cast<int>(std::min<int64_t>(kPredictChunk, rows - begin));
            const float* prev = x + begin * layout.inputs();
            for (int l = 0; l < layers; ++l) {
                const LayerSlot& s = layout.layer(l);
                float* dst = (l % 2 == 0) ? bufA.data() : bufB.data();
                ConstMatrixMap a(prev, n, s.in);
                ConstMatrixMap w(params + layout.weightOffset(l, k), s.out, s.in);
                ConstRowVectorMap bias(params + layout.biasOffset(l, k), s.out);
                MatrixMap z(dst, n, s.out);
                z.noalias() = a * w.transpose();
                z.rowwise() += bias;
                if (l + 1 < layers) {
                    for (std::size_t i = 0, m = static_cast<std::size_t>(n) * s.out; i < m; ++i) {
                        dst[i] = activate(act, dst[i]);
                    }
                }
                prev = dst;
            }
            float* o = out + (static_cast<std::size_t>(k) * rows + begin) * classes;
            for (int i = 0; i < n; ++i) {
                const float* zRow = prev + static_cast<std::size_t>(i) * classes;
                const float lse = logSumExp(zRow, classes);
                for (int c = 0; c < classes; ++c) {
                    o[static_cast<std::size_t>(i) * classes + c] = zRow[c] - lse;
                }
            }
        }
    }
}

}  // namespace ensemble
