#include "model/architecture.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "core/errors.h"
#include "core/json_message.h"
#include "math/dropout.h"

namespace ensemble {

namespace {

using nlohmann::json;

// Largest filter count, kernel, window and unit count a layer may ask for: beyond these a
// single member's tensors would not fit any machine this runs on.
constexpr int kMaxUnits = 65536;
constexpr int kMaxKernel = 64;
// Largest L2 coefficient (the message below says it): far beyond any useful one (Gal et al.'s
// is 3.5 / N), and finite.
constexpr double kMaxL2 = 1e6;

std::string field(const std::string& key, std::size_t index, const char* name) {
    return key + "[" + std::to_string(index) + "]" + (name[0] != '\0' ? "." : "") + name;
}

int integerField(const json& layer, const std::string& key, std::size_t index, const char* name,
                 int lo, int hi, const int* fallback = nullptr) {
    const std::string where = field(key, index, name);
    if (!layer.contains(name)) {
        if (fallback != nullptr) {
            return *fallback;
        }
        throw ConfigError(where, "missing; expected an integer in [" + std::to_string(lo) + ", " +
                                     std::to_string(hi) + "]");
    }
    const json& v = layer[name];
    double value = 0.0;
    if (v.is_number_integer()) {
        value = static_cast<double>(v.get<int64_t>());
    } else if (v.is_number_float() && std::floor(v.get<double>()) == v.get<double>()) {
        value = v.get<double>();
    } else {
        throw ConfigError(where, "expected an integer, got " + jsonForMessage(v));
    }
    if (value < lo || value > hi) {
        throw ConfigError(where, "expected an integer in [" + std::to_string(lo) + ", " +
                                     std::to_string(hi) + "], got " + jsonForMessage(v));
    }
    return static_cast<int>(value);
}

// The field `name` of a layer, one of E's names (EnumNames<E>); `fallback` when absent, or a
// ConfigError when there is no fallback.
template <NamedEnum E>
E enumField(const json& layer, const std::string& key, std::size_t index, const char* name,
            const E* fallback) {
    const std::string where = field(key, index, name);
    std::string list;
    for (const auto& row : EnumNames<E>::table) {
        list += (list.empty() ? "" : " | ") + std::string(row.name);
    }
    if (!layer.contains(name)) {
        if (fallback != nullptr) {
            return *fallback;
        }
        throw ConfigError(where, "missing; expected one of " + list);
    }
    const json& v = layer[name];
    E out{};
    if (v.is_string() && enumFromName(v.get<std::string>(), out)) {
        return out;
    }
    throw ConfigError(where, "expected one of " + list + ", got " + jsonForMessage(v));
}

// A dropout layer's rate: a number in [0, 1) (1 would drop every unit).
double rateField(const json& layer, const std::string& key, std::size_t index) {
    const std::string where = field(key, index, "rate");
    if (!layer.contains("rate")) {
        throw ConfigError(where,
                          "missing; expected the probability of dropping a unit, a number "
                          "in [0, 1)");
    }
    const json& v = layer["rate"];
    if (!v.is_number() || !(v.get<double>() >= 0.0 && v.get<double>() < 1.0)) {
        throw ConfigError(where, "expected a number in [0, 1), got " + jsonForMessage(v));
    }
    return v.get<double>();
}

// A dense layer's L2 coefficient: a number >= 0, 0 when absent.
double l2Field(const json& layer, const std::string& key, std::size_t index) {
    if (!layer.contains("l2")) {
        return 0.0;
    }
    const json& v = layer["l2"];
    if (!v.is_number() || !(v.get<double>() >= 0.0 && v.get<double>() <= kMaxL2)) {
        throw ConfigError(field(key, index, "l2"),
                          "expected the L2 coefficient of the layer's weights, a number in "
                          "[0, 1e6], got " +
                              jsonForMessage(v));
    }
    return v.get<double>();
}

void checkFields(const json& layer, const std::string& key, std::size_t index,
                 const std::vector<std::string>& allowed) {
    for (const auto& item : layer.items()) {
        if (std::find(allowed.begin(), allowed.end(), item.key()) == allowed.end()) {
            std::string list;
            for (const std::string& a : allowed) {
                list += (list.empty() ? "" : ", ") + a;
            }
            throw ConfigError(field(key, index, item.key().c_str()),
                              "unknown field for a " + layer["type"].get<std::string>() +
                                  " layer (its fields: " + list + ")");
        }
    }
}

// "same" as Flax and TensorFlow define it (PyTorch's padding="same" for stride 1): the output
// has ceil(in / stride) positions, the total padding max((out - 1) * stride + k - in, 0) is split
// with the smaller half before the input.
int samePadBefore(int in, int kernel, int stride, int& out) {
    out = (in + stride - 1) / stride;
    const int total = std::max((out - 1) * stride + kernel - in, 0);
    return total / 2;
}

}  // namespace

std::vector<LayerSpec> recipeLayers() {
    LayerSpec conv1;
    conv1.kind = LayerKind::Conv;
    conv1.filters = 32;
    conv1.kernel = 3;
    LayerSpec pool;
    pool.kind = LayerKind::Pool;
    pool.pool = PoolKind::Avg;
    pool.size = 2;
    LayerSpec conv2 = conv1;
    conv2.filters = 64;
    LayerSpec dense;
    dense.kind = LayerKind::Dense;
    dense.units = 256;
    return {conv1, pool, conv2, pool, dense};
}

std::vector<LayerSpec> parseLayers(const json& value, const std::string& key) {
    if (!value.is_array()) {
        throw ConfigError(key, "expected a list of layers such as " +
                                   layersToJson(recipeLayers()).dump() + ", got " +
                                   jsonForMessage(value));
    }
    std::vector<LayerSpec> out;
    for (std::size_t i = 0; i < value.size(); ++i) {
        const json& layer = value[i];
        if (!layer.is_object()) {
            throw ConfigError(field(key, i, ""),
                              "expected an object with a \"type\" (conv, pool, dense or dropout), "
                              "got " +
                                  jsonForMessage(layer));
        }
        LayerSpec s;
        s.kind = enumField<LayerKind>(layer, key, i, "type", nullptr);
        switch (s.kind) {
            case LayerKind::Conv: {
                checkFields(layer, key, i, {"type", "filters", "kernel", "stride", "padding"});
                s.filters = integerField(layer, key, i, "filters", 1, kMaxUnits);
                s.kernel = integerField(layer, key, i, "kernel", 1, kMaxKernel);
                const int one = 1;
                s.stride = integerField(layer, key, i, "stride", 1, kMaxKernel, &one);
                const Padding same = Padding::Same;
                s.padding = enumField<Padding>(layer, key, i, "padding", &same);
                break;
            }
            case LayerKind::Pool:
                checkFields(layer, key, i, {"type", "kind", "size"});
                s.pool = enumField<PoolKind>(layer, key, i, "kind", nullptr);
                s.size = integerField(layer, key, i, "size", 1, kMaxKernel);
                break;
            case LayerKind::Dense:
                checkFields(layer, key, i, {"type", "units", "l2"});
                s.units = integerField(layer, key, i, "units", 1, kMaxUnits);
                s.l2 = l2Field(layer, key, i);
                break;
            case LayerKind::Dropout:
                checkFields(layer, key, i, {"type", "rate"});
                s.rate = rateField(layer, key, i);
                break;
        }
        out.push_back(s);
    }
    return out;
}

json layersToJson(const std::vector<LayerSpec>& layers) {
    json out = json::array();
    for (const LayerSpec& s : layers) {
        switch (s.kind) {
            case LayerKind::Conv:
                out.push_back({{"type", toString(s.kind)},
                               {"filters", s.filters},
                               {"kernel", s.kernel},
                               {"stride", s.stride},
                               {"padding", toString(s.padding)}});
                break;
            case LayerKind::Pool:
                out.push_back(
                    {{"type", toString(s.kind)}, {"kind", toString(s.pool)}, {"size", s.size}});
                break;
            case LayerKind::Dense:
                out.push_back({{"type", toString(s.kind)}, {"units", s.units}});
                if (s.l2 > 0.0) {  // written only when set: configs without it read as before
                    out.back()["l2"] = s.l2;
                }
                break;
            case LayerKind::Dropout:
                out.push_back({{"type", toString(s.kind)}, {"rate", s.rate}});
                break;
        }
    }
    return out;
}

int StackLayer::fanIn() const {
    return kind == LayerKind::Conv ? in.channels * kernel * kernel : static_cast<int>(in.size());
}

Architecture Architecture::mlp(const std::vector<int>& widths) {
    if (widths.size() < 2) {
        throw std::invalid_argument("Architecture::mlp needs at least [inputs, outputs]");
    }
    Architecture a;
    a.m_input = {widths.front(), 1, 1};
    for (std::size_t l = 0; l + 1 < widths.size(); ++l) {
        StackLayer s;
        s.kind = LayerKind::Dense;
        s.in = {widths[l], 1, 1};
        s.out = {widths[l + 1], 1, 1};
        s.param = a.m_paramLayers++;
        s.activated = l + 2 < widths.size();
        a.m_layers.push_back(s);
    }
    return a;
}

Architecture Architecture::stack(Shape input, const std::vector<LayerSpec>& layers, int outputs,
                                 const std::string& key) {
    Architecture a;
    a.m_input = input;
    Shape shape = input;
    bool flat = false;  // after the first dense layer
    for (std::size_t i = 0; i < layers.size(); ++i) {
        const LayerSpec& spec = layers[i];
        StackLayer s;
        s.kind = spec.kind;
        s.in = shape;
        const auto shapeText = [](Shape x) {
            return "[" + std::to_string(x.channels) + ", " + std::to_string(x.height) + ", " +
                   std::to_string(x.width) + "]";
        };
        if ((spec.kind == LayerKind::Conv || spec.kind == LayerKind::Pool) && flat) {
            throw ConfigError(field(key, i, "type"),
                              "a conv or pool layer cannot follow a dense layer (the input is "
                              "flattened before the first dense)");
        }
        switch (spec.kind) {
            case LayerKind::Conv: {
                s.kernel = spec.kernel;
                s.stride = spec.stride;
                int outH = 0;
                int outW = 0;
                if (spec.padding == Padding::Same) {
                    s.padTop = samePadBefore(shape.height, spec.kernel, spec.stride, outH);
                    s.padLeft = samePadBefore(shape.width, spec.kernel, spec.stride, outW);
                } else {
                    if (spec.kernel > shape.height || spec.kernel > shape.width) {
                        throw ConfigError(field(key, i, "kernel"),
                                          "a valid " + std::to_string(spec.kernel) + "x" +
                                              std::to_string(spec.kernel) +
                                              " convolution is larger than its input " +
                                              shapeText(shape));
                    }
                    outH = (shape.height - spec.kernel) / spec.stride + 1;
                    outW = (shape.width - spec.kernel) / spec.stride + 1;
                }
                s.out = {spec.filters, outH, outW};
                s.param = a.m_paramLayers++;
                s.activated = true;
                break;
            }
            case LayerKind::Pool: {
                if (spec.size > shape.height || spec.size > shape.width) {
                    throw ConfigError(field(key, i, "size"),
                                      "pooling " + std::to_string(spec.size) + "x" +
                                          std::to_string(spec.size) + " shrinks its input " +
                                          shapeText(shape) + " to nothing");
                }
                s.kernel = spec.size;
                s.pool = spec.pool;
                s.out = {shape.channels, shape.height / spec.size, shape.width / spec.size};
                break;
            }
            case LayerKind::Dense:
                // A first layer reads the rows as they are, already in the flatten order.
                s.flattens = i > 0 && !flat;
                flat = true;
                s.in = {static_cast<int>(shape.size()), 1, 1};
                s.out = {spec.units, 1, 1};
                s.param = a.m_paramLayers++;
                s.activated = true;
                s.l2 = spec.l2;
                break;
            case LayerKind::Dropout:
                // On the input every member would read its own copy of the shared images;
                // nothing the paper's networks need.
                if (a.m_paramLayers == 0) {
                    throw ConfigError(field(key, i, "type"),
                                      "a dropout layer must follow a conv or dense layer (dropout "
                                      "on the input is not supported)");
                }
                if (i >= static_cast<std::size_t>(kDropoutMaxLayers) ||
                    shape.size() > kDropoutMaxUnits) {
                    throw ConfigError(field(key, i, ""), "dropout masks cover the first " +
                                                             std::to_string(kDropoutMaxLayers) +
                                                             " layers, of at most " +
                                                             std::to_string(kDropoutMaxUnits) +
                                                             " values each; its "
                                                             "input is " +
                                                             shapeText(shape));
                }
                s.out = shape;
                s.rate = static_cast<float>(spec.rate);
                break;
        }
        if (s.out.size() > (int64_t{1} << 31) / 4) {
            throw ConfigError(field(key, i, ""), "the layer's output " + shapeText(s.out) +
                                                     " is too large for one example");
        }
        shape = s.out;
        a.m_layers.push_back(s);
    }
    StackLayer head;
    head.kind = LayerKind::Dense;
    head.flattens = !flat && !layers.empty();
    head.in = {static_cast<int>(shape.size()), 1, 1};
    head.out = {outputs, 1, 1};
    head.param = a.m_paramLayers++;
    head.activated = false;
    a.m_layers.push_back(head);
    return a;
}

bool Architecture::denseOnly() const {
    return std::all_of(m_layers.begin(), m_layers.end(),
                       [](const StackLayer& s) { return s.kind == LayerKind::Dense; });
}

bool Architecture::hasDropoutLayers() const {
    return std::any_of(m_layers.begin(), m_layers.end(),
                       [](const StackLayer& s) { return s.kind == LayerKind::Dropout; });
}

bool Architecture::hasL2() const {
    return std::any_of(m_layers.begin(), m_layers.end(),
                       [](const StackLayer& s) { return s.l2 > 0.0; });
}

const StackLayer& Architecture::paramLayer(int param) const {
    for (const StackLayer& s : m_layers) {
        if (s.param == param) {
            return s;
        }
    }
    throw std::out_of_range("Architecture::paramLayer: no parameterised layer " +
                            std::to_string(param));
}

std::vector<int64_t> Architecture::weightShape(int param) const {
    const StackLayer& s = paramLayer(param);
    if (s.kind == LayerKind::Conv) {
        return {s.out.channels, s.in.channels, s.kernel, s.kernel};
    }
    return {s.out.channels, s.in.channels};
}

double Architecture::forwardMacsPerExample() const {
    double macs = 0.0;
    for (const StackLayer& s : m_layers) {
        if (s.param >= 0) {
            macs += static_cast<double>(s.fanIn()) * static_cast<double>(s.out.size());
        }
    }
    return macs;
}

}  // namespace ensemble
