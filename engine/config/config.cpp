// From JSON to ExperimentConfig: typed values checked against the schema's rows, per-member
// hyperparameters and the schedule. Kept whole because every reader checks a value against
// its row and reports errors the same way (key and reason); where the JSON comes from (files,
// presets, --set) is config_compose.cpp, the schema itself config_schema_table.cpp.
#include "config/config.h"
#include "core/unreachable.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <tuple>

#include "config/config_schema.h"
#include "core/errors.h"
#include "model/architecture.h"
#include "model/dropout_masks.h"
#include "model/ensemble_methods.h"

namespace ensemble {

namespace {

using nlohmann::json;

std::string integerRange(const KeySpec& spec) {
    return "[" + std::to_string(static_cast<int64_t>(spec.min)) + ", " +
           std::to_string(static_cast<int64_t>(spec.max)) + "]";
}

double checkedNumber(const json& v, const std::string& key, double lo, double hi, bool openLo,
                     bool openHi = false) {
    if (!v.is_number()) {
        throw ConfigError(key, "expected a number, got " + jsonForMessage(v));
    }
    const double value = v.get<double>();
    if (!std::isfinite(value) || value < lo || value > hi || (openLo && value == lo) ||
        (openHi && value == hi)) {
        std::ostringstream os;
        os << "expected a number in " << (openLo ? "(" : "[") << lo << ", " << hi
           << (openHi ? ")" : "]") << ", got " << value;
        throw ConfigError(key, os.str());
    }
    return value;
}

// Typed, validated reads of a config whose keys were checked and defaults filled. Each read
// takes its range, choices and messages from the key's schema row.
class ConfigValues {
  public:
    explicit ConfigValues(const json& root) : m_root(root) {}

    const json& raw(const KeySpec& spec) const {
        const json* v = valueOrDefault(m_root, spec);
        return *v;
    }

    int64_t integer(std::string_view key) const {
        const KeySpec& spec = expect(key, KeyType::Integer);
        const json& v = raw(spec);
        int64_t value = 0;
        if (v.is_number_integer()) {
            value = v.get<int64_t>();
        } else if (v.is_number_float() && std::floor(v.get<double>()) == v.get<double>() &&
                   std::abs(v.get<double>()) < 9e15) {
            value = static_cast<int64_t>(v.get<double>());
        } else {
            throw ConfigError(spec.key, "expected an integer, got " + jsonForMessage(v));
        }
        if (value < static_cast<int64_t>(spec.min) || value > static_cast<int64_t>(spec.max)) {
            throw ConfigError(spec.key, "expected an integer in " + integerRange(spec) + ", got " +
                                            std::to_string(value));
        }
        return value;
    }

    double number(std::string_view key) const {
        const KeySpec& spec = expect(key, KeyType::Number);
        return checkedNumber(raw(spec), spec.key, spec.min, spec.max, spec.minExclusive,
                             spec.maxExclusive);
    }

    bool boolean(std::string_view key) const {
        const KeySpec& spec = expect(key, KeyType::Boolean);
        const json& v = raw(spec);
        if (!v.is_boolean()) {
            throw ConfigError(spec.key, "expected true or false, got " + jsonForMessage(v));
        }
        return v.get<bool>();
    }

    uint64_t seed(std::string_view key) const {
        const KeySpec& spec = expect(key, KeyType::Seed);
        const json& v = raw(spec);
        if (v.is_number_unsigned() || (v.is_number_integer() && v.get<int64_t>() >= 0)) {
            return v.get<uint64_t>();
        }
        throw ConfigError(spec.key, "expected a non-negative integer, got " + jsonForMessage(v));
    }

    std::string text(std::string_view key) const {
        const KeySpec& spec = expect(key, KeyType::String);
        return stringOf(spec);
    }

    std::string choice(std::string_view key) const {
        const KeySpec& spec = expect(key, KeyType::Choice);
        const std::string value = stringOf(spec);
        for (const Choice& c : spec.choices) {
            if (value == c.name) {
                return value;
            }
        }
        std::string list;  // the message's, built only for it
        for (const Choice& c : spec.choices) {
            list += (list.empty() ? "" : " | ") + std::string(c.name);
        }
        throw ConfigError(spec.key, "expected one of " + list + ", got \"" + value + "\"");
    }

