#pragma once

// The CPU conv path's per-thread workspace (ConvNetCpu::Workspace) and the rules that size and
// shape its passes: how many examples a conv's slice holds, and which convs run their pooling
// inside their slices. Included by conv_net.cpp and conv_workspace.cpp only; built with the
// engine's flags.

#include <cstddef>
#include <cstdint>
#include <vector>

#include "backend/cpu/conv_net.h"
#include "math/dropout.h"
#include "model/architecture.h"

namespace ensemble {

namespace conv {

// A conv layer runs slice by slice of a task's examples: each slice's columns (fan-in x
// examples Ho Wo), pre-activations and outputs (filters x examples Ho Wo each) fit in
// sliceFloats floats (ConvNetCpu::kSliceFloats: half a core's L2 cache, which is 1 MiB on Zen 4
// and 5 and 1.25 MiB on Ice Lake, leaving the rest to the GEMM's packed blocks), so they stay in
// cache from im2col through the GEMM and the activation, and again through the gradients' GEMMs,
// instead of a whole task's columns (7 MiB for the recipe's second conv) going out to memory and
// back three times. This is the number of examples per slice of conv layer s in a task of n.
int sliceExamples(const StackLayer& s, int n, std::size_t sliceFloats);

// Whether conv layer i's pooling (the layer above it) runs inside the conv's slices, on the
// slice's outputs while they are in cache, forward and backward. Not under the activated
// layers' dropout (mc_dropout), whose masks apply to a whole layer's outputs first.
bool poolFused(const std::vector<StackLayer>& layers, std::size_t i, const DropoutStep& dropout);

// Whether pool layer i is made inside the slices of the conv below it (poolFused(i - 1)), so
// that its own forward and backward passes have nothing left to do.
bool pooledByConvBelow(const std::vector<StackLayer>& layers, std::size_t i,
                       const DropoutStep& dropout);

// Whether fused conv layer i keeps only its outputs' signs for the gradient: under ReLU, whose
// gradient is 1 where the pre-activation is positive and 0 elsewhere, the pre-activations and
// outputs live in one slice's buffers (in cache) and only a byte per output goes to memory, not
// the two floats of every other layer (for the recipe's first conv, 32 x 784 per example).
bool keepsSignsOnly(const std::vector<StackLayer>& layers, std::size_t i, Activation act,
                    const DropoutStep& dropout);

}  // namespace conv

// One thread's scratch for a task of up to kConvGroup examples.
struct ConvNetCpu::Workspace {
    std::vector<FloatBuffer> pre;   // per stack layer with parameters: its pre-activations
    std::vector<FloatBuffer> post;  // per stack layer: its output
    std::vector<std::vector<int32_t>> argmax;  // per max-pool layer
    std::vector<FloatBuffer> cols;             // per conv layer: C k k x (slice Ho Wo)
    FloatBuffer input;                         // the task's images as [C][n][H][W]
    FloatBuffer flat;                          // n x features: the first dense layer's input
    FloatBuffer delta;                         // the gradient of the current layer's output
    FloatBuffer deltaPrev;
    FloatBuffer dLogits;
    // A fused conv's one slice (filters x slice Ho Wo each): its output gradient, and under
    // keepsSignsOnly its pre-activations and outputs.
    FloatBuffer sliceDelta;
    FloatBuffer slicePre;
    FloatBuffer slicePost;
    std::vector<std::vector<uint8_t>> positive;  // per conv layer: pre-activation > 0, [F][n HW]
    FloatBuffer gemmA;  // packing buffers of every product (backend/cpu/gemm.h)
    FloatBuffer gemmB;
    // Dropout only: per activated layer the step's masks, [C][n] (conv) or [n][units] (dense);
    // per dropout layer (always) its masks in its input's layout.
    std::vector<FloatBuffer> dropMask;

    std::size_t sliceFloats = ConvNetCpu::kSliceFloats;

    int slice(const StackLayer& s, int n) const { return conv::sliceExamples(s, n, sliceFloats); }

    // Sizes every buffer for tasks of up to n examples; `dropout`: the masks of mc_dropout.
    void resize(const Architecture& a, int n, bool dropout, std::size_t floatsPerSlice);
    std::size_t bytes() const;
};

}  // namespace ensemble
