#include "io/onnx_export.h"

#include <bit>
#include <cstring>
#include <limits>
#include <string_view>
#include <vector>

#include "core/errors.h"
#include "io/atomic_file.h"
#include "math/loss.h"
#include "model/likelihood.h"

#ifndef ENSEMBLE_VERSION
#define ENSEMBLE_VERSION "unknown"
#endif

namespace ensemble {

static_assert(std::endian::native == std::endian::little,
              "ONNX raw_data is little-endian, written as in memory");

namespace {

// Protobuf wire format (https://protobuf.dev/programming-guides/encoding/): each field is a
// varint key (field number << 3 | wire type) and its value; nested messages and bytes are
// length-delimited. onnx.proto is proto2, so repeated scalars are written unpacked (one key
// per value), which every protobuf parser reads.
class Wire {
  public:
    void varint(uint64_t v) {
        while (v >= 0x80) {
            m_bytes += static_cast<char>((v & 0x7F) | 0x80);
            v >>= 7;
        }
        m_bytes += static_cast<char>(v);
    }
    void key(int field, int wireType) {
        varint((static_cast<uint64_t>(field) << 3) | static_cast<uint64_t>(wireType));
    }
    void int64(int field, int64_t v) {
        key(field, 0);
        varint(static_cast<uint64_t>(v));  // negative numbers: ten bytes, as protobuf does
    }
    void bytes(int field, std::string_view s) {
        key(field, 2);
        varint(s.size());
        m_bytes += s;
    }
    void message(int field, const Wire& w) { bytes(field, w.m_bytes); }
    void float32(int field, float f) {
        key(field, 5);
        uint32_t bits = 0;
        std::memcpy(&bits, &f, 4);
        for (int i = 0; i < 4; ++i) {
            m_bytes += static_cast<char>((bits >> (8 * i)) & 0xFF);
        }
    }
    const std::string& str() const { return m_bytes; }

  private:
    std::string m_bytes;
};

// onnx.proto field numbers and enums (IR version 8).
namespace field {
// ModelProto
constexpr int kIrVersion = 1, kProducerName = 2, kProducerVersion = 3, kDomain = 4,
              kModelVersion = 5, kModelDoc = 6, kGraph = 7, kOpsetImport = 8, kMetadataProps = 14;
// OperatorSetIdProto, StringStringEntryProto
constexpr int kOpsetDomain = 1, kOpsetVersion = 2, kEntryKey = 1, kEntryValue = 2;
// GraphProto
constexpr int kNode = 1, kGraphName = 2, kInitializer = 5, kGraphDoc = 10, kInput = 11,
              kOutput = 12;
// NodeProto
constexpr int kNodeInput = 1, kNodeOutput = 2, kNodeName = 3, kOpType = 4, kAttribute = 5;
// AttributeProto
constexpr int kAttrName = 1, kAttrF = 2, kAttrI = 3, kAttrT = 5, kAttrInts = 8, kAttrType = 20;
// TensorProto
constexpr int kDims = 1, kDataType = 2, kTensorName = 8, kRawData = 9;
// ValueInfoProto, TypeProto, TypeProto.Tensor, TensorShapeProto, Dimension
constexpr int kValueName = 1, kValueType = 2, kTensorType = 1, kElemType = 1, kShape = 2, kDim = 1,
              kDimValue = 1, kDimParam = 2;
}  // namespace field

enum AttrType : int { kAttrFloat = 1, kAttrInt = 2, kAttrTensor = 4, kAttrIntList = 7 };
enum DataType : int { kFloat = 1, kUint8 = 2, kInt32 = 6, kInt64 = 7, kDouble = 11 };

constexpr int kIrVersion8 = 8;
constexpr int kOpset = 17;
// The dimension that stands for the number of rows.
constexpr int64_t kRows = -1;

int dataTypeOf(DType dtype) {
    switch (dtype) {
        case DType::F32:
            return kFloat;
        case DType::I32:
            return kInt32;
        case DType::F64:
            return kDouble;
        case DType::I64:
            return kInt64;
        case DType::U8:
            return kUint8;
    }
    return kFloat;
}

Wire tensorProto(const std::string& name, int dataType, const std::vector<int64_t>& dims,
                 std::string_view raw) {
    Wire t;
    for (int64_t d : dims) {
        t.int64(field::kDims, d);
    }
    t.int64(field::kDataType, dataType);
    if (!name.empty()) {
        t.bytes(field::kTensorName, name);
    }
    t.bytes(field::kRawData, raw);
    return t;
}

template <typename T>
std::string_view rawOf(const std::vector<T>& values) {
    return {reinterpret_cast<const char*>(values.data()), values.size() * sizeof(T)};
}

struct Attribute {
    Wire wire;
};

Attribute attrInt(const std::string& name, int64_t v) {
    Attribute a;
    a.wire.bytes(field::kAttrName, name);
    a.wire.int64(field::kAttrI, v);
    a.wire.int64(field::kAttrType, kAttrInt);
    return a;
}

Attribute attrInts(const std::string& name, const std::vector<int64_t>& values) {
    Attribute a;
    a.wire.bytes(field::kAttrName, name);
    for (int64_t v : values) {
        a.wire.int64(field::kAttrInts, v);
    }
    a.wire.int64(field::kAttrType, kAttrIntList);
    return a;
}

Attribute attrTensor(const std::string& name, const Wire& tensor) {
    Attribute a;
    a.wire.bytes(field::kAttrName, name);
    a.wire.message(field::kAttrT, tensor);
    a.wire.int64(field::kAttrType, kAttrTensor);
    return a;
}

// A graph under construction: nodes in topological order (each node's inputs exist before it).
class GraphBuilder {
  public:
    // Adds a node; returns its output's name (`output`, or a fresh one).
    std::string node(const std::string& op, const std::vector<std::string>& inputs,
                     const std::vector<Attribute>& attributes = {}, std::string output = {}) {
        const std::string id = std::to_string(m_nodes.size());
        if (output.empty()) {
            output = "t" + id + "_" + op;
        }
        Wire n;
        for (const std::string& in : inputs) {
            n.bytes(field::kNodeInput, in);
        }
        n.bytes(field::kNodeOutput, output);
        n.bytes(field::kNodeName, op + "_" + id);
        n.bytes(field::kOpType, op);
        for (const Attribute& a : attributes) {
            n.message(field::kAttribute, a.wire);
        }
        m_nodes.push_back(std::move(n));
        return output;
    }