    template <NamedEnum E>
    E choice(std::string_view key) const {
        E out{};
        enumFromName(choice(key), out);  // the row's choices are choicesOf<E>()
        return out;
    }

    std::vector<int> widths(std::string_view key) const {
        const KeySpec& spec = expect(key, KeyType::Widths);
        const json& v = raw(spec);
        if (!v.is_array()) {
            throw ConfigError(spec.key, "expected a list of layer widths such as " +
                                            jsonForMessage(spec.defaultValue) + ", got " +
                                            jsonForMessage(v));
        }
        std::vector<int> out;
        for (std::size_t i = 0; i < v.size(); ++i) {
            if (!v[i].is_number_integer() || v[i].get<int64_t>() < spec.min ||
                v[i].get<int64_t>() > spec.max) {
                throw ConfigError(spec.key + "[" + std::to_string(i) + "]",
                                  "expected a width between " +
                                      std::to_string(static_cast<int64_t>(spec.min)) + " and " +
                                      std::to_string(static_cast<int64_t>(spec.max)) + ", got " +
                                      jsonForMessage(v[i]));
            }
            out.push_back(v[i].get<int>());
        }
        return out;
    }

    // A number (all members), a list of K numbers, or {"log_uniform": [lo, hi]}: K log-spaced
    // values lo * (hi/lo)^(k/(K-1)) in member order.
    std::vector<double> perMember(std::string_view key) const {
        const KeySpec& spec = expect(key, KeyType::PerMember);
        const int members = static_cast<int>(integer("ensemble.members"));
        const json& v = raw(spec);
        const std::string& k = spec.key;
        std::vector<double> out;
        if (v.is_number()) {
            out.assign(members, checkedNumber(v, k, spec.min, spec.max, false));
        } else if (v.is_array()) {
            if (static_cast<int>(v.size()) != members) {
                throw ConfigError(k, "a list needs one value per member: expected " +
                                         std::to_string(members) + " values, got " +
                                         std::to_string(v.size()));
            }
            for (std::size_t i = 0; i < v.size(); ++i) {
                out.push_back(checkedNumber(v[i], k + "[" + std::to_string(i) + "]", spec.min,
                                            spec.max, false));
            }
        } else if (v.is_object() && v.size() == 1 && v.contains("log_uniform")) {
            const json& range = v["log_uniform"];
            if (!range.is_array() || range.size() != 2) {
                throw ConfigError(k, "log_uniform expects [lo, hi], got " + jsonForMessage(range));
            }
            const double lo = std::max(spec.min, 0.0);
            const double a = checkedNumber(range[0], k + ".log_uniform[0]", lo, spec.max, true);
            const double b = checkedNumber(range[1], k + ".log_uniform[1]", lo, spec.max, true);
            for (int m = 0; m < members; ++m) {
                const double t = members > 1 ? static_cast<double>(m) / (members - 1) : 0.0;
                out.push_back(a * std::pow(b / a, t));
            }
        } else {
            throw ConfigError(k, "expected a number, a list of " + std::to_string(members) +
                                     " numbers or {\"log_uniform\": [lo, hi]}, got " +
                                     jsonForMessage(v));
        }
        return out;
    }

    // A list of distinct member indices in [0, ensemble.members), returned ascending.
    std::vector<int> memberList(std::string_view key) const {
        const KeySpec& spec = expect(key, KeyType::Members);
        const int members = static_cast<int>(integer("ensemble.members"));
        const json& v = raw(spec);
        if (!v.is_array()) {
            throw ConfigError(spec.key, "expected a list of member indices such as [0, 2], got " +
                                            jsonForMessage(v));
        }
        std::vector<int> out;
        for (std::size_t i = 0; i < v.size(); ++i) {
            const std::string where = spec.key + "[" + std::to_string(i) + "]";
            if (!v[i].is_number_integer() || v[i].get<int64_t>() < 0 ||
                v[i].get<int64_t>() >= members) {
                throw ConfigError(where, "expected a member index in [0, " +
                                             std::to_string(members - 1) +
                                             "] (ensemble.members is " + std::to_string(members) +
                                             "), got " + jsonForMessage(v[i]));
            }
            const int m = static_cast<int>(v[i].get<int64_t>());
            if (std::find(out.begin(), out.end(), m) != out.end()) {
                throw ConfigError(where, "member " + std::to_string(m) + " is listed twice");
            }
            out.push_back(m);
        }
        std::sort(out.begin(), out.end());
        return out;
    }

