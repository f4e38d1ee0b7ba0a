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

// A conv whose output has its input's size (stride 1, "same" padding): one column row of an
// example, (c, ky, kx), is the input plane shifted by dy W + dx (dy = ky - padTop, dx = kx -
// padLeft), so it is made (or added back) as one contiguous run, and the positions whose column
// ox + dx falls outside the row are zeroed after: a run of a plane instead of a loop per row.
bool sameSizeStrideOne(const StackLayer& s) {
    return s.stride == 1 && s.out.height == s.in.height && s.out.width == s.in.width;
}

// The output rows [begin, end) of a same-size conv whose input row oy + dy is inside the plane.
ColumnRange insideRows(int dy, int height) {
    return {std::max(0, -dy), std::min(height, height - dy)};
}

// Zeroes the columns of rows [rows.begin, rows.end) of a W-wide run whose input column ox + dx
// lies outside the row.
void zeroWrappedColumns(float* run, int W, int dx, ColumnRange rows) {
    const int begin = dx < 0 ? 0 : W - dx;
    const int end = dx < 0 ? -dx : W;
    for (int oy = rows.begin; oy < rows.end; ++oy) {
        std::fill(run + static_cast<std::size_t>(oy) * W + begin,
                  run + static_cast<std::size_t>(oy) * W + end, 0.0f);
    }
}

// One column row of a same-size conv for one example: out[oy W + ox] = plane[(oy + dy) W + ox +
// dx], zero outside the plane.
void shiftedPlane(const float* plane, int H, int W, int dy, int dx, float* out) {
    const ColumnRange rows = insideRows(dy, H);
    const std::ptrdiff_t size = static_cast<std::ptrdiff_t>(H) * W;
    if (rows.begin >= rows.end) {
        std::fill(out, out + size, 0.0f);
        return;
    }
    std::fill(out, out + static_cast<std::ptrdiff_t>(rows.begin) * W, 0.0f);
    std::fill(out + static_cast<std::ptrdiff_t>(rows.end) * W, out + size, 0.0f);
    // The run's source [from, to), clipped to the plane; the clipped ends are wrapped columns.
    const std::ptrdiff_t from = static_cast<std::ptrdiff_t>(rows.begin + dy) * W + dx;
    const std::ptrdiff_t to = static_cast<std::ptrdiff_t>(rows.end + dy) * W + dx;
    const std::ptrdiff_t lo = std::max<std::ptrdiff_t>(from, 0);
    const std::ptrdiff_t hi = std::min(to, size);
    // plane[i] goes to out[i - from + rows.begin W].
    std::copy(plane + lo, plane + hi,
              out + (lo - from) + static_cast<std::ptrdiff_t>(rows.begin) * W);
    if (dx != 0) {
        zeroWrappedColumns(out, W, dx, rows);
    }
}

// The adjoint of shiftedPlane, added: plane[(oy + dy) W + ox + dx] += g[oy W + ox] inside the
// plane. g is scratch: its wrapped columns are zeroed so that the run adds 0 there.
void addShiftedPlane(float* g, int H, int W, int dy, int dx, float* plane) {
    const ColumnRange rows = insideRows(dy, H);
    if (rows.begin >= rows.end) {
        return;
    }
    if (dx != 0) {
        zeroWrappedColumns(g, W, dx, rows);
    }
    const std::ptrdiff_t size = static_cast<std::ptrdiff_t>(H) * W;
    const std::ptrdiff_t from = static_cast<std::ptrdiff_t>(rows.begin + dy) * W + dx;
    const std::ptrdiff_t to = static_cast<std::ptrdiff_t>(rows.end + dy) * W + dx;
    const std::ptrdiff_t lo = std::max<std::ptrdiff_t>(from, 0);
    const std::ptrdiff_t hi = std::min(to, size);
    // plane[i] receives g[i - from + rows.begin W].
    const float* src = g + (lo - from) + static_cast<std::ptrdiff_t>(rows.begin) * W;
    for (std::ptrdiff_t i = 0; i < hi - lo; ++i) {
        plane[lo + i] += src[i];
    }
}

