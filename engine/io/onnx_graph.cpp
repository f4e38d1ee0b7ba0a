// The ensemble's ONNX graph: the members batched in each node (a grouped Conv, a batched
// MatMul), their weights as the export stores them (a one-network method's derived in the
// graph), normalisation and the ensemble's mixture inside. onnx_export.cpp gives it the model's
// identity, checks it and writes it.
#include "io/onnx_graph.h"

#include <algorithm>
#include <bit>
#include <limits>
#include <string>
#include <vector>

#include "core/errors.h"
#include "core/unreachable.h"
#include "math/likelihood.h"
#include "math/loss.h"
#include "model/dropout_masks.h"

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

    std::vector<OnnxWeight> weights() const { return m_weights; }

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
    std::vector<OnnxWeight> m_weights;
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

// One ensemble's graph, built part by part in the order its nodes must appear: the normalised
// input, each layer of the stack by its kind, then the head (the classes' mixture or the
// regression's Gaussian mixture). The export's tensors are initializers whose data is left to
// the caller (build() returns them).
class EnsembleGraph {
  public:
    EnsembleGraph(onnx::GraphProto& graph, const LoadedEnsemble& ensemble,
                  const SafetensorsFile& file)
        : ensemble(ensemble),
          file(file),
          layout(ensemble.layout),
          arch(layout.architecture()),
          k(layout.members()),
          d(layout.inputs()),
          outputs(layout.classes()),
          likelihood(ensemble.config.model.likelihood),
          act(ensemble.config.model.activation),
          g(graph),
          network(ensembleMethodInfo(ensemble.method).storesNetwork),
          fastWeights(ensembleMethodInfo(ensemble.method).fastWeights) {}

    std::vector<OnnxWeight> build() {
        collectDropoutMasks();
        normalizedInput();
        for (const StackLayer& s : arch.layers()) {
            switch (s.kind) {
                case LayerKind::Conv:
                    conv(s);
                    break;
                case LayerKind::Pool:
                    pool(s);
                    break;
                case LayerKind::Dense:
                    dense(s);  // its l2 is a training penalty: nothing at inference
                    break;
                case LayerKind::Dropout:
                    break;  // the identity at inference (inverted dropout needs no scale)
            }
        }
        if (form != Form::MemberFlat) {
            throw RuntimeError("onnx: the architecture does not end in a dense layer");
        }
        // h: the head's outputs, [K, N, outputs].
        collectUsedMembers();
        if (!isRegression(likelihood)) {
            classificationHead();
        } else {
            regressionHead();
        }
        return g.weights();
    }

  private:
    // The export's own tensors, under their names, with their bytes.
    std::string tensor(const std::string& name) {
        const Tensor& t = file.get(name);
        return g.weight(name, dataTypeOf(t.dtype), t.shape,
                        {reinterpret_cast<const char*>(t.data.data()), t.data.size()});
    }

    // A method that stores its one network (mc_dropout): member k's weights are the network's
    // times member k's dropout mask over the layer's input units or channels, the masks
    // constants regenerated from the stored seed (as importEnsemble folds them: the same float
    // products), the bias repeated for every member. Otherwise the tensors hold the K members.
    void collectDropoutMasks() {
        inputMasks.resize(static_cast<std::size_t>(arch.paramLayers()));
        if (!network) {
            return;
        }
        for (int64_t m = 0; m < k; ++m) {
            const std::vector<std::vector<float>> masks =
                dropoutInputMasks(arch, static_cast<float>(ensemble.config.model.dropout),
                                  ensemble.dropoutSeed, static_cast<uint32_t>(m));
            for (std::size_t l = 1; l < masks.size(); ++l) {
                inputMasks[l].insert(inputMasks[l].end(), masks[l].begin(), masks[l].end());
            }
        }
    }

    // BatchEnsemble: member k's weight is (W * s_k) * r_k, the shared weight times its fast
    // weights over the output and input units (channels for a conv), the same float products as
    // batchEnsembleExpand; the biases are stored per member.
    std::string batchEnsembleWeight(int param) {
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
    }

