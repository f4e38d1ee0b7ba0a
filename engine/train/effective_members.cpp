#include "train/effective_members.h"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <stdexcept>
#include <string>

#include "core/errors.h"
#include "core/unreachable.h"
#include "model/batch_ensemble.h"
#include "model/dropout_masks.h"

namespace ensemble {

namespace {

// Copies member `from` of `src` into member `to` of `dst` (two layouts of one architecture).
void copyMember(const ParamLayout& srcLayout, const float* src, int from,
                const ParamLayout& dstLayout, float* dst, int to) {
    for (int l = 0; l < srcLayout.layerCount(); ++l) {
        const LayerSlot& s = srcLayout.layer(l);
        std::copy_n(src + srcLayout.weightOffset(l, from), static_cast<std::size_t>(s.out) * s.in,
                    dst + dstLayout.weightOffset(l, to));
        std::copy_n(src + srcLayout.biasOffset(l, from), static_cast<std::size_t>(s.out),
                    dst + dstLayout.biasOffset(l, to));
    }
}

class SnapshotMembers final : public EffectiveMembers {
  public:
    SnapshotMembers(int members, int64_t steps) : m_cycles(members, steps) {}
    double lrFactor(int64_t step) const override { return m_cycles.lrFactor(step); }
    int takenAfter(int64_t stepsDone) const override { return m_cycles.endedAfter(stepsDone); }
    void derive(int k, const ParamLayout& trainedLayout, const float* trained,
                const ParamLayout& memberLayout, float* members) const override {
        copyMember(trainedLayout, trained, 0, memberLayout, members, k);
    }

  private:
    SnapshotCycles m_cycles;
};

// mc_dropout (Gal & Ghahramani 2016): no schedule of its own, no member is ever fixed (every
// member follows the network, so Continue just trains it on), member k the network under mask k.
class McDropoutMembers final : public EffectiveMembers {
  public:
    McDropoutMembers(float rate, uint64_t seed) : m_rate(rate), m_seed(seed) {}
    double lrFactor(int64_t) const override { return 1.0; }
    int takenAfter(int64_t) const override { return 0; }
    void derive(int k, const ParamLayout& trainedLayout, const float* trained,
                const ParamLayout& memberLayout, float* members) const override {
        const std::vector<float> member = foldDropoutMasks(
            trainedLayout.architecture(), trained, m_rate, m_seed, 1, static_cast<uint32_t>(k));
        copyMember(ParamLayout(trainedLayout.architecture(), 1), member.data(), 0, memberLayout,
                   members, k);
    }

  private:
    float m_rate;
    uint64_t m_seed;
};

}  // namespace

std::vector<float> mcDropoutMembers(const Architecture& architecture, const float* trained,
                                    double rate, uint64_t seed, int members) {
    return foldDropoutMasks(architecture, trained, static_cast<float>(rate), seed, members);
}

std::vector<float> memberParameters(const ParamLayout& layout, const float* params, int k) {
    const ParamLayout one(layout.architecture(), 1);
    std::vector<float> out(one.size());
    copyMember(layout, params, k, one, out.data(), 0);
    return out;
}

SnapshotCycles::SnapshotCycles(int members, int64_t steps)
    : m_members(members), m_steps(steps), m_length(members > 0 ? steps / members : 0) {
    if (members < 1 || steps < members) {
        throw std::invalid_argument("SnapshotCycles: " + std::to_string(members) +
                                    " cycles need at least as many steps, got " +
                                    std::to_string(steps));
    }
}

int64_t SnapshotCycles::cycleStart(int cycle) const {
    return static_cast<int64_t>(cycle) * m_length;
}

int64_t SnapshotCycles::cycleLength(int cycle) const {
    return cycle < m_members - 1 ? m_length : m_steps - cycleStart(m_members - 1);
}

int SnapshotCycles::cycleOf(int64_t step) const {
    return static_cast<int>(
        std::min<int64_t>(m_members - 1, std::max<int64_t>(0, step) / m_length));
}

double SnapshotCycles::lrFactor(int64_t step) const {
    const int cycle = cycleOf(step);
    const int64_t t = step - cycleStart(cycle);
    const int64_t length = cycleLength(cycle);
    if (t >= length) {
        return 0.0;  // past the plan's end (a fixed-length run does not get there)
    }
    return 0.5 * (1.0 + std::cos(std::numbers::pi * static_cast<double>(t) /
                                 static_cast<double>(length)));
}

int SnapshotCycles::endedAfter(int64_t stepsDone) const {
    const int early = static_cast<int>(
        std::min<int64_t>(m_members - 1, std::max<int64_t>(0, stepsDone) / m_length));
    return early + (stepsDone >= m_steps ? 1 : 0);
}

namespace {

// BatchEnsemble: every member follows the shared and fast weights (the trainer's backend trains
// them, backend/batch_ensemble_backend.h); member k is their expansion (model/batch_ensemble.h).
class BatchEnsembleMembers final : public EffectiveMembers {
  public:
    double lrFactor(int64_t) const override { return 1.0; }
    int takenAfter(int64_t) const override { return 0; }
    void derive(int k, const ParamLayout&, const float* trained, const ParamLayout& memberLayout,
                float* members) const override {
        batchEnsembleExpandMember(BatchEnsembleLayout(memberLayout), trained, k, members);
    }
    std::size_t trainedSize(const ParamLayout& trainedLayout) const override {
        return BatchEnsembleLayout(trainedLayout).size();
    }
};

}  // namespace

std::unique_ptr<EffectiveMembers> makeEffectiveMembers(const ExperimentConfig& config,
                                                       int64_t totalSteps) {
    const int k = config.ensemble.members;
    switch (config.ensemble.method) {
        case EnsembleMethod::Independent:
            return nullptr;
        case EnsembleMethod::Snapshot:
            if (totalSteps < k) {
                throw ConfigError("training.steps",
                                  "snapshot needs a cycle of at least one step per member: " +
                                      std::to_string(totalSteps) + " steps for " +
                                      std::to_string(k) + " members (ensemble.members)");
            }
            return std::make_unique<SnapshotMembers>(k, totalSteps);
        case EnsembleMethod::McDropout:
            return std::make_unique<McDropoutMembers>(static_cast<float>(config.model.dropout),
                                                      dropoutMaskSeed(config));
        case EnsembleMethod::BatchEnsemble:
            return std::make_unique<BatchEnsembleMembers>();
    }
    unreachableKind("EnsembleMethod");
}

}  // namespace ensemble
