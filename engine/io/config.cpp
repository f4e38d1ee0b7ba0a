#include "io/config.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "core/errors.h"
#include "io/presets_embedded.h"

namespace ensemble {

namespace {

using nlohmann::json;

// The schema: every section and key a config may hold. Anything else is an error.
const std::map<std::string, std::set<std::string>>& schema() {
    static const std::map<std::string, std::set<std::string>> keys = {
        {"dataset",
         {"kind", "n", "noise", "rotations", "classes", "test_fraction", "seed", "path",
          "test_path", "limit"}},
        {"model", {"hidden", "activation"}},
        {"ensemble", {"members", "bootstrap", "seed"}},
        {"optimizer", {"kind", "lr", "momentum", "weight_decay", "betas", "eps"}},
        {"training", {"batch_size", "steps", "epochs", "eval_every"}},
        {"backend", {"kind", "threads", "device"}},
    };
    return keys;
}

[[noreturn]] void fail(const std::string& key, const std::string& what) {
    throw ConfigError(key + ": " + what);
}

const json& at(const json& root, const std::string& section, const std::string& key) {
    return root.at(section).at(key);
}

std::string name(const std::string& section, const std::string& key) {
    return section + "." + key;
}

int64_t getInt(const json& root, const std::string& section, const std::string& key, int64_t lo,
               int64_t hi) {
    const json& v = at(root, section, key);
    const std::string k = name(section, key);
    int64_t value = 0;
    if (v.is_number_integer()) {
        value = v.get<int64_t>();
    } else if (v.is_number_float() && std::floor(v.get<double>()) == v.get<double>() &&
               std::abs(v.get<double>()) < 9e15) {
        value = static_cast<int64_t>(v.get<double>());
    } else {
        fail(k, "expected an integer, got " + v.dump());
    }
    if (value < lo || value > hi) {
        fail(k, "expected an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) +
                    "], got " + std::to_string(value));
    }
    return value;
}

double getNumber(const json& v, const std::string& k, double lo, double hi, bool openLo = false) {
    if (!v.is_number()) {
        fail(k, "expected a number, got " + v.dump());
    }
    const double value = v.get<double>();
    if (!std::isfinite(value) || value < lo || value > hi || (openLo && value == lo)) {
        std::ostringstream os;
        os << "expected a number in " << (openLo ? "(" : "[") << lo << ", " << hi << "], got "
           << value;
        fail(k, os.str());
    }
    return value;
}

double getNumber(const json& root, const std::string& section, const std::string& key, double lo,
                 double hi, bool openLo = false) {
    return getNumber(at(root, section, key), name(section, key), lo, hi, openLo);
}

std::string getString(const json& root, const std::string& section, const std::string& key) {
    const json& v = at(root, section, key);
    if (!v.is_string()) {
        fail(name(section, key), "expected a string, got " + v.dump());
    }
    return v.get<std::string>();
}

template <typename E>
E getEnum(const json& root, const std::string& section, const std::string& key,
          const std::vector<std::pair<std::string, E>>& choices) {
    const std::string value = getString(root, section, key);
    std::string list;
    for (const auto& [text, e] : choices) {
        if (text == value) {
            return e;
        }
        list += list.empty() ? "" : " | ";
        list += text;
    }
    fail(name(section, key), "expected one of " + list + ", got \"" + value + "\"");
}

uint64_t getSeed(const json& root, const std::string& section) {
    const json& v = at(root, section, "seed");
    if (v.is_number_unsigned() || (v.is_number_integer() && v.get<int64_t>() >= 0)) {
        return v.get<uint64_t>();
    }
    fail(name(section, "seed"), "expected a non-negative integer, got " + v.dump());
}

// A per-member hyperparameter: a number (all members), a list of K numbers, or
// {"log_uniform": [lo, hi]}: K log-spaced values lo * (hi/lo)^(k/(K-1)) in member order.
std::vector<double> perMember(const json& v, const std::string& k, int members, double lo,
                              double hi) {
    std::vector<double> out;
    if (v.is_number()) {
        out.assign(members, getNumber(v, k, lo, hi));
    } else if (v.is_array()) {
        if (static_cast<int>(v.size()) != members) {
            fail(k, "a list needs one value per member: expected " + std::to_string(members) +
                        " values, got " + std::to_string(v.size()));
        }
        for (std::size_t i = 0; i < v.size(); ++i) {
            out.push_back(getNumber(v[i], k + "[" + std::to_string(i) + "]", lo, hi));
        }
    } else if (v.is_object() && v.size() == 1 && v.contains("log_uniform")) {
        const json& range = v["log_uniform"];
        if (!range.is_array() || range.size() != 2) {
            fail(k, "log_uniform expects [lo, hi], got " + range.dump());
        }
        const double a = getNumber(range[0], k + ".log_uniform[0]", std::max(lo, 0.0), hi, true);
        const double b = getNumber(range[1], k + ".log_uniform[1]", std::max(lo, 0.0), hi, true);
        for (int m = 0; m < members; ++m) {
            const double t = members > 1 ? static_cast<double>(m) / (members - 1) : 0.0;
            out.push_back(a * std::pow(b / a, t));
        }
    } else {
        fail(k, "expected a number, a list of " + std::to_string(members) +
                    " numbers or {\"log_uniform\": [lo, hi]}, got " + v.dump());
    }
    return out;
}

// Fills `out` with `defaults` where keys are missing, recursively for objects.
void mergeDefaults(json& out, const json& defaults) {
    for (auto it = defaults.begin(); it != defaults.end(); ++it) {
        if (!out.contains(it.key())) {
            out[it.key()] = it.value();
        } else if (it.value().is_object() && out[it.key()].is_object()) {
            mergeDefaults(out[it.key()], it.value());
        }
    }
}

}  // namespace

int64_t ExperimentConfig::totalSteps(int64_t trainRows) const {
    if (training.epochs > 0.0) {
        const double samples = training.epochs * static_cast<double>(trainRows);
        return static_cast<int64_t>(std::ceil(samples / training.batchSize));
    }
    return training.steps;
}

json defaultConfigJson() {
    return json{
        {"dataset",
         {{"kind", "spirals"},
          {"n", 1000},
          {"noise", 0.05},
          {"rotations", 1.0},
          {"classes", 2},
          {"test_fraction", 0.2},
          {"seed", 0},
          {"path", ""},
          {"test_path", ""},
          {"limit", 0}}},
        {"model", {{"hidden", {32, 32}}, {"activation", "relu"}}},
        {"ensemble", {{"members", 8}, {"bootstrap", "none"}, {"seed", 0}}},
        {"optimizer",
         {{"kind", "adam"},
          {"lr", 0.01},
          {"momentum", 0.9},
          {"weight_decay", 0.0},
          {"betas", {0.9, 0.999}},
          {"eps", 1e-8}}},
        {"training", {{"batch_size", 32}, {"steps", 2000}, {"epochs", 0}, {"eval_every", 100}}},
        {"backend", {{"kind", "auto"}, {"threads", 0}, {"device", 0}}},
    };
}

ExperimentConfig parseConfig(const json& input) {
    if (!input.is_object()) {
        throw ConfigError("config: expected a JSON object, got " + input.dump());
    }
    for (auto it = input.begin(); it != input.end(); ++it) {
        const auto section = schema().find(it.key());
        if (section == schema().end()) {
            fail(it.key(),
                 "unknown section (expected dataset, model, ensemble, optimizer, "
                 "training or backend)");
        }
        if (!it.value().is_object()) {
            fail(it.key(), "expected an object, got " + it.value().dump());
        }
        for (auto kv = it.value().begin(); kv != it.value().end(); ++kv) {
            if (!section->second.count(kv.key())) {
                std::string known;
                for (const auto& k : section->second) {
                    known += known.empty() ? "" : ", ";
                    known += k;
                }
                fail(name(it.key(), kv.key()), "unknown key (known: " + known + ")");
            }
        }
    }
    json root = input;
    mergeDefaults(root, defaultConfigJson());

    ExperimentConfig c;
    DatasetConfig& d = c.dataset;
    d.kind = getEnum<std::string>(root, "dataset", "kind",
                                  {{"spirals", "spirals"},
                                   {"moons", "moons"},
                                   {"circles", "circles"},
                                   {"xor", "xor"},
                                   {"blobs", "blobs"},
                                   {"csv", "csv"},
                                   {"mnist", "mnist"},
                                   {"fashion-mnist", "fashion-mnist"}});
    d.n = getInt(root, "dataset", "n", 4, 50'000'000);
    d.noise = getNumber(root, "dataset", "noise", 0.0, 100.0);
    d.rotations = getNumber(root, "dataset", "rotations", 0.0, 100.0);
    d.classes = static_cast<int>(getInt(root, "dataset", "classes", 2, 1000));
    d.testFraction = getNumber(root, "dataset", "test_fraction", 0.0, 0.95);
    d.seed = getSeed(root, "dataset");
    d.path = getString(root, "dataset", "path");
    d.testPath = getString(root, "dataset", "test_path");
    d.limit = getInt(root, "dataset", "limit", 0, 1'000'000'000);
    if (d.kind == "csv" && d.path.empty()) {
        fail("dataset.path", "the csv dataset needs the path of a CSV file");
    }

    const json& hidden = at(root, "model", "hidden");
    if (!hidden.is_array()) {
        fail("model.hidden",
             "expected a list of layer widths such as [32, 32], got " + hidden.dump());
    }
    for (std::size_t i = 0; i < hidden.size(); ++i) {
        if (!hidden[i].is_number_integer() || hidden[i].get<int64_t>() < 1 ||
            hidden[i].get<int64_t>() > 65536) {
            fail("model.hidden[" + std::to_string(i) + "]",
                 "expected a width between 1 and 65536, got " + hidden[i].dump());
        }
    }
    c.model.hidden.clear();
    for (const auto& w : hidden) {
        c.model.hidden.push_back(w.get<int>());
    }
    c.model.activation = getEnum<Activation>(
        root, "model", "activation",
        {{"relu", Activation::Relu}, {"tanh", Activation::Tanh}, {"gelu", Activation::Gelu}});

    c.ensemble.members = static_cast<int>(getInt(root, "ensemble", "members", 1, 100000));
    c.ensemble.bootstrap = getEnum<BootstrapMode>(root, "ensemble", "bootstrap",
                                                  {{"none", BootstrapMode::None},
                                                   {"resample", BootstrapMode::Resample},
                                                   {"poisson", BootstrapMode::Poisson}});
    c.ensemble.seed = getSeed(root, "ensemble");

    const int k = c.ensemble.members;
    OptimizerConfig& o = c.optimizer;
    o.kind = getEnum<OptimizerKind>(root, "optimizer", "kind",
                                    {{"adam", OptimizerKind::Adam},
                                     {"adamw", OptimizerKind::AdamW},
                                     {"sgd", OptimizerKind::Sgd}});
    o.lr = perMember(at(root, "optimizer", "lr"), "optimizer.lr", k, 0.0, 1e4);
    o.momentum = perMember(at(root, "optimizer", "momentum"), "optimizer.momentum", k, 0.0, 0.9999);
    o.weightDecay =
        perMember(at(root, "optimizer", "weight_decay"), "optimizer.weight_decay", k, 0.0, 10.0);
    const json& betas = at(root, "optimizer", "betas");
    if (!betas.is_array() || betas.size() != 2) {
        fail("optimizer.betas", "expected [beta1, beta2], got " + betas.dump());
    }
    o.beta1 = getNumber(betas[0], "optimizer.betas[0]", 0.0, 0.999999);
    o.beta2 = getNumber(betas[1], "optimizer.betas[1]", 0.0, 0.99999999);
    o.eps = getNumber(root, "optimizer", "eps", 0.0, 1.0, true);

    TrainingConfig& t = c.training;
    t.batchSize = static_cast<int>(getInt(root, "training", "batch_size", 1, 1 << 20));
    t.steps = getInt(root, "training", "steps", 0, int64_t{1} << 40);
    t.epochs = getNumber(root, "training", "epochs", 0.0, 1e6);
    t.evalEvery = getInt(root, "training", "eval_every", 0, int64_t{1} << 40);

    c.backend.kind = getEnum<BackendKind>(
        root, "backend", "kind",
        {{"auto", BackendKind::Auto}, {"cpu", BackendKind::Cpu}, {"cuda", BackendKind::Cuda}});
    c.backend.threads = static_cast<int>(getInt(root, "backend", "threads", 0, 1024));
    c.backend.device = static_cast<int>(getInt(root, "backend", "device", 0, 64));

    c.json = std::move(root);
    return c;
}

void applyOverride(json& root, const std::string& assignment) {
    const auto eq = assignment.find('=');
    if (eq == std::string::npos || eq == 0) {
        throw ConfigError("--set " + assignment + ": expected key=value, e.g. ensemble.members=16");
    }
    const std::string key = assignment.substr(0, eq);
    const std::string text = assignment.substr(eq + 1);
    json value = json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (value.is_discarded()) {
        value = text;
    }
    json* node = &root;
    std::size_t start = 0;
    while (true) {
        const auto dot = key.find('.', start);
        const std::string part = key.substr(start, dot == std::string::npos ? dot : dot - start);
        if (part.empty()) {
            throw ConfigError("--set " + assignment + ": empty part in key '" + key + "'");
        }
        if (dot == std::string::npos) {
            (*node)[part] = value;
            return;
        }
        json& child = (*node)[part];
        if (child.is_null()) {
            child = json::object();
        } else if (!child.is_object()) {
            throw ConfigError("--set " + assignment + ": '" + key.substr(0, dot) +
                              "' is not a section");
        }
        node = &child;
        start = dot + 1;
    }
}

std::vector<std::string> presetNames() {
    std::size_t count = 0;
    const EmbeddedPreset* presets = embeddedPresets(count);
    std::vector<std::string> names;
    for (std::size_t i = 0; i < count; ++i) {
        names.emplace_back(presets[i].name);
    }
    std::sort(names.begin(), names.end());
    return names;
}

std::string presetText(const std::string& presetName) {
    std::size_t count = 0;
    const EmbeddedPreset* presets = embeddedPresets(count);
    for (std::size_t i = 0; i < count; ++i) {
        if (presetName == presets[i].name) {
            return presets[i].text;
        }
    }
    return {};
}

json loadConfigJson(const std::string& fileOrPreset) {
    std::ifstream in(fileOrPreset, std::ios::binary);
    std::string text;
    std::string origin = fileOrPreset;
    if (in) {
        std::ostringstream ss;
        ss << in.rdbuf();
        text = ss.str();
    } else {
        text = presetText(fileOrPreset);
        origin = "preset " + fileOrPreset;
        if (text.empty()) {
            std::string names;
            for (const auto& n : presetNames()) {
                names += names.empty() ? "" : ", ";
                names += n;
            }
            throw ConfigError("--config " + fileOrPreset +
                              ": no such file, and not a preset (presets: " + names + ")");
        }
    }
    try {
        return json::parse(text);
    } catch (const json::parse_error& e) {
        throw DataError(origin + ": not valid JSON: " + e.what());
    }
}

const char* toString(BootstrapMode mode) {
    switch (mode) {
        case BootstrapMode::Resample:
            return "resample";
        case BootstrapMode::Poisson:
            return "poisson";
        case BootstrapMode::None:
        default:
            return "none";
    }
}

const char* toString(Activation activation) {
    switch (activation) {
        case Activation::Tanh:
            return "tanh";
        case Activation::Gelu:
            return "gelu";
        case Activation::Relu:
        default:
            return "relu";
    }
}

const char* toString(OptimizerKind kind) {
    switch (kind) {
        case OptimizerKind::AdamW:
            return "adamw";
        case OptimizerKind::Sgd:
            return "sgd";
        case OptimizerKind::Adam:
        default:
            return "adam";
    }
}

const char* toString(BackendKind kind) {
    switch (kind) {
        case BackendKind::Cpu:
            return "cpu";
        case BackendKind::Cuda:
            return "cuda";
        case BackendKind::Auto:
        default:
            return "auto";
    }
}

}  // namespace ensemble
