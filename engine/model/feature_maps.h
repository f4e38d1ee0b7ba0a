#pragma once

// What the app's Filters view shows of a convolutional ensemble: each member's first conv layer
// (its kernels) and, for one image, that layer's output after the activation (its feature
// maps). Plain loops over one layer of one image: nothing here is on a training path.

#include <vector>

#include "math/activations.h"
#include "model/architecture.h"
#include "model/mlp.h"

namespace ensemble {

// The first layer of a stack whose layer 0 is a conv, for every member.
struct FirstConv {
    StackLayer layer;  // shapes, kernel, stride and padding
    int members = 0;
    std::vector<float> weights;  // [K, F, C, k, k] (PyTorch's layout)
    std::vector<float> bias;     // [K, F]

    bool empty() const { return members == 0; }
    int filters() const { return layer.out.channels; }
    int channels() const { return layer.in.channels; }
    int kernel() const { return layer.kernel; }
};

// Copies the first conv layer out of `params` (all members, `layout`'s order). Empty when the
// architecture's layer 0 is not a conv (an MLP).
FirstConv firstConvOf(const ParamLayout& layout, const float* params);

// The first layer's feature maps of every member for one normalised image ([C, H, W], the
// layer's input shape): act(W_k * x + b_k), cross-correlation with the layer's stride and
// padding as in the forward pass. Returns [K, F, H', W'] (H', W' = the layer's output shape).
std::vector<float> firstConvFeatureMaps(const FirstConv& conv, Activation activation,
                                        const float* image);

}  // namespace ensemble
