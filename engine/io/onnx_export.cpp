// An ensemble as one ONNX graph (members batched, normalisation and the ensemble's mixture
// inside), checked by ONNX's checker and shape inference, written self-contained or with its
// tensors in an external data file. One piece (~760 lines) because the graph's initializers are
// what the external-data writer lays out: the two share the weight list and its names.
#include "io/onnx_export.h"
#include "core/unreachable.h"

#include <onnx/checker.h>
#include <onnx/onnx_pb.h>
#include <onnx/shape_inference/implementation.h>

#include <bit>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <limits>
#include <ostream>
#include <regex>
#include <set>
#include <stdexcept>
#include <string_view>
#include <system_error>
#include <vector>

#include "core/errors.h"
#include "math/likelihood.h"
#include "math/loss.h"
#include "model/dropout_masks.h"
#include "sys/atomic_file.h"

#ifndef ENSEMBLE_VERSION
#define ENSEMBLE_VERSION "unknown"
#endif

namespace ensemble {

static_assert(std::endian::native == std::endian::little,
              "ONNX raw_data and external data are little-endian, written as in memory");

namespace {

enum DataType : int {
    kFloat = onnx::TensorProto::FLOAT,
    kUint8 = onnx::TensorProto::UINT8,
    kInt32 = onnx::TensorProto::INT32,
    kInt64 = onnx::TensorProto::INT64,
    kDouble = onnx::TensorProto::DOUBLE,
};

constexpr int64_t kIrVersion8 = 8;
constexpr int64_t kOpset = 17;
// The dimension that stands for the number of rows.
constexpr int64_t kRows = -1;
// Offsets in the data file are page-aligned so that readers (ONNX Runtime) can map tensors.
constexpr uint64_t kDataAlignment = 4096;

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
    unreachableKind("DType");
}

template <typename T>
std::string_view rawOf(const std::vector<T>& values) {
    return {reinterpret_cast<const char*>(values.data()), values.size() * sizeof(T)};
}

onnx::TensorProto tensorProto(const std::string& name, int dataType,
                              const std::vector<int64_t>& dims, std::string_view raw) {
    onnx::TensorProto t;
    for (int64_t d : dims) {
        t.add_dims(d);
    }
    t.set_data_type(dataType);
    if (!name.empty()) {
        t.set_name(name);
    }
    t.set_raw_data(raw.data(), raw.size());
    return t;
}

using Attribute = onnx::AttributeProto;

Attribute attrInt(const std::string& name, int64_t v) {
    Attribute a;
    a.set_name(name);
    a.set_i(v);
    a.set_type(onnx::AttributeProto::INT);
    return a;
}

Attribute attrInts(const std::string& name, const std::vector<int64_t>& values) {
    Attribute a;
    a.set_name(name);
    for (int64_t v : values) {
        a.add_ints(v);
    }
    a.set_type(onnx::AttributeProto::INTS);
    return a;
}

Attribute attrTensor(const std::string& name, const onnx::TensorProto& tensor) {
    Attribute a;
    a.set_name(name);
    *a.mutable_t() = tensor;
    a.set_type(onnx::AttributeProto::TENSOR);
    return a;
}

// An initializer whose bytes are the export's own (a view into the SafetensorsFile), stored
// inline or in the data file once the model's size is known.
struct Weight {
    onnx::TensorProto* tensor;  // RepeatedPtrField elements do not move
    std::string_view bytes;
};

// A graph under construction: nodes in topological order (each node's inputs exist before it).
class GraphBuilder {
  public:
    explicit GraphBuilder(onnx::GraphProto& graph) : m_graph(graph) {}