    std::vector<LayerSpec> layers(std::string_view key) const {
        const KeySpec& spec = expect(key, KeyType::Layers);
        return parseLayers(raw(spec), spec.key);
    }

    // {0, 0} for "auto".
    std::pair<int, int> mesh(std::string_view key) const {
        const KeySpec& spec = expect(key, KeyType::Mesh);
        const json& v = raw(spec);
        if (v.is_string() && v.get<std::string>() == "auto") {
            return {0, 0};
        }
        const std::string expected = "expected \"auto\" or {\"ensemble\": E, \"data\": D}";
        if (!v.is_object()) {
            throw ConfigError(spec.key, expected + ", got " + jsonForMessage(v));
        }
        int axes[2] = {1, 1};
        const char* names[2] = {"ensemble", "data"};
        for (auto it = v.begin(); it != v.end(); ++it) {
            const auto name = std::find_if(std::begin(names), std::end(names),
                                           [&](const char* n) { return it.key() == n; });
            if (name == std::end(names)) {
                throw ConfigError(spec.key + "." + it.key(),
                                  "unknown axis (the axes are ensemble and data)");
            }
            const json& n = it.value();
            if (!n.is_number_integer() || n.get<int64_t>() < static_cast<int64_t>(spec.min) ||
                n.get<int64_t>() > static_cast<int64_t>(spec.max)) {
                throw ConfigError(
                    spec.key + "." + it.key(),
                    "expected an integer in " + integerRange(spec) + ", got " + jsonForMessage(n));
            }
            axes[name - std::begin(names)] = static_cast<int>(n.get<int64_t>());
        }
        return {axes[0], axes[1]};
    }

    std::pair<double, double> pair(std::string_view key) const {
        const KeySpec& spec = expect(key, KeyType::NumberPair);
        const json& v = raw(spec);
        if (!v.is_array() || v.size() != 2) {
            throw ConfigError(spec.key, "expected two numbers such as " +
                                            jsonForMessage(spec.defaultValue) + ", got " +
                                            jsonForMessage(v));
        }
        return {checkedNumber(v[0], spec.key + "[0]", spec.min, spec.max, false, true),
                checkedNumber(v[1], spec.key + "[1]", spec.min, spec.max, false, true)};
    }

    std::vector<ScheduledChange> schedule(std::string_view key) const {
        const KeySpec& spec = expect(key, KeyType::Schedule);
        const json& v = raw(spec);
        if (!v.is_array()) {
            throw ConfigError(spec.key,
                              "expected a list of {\"step\": N, \"set\": {...}}, got " + v.dump());
        }
        std::vector<ScheduledChange> out;
        for (std::size_t i = 0; i < v.size(); ++i) {
            const std::string where = spec.key + "[" + std::to_string(i) + "]";
            const json& entry = v[i];
            if (!entry.is_object() || !entry.contains("step") || !entry.contains("set") ||
                entry.size() != 2) {
                throw ConfigError(where,
                                  "expected {\"step\": N, \"set\": {...}}, got " + entry.dump());
            }
            const json& step = entry["step"];
            if (!step.is_number_integer() || step.get<int64_t>() < 0) {
                throw ConfigError(where + ".step",
                                  "expected a non-negative integer, got " + step.dump());
            }
            out.push_back(parseScheduledChange(m_root, step.get<int64_t>(), entry["set"], where));
        }
        std::stable_sort(
            out.begin(), out.end(),
            [](const ScheduledChange& a, const ScheduledChange& b) { return a.step < b.step; });
        return out;
    }

