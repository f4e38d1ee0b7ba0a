// The Trainer's step loop: its construction (the model, the backend bound, the checks a run
// must pass), the steps and their progress, the one-network methods' members taken as the run
// goes, and the per-member views. Its schedule, state and evaluation are trainer_schedule.cpp,
// trainer_state.cpp and trainer_evaluation.cpp; the report built from a trainer is
// trainer_report.cpp.
#include "train/trainer.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

#include <omp.h>

#include "backend/batch_ensemble_backend.h"
#include "core/errors.h"
#include "core/unreachable.h"
#include "model/batch_ensemble.h"
#include "model/dropout_masks.h"
#include "train/memory_estimate.h"

namespace ensemble {

namespace {

using Clock = std::chrono::steady_clock;

double seconds(Clock::duration d) {
    return std::chrono::duration<double>(d).count();
}

// How often each train row appears in member `member`'s view of the data (n rows into `row`).
void memberCounts(BootstrapMode mode, uint64_t seed, uint32_t member, uint32_t n, int32_t* row) {
    switch (mode) {
        case BootstrapMode::Resample:
            for (uint32_t j = 0; j < n; ++j) {
                ++row[resampleRow(seed, member, j, n)];
            }
            return;
        case BootstrapMode::Poisson:
            for (uint32_t i = 0; i < n; ++i) {
                row[i] = static_cast<int32_t>(poissonCount(seed, member, i));
            }
            return;
        case BootstrapMode::None:
        case BootstrapMode::Shuffle:  // every row once an epoch, in the member's own order
            std::fill(row, row + n, 1);
            return;
    }
    unreachableKind("BootstrapMode");
}

}  // namespace

std::vector<float> adversarialInputEps(double eps, AdversarialEpsUnit unit, const DataSplit& data) {
    if (unit == AdversarialEpsUnit::Standardised || !(eps > 0.0)) {
        return {};
    }
    const Dataset& train = data.train;
    std::vector<float> out(static_cast<std::size_t>(train.features), 0.0f);
    if (train.rows == 0) {
        return out;
    }
    for (int f = 0; f < train.features; ++f) {
        float lo = train.row(0)[f];
        float hi = lo;
        for (int64_t r = 1; r < train.rows; ++r) {
            lo = std::min(lo, train.row(r)[f]);
            hi = std::max(hi, train.row(r)[f]);
        }
        // In double: a raw range over a std of another magnitude (protein's features span six
        // orders) keeps its digits until the one rounding to float.
        const double range = static_cast<double>(hi) - static_cast<double>(lo);
        out[static_cast<std::size_t>(f)] = static_cast<float>(
            eps * range / static_cast<double>(data.normalization.std[static_cast<std::size_t>(f)]));
    }
    return out;
}

Trainer::Trainer(ExperimentConfig config, DataSplit data, std::unique_ptr<Backend> backend,
                 Collective* collective, std::unique_ptr<Backend> memberBackend)
    : m_config(std::move(config)),
      m_collective(collective != nullptr ? collective : &singleProcess()),
      m_data(std::move(data)),
      m_backend(std::move(backend)),
      m_memberBackend(std::move(memberBackend)) {
    const int classes = m_data.classes;
    m_backendDecision.requested = m_config.backend.kind;
    m_backendDecision.chosen =
        m_backend->name().rfind("cuda", 0) == 0 ? BackendKind::Cuda : BackendKind::Cpu;
    if (m_data.train.rows < 1) {
        throw DataError("the train split of " + m_data.name + " is empty");
    }
    if (m_data.train.rows > std::numeric_limits<uint32_t>::max()) {
        throw ConfigError("dataset: at most 2^32 - 1 train rows are supported");
    }
    if (isRegression(m_config.model.likelihood) != m_data.regression) {
        throw ConfigError("model.likelihood",
                          std::string(toString(m_config.model.likelihood)) +
                              " does not fit the dataset " + m_data.name +
                              (m_data.regression ? " (regression)" : " (classification)"));
    }
    // This rank's share of the members (all of them in one process).
    const Mesh mesh = m_collective->mesh();
    m_share = memberShare(m_config.ensemble.members, mesh.ensemble, m_collective->ensembleIndex());
    if (m_share.count() < 1) {
        throw ConfigError("backend.mesh",
                          "ensemble.members = " + std::to_string(m_config.ensemble.members) +
                              " is fewer than the " + std::to_string(mesh.ensemble) +
                              " ranks of the ensemble axis: every rank needs a "
                              "member");
    }
    const EnsembleMethodInfo& method = ensembleMethodInfo(m_config.ensemble.method);
    if (method.sharedTraining && mesh.ensemble > 1) {
        throw ConfigError("backend.mesh", std::string(method.name) +
                                              " trains what its members share in one piece: the "
                                              "ensemble axis (" +
                                              std::to_string(mesh.ensemble) +
                                              " ranks) cannot split it; the data axis can");
    }
    if (mesh.data > 1 && m_config.training.batchSize % mesh.data != 0) {
        throw ConfigError("training.batch_size",
                          std::to_string(m_config.training.batchSize) +
                              " rows are not divisible by the " + std::to_string(mesh.data) +
                              " ranks of the data axis (backend.mesh data = " +
                              std::to_string(mesh.data) + "): every replica takes an equal share");
    }
    {
        ExperimentConfig local = m_config;
        local.ensemble.members = m_share.count();
        checkRunFitsInMemory(local, m_data.train.rows, m_data.test.rows, m_data.inputShape(),
                             classes);
    }
    // The stored schedule in the parsed order (by step, stable), so live edits insert at the
    // same index in both.
    if (m_config.json.contains("training") && m_config.json["training"].contains("schedule")) {
        nlohmann::json& stored = m_config.json["training"]["schedule"];
        std::stable_sort(stored.begin(), stored.end(),
                         [](const nlohmann::json& a, const nlohmann::json& b) {
                             return a["step"].get<int64_t>() < b["step"].get<int64_t>();
                         });
    }

    const int k = m_share.count();
    m_layout = ParamLayout(modelArchitecture(m_config.model, m_data.inputShape(), classes), k);
    const int trained = trainedNetworks(m_config.ensemble.method, k);
    m_trainedLayout = ParamLayout(m_layout.architecture(), trained);
    m_oneNetwork = method.oneNetwork;
    if (method.fastWeights) {
        // The backend steps the K members; the wrapper trains what they derive from.
        m_backend = std::make_unique<BatchEnsembleBackend>(std::move(m_backend));
    }
    m_trainX = m_data.normalization.apply(m_data.train);
    m_testX = m_data.normalization.apply(m_data.test);
    if (m_data.regression) {
        m_trainTargets = standardizedTargets(m_data.train, m_data.normalization);
    }
    m_totalSteps = m_config.totalSteps(m_data.train.rows);
    m_plannedSteps = m_totalSteps;
    m_effective = makeEffectiveMembers(m_config, m_totalSteps);
    m_trainedSize =
        m_effective ? m_effective->trainedSize(m_trainedLayout) : m_trainedLayout.size();
    if (m_effective && !m_memberBackend) {
        throw std::invalid_argument(std::string("Trainer: ensemble.method ") + method.name +
                                    " predicts its members on a second backend; none was given");
    }

    const OptimizerConfig& o = m_config.optimizer;
    for (int m = 0; m < trained; ++m) {
        const auto i = static_cast<std::size_t>(m_share.begin + m);  // per-member keys are global
        const OptimizerRule r =
            makeRule(o.kind, o.lr[i], o.weightDecay[i], o.momentum[i], o.beta1, o.beta2, o.eps);
        m_rules.push_back(r);
    }
    m_active.assign(static_cast<std::size_t>(trained), 1);
    m_diverged.assign(static_cast<std::size_t>(trained), 0);
    m_lastLosses.assign(static_cast<std::size_t>(trained), 0.0f);

    TrainingProblem problem;
    problem.layout = m_trainedLayout;
    problem.activation = m_config.model.activation;
    problem.trainX = m_trainX.data();
    problem.trainY = m_data.train.y.data();
    problem.trainRows = m_data.train.rows;
    problem.likelihood = m_config.model.likelihood;
    problem.trainTargets = m_trainTargets.data();
    problem.plan.seed = m_config.ensemble.seed;
    problem.plan.rows = static_cast<uint32_t>(m_data.train.rows);
    problem.plan.batch = static_cast<uint32_t>(m_config.training.batchSize);
    problem.plan.mode = m_config.ensemble.bootstrap;
    problem.plan.memberOffset = static_cast<uint32_t>(m_share.begin);
    problem.rules = m_rules;
    problem.adversarialEps = static_cast<float>(m_config.training.adversarialEps);
    problem.adversarialEpsPerInput = adversarialInputEps(
        m_config.training.adversarialEps, m_config.training.adversarialEpsUnit, m_data);
    // model.dropout applies to mc_dropout only (0 otherwise: today's step), and not to a stack
    // with dropout layers (they drop, each at its own rate, whatever the method).
    problem.dropout = activationDropoutRate(m_layout.architecture(), m_config.model.dropout);
    problem.dropoutSeed = dropoutMaskSeed(m_config);
    if (mesh.data > 1) {
        Collective* c = m_collective;
        problem.shard.index = c->dataIndex();
        problem.shard.count = mesh.data;
        problem.shard.sum = [c](float* values, std::size_t n) { c->sumDataAxis(values, n); };
    }
    m_backend->bind(problem);

    std::vector<float> initial(m_trainedSize);
    if (method.fastWeights) {
        batchEnsembleInit(BatchEnsembleLayout(m_trainedLayout), m_config.ensemble.seed,
                          initial.data(), static_cast<uint32_t>(m_share.begin));
    } else {
        initParameters(m_trainedLayout, m_config.ensemble.seed, initial.data(),
                       static_cast<uint32_t>(m_share.begin));
    }
    m_backend->setParameters(initial.data());

    if (m_effective) {
        // Prediction only: the K members' forward passes on the same kind of backend.
        TrainingProblem members;
        members.layout = m_layout;
        members.activation = problem.activation;
        members.likelihood = problem.likelihood;
        members.plan.batch = 1;
        members.rules.assign(static_cast<std::size_t>(k), m_rules.front());
        m_memberBackend->bind(members);
        m_memberParams.assign(m_layout.size(), 0.0f);
        m_takenDiverged.assign(static_cast<std::size_t>(k), 0);
    }
}

double Trainer::epoch() const {
    return static_cast<double>(m_step) * m_config.training.batchSize /
           static_cast<double>(m_data.train.rows);
}

std::vector<uint8_t> Trainer::diverged() const {
    if (!m_oneNetwork) {
        return m_diverged;
    }
    std::vector<uint8_t> out(static_cast<std::size_t>(members()), m_diverged.front());
    std::copy_n(m_takenDiverged.begin(), m_taken, out.begin());
    return out;
}

std::vector<float> Trainer::lastLosses() const {
    if (!m_oneNetwork) {
        return m_lastLosses;
    }
    // A taken member has no batch any more: only the network in training has a loss.
    std::vector<float> out(static_cast<std::size_t>(members()), m_lastLosses.front());
    std::fill_n(out.begin(), m_taken, std::numeric_limits<float>::quiet_NaN());
    return out;
}

std::vector<OptimizerRule> Trainer::rules() const {
    if (!m_oneNetwork) {
        return m_rules;
    }
    return std::vector<OptimizerRule>(static_cast<std::size_t>(members()), m_rules.front());
}

int Trainer::membersTaken() const {
    return m_effective ? m_taken : members();
}

void Trainer::deriveMembers(std::vector<float>& out) const {
    if (m_taken >= members()) {
        return;
    }
    std::vector<float> trained(m_trainedSize);
    m_backend->parameters(trained.data());
    for (int k = m_taken; k < members(); ++k) {
        m_effective->derive(k, m_trainedLayout, trained.data(), m_layout, out.data());
    }
}

void Trainer::takeMembers() {
    const int due = m_effective->takenAfter(m_step);
    if (due <= m_taken) {
        return;
    }
    std::vector<float> trained(m_trainedSize);
    m_backend->parameters(trained.data());
    for (int k = m_taken; k < due; ++k) {
        m_effective->derive(k, m_trainedLayout, trained.data(), m_layout, m_memberParams.data());
        m_takenDiverged[static_cast<std::size_t>(k)] = m_diverged.front();
    }
    m_taken = due;
}

Backend& Trainer::predictor() {
    if (!m_effective) {
        return *m_backend;
    }
    if (m_predictorStep != m_step) {
        deriveMembers(m_memberParams);
        m_memberBackend->setParameters(m_memberParams.data());
        m_predictorStep = m_step;
    }
    return *m_memberBackend;
}

void Trainer::setPeriodicHook(int64_t every, std::function<void()> hook) {
    m_hookEvery = hook ? std::max<int64_t>(0, every) : 0;
    m_hook = std::move(hook);
}

void Trainer::runSteps(int64_t n) {
    const auto start = Clock::now();
    int64_t done = 0;
    for (; done < n && !finished(); ++done) {
        applySchedule();
        applyStepRules(m_step);
        m_backend->step(static_cast<uint64_t>(m_step), m_active.data(), m_lastLosses.data());
        for (std::size_t k = 0; k < m_active.size(); ++k) {
            if (m_active[k] && !std::isfinite(m_lastLosses[k])) {
                m_active[k] = 0;
                m_diverged[k] = 1;
            }
        }
        ++m_step;
        if (m_effective) {
            takeMembers();
        }
    }
    if (done > 0) {
        m_lastStepSeconds = seconds(Clock::now() - start) / static_cast<double>(done);
    }
}

bool Trainer::run(const std::function<void(const TrainingProgress&)>& onProgress,
                  const std::function<void(const Evaluation&)>& onEvaluation,
                  const std::atomic<bool>* cancel, double progressSeconds) {
    const int64_t evalEvery = m_config.training.evalEvery;
    auto lastReport = Clock::now();
    auto windowStart = lastReport;
    int64_t windowSteps = 0;
    double smoothedLoss = std::numeric_limits<double>::quiet_NaN();
    const bool distributed = m_collective->distributed();
    while (!finished()) {
        bool stop = cancel != nullptr && cancel->load(std::memory_order_relaxed);
        if (distributed) {
            // Every rank stops at the same step, or one would wait in a gather forever.
            stop = m_collective->max(stop ? 1.0 : 0.0) > 0.0;
        }
        if (stop) {
            return false;
        }
        // Step up to the next evaluation point, in chunks short enough to report progress.
        int64_t chunk = 16;
        if (evalEvery > 0) {
            chunk = std::min(chunk, evalEvery - m_step % evalEvery);
        }
        if (m_hookEvery > 0) {
            chunk = std::min(chunk, m_hookEvery - m_step % m_hookEvery);
        }
        runSteps(chunk);
        windowSteps += chunk;

        // A group's members count once: its replicas (data axis) hold the same losses.
        const bool counted = m_collective->groupLeader();
        double sum = 0.0;
        int active = 0;
        for (std::size_t k = 0; k < m_active.size() && counted; ++k) {
            if (m_active[k]) {
                sum += m_lastLosses[k];
                ++active;
            }
        }
        const std::vector<uint8_t> memberDiverged = counted ? diverged() : std::vector<uint8_t>{};
        int divergedCount =
            static_cast<int>(std::count(memberDiverged.begin(), memberDiverged.end(), uint8_t{1}));
        if (distributed) {
            // The loss and the diverged count of the whole ensemble (in rank order).
            double totals[3] = {sum, static_cast<double>(active),
                                static_cast<double>(divergedCount)};
            m_collective->sum(totals, 3);
            sum = totals[0];
            active = static_cast<int>(totals[1]);
            divergedCount = static_cast<int>(totals[2]);
        }
        const double loss = active > 0 ? sum / active : std::numeric_limits<double>::quiet_NaN();
        smoothedLoss = std::isnan(smoothedLoss) ? loss : 0.9 * smoothedLoss + 0.1 * loss;

        if (evalEvery > 0 && m_step % evalEvery == 0 && onEvaluation && !finished()) {
            onEvaluation(evaluate());
        }
        if (m_hookEvery > 0 && m_step % m_hookEvery == 0 && !finished()) {
            m_hook();
        }
        const auto now = Clock::now();
        if (onProgress && (seconds(now - lastReport) >= progressSeconds || finished())) {
            TrainingProgress p;
            p.step = m_step;
            p.totalSteps = m_totalSteps;
            p.epoch = epoch();
            p.loss = smoothedLoss;
            const double elapsed = seconds(now - windowStart);
            p.stepsPerSecond = elapsed > 0 ? windowSteps / elapsed : 0.0;
            p.memberStepsPerSecond =
                p.stepsPerSecond * trainedNetworks(m_config.ensemble.method, globalMembers());
            p.divergedMembers = divergedCount;
            onProgress(p);
            lastReport = now;
            windowStart = now;
            windowSteps = 0;
        }
    }
    // Entries recorded at the last step (a member switched while the app was paused at the
    // end) change nothing more in training, but the final figures show them.
    applySchedule();
    if (onEvaluation) {
        onEvaluation(evaluate());
    }
    return true;
}

std::vector<int32_t> Trainer::bootstrapCounts() const {
    const int k = members();
    const uint32_t n = static_cast<uint32_t>(m_data.train.rows);
    const uint64_t seed = m_config.ensemble.seed;
    const BootstrapMode mode = m_config.ensemble.bootstrap;
    std::vector<int32_t> counts(static_cast<std::size_t>(k) * n, 0);
#pragma omp parallel for schedule(static)
    for (int m = 0; m < k; ++m) {
        memberCounts(mode, seed, static_cast<uint32_t>(m_share.begin + m), n,
                     counts.data() + static_cast<std::size_t>(m) * n);
    }
    return counts;
}

}  // namespace ensemble
