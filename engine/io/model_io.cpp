#include "io/model_io.h"

#include <algorithm>
#include <cmath>

#include "backend/gemm_library.h"
#include "core/errors.h"
#include "io/export_formats.h"
#include "io/safetensors.h"
#include "model/batch_ensemble.h"
#include "model/trained_tensors.h"
#include "train/effective_members.h"
#include "train/trainer.h"

namespace ensemble {

namespace {

using nlohmann::json;

// The layers.* tensors a weights file stores for `layout` (what the method has: the K members,
// the one network, or BatchEnsemble's shared and fast weights), with where each lives in the
// flat buffer. Export and import read the same list; checkpoints store the same tensors.
std::vector<TrainedTensor> storedTensors(EnsembleMethod method, const ParamLayout& layout) {
    std::vector<TrainedTensor> out = trainedTensors(method, layout);
    for (TrainedTensor& t : out) {
        t.name = "layers." + t.name;
    }
    return out;
}

[[noreturn]] void invalidWeights(const std::string& path, const std::string& what) {
    throw DataError(ErrorKind::Weights, path + ": " + what);
}

const json& metaJson(const json& meta, const std::string& path, const std::string& key) {
    if (!meta.contains(key)) {
        invalidWeights(path, "metadata has no '" + key + "' (not an EnsembleLab weights file?)");
    }
    return meta.at(key);
}

// A regression model's target units: tensors normalization.target_mean and
// normalization.target_std (F32 [1]), and the target column's name in the metadata ("target"),
// which predict skips in its input.
void addTargetNormalization(SafetensorsFile& file, const Normalization& norm,
                            const std::string& target) {
    file.tensors.push_back(Tensor::fromF32(
        "normalization.target_mean", {1}, std::vector<float>{static_cast<float>(norm.targetMean)}));
    file.tensors.push_back(Tensor::fromF32("normalization.target_std", {1},
                                           std::vector<float>{static_cast<float>(norm.targetStd)}));
    file.metadata["target"] = target;
}

void readTargetNormalization(const SafetensorsFile& file, LoadedEnsemble& e) {
    const std::string& path = file.origin;
    double values[2] = {0.0, 1.0};
    const char* names[2] = {"normalization.target_mean", "normalization.target_std"};
    for (int i = 0; i < 2; ++i) {
        const Tensor* t = file.find(names[i]);
        if (t == nullptr || t->dtype != DType::F32 || t->shape != std::vector<int64_t>{1}) {
            invalidWeights(path, std::string("a regression model needs the tensor '") + names[i] +
                                     "' as F32 [1]");
        }
        values[i] = static_cast<double>(t->f32()[0]);
    }
    if (!std::isfinite(values[0]) || !(values[1] > 0.0) || !std::isfinite(values[1])) {
        invalidWeights(path,
                       "normalization.target_mean / target_std must be finite, the std positive");
    }
    e.normalization.targetMean = values[0];
    e.normalization.targetStd = values[1];
    if (e.metadata.contains("target") && e.metadata["target"].is_string()) {
        e.target = e.metadata["target"].get<std::string>();
    }
}

}  // namespace

void exportEnsemble(const std::string& path, const Trainer& trainer, const json& metrics,
                    const std::map<std::string, std::string>& extraMetadata) {
    SafetensorsFile file = exportFile(trainer, metrics);
    for (const auto& [key, value] : extraMetadata) {
        file.metadata[key] = value;
    }
    writeExport(path, file, exportFormatForPath(path));
}

SafetensorsFile exportFile(const Trainer& trainer, const json& metrics) {
    const ParamLayout& layout = trainer.layout();
    const int k = layout.members();
    const ExperimentConfig& config = trainer.config();
    // What the method has: the K members, or the one network they derive from (storesNetwork).
    const bool network = ensembleMethodInfo(config.ensemble.method).storesNetwork;
    const bool fastWeights = ensembleMethodInfo(config.ensemble.method).fastWeights;
    const bool trained = network || fastWeights;  // not the K members themselves
    const ParamLayout& stored = trained ? trainer.trainedLayout() : layout;
    const std::vector<float> params = trained ? trainer.trainedParameters() : trainer.parameters();
    SafetensorsFile file;
    for (const TrainedTensor& t : storedTensors(config.ensemble.method, stored)) {
        file.tensors.push_back(
            Tensor::fromF32(t.name, t.shape, {params.data() + t.offset, t.count}));
    }
    const Normalization& norm = trainer.data().normalization;
    const int64_t d = layout.inputs();
    file.tensors.push_back(Tensor::fromF32("normalization.mean", {d}, norm.mean));
    file.tensors.push_back(Tensor::fromF32("normalization.std", {d}, norm.std));
    if (trainer.data().regression) {
        addTargetNormalization(file, norm, trainer.data().train.targetName);
    }
    if (config.ensemble.bootstrap != BootstrapMode::None) {
        const std::vector<int32_t> counts = trainer.bootstrapCounts();
        file.tensors.push_back(
            Tensor::fromI32("bootstrap.counts", {k, trainer.data().train.rows}, counts));
    }

    json members = json::array();
    for (int m = 0; m < k; ++m) {
        const auto i = static_cast<std::size_t>(m);
        members.push_back(
            json{{"member", m},
                 {"lr", config.optimizer.lr[i]},
                 {"momentum", config.optimizer.momentum[i]},
                 {"weight_decay", config.optimizer.weightDecay[i]},
                 {"seed", config.ensemble.seed},
                 // A one-network method's members share its stream.
                 {"stream", ensembleMethodInfo(config.ensemble.method).oneNetwork ? 0 : m},
                 {"diverged", trainer.diverged()[i] != 0}});
    }
    const DataSplit& data = trainer.data();
    file.metadata["format"] = "ensemblelab";
    file.metadata["format_version"] = std::to_string(weightsFormatVersion(config.ensemble.method));
    file.metadata["method"] = toString(config.ensemble.method);
    if (config.model.dropout > 0.0) {
        // mc_dropout: what regenerates the members' masks (model/dropout_masks.h).
        file.metadata["dropout"] = json(config.model.dropout).dump();
        file.metadata["dropout_seed"] = std::to_string(dropoutMaskSeed(config));
    }
    file.metadata["config"] = config.json.dump();
    file.metadata["members"] = members.dump();
    file.metadata["step"] = std::to_string(trainer.step());
    file.metadata["dataset"] = data.name;
    file.metadata["classes"] = std::to_string(data.classes);
    file.metadata["activation"] = toString(config.model.activation);
    if (layout.isMlp()) {
        file.metadata["widths"] = json(layout.widths()).dump();
    }
    file.metadata["model"] = config.json.value("model", json::object()).dump();
    file.metadata["feature_names"] = json(data.train.featureNames).dump();
    file.metadata["train_rows"] = std::to_string(data.train.rows);
    file.metadata["is_image"] = data.isImage ? "true" : "false";
    // Which backend trained it and why (backend.kind=auto's decision): a resumed run keeps it.
    // On the CPU, the library behind its large products too (backend.gemm resolved): --resume
    // under backend.gemm = auto keeps it (keepCheckpointBackend).
    json backend = decisionJson(trainer.backendDecision(), trainer.backend().name());
    if (trainer.backendDecision().chosen == BackendKind::Cpu) {
        backend["gemm"] = gemmLibraryKey(gemmLibrary());
    }
    file.metadata["backend"] = backend.dump();
    if (data.isImage) {
        file.metadata["image_shape"] = json{data.imageHeight, data.imageWidth}.dump();
    }
    if (!metrics.is_null()) {
        file.metadata["metrics"] = metrics.dump();
    }
    return file;
}

LoadedEnsemble importEnsemble(const std::string& path) {
    return importEnsemble(readSafetensors(path));
}

LoadedEnsemble importEnsemble(const SafetensorsFile& file) {
    const std::string& path = file.origin;
    LoadedEnsemble e;
    json& meta = e.metadata;
    meta = json::object();
    for (const auto& [key, value] : file.metadata) {
        json parsed = json::parse(value, nullptr, false);
        meta[key] = parsed.is_discarded() ? json(value) : parsed;
    }
    const json& version = metaJson(meta, path, "format_version");
    // Read as int64: get<int>() would wrap a large number into the supported range.
    if (!version.is_number_integer() || version.get<int64_t>() < 1 ||
        version.get<int64_t>() > kWeightsFormatVersion) {
        invalidWeights(path, "format_version " + version.dump() +
                                 " is not supported (this build reads 1.." +
                                 std::to_string(kWeightsFormatVersion) + ")");
    }
    const json& config = metaJson(meta, path, "config");
    try {
        e.config = parseConfig(config);
    } catch (const ConfigError& err) {
        invalidWeights(path, std::string("the stored config is invalid: ") + err.what());
    }
    // The method: the metadata "method" (version 2 on; version 1 files are independent
    // ensembles, with or without the entry), which the stored config must agree with.
    e.method = EnsembleMethod::Independent;
    if (meta.contains("method")) {
        const json& method = meta["method"];
        if (!method.is_string() || !enumFromName(method.get<std::string>(), e.method)) {
            invalidWeights(path, "metadata 'method' " + method.dump() + " is not a method (" +
                                     namesText<EnsembleMethod>() + ")");
        }
    } else if (version.get<int64_t>() >= 2) {
        invalidWeights(path,
                       "metadata 'method' is missing (format_version 2 files name their method)");
    }
    if (version.get<int64_t>() < weightsFormatVersion(e.method)) {
        invalidWeights(path, "format_version " + version.dump() + " cannot hold a " +
                                 toString(e.method) + " ensemble (it needs " +
                                 std::to_string(weightsFormatVersion(e.method)) + ")");
    }
    if (e.config.ensemble.method != e.method) {
        invalidWeights(path, std::string("metadata 'method' is ") + toString(e.method) +
                                 " but the stored config's ensemble.method is " +
                                 toString(e.config.ensemble.method));
    }
    const int k = e.config.ensemble.members;
    // A method that stores its one network (storesNetwork) holds one member's tensors.
    const bool network = ensembleMethodInfo(e.method).storesNetwork;
    const int stored = network ? 1 : k;
    if (e.config.model.kind == ModelKind::Cnn) {
        // The architecture follows from the stored model section, the image shape and the
        // number of classes.
        const json& shape = metaJson(meta, path, "image_shape");
        const json& classes = metaJson(meta, path, "classes");
        std::vector<int> hw;
        try {
            hw = shape.get<std::vector<int>>();
        } catch (const json::exception&) {
        }
        if (hw.size() != 2 || hw[0] < 1 || hw[1] < 1 || hw[0] > 65536 || hw[1] > 65536) {
            invalidWeights(path,
                           "metadata 'image_shape' " + shape.dump() + " is not [height, width]");
        }
        if (!classes.is_number_integer() || classes.get<int64_t>() < 1 ||
            classes.get<int64_t>() > 65536) {
            invalidWeights(path, "metadata 'classes' " + classes.dump() + " is not a class count");
        }
        try {
            e.layout = ParamLayout(
                modelArchitecture(e.config.model, Shape{1, hw[0], hw[1]}, classes.get<int>()),
                stored);
        } catch (const ConfigError& err) {
            invalidWeights(path,
                           std::string("the stored model does not fit its images: ") + err.what());
        }
    } else {
        const json& widths = metaJson(meta, path, "widths");
        std::vector<int> w;
        try {
            w = widths.get<std::vector<int>>();
        } catch (const json::exception&) {
            invalidWeights(path, "metadata 'widths' is not a list of integers");
        }
        if (w.size() < 2 || std::any_of(w.begin(), w.end(), [](int x) { return x < 1; })) {
            invalidWeights(path,
                           "metadata 'widths' " + widths.dump() + " is not a valid architecture");
        }
        e.layout = ParamLayout(w, stored);
    }
    // Every layer's tensors are checked against the layout before the parameters are allocated:
    // the metadata alone (widths, members) can ask for terabytes, while tensors that match it
    // exist in the file, so their sizes bound the allocation by the file's size.
    const auto layerTensor = [&](const std::string& name,
                                 const std::vector<int64_t>& shape) -> const Tensor& {
        const Tensor& t = file.get(name);
        if (t.dtype != DType::F32 || t.shape != shape) {
            std::string expected;
            for (int64_t x : shape) {
                expected += (expected.empty() ? "" : ",") + std::to_string(x);
            }
            invalidWeights(path, "tensor '" + name + "' should be F32 [" + expected + "]");
        }
        return t;
    };
    const bool fastWeights = ensembleMethodInfo(e.method).fastWeights;
    const std::vector<TrainedTensor> tensors = storedTensors(e.method, e.layout);
    for (const TrainedTensor& t : tensors) {
        layerTensor(t.name, t.shape);
    }
    // BatchEnsemble's file holds what its members derive from; the others' the parameters.
    std::vector<float>& read = fastWeights ? e.network : e.params;
    read.resize(fastWeights ? BatchEnsembleLayout(e.layout).size() : e.layout.size());
    for (const TrainedTensor& t : tensors) {
        const auto values = layerTensor(t.name, t.shape).f32();
        std::copy(values.begin(), values.end(),
                  read.begin() + static_cast<std::ptrdiff_t>(t.offset));
    }
    if (fastWeights) {
        e.params.resize(e.layout.size());
        batchEnsembleExpand(BatchEnsembleLayout(e.layout), e.network.data(), e.params.data());
    }
    const int64_t d = e.layout.inputs();
    for (const char* name : {"normalization.mean", "normalization.std"}) {
        const Tensor& t = file.get(name);
        if (t.dtype != DType::F32 || t.shape != std::vector<int64_t>{d}) {
            invalidWeights(path, std::string("tensor '") + name + "' should be F32 [" +
                                     std::to_string(d) + "]");
        }
        const auto values = t.f32();
        auto& dst =
            std::string(name) == "normalization.mean" ? e.normalization.mean : e.normalization.std;
        dst.assign(values.begin(), values.end());
    }
    for (float s : e.normalization.std) {
        if (!(s > 0.0f) || !std::isfinite(s)) {
            invalidWeights(path, "normalization.std has a value that is not positive and finite");
        }
    }
    if (isRegression(e.config.model.likelihood)) {
        readTargetNormalization(file, e);
    }
    if (const Tensor* counts = file.find("bootstrap.counts")) {
        if (counts->dtype != DType::I32 || counts->shape.size() != 2 || counts->shape[0] != k) {
            invalidWeights(path,
                           "tensor 'bootstrap.counts' should be I32 [" + std::to_string(k) + ",N]");
        }
        e.trainRows = counts->shape[1];
        const auto values = counts->i32();
        e.counts.assign(values.begin(), values.end());
    }
    e.diverged.assign(static_cast<std::size_t>(k), 0);
    if (meta.contains("members") && meta["members"].is_array()) {
        const json& members = meta["members"];
        if (members.size() != static_cast<std::size_t>(k)) {
            invalidWeights(path, "metadata 'members' lists " + std::to_string(members.size()) +
                                     " members but the tensors hold " + std::to_string(k));
        }
        for (std::size_t m = 0; m < members.size(); ++m) {
            // Checked here: json's value() would throw its own type_error for a member that is
            // not an object or a flag that is not a boolean, not our DataError.
            const json& member = members[m];
            if (!member.is_object() ||
                (member.contains("diverged") && !member["diverged"].is_boolean())) {
                invalidWeights(path, "metadata 'members' entry " + std::to_string(m) +
                                         " is not an object with a true/false 'diverged'");
            }
            e.diverged[m] = member.value("diverged", false) ? 1 : 0;
        }
    }
    if (meta.contains("step") && meta["step"].is_number_integer()) {
        e.step = meta["step"].get<int64_t>();
    }
    if (meta.contains("dataset") && meta["dataset"].is_string()) {
        e.datasetName = meta["dataset"].get<std::string>();
    }
    if (network) {
        // mc_dropout: the K members are the network under the masks regenerated from the
        // stored seed and the stored config's rate. The members list (K entries in the file)
        // must be there first: it bounds K by the file's size before K networks are allocated.
        if (!meta.contains("members") || !meta["members"].is_array()) {
            invalidWeights(path, std::string("metadata 'members' is missing (a ") +
                                     toString(e.method) + " file lists its members)");
        }
        const json& seed = metaJson(meta, path, "dropout_seed");
        if (!seed.is_number_unsigned() && !(seed.is_number_integer() && seed.get<int64_t>() >= 0)) {
            invalidWeights(path, "metadata 'dropout_seed' " + seed.dump() + " is not a seed");
        }
        if (meta.contains("dropout") && meta["dropout"] != json(e.config.model.dropout)) {
            invalidWeights(path, "metadata 'dropout' " + meta["dropout"].dump() +
                                     " is not the stored config's model.dropout");
        }
        e.network = std::move(e.params);
        e.dropoutSeed = seed.get<uint64_t>();
        e.params = mcDropoutMembers(e.layout.architecture(), e.network.data(),
                                    e.config.model.dropout, e.dropoutSeed, k);
        e.layout = ParamLayout(e.layout.architecture(), k);
    }
    return e;
}

}  // namespace ensemble
