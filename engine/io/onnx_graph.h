#pragma once

// The ensemble's ONNX graph, built for onnx_export.cpp (which gives the model its identity,
// checks it and writes it): nodes of opset 17, the export's tensors as initializers whose data
// the writer places, inline or in a data file, once it knows the model's size.

#include <string_view>
#include <vector>

#include <onnx/onnx_pb.h>

#include "io/model_io.h"
#include "io/safetensors.h"

namespace ensemble {

// An initializer whose bytes are the export's own (a view into the SafetensorsFile), stored
// inline or in the data file once the model's size is known.
struct OnnxWeight {
    onnx::TensorProto* tensor;  // RepeatedPtrField elements do not move
    std::string_view bytes;
};

// Fills `model`'s graph: inputs, nodes, outputs and every initializer, the export's tensors
// without their data (returned, in the graph's order, for the writer).
std::vector<OnnxWeight> buildOnnxModel(onnx::ModelProto& model, const LoadedEnsemble& ensemble,
                                       const SafetensorsFile& file);

}  // namespace ensemble
