#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "config/active_config.h"
#include "config/config_schema.h"
#include "data/dataset_config.h"
#include "data/dataset_kinds.h"
#include "model/architecture.h"
#include "model/ensemble_methods.h"
#include "model/model_kinds.h"

namespace ensemble {

// The fields of a parsed config, named after their JSON keys. Their defaults, ranges and
// meanings live in one place, the schema (config/config_schema.h); the fields have no initialisers
// of their own, so a config that did not come from parseConfig() is visibly unset.

// The shape the image datasets (mnist, fashion-mnist) give a cnn: [1, 28, 28].
inline constexpr Shape kImageInput{1, 28, 28};

struct ModelConfig {
    ModelKind kind = ModelKind::Mlp;
    std::vector<int> hidden;        // mlp
    std::vector<LayerSpec> layers;  // cnn
    Activation activation = Activation::Relu;
    Likelihood likelihood = Likelihood::Categorical;
    // mc_dropout's rate p, 0 < p < 1 (0 for the other methods: model.dropout does not apply).
    double dropout = 0.0;
};

struct EnsembleConfig {
    int members = 0;
    // How the K members are made (model/ensemble_methods.h); independent: K networks.
    EnsembleMethod method = EnsembleMethod::Independent;
    BootstrapMode bootstrap = BootstrapMode::None;
    uint64_t seed = 0;
    // Members left out of the ensemble's figures from step 0 (ascending, distinct); they train
    // all the same. training.schedule may change the list during the run.
    std::vector<int> switchedOff;
};

// Per-member hyperparameters are resolved to K values (member order) when the config is read.
struct OptimizerConfig {
    OptimizerKind kind = OptimizerKind::Adam;
    std::vector<double> lr;           // K values
    std::vector<double> momentum;     // K values
    std::vector<double> weightDecay;  // K values
    double beta1 = 0.0;
    double beta2 = 0.0;
    double eps = 0.0;
};

// One entry of training.schedule: before step `step`, the members' hyperparameters become these
// (K values each; empty: unchanged), and the switched-off members this list (the whole list,
// ascending; absent: unchanged).
struct ScheduledChange {
    int64_t step = 0;
    std::vector<double> lr;
    std::vector<double> momentum;
    std::vector<double> weightDecay;
    std::optional<std::vector<int>> switchedOff;
};

struct TrainingConfig {
    int batchSize = 0;
    int64_t steps = 0;    // used when epochs == 0
    double epochs = 0.0;  // > 0: train this many passes over the train split instead
    int64_t evalEvery = 0;
    double adversarialEps = 0.0;  // training.adversarial_eps; 0: off
    AdversarialEpsUnit adversarialEpsUnit = AdversarialEpsUnit::Standardised;
    std::vector<ScheduledChange> schedule;  // by step (stable for equal steps)
};

struct BackendConfig {
    BackendKind kind = BackendKind::Auto;
    int threads = 0;                     // 0 = all cores
    int device = 0;                      // CUDA device ordinal
    MathMode math = MathMode::Fp32;      // backend.math: the GPU's GEMMs; the CPU is FP32 always
    CpuIsa cpuIsa = CpuIsa::Auto;        // backend.cpu_isa: the CPU backend's x86-64 level
    GemmChoice gemm = GemmChoice::Auto;  // backend.gemm: the CPU's large products' library
    // Not a key: the backend a resumed run trained on (its checkpoint's metadata "backend"),
    // which `auto` keeps (io/checkpoint.h, keepCheckpointBackend); empty for a new run.
    std::optional<BackendKind> resumedKind;
    std::string resumedReason;  // and why it was chosen then (what its exports record)
    // backend.mesh: E ranks on the ensemble axis x D on the data axis; 0 x 0 is "auto"
    // (E = the rank count, D = 1), resolved at launch when the rank count is known.
    int meshEnsemble = 0;
    int meshData = 0;
    bool meshAuto() const { return meshEnsemble == 0; }
};

struct ExperimentConfig {
    DatasetConfig dataset;
    ModelConfig model;
    EnsembleConfig ensemble;
    OptimizerConfig optimizer;
    TrainingConfig training;
    BackendConfig backend;
    ActiveConfig active;  // classification only (regression configs refuse the section)
    // The config as JSON: exactly the keys that apply, every default filled in. Stored in
    // exported weights and saved by the GUI, so a run can always be repeated exactly.
    nlohmann::json json;