    // The K members' weights of parameterised layer `param`, [K, ...].
    std::string memberWeight(int param) {
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
    }

    // The K members' biases of parameterised layer `param`, [K, out].
    std::string memberBias(int param) {
        const std::string b = tensor(paramName(param, "bias"));
        if (!network) {
            return b;
        }
        return g.node("Expand", {b, g.constI64({k, layout.layer(param).out}, {2})});
    }

    void normalizedInput() {
        g.input("x", kFloat, {kRows, d});
        // (x - mean) / std, as predictLogProbs normalises (two float operations).
        h = g.node("Div", {g.node("Sub", {"x", tensor("normalization.mean")}),
                           tensor("normalization.std")});
        form = Form::SharedFlat;
    }

    void toSpatial() {
        if (form == Form::SharedFlat) {
            const Shape input = arch.input();
            // Rows are (channel, row, column): PyTorch's flatten order. 0 keeps N.
            h = g.node("Reshape",
                       {h, g.constI64({0, input.channels, input.height, input.width}, {4})});
            form = Form::SharedSpatial;
        }
    }

    void conv(const StackLayer& s) {
        toSpatial();
        // [K, F, C, k, k] -> [K F, C, k, k]: every member's filters in one Conv; on the
        // shared input a plain Conv, on the members' channels a grouped one.
        const int64_t f = s.out.channels;
        const std::string w = g.node(
            "Reshape",
            {memberWeight(s.param), g.constI64({k * f, s.in.channels, s.kernel, s.kernel}, {4})});
        const std::string b = g.node("Reshape", {memberBias(s.param), g.constI64({k * f}, {1})});
        // "same" pads total = (out - 1) stride + kernel - in, the smaller half first
        // (StackLayer::padTop); "valid" has none.
        const int64_t padBottom = std::max<int64_t>(
            0, int64_t{s.out.height - 1} * s.stride + s.kernel - s.in.height - s.padTop);
        const int64_t padRight = std::max<int64_t>(
            0, int64_t{s.out.width - 1} * s.stride + s.kernel - s.in.width - s.padLeft);
        h = g.node(
            "Conv", {h, w, b},
            {attrInts("kernel_shape", {s.kernel, s.kernel}),
             attrInts("strides", {s.stride, s.stride}),
             attrInts("pads", {s.padTop, s.padLeft, padBottom, padRight}),
             attrInts("dilations", {1, 1}), attrInt("group", form == Form::SharedSpatial ? 1 : k)});
        h = activate(g, act, h);
        form = Form::MemberSpatial;
    }

    void pool(const StackLayer& s) {
        toSpatial();
        // Window = stride and the output rounded down: every window is whole.
        h = g.node(s.pool == PoolKind::Max ? "MaxPool" : "AveragePool", {h},
                   {attrInts("kernel_shape", {s.kernel, s.kernel}),
                    attrInts("strides", {s.kernel, s.kernel})});
    }

    void dense(const StackLayer& s) {
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
        const std::string b = g.node("Unsqueeze", {memberBias(s.param), g.constI64({1}, {1})});
        h = g.node("Add", {g.node("MatMul", {h, wt}), b});
        if (s.activated) {
            h = activate(g, act, h);
        }
        form = Form::MemberFlat;
    }

    // The members the ensemble's figures average (includedMembers: switched on, not diverged).
    void collectUsedMembers() {
        const std::vector<uint8_t> include = includedMembers(ensemble);
        for (int64_t m = 0; m < k; ++m) {
            if (include[static_cast<std::size_t>(m)] != 0) {
                used.push_back(m);
            }
        }
    }

    // A per-member tensor [K, ...] restricted to the used members (itself when all are).
    std::string overUsed(const std::string& perMember) {
        if (static_cast<int64_t>(used.size()) == k) {
            return perMember;
        }
        return g.node("Gather", {perMember, g.constI64(used, {static_cast<int64_t>(used.size())})},
                      {attrInt("axis", 0)});
    }

