#include "backend/cpu/fast_mlp.h"

#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>

#include "backend/cpu/gemm.h"
#include "backend/cpu/simd_lanes.h"
#include "core/unreachable.h"
#include "math/loss.h"

namespace ensemble {

namespace {

using Eigen::internal::padd;
using Eigen::internal::pand;
using Eigen::internal::pcmp_eq;
using Eigen::internal::pcmp_le;
using Eigen::internal::pcmp_lt;
using Eigen::internal::pload;
using Eigen::internal::ploadu;
using Eigen::internal::pmadd;
using Eigen::internal::pmul;
using Eigen::internal::predux;
using Eigen::internal::pset1;
using Eigen::internal::pstore;
using Eigen::internal::pstoreu;
using Eigen::internal::psub;

using simd::kLanes;
using simd::Packet;
// AVX-512 has 32 vector registers, AVX and SSE 16: the register blocking follows.
constexpr bool kManyRegisters = kLanes >= 16;

// Layers with more multiply-adds than this per product go to Eigen's GEMM: its packing pays
// off there, while below it the per-call overhead (blocking, packing, zeroing) dominates.
constexpr std::size_t kEigenMacs = std::size_t{1} << 20;

using RowMatrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using StridedMap = Eigen::Map<RowMatrix, Eigen::Unaligned, Eigen::OuterStride<>>;

inline int padded(int n) {
    return (n + kLanes - 1) / kLanes * kLanes;
}

// Whether dW is cheaper as (A^T dZ)^T, vectorised along the outputs: when padding the inputs
// to whole vectors would waste more than half of the lanes that padding the outputs would.
inline bool transposedWeightGradient(int in, int out) {
    return 2 * static_cast<long>(in) * padded(out) <= static_cast<long>(out) * padded(in);
}

inline bool useEigen(int in, int out, int batch) {
    return static_cast<std::size_t>(in) * static_cast<std::size_t>(out) *
               static_cast<std::size_t>(batch) >
           kEigenMacs;
}

// Eigen's GEMM for the large layers with the workspace's packing buffers (backend/cpu/gemm.h).
// Precondition: ws.gemmA / ws.gemmB hold FixedBlocking(rows, cols, depth)'s sizes.
template <int LhsOrder, int RhsOrder>
void gemm(Eigen::Index rows, Eigen::Index cols, Eigen::Index depth, const float* lhs,
          Eigen::Index lhsStride, const float* rhs, Eigen::Index rhsStride, float* res,
          Eigen::Index resStride, FastWorkspace& ws) {
    cpu::gemm<LhsOrder, RhsOrder>(rows, cols, depth, lhs, lhsStride, rhs, rhsStride, res, resStride,
                                  ws.gemmA.data(), ws.gemmB.data());
}

// ---------------------------------------------------------------------------------------------
// The one small-product kernel: C[r, 0:n) = bias[r] + sum_k alpha(r, k) * M[k, 0:n), with
// alpha(r, k) = alpha[r * ar + k * ak] broadcast from memory and M's rows aligned vectors. The
// three products of a layer are all of this form in the feature-major layout:
//   forward  Z^T[o, :]  = b[o] + sum_i W[o, i]  A^T[i, :]      (alpha = W,    M = A^T)
//   dA^T[i, :]          =        sum_o W[o, i]  dZ^T[o, :]     (alpha = W^T,  M = dZ^T)
//   dW[o, :]            =        sum_b dZ^T[o, b] A[b, :]      (alpha = dZ^T, M = A, B-major)
// Each output element is one chain of FMAs in k order: the result never depends on blocking.

template <int RO, int CB>
inline void microKernel(int count, const float* alpha, std::ptrdiff_t ar, std::ptrdiff_t ak,
                        const float* m, std::ptrdiff_t ms, const float* bias, float* c,
                        std::ptrdiff_t cs) {
    Packet acc[RO][CB];
#pragma GCC unroll 16
    for (int r = 0; r < RO; ++r) {
        const Packet init = pset1<Packet>(bias != nullptr ? bias[r] : 0.0f);
#pragma GCC unroll 4
        for (int j = 0; j < CB; ++j) {
            acc[r][j] = init;
        }
    }
    for (int k = 0; k < count; ++k) {
        Packet row[CB];
        const float* mk = m + k * ms;
#pragma GCC unroll 4
        for (int j = 0; j < CB; ++j) {
            row[j] = pload<Packet>(mk + j * kLanes);
        }
        const float* ak0 = alpha + k * ak;
#pragma GCC unroll 16
        for (int r = 0; r < RO; ++r) {
            const Packet a = pset1<Packet>(ak0[r * ar]);
#pragma GCC unroll 4
            for (int j = 0; j < CB; ++j) {
                acc[r][j] = pmadd(a, row[j], acc[r][j]);
            }
        }
    }
#pragma GCC unroll 16
    for (int r = 0; r < RO; ++r) {
#pragma GCC unroll 4
        for (int j = 0; j < CB; ++j) {
            pstore(c + r * cs + j * kLanes, acc[r][j]);
        }
    }
}

// Rows in blocks of RO (then 8, 4, 2, 1) for a fixed number CB of column vectors.
template <int CB>
inline void kernelRows(int rows, int count, const float* alpha, std::ptrdiff_t ar,
                       std::ptrdiff_t ak, const float* m, std::ptrdiff_t ms, const float* bias,
                       float* c, std::ptrdiff_t cs) {
    // Accumulators RO x CB plus CB row vectors and a broadcast must fit the register file.
    constexpr int RO = kManyRegisters ? (CB >= 4   ? 6
                                         : CB == 2 ? 8
                                                   : 16)
                                      : (CB >= 4   ? 2
                                         : CB == 2 ? 4
                                                   : 8);
    int r = 0;
    const auto block = [&](auto roTag) {
        constexpr int n = decltype(roTag)::value;
        microKernel<n, CB>(count, alpha + r * ar, ar, ak, m, ms,
                           bias != nullptr ? bias + r : nullptr, c + r * cs, cs);
        r += n;
    };
    while (r + RO <= rows) {  // block() advances r
        block(std::integral_constant<int, RO>{});
    }
    if constexpr (RO > 8) {
        if (rows - r >= 8) {
            block(std::integral_constant<int, 8>{});
        }
    }
    if constexpr (RO > 4) {
        if (rows - r >= 4) {
            block(std::integral_constant<int, 4>{});
        }
    }
    if (rows - r >= 2) {
        block(std::integral_constant<int, 2>{});
    }
    if (rows - r >= 1) {
        block(std::integral_constant<int, 1>{});
    }
}

// C (rows x vectors*kLanes, stride cs) = bias + alpha * M, in column blocks of 4, 2, 1 vectors.
void smallProduct(int rows, int vectors, int count, const float* alpha, std::ptrdiff_t ar,
                  std::ptrdiff_t ak, const float* m, std::ptrdiff_t ms, const float* bias, float* c,
                  std::ptrdiff_t cs) {
    int v = 0;
    for (; v + 4 <= vectors; v += 4) {
        kernelRows<4>(rows, count, alpha, ar, ak, m + v * kLanes, ms, bias, c + v * kLanes, cs);
    }
    if (vectors - v >= 2) {
        kernelRows<2>(rows, count, alpha, ar, ak, m + v * kLanes, ms, bias, c + v * kLanes, cs);
        v += 2;
    }
    if (vectors - v >= 1) {
        kernelRows<1>(rows, count, alpha, ar, ak, m + v * kLanes, ms, bias, c + v * kLanes, cs);
    }
}

// Transposes kLanes packets in place (row i becomes column i).
inline void transposeBlock(Eigen::internal::PacketBlock<Packet, kLanes>& block) {
#if defined(__AVX512F__)
    // 64 shuffles in four stages (Eigen's generic version takes 112): 32-bit pairs, 64-bit
    // pairs, then 128-bit lanes twice.
    __m512* r = block.packet;
    __m512 t[16];
    for (int i = 0; i < 16; i += 2) {
        t[i] = _mm512_unpacklo_ps(r[i], r[i + 1]);
        t[i + 1] = _mm512_unpackhi_ps(r[i], r[i + 1]);
    }
    for (int i = 0; i < 16; i += 4) {
        r[i] = _mm512_castpd_ps(
            _mm512_unpacklo_pd(_mm512_castps_pd(t[i]), _mm512_castps_pd(t[i + 2])));
        r[i + 1] = _mm512_castpd_ps(
            _mm512_unpackhi_pd(_mm512_castps_pd(t[i]), _mm512_castps_pd(t[i + 2])));
        r[i + 2] = _mm512_castpd_ps(
            _mm512_unpacklo_pd(_mm512_castps_pd(t[i + 1]), _mm512_castps_pd(t[i + 3])));
        r[i + 3] = _mm512_castpd_ps(
            _mm512_unpackhi_pd(_mm512_castps_pd(t[i + 1]), _mm512_castps_pd(t[i + 3])));
    }
    for (int h = 0; h < 16; h += 8) {
        for (int i = 0; i < 4; ++i) {
            t[h + i] = _mm512_shuffle_f32x4(r[h + i], r[h + i + 4], 0x88);
            t[h + i + 4] = _mm512_shuffle_f32x4(r[h + i], r[h + i + 4], 0xDD);
        }
    }
    for (int i = 0; i < 8; ++i) {
        r[i] = _mm512_shuffle_f32x4(t[i], t[i + 8], 0x88);
        r[i + 8] = _mm512_shuffle_f32x4(t[i], t[i + 8], 0xDD);
    }
#else
    Eigen::internal::ptranspose(block);
#endif
}

// dst (cols x rowsP, stride rowsP) = src^T for src rowsP x cols (stride srcStride); rowsP and
// cols are multiples of kLanes.
void transposeBlocks(const float* src, int rowsP, int cols, std::ptrdiff_t srcStride, float* dst) {
    for (int r0 = 0; r0 < rowsP; r0 += kLanes) {
        for (int c0 = 0; c0 < cols; c0 += kLanes) {
            Eigen::internal::PacketBlock<Packet, kLanes> block;
            for (int i = 0; i < kLanes; ++i) {
                block.packet[i] = pload<Packet>(src + (r0 + i) * srcStride + c0);
            }
            transposeBlock(block);
            for (int i = 0; i < kLanes; ++i) {
                pstore(dst + static_cast<std::ptrdiff_t>(c0 + i) * rowsP + r0, block.packet[i]);
            }
        }
    }
}

// sums[r] = sum over b < batch of m[r * bp + b] for r < rows (m's padded columns are ignored):
// kLanes rows at a time, their partial sums transposed so one vector add finishes kLanes sums.
void rowSums(const float* m, int rows, int batch, int bp, float* sums) {
    const int full = batch / kLanes;
    alignas(64) float lastMask[kLanes];
    for (int i = 0; i < kLanes; ++i) {
        std::uint32_t bits = full * kLanes + i < batch ? 0xFFFFFFFFu : 0u;
        std::memcpy(&lastMask[i], &bits, sizeof bits);
    }
    const Packet mask = pload<Packet>(lastMask);
    const bool partial = batch % kLanes != 0;
    auto rowSum = [&](const float* row) {
        Packet acc = pset1<Packet>(0.0f);
        for (int v = 0; v < full; ++v) {
            acc = padd(acc, pload<Packet>(row + v * kLanes));
        }
        if (partial) {
            acc = padd(acc, pand(mask, pload<Packet>(row + full * kLanes)));
        }
        return acc;
    };
    int r = 0;
    for (; r + kLanes <= rows; r += kLanes) {
        Eigen::internal::PacketBlock<Packet, kLanes> block;
        for (int i = 0; i < kLanes; ++i) {
            block.packet[i] = rowSum(m + static_cast<std::ptrdiff_t>(r + i) * bp);
        }
        transposeBlock(block);
        Packet total = block.packet[0];
        for (int i = 1; i < kLanes; ++i) {
            total = padd(total, block.packet[i]);
        }
        pstoreu(sums + r, total);
    }
    for (; r < rows; ++r) {
        sums[r] = predux(rowSum(m + static_cast<std::ptrdiff_t>(r) * bp));
    }
}

// post = f(pre) over n floats (n a multiple of kLanes).
void activateRows(Activation act, const float* pre, float* post, std::size_t n) {
    if (act == Activation::Relu) {
        const Packet zero = pset1<Packet>(0.0f);
        for (std::size_t i = 0; i < n; i += kLanes) {
            // z & (z > 0): exactly activate()'s `z > 0 ? z : 0`, NaN and -0 included.
            const Packet z = pload<Packet>(pre + i);
            pstore(post + i, pand(pcmp_lt(zero, z), z));
        }
        return;
    }
    for (std::size_t i = 0; i < n; ++i) {
        post[i] = activate(act, pre[i]);
    }
}

// delta *= f'(pre) (post = f(pre)) over n floats (n a multiple of kLanes).
void activateGradRows(Activation act, const float* pre, const float* post, float* delta,
                      std::size_t n) {
    if (act == Activation::Relu) {
        const Packet zero = pset1<Packet>(0.0f);
        const Packet one = pset1<Packet>(1.0f);
        for (std::size_t i = 0; i < n; i += kLanes) {
            const Packet mask = pcmp_lt(zero, pload<Packet>(pre + i));
            pstore(delta + i, pmul(pload<Packet>(delta + i), pand(mask, one)));
        }
        return;
    }
    for (std::size_t i = 0; i < n; ++i) {
        delta[i] *= activateGrad(act, pre[i], post[i]);
    }
}

// Forward pass of member k over the batch (feature-major): returns the logits, classes x Bp.
const float* forward(const ParamLayout& layout, int k, Activation act, const float* params,
                     const FastBatch& in, int batch, int bp, FastWorkspace& ws) {
    const int layers = layout.layerCount();
    const int vectors = bp / kLanes;
    for (int l = 0; l < layers; ++l) {
        const LayerSlot& s = layout.layer(l);
        const float* w = params + layout.weightOffset(l, k);
        const float* bias = params + layout.biasOffset(l, k);
        float* z = ws.pre[static_cast<std::size_t>(l)].data();
        if (!useEigen(s.in, s.out, batch)) {
            const float* aT =
                l == 0 ? in.xt.data() : ws.post[static_cast<std::size_t>(l - 1)].data();
            smallProduct(s.out, vectors, s.in, w, s.in, 1, aT, bp, bias, z, bp);
        } else {
            // Z^T = W X^T (X batch-major) or W A^T, then + b.
            if (l == 0) {
                gemm<Eigen::RowMajor, Eigen::ColMajor>(s.out, bp, s.in, w, s.in, in.xb.data(),
                                                       in.paddedInputs, z, bp, ws);
            } else {
                gemm<Eigen::RowMajor, Eigen::RowMajor>(
                    s.out, bp, s.in, w, s.in, ws.post[static_cast<std::size_t>(l - 1)].data(), bp,
                    z, bp, ws);
            }
            StridedMap zm(z, s.out, bp, Eigen::OuterStride<>(bp));
            const Eigen::Map<const Eigen::VectorXf> bv(bias, s.out);
            zm.colwise() += bv;
        }
        if (l + 1 < layers) {
            activateRows(act, z, ws.post[static_cast<std::size_t>(l)].data(),
                         static_cast<std::size_t>(s.out) * bp);
        }
    }
    return ws.pre[static_cast<std::size_t>(layers - 1)].data();
}

// Sum over the batch of weight_b * CE_b / normaliser (the batch size: the mean; a data-axis
// shard passes the whole batch's size) for logits (classes x bp, feature-major), and dLogits
// into delta (classes x bp, zero in the padding): softmaxCrossEntropyLanes of math/loss.h with
// one example per lane.
float crossEntropy(const float* logits, int classes, const int32_t* labels, const float* weights,
                   int batch, int normaliser, int bp, FastWorkspace& ws, float* delta) {
    float* ew = ws.exampleWeights.data();
    float* el = ws.exampleLabels.data();
    const float scale = 1.0f / static_cast<float>(normaliser);
    for (int b = 0; b < batch; ++b) {
        ew[b] = weights[b] * scale;
        el[b] = static_cast<float>(labels[b]);
    }
    Packet lossAcc = pset1<Packet>(0.0f);
    for (int v = 0; v < bp; v += kLanes) {
        const Packet label = pload<Packet>(el + v);
        // Padding lanes (label -1) contribute exactly 0, whatever their logits.
        const Packet real = pcmp_le(pset1<Packet>(0.0f), label);
        const auto logit = [&](int c) {
            return pload<Packet>(logits + static_cast<std::ptrdiff_t>(c) * bp + v);
        };
        const auto isLabel = [&](int c) {
            return pcmp_eq(label, pset1<Packet>(static_cast<float>(c)));
        };
        const auto grad = [&](int c, Packet g) {
            pstore(delta + static_cast<std::ptrdiff_t>(c) * bp + v, pand(real, g));
        };
        const Packet loss =
            softmaxCrossEntropyLanes(classes, logit, isLabel, pload<Packet>(ew + v), grad);
        lossAcc = padd(lossAcc, pand(real, loss));
    }
    return predux(lossAcc);
}

// Sum over the batch of weight_b * loss_b / normaliser of a regression head (outputs x bp,
// feature-major:
// row 0 the mean, row 1 the gaussian's raw variance) against the standardised targets, and
// dOutputs into delta: gaussianNllLanes / squaredErrorLanes of math/loss.h, one example per
// lane.
float regressionLoss(const float* outputs, Likelihood likelihood, const float* targets,
                     const float* weights, int batch, int normaliser, int bp, FastWorkspace& ws,
                     float* delta) {
    float* ew = ws.exampleWeights.data();
    float* el = ws.exampleLabels.data();
    float* et = ws.exampleTargets.data();
    const float scale = 1.0f / static_cast<float>(normaliser);
    for (int b = 0; b < batch; ++b) {
        ew[b] = weights[b] * scale;
        el[b] = 0.0f;  // real row (the padding keeps -1)
        et[b] = targets[b];
    }
    const bool gaussian = likelihood == Likelihood::Gaussian;
    Packet lossAcc = pset1<Packet>(0.0f);
    for (int v = 0; v < bp; v += kLanes) {
        const Packet real = pcmp_le(pset1<Packet>(0.0f), pload<Packet>(el + v));
        const Packet w = pload<Packet>(ew + v);
        const Packet t = pload<Packet>(et + v);
        const Packet mean = pload<Packet>(outputs + v);
        Packet gradMean;
        Packet loss;
        if (gaussian) {
            Packet gradRaw;
            loss = gaussianNllLanes(mean, pload<Packet>(outputs + bp + v), t, w, gradMean, gradRaw);
            pstore(delta + bp + v, pand(real, gradRaw));
        } else {
            loss = squaredErrorLanes(mean, t, w, gradMean);
        }
        pstore(delta + v, pand(real, gradMean));
        lossAcc = padd(lossAcc, pand(real, loss));
    }
    return predux(lossAcc);
}

// The shared backward pass: for each layer from the last, dW and db into ws.gradW / ws.gradB,
// dA of the layer below (with the old W), then sink(l, dW, db), which may update layer l (or
// change dW and db first: they are scratch). With `inputGrad` (paddedInputs x Bp, adversarial
// training only) also dLoss/dX^T = W_0^T dZ_0^T, before layer 0's sink.
// Returns the loss (not finite: stops before the backward pass).
template <typename Sink>
float forwardBackward(const ParamLayout& layout, int k, Activation act, const float* params,
                      const FastBatch& in, const int32_t* labels, const float* weights,
                      FastWorkspace& ws, Likelihood likelihood, const float* targets,
                      int normaliser, Sink&& sink, float* inputGrad = nullptr) {
    const int batch = in.batch;
    const int bp = in.paddedBatch;
    const int layers = layout.layerCount();
    const int classes = layout.classes();
    const float* logits = forward(layout, k, act, params, in, batch, bp, ws);

    // Loss and dLogits: softmaxCrossEntropyLanes (math/loss.h) across the examples of the batch
    // (Eigen's pexp/plog instead of expf/logf).
    float* delta = ws.delta.data();
    float* deltaPrev = ws.deltaPrev.data();
    const float loss =
        likelihood == Likelihood::Categorical
            ? crossEntropy(logits, classes, labels, weights, batch, normaliser, bp, ws, delta)
            : regressionLoss(logits, likelihood, targets, weights, batch, normaliser, bp, ws,
                             delta);
    if (!std::isfinite(loss)) {
        return loss;
    }

    const int vectors = bp / kLanes;
    for (int l = layers - 1; l >= 0; --l) {
        const LayerSlot& s = layout.layer(l);
        const float* w = params + layout.weightOffset(l, k);
        float* dw = ws.gradW.data();
        float* db = ws.gradB.data();
        // dW = dZ^T A over the real rows only (padding never reaches a gradient).
        if (!useEigen(s.in, s.out, batch) && transposedWeightGradient(s.in, s.out)) {
            // Few inputs (the 2-D input layer): dW^T = A^T dZ, vectorised along the outputs
            // instead of along mostly-padding input lanes; then transposed into place.
            const int outP = padded(s.out);
            const float* aT =
                l == 0 ? in.xt.data() : ws.post[static_cast<std::size_t>(l - 1)].data();
            transposeBlocks(delta, outP, bp, bp, ws.batchMajor.data());
            float* dwt = ws.gradWT.data();
            smallProduct(s.in, outP / kLanes, batch, aT, bp, 1, ws.batchMajor.data(), outP, nullptr,
                         dwt, outP);
            for (int o = 0; o < s.out; ++o) {
                for (int i = 0; i < s.in; ++i) {
                    dw[static_cast<std::ptrdiff_t>(o) * s.in + i] =
                        dwt[static_cast<std::ptrdiff_t>(i) * outP + o];
                }
            }
        } else if (!useEigen(s.in, s.out, batch)) {
            const int inP = padded(s.in);
            const float* aB = in.xb.data();
            if (l > 0) {
                transposeBlocks(ws.post[static_cast<std::size_t>(l - 1)].data(), inP, bp, bp,
                                ws.batchMajor.data());
                aB = ws.batchMajor.data();
            }
            smallProduct(s.out, inP / kLanes, batch, delta, bp, 1, aB, inP, nullptr, dw, inP);
            if (inP != s.in) {  // compact the rows to stride `in` (moving data only down)
                for (int o = 1; o < s.out; ++o) {
                    std::memmove(dw + static_cast<std::ptrdiff_t>(o) * s.in,
                                 dw + static_cast<std::ptrdiff_t>(o) * inP,
                                 sizeof(float) * static_cast<std::size_t>(s.in));
                }
            }
        } else {
            // dW = dZ^T X (X batch-major) or dZ^T A, over the real rows.
            if (l == 0) {
                gemm<Eigen::RowMajor, Eigen::RowMajor>(s.out, s.in, batch, delta, bp, in.xb.data(),
                                                       in.paddedInputs, dw, s.in, ws);
            } else {
                gemm<Eigen::RowMajor, Eigen::ColMajor>(
                    s.out, s.in, batch, delta, bp, ws.post[static_cast<std::size_t>(l - 1)].data(),
                    bp, dw, s.in, ws);
            }
        }
        rowSums(delta, s.out, batch, bp, db);
        if (l > 0) {
            // dA^T = W^T dZ^T, then times f'(Z) of the layer below.
            if (!useEigen(s.in, s.out, batch)) {
                smallProduct(s.in, vectors, s.out, w, 1, s.in, delta, bp, nullptr, deltaPrev, bp);
            } else {
                gemm<Eigen::ColMajor, Eigen::RowMajor>(s.in, bp, s.out, w, s.in, delta, bp,
                                                       deltaPrev, bp, ws);
            }
            activateGradRows(act, ws.pre[static_cast<std::size_t>(l - 1)].data(),
                             ws.post[static_cast<std::size_t>(l - 1)].data(), deltaPrev,
                             static_cast<std::size_t>(s.in) * bp);
        } else if (inputGrad != nullptr) {
            // dX^T = W^T dZ^T, as dA^T above (zero in the padding, since dZ is).
            if (!useEigen(s.in, s.out, batch)) {
                smallProduct(s.in, vectors, s.out, w, 1, s.in, delta, bp, nullptr, inputGrad, bp);
            } else {
                gemm<Eigen::ColMajor, Eigen::RowMajor>(s.in, bp, s.out, w, s.in, delta, bp,
                                                       inputGrad, bp, ws);
            }
        }
        sink(l, dw, db);
        std::swap(delta, deltaPrev);
    }
    return loss;
}

// out = in moved by eps * sign(inputGrad) (adversarialInput, math/loss.h), in both layouts;
// the padding of out stays zero. Precondition: out.resize(layout, in.batch) was called.
void adversarialBatch(const ParamLayout& layout, const FastBatch& in, const float* inputGrad,
                      float eps, FastBatch& out) {
    const int inputs = layout.inputs();
    const int bp = in.paddedBatch;
    const int ip = in.paddedInputs;
    const float* xb = in.xb.data();  // B-major: fastGather always fills it
    float* ob = out.xb.data();
    float* ot = out.xt.data();
    // As in fastGather: the feature-major copy only feeds the small-layer kernels.
    const bool transposed = !useEigen(inputs, layout.layer(0).out, in.batch);
    for (int b = 0; b < in.batch; ++b) {
        for (int f = 0; f < inputs; ++f) {
            const std::ptrdiff_t major = static_cast<std::ptrdiff_t>(b) * ip + f;
            const std::ptrdiff_t feature = static_cast<std::ptrdiff_t>(f) * bp + b;
            const float v = adversarialInput(xb[major], inputGrad[feature], eps);
            ob[major] = v;
            if (transposed) {
                ot[feature] = v;
            }
        }
    }
}

// Offset of layer l in a member's packed gradient: the layers below, each [W (out x in), b].
std::size_t packedLayerOffset(const ParamLayout& layout, int l) {
    std::size_t offset = 0;
    for (int j = 0; j < l; ++j) {
        offset += static_cast<std::size_t>(layout.layer(j).out) * (layout.layer(j).in + 1);
    }
    return offset;
}

// forwardBackward of the adversarial objective loss(X) + loss(X'), X' = X + eps *
// sign(dloss(X)/dX), both with the current parameters: the clean pass keeps its gradient in
// ws.gradSum and dX in ws.inputGrad, the adversarial pass adds the clean gradient to its own
// before each sink(l, dW, db). Returns loss(X), or loss(X') when that one is not finite.
template <typename Sink>
float adversarialForwardBackward(const ParamLayout& layout, int k, Activation act,
                                 const float* params, const FastBatch& in, const int32_t* labels,
                                 const float* weights, FastWorkspace& ws, Likelihood likelihood,
                                 const float* targets, int normaliser, float eps, Sink&& sink) {
    if (ws.adversarial.batch != in.batch || ws.gradSum.size() != layout.perMember()) {
        throw std::logic_error("adversarial training needs FastWorkspace::resize(layout, " +
                               std::to_string(in.batch) + ", true)");
    }
    float* sum = ws.gradSum.data();
    const float clean = forwardBackward(
        layout, k, act, params, in, labels, weights, ws, likelihood, targets, normaliser,
        [&](int l, const float* dw, const float* db) {
            const LayerSlot& s = layout.layer(l);
            const std::size_t n = static_cast<std::size_t>(s.out) * s.in;
            float* dst = sum + packedLayerOffset(layout, l);
            std::copy(dw, dw + n, dst);
            std::copy(db, db + s.out, dst + n);
        },
        ws.inputGrad.data());
    if (!std::isfinite(clean)) {
        return clean;
    }
    adversarialBatch(layout, in, ws.inputGrad.data(), eps, ws.adversarial);
    const float adversarial =
        forwardBackward(layout, k, act, params, ws.adversarial, labels, weights, ws, likelihood,
                        targets, normaliser, [&](int l, float* dw, float* db) {
                            const LayerSlot& s = layout.layer(l);
                            const std::size_t n = static_cast<std::size_t>(s.out) * s.in;
                            const float* c = sum + packedLayerOffset(layout, l);
                            for (std::size_t i = 0; i < n; ++i) {
                                dw[i] = c[i] + dw[i];
                            }
                            for (int o = 0; o < s.out; ++o) {
                                db[o] = c[n + static_cast<std::size_t>(o)] + db[o];
                            }
                            sink(l, dw, db);
                        });
    return std::isfinite(adversarial) ? clean : adversarial;
}

}  // namespace

int fastLanes() {
    return kLanes;
}

FloatBuffer::~FloatBuffer() {
    std::free(m_data);
}

FloatBuffer::FloatBuffer(const FloatBuffer& other) {
    *this = other;
}

FloatBuffer& FloatBuffer::operator=(const FloatBuffer& other) {
    if (this != &other) {
        assign(other.m_size, 0.0f);
        if (m_size > 0) {
            std::memcpy(m_data, other.m_data, sizeof(float) * m_size);
        }
    }
    return *this;
}

FloatBuffer::FloatBuffer(FloatBuffer&& other) noexcept
    : m_data(std::exchange(other.m_data, nullptr)), m_size(std::exchange(other.m_size, 0)) {}

FloatBuffer& FloatBuffer::operator=(FloatBuffer&& other) noexcept {
    if (this != &other) {
        std::free(m_data);
        m_data = std::exchange(other.m_data, nullptr);
        m_size = std::exchange(other.m_size, 0);
    }
    return *this;
}

void FloatBuffer::assign(std::size_t n, float value) {
    if (n != m_size) {
        std::free(m_data);
        m_data = nullptr;
        m_size = 0;
        if (n > 0) {
            // aligned_alloc wants a multiple of the alignment; one spare vector at the end.
            const std::size_t bytes = (sizeof(float) * n + 64 + 63) / 64 * 64;
            m_data = static_cast<float*>(std::aligned_alloc(64, bytes));
            if (m_data == nullptr) {
                throw std::bad_alloc();
            }
            m_size = n;
        }
    }
    std::fill(m_data, m_data + m_size, value);
}

void FastBatch::resize(const ParamLayout& layout, int rows) {
    batch = rows;
    paddedBatch = padded(rows);
    paddedInputs = padded(layout.inputs());
    xb.assign(static_cast<std::size_t>(paddedBatch) * paddedInputs, 0.0f);
    xt.assign(static_cast<std::size_t>(paddedInputs) * paddedBatch, 0.0f);
}

namespace {

template <int Inputs>
void gatherRows(const float* data, const int32_t* rows, int batch, int inputs, bool transposed,
                FastBatch& out) {
    const int n = Inputs > 0 ? Inputs : inputs;
    const int bp = out.paddedBatch;
    const int ip = out.paddedInputs;
    float* xb = out.xb.data();
    float* xt = out.xt.data();
    for (int b = 0; b < batch; ++b) {
        const float* src = data + static_cast<std::ptrdiff_t>(rows[b]) * n;
        float* dst = xb + static_cast<std::ptrdiff_t>(b) * ip;
        for (int f = 0; f < n; ++f) {
            dst[f] = src[f];
        }
        if (transposed) {
            for (int f = 0; f < n; ++f) {
                xt[static_cast<std::ptrdiff_t>(f) * bp + b] = src[f];
            }
        }
    }
}

}  // namespace

void fastGather(const ParamLayout& layout, const float* data, const int32_t* rows, int batch,
                FastBatch& out) {
    const int inputs = layout.inputs();
    // The feature-major copy only feeds the small-layer kernels.
    const bool transposed = !useEigen(inputs, layout.layer(0).out, batch);
    switch (inputs) {  // 2-D data (the live view's datasets) gets a fixed-size copy
        case 1:
            gatherRows<1>(data, rows, batch, inputs, transposed, out);
            break;
        case 2:
            gatherRows<2>(data, rows, batch, inputs, transposed, out);
            break;
        case 3:
            gatherRows<3>(data, rows, batch, inputs, transposed, out);
            break;
        default:
            gatherRows<0>(data, rows, batch, inputs, transposed, out);
            break;
    }
}

void FastWorkspace::resize(const ParamLayout& layout, int rows, bool adversarialTraining) {
    batch = rows;
    paddedBatch = padded(rows);
    const int layers = layout.layerCount();
    int maxIn = 0;
    int maxOut = 0;
    for (int l = 0; l < layers; ++l) {
        maxIn = std::max(maxIn, padded(layout.layer(l).in));
        maxOut = std::max(maxOut, layout.layer(l).out);
    }
    const int maxWidth = padded(layout.maxWidth());
    pre.resize(static_cast<std::size_t>(layers));
    post.resize(static_cast<std::size_t>(layers));
    for (int l = 0; l < layers; ++l) {
        const std::size_t n = static_cast<std::size_t>(padded(layout.layer(l).out)) * paddedBatch;
        pre[static_cast<std::size_t>(l)].assign(n, 0.0f);
        post[static_cast<std::size_t>(l)].assign(l + 1 < layers ? n : 0, 0.0f);
    }
    batchMajor.assign(static_cast<std::size_t>(paddedBatch) * maxWidth, 0.0f);
    std::size_t transposedSize = 0;
    for (int l = 0; l < layers; ++l) {
        const LayerSlot& s = layout.layer(l);
        if (transposedWeightGradient(s.in, s.out)) {
            transposedSize =
                std::max(transposedSize, static_cast<std::size_t>(s.in) * padded(s.out));
        }
    }
    gradWT.assign(transposedSize, 0.0f);
    // Packing buffers for the layers on Eigen's GEMM: the largest of their products.
    cpu::GemmBuffers buffers;
    for (int l = 0; l < layers; ++l) {
        const LayerSlot& s = layout.layer(l);
        if (useEigen(s.in, s.out, rows)) {
            buffers.need(s.out, paddedBatch, s.in);  // forward
            buffers.need(s.out, s.in, rows);         // dW
            if (l > 0 || adversarialTraining) {
                buffers.need(s.in, paddedBatch, s.out);  // dA (layer 0: dX)
            }
        }
    }
    gemmA.assign(buffers.sizeA, 0.0f);
    gemmB.assign(buffers.sizeB, 0.0f);
    delta.assign(static_cast<std::size_t>(maxWidth) * paddedBatch, 0.0f);
    deltaPrev.assign(delta.size(), 0.0f);
    gradW.assign(static_cast<std::size_t>(maxOut) * maxIn, 0.0f);
    gradB.assign(static_cast<std::size_t>(maxOut) + kLanes, 0.0f);
    exampleWeights.assign(static_cast<std::size_t>(paddedBatch), 0.0f);
    exampleLabels.assign(static_cast<std::size_t>(paddedBatch), -1.0f);
    exampleTargets.assign(static_cast<std::size_t>(paddedBatch), 0.0f);
    input.resize(layout, rows);
    if (adversarialTraining) {
        inputGrad.assign(static_cast<std::size_t>(padded(layout.inputs())) * paddedBatch, 0.0f);
        gradSum.assign(layout.perMember(), 0.0f);
        adversarial.resize(layout, rows);
    } else {
        inputGrad.assign(0, 0.0f);
        gradSum.assign(0, 0.0f);
        adversarial = FastBatch{};
    }
}

void fastApplyUpdate(const OptimizerRule& r, bool firstUpdate, float* p, const float* g, float* m,
                     float* v, std::size_t n) {
    // sgdLanes / adamLanes (optim/update_rules.h) on packets, then applyUpdate on the tail. The
    // coefficients are a local copy (made per kind: only the ones it uses are loaded): stores
    // through p, m and v cannot alias them, so they stay in registers.
    std::size_t i = 0;
    const auto tail = [&] {
        for (; i < n; ++i) {
            applyUpdate(r, firstUpdate, p[i], g[i], m[i], v[i]);
        }
    };
    switch (r.kind) {
        case OptimizerKind::Sgd: {
            const RuleLanes<Packet> c(r);
            if (r.momentum != 0.0f) {
                for (; i + kLanes <= n; i += kLanes) {
                    Packet pp = ploadu<Packet>(p + i);
                    Packet buf = ploadu<Packet>(m + i);
                    sgdLanes(c, true, firstUpdate, pp, ploadu<Packet>(g + i), buf);
                    pstoreu(m + i, buf);
                    pstoreu(p + i, pp);
                }
            } else {
                for (; i + kLanes <= n; i += kLanes) {
                    Packet pp = ploadu<Packet>(p + i);
                    Packet unused;
                    sgdLanes(c, false, firstUpdate, pp, ploadu<Packet>(g + i), unused);
                    pstoreu(p + i, pp);
                }
            }
            tail();
            return;
        }
        case OptimizerKind::AdamW:
        case OptimizerKind::Adam: {
            const RuleLanes<Packet> c(r);
            const bool decoupled = r.kind == OptimizerKind::AdamW;
            for (; i + kLanes <= n; i += kLanes) {
                Packet pp = ploadu<Packet>(p + i);
                Packet mm = ploadu<Packet>(m + i);
                Packet vv = ploadu<Packet>(v + i);
                adamLanes(c, decoupled, pp, ploadu<Packet>(g + i), mm, vv);
                pstoreu(m + i, mm);
                pstoreu(v + i, vv);
                pstoreu(p + i, pp);
            }
            tail();
            return;
        }
    }
    unreachableKind("OptimizerKind");
}

float fastTrainMember(const ParamLayout& layout, int k, Activation act, float* params,
                      float* moment1, float* moment2, const OptimizerRule& rule, bool firstUpdate,
                      const FastBatch& batch, const int32_t* labels, const float* weights,
                      FastWorkspace& ws, Likelihood likelihood, const float* targets,
                      float adversarialEps) {
    const auto update = [&](int l, const float* dw, const float* db) {
        const LayerSlot& s = layout.layer(l);
        const std::size_t wOff = layout.weightOffset(l, k);
        const std::size_t bOff = layout.biasOffset(l, k);
        fastApplyUpdate(rule, firstUpdate, params + wOff, dw, moment1 + wOff, moment2 + wOff,
                        static_cast<std::size_t>(s.out) * s.in);
        fastApplyUpdate(rule, firstUpdate, params + bOff, db, moment1 + bOff, moment2 + bOff,
                        static_cast<std::size_t>(s.out));
    };
    if (adversarialEps > 0.0f) {
        return adversarialForwardBackward(layout, k, act, params, batch, labels, weights, ws,
                                          likelihood, targets, batch.batch, adversarialEps, update);
    }
    return forwardBackward(layout, k, act, params, batch, labels, weights, ws, likelihood, targets,
                           batch.batch, update);
}

void fastPrefetchMember(const ParamLayout& layout, int k, const float* params, const float* moment1,
                        const float* moment2) {
    const auto run = [&](std::size_t offset, std::size_t count) {
        for (const float* base : {params, moment1, moment2}) {
            const auto first =
                reinterpret_cast<std::uintptr_t>(base + offset) & ~std::uintptr_t{63};
            const auto last = reinterpret_cast<std::uintptr_t>(base + offset + count);
            for (std::uintptr_t a = first; a < last; a += 64) {
                __builtin_prefetch(reinterpret_cast<const void*>(a), 1, 3);
            }
        }
    };
    for (int l = 0; l < layout.layerCount(); ++l) {
        const LayerSlot& s = layout.layer(l);
        run(layout.weightOffset(l, k), static_cast<std::size_t>(s.out) * s.in);
        run(layout.biasOffset(l, k), static_cast<std::size_t>(s.out));
    }
}

float fastMemberGradient(const ParamLayout& layout, int k, Activation act, const float* params,
                         const FastBatch& batch, const int32_t* labels, const float* weights,
                         FastWorkspace& ws, float* grad, Likelihood likelihood,
                         const float* targets, int normaliser, float adversarialEps) {
    const auto store = [&](int l, const float* dw, const float* db) {
        const std::size_t offset = packedLayerOffset(layout, l);
        const LayerSlot& s = layout.layer(l);
        const std::size_t n = static_cast<std::size_t>(s.out) * s.in;
        std::copy(dw, dw + n, grad + offset);
        std::copy(db, db + s.out, grad + offset + n);
    };
    const int divisor = normaliser > 0 ? normaliser : batch.batch;
    if (adversarialEps > 0.0f) {
        return adversarialForwardBackward(layout, k, act, params, batch, labels, weights, ws,
                                          likelihood, targets, divisor, adversarialEps, store);
    }
    return forwardBackward(layout, k, act, params, batch, labels, weights, ws, likelihood, targets,
                           divisor, store);
}

void fastPredictLogProbs(const ParamLayout& layout, int k, Activation act, const float* params,
                         const float* x, int rows, FastWorkspace& ws, float* out,
                         Likelihood likelihood) {
    const int inputs = layout.inputs();
    const int classes = layout.classes();
    const int bp = ws.paddedBatch;
    FastBatch& in = ws.input;
    // Inputs in both layouts; stale columns past `rows` are finite and never read back.
    for (int i = 0; i < rows; ++i) {
        const float* src = x + static_cast<std::ptrdiff_t>(i) * inputs;
        float* dst = in.xb.data() + static_cast<std::ptrdiff_t>(i) * in.paddedInputs;
        for (int f = 0; f < inputs; ++f) {
            dst[f] = src[f];
            in.xt[static_cast<std::size_t>(f) * bp + i] = src[f];
        }
    }
    const float* z = forward(layout, k, act, params, in, ws.batch, bp, ws);
    if (likelihood != Likelihood::Categorical) {
        // A regression head's predictive, row by row (headPredictiveInPlace, math/loss.h).
        for (int i = 0; i < rows; ++i) {
            float* o = out + static_cast<std::ptrdiff_t>(i) * classes;
            for (int c = 0; c < classes; ++c) {
                o[c] = z[static_cast<std::ptrdiff_t>(c) * bp + i];
            }
            headPredictiveInPlace(likelihood, o, classes);
        }
        return;
    }
    // log softmax down each column, one row per lane (logSumExpLanes, math/loss.h).
    const int used = padded(rows);
    float* lp = ws.deltaPrev.data();  // classes x bp scratch
    for (int v = 0; v < used; v += kLanes) {
        const Packet lse = logSumExpLanes<Packet>(classes, [&](int c) {
            return pload<Packet>(z + static_cast<std::ptrdiff_t>(c) * bp + v);
        });
        for (int c = 0; c < classes; ++c) {
            const std::ptrdiff_t o = static_cast<std::ptrdiff_t>(c) * bp + v;
            pstore(lp + o, psub(pload<Packet>(z + o), lse));
        }
    }
    for (int i = 0; i < rows; ++i) {
        for (int c = 0; c < classes; ++c) {
            out[static_cast<std::ptrdiff_t>(i) * classes + c] =
                lp[static_cast<std::ptrdiff_t>(c) * bp + i];
        }
    }
}

}  // namespace ensemble
