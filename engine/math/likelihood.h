#pragma once

// The head's likelihood: what the last layer's outputs mean, which loss trains them and which
// predictive the ensemble forms. Plain C++ with ENSEMBLE_HD, so the CUDA step and the CPU
// backends read the same definition.
//   categorical  C outputs, logits; softmax cross-entropy; ensemble = mean of probabilities
//   gaussian     2 outputs: mean mu and raw r, sigma^2 = softplus(r) + 1e-6; Gaussian NLL
//                (math/loss.h); ensemble = the mixture of the members' Gaussians
//   mse          1 output: mean mu; squared error; sigma^2 = 0 (only the epistemic part)

#include <cstdint>

#include "math/hd.h"

namespace ensemble {

enum class Likelihood : uint32_t { Categorical = 0, Gaussian = 1, Mse = 2 };

ENSEMBLE_HD constexpr bool isRegression(Likelihood l) {
    return l != Likelihood::Categorical;
}

// Outputs of the last layer: `classes` for categorical, 2 for gaussian, 1 for mse. The one
// place this is decided: every architecture's last layer takes its width from here.
ENSEMBLE_HD constexpr int headOutputs(Likelihood l, int classes) {
    return l == Likelihood::Gaussian ? 2 : l == Likelihood::Mse ? 1 : classes;
}

}  // namespace ensemble
