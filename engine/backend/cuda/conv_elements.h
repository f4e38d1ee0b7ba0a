#pragma once

// The elementwise bodies of the CUDA backend's CNN kernels (model.kind cnn), one element per
// call, marked ENSEMBLE_HD: the kernels in conv_kernels.cu wrap them in grid-stride loops and
// tst_cuda_plan runs them in host loops against CpuBackend's ConvNetCpu.
//
// Layout. Spatial activations are channels-last per example, [G][B][H][W][C] (G = K members,
// or 1 where every member reads the same examples): a conv is then one strided-batched GEMM
// per layer whose rows are the B Ho Wo output positions and whose columns are the F filters,
// so the dense layers' bias/activation/bias-gradient kernels apply to it unchanged (rows =
// B Ho Wo, out = F). The flatten before the first dense layer permutes to PyTorch's
// (channel, row, column) order, which the exported weights assume.
//
// Every element writes its own output and sums its inputs in a fixed order (no atomics), so
// a step is bit-reproducible; the adjoints (col2im, pool backward) are gathers for that reason.

#include <cstdint>

#include "math/hd.h"

namespace ensemble::gpu {

// One conv or pool layer's geometry (plain data, built from a StackLayer on the host).
struct SpatialGeometry {
    int inC = 0;
    int inH = 0;
    int inW = 0;
    int outC = 0;
    int outH = 0;
    int outW = 0;
    int kernel = 0;  // conv: k; pool: window = stride
    int stride = 1;  // conv
    int padTop = 0;
    int padLeft = 0;
    bool maxPool = false;
};

// im2col: element i of cols [G][B Ho Wo][C k k] (row-major; column (c k + ky) k + kx, PyTorch's
// weight order) is in[g b][oy s + ky - padTop][ox s + kx - padLeft][c], zero outside the image.
//
// `inExamples`: the images `in` holds; cols may hold several copies of them (example e of
// cols reads image e % inExamples), so every member gets its own columns of a shared batch.
template <class I>
ENSEMBLE_HD inline void im2colElement(I i, const SpatialGeometry& g, const float* in, float* cols,
                                      I inExamples) {
    const I kk = static_cast<I>(g.kernel) * g.kernel;
    const I width = g.inC * kk;
    const I row = i / width;
    const I j = i - row * width;
    const int c = static_cast<int>(j / kk);
    const I rest = j - c * kk;
    const int ky = static_cast<int>(rest / g.kernel);
    const int kx = static_cast<int>(rest - ky * g.kernel);
    const I rowInImage = row / g.outW;
    const int ox = static_cast<int>(row - rowInImage * g.outW);
    const I image = rowInImage / g.outH;
    const int oy = static_cast<int>(rowInImage - image * g.outH);
    const I example = image % inExamples;
    const int iy = oy * g.stride + ky - g.padTop;
    const int ix = ox * g.stride + kx - g.padLeft;
    float v = 0.0f;
    if (iy >= 0 && iy < g.inH && ix >= 0 && ix < g.inW) {
        v = in[((example * g.inH + iy) * g.inW + ix) * g.inC + c];
    }
    cols[i] = v;
}

// The adjoint of im2col: element i of dIn [K][B][H][W][C] is the sum of the column entries
// that read it, over (ky, kx) in that order.
template <class I>
ENSEMBLE_HD inline void col2imElement(I i, const SpatialGeometry& g, const float* dCols,
                                      float* dIn) {
    const int c = static_cast<int>(i % g.inC);
    const int ix = static_cast<int>((i / g.inC) % g.inW);
    const int iy = static_cast<int>((i / (static_cast<I>(g.inC) * g.inW)) % g.inH);
    const I example = i / (static_cast<I>(g.inC) * g.inW * g.inH);
    const I width = static_cast<I>(g.inC) * g.kernel * g.kernel;
    float sum = 0.0f;
    for (int ky = 0; ky < g.kernel; ++ky) {
        const int ty = iy + g.padTop - ky;
        if (ty < 0 || ty % g.stride != 0 || ty / g.stride >= g.outH) {
            continue;
        }
        const int oy = ty / g.stride;
        for (int kx = 0; kx < g.kernel; ++kx) {
            const int tx = ix + g.padLeft - kx;
            if (tx < 0 || tx % g.stride != 0 || tx / g.stride >= g.outW) {
                continue;
            }
            const int ox = tx / g.stride;
            const I row = (example * g.outH + oy) * g.outW + ox;
            sum += dCols[row * width + (static_cast<I>(c) * g.kernel + ky) * g.kernel + kx];
        }
    }
    dIn[i] = sum;
}

// The window of output (oy, ox)'s first maximum, as dy * size + dx: strictly greater wins, so
// the first maximum in (dy, dx) order is kept and a NaN never is (ConvNetCpu's rule).
template <class I>
ENSEMBLE_HD inline int poolArgmax(const SpatialGeometry& g, const float* in, I example,
                                  int oy, int ox, int c, float& best) {
    const int s = g.kernel;
    int arg = 0;
    best = in[((example * g.inH + oy * s) * g.inW + ox * s) * g.inC + c];
    for (int dy = 0; dy < s; ++dy) {
        for (int dx = 0; dx < s; ++dx) {
            const float v = in[((example * g.inH + oy * s + dy) * g.inW + ox * s + dx) * g.inC + c];
            if (v > best) {
                best = v;
                arg = dy * s + dx;
            }
        }
    }
    return arg;
}

// Element i of out [G][B][Ho][Wo][C]: the window's mean (summed in (dy, dx) order, then scaled,
// as ConvNetCpu does) or its first maximum.
template <class I>
ENSEMBLE_HD inline void poolForwardElement(I i, const SpatialGeometry& g, const float* in,
                                           float* out) {
    const int c = static_cast<int>(i % g.outC);
    const int ox = static_cast<int>((i / g.outC) % g.outW);
    const int oy = static_cast<int>((i / (static_cast<I>(g.outC) * g.outW)) % g.outH);
    const I example = i / (static_cast<I>(g.outC) * g.outW * g.outH);
    const int s = g.kernel;
    if (g.maxPool) {
        float best = 0.0f;
        (void)poolArgmax(g, in, example, oy, ox, c, best);
        out[i] = best;
        return;
    }
    float sum = 0.0f;
    for (int dy = 0; dy < s; ++dy) {
        for (int dx = 0; dx < s; ++dx) {
            sum += in[((example * g.inH + oy * s + dy) * g.inW + ox * s + dx) * g.inC + c];
        }
    }
    out[i] = sum * (1.0f / static_cast<float>(s * s));
}

// Element i of dIn [K][B][H][W][C]: its window's gradient over size^2 (mean), or all of it if
// it is the window's first maximum; 0 outside every window (the rows and columns a floor
// division drops).
template <class I>
ENSEMBLE_HD inline void poolBackwardElement(I i, const SpatialGeometry& g, const float* in,
                                            const float* dOut, float* dIn) {
    const int c = static_cast<int>(i % g.inC);
    const int ix = static_cast<int>((i / g.inC) % g.inW);
    const int iy = static_cast<int>((i / (static_cast<I>(g.inC) * g.inW)) % g.inH);
    const I example = i / (static_cast<I>(g.inC) * g.inW * g.inH);
    const int s = g.kernel;
    const int oy = iy / s;
    const int ox = ix / s;
    if (oy >= g.outH || ox >= g.outW) {
        dIn[i] = 0.0f;
        return;
    }
    const float grad = dOut[((example * g.outH + oy) * g.outW + ox) * g.outC + c];
    if (!g.maxPool) {
        dIn[i] = grad * (1.0f / static_cast<float>(s * s));
        return;
    }
    float best = 0.0f;
    const int arg = poolArgmax(g, in, example, oy, ox, c, best);
    dIn[i] = arg == (iy - oy * s) * s + (ix - ox * s) ? grad : 0.0f;
}

// Flatten: element i of out [G][B][C H W] (PyTorch's order) from in [G][B][H][W][C].
template <class I>
ENSEMBLE_HD inline void flattenElement(I i, int channels, I plane, const float* in,
                                       float* out) {
    const I features = channels * plane;
    const I example = i / features;
    const I f = i % features;
    const I c = f / plane;
    const I p = f % plane;
    out[i] = in[(example * plane + p) * channels + c];
}

// The inverse permutation: element i of out [G][B][H][W][C] from in [G][B][C H W]. Carries a
// flattened gradient back to channels-last, and raw input rows ([C][H][W]) to channels-last.
template <class I>
ENSEMBLE_HD inline void unflattenElement(I i, int channels, I plane, const float* in,
                                         float* out) {
    const I c = i % channels;
    const I p = (i / channels) % plane;
    const I example = i / (channels * plane);
    out[i] = in[example * channels * plane + c * plane + p];
}

// Element i of out [K][n]: the sum over s of partial [K][S][n], in s order (the split
// weight and bias gradients of a conv, conv_program.h).
template <class I>
ENSEMBLE_HD inline void sumPartialsElement(I i, const float* partial, int splits, I n,
                                           float* out) {
    const I k = i / n;
    const I j = i % n;
    const float* p = partial + k * splits * n + j;
    float sum = 0.0f;
    for (int s = 0; s < splits; ++s) {
        sum += p[static_cast<I>(s) * n];
    }
    out[i] = sum;
}

template <class I>
ENSEMBLE_HD inline void fillElement(I i, float value, float* out) {
    out[i] = value;
}

}  // namespace ensemble::gpu
