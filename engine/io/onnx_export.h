#pragma once

#include <string>

#include "io/model_io.h"
#include "io/safetensors.h"

namespace ensemble {

// The whole ensemble as one ONNX model (IR version 8, opset 17) that computes what
// `ensemble-cli predict` computes:
//   input  x              float32 [N, D]: raw features in dataset units (the columns predict
//                         reads; 784 pixel values 0-255 for MNIST, MLP and CNN alike); the
//                         input normalisation is the graph's first two nodes
//   categorical:
//   output ens_probs      float32 [N, C]: mean of the member softmax probabilities over the
//                         members in the ensemble (includedMembers: switched on, not
//                         diverged; NaN when there is none)
//   output member_probs   float32 [K, N, C]
//   gaussian / mse:
//   output ens_mean, ens_std, ens_aleatoric_std, ens_epistemic_std   float32 [N], raw target
//                         units: the mixture of the members in the ensemble
//                         (metrics/regression.h), computed in float64 and rounded once
//   output member_mean, member_std   float32 [K, N]
// The members are batched inside the graph: dense layers are one MatMul of the stacked
// [K, in, out] weights (the export's [K, out, in] tensor through a Transpose), conv layers one
// Conv over the members' stacked filters (group = 1 on the shared input, group = K after), so
// the graph's size does not grow with K. Initializers keep the export's tensor names, shapes
// and bytes. metadata_props holds every __metadata__ entry of `file` (same key, same string)
// plus "ensemblelab_version".
//
// The protobuf wire format is written here directly (no protobuf library; the messages used
// are few and stable): see docs/formats.md (ONNX) for why. The tests check every
// model kind with onnx.checker and run it in ONNX Runtime against predict.
//
// Preconditions: `ensemble` is importEnsemble(file). RuntimeError when the model would not fit
// protobuf's 2 GiB message limit.
std::string onnxModel(const LoadedEnsemble& ensemble, const SafetensorsFile& file);

// importEnsemble(file) (DataError for a file that is not an ensemble export), onnxModel, then
// writeFileAtomic(path).
void writeOnnx(const std::string& path, const SafetensorsFile& file);

}  // namespace ensemble
