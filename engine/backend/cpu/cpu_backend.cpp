#include "backend/cpu/cpu_backend.h"

#include <omp.h>

#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>

#include "backend/compiled_isa.h"
#include "backend/cpu/batch_plan_simd.h"
#include "backend/cpu/mlp_kernels.h"
#include "backend/gemm_library.h"
#include "core/errors.h"
#include "math/loss.h"

namespace ensemble {

namespace {

// Rows per prediction chunk: large enough to amortise the GEMM, small enough for L2.
constexpr int64_t kPredictChunk = 256;

}  // namespace

struct CpuBackend::Workspace {
    std::vector<int32_t> rows;
    std::vector<int32_t> labels;
    std::vector<float> targets;  // regression heads
    std::vector<float> weights;
    FastWorkspace fast;  // activations, deltas, one layer's gradient; fast.input: own batch
    // The last rule prepareStep() ran on: members usually share lr and betas, and its two
    // pow() calls are a few percent of a small member's step. (prepareStep reads only lrExact,
    // beta1Exact and beta2Exact and writes only stepSize and biasCorrection2Sqrt.)
    OptimizerRule prepared;
    uint64_t preparedUpdate = 0;  // 0: nothing prepared yet

    // rule with prepareStep(rule, update) applied; the same bits as calling it.
    OptimizerRule prepare(const OptimizerRule& rule, uint64_t update) {
        if (update != preparedUpdate || rule.lrExact != prepared.lrExact ||
            rule.beta1Exact != prepared.beta1Exact || rule.beta2Exact != prepared.beta2Exact) {
            prepared = rule;
            prepareStep(prepared, update);
            preparedUpdate = update;
        }
        OptimizerRule r = rule;
        r.stepSize = prepared.stepSize;
        r.biasCorrection2Sqrt = prepared.biasCorrection2Sqrt;
        return r;
    }
};

CpuBackend::CpuBackend(int threads) {
    m_threads = threads > 0 ? threads : std::max(1, omp_get_max_threads());
}

CpuBackend::~CpuBackend() = default;

std::string CpuBackend::name() const {
    // The GEMM library is named only when it is not Eigen, so that Eigen runs keep their name.
    const std::string threads = std::to_string(m_threads) +
                                (m_threads == 1 ? " thread" : " threads") +
                                (gemmLibrary() == GemmLibrary::OpenBlas ? ", OpenBLAS GEMM" : "");
#if defined(ENSEMBLE_ISA_DISPATCH)
    // Built at several levels (backend/cpu_dispatch.h): the name says which one runs, and the
    // exports and checkpoints record it.
    return std::string("cpu ") + compiledX86LevelName() + " (" + threads + ")";
#else
    return "cpu (" + threads + ")";
#endif
}

void CpuBackend::bind(const TrainingProblem& problem) {
    checkTrainingProblem(problem);
    m_problem = problem;
    const ParamLayout& layout = m_problem.layout;
    const int inputs = layout.inputs();
    m_trainX.clear();
    m_trainY.clear();
    m_trainTargets.clear();
    if (problem.trainX != nullptr && problem.trainRows > 0) {
        m_trainX.assign(problem.trainX, problem.trainX + problem.trainRows * inputs);
        if (isRegression(problem.likelihood)) {
            m_trainTargets.assign(problem.trainTargets, problem.trainTargets + problem.trainRows);
        } else {
            m_trainY.assign(problem.trainY, problem.trainY + problem.trainRows);
        }
    }
    m_problem.trainX = m_trainX.data();
    m_problem.trainY = m_trainY.data();
    m_problem.trainTargets = m_trainTargets.data();
    m_params.assign(layout.size(), 0.0f);
    m_moment1.assign(layout.size(), 0.0f);
    m_moment2.assign(layout.size(), 0.0f);
    m_updates = 0;

    const int batch = static_cast<int>(problem.plan.batch);
    const int shards = problem.shard.count;
    // This replica's rows of every batch (all of them without a data axis).
    const int rows = batch / shards;
    m_shardBuffer.clear();
    m_predictWorkspaces.clear();
    if (!layout.isMlp()) {
        m_conv = std::make_unique<ConvNetCpu>();
        m_conv->bind(layout, problem.activation, rows, m_threads, batch, problem.dropout);
        m_workspaces.clear();
        const std::size_t k = static_cast<std::size_t>(layout.members());
        const bool own = ownBatches(problem.plan.mode);
        // The plan's rows and weights are the whole batch's; what is gathered, this replica's.
        m_convRows.assign((own ? k : 1) * static_cast<std::size_t>(batch), 0);
        m_convPlanWeights.assign((own ? k : 1) * static_cast<std::size_t>(batch), 1.0f);
        const std::size_t r = static_cast<std::size_t>(rows);
        m_convX.assign((own ? k : 1) * r * static_cast<std::size_t>(inputs), 0.0f);
        m_convLabels.assign((own ? k : 1) * r, 0);
        m_convWeights.assign(k * r, 1.0f);
        return;
    }
    m_conv.reset();
    // The plan's rows and weights are the whole batch's; what is gathered, this replica's rows.
    m_workspaces.assign(static_cast<std::size_t>(m_threads), Workspace{});
    for (Workspace& ws : m_workspaces) {
        ws.rows.resize(static_cast<std::size_t>(batch));
        ws.labels.resize(static_cast<std::size_t>(rows));
        ws.targets.resize(static_cast<std::size_t>(rows));
        ws.weights.resize(static_cast<std::size_t>(batch));
        ws.fast.resize(layout, rows, problem.adversarialEps > 0.0f, problem.dropout > 0.0f);
        ws.fast.inputEps = problem.adversarialEpsPerInput;
    }
    m_sharedRows.resize(static_cast<std::size_t>(batch));
    m_sharedWeights.resize(static_cast<std::size_t>(batch));
    m_sharedLabels.resize(static_cast<std::size_t>(rows));
    m_sharedTargets.resize(static_cast<std::size_t>(rows));
    m_sharedBatch.resize(layout, rows);
    if (shards > 1) {
        // Every member's packed gradient, then every member's loss: one sum over the replicas.
        m_shardBuffer.assign(layout.size() + static_cast<std::size_t>(layout.members()), 0.0f);
    }
}

void CpuBackend::setRules(const std::vector<OptimizerRule>& rules) {
    if (rules.size() != m_problem.rules.size()) {
        throw std::invalid_argument("CpuBackend::setRules: " + std::to_string(rules.size()) +
                                    " rules for " + std::to_string(m_problem.rules.size()) +
                                    " members");
    }
    m_problem.rules = rules;
}

void CpuBackend::setParameters(const float* params) {
    std::copy(params, params + m_params.size(), m_params.data());
    m_moment1.assign(m_moment1.size(), 0.0f);
    m_moment2.assign(m_moment2.size(), 0.0f);
    m_updates = 0;
}

void CpuBackend::loadParameters(const float* params) {
    std::copy(params, params + m_params.size(), m_params.data());
}

void CpuBackend::parameters(float* out) {
    std::copy(m_params.data(), m_params.data() + m_params.size(), out);
}

OptimizerState CpuBackend::optimizerState() {
    OptimizerState state;
    state.moment1.assign(m_moment1.data(), m_moment1.data() + m_moment1.size());
    state.moment2.assign(m_moment2.data(), m_moment2.data() + m_moment2.size());
    state.updates = m_updates;
    return state;
}

void CpuBackend::setOptimizerState(const OptimizerState& state) {
    if (state.moment1.size() != m_moment1.size() || state.moment2.size() != m_moment2.size()) {
        throw std::invalid_argument("CpuBackend::setOptimizerState: moments of " +
                                    std::to_string(state.moment1.size()) + " and " +
                                    std::to_string(state.moment2.size()) + " values for " +
                                    std::to_string(m_moment1.size()) + " parameters");
    }
    std::copy(state.moment1.begin(), state.moment1.end(), m_moment1.data());
    std::copy(state.moment2.begin(), state.moment2.end(), m_moment2.data());
    m_updates = state.updates;
}

void CpuBackend::step(uint64_t step, const uint8_t* active, float* losses) {
    if (m_conv) {
        stepConv(step, active, losses);
        return;
    }
    if (m_problem.shard.count > 1) {
        stepShard(step, active, losses);
        return;
    }
    const ParamLayout& layout = m_problem.layout;
    const BatchPlanParams& plan = m_problem.plan;
    const int members = layout.members();
    const bool firstUpdate = m_updates == 0;
    const uint64_t updateNumber = m_updates + 1;

    // Shared modes read the same rows for every member: plan and gather them once.
    if (!ownBatches(plan.mode)) {
        // Weights from the shared plan are all 1; Poisson weights are per member (below).
        planMemberSimd(plan, 0, step, reinterpret_cast<uint32_t*>(m_sharedRows.data()),
                       m_sharedWeights.data());
        fastGather(layout, m_trainX.data(), m_sharedRows.data(), static_cast<int>(plan.batch),
                   m_sharedBatch);
        if (isRegression(m_problem.likelihood)) {
            for (uint32_t b = 0; b < plan.batch; ++b) {
                m_sharedTargets[b] = m_trainTargets[static_cast<std::size_t>(m_sharedRows[b])];
            }
        } else {
            for (uint32_t b = 0; b < plan.batch; ++b) {
                m_sharedLabels[b] = m_trainY[static_cast<std::size_t>(m_sharedRows[b])];
            }
        }
    }

    // Members are independent, so any schedule gives the same bits. Dynamic chunks balance a
    // core that another process slows down; a chunk of neighbouring members keeps the threads
    // off each other's cache lines (a member's output bias, its loss). No more threads than
    // members: a thread without work would only add a fork and a barrier.
    const int threads = std::max(1, std::min(m_threads, members));
    const int chunk = std::max(1, members / (threads * 8));
#pragma omp parallel for num_threads(threads) schedule(dynamic, chunk)
    for (int k = 0; k < members; ++k) {
        Workspace& ws = m_workspaces[static_cast<std::size_t>(omp_get_thread_num())];
        if (!active[k]) {
            losses[k] = 0.0f;
            continue;
        }
        if (k + 1 < members) {
            fastPrefetchMember(layout, k + 1, m_params.data(), m_moment1.data(), m_moment2.data());
        }
        const OptimizerRule rule =
            ws.prepare(m_problem.rules[static_cast<std::size_t>(k)], updateNumber);
        losses[k] = trainMember(k, step, ws, rule, firstUpdate);
    }
    ++m_updates;
}

void CpuBackend::stepShard(uint64_t step, const uint8_t* active, float* losses) {
    const ParamLayout& layout = m_problem.layout;
    const int members = layout.members();
    const bool firstUpdate = m_updates == 0;
    const uint64_t updateNumber = m_updates + 1;
    memberGradients(step, active);
    const float* grads = m_shardBuffer.data();
    const float* shardLosses = grads + layout.size();
    const std::size_t perMember = layout.perMember();
    const int threads = std::max(1, std::min(m_threads, members));
    const int chunk = std::max(1, members / (threads * 8));
#pragma omp parallel for num_threads(threads) schedule(dynamic, chunk)
    for (int k = 0; k < members; ++k) {
        Workspace& ws = m_workspaces[static_cast<std::size_t>(omp_get_thread_num())];
        losses[k] = active[k] ? shardLosses[k] : 0.0f;
        if (!active[k] || !std::isfinite(losses[k])) {
            continue;
        }
        const OptimizerRule rule =
            ws.prepare(m_problem.rules[static_cast<std::size_t>(k)], updateNumber);
        const float* grad = grads + static_cast<std::size_t>(k) * perMember;
        std::size_t packed = 0;
        for (int l = 0; l < layout.layerCount(); ++l) {
            const LayerSlot& s = layout.layer(l);
            const std::size_t w = static_cast<std::size_t>(s.out) * s.in;
            const std::size_t wOff = layout.weightOffset(l, k);
            const std::size_t bOff = layout.biasOffset(l, k);
            fastApplyUpdate(rule, firstUpdate, m_params.data() + wOff, grad + packed,
                            m_moment1.data() + wOff, m_moment2.data() + wOff, w, s.l2Gradient);
            fastApplyUpdate(rule, firstUpdate, m_params.data() + bOff, grad + packed + w,
                            m_moment1.data() + bOff, m_moment2.data() + bOff,
                            static_cast<std::size_t>(s.out));
            packed += w + static_cast<std::size_t>(s.out);
        }
    }
    ++m_updates;
}

void CpuBackend::memberGradients(uint64_t step, const uint8_t* active) {
    const ParamLayout& layout = m_problem.layout;
    const BatchPlanParams& plan = m_problem.plan;
    const DataShard& shard = m_problem.shard;
    const int members = layout.members();
    const int batch = static_cast<int>(plan.batch);
    const int rows = batch / shard.count;
    const int first = shard.index * rows;  // this replica's rows: [first, first + rows)
    const bool regression = isRegression(m_problem.likelihood);
    const std::size_t perMember = layout.perMember();
    float* grads = m_shardBuffer.data();  // member k's packed gradient at k * perMember
    float* shardLosses = grads + layout.size();

    // The whole batch is planned (as one process plans it), this replica's rows gathered.
    if (!ownBatches(plan.mode)) {
        planMemberSimd(plan, 0, step, reinterpret_cast<uint32_t*>(m_sharedRows.data()),
                       m_sharedWeights.data());
        const int32_t* mine = m_sharedRows.data() + first;
        fastGather(layout, m_trainX.data(), mine, rows, m_sharedBatch);
        for (int b = 0; b < rows; ++b) {
            const auto row = static_cast<std::size_t>(mine[b]);
            if (regression) {
                m_sharedTargets[static_cast<std::size_t>(b)] = m_trainTargets[row];
            } else {
                m_sharedLabels[static_cast<std::size_t>(b)] = m_trainY[row];
            }
        }
    }
    const int threads = std::max(1, std::min(m_threads, members));
    const int chunk = std::max(1, members / (threads * 8));
#pragma omp parallel for num_threads(threads) schedule(dynamic, chunk)
    for (int k = 0; k < members; ++k) {
        Workspace& ws = m_workspaces[static_cast<std::size_t>(omp_get_thread_num())];
        float* grad = grads + static_cast<std::size_t>(k) * perMember;
        // Zero unless written: an inactive member, or a non-finite loss (no backward pass).
        std::fill(grad, grad + perMember, 0.0f);
        shardLosses[k] = 0.0f;
        if (!active[k]) {
            continue;
        }
        const uint32_t member = plan.memberOffset + static_cast<uint32_t>(k);
        const FastBatch* input = &m_sharedBatch;
        const int32_t* labels = m_sharedLabels.data();
        const float* targets = m_sharedTargets.data();
        const float* weights = m_sharedWeights.data() + first;  // all 1 (none)
        if (ownBatches(plan.mode)) {
            planMemberSimd(plan, member, step, reinterpret_cast<uint32_t*>(ws.rows.data()),
                           ws.weights.data());
            const int32_t* mine = ws.rows.data() + first;
            fastGather(layout, m_trainX.data(), mine, rows, ws.fast.input);
            for (int b = 0; b < rows; ++b) {
                const auto row = static_cast<std::size_t>(mine[b]);
                if (regression) {
                    ws.targets[static_cast<std::size_t>(b)] = m_trainTargets[row];
                } else {
                    ws.labels[static_cast<std::size_t>(b)] = m_trainY[row];
                }
            }
            input = &ws.fast.input;
            labels = ws.labels.data();
            targets = ws.targets.data();
            weights = ws.weights.data() + first;
        } else if (plan.mode == BootstrapMode::Poisson) {
            // A row's weight is a function of (member, row): the same as in one process.
            poissonWeightsSimd(plan.seed, member,
                               reinterpret_cast<const uint32_t*>(m_sharedRows.data()) + first, rows,
                               ws.weights.data());
            weights = ws.weights.data();
        }
        shardLosses[k] = fastMemberGradient(
            layout, k, m_problem.activation, m_params.data(), *input, labels, weights, ws.fast,
            grad, m_problem.likelihood, targets, batch, m_problem.adversarialEps,
            dropoutStep(step, member, static_cast<uint32_t>(first)));
    }

    // The pmean of gradients: the shards' sums over the whole batch, added up (the sum of a
    // non-finite shard loss is non-finite on every replica, so all skip the same updates).
    if (shard.count > 1) {
        shard.sum(m_shardBuffer.data(), m_shardBuffer.size());
    }
}

void CpuBackend::stepConv(uint64_t step, const uint8_t* active, float* losses, bool gradientOnly) {
    const ParamLayout& layout = m_problem.layout;
    const BatchPlanParams& plan = m_problem.plan;
    const DataShard& shard = m_problem.shard;
    const int members = layout.members();
    const std::size_t batch = plan.batch;
    // This replica's rows of every planned batch: [first, first + rows) (all without a data axis).
    const std::size_t rows = batch / static_cast<std::size_t>(shard.count);
    const std::size_t first = static_cast<std::size_t>(shard.index) * rows;
    const std::size_t inputs = static_cast<std::size_t>(layout.inputs());
    const bool own = ownBatches(plan.mode);
    std::vector<ConvMemberBatch> batches(static_cast<std::size_t>(members));
    std::vector<OptimizerRule> rules(m_problem.rules);
    const uint64_t updateNumber = m_updates + 1;
    // Gathers this replica's rows of a planned batch into x and their labels.
    const auto gather = [&](const int32_t* planned, float* x, int32_t* labels) {
        for (std::size_t b = 0; b < rows; ++b) {
            const auto row = static_cast<std::size_t>(planned[first + b]);
            std::copy_n(m_trainX.data() + row * inputs, inputs, x + b * inputs);
            labels[b] = m_trainY[row];
        }
    };
    if (!own) {
        planMemberSimd(plan, 0, step, reinterpret_cast<uint32_t*>(m_convRows.data()),
                       m_convPlanWeights.data());
        gather(m_convRows.data(), m_convX.data(), m_convLabels.data());
    }
#pragma omp parallel for num_threads(m_threads) schedule(static)
    for (int k = 0; k < members; ++k) {
        const std::size_t m = static_cast<std::size_t>(k);
        float* weights = m_convWeights.data() + m * rows;
        ConvMemberBatch& b = batches[m];
        b.weights = weights;
        rules[m] = m_problem.rules[m];
        prepareStep(rules[m], updateNumber);
        if (own) {
            int32_t* planned = m_convRows.data() + m * batch;
            float* plannedWeights = m_convPlanWeights.data() + m * batch;
            planMemberSimd(plan, plan.memberOffset + static_cast<uint32_t>(k), step,
                           reinterpret_cast<uint32_t*>(planned), plannedWeights);
            std::copy_n(plannedWeights + first, rows, weights);
            gather(planned, m_convX.data() + m * rows * inputs, m_convLabels.data() + m * rows);
            b.x = m_convX.data() + m * rows * inputs;
            b.labels = m_convLabels.data() + m * rows;
            continue;
        }
        b.x = m_convX.data();
        b.labels = m_convLabels.data();
        if (plan.mode == BootstrapMode::Poisson) {
            // A row's weight is a function of (member, row), whichever replica trains it.
            poissonWeightsSimd(plan.seed, plan.memberOffset + static_cast<uint32_t>(k),
                               reinterpret_cast<const uint32_t*>(m_convRows.data()) + first,
                               static_cast<int>(rows), weights);
        } else {
            std::copy_n(m_convPlanWeights.data() + first, rows, weights);  // the plan's (all 1)
        }
    }
    m_conv->setDropoutStep(m_problem.dropoutSeed, step, plan.memberOffset,
                           static_cast<uint32_t>(first));
    m_conv->train(batches.data(), !own, active, gradientOnly ? nullptr : rules.data(),
                  m_updates == 0, m_params.data(), m_moment1.data(), m_moment2.data(), losses,
                  shard.count > 1 ? &shard.sum : nullptr);
    if (!gradientOnly) {
        ++m_updates;
    }
}

void CpuBackend::gradient(uint64_t step, const uint8_t* active, float* grads, float* losses) {
    const ParamLayout& layout = m_problem.layout;
    const int members = layout.members();
    const std::size_t perMember = layout.perMember();
    const float* packed = nullptr;
    if (m_conv) {
        stepConv(step, active, losses, true);
        packed = m_conv->packedGradients();
    } else {
        // Allocated on the first call: only BatchEnsemble asks for gradients.
        m_shardBuffer.resize(layout.size() + static_cast<std::size_t>(members));
        memberGradients(step, active);
        packed = m_shardBuffer.data();
        for (int k = 0; k < members; ++k) {
            losses[k] =
                active[k] ? m_shardBuffer[layout.size() + static_cast<std::size_t>(k)] : 0.0f;
        }
    }
    // Packed per member ([W_l, b_l] layer after layer) to the layout's order. An inactive
    // member's packed slot is never read (with every member inactive the conv path packs none).
    for (int k = 0; k < members; ++k) {
        std::size_t at = static_cast<std::size_t>(k) * perMember;
        for (int l = 0; l < layout.layerCount(); ++l) {
            const LayerSlot& s = layout.layer(l);
            const std::size_t w = static_cast<std::size_t>(s.out) * s.in;
            float* weight = grads + layout.weightOffset(l, k);
            float* bias = grads + layout.biasOffset(l, k);
            if (active[k] == 0) {
                std::fill_n(weight, w, 0.0f);
                std::fill_n(bias, s.out, 0.0f);
            } else {
                std::copy_n(packed + at, w, weight);
                std::copy_n(packed + at + w, s.out, bias);
            }
            at += w + static_cast<std::size_t>(s.out);
        }
    }
}

DropoutStep CpuBackend::dropoutStep(uint64_t step, uint32_t member, uint32_t firstRow) const {
    DropoutStep d;
    d.rate = m_problem.dropout;
    d.seed = m_problem.dropoutSeed;
    d.step = step;
    d.member = member;
    d.firstRow = firstRow;
    return d;
}

float CpuBackend::trainMember(int k, uint64_t step, Workspace& ws, const OptimizerRule& rule,
                              bool firstUpdate) {
    const ParamLayout& layout = m_problem.layout;
    const BatchPlanParams& plan = m_problem.plan;
    const int batch = static_cast<int>(plan.batch);

    // The member's batch: rows, weights, labels and inputs (shared ones gathered in step()).
    const FastBatch* input = &m_sharedBatch;
    const int32_t* labels = m_sharedLabels.data();
    const float* targets = m_sharedTargets.data();
    const float* weights = ws.weights.data();
    if (ownBatches(plan.mode)) {
        planMemberSimd(plan, plan.memberOffset + static_cast<uint32_t>(k), step,
                       reinterpret_cast<uint32_t*>(ws.rows.data()), ws.weights.data());
        fastGather(layout, m_trainX.data(), ws.rows.data(), batch, ws.fast.input);
        if (isRegression(m_problem.likelihood)) {
            for (int b = 0; b < batch; ++b) {
                ws.targets[static_cast<std::size_t>(b)] =
                    m_trainTargets[static_cast<std::size_t>(ws.rows[static_cast<std::size_t>(b)])];
            }
        } else {
            for (int b = 0; b < batch; ++b) {
                ws.labels[static_cast<std::size_t>(b)] =
                    m_trainY[static_cast<std::size_t>(ws.rows[static_cast<std::size_t>(b)])];
            }
        }
        input = &ws.fast.input;
        labels = ws.labels.data();
        targets = ws.targets.data();
    } else if (plan.mode == BootstrapMode::Poisson) {
        poissonWeightsSimd(plan.seed, plan.memberOffset + static_cast<uint32_t>(k),
                           reinterpret_cast<const uint32_t*>(m_sharedRows.data()), batch,
                           ws.weights.data());
    } else {
        weights = m_sharedWeights.data();  // all 1
    }

    // Forward, loss, backward and the update fused per layer (fast_mlp.h); a non-finite loss
    // leaves the member's parameters as they are.
    return fastTrainMember(layout, k, m_problem.activation, m_params.data(), m_moment1.data(),
                           m_moment2.data(), rule, firstUpdate, *input, labels, weights, ws.fast,
                           m_problem.likelihood, targets, m_problem.adversarialEps,
                           dropoutStep(step, plan.memberOffset + static_cast<uint32_t>(k), 0));
}

void CpuBackend::predictLogProbs(const float* x, int64_t rows, float* out) {
    if (m_conv) {
        m_conv->predictLogProbs(m_params.data(), x, rows, out);
        return;
    }
    const ParamLayout& layout = m_problem.layout;
    const int members = layout.members();
    const int classes = layout.classes();
    const int64_t chunks = (rows + kPredictChunk - 1) / kPredictChunk;
    const int64_t tasks = chunks * members;
    if (m_predictWorkspaces.size() != static_cast<std::size_t>(m_threads)) {
        m_predictWorkspaces.assign(static_cast<std::size_t>(m_threads), FastWorkspace{});
        for (FastWorkspace& ws : m_predictWorkspaces) {
            ws.resize(layout, static_cast<int>(kPredictChunk));
        }
    }

    // Tasks are (member, chunk of rows) pairs: independent, so any thread count gives the same
    // bits.
#pragma omp parallel for num_threads(m_threads) schedule(dynamic, 1)
    for (int64_t task = 0; task < tasks; ++task) {
        FastWorkspace& ws = m_predictWorkspaces[static_cast<std::size_t>(omp_get_thread_num())];
        const int k = static_cast<int>(task / chunks);
        const int64_t begin = (task % chunks) * kPredictChunk;
        const int n = static_cast<int>(std::min<int64_t>(kPredictChunk, rows - begin));
        fastPredictLogProbs(
            layout, k, m_problem.activation, m_params.data(), x + begin * layout.inputs(), n, ws,
            out + (static_cast<std::size_t>(k) * rows + begin) * classes, m_problem.likelihood);
    }
}

std::unique_ptr<Backend> makeCpuBackend(int threads) {
    return std::make_unique<CpuBackend>(threads);
}

std::size_t cpuConvWorkspaceBytes(const ParamLayout& layout, int batch, int threads) {
    return ConvNetCpu::workspaceBytes(layout, batch, threads);
}

}  // namespace ensemble
