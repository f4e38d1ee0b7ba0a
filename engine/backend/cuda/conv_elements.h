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

// im2col, one (row, channel) per call: t = row C + c writes the k k entries of channel c in row
// `row` of cols [G][B Ho Wo][C k k] (row-major; column (c k + ky) k + kx, PyTorch's weight
// order): in[e][oy s + ky - padTop][ox s + kx - padLeft][c], zero outside the image. One call
// per k k entries keeps the index arithmetic (integer division is slow on a GPU) off the
// per-entry path; adjacent calls (adjacent c) read adjacent channels and write adjacent runs.
//
// `inExamples`: the images `in` holds; cols may hold several copies of them (row example e
// reads image e % inExamples), so every member gets its own columns of a shared batch.
template <class I>
ENSEMBLE_HD inline void im2colPatchElement(I t, const SpatialGeometry& g, const float* in,
                                           float* cols, I inExamples) {
    const I row = t / g.inC;
    const int c = static_cast<int>(t - row * g.inC);
    const I rowInImage = row / g.outW;
    const int ox = static_cast<int>(row - rowInImage * g.outW);
    const I image = rowInImage / g.outH;
    const int oy = static_cast<int>(rowInImage - image * g.outH);
    const I example = image % inExamples;
    const int k = g.kernel;
    float* dst = cols + t * (k * k);  // row (C k k) + c (k k)
    const float* src = in + example * g.inH * g.inW * g.inC + c;
    for (int ky = 0; ky < k; ++ky) {
        const int iy = oy * g.stride + ky - g.padTop;
        for (int kx = 0; kx < k; ++kx) {
            const int ix = ox * g.stride + kx - g.padLeft;
            const bool inside = iy >= 0 && iy < g.inH && ix >= 0 && ix < g.inW;
            dst[ky * k + kx] = inside ? src[(static_cast<I>(iy) * g.inW + ix) * g.inC] : 0.0f;
        }
    }
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
ENSEMBLE_HD inline int poolArgmax(const SpatialGeometry& g, const float* in, I example, int oy,
                                  int ox, int c, float& best) {
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

// Pool backward, one output per call: i indexes dOut [K][B][Ho][Wo][C] and writes its window
// of dIn [K][B][H][W][C]: the gradient over size^2 everywhere (mean), or all of it at the
// window's first maximum and 0 elsewhere (max). Windows do not overlap (stride = size), so
// every element of dIn is written once; the rows and columns a floor division leaves outside
// every window are zeroed before (conv_program.h).
template <class I>
ENSEMBLE_HD inline void poolBackwardElement(I i, const SpatialGeometry& g, const float* in,
                                            const float* dOut, float* dIn) {
    const I pixel = i / g.outC;
    const int c = static_cast<int>(i - pixel * g.outC);
    const I rowInImage = pixel / g.outW;
    const int ox = static_cast<int>(pixel - rowInImage * g.outW);
    const I example = rowInImage / g.outH;
    const int oy = static_cast<int>(rowInImage - example * g.outH);
    const int s = g.kernel;
    const float grad = dOut[i];
    int arg = -1;
    if (g.maxPool) {
        float best = 0.0f;
        arg = poolArgmax(g, in, example, oy, ox, c, best);
    }
    const float mean = grad * (1.0f / static_cast<float>(s * s));
    float* dst = dIn + ((example * g.inH + oy * s) * g.inW + ox * s) * g.inC + c;
    for (int dy = 0; dy < s; ++dy) {
        for (int dx = 0; dx < s; ++dx) {
            const float v = g.maxPool ? (dy * s + dx == arg ? grad : 0.0f) : mean;
            dst[(static_cast<I>(dy) * g.inW + dx) * g.inC] = v;
        }
    }
}

// Flatten: element i of out [G][B][C H W] (PyTorch's order) from in [G][B][H][W][C].
template <class I>
ENSEMBLE_HD inline void flattenElement(I i, int channels, I plane, const float* in, float* out) {
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
ENSEMBLE_HD inline void unflattenElement(I i, int channels, I plane, const float* in, float* out) {
    const I c = i % channels;
    const I p = (i / channels) % plane;
    const I example = i / (channels * plane);
    out[i] = in[example * channels * plane + c * plane + p];
}

// Element i of out [K][n]: the sum over s of partial [K][S][n], in s order (the split
// weight and bias gradients of a conv, conv_program.h).
template <class I>
ENSEMBLE_HD inline void sumPartialsElement(I i, const float* partial, int splits, I n, float* out) {
    const I k = i / n;
    const I j = i % n;
    const float* p = partial + k * splits * n + j;
    float sum = 0.0f;
    for (int s = 0; s < splits; ++s) {
        sum += p[static_cast<I>(s) * n];
    }
    out[i] = sum;
}

// --- The implicit-GEMM convolution -------------------------------------------------------
//
// The same three products as im2col + GEMM (forwardGemm, inputGradGemm + col2im,
// weightGradGemm; step_program.h), with the im2col gather folded into the products' loads, so
// the columns [G][B Ho Wo][C k k] never exist in memory. Each element sums in a fixed order
// (column j = (c k + ky) k + kx ascending, filters ascending, rows ascending): deterministic,
// no atomics, and bit-equal to a reference GEMM that sums in that order over im2col's columns
// (tst_cuda_plan checks this for strides, paddings and shared inputs). A kernel tiles them
// (conv_kernels.cu); these are the definitions it must equal.

// The input value column j of output row `row` reads: in[image][iy][ix][c] with
// (c, ky, kx) = j's digits and image = (row / (Ho Wo)) % inExamples, or 0 outside the image
// (padding) -- im2colPatchElement's entry, one at a time.
template <class I>
ENSEMBLE_HD inline float implicitColumn(const SpatialGeometry& g, const float* in, I inExamples,
                                        I row, int c, int ky, int kx) {
    const I rowInImage = row / g.outW;
    const int ox = static_cast<int>(row - rowInImage * g.outW);
    const I image = rowInImage / g.outH;
    const int oy = static_cast<int>(rowInImage - image * g.outH);
    const int iy = oy * g.stride + ky - g.padTop;
    const int ix = ox * g.stride + kx - g.padLeft;
    if (iy < 0 || iy >= g.inH || ix < 0 || ix >= g.inW) {
        return 0.0f;
    }
    const I example = image % inExamples;
    return in[((example * g.inH + iy) * g.inW + ix) * g.inC + c];
}

// Forward, element t of pre [K][R][F] (R = rows per member, B Ho Wo): member k = t / (R F),
// row r, filter f; pre = sum over j of column (k R + r, j) * W_k[f][j], W [K][F][C k k].
// Global row k R + r picks the image as im2col does for K column copies (a shared batch:
// inExamples = B, every member reads the same images; per-member inputs: inExamples = K B).
template <class I>
ENSEMBLE_HD inline void implicitConvForwardElement(I t, const SpatialGeometry& g, const float* in,
                                                   I inExamples, const float* weights, I rows,
                                                   float* pre) {
    const int filters = g.outC;
    const I globalRow = t / filters;
    const int f = static_cast<int>(t - globalRow * filters);
    const I member = globalRow / rows;
    const int k = g.kernel;
    const I width = static_cast<I>(g.inC) * k * k;
    const float* w = weights + (member * filters + f) * width;
    float sum = 0.0f;
    for (int c = 0; c < g.inC; ++c) {
        for (int ky = 0; ky < k; ++ky) {
            for (int kx = 0; kx < k; ++kx) {
                sum += implicitColumn(g, in, inExamples, globalRow, c, ky, kx) *
                       w[(c * k + ky) * k + kx];
            }
        }
    }
    pre[t] = sum;
}

// The input gradient, element i of dIn [K][B][H][W][C] (example e = member k's B examples,
// k = e / examplesPerMember): col2imElement's sum over (ky, kx) of the column gradient
// dCols[row][j] = sum over f of W_k[f][j] dPre[row][f] (inputGradGemm), each computed here in
// f order instead of read from memory.
template <class I>
ENSEMBLE_HD inline void implicitConvInputGradElement(I i, const SpatialGeometry& g,
                                                     const float* dPre, const float* weights,
                                                     I examplesPerMember, float* dIn) {
    const int c = static_cast<int>(i % g.inC);
    const int ix = static_cast<int>((i / g.inC) % g.inW);
    const int iy = static_cast<int>((i / (static_cast<I>(g.inC) * g.inW)) % g.inH);
    const I example = i / (static_cast<I>(g.inC) * g.inW * g.inH);
    const I member = example / examplesPerMember;
    const int k = g.kernel;
    const int filters = g.outC;
    const I width = static_cast<I>(g.inC) * k * k;
    const float* w = weights + member * filters * width;
    float sum = 0.0f;
    for (int ky = 0; ky < k; ++ky) {
        const int ty = iy + g.padTop - ky;
        if (ty < 0 || ty % g.stride != 0 || ty / g.stride >= g.outH) {
            continue;
        }
        const int oy = ty / g.stride;
        for (int kx = 0; kx < k; ++kx) {
            const int tx = ix + g.padLeft - kx;
            if (tx < 0 || tx % g.stride != 0 || tx / g.stride >= g.outW) {
                continue;
            }
            const int ox = tx / g.stride;
            const I row = (example * g.outH + oy) * g.outW + ox;
            const float* d = dPre + row * filters;
            const I j = (static_cast<I>(c) * k + ky) * k + kx;
            float column = 0.0f;
            for (int f = 0; f < filters; ++f) {
                column += w[f * width + j] * d[f];
            }
            sum += column;
        }
    }
    dIn[i] = sum;
}

// The weight gradient in `splits` chunks of R / splits rows, element t of partial
// [K][S][F][C k k] (enqueueConvGradients' partials, then summed over s in order): the sum over
// chunk s's rows r, in order, of column (k R + r, j) dPre_k[r][f] (weightGradGemm per chunk).
template <class I>
ENSEMBLE_HD inline void implicitConvWeightGradElement(I t, const SpatialGeometry& g,
                                                      const float* in, I inExamples,
                                                      const float* dPre, I rows, int splits,
                                                      float* partial) {
    const int k = g.kernel;
    const int filters = g.outC;
    const I width = static_cast<I>(g.inC) * k * k;
    const I j = t % width;
    const int f = static_cast<int>((t / width) % filters);
    const I memberChunk = t / (width * filters);
    const int chunk = static_cast<int>(memberChunk % splits);
    const I member = memberChunk / splits;
    const int kx = static_cast<int>(j % k);
    const int ky = static_cast<int>((j / k) % k);
    const int c = static_cast<int>(j / (static_cast<I>(k) * k));
    const I count = rows / splits;
    const I first = member * rows + chunk * count;
    float sum = 0.0f;
    for (I row = first; row < first + count; ++row) {
        sum += implicitColumn(g, in, inExamples, row, c, ky, kx) * dPre[row * filters + f];
    }
    partial[t] = sum;
}

template <class I>
ENSEMBLE_HD inline void fillElement(I i, float value, float* out) {
    out[i] = value;
}

}  // namespace ensemble::gpu