    // Reads every key that applies, so a key no field uses yet is still validated.
    void validateAll() const {
        for (const KeySpec& spec : configSchema()) {
            if (!keyApplies(spec, m_root)) {
                continue;
            }
            switch (spec.type) {
                case KeyType::Integer:
                    integer(spec.key);
                    break;
                case KeyType::Number:
                    number(spec.key);
                    break;
                case KeyType::Seed:
                    seed(spec.key);
                    break;
                case KeyType::String:
                    text(spec.key);
                    break;
                case KeyType::Choice:
                    choice(spec.key);
                    break;
                case KeyType::Widths:
                    widths(spec.key);
                    break;
                case KeyType::PerMember:
                    perMember(spec.key);
                    break;
                case KeyType::NumberPair:
                    pair(spec.key);
                    break;
                case KeyType::Layers:
                    layers(spec.key);
                    break;
                case KeyType::Schedule:
                    schedule(spec.key);
                    break;
                case KeyType::Mesh:
                    mesh(spec.key);
                    break;
                case KeyType::Members:
                    memberList(spec.key);
                    break;
                case KeyType::Boolean:
                    boolean(spec.key);
                    break;
            }
        }
    }

  private:
    static const KeySpec& expect(std::string_view key, KeyType type) {
        const KeySpec& spec = keySpec(key);
        if (spec.type != type) {
            throw std::logic_error("config: " + spec.key + " is read as the wrong type");
        }
        return spec;
    }

    std::string stringOf(const KeySpec& spec) const {
        const json& v = raw(spec);
        if (!v.is_string()) {
            throw ConfigError(spec.key, "expected a string, got " + jsonForMessage(v));
        }
        return v.get<std::string>();
    }