    // Adds a node; returns its output's name (`output`, or a fresh one).
    std::string node(const std::string& op, const std::vector<std::string>& inputs,
                     const std::vector<Attribute>& attributes = {}, std::string output = {}) {
        const std::string id = std::to_string(m_graph.node_size());
        if (output.empty()) {
            output = "t" + id + "_" + op;
        }
        onnx::NodeProto& n = *m_graph.add_node();
        for (const std::string& in : inputs) {
            n.add_input(in);
        }
        n.add_output(output);
        n.set_name(op + "_" + id);
        n.set_op_type(op);
        for (const Attribute& a : attributes) {
            *n.add_attribute() = a;
        }
        return output;
    }

    // One of the export's tensors; its bytes must outlive the builder.
    std::string weight(const std::string& name, int dataType, const std::vector<int64_t>& dims,
                       std::string_view bytes) {
        onnx::TensorProto* t = m_graph.add_initializer();
        *t = tensorProto(name, dataType, dims, {});
        t->clear_raw_data();  // no data field yet: inline or external, decided once all are known
        m_weights.push_back({t, bytes});
        return name;
    }
    std::string constI64(const std::vector<int64_t>& values, const std::vector<int64_t>& dims) {
        return constant("const" + std::to_string(m_constants++) + "_i64", kInt64, dims,
                        rawOf(values));
    }
    std::string constF32(float v) {
        return constant("const" + std::to_string(m_constants++) + "_f32", kFloat, {},
                        rawOf(std::vector<float>{v}));
    }
    std::string constTensorF32(const std::vector<float>& values, const std::vector<int64_t>& dims) {
        return constant("const" + std::to_string(m_constants++) + "_f32", kFloat, dims,
                        rawOf(values));
    }
    std::string constF64(double v) {
        return constant("const" + std::to_string(m_constants++) + "_f64", kDouble, {},
                        rawOf(std::vector<double>{v}));
    }

    // Dimensions: kRows stands for the symbolic "N".
    void input(const std::string& name, int elemType, const std::vector<int64_t>& dims) {
        valueInfo(*m_graph.add_input(), name, elemType, dims);
    }
    void output(const std::string& name, int elemType, const std::vector<int64_t>& dims) {
        valueInfo(*m_graph.add_output(), name, elemType, dims);
    }

    std::vector<Weight> weights() const { return m_weights; }

  private:
    // Small constants (shapes, axes, scalars) are always inline: shape inference reads them.
    std::string constant(const std::string& name, int dataType, const std::vector<int64_t>& dims,
                         std::string_view raw) {
        *m_graph.add_initializer() = tensorProto(name, dataType, dims, raw);
        return name;
    }

    static void valueInfo(onnx::ValueInfoProto& v, const std::string& name, int elemType,
                          const std::vector<int64_t>& dims) {
        v.set_name(name);
        onnx::TypeProto_Tensor& tensor = *v.mutable_type()->mutable_tensor_type();
        tensor.set_elem_type(elemType);
        onnx::TensorShapeProto& shape = *tensor.mutable_shape();
        for (int64_t d : dims) {
            onnx::TensorShapeProto_Dimension& dim = *shape.add_dim();
            if (d == kRows) {
                dim.set_dim_param("N");
            } else {
                dim.set_dim_value(d);
            }
        }
    }

