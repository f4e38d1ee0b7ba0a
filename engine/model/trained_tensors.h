#pragma once

// What the backend trains for an ensemble method, as named tensors with where each lives in the
// flat parameter buffer: the one list that checkpoints (the parameters and the optimizer's
// moments, "trained." and moment prefixes: io/checkpoint.cpp) and weights files ("layers.":
// io/model_io.cpp) store, so that a new kind of layer or method changes it once.

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "model/ensemble_methods.h"
#include "model/mlp.h"

namespace ensemble {

struct TrainedTensor {
    std::string name;            // "{l}.weight", "{l}.bias", "{l}.fast_in", "{l}.fast_out"
    std::vector<int64_t> shape;  // as stored
    std::size_t offset = 0;      // into the flat buffer
    std::size_t count = 0;       // floats
};

// `layout`: the trainer's trainedLayout (K members, or the one network of a one-network
// method). "{l}.weight" ([K, out, in] or [K, F, C, k, k]) and "{l}.bias" ([K, out]) per layer;
// for BatchEnsemble its shared and fast weights (model/batch_ensemble.h batchEnsembleTensors).
std::vector<TrainedTensor> trainedTensors(EnsembleMethod method, const ParamLayout& layout);

// The floats the tensors hold together.
std::size_t trainedTensorsSize(const std::vector<TrainedTensor>& tensors);

}  // namespace ensemble
