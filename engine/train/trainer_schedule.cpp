// The Trainer's schedule: the run's length, the live changes recorded in training.schedule
// and applied at their step, and the optimizer rules they give the backend (a one-network
// method's lr factor included).
#include <string>

#include "core/errors.h"
#include "train/trainer.h"

namespace ensemble {

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

}  // namespace ensemble