    // Steps the run takes: `training.steps`, or ceil(epochs * N / B) when epochs are given.
    int64_t totalSteps(int64_t trainRows) const;
    // The config an active-learning round on `labels` labelled rows trains with: this one, or,
    // under active.l2_per_label, with every layer's l2 divided by `labels` (Gal et al.'s c / N;
    // `json` keeps the c written).
    ExperimentConfig activeRound(int64_t labels) const;
    // The members switched off after `step` steps: ensemble.switched_off with the schedule's
    // entries at steps <= `step` applied in order (what a run that trained `step` steps and
    // then evaluated leaves out). Ascending.
    std::vector<int> switchedOffAt(int64_t step) const;
    // Per member (K flags): 1 unless switched off after `step` steps.
    std::vector<uint8_t> switchedOnAt(int64_t step) const;
};

// The members' architecture for inputs of shape `input` and a dataset of `classes` classes:
// model.hidden's dense layers (mlp) or model.layers (cnn), then the head, as wide as the
// likelihood needs (headOutputs). Throws ConfigError naming the layer and field when the layers
// do not fit the input.
Architecture modelArchitecture(const ModelConfig& model, Shape input, int classes);

// The default configuration: every key that applies, at its default.
nlohmann::json defaultConfigJson();

// Reads and validates a config. Throws ConfigError naming the key for unknown keys, keys that
// do not apply (model.hidden with another model.kind), wrong types and out-of-range values.
// Missing keys that apply take their defaults.
ExperimentConfig parseConfig(const nlohmann::json& json);

// What ensemble.method asks of the rest (config/method_config.cpp, from the method's row in
// model/ensemble_methods.h): a one-network method refuses per-member optimizer values,
// bootstrap modes and (when it owns the learning rate) schedule entries of optimizer.lr; a
// method whose members share their training refuses an ensemble axis in backend.mesh.
// parseConfig calls it. Throws ConfigError naming the key.
void checkEnsembleMethod(const ExperimentConfig& config);

// Resolves a change of live keys (`set`: {"optimizer.lr": 0.05, ...}) against a parsed config's
// JSON (its members, its other values), as an entry of training.schedule at `step`. Throws
// ConfigError naming `where` ("training.schedule[2]") and the key.
ScheduledChange parseScheduledChange(const nlohmann::json& configJson, int64_t step,
                                     const nlohmann::json& set, const std::string& where);

// Applies one `--set key=value` override to `json` in place: `key` is dotted
// (`ensemble.members`); the value is read as JSON when it parses, else as a string.
void applyOverride(nlohmann::json& json, const std::string& assignment);

// Loads a config from a file path or a built-in preset name (resources/presets/<name>.json).
// Throws ConfigError when it is neither, and when the file is not valid JSON (kind Json, with the
// file, line and column where parsing stopped).
nlohmann::json loadConfigJson(const std::string& fileOrPreset);

// A config built the way the CLI and the app build one: a file or preset (the base), then a
// list of `--set` assignments as one layer over it.
struct ComposedConfig {
    nlohmann::json json;               // the merged config (not yet validated)
    std::vector<std::string> notices;  // base keys the overrides made inapplicable, dropped
    std::string origin;                // the file (empty for a preset or no --config)
    std::string text;                  // the file's text, to locate keys in it
    nlohmann::json overrides;          // the --set layer
};
// `fileOrPreset` may be empty (no base). Throws ConfigError for a malformed or inapplicable
// --set, and what loadConfigJson throws.
ComposedConfig composeConfig(const std::string& fileOrPreset,
                             const std::vector<std::string>& assignments);
// composeConfig of a config file's text already in memory (the fuzz target, no file needed);
// `origin` stands for the file's name in messages and positions.
ComposedConfig composeConfigText(std::string text, const std::string& origin,
                                 const std::vector<std::string>& assignments);
// parseConfig of a composed config; a ConfigError about a key written in the file (and not
// overridden) carries the file's name, line and column.
ExperimentConfig parseConfig(const ComposedConfig& composed);

// Names of the built-in presets, sorted.
std::vector<std::string> presetNames();
// A built-in preset's JSON text, or empty when there is none by that name.
std::string presetText(const std::string& name);

}  // namespace ensemble
