#pragma once

// The config schema: every key a config may hold, written once. Parsing, defaults, the
// "unknown key" error, keys that apply only under a condition, the table in
// docs/configuration.md (checked by tst_config) and the app's form (ranges, tooltips,
// choices) all read this table. Adding a key is one row here plus its use in parseConfig.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/errors.h"
#include "core/json_message.h"
#include "core/named_enum.h"
#include "math/activations.h"
#include "math/likelihood.h"
#include "optim/update_rules.h"
#include "sampling/batch_plan.h"

namespace ensemble {

enum class BackendKind { Auto, Cpu, Cuda };
// backend.math: how the CUDA backend's GEMMs (dense layers and the convolutions' GEMMs)
// multiply. The CPU computes in FP32 whatever this says.
enum class MathMode { Fp32, Tf32 };
// backend.cpu_isa: the x86-64 level the CPU backend's code runs at (backend/cpu_dispatch.h):
// the highest this CPU reaches, or a pinned one.
enum class CpuIsa { Auto, X86_64, X86_64_V2, X86_64_V3, X86_64_V4 };
// backend.gemm: the library behind the CPU backend's large products (backend/gemm_library.h).
enum class GemmChoice { Auto, Eigen, OpenBlas };
// training.adversarial_eps_unit: what one unit of training.adversarial_eps is.
enum class AdversarialEpsUnit {
    Standardised,  // the model's inputs (std 1 on the train rows): one eps for every input
    Range,         // each input column's range over the train rows: eps * (max - min), per column
};

template <>
struct EnumNames<AdversarialEpsUnit> {
    static constexpr EnumName<AdversarialEpsUnit> table[] = {
        {AdversarialEpsUnit::Standardised, "standardised", "Standardised inputs"},
        {AdversarialEpsUnit::Range, "range", "Each input's range"},
    };
};

template <>
struct EnumNames<BootstrapMode> {
    static constexpr EnumName<BootstrapMode> table[] = {
        {BootstrapMode::None, "none", "Same batches"},
        {BootstrapMode::Resample, "resample", "Bootstrap resample"},
        {BootstrapMode::Poisson, "poisson", "Poisson bootstrap"},
        {BootstrapMode::Shuffle, "shuffle", "Own shuffle"},
    };
};

template <>
struct EnumNames<Activation> {
    static constexpr EnumName<Activation> table[] = {
        {Activation::Relu, "relu", "ReLU"},
        {Activation::Tanh, "tanh", "tanh"},
        {Activation::Gelu, "gelu", "GELU"},
    };
};

template <>
struct EnumNames<Likelihood> {
    static constexpr EnumName<Likelihood> table[] = {
        {Likelihood::Categorical, "categorical", "Categorical (classification)"},
        {Likelihood::Gaussian, "gaussian", "Gaussian (mean and variance)"},
        {Likelihood::Mse, "mse", "Mean squared error"},
    };
};

template <>
struct EnumNames<OptimizerKind> {
    static constexpr EnumName<OptimizerKind> table[] = {
        {OptimizerKind::Adam, "adam", "Adam"},
        {OptimizerKind::AdamW, "adamw", "AdamW"},
        {OptimizerKind::Sgd, "sgd", "SGD + momentum"},
    };
};

template <>
struct EnumNames<BackendKind> {
    static constexpr EnumName<BackendKind> table[] = {
        {BackendKind::Auto, "auto", "Auto"},
        {BackendKind::Cpu, "cpu", "CPU"},
        {BackendKind::Cuda, "cuda", "CUDA"},
    };
};

template <>
struct EnumNames<CpuIsa> {
    static constexpr EnumName<CpuIsa> table[] = {
        {CpuIsa::Auto, "auto", "Best for this CPU"},
        {CpuIsa::X86_64, "x86-64", "x86-64 (SSE2)"},
        {CpuIsa::X86_64_V2, "x86-64-v2", "x86-64-v2 (SSE4.2)"},
        {CpuIsa::X86_64_V3, "x86-64-v3", "x86-64-v3 (AVX2, FMA)"},
        {CpuIsa::X86_64_V4, "x86-64-v4", "x86-64-v4 (AVX-512)"},
    };
};

template <>
struct EnumNames<MathMode> {
    static constexpr EnumName<MathMode> table[] = {
        {MathMode::Fp32, "fp32", "FP32"},
        {MathMode::Tf32, "tf32", "TF32 tensor cores"},
    };
};

template <>
struct EnumNames<GemmChoice> {
    static constexpr EnumName<GemmChoice> table[] = {
        {GemmChoice::Auto, "auto", "Automatic"},
        {GemmChoice::Eigen, "eigen", "Eigen"},
        {GemmChoice::OpenBlas, "openblas", "OpenBLAS"},
    };
};

enum class KeyType {
    Integer,     // a whole number in [min, max]
    Number,      // a finite number in [min, max] (min excluded when minExclusive, max when
                 // maxExclusive)
    Seed,        // a non-negative integer (64 bits)
    String,      // any string
    Choice,      // one of `choices`
    Widths,      // a list of integers, each in [min, max]
    PerMember,   // per member: a number, a list of K numbers, or {"log_uniform": [lo, hi]}
    NumberPair,  // [a, b], each in [min, max) (max excluded)
    Schedule,    // [{"step": t, "set": {"<live key>": value, ...}}, ...]
    Layers,      // [{"type": "conv" | "pool" | "dense", ...}, ...] (model/architecture.h)
    Mesh,        // "auto" or {"ensemble": E, "data": D}, each in [min, max]
    Members,     // a list of distinct member indices, each in [0, ensemble.members)
    Boolean      // true or false
};

// The part of a row's range in which a value can train. A value the range accepts but this
// one does not is kept with a warning (configWarnings), not refused: a learning rate of 0 is a
// valid experiment (the members stay as initialised, their evaluation is still a result) but
// almost never the one meant.
struct TrainingRange {
    double min = 0.0;
    double max = 0.0;
    bool minExclusive = false;
    std::string why;  // "a learning rate of 0 leaves every member as initialised"
    bool holds(double value) const {
        return (minExclusive ? value > min : value >= min) && value <= max;
    }
    // "(0, 10000]"
    std::string text() const;
};

// A key applies only when another key (earlier in the table) has one of `values`.
struct Condition {
    std::string key;
    std::vector<std::string> values;
    bool always() const { return key.empty(); }
};

struct KeySpec {
    std::string key;  // dotted: "dataset.n"
    KeyType type;
    nlohmann::json defaultValue;
    std::string help;  // what it means, Markdown (the docs' config table, the app's tooltips)
    double min = 0.0;
    double max = 0.0;
    bool minExclusive = false;
    bool maxExclusive = false;
    std::vector<Choice> choices;  // Choice keys
    Condition when;               // empty: always applies
    // The app applies an edit of this key to the running experiment (at the next step);
    // any other key's edit needs a new run (Reset).
    bool live = false;
    // Where the values that can train lie, when narrower than [min, max].
    std::optional<TrainingRange> trains;

