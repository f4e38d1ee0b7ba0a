#pragma once

// A trained ensemble in memory as a weights file gives it back (io/model_io.h reads and writes
// the file): its config, layout, parameters and normalisation, which members count, and its
// prediction on the CPU. Kept apart from the file format so that reading a file never runs a
// network, and predicting never parses one.

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "config/config.h"
#include "data/dataset.h"
#include "model/mlp.h"

namespace ensemble {

// An ensemble read back from a weights file: everything needed to predict, plus the record
// of how it was trained.
struct LoadedEnsemble {
    ExperimentConfig config;  // the full config it was trained with
    // The metadata "method" (independent for version-1 files), the same as config's.
    EnsembleMethod method = EnsembleMethod::Independent;
    ParamLayout layout;         // the K (effective) members'
    std::vector<float> params;  // layout order
    // What the members derive from, as the file stores it: a method that stores its one network
    // (model/ensemble_methods.h: storesNetwork) that network (ParamLayout(architecture, 1)
    // order) and the seed its members' masks were drawn from (metadata "dropout_seed");
    // BatchEnsemble (fastWeights) its shared and fast weights (model/batch_ensemble.h order).
    // `params` are the members derived from it. Empty for the other methods.
    std::vector<float> network;
    uint64_t dropoutSeed = 0;
    Normalization normalization;
    std::vector<uint8_t> diverged;  // per member
    std::vector<int32_t> counts;    // K x N bootstrap multiplicities; empty when none
    int64_t trainRows = 0;          // N of counts
    int64_t step = 0;               // training step at export
    std::string datasetName;
    std::string target;       // regression: the target column's name (metadata "target")
    nlohmann::json metadata;  // every __metadata__ entry, values parsed where JSON
};

// Per member (K flags): 1 for members switched on at the stored step (ensemble.switched_off
// with training.schedule's entries up to `step`: the app's member switches).
std::vector<uint8_t> switchedOnMembers(const LoadedEnsemble& ensemble);
// Per member: 1 for the members in the ensemble's average (switched on and not diverged), the
// ensemble that eval, predict and the ONNX export use.
std::vector<uint8_t> includedMembers(const LoadedEnsemble& ensemble);

// Log-probabilities of every member for raw (dataset-unit) inputs, on the CPU:
// out[(k*rows + i)*C + c]. Normalises with the stored normalisation first. A regression model
// gives its head's predictive in standardised target units instead (Backend::predictLogProbs;
// metrics/regression.h memberGaussians maps it to raw units).
std::vector<float> predictLogProbs(const LoadedEnsemble& ensemble, const float* rawX, int64_t rows,
                                   int threads = 0);

}  // namespace ensemble
