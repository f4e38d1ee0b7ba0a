#pragma once

// The SIMD building blocks of the fast path's passes: the register-blocked small product, block
// transposes, row sums, activations over rows, and Eigen's GEMM on the workspace's buffers.
//
// Included by fast_mlp.cpp alone, and file-local there (an unnamed namespace): the compiler then
// makes the same inlining choices as when these were written in fast_mlp.cpp (the micro-kernels
// and smallProduct, rowSums, transposeBlocks calls; the rest inlined into the passes). Built
// with the engine's flags only: the packet type and the register blocking follow the
// instruction set.

#include <Eigen/Core>
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "backend/cpu/fast_layout.h"
#include "backend/cpu/fast_mlp.h"
#include "backend/cpu/gemm.h"
#include "backend/cpu/simd_lanes.h"
#include "math/activations.h"
#include "math/dropout.h"

namespace ensemble::fast {

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

using simd::Packet;
// AVX-512 has 32 vector registers, AVX and SSE 16: the register blocking follows.
constexpr bool kManyRegisters = kLanes >= 16;

using RowMatrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using StridedMap = Eigen::Map<RowMatrix, Eigen::Unaligned, Eigen::OuterStride<>>;

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

// mask (units x bp) = the training dropout mask of `layer` (math/dropout.h) for the examples
// at batch positions d.firstRow + b, b < batch; 0 in the padding columns. One Philox draw
// gives four units of one row; the word lanes run 16 rows at a time.
void fillDropoutMask(const DropoutStep& d, int layer, int units, int batch, int bp, float* mask) {
    const float scale = dropoutScale(d.rate);
#if defined(ENSEMBLE_HAVE_WORD_LANES)
    constexpr int kWidth = simd::kWordLanes;
    for (int b0 = 0; b0 < batch; b0 += kWidth) {
        const int lanes = batch - b0 < kWidth ? batch - b0 : kWidth;
        const simd::Words rows = simd::iota(d.firstRow + static_cast<uint32_t>(b0));
        for (int u = 0; u < units; u += 4) {
            const Philox4x32Lanes<simd::Words> r =
                dropoutTrainingDrawLanes(d.seed, d.step, d.member, rows, layer, u);
            for (int j = 0; j < 4 && u + j < units; ++j) {
                float* row = mask + static_cast<std::ptrdiff_t>(u + j) * bp + b0;
                for (int l = 0; l < lanes; ++l) {
                    row[l] = dropoutMaskValue(r.v[j][l], d.rate, scale);
                }
            }
        }
    }
#else
    for (int u = 0; u < units; ++u) {
        for (int b = 0; b < batch; ++b) {
            mask[static_cast<std::ptrdiff_t>(u) * bp + b] =
                dropoutTrainingMask(d, d.firstRow + static_cast<uint32_t>(b), layer, u);
        }
    }
#endif
    for (int u = 0; u < units; ++u) {
        std::fill(mask + static_cast<std::ptrdiff_t>(u) * bp + batch,
                  mask + static_cast<std::ptrdiff_t>(u + 1) * bp, 0.0f);
    }
}

// a *= mask over n floats (n a multiple of kLanes).
void multiplyRows(float* a, const float* mask, std::size_t n) {
    for (std::size_t i = 0; i < n; i += kLanes) {
        pstore(a + i, pmul(pload<Packet>(a + i), pload<Packet>(mask + i)));
    }
}

// delta = (delta * mask) * f'(pre) over n floats (dropoutActivationGrad, math/dropout.h).
void dropoutActivateGradRows(Activation act, const float* pre, const float* mask, float* delta,
                             std::size_t n) {
    if (act == Activation::Relu) {
        const Packet zero = pset1<Packet>(0.0f);
        const Packet one = pset1<Packet>(1.0f);
        for (std::size_t i = 0; i < n; i += kLanes) {
            const Packet positive = pcmp_lt(zero, pload<Packet>(pre + i));
            const Packet masked = pmul(pload<Packet>(delta + i), pload<Packet>(mask + i));
            pstore(delta + i, pmul(masked, pand(positive, one)));
        }
        return;
    }
    for (std::size_t i = 0; i < n; ++i) {
        delta[i] = dropoutActivationGrad(act, delta[i], mask[i], pre[i]);
    }
}

}  // namespace

}  // namespace ensemble::fast