    std::string initializer(const std::string& name, int dataType, const std::vector<int64_t>& dims,
                            std::string_view raw) {
        m_initializers.push_back(tensorProto(name, dataType, dims, raw));
        m_initializerBytes += raw.size();
        return name;
    }
    std::string constI64(const std::vector<int64_t>& values, const std::vector<int64_t>& dims) {
        return initializer("const" + std::to_string(m_constants++) + "_i64", kInt64, dims,
                           rawOf(values));
    }
    std::string constF32(float v) {
        return initializer("const" + std::to_string(m_constants++) + "_f32", kFloat, {},
                           rawOf(std::vector<float>{v}));
    }
    std::string constF64(double v) {
        return initializer("const" + std::to_string(m_constants++) + "_f64", kDouble, {},
                           rawOf(std::vector<double>{v}));
    }

    // Dimensions: kRows stands for the symbolic "N".
    void input(const std::string& name, int elemType, const std::vector<int64_t>& dims) {
        m_inputs.push_back(valueInfo(name, elemType, dims));
    }
    void output(const std::string& name, int elemType, const std::vector<int64_t>& dims) {
        m_outputs.push_back(valueInfo(name, elemType, dims));
    }

    std::size_t initializerBytes() const { return m_initializerBytes; }

    Wire graph(const std::string& name, const std::string& doc) const {
        Wire g;
        for (const Wire& n : m_nodes) {
            g.message(field::kNode, n);
        }
        g.bytes(field::kGraphName, name);
        for (const Wire& t : m_initializers) {
            g.message(field::kInitializer, t);
        }
        g.bytes(field::kGraphDoc, doc);
        for (const Wire& v : m_inputs) {
            g.message(field::kInput, v);
        }
        for (const Wire& v : m_outputs) {
            g.message(field::kOutput, v);
        }
        return g;
    }

  private:
    static Wire valueInfo(const std::string& name, int elemType, const std::vector<int64_t>& dims) {
        Wire shape;
        for (int64_t d : dims) {
            Wire dim;
            if (d == kRows) {
                dim.bytes(field::kDimParam, "N");
            } else {
                dim.int64(field::kDimValue, d);
            }
            shape.message(field::kDim, dim);
        }
        Wire tensor;
        tensor.int64(field::kElemType, elemType);
        tensor.message(field::kShape, shape);
        Wire type;
        type.message(field::kTensorType, tensor);
        Wire v;
        v.bytes(field::kValueName, name);
        v.message(field::kValueType, type);
        return v;
    }