    std::string meanOverMembers(const std::string& x, const std::string& out = {}) {
        return g.node("ReduceMean", {x}, {attrInts("axes", {0}), attrInt("keepdims", 0)}, out);
    }

    void classificationHead() {
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
    }

    std::string toDouble(const std::string& x) {
        return g.node("Cast", {x}, {attrInt("to", kDouble)});
    }

    std::string toFloat(const std::string& x, const std::string& out) {
        return g.node("Cast", {x}, {attrInt("to", kFloat)}, out);
    }

    // sigma^2 = softplus(raw) + 1e-6 in float (math/loss.h gaussianVariance), softplus in its
    // stable form max(x, 0) + log1p(e^-|x|) with log1p as math/loss.h's log1pLanes computes
    // it, operation for operation (ONNX has no Log1p): with t = e^-|x|, u = 1 + t and
    // d = u - 1, log(u) * t / (d + [d == 0]) + [d == 0] * t. Then times std^2 in double.
    std::string gaussianVariance(const std::string& targetStd) {
        const std::string raw = g.node("Gather", {h, g.constI64({1}, {})}, {attrInt("axis", 2)});
        const std::string expNeg = g.node("Exp", {g.node("Neg", {g.node("Abs", {raw})})});
        const std::string onePlus = g.node("Add", {g.constF32(1.0f), expNeg});
        const std::string onePlusLessOne = g.node("Sub", {onePlus, g.constF32(1.0f)});
        const std::string rounded = g.node(
            "Cast", {g.node("Equal", {onePlusLessOne, g.constF32(0.0f)})}, {attrInt("to", kFloat)});
        const std::string tail =
            g.node("Add", {g.node("Div", {g.node("Mul", {g.node("Log", {onePlus}), expNeg}),
                                          g.node("Add", {onePlusLessOne, rounded})}),
                           g.node("Mul", {rounded, expNeg})});
        const std::string sigma2 = g.node("Add", {g.node("Add", {g.node("Relu", {raw}), tail}),
                                                  g.constF32(static_cast<float>(kMinVariance))});
        return g.node("Mul", {toDouble(sigma2), g.node("Mul", {targetStd, targetStd})});
    }

    // metrics/regression.h memberGaussians and mixturePoints, in float64 as there.
    void regressionHead() {
        const std::string targetMean = toDouble(tensor("normalization.target_mean"));
        const std::string targetStd = toDouble(tensor("normalization.target_std"));
        const std::string mu = g.node("Gather", {h, g.constI64({0}, {})}, {attrInt("axis", 2)});
        const std::string mean =
            g.node("Add", {g.node("Mul", {toDouble(mu), targetStd}), targetMean});
        std::string variance;
        if (likelihood == Likelihood::Gaussian) {
            variance = gaussianVariance(targetStd);
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
    const LoadedEnsemble& ensemble;
    const SafetensorsFile& file;
    const ParamLayout& layout;
    const Architecture& arch;
    const int64_t k;
    const int64_t d;
    const int64_t outputs;
    const Likelihood likelihood;
    const Activation act;
    GraphBuilder g;
    const bool network;      // stores its one network: members by dropout masks
    const bool fastWeights;  // BatchEnsemble: members by fast weights
    // Per parameterised layer, the K members' dropout masks over its inputs (network only).
    std::vector<std::vector<float>> inputMasks;
    std::string h;  // the activations so far
    Form form = Form::SharedFlat;
    std::vector<int64_t> used;  // the members the ensemble averages
};

}  // namespace

std::vector<OnnxWeight> buildOnnxModel(onnx::ModelProto& model, const LoadedEnsemble& ensemble,
                                       const SafetensorsFile& file) {
    return EnsembleGraph(*model.mutable_graph(), ensemble, file).build();
}

}  // namespace ensemble
