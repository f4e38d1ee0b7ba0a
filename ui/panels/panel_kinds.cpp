#include "panels/panel_kinds.h"

#include <map>

#include "data/dataset_kinds.h"
#include "data_kinds.h"

namespace ensemble::ui {

namespace {

// The registry's row of a dataset.kind name (the form's list holds only the registry's names).
const DatasetKindInfo& datasetRow(const std::string& kind) {
    return datasetKindNamed(QString::fromStdString(kind));
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

// Whether a dataset kind reads `dataset.<name>`.
auto datasetReads(const char* name) {
    return [name](const std::string& kind) { return datasetKindReads(datasetRow(kind), name); };
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
    return datasetRow(kind).source == DataSource::IdxImages;
}

bool isCsvDataset(const std::string& kind) {
    return datasetRow(kind).source == DataSource::CsvFile;
}

bool isGeneratedDataset(const std::string& kind) {
    return datasetRow(kind).source == DataSource::Generator;
}

bool isShippedDataset(const std::string& kind) {
    return datasetRow(kind).source == DataSource::Bundled;
}

bool isRegressionDataset(const std::string& kind, const std::string& task) {
    const DatasetKindInfo& row = datasetRow(kind);
    return row.taskFromConfig ? isNameOf(task, DataTask::Regression)
                              : row.task == DataTask::Regression;
}

bool modelNeedsImages(const std::string& modelKind) {
    return modelKindNamed(QString::fromStdString(modelKind)).needsImages;
}

bool isRegressionLikelihood(const std::string& likelihood) {
    return !isNameOf(likelihood, Likelihood::Categorical);
}

std::string defaultLikelihood(bool regression) {
    return toString(regression ? Likelihood::Gaussian : Likelihood::Categorical);
}

const Condition& formCondition(const std::string& key) {
    static const std::map<std::string, Condition> conditions = {
        // The dataset keys the schema accepts for every kind but only some kinds read
        // (the registry's rows list them).
        {"dataset.n", onlyFor("dataset.kind", datasetReads("n"))},
        {"dataset.noise", onlyFor("dataset.kind", datasetReads("noise"))},
        {"dataset.rotations", onlyFor("dataset.kind", datasetReads("rotations"))},
        {"dataset.classes", onlyFor("dataset.kind", datasetReads("classes"))},
        {"dataset.test_fraction", onlyFor("dataset.kind", datasetReads("test_fraction"))},
        {"dataset.path", onlyFor("dataset.kind", datasetReads("path"))},
        {"optimizer.momentum", onlyFor("optimizer.kind", optimizerReadsMomentum)},
        {"backend.threads", onlyFor("backend.kind", backendReadsThreads)},
        {"backend.device", onlyFor("backend.kind", backendReadsDevice)},
        // The CPU computes in FP32 whatever backend.math says: shown where a GPU may run.
        {"backend.math", onlyFor("backend.kind", backendReadsDevice)},
    };
    static const Condition always;
    const auto it = conditions.find(key);
    return it == conditions.end() ? always : it->second;
}

}  // namespace ensemble::ui