    std::vector<Wire> m_nodes;
    std::vector<Wire> m_initializers;
    std::vector<Wire> m_inputs;
    std::vector<Wire> m_outputs;
    std::size_t m_initializerBytes = 0;
    int m_constants = 0;
};

// How the activations between layers are laid out.
enum class Form {
    SharedFlat,     // [N, F]: the input, before any parameterised layer (same for every member)
    SharedSpatial,  // [N, C, H, W]: the same, as images
    MemberSpatial,  // [N, K*C, H, W]: member k's channels are [k C, (k + 1) C)
    MemberFlat,     // [K, N, F]
};

std::string activate(GraphBuilder& g, Activation act, const std::string& z) {
    switch (act) {
        case Activation::Relu:
            return g.node("Relu", {z});
        case Activation::Tanh:
            return g.node("Tanh", {z});
        case Activation::Gelu:
            break;
    }
    // math/activations.h: 0.5 z (1 + erf(z / sqrt 2)), in that order of operations.
    const std::string half = g.node("Mul", {g.constF32(0.5f), z});
    const std::string erf =
        g.node("Erf", {g.node("Mul", {z, g.constF32(0.70710678118654752440f)})});
    return g.node("Mul", {half, g.node("Add", {g.constF32(1.0f), erf})});
}

std::string paramName(int l, const char* what) {
    return "layers." + std::to_string(l) + "." + what;
}

}  // namespace

std::string onnxModel(const LoadedEnsemble& ensemble, const SafetensorsFile& file) {
    const ParamLayout& layout = ensemble.layout;
    const Architecture& arch = layout.architecture();
    const int64_t k = layout.members();
    const int64_t d = layout.inputs();
    const int64_t outputs = layout.classes();
    const Likelihood likelihood = ensemble.config.model.likelihood;
    const Activation act = ensemble.config.model.activation;
    GraphBuilder g;

    // The export's own tensors, under their names, with their bytes.
    const auto tensor = [&](const std::string& name) {
        const Tensor& t = file.get(name);
        return g.initializer(name, dataTypeOf(t.dtype), t.shape,
                             {reinterpret_cast<const char*>(t.data.data()), t.data.size()});
    };

    g.input("x", kFloat, {kRows, d});
    // (x - mean) / std, as predictLogProbs normalises (two float operations).
    std::string h = g.node(
        "Div", {g.node("Sub", {"x", tensor("normalization.mean")}), tensor("normalization.std")});
    Form form = Form::SharedFlat;
    const Shape input = arch.input();
    const auto toSpatial = [&] {
        if (form == Form::SharedFlat) {
            // Rows are (channel, row, column): PyTorch's flatten order. 0 keeps N.
            h = g.node("Reshape",
                       {h, g.constI64({0, input.channels, input.height, input.width}, {4})});
            form = Form::SharedSpatial;
        }
    };
    for (const StackLayer& s : arch.layers()) {
        switch (s.kind) {
            case LayerKind::Conv: {
                toSpatial();
                // [K, F, C, k, k] -> [K F, C, k, k]: every member's filters in one Conv; on the
                // shared input a plain Conv, on the members' channels a grouped one.
                const int64_t f = s.out.channels;
                const std::string w = g.node(
                    "Reshape", {tensor(paramName(s.param, "weight")),
                                g.constI64({k * f, s.in.channels, s.kernel, s.kernel}, {4})});
                const std::string b = g.node(
                    "Reshape", {tensor(paramName(s.param, "bias")), g.constI64({k * f}, {1})});
                // "same" pads total = (out - 1) stride + kernel - in, the smaller half first
                // (StackLayer::padTop); "valid" has none.
                const int64_t padBottom = std::max<int64_t>(
                    0, int64_t{s.out.height - 1} * s.stride + s.kernel - s.in.height - s.padTop);
                const int64_t padRight = std::max<int64_t>(
                    0, int64_t{s.out.width - 1} * s.stride + s.kernel - s.in.width - s.padLeft);
                h = g.node("Conv", {h, w, b},
                           {attrInts("kernel_shape", {s.kernel, s.kernel}),
                            attrInts("strides", {s.stride, s.stride}),
                            attrInts("pads", {s.padTop, s.padLeft, padBottom, padRight}),
                            attrInts("dilations", {1, 1}),
                            attrInt("group", form == Form::SharedSpatial ? 1 : k)});
                h = activate(g, act, h);
                form = Form::MemberSpatial;
                break;
            }
            case LayerKind::Pool: {
                toSpatial();
                // Window = stride and the output rounded down: every window is whole.
                h = g.node(s.pool == PoolKind::Max ? "MaxPool" : "AveragePool", {h},
                           {attrInts("kernel_shape", {s.kernel, s.kernel}),
                            attrInts("strides", {s.kernel, s.kernel})});
                break;
            }
            case LayerKind::Dense: {
                const int64_t features = s.in.channels;
                if (form == Form::SharedSpatial) {
                    h = g.node("Reshape", {h, g.constI64({0, features}, {2})});
                    form = Form::SharedFlat;
                } else if (form == Form::MemberSpatial) {
                    // [N, K C, H, W] -> [N, K, C H W] -> [K, N, C H W]: each member's
                    // (channel, row, column) flatten order.
                    h = g.node("Reshape", {h, g.constI64({0, k, features}, {3})});
                    h = g.node("Transpose", {h}, {attrInts("perm", {1, 0, 2})});
                    form = Form::MemberFlat;
                }
                // [K, out, in] -> [K, in, out]; a shared [N, in] input broadcasts to [K, N, out].
                const std::string wt = g.node("Transpose", {tensor(paramName(s.param, "weight"))},
                                              {attrInts("perm", {0, 2, 1})});
                const std::string b =
                    g.node("Unsqueeze", {tensor(paramName(s.param, "bias")), g.constI64({1}, {1})});
                h = g.node("Add", {g.node("MatMul", {h, wt}), b});
                if (s.activated) {
                    h = activate(g, act, h);
                }
                form = Form::MemberFlat;
                break;
            }
        }
    }
    if (form != Form::MemberFlat) {
        throw RuntimeError("onnx: the architecture does not end in a dense layer");
    }
    // h: the head's outputs, [K, N, outputs].

    const std::vector<uint8_t> include = includedMembers(ensemble);
    std::vector<int64_t> used;
    for (int64_t m = 0; m < k; ++m) {
        if (include[static_cast<std::size_t>(m)] != 0) {
            used.push_back(m);
        }
    }
    const auto overUsed = [&](const std::string& perMember) {
        if (static_cast<int64_t>(used.size()) == k) {
            return perMember;
        }
        return g.node("Gather", {perMember, g.constI64(used, {static_cast<int64_t>(used.size())})},
                      {attrInt("axis", 0)});
    };
    const auto meanOverMembers = [&](const std::string& x, const std::string& out = {}) {
        return g.node("ReduceMean", {x}, {attrInts("axes", {0}), attrInt("keepdims", 0)}, out);
    };

    if (!isRegression(likelihood)) {
        const std::string probs = g.node("Softmax", {h}, {attrInt("axis", 2)}, "member_probs");
        if (!used.empty()) {
            meanOverMembers(overUsed(probs), "ens_probs");
        } else {
            // Every member diverged: predict writes NaN.
            g.node("Mul",
                   {meanOverMembers(probs), g.constF32(std::numeric_limits<float>::quiet_NaN())},
                   {}, "ens_probs");
        }
        g.output("ens_probs", kFloat, {kRows, outputs});
        g.output("member_probs", kFloat, {k, kRows, outputs});
    } else {
        // metrics/regression.h memberGaussians and mixturePoints, in float64 as there.
        const auto toDouble = [&](const std::string& x) {
            return g.node("Cast", {x}, {attrInt("to", kDouble)});
        };
        const auto toFloat = [&](const std::string& x, const std::string& out) {
            return g.node("Cast", {x}, {attrInt("to", kFloat)}, out);
        };
        const std::string targetMean = toDouble(tensor("normalization.target_mean"));
        const std::string targetStd = toDouble(tensor("normalization.target_std"));
        const std::string mu = g.node("Gather", {h, g.constI64({0}, {})}, {attrInt("axis", 2)});
        const std::string mean =
            g.node("Add", {g.node("Mul", {toDouble(mu), targetStd}), targetMean});
        std::string variance;
        if (likelihood == Likelihood::Gaussian) {
            // sigma^2 = softplus(raw) + 1e-6 in float (math/loss.h gaussianVariance), softplus
            // in its stable form max(x, 0) + log(1 + e^-|x|); then times std^2 in double.
            const std::string raw =
                g.node("Gather", {h, g.constI64({1}, {})}, {attrInt("axis", 2)});
            const std::string tail = g.node(
                "Log", {g.node("Add", {g.constF32(1.0f),
                                       g.node("Exp", {g.node("Neg", {g.node("Abs", {raw})})})})});
            const std::string sigma2 =
                g.node("Add", {g.node("Add", {g.node("Relu", {raw}), tail}),
                               g.constF32(static_cast<float>(kMinVariance))});
            variance = g.node("Mul", {toDouble(sigma2), g.node("Mul", {targetStd, targetStd})});
        } else {
            Wire zero = tensorProto({}, kDouble, {1}, rawOf(std::vector<double>{0.0}));
            variance =
                g.node("ConstantOfShape", {g.node("Shape", {mean})}, {attrTensor("value", zero)});
        }
        toFloat(mean, "member_mean");
        toFloat(g.node("Sqrt", {variance}), "member_std");
        if (!used.empty()) {
            const std::string means = overUsed(mean);
            const std::string ensMean = meanOverMembers(means);
            const std::string aleatoric = meanOverMembers(overUsed(variance));
            const std::string dev = g.node("Sub", {means, ensMean});
            const std::string epistemic = meanOverMembers(g.node("Mul", {dev, dev}));
            toFloat(ensMean, "ens_mean");
            toFloat(g.node("Sqrt", {g.node("Add", {aleatoric, epistemic})}), "ens_std");
            toFloat(g.node("Sqrt", {aleatoric}), "ens_aleatoric_std");
            toFloat(g.node("Sqrt", {epistemic}), "ens_epistemic_std");
        } else {
            const std::string nan = g.node(
                "Mul",
                {meanOverMembers(mean), g.constF64(std::numeric_limits<double>::quiet_NaN())});
            for (const char* name :
                 {"ens_mean", "ens_std", "ens_aleatoric_std", "ens_epistemic_std"}) {
                toFloat(nan, name);
            }
        }
        for (const char* name : {"ens_mean", "ens_std", "ens_aleatoric_std", "ens_epistemic_std"}) {
            g.output(name, kFloat, {kRows});
        }
        g.output("member_mean", kFloat, {k, kRows});
        g.output("member_std", kFloat, {k, kRows});
    }

    // Protobuf refuses messages of 2 GiB or more; the model is its weights plus a few KB.
    constexpr std::size_t kLimit = (std::size_t{1} << 31) - (std::size_t{1} << 20);
    if (g.initializerBytes() > kLimit) {
        throw RuntimeError("onnx: the ensemble's weights are " +
                           std::to_string(g.initializerBytes()) +
                           " bytes; an ONNX model in one file is limited to 2 GiB by protobuf. "
                           "Export safetensors or npz instead");
    }

    Wire model;
    model.int64(field::kIrVersion, kIrVersion8);
    model.bytes(field::kProducerName, "EnsembleLab");
    model.bytes(field::kProducerVersion, ENSEMBLE_VERSION);
    model.bytes(field::kDomain, "ensemblelab");
    model.int64(field::kModelVersion, 1);
    model.bytes(field::kModelDoc, "An ensemble of " + std::to_string(k) +
                                      " members trained with EnsembleLab; "
                                      "input x: raw features [N, " +
                                      std::to_string(d) +
                                      "]; outputs as `ensemble-cli predict` writes them.");
    model.message(field::kGraph, g.graph("ensemble", "dataset " + ensemble.datasetName + ", step " +
                                                         std::to_string(ensemble.step)));
    Wire opset;
    opset.bytes(field::kOpsetDomain, "");
    opset.int64(field::kOpsetVersion, kOpset);
    model.message(field::kOpsetImport, opset);
    const auto entry = [&](const std::string& key, const std::string& value) {
        Wire e;
        e.bytes(field::kEntryKey, key);
        e.bytes(field::kEntryValue, value);
        model.message(field::kMetadataProps, e);
    };
    for (const auto& [key, value] : file.metadata) {
        entry(key, value);
    }
    if (file.metadata.count("ensemblelab_version") == 0) {
        entry("ensemblelab_version", ENSEMBLE_VERSION);
    }
    return model.str();
}

void writeOnnx(const std::string& path, const SafetensorsFile& file) {
    const LoadedEnsemble ensemble = importEnsemble(file);
    writeFileAtomic(path, onnxModel(ensemble, file));
}

}  // namespace ensemble