    std::string section() const { return key.substr(0, key.find('.')); }
    std::string name() const { return key.substr(key.find('.') + 1); }
};

// Every key, section by section (dataset, model, ensemble, optimizer, training, backend,
// active).
const std::vector<KeySpec>& configSchema();
const std::vector<std::string>& configSections();

// The row of a dotted key, or null when the schema has none (a person's typo).
const KeySpec* findKeySpec(std::string_view key);
// Whether a key may change during a run through training.schedule (the live per-member
// hyperparameters optimizer.lr, optimizer.momentum, optimizer.weight_decay, and the member
// switches ensemble.switched_off).
inline bool schedulable(const KeySpec& spec) {
    return spec.live && (spec.type == KeyType::PerMember || spec.type == KeyType::Members);
}
// The schedulable keys in table order, "optimizer.lr, ..., ensemble.switched_off" (messages).
std::string schedulableKeysText();
// The row of a dotted key. Throws std::logic_error for a key that is not in the table (a
// programming error, not a user's).
const KeySpec& keySpec(std::string_view key);

// The value of a key in `config`, or its default when absent (nullptr when neither).
const nlohmann::json* valueOrDefault(const nlohmann::json& config, const KeySpec& spec);
// Whether `spec` applies to `config` (its condition's key read with its default).
bool keyApplies(const KeySpec& spec, const nlohmann::json& config);
// "only when `model.kind` is `mlp`" (Markdown) for a conditional key; empty otherwise.
std::string conditionText(const Condition& when, bool markdown);

// The structure check: an object of known sections holding known keys, each applying.
// Throws ConfigError naming the key: unknown section, unknown key (listing the known ones), or
// a key whose condition does not hold ("applies only when model.kind is mlp; it is cnn").
void checkConfigKeys(const nlohmann::json& config);
// `config` with the default of every applicable key that is missing.
nlohmann::json withDefaults(const nlohmann::json& config);
// Removes the keys that do not apply, with a one-line notice each (notices may be null).
void dropInapplicable(nlohmann::json& config, std::vector<std::string>* notices);

// `layer` (a --set list, a --config file over a stored config, a panel edit) over `base`, key
// by key. A key of the base that the layer made inapplicable is dropped with a notice; a key of
// the layer that does not apply is a ConfigError naming the key and the condition.
nlohmann::json overlayConfig(const nlohmann::json& base, const nlohmann::json& layer,
                             std::vector<std::string>* notices);

// The keys whose values differ between two configs (defaults filled in), in table order.
std::vector<std::string> changedKeys(const nlohmann::json& a, const nlohmann::json& b);

// A value the schema accepts but that cannot train (outside its row's TrainingRange).
struct ConfigWarning {
    std::string key;  // where: "optimizer.lr", "optimizer.lr[3]",
                      // "training.schedule[1].set.optimizer.lr"
    std::string
        message;  // "0 cannot train: a learning rate of 0 leaves ... (trains in (0, 10000])"
    std::string text() const { return key + ": " + message; }
};
// The warnings of a config that parses, in table order (then each schedule entry's), one per
// value: a per-member key's number, each member's value of its list, each end of its
// log_uniform range. The CLI prints them on stderr ("warning: ..."), the app beside the field;
// neither refuses the config.
std::vector<ConfigWarning> configWarnings(const nlohmann::json& config);

// The configuration table of docs/configuration.md (Markdown), generated from the schema.
std::string configTableMarkdown();
// The schema as JSON, for tools: [{"key", "type", "default", "min", "max", "choices", "help",
// "only_when", "trains": {"min", "max", "min_exclusive", "why"}}].
nlohmann::json configSchemaJson();
// Help text without Markdown (for tooltips).
std::string plainHelp(const KeySpec& spec);

// Where a dotted key ("optimizer.lr", "model.hidden[1]") is written in a JSON text: the line and
// column (1-based) of its name, or of its closest written parent; zeros when not found.
FilePosition locateKey(std::string_view jsonText, std::string_view dottedKey);

}  // namespace ensemble