    onnx::GraphProto& m_graph;
    std::vector<Weight> m_weights;
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

// The model, every export tensor an initializer whose data is left to the caller (returned).
std::vector<Weight> buildModel(onnx::ModelProto& model, const LoadedEnsemble& ensemble,
                               const SafetensorsFile& file) {
    const ParamLayout& layout = ensemble.layout;
    const Architecture& arch = layout.architecture();
    const int64_t k = layout.members();
    const int64_t d = layout.inputs();
    const int64_t outputs = layout.classes();
    const Likelihood likelihood = ensemble.config.model.likelihood;
    const Activation act = ensemble.config.model.activation;
    GraphBuilder g(*model.mutable_graph());

    // The export's own tensors, under their names, with their bytes.
    const auto tensor = [&](const std::string& name) {
        const Tensor& t = file.get(name);
        return g.weight(name, dataTypeOf(t.dtype), t.shape,
                        {reinterpret_cast<const char*>(t.data.data()), t.data.size()});
    };

    // A method that stores its one network (mc_dropout): member k's weights are the network's
    // times member k's dropout mask over the layer's input units or channels, the masks
    // constants regenerated from the stored seed (as importEnsemble folds them: the same float
    // products), the bias repeated for every member. Otherwise the tensors hold the K members.
    const bool network = ensembleMethodInfo(ensemble.method).storesNetwork;
    std::vector<std::vector<float>> inputMasks(static_cast<std::size_t>(arch.paramLayers()));
    if (network) {
        for (int64_t m = 0; m < k; ++m) {
            const std::vector<std::vector<float>> masks =
                dropoutMemberMasks(arch, static_cast<float>(ensemble.config.model.dropout),
                                   ensemble.dropoutSeed, static_cast<uint32_t>(m));
            for (std::size_t l = 1; l < masks.size(); ++l) {
                inputMasks[l].insert(inputMasks[l].end(), masks[l - 1].begin(), masks[l - 1].end());
            }
        }
    }
    // BatchEnsemble: member k's weight is (W * s_k) * r_k, the shared weight times its fast
    // weights over the output and input units (channels for a conv), the same float products as
    // batchEnsembleExpand; the biases are stored per member.
    const bool fastWeights = ensembleMethodInfo(ensemble.method).fastWeights;
    const auto batchEnsembleWeight = [&](int param) {
        const std::vector<int64_t> shape = layout.weightShape(param);  // [K, ...]
        const int64_t out = shape[1];
        const int64_t inUnits = file.get(paramName(param, "fast_in")).shape[1];
        std::vector<int64_t> one = shape;
        one[0] = 1;
        std::vector<int64_t> sShape(shape.size(), 1);
        sShape[0] = k;
        sShape[1] = out;
        std::vector<int64_t> rShape(shape.size(), 1);
        rShape[0] = k;
        rShape[2] = inUnits;
        const auto shaped = [&](const std::string& name, const std::vector<int64_t>& dims) {
            return g.node("Reshape",
                          {tensor(name), g.constI64(dims, {static_cast<int64_t>(dims.size())})});
        };
        const std::string scaled = g.node("Mul", {shaped(paramName(param, "weight"), one),
                                                  shaped(paramName(param, "fast_out"), sShape)});
        return g.node("Mul", {scaled, shaped(paramName(param, "fast_in"), rShape)});
    };
    const auto memberWeight = [&](int param) {
        if (fastWeights) {
            return batchEnsembleWeight(param);
        }
        const std::string w = tensor(paramName(param, "weight"));
        if (!network) {
            return w;
        }
        const std::vector<int64_t> shape = layout.weightShape(param);  // [K, ...]
        const std::vector<float>& mask = inputMasks[static_cast<std::size_t>(param)];
        if (mask.empty()) {
            return g.node("Expand", {w, g.constI64(shape, {static_cast<int64_t>(shape.size())})});
        }
        const int64_t units = static_cast<int64_t>(mask.size()) / k;
        if (shape.size() == 5) {
            // [1, F, C, kh, kw] * [K, 1, C, 1, 1]: input channel c of member k.
            return g.node("Mul", {w, g.constTensorF32(mask, {k, 1, units, 1, 1})});
        }
        // [1, out, in] as [1, out, units, span] (input column i reads unit i / span: a dense
        // layer after a conv/pool stack reads a channel's span = H W flattened positions).
        const int64_t out = shape[1];
        const int64_t in = shape[2];
        const std::string grouped =
            g.node("Reshape", {w, g.constI64({1, out, units, in / units}, {4})});
        const std::string masked =
            g.node("Mul", {grouped, g.constTensorF32(mask, {k, 1, units, 1})});
        return g.node("Reshape", {masked, g.constI64({k, out, in}, {3})});
    };
    const auto memberBias = [&](int param) {
        const std::string b = tensor(paramName(param, "bias"));
        if (!network) {
            return b;
        }
        return g.node("Expand", {b, g.constI64({k, layout.layer(param).out}, {2})});
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
                    "Reshape", {memberWeight(s.param),
                                g.constI64({k * f, s.in.channels, s.kernel, s.kernel}, {4})});
                const std::string b =
                    g.node("Reshape", {memberBias(s.param), g.constI64({k * f}, {1})});
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
                const std::string wt =
                    g.node("Transpose", {memberWeight(s.param)}, {attrInts("perm", {0, 2, 1})});
                const std::string b =
                    g.node("Unsqueeze", {memberBias(s.param), g.constI64({1}, {1})});
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
            // in its stable form max(x, 0) + log1p(e^-|x|) with log1p as math/loss.h's
            // log1pLanes computes it, operation for operation (ONNX has no Log1p): with
            // t = e^-|x|, u = 1 + t and d = u - 1, log(u) * t / (d + [d == 0]) + [d == 0] * t.
            // Then times std^2 in double.
            const std::string raw =
                g.node("Gather", {h, g.constI64({1}, {})}, {attrInt("axis", 2)});
            const std::string expNeg = g.node("Exp", {g.node("Neg", {g.node("Abs", {raw})})});
            const std::string onePlus = g.node("Add", {g.constF32(1.0f), expNeg});
            const std::string onePlusLessOne = g.node("Sub", {onePlus, g.constF32(1.0f)});
            const std::string rounded =
                g.node("Cast", {g.node("Equal", {onePlusLessOne, g.constF32(0.0f)})},
                       {attrInt("to", kFloat)});
            const std::string tail =
                g.node("Add", {g.node("Div", {g.node("Mul", {g.node("Log", {onePlus}), expNeg}),
                                              g.node("Add", {onePlusLessOne, rounded})}),
                               g.node("Mul", {rounded, expNeg})});
            const std::string sigma2 =
                g.node("Add", {g.node("Add", {g.node("Relu", {raw}), tail}),
                               g.constF32(static_cast<float>(kMinVariance))});
            variance = g.node("Mul", {toDouble(sigma2), g.node("Mul", {targetStd, targetStd})});
        } else {
            const onnx::TensorProto zero =
                tensorProto({}, kDouble, {1}, rawOf(std::vector<double>{0.0}));
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

    model.set_ir_version(kIrVersion8);
    model.set_producer_name("EnsembleLab");
    model.set_producer_version(ENSEMBLE_VERSION);
    model.set_domain("ensemblelab");
    model.set_model_version(1);
    model.set_doc_string("An ensemble of " + std::to_string(k) +
                         " members trained with EnsembleLab; input x: raw features [N, " +
                         std::to_string(d) + "]; outputs as `ensemble-cli predict` writes them.");
    onnx::GraphProto& graph = *model.mutable_graph();
    graph.set_name("ensemble");
    graph.set_doc_string("dataset " + ensemble.datasetName + ", step " +
                         std::to_string(ensemble.step));
    onnx::OperatorSetIdProto& opset = *model.add_opset_import();
    opset.set_domain("");
    opset.set_version(kOpset);
    const auto entry = [&](const std::string& key, const std::string& value) {
        onnx::StringStringEntryProto& e = *model.add_metadata_props();
        e.set_key(key);
        e.set_value(value);
    };
    for (const auto& [key, value] : file.metadata) {
        entry(key, value);
    }
    if (file.metadata.count("ensemblelab_version") == 0) {
        entry("ensemblelab_version", ENSEMBLE_VERSION);
    }
    return g.weights();
}

[[noreturn]] void checkerFailed(const std::exception& e) {
    throw RuntimeError(
        "onnx: the model built for this ensemble fails ONNX's checker (a bug in "
        "EnsembleLab; export safetensors or npz instead): " +
        std::string(e.what()));
}

// Strict shape inference (every node's types and shapes consistent) on a copy, so the model
// written carries no inferred value_info. Needs no weight data, only the small constants.
void inferShapes(const onnx::ModelProto& model) {
    try {
        onnx::ModelProto copy = model;
        onnx::shape_inference::InferShapes(copy, onnx::OpSchemaRegistry::Instance(),
                                           onnx::ShapeInferenceOptions(/*check_type=*/true,
                                                                       /*strict_mode=*/1));
    } catch (const std::exception& e) {
        checkerFailed(e);
    }
}

void serialize(const onnx::ModelProto& model, std::ostream& out) {
    if (!model.SerializeToOstream(&out) && out) {
        throw RuntimeError("onnx: protobuf could not serialise the model");
    }
}

// FNV-1a, 64 bits: names the data file after its bytes.
class Fnv64 {
  public:
    void add(std::string_view bytes) {
        for (const char c : bytes) {
            m_hash = (m_hash ^ static_cast<unsigned char>(c)) * 0x100000001b3ULL;
        }
    }
    void add(uint64_t v) {
        char b[8];
        std::memcpy(b, &v, 8);
        add(std::string_view(b, 8));
    }
    std::string hex() const {
        char text[17];
        std::snprintf(text, sizeof(text), "%016llx", static_cast<unsigned long long>(m_hash));
        return text;
    }

