#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "data/dataset.h"
#include "io/config.h"
#include "io/safetensors.h"
#include "model/mlp.h"

namespace ensemble {

class Trainer;

// The newest weights file layout this build reads (metadata key "format_version"). A file is
// written with its method's version (weightsFormatVersion): 1 for independent ensembles, so
// their files stay what older builds read, 2 for the other methods (docs/formats.md).
constexpr int kWeightsFormatVersion = 2;
inline int weightsFormatVersion(EnsembleMethod method) {
    return ensembleMethodInfo(method).formatVersion;
}

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

// Writes the trainer's ensemble as safetensors (atomic): tensors layers.{l}.weight [K,out,in]
// F32, layers.{l}.bias [K,out] F32, normalization.mean / normalization.std [D] F32 and, when a
// bootstrap mode is on, bootstrap.counts [K,N] I32; a regression model adds
// normalization.target_mean / normalization.target_std [1] F32 and the metadata "target" (the
// target column's name). __metadata__ holds format_version, config
// (full JSON), members (per-member lr, momentum, weight_decay, seed, diverged), step, dataset,
// classes, activation, widths, and `metrics` when given; `extraMetadata` adds entries (the CLI's
// "interrupted_at_step"). A path ending in ".onnx" or ".npz" writes that format instead
// (io/export_formats.h: the ensemble as one ONNX graph, or the same tensors and metadata as
// NumPy arrays); any other name is safetensors. A method that stores its one network
// (model/ensemble_methods.h: storesNetwork, mc_dropout) writes that network's tensors with one
// member ([1,out,in], [1,out]) and the metadata "dropout" and "dropout_seed"; importEnsemble
// derives the K members from them. BatchEnsemble (fastWeights) writes its shared and fast
// weights: layers.{l}.weight (one member's shape), layers.{l}.fast_in [K, in] ([K, C_in] for a
// conv), layers.{l}.fast_out [K, out] and layers.{l}.bias [K, out].
void exportEnsemble(const std::string& path, const Trainer& trainer,
                    const nlohmann::json& metrics = nullptr,
                    const std::map<std::string, std::string>& extraMetadata = {});

// The file exportEnsemble writes, in memory (a checkpoint adds its tensors and metadata to it).
SafetensorsFile exportFile(const Trainer& trainer, const nlohmann::json& metrics = nullptr);

// Per member (K flags): 1 for members switched on at the stored step (ensemble.switched_off
// with training.schedule's entries up to `step`: the app's member switches).
std::vector<uint8_t> switchedOnMembers(const LoadedEnsemble& ensemble);
// Per member: 1 for the members in the ensemble's average (switched on and not diverged), the
// ensemble that eval, predict and the ONNX export use.
std::vector<uint8_t> includedMembers(const LoadedEnsemble& ensemble);

// Reads and validates a weights file (shapes against the config's architecture, dtypes,
// metadata). Throws DataError naming the file and the problem.
LoadedEnsemble importEnsemble(const std::string& path);
// The same for a file already parsed (parseSafetensors); errors name `file.origin`.
LoadedEnsemble importEnsemble(const SafetensorsFile& file);

// Log-probabilities of every member for raw (dataset-unit) inputs, on the CPU:
// out[(k*rows + i)*C + c]. Normalises with the stored normalisation first. A regression model
// gives its head's predictive in standardised target units instead (Backend::predictLogProbs;
// metrics/regression.h memberGaussians maps it to raw units).
std::vector<float> predictLogProbs(const LoadedEnsemble& ensemble, const float* rawX, int64_t rows,
                                   int threads = 0);

}  // namespace ensemble
