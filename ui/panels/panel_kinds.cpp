#include "panels/panel_kinds.h"

#include <map>

#include "data/dataset.h"

namespace ensemble::ui {

namespace {

// Which kinds read a key: the noise, spiral turns and class count belong to some generators,
// momentum to SGD, threads to the CPU and the device ordinal to CUDA (auto may use either).
bool datasetReadsNoise(const std::string& kind) {
    return isGeneratedDataset(kind) && kind != "sine";  // sine's noise is its own
}

bool datasetReadsRotations(const std::string& kind) {
    return kind == "spirals";
}

bool datasetReadsClasses(const std::string& kind) {
    return kind == "blobs";
}

bool datasetHasOwnSplit(const std::string& kind) {
    return isImageDataset(kind);  // the image datasets come with their test files
}

// Whether `name` is the engine's name of `value` (the schema's enum name tables).
template <NamedEnum E>
bool isNameOf(const std::string& name, E value) {
    E named{};
    return enumFromName(name, named) && named == value;
}

bool optimizerReadsMomentum(const std::string& kind) {
    return isNameOf(kind, OptimizerKind::Sgd);
}

bool backendReadsThreads(const std::string& kind) {
    return !isNameOf(kind, BackendKind::Cuda);
}

bool backendReadsDevice(const std::string& kind) {
    return !isNameOf(kind, BackendKind::Cpu);
}

// The condition "`decider` is one of the kinds `reads` accepts", over the schema's choices.
template <typename Reads>
Condition onlyFor(const char* decider, Reads reads) {
    Condition when{decider, {}};
    for (const Choice& c : keySpec(decider).choices) {
        if (reads(c.name)) {
            when.values.emplace_back(c.name);
        }
    }
    return when;
}

}  // namespace

bool isImageDataset(const std::string& kind) {
    return kind == "mnist" || kind == "fashion-mnist";
}

bool isCsvDataset(const std::string& kind) {
    return kind == "csv";
}

bool isGeneratedDataset(const std::string& kind) {
    return isGenerated(kind) || isRegressionGenerator(kind);
}

bool isRegressionDataset(const std::string& kind, const std::string& task) {
    return isRegressionGenerator(kind) || (isCsvDataset(kind) && task == "regression");
}

bool modelNeedsImages(const std::string& modelKind) {
    return modelKind == "cnn";
}

bool isRegressionLikelihood(const std::string& likelihood) {
    return !isNameOf(likelihood, Likelihood::Categorical);
}

std::string defaultLikelihood(bool regression) {
    return toString(regression ? Likelihood::Gaussian : Likelihood::Categorical);
}

const Condition& formCondition(const std::string& key) {
    static const std::map<std::string, Condition> conditions = {
        {"dataset.n", onlyFor("dataset.kind", isGeneratedDataset)},
        {"dataset.noise", onlyFor("dataset.kind", datasetReadsNoise)},
        {"dataset.rotations", onlyFor("dataset.kind", datasetReadsRotations)},
        {"dataset.classes", onlyFor("dataset.kind", datasetReadsClasses)},
        {"dataset.test_fraction",
         onlyFor("dataset.kind", [](const std::string& k) { return !datasetHasOwnSplit(k); })},
        {"dataset.path",
         onlyFor("dataset.kind", [](const std::string& k) { return !isGeneratedDataset(k); })},
        {"optimizer.momentum", onlyFor("optimizer.kind", optimizerReadsMomentum)},
        {"backend.threads", onlyFor("backend.kind", backendReadsThreads)},
        {"backend.device", onlyFor("backend.kind", backendReadsDevice)},
    };
    static const Condition always;
    const auto it = conditions.find(key);
    return it == conditions.end() ? always : it->second;
}

}  // namespace ensemble::ui
