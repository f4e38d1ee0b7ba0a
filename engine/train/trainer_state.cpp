// The Trainer's state: what a checkpoint holds (the step, the members' parameters, the
// optimizer state, the diverged flags), gathered over ranks under MPI and restored so the run
// goes on bit for bit.
#include <algorithm>
#include <stdexcept>
#include <string>
#include <utility>

#include "train/trainer.h"

namespace ensemble {

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

}  // namespace ensemble
