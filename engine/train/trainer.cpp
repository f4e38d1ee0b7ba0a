// The Trainer: one experiment's step loop, its schedule of live changes, its training state
// (checkpoints) and its evaluation. One piece (~890 lines) because these are one object's
// members sharing its backend, data and step counter; the report built from a trainer is
// trainer_report.cpp.
#include "train/trainer.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <fstream>
#include <limits>
#include <sstream>
#include <stdexcept>
#include <string>

#include <omp.h>

#include "backend/batch_ensemble_backend.h"
#include "core/errors.h"
#include "core/unreachable.h"
#include "metrics/metrics.h"
#include "metrics/regression.h"
#include "model/batch_ensemble.h"

namespace ensemble {

namespace {

using Clock = std::chrono::steady_clock;

// Rows evaluated per backend call: bounds the K x rows x C buffer.
constexpr int64_t kEvalChunkRows = 4096;

double seconds(Clock::duration d) {
    return std::chrono::duration<double>(d).count();
}

// MemAvailable from /proc/meminfo in bytes; 0 when unknown.
std::size_t availableMemoryBytes() {
    std::ifstream in("/proc/meminfo");
    std::string key;
    std::size_t value = 0;
    std::string unit;
    while (in >> key >> value) {
        std::getline(in, unit);
        if (key == "MemAvailable:") {
            return value * 1024;
        }
    }
    return 0;
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
            std::fill(row, row + n, 1);
            return;
    }
    unreachableKind("BootstrapMode");
}

}  // namespace

std::size_t estimateRunBytes(const ExperimentConfig& config, int64_t trainRows, int64_t testRows,
                             Shape input, int classes) {
    const ParamLayout layout(modelArchitecture(config.model, input, classes),
                             config.ensemble.members);
    const std::size_t features = static_cast<std::size_t>(input.size());
    const std::size_t f = sizeof(float);
    const std::size_t k = static_cast<std::size_t>(config.ensemble.members);
    const std::size_t rows = static_cast<std::size_t>(trainRows + testRows);
    std::size_t bytes = 0;
    bytes += 3 * rows * features * f;  // raw + normalised + backend copy
    bytes += 2 * rows * sizeof(int32_t);
    bytes += 5 * layout.size() * f;  // params, m, v, export copy, gradient slack
    const std::size_t threads = 64;  // generous upper bound on per-thread workspaces
    if (layout.isMlp()) {
        std::size_t widthSum = 0;
        for (int w : layout.widths()) {
            widthSum += static_cast<std::size_t>(w);
        }
        bytes += threads * static_cast<std::size_t>(config.training.batchSize) * (2 * widthSum) * f;
    } else {
        // Conv workspaces are a few MB per thread: count the threads this machine has.
        const int cores = std::max(
            1, config.backend.threads > 0 ? config.backend.threads : omp_get_max_threads());
        bytes += cpuConvWorkspaceBytes(layout, config.training.batchSize, cores);
        bytes += k * static_cast<std::size_t>(config.training.batchSize) * features * f;
    }
    bytes += k *
             static_cast<std::size_t>(
                 std::min<int64_t>(kEvalChunkRows, std::max<int64_t>(trainRows, 1))) *
             static_cast<std::size_t>(classes) * f;
    if (config.ensemble.bootstrap != BootstrapMode::None) {
        bytes += k * static_cast<std::size_t>(trainRows) * sizeof(int32_t);
    }
    return bytes;
}

