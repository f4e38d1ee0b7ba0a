#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "config/config.h"
#include "io/safetensors.h"
#include "train/loaded_ensemble.h"

namespace ensemble {

class Trainer;

// The newest weights file layout this build reads (metadata key "format_version"). A file is
// written with its method's version (weightsFormatVersion): 1 for independent ensembles, so
// their files stay what older builds read, 2 for the other methods (docs/formats.md).
constexpr int kWeightsFormatVersion = 2;
inline int weightsFormatVersion(EnsembleMethod method) {
    return ensembleMethodInfo(method).formatVersion;
}

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

// Reads and validates a weights file (shapes against the config's architecture, dtypes,
// metadata). Throws DataError naming the file and the problem.
LoadedEnsemble importEnsemble(const std::string& path);
// The same for a file already parsed (parseSafetensors); errors name `file.origin`.
LoadedEnsemble importEnsemble(const SafetensorsFile& file);

}  // namespace ensemble
