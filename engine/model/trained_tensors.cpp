#include "model/trained_tensors.h"

#include "model/batch_ensemble.h"

namespace ensemble {

std::vector<TrainedTensor> trainedTensors(EnsembleMethod method, const ParamLayout& layout) {
    if (ensembleMethodInfo(method).fastWeights) {
        return batchEnsembleTensors(BatchEnsembleLayout(layout));
    }
    const int64_t k = layout.members();
    std::vector<TrainedTensor> out;
    for (int l = 0; l < layout.layerCount(); ++l) {
        const LayerSlot& s = layout.layer(l);
        const std::string prefix = std::to_string(l);
        out.push_back({prefix + ".weight", layout.weightShape(l), s.weightOffset,
                       static_cast<std::size_t>(k) * s.out * s.in});
        out.push_back(
            {prefix + ".bias", {k, s.out}, s.biasOffset, static_cast<std::size_t>(k) * s.out});
    }
    return out;
}

std::size_t trainedTensorsSize(const std::vector<TrainedTensor>& tensors) {
    std::size_t size = 0;
    for (const TrainedTensor& t : tensors) {
        size += t.count;
    }
    return size;
}

}  // namespace ensemble