void checkRunFitsInMemory(const ExperimentConfig& config, int64_t trainRows, int64_t testRows,
                          Shape input, int classes) {
    const std::size_t need = estimateRunBytes(config, trainRows, testRows, input, classes);
    const std::size_t have = availableMemoryBytes();
    if (have > 0 && need > have) {
        std::ostringstream os;
        os << "this run needs about " << (need >> 20) << " MiB but only " << (have >> 20)
           << " MiB of memory is available (K = " << config.ensemble.members
           << ", model.hidden, training.batch_size and the dataset size set the need); "
              "reduce ensemble.members or the model";
        throw RuntimeError(ErrorKind::Memory, os.str());
    }
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
    // model.dropout applies to mc_dropout only (0 otherwise: today's step).
    problem.dropout = static_cast<float>(m_config.model.dropout);
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

void Trainer::setTotalSteps(int64_t steps) {
    std::string why;
    if (steps != m_plannedSteps && !lengthChangeable(&why)) {
        throw ConfigError("training.steps", why);
    }
    m_totalSteps = steps;
}

bool Trainer::lengthChangeable(std::string* why) const {
    const EnsembleMethodInfo& method = ensembleMethodInfo(m_config.ensemble.method);
    if (!method.fixedLength) {
        return true;
    }
    if (why != nullptr) {
        *why = std::string(method.name) + " plans its " + std::to_string(members()) +
               " cycles over the run's " + std::to_string(m_plannedSteps) +
               " steps: the run cannot be continued, stopped early or lengthened (set "
               "training.steps before it starts)";
    }
    return false;
}

double Trainer::epoch() const {
    return static_cast<double>(m_step) * m_config.training.batchSize /
           static_cast<double>(m_data.train.rows);
}

void Trainer::applyChange(const ScheduledChange& change) {
    if (change.switchedOff) {
        // Only the ensemble's figures change: training goes on for every member.
        m_config.ensemble.switchedOff = *change.switchedOff;
    }
    if (change.lr.empty() && change.momentum.empty() && change.weightDecay.empty()) {
        return;
    }
    OptimizerConfig& o = m_config.optimizer;
    if (!change.lr.empty()) {
        o.lr = change.lr;
    }
    if (!change.momentum.empty()) {
        o.momentum = change.momentum;
    }
    if (!change.weightDecay.empty()) {
        o.weightDecay = change.weightDecay;
    }
    for (std::size_t k = 0; k < m_rules.size(); ++k) {
        const std::size_t g = static_cast<std::size_t>(m_share.begin) + k;  // the global member
        m_rules[k] =
            makeRule(o.kind, o.lr[g], o.weightDecay[g], o.momentum[g], o.beta1, o.beta2, o.eps);
    }
    pushRules();
}

void Trainer::applyStepRules(int64_t step) {
    if (!m_effective) {
        return;
    }
    const double factor = m_effective->lrFactor(step);
    if (factor != m_lrFactor) {
        m_lrFactor = factor;
        pushRules();
    }
}

void Trainer::pushRules() {
    if (m_lrFactor == 1.0) {
        m_backend->setRules(m_rules);
        return;
    }
    // From the config's doubles, as a schedule entry of the scaled value would make them.
    const OptimizerConfig& o = m_config.optimizer;
    const double factor = m_lrFactor;
    std::vector<OptimizerRule> scaled(m_rules.size());
    for (std::size_t k = 0; k < scaled.size(); ++k) {
        const std::size_t g = static_cast<std::size_t>(m_share.begin) + k;
        scaled[k] = makeRule(o.kind, o.lr[g] * factor, o.weightDecay[g], o.momentum[g], o.beta1,
                             o.beta2, o.eps);
    }
    m_backend->setRules(scaled);
}

void Trainer::applySchedule() {
    const auto& schedule = m_config.training.schedule;
    while (m_nextChange < schedule.size() && schedule[m_nextChange].step <= m_step) {
        applyChange(schedule[m_nextChange]);
        ++m_nextChange;
    }
}

void Trainer::changeHyperparameters(const nlohmann::json& set) {
    const std::string where =
        "training.schedule[" + std::to_string(m_config.training.schedule.size()) + "]";
    const ScheduledChange change = parseScheduledChange(m_config.json, m_step, set, where);
    {
        // What the method allows (a one-network method: one value; snapshot: no lr edits).
        ExperimentConfig check = m_config;
        check.training.schedule = {change};
        checkEnsembleMethod(check);
    }
    applySchedule();  // entries due now come first, as a replay would apply them
    auto& schedule = m_config.training.schedule;
    nlohmann::json& stored = m_config.json["training"]["schedule"];
    if (m_nextChange > 0 && schedule[m_nextChange - 1].step == m_step) {
        // Edits between the same two steps (a member switched on and off again, a value typed
        // twice) are one entry: the last one's keys over the earlier ones'. Nothing ran in
        // between, so the replay is the same.
        nlohmann::json& last = stored[m_nextChange - 1]["set"];
        nlohmann::json merged = last;
        for (auto it = set.begin(); it != set.end(); ++it) {
            merged[it.key()] = it.value();
        }
        schedule[m_nextChange - 1] = parseScheduledChange(m_config.json, m_step, merged, where);
        last = std::move(merged);
        applyChange(change);
        return;
    }
    // Inserted after every entry at or before this step: a replay applies them in this order.
    schedule.insert(schedule.begin() + static_cast<std::ptrdiff_t>(m_nextChange), change);
    stored.insert(stored.begin() + static_cast<std::ptrdiff_t>(m_nextChange),
                  nlohmann::json{{"step", m_step}, {"set", set}});
    applyChange(change);
    ++m_nextChange;
}

void Trainer::applyDueChanges() {
    applySchedule();
}

std::vector<uint8_t> Trainer::switchedOn() const {
    std::vector<uint8_t> on(static_cast<std::size_t>(members()), 1);
    for (int g : m_config.ensemble.switchedOff) {
        const int k = g - m_share.begin;  // this trainer's member
        if (k >= 0 && k < static_cast<int>(on.size())) {
            on[static_cast<std::size_t>(k)] = 0;
        }
    }
    return on;
}

TrainingState Trainer::trainingState() const {
    TrainingState state;
    state.step = m_step;
    state.params = parameters();
    state.optimizer = m_backend->optimizerState();
    state.diverged = diverged();
    if (m_effective) {
        state.trained.resize(m_trainedSize);
        m_backend->parameters(state.trained.data());
    }
    return state;
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

namespace {

// A layout-order buffer (W_0 [K,out,in], b_0 [K,out], W_1, ...) as member-major blocks (member
// 0's W_0, b_0, W_1, ..., then member 1's, ...), so ranks' shares concatenate in member order;
// and back (`toMemberMajor` false).
std::vector<float> reorderMembers(const ParamLayout& layout, const std::vector<float>& in,
                                  bool toMemberMajor) {
    std::vector<float> out(in.size());
    std::size_t at = 0;
    for (int k = 0; k < layout.members(); ++k) {
        for (int l = 0; l < layout.layerCount(); ++l) {
            const LayerSlot& s = layout.layer(l);
            const std::pair<std::size_t, std::size_t> pieces[2] = {
                {layout.weightOffset(l, k), static_cast<std::size_t>(s.out) * s.in},
                {layout.biasOffset(l, k), static_cast<std::size_t>(s.out)}};
            for (const auto& [offset, count] : pieces) {
                const auto src = static_cast<std::ptrdiff_t>(toMemberMajor ? offset : at);
                const auto dst = static_cast<std::ptrdiff_t>(toMemberMajor ? at : offset);
                std::copy_n(in.begin() + src, count, out.begin() + dst);
                at += count;
            }
        }
    }
    return out;
}

}  // namespace

TrainingState Trainer::gatherTrainingState() const {
    TrainingState local = trainingState();
    if (!m_collective->distributed()) {
        return local;
    }
    Collective& c = *m_collective;
    const ParamLayout global(m_layout.architecture(), globalMembers());
    const ParamLayout globalTrained(m_layout.architecture(),
                                    trainedNetworks(m_config.ensemble.method, globalMembers()));
    // Each group's leader sends its members (its replicas on the data axis hold the same).
    const bool leader = c.groupLeader();
    const bool flat = ensembleMethodInfo(m_config.ensemble.method).fastWeights;
    const auto gathered = [&](const std::vector<float>& v, const ParamLayout& localLayout,
                              const ParamLayout& globalLayout) {
        if (flat && &localLayout == &m_trainedLayout) {
            // BatchEnsemble's trained parameters: one group (no ensemble axis), not per member.
            return c.gather(leader ? v : std::vector<float>{});
        }
        std::vector<float> all = c.gather(
            v.empty() || !leader ? std::vector<float>{} : reorderMembers(localLayout, v, true));
        return all.empty() ? all : reorderMembers(globalLayout, all, false);
    };
    TrainingState state;
    state.params = gathered(local.params, m_layout, global);
    state.optimizer.moment1 = gathered(local.optimizer.moment1, m_trainedLayout, globalTrained);
    state.optimizer.moment2 = gathered(local.optimizer.moment2, m_trainedLayout, globalTrained);
    // A one-network method has one group (no ensemble axis): its leader's network is the one.
    state.trained = gathered(local.trained, m_trainedLayout, globalTrained);
    state.diverged = c.gather(leader ? local.diverged : std::vector<uint8_t>{});
    if (c.root()) {
        state.step = local.step;
        state.optimizer.updates = local.optimizer.updates;
    }
    return state;
}

void Trainer::restoreTrainingState(const TrainingState& state) {
    if (m_step != 0 || m_nextChange != 0) {
        throw std::logic_error("Trainer::restoreTrainingState: the trainer has already run");
    }
    const std::size_t k = static_cast<std::size_t>(members());
    const std::size_t trained = m_effective ? m_trainedSize : 0;
    if (state.step < 0 || state.params.size() != m_layout.size() || state.diverged.size() != k ||
        state.trained.size() != trained) {
        throw std::invalid_argument("Trainer::restoreTrainingState: a state of " +
                                    std::to_string(state.params.size()) + " parameters, " +
                                    std::to_string(state.trained.size()) + " trained and " +
                                    std::to_string(state.diverged.size()) + " members for " +
                                    std::to_string(m_layout.size()) + ", " +
                                    std::to_string(trained) + " and " + std::to_string(k));
    }
    m_step = state.step;
    if (m_effective) {
        // The members taken by this step as they were taken; the others follow the network.
        m_taken = m_effective->takenAfter(m_step);
        m_memberParams = state.params;
        std::transform(state.diverged.begin(), state.diverged.end(), m_takenDiverged.begin(),
                       [](uint8_t d) { return static_cast<uint8_t>(d != 0 ? 1 : 0); });
        m_backend->setParameters(state.trained.data());
        m_predictorStep = -1;
    } else {
        m_backend->setParameters(state.params.data());
    }
    if (m_oneNetwork) {
        // The network's flag is that of a member following it (the last one's at the end).
        m_diverged.front() = m_takenDiverged[std::min<std::size_t>(m_taken, k - 1)];
        m_active.front() = m_diverged.front() ? 0 : 1;
    } else {
        for (std::size_t i = 0; i < k; ++i) {
            m_diverged[i] = state.diverged[i] != 0 ? 1 : 0;
            m_active[i] = m_diverged[i] ? 0 : 1;
        }
    }
    m_backend->setOptimizerState(state.optimizer);
    // The schedule's entries for steps that ran, in order, as the straight run applied them;
    // those at state.step itself apply before the next step, as they would have.
    const auto& schedule = m_config.training.schedule;
    while (m_nextChange < schedule.size() && schedule[m_nextChange].step < m_step) {
        applyChange(schedule[m_nextChange]);
        ++m_nextChange;
    }
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

MemberPredictions Trainer::predictNormalized(const float* x, int64_t rows) {
    MemberPredictions p;
    p.members = members();
    p.rows = rows;
    p.classes = m_layout.classes();
    p.logProbs.resize(static_cast<std::size_t>(p.members) * rows * p.classes);
    Backend& backend = predictor();
    if (rows <= kEvalChunkRows) {
        backend.predictLogProbs(x, rows, p.logProbs.data());
        return p;
    }
    std::vector<float> chunk(static_cast<std::size_t>(p.members) * kEvalChunkRows * p.classes);
    for (int64_t begin = 0; begin < rows; begin += kEvalChunkRows) {
        const int64_t n = std::min(kEvalChunkRows, rows - begin);
        backend.predictLogProbs(x + begin * m_layout.inputs(), n, chunk.data());
        for (int k = 0; k < p.members; ++k) {
            std::copy_n(
                chunk.data() + static_cast<std::size_t>(k) * n * p.classes, n * p.classes,
                p.logProbs.data() + (static_cast<std::size_t>(k) * rows + begin) * p.classes);
        }
    }
    return p;
}

MemberPredictions Trainer::predictRaw(const float* rawX, int64_t rows) {
    std::vector<float> x(rawX, rawX + rows * m_layout.inputs());
    m_data.normalization.applyInPlace(x.data(), rows);
    return predictNormalized(x.data(), rows);
}

bool Trainer::predictRawUncertainty(const float* rawX, int64_t rows,
                                    const std::vector<int>& members, PointUncertainties& out) {
    Backend& backend = predictor();
    if (!backend.measuresUncertainty()) {
        return false;
    }
    std::vector<float> x(rawX, rawX + rows * m_layout.inputs());
    m_data.normalization.applyInPlace(x.data(), rows);
    return backend.predictUncertainty(x.data(), rows, members, out);
}

MemberPredictions Trainer::predictTest() {
    return predictNormalized(m_testX.data(), m_data.test.rows);
}

MemberPredictions Trainer::predictTrain() {
    return predictNormalized(m_trainX.data(), m_data.train.rows);
}

std::vector<uint8_t> Trainer::included() const {
    std::vector<uint8_t> in = switchedOn();
    const std::vector<uint8_t> out = diverged();
    for (std::size_t k = 0; k < in.size(); ++k) {
        in[k] = in[k] != 0 && out[k] == 0 ? 1 : 0;
    }
    return in;
}

Evaluation Trainer::evaluate() {
    if (m_collective->distributed()) {
        return evaluateDistributed();
    }
    const std::vector<uint8_t> include = included();
    Evaluation e = evaluationFrame();
    // One split's predictions at a time: the train split's are gone before the test split's
    // are made.
    setSplit(e, evaluatePredictions(predictTrain(), m_data.train, include), true);
    if (m_data.test.rows > 0) {
        setSplit(e, evaluatePredictions(predictTest(), m_data.test, include), false);
    }
    return e;
}

Evaluation Trainer::evaluateDistributed() {
    Collective& c = *m_collective;
    // Each group's leader sends its members (its replicas on the data axis hold the same).
    const bool leader = c.groupLeader();
    const std::vector<uint8_t> include = c.gather(leader ? included() : std::vector<uint8_t>{});
    const int k = globalMembers();
    // Member-major outputs, so the leaders' blocks in rank order are the members in order.
    const auto gathered = [&](bool train) {
        MemberPredictions local;
        if (leader) {
            local = train ? predictTrain() : predictTest();
        }
        MemberPredictions all;
        all.members = k;
        all.rows = train ? m_data.train.rows : m_data.test.rows;
        all.classes = m_layout.classes();
        all.logProbs = c.gather(local.logProbs);
        return all;
    };
    Evaluation e;
    e.step = m_step;
    e.epoch = epoch();
    const MemberPredictions train = gathered(true);
    if (c.root()) {
        e.members.resize(static_cast<std::size_t>(k));
        for (std::size_t m = 0; m < e.members.size(); ++m) {
            e.members[m].diverged = include[m] == 0;
        }
        setSplit(e, evaluatePredictions(train, m_data.train, include), true);
    }
    if (m_data.test.rows > 0) {
        const MemberPredictions test = gathered(false);
        if (c.root()) {
            setSplit(e, evaluatePredictions(test, m_data.test, include), false);
        }
    }
    return e;
}

Evaluation Trainer::evaluate(const MemberPredictions& train, const MemberPredictions& test,
                             const std::vector<uint8_t>& include) const {
    Evaluation e = evaluationFrame();
    setSplit(e, evaluatePredictions(train, m_data.train, include), true);
    if (m_data.test.rows > 0) {
        setSplit(e, evaluatePredictions(test, m_data.test, include), false);
    }
    return e;
}

SplitEvaluation Trainer::evaluatePredictions(const MemberPredictions& p, const Dataset& split,
                                             const std::vector<uint8_t>& include) const {
    const auto rows = static_cast<std::size_t>(p.rows);
    if (m_data.regression) {
        const std::vector<float> targets =
            rows == split.target.size()
                ? split.target
                : std::vector<float>(split.target.begin(),
                                     split.target.begin() + static_cast<std::ptrdiff_t>(rows));
        return evaluateRegressionSplit(p, targets, include, m_config.model.likelihood,
                                       m_data.normalization.targetMean,
                                       m_data.normalization.targetStd);
    }
    if (rows != split.y.size()) {
        const std::vector<int32_t> labels(split.y.begin(),
                                          split.y.begin() + static_cast<std::ptrdiff_t>(rows));
        return evaluateSplit(p, labels, include);
    }
    return evaluateSplit(p, split.y, include);
}

Evaluation Trainer::evaluationFrame() const {
    Evaluation e;
    e.step = m_step;
    e.epoch = epoch();
    e.members.resize(static_cast<std::size_t>(members()));
    const std::vector<uint8_t> out = diverged();
    for (std::size_t k = 0; k < e.members.size(); ++k) {
        e.members[k].diverged = out[k] != 0;
    }
    return e;
}

void Trainer::setSplit(Evaluation& e, const SplitEvaluation& split, bool train) {
    (train ? e.ensembleTrain : e.ensembleTest) = split.ensemble;
    for (std::size_t k = 0; k < e.members.size(); ++k) {
        (train ? e.members[k].train : e.members[k].test) = split.members[k];
    }
}

std::vector<float> Trainer::parameters() const {
    if (m_effective) {
        std::vector<float> out = m_memberParams;
        deriveMembers(out);
        return out;
    }
    std::vector<float> out(m_layout.size());
    m_backend->parameters(out.data());
    return out;
}

std::vector<float> Trainer::trainedParameters() const {
    std::vector<float> out(m_trainedSize);
    m_backend->parameters(out.data());
    return out;
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
