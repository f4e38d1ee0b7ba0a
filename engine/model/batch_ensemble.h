#pragma once

// BatchEnsemble (Wen et al. 2020): every parameterised layer has one shared weight W and, per
// member k, two rank-1 "fast" vectors r_k (over the layer's input units) and s_k (over its
// output units) and its own bias b_k. Member k's weight is W_k = W ∘ (s_k r_kᵀ): for a dense
// layer W_k[o][j] = W[o][j] s_k[o] r_k[j]; for a conv W_k[f][c][i][j] = W[f][c][i][j] s_k[f]
// r_k[c] (per output and input channel). The members are K ordinary networks of the
// architecture: the backend trains them as such (their weights expanded from the shared and fast
// ones before each step) and the chain rule below carries their gradients back.
//
// The trained parameters ("theta") are layer-major, each layer [W (out x in)] [fast_in (K x
// inUnits)] [fast_out (K x out)] [bias (K x out)]: the tensors an export stores
// (layers.{l}.weight, layers.{l}.fast_in, layers.{l}.fast_out, layers.{l}.bias).

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "model/mlp.h"
#include "model/trained_tensors.h"

namespace ensemble {

class BatchEnsembleLayout {
  public:
    struct Layer {
        int out = 0;
        int in = 0;        // the member layout's in: C * k * k for a conv
        int inUnits = 0;   // r's length: the input width (dense) or input channels (conv)
        int unitSpan = 1;  // weight columns per input unit: k * k for a conv, 1 for dense
        std::size_t weight = 0;
        std::size_t fastIn = 0;
        std::size_t fastOut = 0;
        std::size_t bias = 0;
    };

    BatchEnsembleLayout() = default;
    // The trained parameters of the K members of `members` (their effective layout).
    explicit BatchEnsembleLayout(ParamLayout members);

    const ParamLayout& memberLayout() const { return m_members; }
    int members() const { return m_members.members(); }
    int layerCount() const { return static_cast<int>(m_layers.size()); }
    const Layer& layer(int l) const { return m_layers[static_cast<std::size_t>(l)]; }
    std::size_t size() const { return m_size; }
    // The shared weight's shape: [out, in] or [F, C, k, k] (one member's).
    std::vector<int64_t> weightShape(int l) const;

  private:
    ParamLayout m_members;
    std::vector<Layer> m_layers;
    std::size_t m_size = 0;
};

// The trained parameters as named tensors, in the order a file stores them: "{l}.weight" (one
// member's shape: [out, in] or [F, C, k, k]), "{l}.fast_in" [K, inUnits], "{l}.fast_out"
// [K, out], "{l}.bias" [K, out]; exports prefix "layers.", checkpoints "trained." and the
// optimizer's moments (model/trained_tensors.h).
std::vector<TrainedTensor> batchEnsembleTensors(const BatchEnsembleLayout& layout);

// The initialisation: W is member 0's weight as initParameters draws it (PyTorch's default), each
// member's bias its own (initParameters' draw for that member), and r_k, s_k random signs (+1 or
// -1, a Philox draw per unit, purpose BatchEnsembleSigns), as the paper initialises them. Layout
// member k is global member memberOffset + k.
void batchEnsembleInit(const BatchEnsembleLayout& layout, uint64_t seed, float* theta,
                       uint32_t memberOffset = 0);

// Member k's parameters (W_k, b_k) into slot k of `members` (the member layout's order).
void batchEnsembleExpandMember(const BatchEnsembleLayout& layout, const float* theta, int k,
                               float* members);
// Every member's.
void batchEnsembleExpand(const BatchEnsembleLayout& layout, const float* theta, float* members);

// The gradient over theta of the ensemble's loss L = (1/K) sum_k L_k, the mean of the members'
// losses (the paper's loss over its batch tiled K times), from the members' gradients
// (G_k = dL_k/dW_k, g_k = dL_k/db_k in the member layout's order): K dW = sum_k G_k ∘ s_k r_kᵀ
// over the members with include[k] set (the shared weight's gradient sums its members'), K dr_k[u]
// = sum over W's entries of unit u of G_k W s_k, K ds_k[o] = sum over row o of G_k W r_k,
// K db_k = g_k; a member left out has zero fast and bias gradients. With the mean, the shared
// weight moves as one network's would under the same learning rate (with the sum, SGD's step on
// it is K times that: the mnist-cnn recipe, SGD 0.1 with momentum 0.9, diverges within 30 steps
// at K = 4). Writes every entry of `thetaGrad`.
void batchEnsembleGradient(const BatchEnsembleLayout& layout, const float* theta,
                           const float* memberGrads, const uint8_t* include, float* thetaGrad);

}  // namespace ensemble
