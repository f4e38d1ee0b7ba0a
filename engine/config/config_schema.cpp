// The config schema's table (every key once: type, default, range, help, condition) and what
// reads it generically: defaults, conditions, overlays and key positions in a file. Typed
// parsing is config.cpp; the docs' table and the JSON schema are config_docs.cpp. One piece:
// the table is the single place every key is declared, and its readers walk it.
#include "config/config_schema.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <map>
#include <stdexcept>
#include <string_view>
#include <unordered_map>

#include "config/active_config.h"
#include "data/bundled_data.h"
#include "data/dataset_kinds.h"
#include "model/architecture.h"
#include "model/ensemble_methods.h"
#include "model/model_kinds.h"

namespace ensemble {

namespace {

using nlohmann::json;

// Row builders: one call per key keeps the table readable.
KeySpec row(const char* key, KeyType type, json defaultValue, const char* help, double min = 0.0,
            double max = 0.0) {
    KeySpec k;
    k.key = key;
    k.type = type;
    k.defaultValue = std::move(defaultValue);
    k.help = help;
    k.min = min;
    k.max = max;
    return k;
}

KeySpec choice(const char* key, const char* defaultName, std::vector<Choice> choices,
               const char* help) {
    KeySpec k = row(key, KeyType::Choice, defaultName, help);
    k.choices = std::move(choices);
    return k;
}

KeySpec onlyWhen(KeySpec k, const char* key, std::vector<std::string> values) {
    k.when = {key, std::move(values)};
    return k;
}

KeySpec live(KeySpec k) {
    k.live = true;
    return k;
}

KeySpec exclusiveMin(KeySpec k) {
    k.minExclusive = true;
    return k;
}

// A row whose values from `min` up to its max train; the rest of its range warns (TrainingRange).
KeySpec trainsAbove(KeySpec k, double min, const char* why) {
    k.trains = TrainingRange{min, k.max, true, why};
    return k;
}

KeySpec exclusiveRange(KeySpec k) {
    k.minExclusive = true;
    k.maxExclusive = true;
    return k;
}

std::vector<KeySpec> buildSchema() {
    using T = KeyType;
    const double maxSteps = static_cast<double>(int64_t{1} << 40);
    std::vector<KeySpec> s = {
        // Dataset.
        choice("dataset.kind", "spirals", choicesOf<DatasetKind>(),
               "2-D generators, the regression generators `cubic`, `sine` and `linear`, a `csv` "
               "file, the image datasets, or the shipped `uci` tables (see Datasets below)"),
        row("dataset.n", T::Integer, 1000, "points generated (generated kinds)", 4, 50'000'000),
        row("dataset.noise", T::Number, 0.05,
            "std of the Gaussian noise on both coordinates (2-D kinds; blobs: the std of each "
            "blob); cubic and linear: the std of the target's noise (sine: not used, its noise "
            "is 0.05 + 0.15 |x|)",
            0, 100),
        onlyWhen(row("dataset.features", T::Integer, 1, "linear: the number of input features d", 1,
                     10000),
                 "dataset.kind", {toString(DatasetKind::Linear)}),
        row("dataset.rotations", T::Number, 1.0, "spirals: turns of each arm", 0, 100),
        row("dataset.classes", T::Integer, 2, "blobs: number of classes", 2, 1000),
        row("dataset.test_fraction", T::Number, 0.2,
            "held-out share when there is no separate test file (seeded shuffle)", 0, 0.95),
        row("dataset.seed", T::Seed, 0, "generation and split"),
        row("dataset.path", T::String, "",
            "csv: the file; mnist / fashion-mnist: the folder (empty: the default folders below)"),
        row("dataset.test_path", T::String, "",
            "csv: a separate test file (then `test_fraction` is not used)"),
        row("dataset.limit", T::Integer, 0, "use only the first `limit` train rows (0: all)", 0,
            1e9),
        onlyWhen(choice("dataset.task", "classification", choicesOf<DataTask>(),
                        "csv: `classification` (an integer `label` column) or `regression` (a "
                        "numeric target column, `dataset.target`)"),
                 "dataset.kind", {toString(DatasetKind::Csv)}),
        onlyWhen(row("dataset.target", T::String, "y", "the name of the CSV's target column"),
                 "dataset.task", {toString(DataTask::Regression)}),
        onlyWhen(choice("dataset.uci_set", "concrete", choicesOf<UciSet>(),
                        "uci: the table (UCI Machine Learning Repository, CC BY 4.0; see "
                        "Datasets below); its last column is the target. Deep Ensembles' "
                        "protocol holds out `test_fraction` 0.1"),
                 "dataset.kind", {toString(DatasetKind::Uci)}),
        // Model.
        choice("model.kind", "mlp", choicesOf<ModelKind>(),
               "the members' architecture: `mlp`, dense layers of widths `model.hidden`; `cnn`, "
               "the layer stack `model.layers` on [1, 28, 28] images (mnist, fashion-mnist)"),
        onlyWhen(row("model.hidden", T::Widths, json::array({32, 32}),
                     "hidden layer widths (any number of layers; `[]`: a linear model)", 1, 65536),
                 "model.kind", {toString(ModelKind::Mlp)}),
        onlyWhen(row("model.layers", T::Layers, layersToJson(recipeLayers()),
                     "the layers in order: `{\"type\": \"conv\", \"filters\": F, \"kernel\": k, "
                     "\"stride\": 1, \"padding\": \"same\"}` (padding `same` or `valid`), "
                     "`{\"type\": \"pool\", \"kind\": \"avg\", \"size\": s}` (kind `avg` or "
                     "`max`, stride s), `{\"type\": \"dense\", \"units\": U, \"l2\": 0}` "
                     "(`l2` c >= 0, optional: c x sum(W^2) of its weights, not its bias, added "
                     "to each member's loss, Keras's `l2(c)`; part of the gradient under every "
                     "optimizer; training only) or "
                     "`{\"type\": \"dropout\", \"rate\": p}` (inverted dropout of its "
                     "input in training under every method, p in [0, 1); the identity at "
                     "prediction; not first). `model.activation` follows every conv and hidden "
                     "dense, the input is flattened (channel, row, column) before the first "
                     "dense, and the output layer is implicit. Default: Flax's MNIST CNN"),
                 "model.kind", {toString(ModelKind::Cnn)}),
        choice("model.activation", "relu", choicesOf<Activation>(),
               "activation of the hidden layers (`gelu`: the exact erf form)"),
        choice("model.likelihood", "categorical", choicesOf<Likelihood>(),
               "the head: `categorical` (classification: softmax cross-entropy), `gaussian` "
               "(regression: outputs the mean and the variance softplus(raw) + 1e-6, trained "
               "with the Gaussian NLL), `mse` (regression: outputs the mean, trained with the "
               "squared error); regression datasets need `gaussian` or `mse`, classification "
               "ones `categorical`"),
        // Ensemble.
        row("ensemble.members", T::Integer, 8, "K, the number of members", 1, 100000),
        choice("ensemble.method", "independent", choicesOf<EnsembleMethod>(),
               "how the K members are made: `independent`: K networks trained independently; "
               "`snapshot`: one network under K cosine learning-rate cycles, member k taken at "
               "the end of cycle k; `mc_dropout`: one network trained with dropout, member k "
               "the network under its own fixed dropout mask; `batchensemble`: one shared "
               "weight per layer, member k's weight the shared one times its rank-1 fast "
               "weights s_k r_k^T (docs/methods.md)"),
        // After ensemble.method: a condition reads an earlier key.
        onlyWhen(exclusiveRange(row("model.dropout", T::Number, 0.1,
                                    "the dropout rate p: after each hidden layer's activation a "
                                    "unit (a channel of a conv layer) is kept with probability "
                                    "1 - p and scaled by 1/(1 - p) in training; member k keeps "
                                    "its own fixed mask at prediction (docs/methods.md). Not "
                                    "used when model.layers has dropout layers: mc_dropout "
                                    "then drops there, each at its own rate",
                                    0, 1)),
                 "ensemble.method", {toString(EnsembleMethod::McDropout)}),
        choice("ensemble.bootstrap", "none", choicesOf<BootstrapMode>(),
               "`none`: all members see the same batches; `resample`: member k trains on its own "
               "bootstrap resample; `poisson`: same batches, per-member Poisson(1) example "
               "weights fixed per row; `shuffle`: every row once an epoch, member k in its own "
               "order (Deep Ensembles' members)"),
        row("ensemble.seed", T::Seed, 0, "initialisation, batch order, resamples, Poisson weights"),
        live(row("ensemble.switched_off", T::Members, json::array(),
                 "members left out of the ensemble, by index from 0 (`[2, 5]`): its average, "
                 "the ensemble's metrics, the report and `eval` leave them out; they still "
                 "train, so the weights are those of a run with every member on. The app's "
                 "member switches set it; a switch during a run is recorded in "
                 "`training.schedule`")),
        // Optimizer.
        choice("optimizer.kind", "adam", choicesOf<OptimizerKind>(), "the update rule (PyTorch's)"),
        live(trainsAbove(row("optimizer.lr", T::PerMember, 0.01,
                             "per member: a number, a list of K numbers, or `{\"log_uniform\": "
                             "[lo, hi]}` (K log-spaced values in member order)",
                             0, 1e4),
                         0, "a learning rate of 0 leaves the member as initialised")),
        live(row("optimizer.momentum", T::PerMember, 0.9, "per member (SGD only)", 0, 0.9999)),
        live(row("optimizer.weight_decay", T::PerMember, 0.0,
                 "per member; L2 added to the gradient for adam and sgd, decoupled for adamw", 0,
                 10)),
        row("optimizer.betas", T::NumberPair, json::array({0.9, 0.999}), "Adam's beta1, beta2", 0,
            1),
        exclusiveMin(row("optimizer.eps", T::Number, 1e-8, "Adam's epsilon", 0, 1)),
        // Training.
        row("training.batch_size", T::Integer, 32, "rows per step per member", 1, 1 << 20),
        live(row("training.steps", T::Integer, 2000, "steps to train (used when `epochs` is 0)", 0,
                 maxSteps)),
        live(row("training.epochs", T::Number, 0,
                 "when > 0: train ceil(epochs * N / batch) steps instead", 0, 1e6)),
        row("training.adversarial_eps", T::Number, 0,
            "adversarial training (Deep Ensembles, after Goodfellow et al.): when > 0 every step "
            "trains each member on loss(x) + loss(x + eps * sign(dloss/dx)), the adversarial "
            "inputs from the member's own current parameters; eps in standardised input units "
            "(the inputs have std 1; see `training.adversarial_eps_unit`); 0: off. MLP members "
            "only",
            0, 100),
        choice("training.adversarial_eps_unit", "standardised", choicesOf<AdversarialEpsUnit>(),
               "the unit of `training.adversarial_eps`: `standardised`, the model's inputs (one "
               "eps for every input); `range`, each input column's range (max - min) over the "
               "train rows, so input f moves by eps * range_f in its own units (Deep Ensembles: "
               "eps 0.01, 1 % of each input's range); a constant column does not move. The CPU "
               "backend"),
        row("training.schedule", T::Schedule, json::array(),
            "changes during the run: `[{\"step\": 500, \"set\": {\"optimizer.lr\": 0.001}}]` "
            "sets the learning rate (per member, in any form `optimizer.lr` takes) before step "
            "500; `optimizer.lr`, `optimizer.momentum`, `optimizer.weight_decay` and "
            "`ensemble.switched_off` can change (an entry's `ensemble.switched_off` is the whole "
            "list of members off from that step on). The app records its live edits and member "
            "switches here, so the CLI replays them; entries at the last step apply before the "
            "final evaluation"),
        row("training.eval_every", T::Integer, 100,
            "evaluate (per-member and ensemble loss and accuracy on train and test) every N "
            "steps; 0: only at the end",
            0, maxSteps),
        // Backend.
        choice("backend.kind", "auto", choicesOf<BackendKind>(),
               "`auto`: the faster of CPU and CUDA for this run, by a cost model of its size "
               "calibrated "
               "once per machine (`ensemble-cli bench --calibrate-auto`); the CPU when no GPU is "
               "usable. The choice and its reason are logged and stored in exports"),
        row("backend.threads", T::Integer, 0, "CPU threads (0: all cores)", 0, 1024),
        choice("backend.cpu_isa", "auto", choicesOf<CpuIsa>(),
               "the x86-64 level the CPU backend's code runs at: `auto` (the highest this CPU "
               "reaches, of those the build carries) or a pinned one, for comparisons bit for "
               "bit; a level above the CPU's is an error. The environment variable "
               "`ENSEMBLE_CPU_ISA` pins `auto` too. The backend's name records the level"),
        row("backend.device", T::Integer, 0, "CUDA device ordinal", 0, 64),
        choice("backend.math", "fp32", choicesOf<MathMode>(),
               "how the GPU multiplies (the dense layers' and the convolutions' GEMMs): `fp32` "
               "(IEEE single precision, within the parity bounds of the CPU) or `tf32` (tensor "
               "cores: inputs rounded to a 10-bit mantissa, FP32 sums; PyTorch's default for "
               "convolutions). The CPU computes in FP32 whatever this says; a `tf32` run on the "
               "CPU (`backend.kind` `cpu`, or `auto` picking the CPU) says so once"),
        choice("backend.gemm", "auto", choicesOf<GemmChoice>(),
               "the library behind the CPU backend's large products (the MNIST MLP's layers, "
               "the CNN's convolutions): `eigen` (built for the engine's instruction set), "
               "`openblas` (OpenBLAS's sgemm, which picks AVX2 / AVX-512 kernels by the CPU it "
               "runs on; Eigen with a note where the build has no OpenBLAS) or `auto` (OpenBLAS "
               "when the engine was built for narrower vectors than the CPU has, as the Debian "
               "package is, else Eigen). Both run one thread per member task. The environment "
               "variable `ENSEMBLE_GEMM` overrides it; the library used is in the backend's name "
               "and the checkpoint, and `--resume` under `auto` keeps the checkpoint's"),
        row("backend.mesh", T::Mesh, "auto",
            "the MPI mesh under `mpirun -n R`: `\"auto\"` (every rank on the ensemble axis: "
            "E = R, D = 1) or `{\"ensemble\": E, \"data\": D}` with E × D = R, checked at "
            "launch; rank e trains members [eK/E, (e+1)K/E). Without `mpirun` (one rank) a "
            "mesh other than `\"auto\"` is ignored with a notice",
            1, 65536),
        // Active learning (docs/active.md): classification data only.
        onlyWhen(row("active.initial", T::Integer, 20,
                     "labelled train rows at the start, balanced over the classes (seeded by "
                     "`ensemble.seed`); the rest of the train split is the pool",
                     1, 1e8),
                 "model.likelihood", {toString(Likelihood::Categorical)}),
        onlyWhen(row("active.per_round", T::Integer, 10,
                     "rows acquired (labelled) per round: the pool's highest scores", 1, 1e8),
                 "model.likelihood", {toString(Likelihood::Categorical)}),
        onlyWhen(row("active.steps", T::Integer, 500,
                     "training steps per round when `active.epochs` is 0 (`training.steps` "
                     "and `training.epochs` are not used by the loop)",
                     1, maxSteps),
                 "model.likelihood", {toString(Likelihood::Categorical)}),
        onlyWhen(row("active.epochs", T::Integer, 0,
                     "when > 0: each round trains ceil(N / `training.batch_size`) x epochs "
                     "steps instead of `active.steps`, N the labelled rows that round (Gal et "
                     "al.'s `nb_epoch`); 0: `active.steps`",
                     0, 1e6),
                 "model.likelihood", {toString(Likelihood::Categorical)}),
        onlyWhen(choice("active.retrain", "scratch", choicesOf<ActiveRetrain>(),
                        "`scratch`: every round re-initialises the members from "
                        "`ensemble.seed` and trains the round's steps (`active.steps`, or "
                        "`active.epochs` over the labelled rows); `warm`: every round "
                        "continues the last round's weights and optimizer state for as many "
                        "more"),
                 "model.likelihood", {toString(Likelihood::Categorical)}),
        onlyWhen(row("active.l2_per_label", T::Boolean, false,
                     "`true`: each round divides every dense layer's `l2` (`model.layers`) by "
                     "N, the labelled rows that round (Gal et al.'s c / N, c = 3.5); `false`: "
                     "the layers' `l2` as written"),
                 "model.likelihood", {toString(Likelihood::Categorical)}),
        onlyWhen(row("active.pool_subset", T::Integer, 0,
                     "score only a random subset of this many pool rows each round (redrawn "
                     "every round, seeded); 0: the whole pool",
                     0, 1e9),
                 "model.likelihood", {toString(Likelihood::Categorical)}),
        onlyWhen(choice("active.acquisition", "bald", choicesOf<Acquisition>(),
                        "how the pool is scored: `random`, `entropy` H[p], `bald` (mutual "
                        "information), `variation_ratios`, `margin`, `batchbald` (the greedy "
                        "batch of the largest joint mutual information; docs/active.md); the "
                        "app's choice (`ensemble-cli active` takes its list from "
                        "`--acquisition`)"),
                 "model.likelihood", {toString(Likelihood::Categorical)}),
        onlyWhen(row("active.rounds", T::Integer, 10,
                     "acquisition rounds after the initial one (each labels `active.per_round` "
                     "rows and retrains)",
                     0, 1e7),
                 "model.likelihood", {toString(Likelihood::Categorical)}),
        onlyWhen(row("active.batchbald_samples", T::Integer, 1000,
                     "`batchbald`: M, the joint label configurations it samples once the exact "
                     "joint of the batch so far (C^n configurations) would hold more than M; "
                     "the cost per candidate row is at most M x C x K",
                     1, 1e6),
                 "model.likelihood", {toString(Likelihood::Categorical)}),
        onlyWhen(exclusiveMin(row("active.class_cap", T::Number, 1.0,
                                  "class-balanced acquisition: the largest share of a round's "
                                  "picks one class may take, by the ensemble's predicted label "
                                  "(at least one pick a class); 1: no cap",
                                  0, 1)),
                 "model.likelihood", {toString(Likelihood::Categorical)}),
    };
    // A condition reads a key that comes earlier, so one pass in table order decides them all.
    for (std::size_t i = 0; i < s.size(); ++i) {
        if (s[i].when.always()) {
            continue;
        }
        const auto earlier = std::find_if(s.begin(), s.begin() + static_cast<std::ptrdiff_t>(i),
                                          [&](const KeySpec& k) { return k.key == s[i].when.key; });
        if (earlier == s.begin() + static_cast<std::ptrdiff_t>(i)) {
            throw std::logic_error("config schema: " + s[i].key + " depends on " + s[i].when.key +
                                   ", which is not an earlier key");
        }
    }
    return s;
}

const json* find(const json& config, const std::string& section, const std::string& name) {
    if (!config.is_object()) {
        return nullptr;
    }
    const auto s = config.find(section);
    if (s == config.end() || !s->is_object()) {
        return nullptr;
    }
    const auto k = s->find(name);
    return k == s->end() ? nullptr : &*k;
}

std::string valueText(const json& v) {
    return v.is_string() ? v.get<std::string>() : jsonForMessage(v);
}

}  // namespace

const std::vector<KeySpec>& configSchema() {
    static const std::vector<KeySpec> schema = buildSchema();
    return schema;
}

const std::vector<std::string>& configSections() {
    static const std::vector<std::string> sections = [] {
        std::vector<std::string> out;
        for (const KeySpec& k : configSchema()) {
            if (std::find(out.begin(), out.end(), k.section()) == out.end()) {
                out.push_back(k.section());
            }
        }
        return out;
    }();
    return sections;
}

std::string schedulableKeysText() {
    std::string out;
    for (const KeySpec& k : configSchema()) {
        if (schedulable(k)) {
            out += (out.empty() ? "" : ", ") + k.key;
        }
    }
    return out;
}

const KeySpec* findKeySpec(std::string_view key) {
    // keyApplies and withDefaults look up deciders for every row of every config: an index
    // instead of a scan of the table (the config fuzz target spent a third of its time here).
    static const std::unordered_map<std::string_view, const KeySpec*> index = [] {
        std::unordered_map<std::string_view, const KeySpec*> out;
        for (const KeySpec& k : configSchema()) {
            out.emplace(k.key, &k);
        }
        return out;
    }();
    const auto it = index.find(key);
    return it != index.end() ? it->second : nullptr;
}

const KeySpec& keySpec(std::string_view key) {
    const KeySpec* spec = findKeySpec(key);
    if (spec == nullptr) {
        throw std::logic_error("config schema has no key " + std::string(key));
    }
    return *spec;
}

const json* valueOrDefault(const json& config, const KeySpec& spec) {
    const json* v = find(config, spec.section(), spec.name());
    return v != nullptr ? v : &spec.defaultValue;
}

bool keyApplies(const KeySpec& spec, const json& config) {
    if (spec.when.always()) {
        return true;
    }
    const KeySpec& decider = keySpec(spec.when.key);
    if (!keyApplies(decider, config)) {
        return false;
    }
    const json* v = valueOrDefault(config, decider);
    const std::string text = valueText(*v);
    return std::find(spec.when.values.begin(), spec.when.values.end(), text) !=
           spec.when.values.end();
}

std::string conditionText(const Condition& when, bool markdown) {
    if (when.always()) {
        return {};
    }
    const std::string q = markdown ? "`" : "";
    std::string values;
    for (std::size_t i = 0; i < when.values.size(); ++i) {
        values +=
            (i == 0 ? "" : (i + 1 == when.values.size() ? " or " : ", ")) + q + when.values[i] + q;
    }
    return "only when " + q + when.key + q + " is " + values;
}

void checkConfigKeys(const json& config) {
    if (!config.is_object()) {
        throw ConfigError("config", "expected a JSON object, got " + jsonForMessage(config));
    }
    const auto& sections = configSections();
    for (auto it = config.begin(); it != config.end(); ++it) {
        if (std::find(sections.begin(), sections.end(), it.key()) == sections.end()) {
            std::string list;
            for (std::size_t i = 0; i < sections.size(); ++i) {
                list += (i == 0 ? "" : (i + 1 == sections.size() ? " or " : ", ")) + sections[i];
            }
            throw ConfigError(it.key(), "unknown section (expected " + list + ")");
        }
        if (!it.value().is_object()) {
            throw ConfigError(it.key(), "expected an object, got " + jsonForMessage(it.value()));
        }
        for (auto kv = it.value().begin(); kv != it.value().end(); ++kv) {
            const std::string key = it.key() + "." + kv.key();
            const KeySpec* spec = findKeySpec(key);
            if (spec == nullptr) {
                std::vector<std::string> known;
                for (const KeySpec& k : configSchema()) {
                    if (k.section() == it.key()) {
                        known.push_back(k.name());
                    }
                }
                std::sort(known.begin(), known.end());
                std::string list;
                for (const std::string& k : known) {
                    list += (list.empty() ? "" : ", ") + k;
                }
                throw ConfigError(key, "unknown key (known: " + list + ")");
            }
            if (!keyApplies(*spec, config)) {
                const KeySpec& decider = keySpec(spec->when.key);
                throw ConfigError(key, "applies " + conditionText(spec->when, false) + ", and " +
                                           decider.key + " is " +
                                           valueText(*valueOrDefault(config, decider)));
            }
        }
    }
}

json withDefaults(const json& config) {
    json out = config.is_object() ? config : json::object();
    for (const KeySpec& k : configSchema()) {
        if (!out.contains(k.section())) {
            out[k.section()] = json::object();
        }
        json& section = out[k.section()];
        if (!section.is_object()) {
            continue;  // checkConfigKeys reports it
        }
        if (!section.contains(k.name()) && keyApplies(k, out)) {
            section[k.name()] = k.defaultValue;
        }
    }
    // A section none of whose keys apply (active for regression data) is left out, not kept
    // empty, so a config holds the same sections however it was written.
    for (const std::string& name : configSections()) {
        if (out[name].is_object() && out[name].empty()) {
            out.erase(name);
        }
    }
    return out;
}

void dropInapplicable(json& config, std::vector<std::string>* notices) {
    if (!config.is_object()) {
        return;
    }
    // Table order: a key dropped here cannot revive one that comes later.
    for (const KeySpec& k : configSchema()) {
        if (find(config, k.section(), k.name()) != nullptr && !keyApplies(k, config)) {
            config[k.section()].erase(k.name());
            if (notices != nullptr) {
                const KeySpec& decider = keySpec(k.when.key);
                notices->push_back(k.key + " dropped: it applies " + conditionText(k.when, false) +
                                   ", and " + decider.key + " is now " +
                                   valueText(*valueOrDefault(config, decider)));
            }
        }
    }
}

json overlayConfig(const json& base, const json& layer, std::vector<std::string>* notices) {
    json merged = base.is_object() ? base : json::object();
    if (!layer.is_object()) {
        checkConfigKeys(layer);  // throws: not an object
    }
    for (auto s = layer.begin(); s != layer.end(); ++s) {
        if (!s.value().is_object() || !merged[s.key()].is_object()) {
            merged[s.key()] = s.value();
            continue;
        }
        for (auto kv = s.value().begin(); kv != s.value().end(); ++kv) {
            merged[s.key()][kv.key()] = kv.value();  // a value replaces, never merges
        }
    }
    // The layer's own keys must apply; the base's are dropped when the layer ruled them out.
    for (const KeySpec& k : configSchema()) {
        if (find(layer, k.section(), k.name()) != nullptr &&
            find(merged, k.section(), k.name()) != nullptr && !keyApplies(k, merged)) {
            const KeySpec& decider = keySpec(k.when.key);
            throw ConfigError(k.key, "applies " + conditionText(k.when, false) + ", and " +
                                         decider.key + " is " +
                                         valueText(*valueOrDefault(merged, decider)));
        }
    }
    dropInapplicable(merged, notices);
    return merged;
}

std::vector<std::string> changedKeys(const json& a, const json& b) {
    const json fullA = withDefaults(a);
    const json fullB = withDefaults(b);
    std::vector<std::string> out;
    for (const KeySpec& k : configSchema()) {
        const json* x = find(fullA, k.section(), k.name());
        const json* y = find(fullB, k.section(), k.name());
        if ((x == nullptr) != (y == nullptr) || (x != nullptr && *x != *y)) {
            out.push_back(k.key);
        }
    }
    return out;
}

FilePosition locateKey(std::string_view text, std::string_view dottedKey) {
    // The key's path: "optimizer.lr.log_uniform[0]" -> optimizer, lr, log_uniform (indices are
    // inside a value; the position of the name that holds them is close enough).
    std::vector<std::string> target;
    std::string part;
    bool inIndex = false;
    for (char c : dottedKey) {
        if (c == '[') {
            inIndex = true;
        } else if (c == ']') {
            inIndex = false;
        } else if (c == '.' && !inIndex) {
            target.push_back(part);
            part.clear();
        } else if (!inIndex) {
            part += c;
        }
    }
    if (!part.empty()) {
        target.push_back(part);
    }
    // A small scanner over the JSON text: a stack of the object keys we are inside, and for
    // each string that is followed by ':' the path it names.
    FilePosition best;
    std::size_t bestDepth = 0;
    std::vector<std::string> path;  // names of the enclosing members; "" for arrays
    std::vector<char> open;         // '{' or '['
    int64_t line = 1;
    int64_t column = 1;
    std::string lastString;
    int64_t lastLine = 0;
    int64_t lastColumn = 0;
    bool haveString = false;
    for (std::size_t i = 0; i < text.size(); ++i) {
        const char c = text[i];
        if (c == '"') {
            const int64_t startLine = line;
            const int64_t startColumn = column;
            // One buffer for every string of the text, not an allocation each.
            lastString.clear();
            ++i;
            ++column;
            while (i < text.size() && text[i] != '"') {
                if (text[i] == '\\' && i + 1 < text.size()) {
                    ++i;
                    ++column;
                }
                lastString += text[i];
                ++i;
                ++column;
            }
            ++column;
            lastLine = startLine;
            lastColumn = startColumn;
            haveString = true;
            continue;
        }
        if (c == '\n') {
            ++line;
            column = 1;
            continue;
        }
        ++column;
        if (c == ':' && haveString && !open.empty() && open.back() == '{') {
            // lastString is a member name at depth open.size().
            const std::size_t depth = open.size();
            path.resize(depth);
            path[depth - 1] = lastString;
            std::size_t match = 0;
            while (match < depth && match < target.size() && path[match] == target[match]) {
                ++match;
            }
            if (match == depth && depth > bestDepth) {
                best = {"", lastLine, lastColumn};
                bestDepth = depth;
            }
        } else if (c == '{' || c == '[') {
            open.push_back(c);
        } else if (c == '}' || c == ']') {
            if (!open.empty()) {
                open.pop_back();
            }
            path.resize(std::min(path.size(), open.size()));
        }
        if (c != ' ' && c != '\t' && c != '\r') {
            haveString = false;
        }
    }
    return best;
}

}  // namespace ensemble
