// The loops of the CPU conv path (conv_net.cpp): the images' channel-major copy, im2col and its
// adjoint, pooling forward and backward, activations over a buffer and a fixed-order sum.
//
// Included by conv_net.cpp alone, and file-local there (an unnamed namespace, no `inline`): the
// compiler then makes the same inlining choices as when these were written in conv_net.cpp
// (im2col a call, the rest inlined). Built with the engine's flags only.

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "backend/cpu/fast_mlp.h"
#include "math/activations.h"
#include "math/dropout.h"
#include "model/architecture.h"

namespace ensemble::conv {

namespace {

// The output columns [begin, end) whose input column ox * stride + dx lies inside the image
// (0 <= it < width); the others read the padding.
struct ColumnRange {
    int begin;
    int end;
};

ColumnRange insideColumns(int dx, int stride, int outWidth, int width) {
    int begin = 0;
    while (begin < outWidth && begin * stride + dx < 0) {
        ++begin;
    }
    int end = outWidth;
    while (end > begin && (end - 1) * stride + dx >= width) {
        --end;
    }
    return {begin, end};
}

// im2col of one conv layer for `n` examples of `in` ([C][n][H][W]): cols[(c k + ky) k + kx]
// [(b Ho + oy) Wo + ox] = in[c][b][oy s + ky - padTop][ox s + kx - padLeft], zero outside.
// `stride` is the row stride of cols (>= n Ho Wo).
void im2col(const StackLayer& s, const float* in, int n, float* cols, std::size_t stride) {
    const int C = s.in.channels;
    const int H = s.in.height;
    const int W = s.in.width;
    const int Ho = s.out.height;
    const int Wo = s.out.width;
    const int k = s.kernel;
    const int st = s.stride;
    for (int c = 0; c < C; ++c) {
        for (int ky = 0; ky < k; ++ky) {
            for (int kx = 0; kx < k; ++kx) {
                float* dst = cols + static_cast<std::size_t>((c * k + ky) * k + kx) * stride;
                // Output columns whose input column is inside the image.
                const int dx = kx - s.padLeft;
                const auto [oxBegin, oxEnd] = insideColumns(dx, st, Wo, W);
                for (int b = 0; b < n; ++b) {
                    const float* plane = in + (static_cast<std::size_t>(c) * n + b) * H * W;
                    for (int oy = 0; oy < Ho; ++oy) {
                        float* out = dst + (static_cast<std::size_t>(b) * Ho + oy) * Wo;
                        const int iy = oy * st + ky - s.padTop;
                        if (iy < 0 || iy >= H) {
                            std::fill(out, out + Wo, 0.0f);
                            continue;
                        }
                        const float* row = plane + static_cast<std::size_t>(iy) * W;
                        std::fill(out, out + oxBegin, 0.0f);
                        if (st == 1) {
                            // Rows are short (14 floats in the recipe): a loop, not memcpy.
                            for (int ox = oxBegin; ox < oxEnd; ++ox) {
                                out[ox] = row[ox + dx];
                            }
                        } else {
                            for (int ox = oxBegin; ox < oxEnd; ++ox) {
                                out[ox] = row[ox * st + dx];
                            }
                        }
                        std::fill(out + oxEnd, out + Wo, 0.0f);
                    }
                }
            }
        }
    }
}

// The adjoint of im2col: dIn ([C][n][H][W], zeroed here) += the columns' gradients, in a fixed
// order (c, ky, kx, b, oy, ox).
void col2im(const StackLayer& s, const float* cols, int n, float* dIn) {
    const int C = s.in.channels;
    const int H = s.in.height;
    const int W = s.in.width;
    const int Ho = s.out.height;
    const int Wo = s.out.width;
    const int k = s.kernel;
    const int st = s.stride;
    const std::size_t stride = static_cast<std::size_t>(n) * Ho * Wo;
    std::fill(dIn, dIn + static_cast<std::size_t>(C) * n * H * W, 0.0f);
    for (int c = 0; c < C; ++c) {
        for (int ky = 0; ky < k; ++ky) {
            for (int kx = 0; kx < k; ++kx) {
                const float* src = cols + static_cast<std::size_t>((c * k + ky) * k + kx) * stride;
                const int dx = kx - s.padLeft;
                const auto [oxBegin, oxEnd] = insideColumns(dx, st, Wo, W);
                for (int b = 0; b < n; ++b) {
                    float* plane = dIn + (static_cast<std::size_t>(c) * n + b) * H * W;
                    for (int oy = 0; oy < Ho; ++oy) {
                        const int iy = oy * st + ky - s.padTop;
                        if (iy < 0 || iy >= H) {
                            continue;
                        }
                        const float* g = src + (static_cast<std::size_t>(b) * Ho + oy) * Wo;
                        float* row = plane + static_cast<std::size_t>(iy) * W;
                        if (st == 1) {
                            float* shifted = row + dx;  // a contiguous, vectorisable run
                            for (int ox = oxBegin; ox < oxEnd; ++ox) {
                                shifted[ox] += g[ox];
                            }
                        } else {
                            for (int ox = oxBegin; ox < oxEnd; ++ox) {
                                row[ox * st + dx] += g[ox];
                            }
                        }
                    }
                }
            }
        }
    }
}

// Pooling of `planes` planes of H x W into Ho x Wo (window and stride `size`); for max, the
// index in its plane of each output's first maximum.
void poolForward(const StackLayer& s, const float* in, int planes, float* out, int32_t* argmax) {
    const int H = s.in.height;
    const int W = s.in.width;
    const int Ho = s.out.height;
    const int Wo = s.out.width;
    const int size = s.kernel;
    const float inv = 1.0f / static_cast<float>(size * size);
    for (int p = 0; p < planes; ++p) {
        const float* src = in + static_cast<std::size_t>(p) * H * W;
        float* dst = out + static_cast<std::size_t>(p) * Ho * Wo;
        int32_t* arg = argmax != nullptr ? argmax + static_cast<std::size_t>(p) * Ho * Wo : nullptr;
        for (int oy = 0; oy < Ho; ++oy) {
            for (int ox = 0; ox < Wo; ++ox) {
                if (s.pool == PoolKind::Avg) {
                    float sum = 0.0f;
                    for (int dy = 0; dy < size; ++dy) {
                        const float* row = src + static_cast<std::size_t>(oy * size + dy) * W;
                        for (int dx = 0; dx < size; ++dx) {
                            sum += row[ox * size + dx];
                        }
                    }
                    dst[oy * Wo + ox] = sum * inv;
                } else {
                    int best = (oy * size) * W + ox * size;
                    float bestValue = src[best];
                    for (int dy = 0; dy < size; ++dy) {
                        for (int dx = 0; dx < size; ++dx) {
                            const int i = (oy * size + dy) * W + ox * size + dx;
                            // Strictly greater: the first maximum wins; a NaN never does.
                            if (src[i] > bestValue) {
                                best = i;
                                bestValue = src[i];
                            }
                        }
                    }
                    dst[oy * Wo + ox] = bestValue;
                    arg[oy * Wo + ox] = best;
                }
            }
        }
    }
}

void poolBackward(const StackLayer& s, const float* dOut, const int32_t* argmax, int planes,
                  float* dIn) {
    const int H = s.in.height;
    const int W = s.in.width;
    const int Ho = s.out.height;
    const int Wo = s.out.width;
    const int size = s.kernel;
    const float inv = 1.0f / static_cast<float>(size * size);
    std::fill(dIn, dIn + static_cast<std::size_t>(planes) * H * W, 0.0f);
    for (int p = 0; p < planes; ++p) {
        const float* g = dOut + static_cast<std::size_t>(p) * Ho * Wo;
        float* dst = dIn + static_cast<std::size_t>(p) * H * W;
        if (s.pool == PoolKind::Avg) {
            for (int oy = 0; oy < Ho; ++oy) {
                for (int ox = 0; ox < Wo; ++ox) {
                    const float v = g[oy * Wo + ox] * inv;
                    for (int dy = 0; dy < size; ++dy) {
                        float* row = dst + static_cast<std::size_t>(oy * size + dy) * W;
                        for (int dx = 0; dx < size; ++dx) {
                            row[ox * size + dx] = v;
                        }
                    }
                }
            }
        } else {
            const int32_t* arg = argmax + static_cast<std::size_t>(p) * Ho * Wo;
            for (int i = 0; i < Ho * Wo; ++i) {
                dst[arg[i]] += g[i];
            }
        }
    }
}

void activate(Activation act, const float* pre, float* post, std::size_t n) {
    if (act == Activation::Relu) {
        for (std::size_t i = 0; i < n; ++i) {
            post[i] = pre[i] > 0.0f ? pre[i] : 0.0f;
        }
        return;
    }
    for (std::size_t i = 0; i < n; ++i) {
        post[i] = ensemble::activate(act, pre[i]);
    }
}

void activateGrad(Activation act, const float* pre, const float* post, float* delta,
                  std::size_t n) {
    if (act == Activation::Relu) {
        for (std::size_t i = 0; i < n; ++i) {
            delta[i] = pre[i] > 0.0f ? delta[i] : 0.0f;
        }
        return;
    }
    for (std::size_t i = 0; i < n; ++i) {
        delta[i] *= ensemble::activateGrad(act, pre[i], post[i]);
    }
}

// The training dropout masks of `units` units (or channels) of `layer` for examples at batch
// positions d.firstRow + b, b < n (math/dropout.h): unit u of example b at
// mask[b * exampleStride + u * unitStride]. One Philox draw gives four units of an example.
void fillDropoutMask(const DropoutStep& d, int layer, int units, int n, std::size_t exampleStride,
                     std::size_t unitStride, float* mask) {
    const float scale = dropoutScale(d.rate);
    for (int b = 0; b < n; ++b) {
        for (int u = 0; u < units; u += 4) {
            const Philox4x32 r = dropoutTrainingDrawLanes<uint32_t>(
                d.seed, d.step, d.member, d.firstRow + static_cast<uint32_t>(b), layer, u);
            for (int j = 0; j < 4 && u + j < units; ++j) {
                mask[static_cast<std::size_t>(b) * exampleStride +
                     static_cast<std::size_t>(u + j) * unitStride] =
                    dropoutMaskValue(r.v[j], d.rate, scale);
            }
        }
    }
}

// The training masks of dropout layer `layer` (its stack index, rate `rate`) for n examples:
// `flat` inputs are [n][units], maps [C][n][plane] (the path's layouts); each value's key is
// its example's batch position and its position in the flatten order (math/dropout.h).
void fillLayerDropoutMask(const DropoutStep& d, float rate, int layer, Shape shape, int n,
                          bool flat, float* mask) {
    const float scale = dropoutScale(rate);
    const int size = static_cast<int>(shape.size());
    const std::size_t plane = static_cast<std::size_t>(shape.plane());
    for (int b = 0; b < n; ++b) {
        for (int p = 0; p < size; p += 4) {
            const Philox4x32 r = dropoutLayerDrawLanes<uint32_t>(
                d.seed, d.step, d.member, d.firstRow + static_cast<uint32_t>(b), layer, p);
            for (int j = 0; j < 4 && p + j < size; ++j) {
                const std::size_t position = static_cast<std::size_t>(p + j);
                const std::size_t at = flat ? static_cast<std::size_t>(b) * size + position
                                            : (position / plane * n + b) * plane + position % plane;
                mask[at] = dropoutMaskValue(r.v[j], rate, scale);
            }
        }
    }
}

// x[i] *= mask[i / span] for i < n * span: a mask value per run of `span` floats (a conv
// channel's plane of one example; 1 for a dense layer).
void applyDropout(float* x, const float* mask, std::size_t n, std::size_t span) {
    for (std::size_t m = 0; m < n; ++m) {
        float* run = x + m * span;
        for (std::size_t i = 0; i < span; ++i) {
            run[i] *= mask[m];
        }
    }
}

// delta = (delta * mask) * f'(pre) (dropoutActivationGrad, math/dropout.h), with the masks as
// in applyDropout.
void dropoutActivateGrad(Activation act, const float* pre, const float* mask, float* delta,
                         std::size_t n, std::size_t span) {
    for (std::size_t m = 0; m < n; ++m) {
        const std::size_t begin = m * span;
        for (std::size_t i = begin; i < begin + span; ++i) {
            delta[i] = dropoutActivationGrad(act, delta[i], mask[m], pre[i]);
        }
    }
}

// The sum of n floats in a fixed order: 16 running sums (one AVX-512 register, two AVX ones),
// then those in order. Vectorises where a single running sum cannot.
float rowSum(const float* x, std::size_t n) {
    float acc[16] = {};
    std::size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        for (int l = 0; l < 16; ++l) {
            acc[l] += x[i + static_cast<std::size_t>(l)];
        }
    }
    for (int l = 0; i < n; ++i, ++l) {
        acc[l] += x[i];
    }
    float sum = 0.0f;
    for (float a : acc) {
        sum += a;
    }
    return sum;
}

// The task's images as [C][n][H][W] (rows of x are [C][H][W]): x itself when C = 1.
const float* channelMajor(const Architecture& a, const float* x, int n, FloatBuffer& buffer) {
    const Shape in = a.input();
    if (in.channels == 1) {
        return x;
    }
    const std::size_t plane = static_cast<std::size_t>(in.plane());
    for (int b = 0; b < n; ++b) {
        for (int c = 0; c < in.channels; ++c) {
            std::copy_n(x + (static_cast<std::size_t>(b) * in.channels + c) * plane, plane,
                        buffer.data() + (static_cast<std::size_t>(c) * n + b) * plane);
        }
    }
    return buffer.data();
}

}  // namespace

}  // namespace ensemble::conv
