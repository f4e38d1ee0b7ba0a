// The config schema's table: every key once, with its type, default, range, help and the
// condition under which it applies (configSchema()). The single place a key is declared; its
// generic readers are config_schema.cpp.
#include <algorithm>
#include <stdexcept>

#include "config/active_config.h"
#include "config/config_schema.h"
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

}  // namespace

const std::vector<KeySpec>& configSchema() {
    static const std::vector<KeySpec> schema = buildSchema();
    return schema;
}

}  // namespace ensemble
