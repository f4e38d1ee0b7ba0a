#include "io/checkpoint.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "config/config.h"
#include "config/config_schema.h"
#include "core/errors.h"
#include "core/unreachable.h"
#include "model/ensemble_methods.h"
#include "model/trained_tensors.h"
#include "train/trainer_report.h"

namespace ensemble {

namespace {

using nlohmann::json;

[[noreturn]] void invalidCheckpoint(const std::string& origin, const std::string& what) {
    throw DataError(ErrorKind::Weights, origin + ": " + what);
}

std::string momentName(const TrainedTensor& t, const std::string& moment) {
    return "optimizer." + t.name + "." + moment;
}

std::string trainedName(const TrainedTensor& t) {
    return "trained." + t.name;
}

json number(double v) {
    return std::isfinite(v) ? json(v) : json(nullptr);
}

// The measures of one split, in the order the curves name them.
constexpr const char* kMeasures[] = {"train_loss", "train_accuracy", "test_loss", "test_accuracy"};

double& measure(SplitMetrics& train, SplitMetrics& test, int i) {
    switch (i) {
        case 0:
            return train.loss;
        case 1:
            return train.accuracy;
        case 2:
            return test.loss;
        default:
            return test.accuracy;
    }
}

double readNumber(const json& v, const std::string& origin, const std::string& where) {
    if (v.is_null()) {
        return std::numeric_limits<double>::quiet_NaN();
    }
    if (!v.is_number()) {
        invalidCheckpoint(origin, "curves: " + where + " is not a number or null");
    }
    return v.get<double>();
}

const json& readArray(const json& parent, const char* key, std::size_t size,
                      const std::string& origin, const std::string& where) {
    if (!parent.is_object() || !parent.contains(key) || !parent[key].is_array() ||
        (size != std::numeric_limits<std::size_t>::max() && parent[key].size() != size)) {
        invalidCheckpoint(origin, "curves: " + where + key + " is not a list" +
                                      (size == std::numeric_limits<std::size_t>::max()
                                           ? std::string()
                                           : " of " + std::to_string(size) + " entries"));
    }
    return parent[key];
}

// Keys a resumed run may change freely: its length, its evaluation and where it runs.
bool changeableOnResume(const std::string& key) {
    return key == "training.steps" || key == "training.epochs" || key == "training.eval_every" ||
           key.rfind("backend.", 0) == 0;
}

// Why a key cannot change on resume, for the message.
std::string whyNotOnResume(const KeySpec& spec, int64_t step) {
    const std::string section = spec.section();
    if (section == "dataset") {
        return "cannot change when resuming: it alters the data the checkpoint was trained on";
    }
    if (section == "model") {
        return "cannot change when resuming: it alters the model the checkpoint holds";
    }
    if (spec.key == "ensemble.members") {
        return "cannot change when resuming: it alters K, the members the checkpoint holds";
    }
    return "cannot change when resuming: the checkpoint's " + std::to_string(step) +
           " steps were trained with the stored value (these can change: training.steps, "
           "training.epochs, training.eval_every, backend.*, later training.schedule entries, "
           "optimizer.lr, optimizer.momentum, optimizer.weight_decay)";
}

// The schedule's entries before `step`, stably sorted by step (the order they applied in).
json entriesBefore(const json& config, int64_t step) {
    json entries = json::array();
    if (config.contains("training") && config["training"].contains("schedule") &&
        config["training"]["schedule"].is_array()) {
        for (const json& e : config["training"]["schedule"]) {
            entries.push_back(e);
        }
    }
    std::stable_sort(entries.begin(), entries.end(), [](const json& a, const json& b) {
        const auto stepOf = [](const json& e) {
            return e.is_object() && e.contains("step") && e["step"].is_number_integer()
                       ? e["step"].get<int64_t>()
                       : int64_t{0};
        };
        return stepOf(a) < stepOf(b);
    });
    json out = json::array();
    for (const json& e : entries) {
        if (e.is_object() && e.contains("step") && e["step"].is_number_integer() &&
            e["step"].get<int64_t>() < step) {
            out.push_back(e);
        }
    }
    return out;
}

}  // namespace

std::vector<std::string> checkpointMoments(OptimizerKind kind) {
    switch (kind) {
        case OptimizerKind::Sgd:
            return {"momentum"};
        case OptimizerKind::Adam:
        case OptimizerKind::AdamW:
            return {"m", "v"};
    }
    unreachableKind("OptimizerKind");
}

json curvesJson(const std::vector<Evaluation>& evaluations) {
    json steps = json::array();
    json epochs = json::array();
    json ensemble = json::object();
    json members = json::object();
    for (const char* m : kMeasures) {
        ensemble[m] = json::array();
        members[m] = json::array();
    }
    members["diverged"] = json::array();
    for (const Evaluation& e : evaluations) {
        steps.push_back(e.step);
        epochs.push_back(number(e.epoch));
        SplitMetrics train = e.ensembleTrain;
        SplitMetrics test = e.ensembleTest;
        for (int i = 0; i < 4; ++i) {
            ensemble[kMeasures[i]].push_back(number(measure(train, test, i)));
            json row = json::array();
            for (MemberEvaluation m : e.members) {
                row.push_back(number(measure(m.train, m.test, i)));
            }
            members[kMeasures[i]].push_back(std::move(row));
        }
        json diverged = json::array();
        for (const MemberEvaluation& m : e.members) {
            diverged.push_back(m.diverged);
        }
        members["diverged"].push_back(std::move(diverged));
    }
    return json{{"step", steps}, {"epoch", epochs}, {"ensemble", ensemble}, {"members", members}};
}

std::vector<Evaluation> curvesFromJson(const json& curves, const std::string& origin) {
    constexpr std::size_t kAny = std::numeric_limits<std::size_t>::max();
    const json& steps = readArray(curves, "step", kAny, origin, "");
    const std::size_t n = steps.size();
    const json& epochs = readArray(curves, "epoch", n, origin, "");
    if (!curves.contains("ensemble") || !curves.contains("members")) {
        invalidCheckpoint(origin, "curves: has no 'ensemble' or no 'members'");
    }
    const json& ensemble = curves["ensemble"];
    const json& members = curves["members"];
    std::vector<Evaluation> out(n);
    const json& diverged = readArray(members, "diverged", n, origin, "members.");
    for (std::size_t j = 0; j < n; ++j) {
        Evaluation& e = out[j];
        if (!steps[j].is_number_integer() || steps[j].get<int64_t>() < 0) {
            invalidCheckpoint(origin,
                              "curves: step[" + std::to_string(j) + "] is not a step number");
        }
        e.step = steps[j].get<int64_t>();
        e.epoch = readNumber(epochs[j], origin, "epoch[" + std::to_string(j) + "]");
        if (!diverged[j].is_array()) {
            invalidCheckpoint(origin,
                              "curves: members.diverged[" + std::to_string(j) + "] is not a list");
        }
        e.members.resize(diverged[j].size());
        for (std::size_t k = 0; k < e.members.size(); ++k) {
            if (!diverged[j][k].is_boolean()) {
                invalidCheckpoint(origin, "curves: members.diverged[" + std::to_string(j) + "][" +
                                              std::to_string(k) + "] is not true or false");
            }
            e.members[k].diverged = diverged[j][k].get<bool>();
        }
    }
    for (int i = 0; i < 4; ++i) {
        const std::string name = kMeasures[i];
        const json& ens = readArray(ensemble, kMeasures[i], n, origin, "ensemble.");
        const json& mem = readArray(members, kMeasures[i], n, origin, "members.");
        for (std::size_t j = 0; j < n; ++j) {
            Evaluation& e = out[j];
            const std::string at = "[" + std::to_string(j) + "]";
            measure(e.ensembleTrain, e.ensembleTest, i) =
                readNumber(ens[j], origin, "ensemble." + name + at);
            if (!mem[j].is_array() || mem[j].size() != e.members.size()) {
                invalidCheckpoint(origin, "curves: members." + name + at + " is not a list of " +
                                              std::to_string(e.members.size()) + " values");
            }
            for (std::size_t k = 0; k < e.members.size(); ++k) {
                MemberEvaluation& m = e.members[k];
                measure(m.train, m.test, i) = readNumber(mem[j][k], origin, "members." + name + at);
            }
        }
    }
    return out;
}

void writeCheckpoint(const std::string& path, const Trainer& trainer,
                     const std::vector<Evaluation>& curves, const json& metrics, int64_t runLength,
                     const json& active, bool untilPaused) {
    SafetensorsFile file = exportFile(trainer, metrics);
    const int64_t length =
        runLength >= 0 ? runLength : std::max(trainer.step(), trainer.totalSteps());
    file.metadata["config"] = configWithLength(trainer, std::max(length, trainer.step())).dump();
    const TrainingState state = trainer.trainingState();
    // The optimizer state is that of what the backend trains (one network for a one-network
    // method, whose members the export's tensors hold).
    const ParamLayout& layout = trainer.trainedLayout();
    const int k = layout.members();
    const std::vector<std::string> moments = checkpointMoments(trainer.config().optimizer.kind);
    const std::vector<TrainedTensor> tensors =
        trainedTensors(trainer.config().ensemble.method, layout);
    if (!state.trained.empty()) {
        for (const TrainedTensor& t : tensors) {
            file.tensors.push_back(Tensor::fromF32(trainedName(t), t.shape,
                                                   {state.trained.data() + t.offset, t.count}));
        }
    }
    for (std::size_t i = 0; i < moments.size(); ++i) {
        // SGD's buffer and Adam's m share a slot (Backend::OptimizerState).
        const std::vector<float>& buffer =
            i == 0 ? state.optimizer.moment1 : state.optimizer.moment2;
        for (const TrainedTensor& t : tensors) {
            file.tensors.push_back(Tensor::fromF32(momentName(t, moments[i]), t.shape,
                                                   {buffer.data() + t.offset, t.count}));
        }
    }
    const std::vector<int64_t> updates(static_cast<std::size_t>(k),
                                       static_cast<int64_t>(state.optimizer.updates));
    file.tensors.push_back(Tensor::fromI64("optimizer.step", {k}, updates));
    file.metadata["checkpoint_format_version"] = std::to_string(kCheckpointFormatVersion);
    file.metadata["curves"] = curvesJson(curves).dump();
    if (!active.is_null()) {
        file.metadata["active"] = active.dump();
    }
    if (untilPaused) {
        file.metadata["until_paused"] = "true";
    }
    writeSafetensors(path, file);
}

bool isCheckpoint(const SafetensorsFile& file) {
    return file.metadata.count("checkpoint_format_version") > 0;
}

Checkpoint readCheckpoint(const std::string& path) {
    return readCheckpoint(readSafetensors(path));
}

Checkpoint readCheckpoint(const SafetensorsFile& file) {
    const std::string& origin = file.origin;
    if (!isCheckpoint(file)) {
        invalidCheckpoint(origin,
                          "not a checkpoint: it holds weights but no optimizer state (an export; "
                          "`ensemble-cli train --checkpoint FILE` writes checkpoints)");
    }
    Checkpoint c;
    c.ensemble = importEnsemble(file);
    const json& meta = c.ensemble.metadata;
    const json& version = meta["checkpoint_format_version"];
    if (!version.is_number_integer() || version.get<int64_t>() < 1 ||
        version.get<int64_t>() > kCheckpointFormatVersion) {
        invalidCheckpoint(origin, "checkpoint_format_version " + version.dump() +
                                      " is not supported (this build reads 1.." +
                                      std::to_string(kCheckpointFormatVersion) + ")");
    }
    if (!meta.contains("step") || !meta["step"].is_number_integer() ||
        meta["step"].get<int64_t>() < 0) {
        invalidCheckpoint(origin, "metadata 'step' is not a step number");
    }
    if (!meta.contains("train_rows") || !meta["train_rows"].is_number_integer() ||
        meta["train_rows"].get<int64_t>() < 1) {
        invalidCheckpoint(origin, "metadata 'train_rows' is not a row count");
    }
    c.trainRows = meta["train_rows"].get<int64_t>();

    const ExperimentConfig& config = c.ensemble.config;
    const bool derived = derivesMembers(config.ensemble.method);
    // What the backend trained: the members, or a one-network method's network.
    const ParamLayout layout(c.ensemble.layout.architecture(),
                             trainedNetworks(config.ensemble.method, c.ensemble.layout.members()));
    const int k = layout.members();
    TrainingState& state = c.state;
    state.step = c.ensemble.step;
    state.params = c.ensemble.params;
    state.diverged = c.ensemble.diverged;
    const auto readInto = [&](std::vector<float>& buffer, const TrainedTensor& p,
                              const std::string& name) {
        const Tensor* t = file.find(name);
        if (t == nullptr || t->dtype != DType::F32 || t->shape != p.shape) {
            invalidCheckpoint(origin, "tensor '" + name + "' should be F32 " + shapeText(p.shape) +
                                          (t == nullptr ? " and is missing" : ""));
        }
        const auto values = t->f32();
        std::copy(values.begin(), values.end(),
                  buffer.begin() + static_cast<std::ptrdiff_t>(p.offset));
    };
    const std::vector<TrainedTensor> tensors = trainedTensors(config.ensemble.method, layout);
    const std::size_t trainedSize = trainedTensorsSize(tensors);
    if (derived) {
        state.trained.assign(trainedSize, 0.0f);
        for (const TrainedTensor& p : tensors) {
            readInto(state.trained, p, trainedName(p));
        }
    }
    state.optimizer.moment1.assign(trainedSize, 0.0f);
    state.optimizer.moment2.assign(trainedSize, 0.0f);
    const std::vector<std::string> moments = checkpointMoments(config.optimizer.kind);
    for (std::size_t i = 0; i < moments.size(); ++i) {
        std::vector<float>& buffer = i == 0 ? state.optimizer.moment1 : state.optimizer.moment2;
        for (const TrainedTensor& p : tensors) {
            readInto(buffer, p, momentName(p, moments[i]));
        }
    }
    const Tensor* updates = file.find("optimizer.step");
    if (updates == nullptr || updates->dtype != DType::I64 ||
        updates->shape != std::vector<int64_t>{k}) {
        invalidCheckpoint(origin,
                          "tensor 'optimizer.step' should be I64 [" + std::to_string(k) + "]");
    }
    const auto counts = updates->i64();
    if (std::any_of(counts.begin(), counts.end(), [&](int64_t u) { return u != counts[0]; }) ||
        counts[0] < 0) {
        invalidCheckpoint(
            origin,
            "tensor 'optimizer.step' holds different update counts for different members "
            "(this build resumes members that have taken the same number of updates)");
    }
    state.optimizer.updates = static_cast<uint64_t>(counts[0]);

    if (!meta.contains("curves")) {
        invalidCheckpoint(origin, "metadata has no 'curves'");
    }
    c.curves = curvesFromJson(meta["curves"], origin);
    if (meta.contains("active")) {
        c.active = meta["active"];
    }
    if (meta.contains("until_paused")) {
        const json& flag = meta["until_paused"];
        if (flag != "true" && flag != "false" && flag != true && flag != false) {
            invalidCheckpoint(origin, "metadata 'until_paused' is neither true nor false");
        }
        c.untilPaused = flag == "true" || flag == true;
    }
    for (const Evaluation& e : c.curves) {
        if (e.members.size() != static_cast<std::size_t>(c.ensemble.layout.members())) {
            invalidCheckpoint(origin, "curves: an evaluation of " +
                                          std::to_string(e.members.size()) +
                                          " members in a checkpoint of " +
                                          std::to_string(c.ensemble.layout.members()));
        }
    }
    return c;
}

ExperimentConfig resumeConfig(const Checkpoint& checkpoint,
                              const std::vector<std::string>& assignments,
                              std::vector<std::string>* notices) {
    const json& stored = checkpoint.ensemble.config.json;
    const int64_t step = checkpoint.state.step;
    json overrides = json::object();
    for (const std::string& a : assignments) {
        applyOverride(overrides, a);
    }
    json merged = overlayConfig(stored, overrides, notices);

    // A live hyperparameter given now changes it from the checkpoint's step on: a schedule
    // entry, so the stored base value (and the steps trained with it) stay as they were.
    json set = json::object();
    for (const KeySpec& spec : configSchema()) {
        if (!schedulable(spec) || !overrides.contains(spec.section()) ||
            !overrides[spec.section()].is_object() ||
            !overrides[spec.section()].contains(spec.name())) {
            continue;
        }
        const json value = overrides[spec.section()][spec.name()];
        try {
            (void)parseScheduledChange(stored, step, json{{spec.key, value}}, "--set");
        } catch (const ConfigError& e) {
            throw ConfigError(spec.key, e.reason());
        }
        set[spec.key] = value;
        if (stored.contains(spec.section()) && stored[spec.section()].contains(spec.name())) {
            merged[spec.section()][spec.name()] = stored[spec.section()][spec.name()];
        } else {
            merged[spec.section()].erase(spec.name());
        }
    }

    const EnsembleMethodInfo& method =
        ensembleMethodInfo(checkpoint.ensemble.config.ensemble.method);
    for (const std::string& key : changedKeys(stored, merged)) {
        if (method.fixedLength && (key == "training.steps" || key == "training.epochs")) {
            throw ConfigError(key, std::string(method.name) +
                                       " planned its cycles over the checkpoint's run length: a "
                                       "resumed run goes on to the same end (leave " +
                                       key + " as stored)");
        }
        if (changeableOnResume(key)) {
            continue;
        }
        if (key == "training.schedule") {
            if (entriesBefore(stored, step) != entriesBefore(merged, step)) {
                throw ConfigError(key, "the entries before the checkpoint's step " +
                                           std::to_string(step) +
                                           " have been applied and cannot change when resuming; "
                                           "entries at later steps can");
            }
            continue;
        }
        throw ConfigError(key, whyNotOnResume(keySpec(key), step));
    }
    if (!set.empty()) {
        merged["training"]["schedule"].push_back(json{{"step", step}, {"set", set}});
    }
    ExperimentConfig resumed = parseConfig(merged);
    keepCheckpointBackend(resumed, checkpoint.ensemble);
    return resumed;
}

void keepCheckpointBackend(ExperimentConfig& config, const LoadedEnsemble& ensemble) {
    config.backend.resumedKind.reset();
    config.backend.resumedReason.clear();
    // backend.gemm = auto keeps the library the CPU's products were computed with (the entry's
    // "gemm"), so that the resumed run computes as the uninterrupted one would have, whatever
    // this build's or CPU's auto rule says; an explicit eigen / openblas, or ENSEMBLE_GEMM,
    // still wins. Where this build lacks OpenBLAS, resolveGemm falls back to Eigen with a note.
    if (const auto e = ensemble.metadata.find("backend");
        config.backend.gemm == GemmChoice::Auto && e != ensemble.metadata.end() && e->is_object() &&
        e->contains("gemm") && (*e)["gemm"].is_string()) {
        GemmChoice kept{};
        if (enumFromName((*e)["gemm"].get<std::string>(), kept)) {
            config.backend.gemm = kept;
        }
    }
    if (config.backend.kind != BackendKind::Auto) {
        return;  // an explicit kind (stored or --set) is what the user asked for
    }
    const auto entry = ensemble.metadata.find("backend");
    if (entry == ensemble.metadata.end() || !entry->is_object() || !entry->contains("kind") ||
        !(*entry)["kind"].is_string()) {
        return;  // written before the decision was recorded: auto decides afresh
    }
    const std::string kind = (*entry)["kind"].get<std::string>();
    if (kind == toString(BackendKind::Cpu)) {
        config.backend.resumedKind = BackendKind::Cpu;
    } else if (kind == toString(BackendKind::Cuda)) {
        config.backend.resumedKind = BackendKind::Cuda;
    }
    if (config.backend.resumedKind && entry->contains("reason") && (*entry)["reason"].is_string()) {
        config.backend.resumedReason = (*entry)["reason"].get<std::string>();
    }
}

void resumeTrainer(Trainer& trainer, const Checkpoint& checkpoint) {
    const DataSplit& data = trainer.data();
    const LoadedEnsemble& e = checkpoint.ensemble;
    const auto sameFloats = [](const std::vector<float>& a, const std::vector<float>& b) {
        return a.size() == b.size() &&
               (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);
    };
    if (data.train.rows != checkpoint.trainRows ||
        !sameFloats(data.normalization.mean, e.normalization.mean) ||
        !sameFloats(data.normalization.std, e.normalization.std)) {
        throw DataError(ErrorKind::Weights,
                        "the train split of " + data.name + " (" + std::to_string(data.train.rows) +
                            " rows) is not the one the checkpoint was trained on (" +
                            e.datasetName + ", " + std::to_string(checkpoint.trainRows) + " rows" +
                            (data.train.rows == checkpoint.trainRows
                                 ? ", other values: its normalisation differs"
                                 : "") +
                            "): a resumed run needs the same data");
    }
    if (trainer.layout().widths() != e.layout.widths() ||
        trainer.layout().members() != e.layout.members()) {
        throw DataError(ErrorKind::Weights,
                        "the checkpoint's model does not match the config's (widths or members)");
    }
    trainer.restoreTrainingState(checkpoint.state);
}

}  // namespace ensemble