    const json& m_root;
};

}  // namespace

ScheduledChange parseScheduledChange(const json& configJson, int64_t step, const json& set,
                                     const std::string& where) {
    if (!set.is_object() || set.empty()) {
        throw ConfigError(where + ".set",
                          "expected an object of keys to change, such as "
                          "{\"optimizer.lr\": 0.001}, got " +
                              set.dump());
    }
    json root = withDefaults(configJson);
    ScheduledChange change;
    change.step = step;
    for (auto it = set.begin(); it != set.end(); ++it) {
        const KeySpec* spec = findKeySpec(it.key());
        if (spec == nullptr || !schedulable(*spec)) {
            throw ConfigError(
                where + ".set." + it.key(),
                "cannot change during a run (these can: " + schedulableKeysText() + ")");
        }
        root[spec->section()][spec->name()] = it.value();
    }
    const ConfigValues values(root);
    try {
        for (auto it = set.begin(); it != set.end(); ++it) {
            if (keySpec(it.key()).type == KeyType::Members) {
                change.switchedOff = values.memberList(it.key());
                continue;
            }
            std::vector<double> resolved = values.perMember(it.key());
            if (it.key() == "optimizer.lr") {
                change.lr = std::move(resolved);
            } else if (it.key() == "optimizer.momentum") {
                change.momentum = std::move(resolved);
            } else {
                change.weightDecay = std::move(resolved);
            }
        }
    } catch (const ConfigError& e) {
        throw ConfigError(where + ".set." + e.key(), e.reason());
    }
    return change;
}

ExperimentConfig ExperimentConfig::activeRound(int64_t labels) const {
    ExperimentConfig out = *this;
    if (active.l2PerLabel && labels > 0) {
        for (LayerSpec& layer : out.model.layers) {
            layer.l2 /= static_cast<double>(labels);
        }
    }
    return out;
}

int64_t ExperimentConfig::totalSteps(int64_t trainRows) const {
    if (training.epochs > 0.0) {
        const double samples = training.epochs * static_cast<double>(trainRows);
        return static_cast<int64_t>(std::ceil(samples / training.batchSize));
    }
    return training.steps;
}

std::vector<int> ExperimentConfig::switchedOffAt(int64_t step) const {
    std::vector<int> off = ensemble.switchedOff;
    for (const ScheduledChange& change : training.schedule) {  // by step, stable
        if (change.step > step) {
            break;
        }
        if (change.switchedOff) {
            off = *change.switchedOff;
        }
    }
    return off;
}

std::vector<uint8_t> ExperimentConfig::switchedOnAt(int64_t step) const {
    std::vector<uint8_t> on(static_cast<std::size_t>(ensemble.members), 1);
    for (int m : switchedOffAt(step)) {
        on[static_cast<std::size_t>(m)] = 0;
    }
    return on;
}

Architecture modelArchitecture(const ModelConfig& model, Shape input, int classes) {
    // The head's width follows the likelihood (math/likelihood.h).
    const int outputs = headOutputs(model.likelihood, classes);
    switch (model.kind) {
        case ModelKind::Cnn:
            return Architecture::stack(input, model.layers, outputs);
        case ModelKind::Mlp: {
            std::vector<int> widths{static_cast<int>(input.size())};
            widths.insert(widths.end(), model.hidden.begin(), model.hidden.end());
            widths.push_back(outputs);
            return Architecture::mlp(widths);
        }
    }
    unreachableKind("model.kind");
}

json defaultConfigJson() {
    // Built once: the schema does not change while the program runs.
    static const json defaults = withDefaults(json::object());
    return defaults;
}

ExperimentConfig parseConfig(const json& input) {
    checkConfigKeys(input);
    json root = withDefaults(input);
    const ConfigValues v(root);
    v.validateAll();

    ExperimentConfig c;
    DatasetConfig& d = c.dataset;
    d.kind = v.choice<DatasetKind>("dataset.kind");
    const DatasetKindInfo& dataKind = datasetKindInfo(d.kind);
    d.n = v.integer("dataset.n");
    d.noise = v.number("dataset.noise");
    d.rotations = v.number("dataset.rotations");
    d.classes = static_cast<int>(v.integer("dataset.classes"));
    d.testFraction = v.number("dataset.test_fraction");
    d.seed = v.seed("dataset.seed");
    d.path = v.text("dataset.path");
    d.testPath = v.text("dataset.test_path");
    d.limit = v.integer("dataset.limit");
    d.features = static_cast<int>(v.integer("dataset.features"));
    d.task = dataKind.taskFromConfig ? v.choice<DataTask>("dataset.task") : dataKind.task;
    d.target = d.regression() ? (dataKind.taskFromConfig ? v.text("dataset.target") : "y") : "";
    if (d.kind == DatasetKind::Uci) {
        d.uciSet = v.choice<UciSet>("dataset.uci_set");
        d.target = uciSetInfo(d.uciSet).target;
    }
    if (dataKind.source == DataSource::CsvFile && d.path.empty()) {
        throw ConfigError("dataset.path", "the csv dataset needs the path of a CSV file");
    }
    if (d.regression() && d.target.empty()) {
        throw ConfigError("dataset.target", "a regression CSV needs the name of its target column");
    }

    c.model.kind = v.choice<ModelKind>("model.kind");
    const ModelKindInfo& modelKind = modelKindInfo(c.model.kind);
    c.model.activation = v.choice<Activation>("model.activation");
    c.model.likelihood = v.choice<Likelihood>("model.likelihood");
    // The head has to fit the task: probabilities of classes or a distribution over a number.
    if (d.regression() != isRegression(c.model.likelihood)) {
        const std::string task = toString(d.task);
        const std::string what = dataKind.taskFromConfig
                                     ? "dataset.task is " + task
                                     : "dataset.kind " + std::string(dataKind.name) + " is " + task;
        throw ConfigError("model.likelihood",
                          d.regression() ? "categorical does not fit a regression dataset (" +
                                               what + "): use gaussian or mse"
                                         : std::string(toString(c.model.likelihood)) +
                                               " needs a regression dataset (" + what +
                                               "): use categorical, or a regression dataset (" +
                                               namesText<DatasetKind>([](const DatasetKindInfo& k) {
                                                   return k.task == DataTask::Regression ||
                                                          k.taskFromConfig;
                                               }) +
                                               ", the last with dataset.task regression)");
    }
    const auto isImages = [](const DatasetKindInfo& k) {
        return k.source == DataSource::IdxImages;
    };
    if (modelKind.needsImages && !isImages(dataKind)) {
        throw ConfigError("model.kind", std::string(modelKind.name) +
                                            " members need an image dataset (dataset.kind " +
                                            namesText<DatasetKind>(isImages) +
                                            "); dataset.kind is " + dataKind.name);
    }
    if (c.model.kind == ModelKind::Cnn) {
        c.model.layers = v.layers("model.layers");
        // Shapes checked now, before any data is read: both image datasets hold [1, 28, 28]
        // images of 10 classes (the trainer checks again against the data it loads).
        Architecture::stack(kImageInput, c.model.layers, 10);
    } else {
        c.model.hidden = v.widths("model.hidden");
    }

    c.ensemble.members = static_cast<int>(v.integer("ensemble.members"));
    c.ensemble.method = v.choice<EnsembleMethod>("ensemble.method");
    if (ensembleMethodInfo(c.ensemble.method).fastWeights) {
        // Its backend updates the shared and fast weights itself, from the members' gradients:
        // a member weight's L2 term has no place there.
        for (std::size_t i = 0; i < c.model.layers.size(); ++i) {
            if (c.model.layers[i].l2 > 0.0) {
                throw ConfigError("model.layers[" + std::to_string(i) + "].l2",
                                  std::string(ensembleMethodInfo(c.ensemble.method).name) +
                                      " trains shared and fast weights, not the members' "
                                      "weights: a layer's l2 does not apply (set it to 0)");
            }
        }
    }
    if (c.ensemble.method == EnsembleMethod::McDropout) {
        c.model.dropout = v.number("model.dropout");
        if (c.model.kind == ModelKind::Cnn) {
            // Its members' fixed masks at dropout layers fold into dense layers only.
            checkDropoutLayersFold(Architecture::stack(kImageInput, c.model.layers, 10));
        }
    }
    c.ensemble.bootstrap = v.choice<BootstrapMode>("ensemble.bootstrap");
    c.ensemble.seed = v.seed("ensemble.seed");
    c.ensemble.switchedOff = v.memberList("ensemble.switched_off");

    OptimizerConfig& o = c.optimizer;
    o.kind = v.choice<OptimizerKind>("optimizer.kind");
    o.lr = v.perMember("optimizer.lr");
    o.momentum = v.perMember("optimizer.momentum");
    o.weightDecay = v.perMember("optimizer.weight_decay");
    std::tie(o.beta1, o.beta2) = v.pair("optimizer.betas");
    o.eps = v.number("optimizer.eps");

    TrainingConfig& t = c.training;
    t.batchSize = static_cast<int>(v.integer("training.batch_size"));
    t.steps = v.integer("training.steps");
    t.epochs = v.number("training.epochs");
    t.evalEvery = v.integer("training.eval_every");
    t.adversarialEps = v.number("training.adversarial_eps");
    t.adversarialEpsUnit = v.choice<AdversarialEpsUnit>("training.adversarial_eps_unit");
    if (t.adversarialEps > 0.0 && !modelKind.adversarialTraining) {
        const std::string kinds =
            namesText<ModelKind>([](const ModelKindInfo& k) { return k.adversarialTraining; });
        throw ConfigError("training.adversarial_eps",
                          "adversarial training is implemented for model.kind " + kinds +
                              "; model.kind is " + modelKind.name +
                              " (set training.adversarial_eps to 0)");
    }
    t.schedule = v.schedule("training.schedule");

    c.backend.kind = v.choice<BackendKind>("backend.kind");
    c.backend.threads = static_cast<int>(v.integer("backend.threads"));
    c.backend.device = static_cast<int>(v.integer("backend.device"));
    c.backend.math = v.choice<MathMode>("backend.math");
    c.backend.cpuIsa = v.choice<CpuIsa>("backend.cpu_isa");
    c.backend.gemm = v.choice<GemmChoice>("backend.gemm");
    std::tie(c.backend.meshEnsemble, c.backend.meshData) = v.mesh("backend.mesh");

    if (!d.regression()) {
        ActiveConfig& a = c.active;
        a.initial = static_cast<int>(v.integer("active.initial"));
        a.perRound = static_cast<int>(v.integer("active.per_round"));
        a.steps = v.integer("active.steps");
        a.epochs = v.integer("active.epochs");
        a.l2PerLabel = v.boolean("active.l2_per_label");
        a.retrain = v.choice<ActiveRetrain>("active.retrain");
        a.poolSubset = v.integer("active.pool_subset");
        a.acquisition = v.choice<Acquisition>("active.acquisition");
        a.rounds = static_cast<int>(v.integer("active.rounds"));
        a.batchBaldSamples = static_cast<int>(v.integer("active.batchbald_samples"));
        a.classCap = v.number("active.class_cap");
    }

    checkEnsembleMethod(c);
    c.json = std::move(root);
    return c;
}

}  // namespace ensemble
