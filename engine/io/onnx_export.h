#pragma once

#include <cstdint>
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
// The model is built as an onnx::ModelProto with ONNX's own C++ library (Debian's
// libonnx-dev) and checked with its checker and strict shape inference before the model file is
// written; a model that fails them is a bug here, reported as RuntimeError (and no file left). The
// tests also run onnx.checker and ONNX Runtime on every model kind against predict.
//
// Protobuf cannot hold a message of 2 GiB or more, so an ensemble whose weights exceed
// OnnxOptions::externalDataAbove is written in ONNX's external-data form: the export's tensors
// go to "<name>.<16 hex digits>.data" beside the model (each at a 4096-aligned offset), the
// model refers to it by that relative name. The hex digits are a hash of the data file's bytes,
// so a model and its data file are replaced as a pair: the data file is written (atomically)
// under its new name first, then the model (atomically), then the data file the old model used
// is removed. A reader never sees a model with another model's data. Smaller ensembles stay one
// self-contained file.
//
// Both files need a directory: external data written to a stream (/dev/stdout, a FIFO) is a
// RuntimeError (kind Io).
struct OnnxOptions {
    // Weights bytes above which the data goes to its own file: protobuf's 2 GiB limit less room
    // for the graph. Tests lower it to exercise the external form on small models.
    std::uint64_t externalDataAbove = (std::uint64_t{1} << 31) - (std::uint64_t{1} << 20);
};

// importEnsemble(file) (DataError for a file that is not an ensemble export), then the model
// (and its data file) written by writeFileAtomic's rule.
void writeOnnx(const std::string& path, const SafetensorsFile& file,
               const OnnxOptions& options = {});

}  // namespace ensemble