// im2col of one conv layer for examples [first, first + count) of the `n` in `in`
// ([C][n][H][W]): cols[(c k + ky) k + kx][((b - first) Ho + oy) Wo + ox] =
// in[c][b][oy s + ky - padTop][ox s + kx - padLeft], zero outside. `stride` is the row stride of
// cols (>= count Ho Wo).
void im2col(const StackLayer& s, const float* in, int n, int first, int count, float* cols,
            std::size_t stride) {
    const bool sameSize = sameSizeStrideOne(s);
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
                if (sameSize) {
                    for (int b = 0; b < count; ++b) {
                        shiftedPlane(in + (static_cast<std::size_t>(c) * n + first + b) * H * W, H,
                                     W, ky - s.padTop, dx,
                                     dst + static_cast<std::size_t>(b) * H * W);
                    }
                    continue;
                }
                const auto [oxBegin, oxEnd] = insideColumns(dx, st, Wo, W);
                for (int b = 0; b < count; ++b) {
                    const float* plane = in + (static_cast<std::size_t>(c) * n + first + b) * H * W;
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

// The adjoint of im2col for examples [first, first + count): their planes of dIn ([C][n][H][W])
// are zeroed, then receive the columns' gradients (row stride count Ho Wo; scratch, changed
// here) in a fixed order (c, ky, kx, b, oy, ox). The other examples' planes are not touched.
void col2im(const StackLayer& s, float* cols, int n, int first, int count, float* dIn) {
    const bool sameSize = sameSizeStrideOne(s);
    const int C = s.in.channels;
    const int H = s.in.height;
    const int W = s.in.width;
    const int Ho = s.out.height;
    const int Wo = s.out.width;
    const int k = s.kernel;
    const int st = s.stride;
    const std::size_t stride = static_cast<std::size_t>(count) * Ho * Wo;
    const std::size_t planeSize = static_cast<std::size_t>(H) * W;
    for (int c = 0; c < C; ++c) {
        float* planes = dIn + (static_cast<std::size_t>(c) * n + first) * planeSize;
        std::fill(planes, planes + count * planeSize, 0.0f);
    }
    for (int c = 0; c < C; ++c) {
        for (int ky = 0; ky < k; ++ky) {
            for (int kx = 0; kx < k; ++kx) {
                float* src = cols + static_cast<std::size_t>((c * k + ky) * k + kx) * stride;
                const int dx = kx - s.padLeft;
                if (sameSize) {
                    for (int b = 0; b < count; ++b) {
                        addShiftedPlane(
                            src + static_cast<std::size_t>(b) * H * W, H, W, ky - s.padTop, dx,
                            dIn + (static_cast<std::size_t>(c) * n + first + b) * planeSize);
                    }
                    continue;
                }
                const auto [oxBegin, oxEnd] = insideColumns(dx, st, Wo, W);
                for (int b = 0; b < count; ++b) {
                    float* plane = dIn + (static_cast<std::size_t>(c) * n + first + b) * planeSize;
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

// Pooling of `planes` planes of H x W into Ho x Wo (window and stride Size, or `size` when Size
// is 0); for max, the index in its plane of each output's first maximum. A window's sum runs in
// the order (dy, dx) from 0 for every Size. A known Size unrolls the window, so the loop over
// ox is the inner one and vectorises: the runtime window's loops cost more than the arithmetic.
template <PoolKind Kind, int Size>
void poolForwardPlanes(const StackLayer& s, int size, const float* in, int planes, float* out,
                       int32_t* argmax) {
    if constexpr (Size > 0) {
        size = Size;
    }
    const int H = s.in.height;
    const int W = s.in.width;
    const int Ho = s.out.height;
    const int Wo = s.out.width;
    const float inv = 1.0f / static_cast<float>(size * size);
    for (int p = 0; p < planes; ++p) {
        const float* src = in + static_cast<std::size_t>(p) * H * W;
        for (int oy = 0; oy < Ho; ++oy) {
            const float* top = src + static_cast<std::size_t>(oy * size) * W;
            float* dst = out + (static_cast<std::size_t>(p) * Ho + oy) * Wo;
            if constexpr (Kind == PoolKind::Avg) {
                for (int ox = 0; ox < Wo; ++ox) {
                    float sum = 0.0f;
                    for (int dy = 0; dy < size; ++dy) {
                        for (int dx = 0; dx < size; ++dx) {
                            sum += top[dy * W + ox * size + dx];
                        }
                    }
                    dst[ox] = sum * inv;
                }
            } else {
                int32_t* arg = argmax + (static_cast<std::size_t>(p) * Ho + oy) * Wo;
                for (int ox = 0; ox < Wo; ++ox) {
                    const int origin = (oy * size) * W + ox * size;
                    int best = origin;
                    float bestValue = top[ox * size];
                    for (int dy = 0; dy < size; ++dy) {
                        for (int dx = 0; dx < size; ++dx) {
                            const float v = top[dy * W + ox * size + dx];
                            // Strictly greater: the first maximum wins; a NaN never does.
                            const bool greater = v > bestValue;
                            best = greater ? origin + dy * W + dx : best;
                            bestValue = greater ? v : bestValue;
                        }
                    }
                    dst[ox] = bestValue;
                    arg[ox] = best;
                }
            }
        }
    }
}

template <PoolKind Kind>
void poolForwardKind(const StackLayer& s, const float* in, int planes, float* out,
                     int32_t* argmax) {
    switch (s.kernel) {
        case 2:
            poolForwardPlanes<Kind, 2>(s, 2, in, planes, out, argmax);
            return;
        case 3:
            poolForwardPlanes<Kind, 3>(s, 3, in, planes, out, argmax);
            return;
        default:
            poolForwardPlanes<Kind, 0>(s, s.kernel, in, planes, out, argmax);
    }
}

void poolForward(const StackLayer& s, const float* in, int planes, float* out, int32_t* argmax) {
    if (s.pool == PoolKind::Avg) {
        poolForwardKind<PoolKind::Avg>(s, in, planes, out, nullptr);
    } else {
        poolForwardKind<PoolKind::Max>(s, in, planes, out, argmax);
    }
}

// Average pooling's gradient: every input of a window gets its output's gradient / size^2
// (written, not added: windows do not overlap), the inputs outside every window 0.
template <int Size>
void avgPoolBackwardPlanes(const StackLayer& s, int size, const float* dOut, int planes,
                           float* dIn) {
    if constexpr (Size > 0) {
        size = Size;
    }
    const int H = s.in.height;
    const int W = s.in.width;
    const int Ho = s.out.height;
    const int Wo = s.out.width;
    const float inv = 1.0f / static_cast<float>(size * size);
    // Windows that tile the plane write every input: no zeroing pass.
    if (Ho * size != H || Wo * size != W) {
        std::fill(dIn, dIn + static_cast<std::size_t>(planes) * H * W, 0.0f);
    }
    for (int p = 0; p < planes; ++p) {
        for (int oy = 0; oy < Ho; ++oy) {
            const float* g = dOut + (static_cast<std::size_t>(p) * Ho + oy) * Wo;
            float* top = dIn + (static_cast<std::size_t>(p) * H + oy * size) * W;
            for (int dy = 0; dy < size; ++dy) {
                float* row = top + static_cast<std::size_t>(dy) * W;
                for (int ox = 0; ox < Wo; ++ox) {
                    const float v = g[ox] * inv;
                    for (int dx = 0; dx < size; ++dx) {
                        row[ox * size + dx] = v;
                    }
                }
            }
        }
    }
}

void poolBackward(const StackLayer& s, const float* dOut, const int32_t* argmax, int planes,
                  float* dIn) {
    if (s.pool == PoolKind::Avg) {
        switch (s.kernel) {
            case 2:
                avgPoolBackwardPlanes<2>(s, 2, dOut, planes, dIn);
                return;
            case 3:
                avgPoolBackwardPlanes<3>(s, 3, dOut, planes, dIn);
                return;
            default:
                avgPoolBackwardPlanes<0>(s, s.kernel, dOut, planes, dIn);
                return;
        }
    }
    const std::size_t inPlane = static_cast<std::size_t>(s.in.height) * s.in.width;
    const std::size_t outPlane = static_cast<std::size_t>(s.out.height) * s.out.width;
    std::fill(dIn, dIn + static_cast<std::size_t>(planes) * inPlane, 0.0f);
    for (int p = 0; p < planes; ++p) {
        const float* g = dOut + static_cast<std::size_t>(p) * outPlane;
        const int32_t* arg = argmax + static_cast<std::size_t>(p) * outPlane;
        float* dst = dIn + static_cast<std::size_t>(p) * inPlane;
        for (std::size_t i = 0; i < outPlane; ++i) {
            dst[arg[i]] += g[i];
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

// positive[i] = pre[i] > 0: all that ReLU's gradient needs of a pre-activation.
void markPositive(const float* pre, uint8_t* positive, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) {
        positive[i] = pre[i] > 0.0f ? 1 : 0;
    }
}

// ReLU's gradient from markPositive's bytes: activateGrad's rule, the same bits.
void keepWherePositive(const uint8_t* positive, float* delta, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) {
        delta[i] = positive[i] != 0 ? delta[i] : 0.0f;
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