  private:
    uint64_t m_hash = 0xcbf29ce484222325ULL;
};

// "<model>.<16 hex digits>.data": the names this writer gives data files beside `model`.
bool isOurDataFile(const std::string& location, const std::string& modelName) {
    static const std::regex kTag("[0-9a-f]{16}\\.data");
    return location.starts_with(modelName + ".") &&
           std::regex_match(location.substr(modelName.size() + 1), kTag);
}

// The data files of ours that the model now at `path` refers to, to remove once a new model
// has replaced it. None for a new name, a stream or a self-contained model (which may be up to
// 2 GiB, and is not read).
std::set<std::filesystem::path> dataFilesAt(const std::string& path) {
    std::set<std::filesystem::path> found;
    const OutputTarget target = resolveOutputPath(path);
    std::error_code ec;
    if (target.kind != OutputTarget::Kind::Atomic ||
        !std::filesystem::is_regular_file(target.file, ec) ||
        std::filesystem::file_size(target.file, ec) > (uint64_t{64} << 20) || ec) {
        return found;
    }
    onnx::ModelProto old;
    try {
        if (!old.ParseFromString(readFile(target.file))) {
            return found;
        }
    } catch (const Error&) {
        return found;
    }
    const std::filesystem::path modelFile(target.file);
    const std::string name = modelFile.filename().string();
    for (const onnx::TensorProto& t : old.graph().initializer()) {
        for (const onnx::StringStringEntryProto& e : t.external_data()) {
            if (e.key() == "location" && isOurDataFile(e.value(), name)) {
                found.insert(modelFile.parent_path() / e.value());
            }
        }
    }
    return found;
}

// Best effort: the new model is in place and complete either way.
void removeDataFiles(const std::set<std::filesystem::path>& files,
                     const std::filesystem::path& keep = {}) {
    for (const std::filesystem::path& f : files) {
        if (f != keep) {
            std::error_code ec;
            std::filesystem::remove(f, ec);
        }
    }
}

// The external-data form: the weights to "<name>.<hash>.data", then the model that refers
// to them, then the old model's data file removed (see onnx_export.h).
void writeExternal(const std::string& path, onnx::ModelProto& model,
                   const std::vector<Weight>& weights) {
    const OutputTarget target = resolveOutputPath(path);
    if (target.kind != OutputTarget::Kind::Atomic) {
        throw RuntimeError(ErrorKind::Io,
                           path +
                               ": cannot write: an ONNX model this large is two files (the "
                               "model and its weights' data file beside it); name a file, "
                               "not a stream or device");
    }
    const std::filesystem::path modelFile(target.file);
    const std::filesystem::path dir = modelFile.parent_path();
    const std::string modelName = modelFile.filename().string();

    std::vector<uint64_t> offsets;
    uint64_t end = 0;
    Fnv64 hash;
    for (const Weight& w : weights) {
        const uint64_t offset = (end + kDataAlignment - 1) / kDataAlignment * kDataAlignment;
        offsets.push_back(offset);
        hash.add(offset);
        hash.add(w.bytes);
        end = offset + w.bytes.size();
    }
    const std::string location = modelName + "." + hash.hex() + ".data";
    for (std::size_t i = 0; i < weights.size(); ++i) {
        onnx::TensorProto& t = *weights[i].tensor;
        t.set_data_location(onnx::TensorProto::EXTERNAL);
        const auto entry = [&](const char* key, const std::string& value) {
            onnx::StringStringEntryProto& e = *t.add_external_data();
            e.set_key(key);
            e.set_value(value);
        };
        entry("location", location);
        entry("offset", std::to_string(offsets[i]));
        entry("length", std::to_string(weights[i].bytes.size()));
    }
    inferShapes(model);

    const std::set<std::filesystem::path> oldData = dataFilesAt(path);
    const std::filesystem::path dataFile = dir / location;
    std::error_code ec;
    // Same name, same bytes: a data file already there is this one (an unchanged re-export).
    const bool dataExisted = std::filesystem::exists(dataFile, ec);
    writeFileAtomic(dataFile.string(), [&](std::ostream& out) {
        uint64_t at = 0;
        const std::string padding(kDataAlignment, '\0');
        for (std::size_t i = 0; i < weights.size(); ++i) {
            out.write(padding.data(), static_cast<std::streamsize>(offsets[i] - at));
            out.write(weights[i].bytes.data(),
                      static_cast<std::streamsize>(weights[i].bytes.size()));
            at = offsets[i] + weights[i].bytes.size();
        }
    });
    try {
        // check_model(ModelProto) would look for the data file from the working directory. This
        // is what it runs, with the model's directory in the context as check_model(path) has.
        try {
            onnx::checker::CheckerContext ctx;
            ctx.set_ir_version(static_cast<int>(model.ir_version()));
            ctx.set_opset_imports({{"", static_cast<int>(kOpset)}});
            ctx.set_model_dir(dir.empty() ? std::string(".") : dir.string());
            onnx::checker::LexicalScopeContext lexical;
            onnx::checker::check_graph(model.graph(), ctx, lexical);
        } catch (const std::exception& e) {
            checkerFailed(e);
        }
        writeFileAtomic(path, [&](std::ostream& out) { serialize(model, out); });
    } catch (...) {
        if (!dataExisted) {
            std::filesystem::remove(dataFile, ec);
        }
        throw;
    }
    removeDataFiles(oldData, dataFile);
}

}  // namespace

void writeOnnx(const std::string& path, const SafetensorsFile& file, const OnnxOptions& options) {
    const LoadedEnsemble ensemble = importEnsemble(file);
    onnx::ModelProto model;
    const std::vector<Weight> weights = buildModel(model, ensemble, file);
    uint64_t bytes = 0;
    for (const Weight& w : weights) {
        bytes += w.bytes.size();
    }
    if (bytes > options.externalDataAbove) {
        writeExternal(path, model, weights);
        return;
    }
    inferShapes(model);
    for (const Weight& w : weights) {
        w.tensor->set_raw_data(w.bytes.data(), w.bytes.size());
    }
    try {
        onnx::checker::check_model(model);
    } catch (const std::exception& e) {
        checkerFailed(e);
    }
    const std::set<std::filesystem::path> oldData = dataFilesAt(path);
    writeFileAtomic(path, [&](std::ostream& out) { serialize(model, out); });
    removeDataFiles(oldData);
}

}  // namespace ensemble
