#pragma once

// The ensemble methods, one row each: what `ensemble.method` may name and what each method
// needs. The config's checks, the schema's choices, the panel, `ensemble-cli compare` and the
// docs read the rows, so a method is added here and in the code that trains it, nowhere else.
//
// Every method ends with K members that predict as K networks of the model's architecture (the
// "effective members"): the views, metrics, `eval` and `predict` see those. What differs is
// how they are trained and what an export stores.

#include <cstddef>
#include <cstdint>

#include "core/named_enum.h"

namespace ensemble {

enum class EnsembleMethod : uint8_t { Independent, Snapshot, McDropout, BatchEnsemble };
inline constexpr std::size_t kEnsembleMethodCount = 4;

struct EnsembleMethodInfo {
    EnsembleMethod value;
    const char* name;   // ensemble.method
    const char* label;  // for people
    const char* help;   // one line (docs, tooltips)
    // The members share what is trained (one network, or one shared weight): the MPI mesh's
    // ensemble axis cannot split them over ranks (the data axis can).
    bool sharedTraining;
    // The backend trains one network and the trainer derives the K members from it
    // (train/effective_members.h). Per-member optimizer values cannot apply (they must be equal)
    // and the members share its batches (ensemble.bootstrap none only).
    bool oneNetwork;
    // The learning rate follows the method's own schedule with optimizer.lr as its peak: live
    // edits and training.schedule entries of optimizer.lr are refused.
    bool ownsLrSchedule;
    // The run's length is part of the method's plan (snapshot's cycles): Continue, Stop after,
    // a changed training.steps and a resume that changes it are refused.
    bool fixedLength;
    // The weights file's format_version for this method (io/model_io.h): 1 keeps independent
    // ensembles' files readable by older builds; the other methods' files are version 2.
    int formatVersion;
    // The weights file stores the one trained network (layers.{l}.* with one member) and what
    // derives the members from it; reading the file derives them again (mc_dropout: the masks
    // from the stored seed, io/model_io.h). False: the file stores the K members themselves.
    bool storesNetwork;
    // The members share one optimizer (one network, or one shared weight): per-member optimizer
    // values (a list or log_uniform of optimizer.lr, momentum, weight_decay) are refused.
    bool oneOptimizer;
    // BatchEnsemble's parameterisation (model/batch_ensemble.h): the backend trains one shared
    // weight per layer and each member's rank-1 fast weights and bias; the members derive from
    // those (backend/batch_ensemble_backend.h), and the files store them, not K networks.
    bool fastWeights;
};

template <>
struct EnumNames<EnsembleMethod> {
    // clang-format off
    static constexpr EnsembleMethodInfo table[] = {
        {EnsembleMethod::Independent, "independent", "Deep ensemble",
         "K networks trained independently (Lakshminarayanan et al. 2017)",
         false, false, false, false, 1, false, false, false},
        {EnsembleMethod::Snapshot, "snapshot", "Snapshot ensemble",
         "one network under a cyclic cosine learning rate of K cycles; member k is the network "
         "at the end of cycle k (Huang et al. 2017)",
         true, true, true, true, 2, false, true, false},
        // Live lr edits and schedule entries apply (one lr for the one network); per-member
        // lists cannot. Continue trains the same network on: the members follow it.
        {EnsembleMethod::McDropout, "mc_dropout", "MC dropout",
         "one network trained with inverted dropout of rate model.dropout; member k is the "
         "network under its own fixed dropout mask (Gal & Ghahramani 2016)",
         true, true, false, false, 2, true, true, false},
        // Each member sees its own batches (ensemble.bootstrap applies); lr edits and schedule
        // entries apply as one value; Continue trains on.
        {EnsembleMethod::BatchEnsemble, "batchensemble", "BatchEnsemble",
         "one shared weight per layer and per member rank-1 fast weights r_k, s_k and a bias: "
         "member k's weight is W * s_k r_k^T (Wen et al. 2020)",
         true, false, false, false, 2, false, true, true},
    };
    // clang-format on
};
static_assert(tableMatchesEnum<EnsembleMethod>(kEnsembleMethodCount),
              "one row per EnsembleMethod, in the enum's order");

inline const EnsembleMethodInfo& ensembleMethodInfo(EnsembleMethod method) {
    return enumRow(method);
}

// The networks the backend trains for K members: K, or 1 for a one-network method.
// (BatchEnsemble's backend trains K members' steps from shared and fast weights: K.)
inline int trainedNetworks(EnsembleMethod method, int members) {
    return ensembleMethodInfo(method).oneNetwork ? 1 : members;
}

// Whether the members derive from what the backend trains (train/effective_members.h): a
// one-network method's network or BatchEnsemble's shared and fast weights. The trainer then
// predicts the members on a second backend (registry.h: BackendChoice::memberBackend).
inline bool derivesMembers(EnsembleMethod method) {
    const EnsembleMethodInfo& info = ensembleMethodInfo(method);
    return info.oneNetwork || info.fastWeights;
}

}  // namespace ensemble
