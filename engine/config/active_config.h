#pragma once

// The `active` config section's kinds and values (active/active_learning.h runs the loop). Kept
// apart from the loop so that config/config.h can hold ExperimentConfig::active without reaching
// the trainer: this header needs nothing but the enum tables.

#include <cstdint>

#include "core/named_enum.h"

namespace ensemble {

// The acquisition functions, one row each (active.acquisition, --acquisition). Each scores a
// point from the per-member probabilities P_k(c|x) of the included members (the same
// MemberPredictions the uncertainty heatmaps read), p = mean_k P_k; higher means "label me
// first".
enum class Acquisition {
    Random,           // a Philox draw per (seed, round, row): uniform in [0, 1)
    Entropy,          // H[p] (nats)
    Bald,             // mutual information H[p] - mean_k H[P_k], clamped at 0
    VariationRatios,  // 1 - (votes for the modal class of the members' votes) / K
    Margin,           // -(p_(1) - p_(2)): the smaller the gap between the two largest, the higher
    // Not a per-row score: the greedy batch that maximises the joint mutual information of its
    // labels and the model (Kirsch et al. 2019; active/batch_bald.h). A row's score alone is
    // its BALD score (the first greedy step); the picks carry their greedy gains.
    BatchBald,
};
inline constexpr int kAcquisitionCount = 6;

template <>
struct EnumNames<Acquisition> {
    static constexpr EnumName<Acquisition> table[] = {
        {Acquisition::Random, "random", "Random"},
        {Acquisition::Entropy, "entropy", "Entropy"},
        {Acquisition::Bald, "bald", "BALD (mutual information)"},
        {Acquisition::VariationRatios, "variation_ratios", "Variation ratios"},
        {Acquisition::Margin, "margin", "Margin"},
        {Acquisition::BatchBald, "batchbald", "BatchBALD (joint mutual information)"},
    };
};
static_assert(tableMatchesEnum<Acquisition>(kAcquisitionCount));

// How each round trains (active.retrain).
enum class ActiveRetrain {
    Scratch,  // re-initialise every member from the run's seeds, train the round's steps
    Warm,     // continue from the last round's weights and optimizer state, the round's more
};

template <>
struct EnumNames<ActiveRetrain> {
    static constexpr EnumName<ActiveRetrain> table[] = {
        {ActiveRetrain::Scratch, "scratch", "From scratch"},
        {ActiveRetrain::Warm, "warm", "Warm start"},
    };
};

// The `active` config section, parsed (ExperimentConfig::active). The defaults are the schema's
// (config/config_schema.cpp), repeated here so a config not read by parseConfig (a regression run,
// whose configs refuse the section) still holds sensible values.
struct ActiveConfig {
    int initial = 20;     // active.initial: labelled rows at the start
    int perRound = 10;    // active.per_round: rows acquired per round
    int64_t steps = 500;  // active.steps: training steps per round (when epochs is 0)
    // active.epochs: when > 0, each round trains ceil(N / batch) * epochs steps instead, N the
    // labelled rows that round (roundSteps()).
    int64_t epochs = 0;
    // active.l2_per_label: each round divides every layer's l2 by N (Gal et al.'s c / N).
    bool l2PerLabel = false;
    ActiveRetrain retrain = ActiveRetrain::Scratch;
    int64_t poolSubset = 0;                       // active.pool_subset: 0 = score the whole pool
    Acquisition acquisition = Acquisition::Bald;  // active.acquisition: the app's and default
    int rounds = 10;                              // active.rounds: rounds after the initial one
    // active.batchbald_samples: M, the sampled joint label configurations of batchbald once the
    // exact joint (C^n configurations) would be larger than M.
    int batchBaldSamples = 1000;
    // active.class_cap: the largest share of a round's picks one predicted class may take
    // (class-balanced acquisition); 1 = no cap.
    double classCap = 1.0;

    // The steps a round on `labels` labelled rows trains with batches of `batchSize`:
    // ceil(labels / batchSize) * epochs when epochs > 0, else steps.
    int64_t roundSteps(int64_t labels, int batchSize) const {
        if (epochs <= 0) {
            return steps;
        }
        const int64_t batch = batchSize > 0 ? batchSize : 1;
        return (labels + batch - 1) / batch * epochs;
    }
};

}  // namespace ensemble
