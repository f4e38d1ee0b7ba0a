#include "backend/cpu/fast_mlp.h"

#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <cstring>
#include <type_traits>

#include "math/loss.h"

// Eigen's packet types are vector types with alignment attributes, which GCC drops (and warns
// about) when they are template arguments; Eigen silences the same warning internally.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wignored-attributes"
#endif

namespace ensemble {

namespace {

using Eigen::internal::padd;
using Eigen::internal::pand;
using Eigen::internal::pcmp_eq;
using Eigen::internal::pcmp_le;
using Eigen::internal::pcmp_lt;
using Eigen::internal::pdiv;
using Eigen::internal::pexp;
using Eigen::internal::pload;
using Eigen::internal::ploadu;
using Eigen::internal::plog;
using Eigen::internal::pmadd;
using Eigen::internal::pmax;
using Eigen::internal::pmul;
using Eigen::internal::predux;
using Eigen::internal::pset1;
using Eigen::internal::psqrt;
using Eigen::internal::pstore;
using Eigen::internal::pstoreu;
using Eigen::internal::psub;

using Packet = Eigen::internal::packet_traits<float>::type;
constexpr int kLanes = Eigen::internal::unpacket_traits<Packet>::size;
// AVX-512 has 32 vector registers, AVX and SSE 16: the register blocking follows.
constexpr bool kManyRegisters = kLanes >= 16;

// Layers with more multiply-adds than this per product go to Eigen's GEMM: its packing pays
// off there, while below it the per-call overhead (blocking, packing, zeroing) dominates.
constexpr std::size_t kEigenMacs = std::size_t{1} << 20;

using RowMatrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using StridedMap = Eigen::Map<RowMatrix, Eigen::Unaligned, Eigen::OuterStride<>>;
using ConstStridedMap = Eigen::Map<const RowMatrix, Eigen::Unaligned, Eigen::OuterStride<>>;

inline int padded(int n) {
    return (n + kLanes - 1) / kLanes * kLanes;
}

inline bool useEigen(int in, int out, int batch) {
    return static_cast<std::size_t>(in) * static_cast<std::size_t>(out) *
               static_cast<std::size_t>(batch) >
           kEigenMacs;
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
    constexpr int RO = kManyRegisters ? (CB >= 4 ? 6 : CB == 2 ? 8 : 16)
                                      : (CB >= 4 ? 2 : CB == 2 ? 4 : 8);
    int r = 0;
    const auto block = [&](auto roTag) {
        constexpr int n = decltype(roTag)::value;
        microKernel<n, CB>(count, alpha + r * ar, ar, ak, m, ms,
                           bias != nullptr ? bias + r : nullptr, c + r * cs, cs);
        r += n;
    };
    for (; r + RO <= rows;) {
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

// dst (cols x rowsP, stride rowsP) = src^T for src rowsP x cols (stride srcStride); rowsP and
// cols are multiples of kLanes.
void transposeBlocks(const float* src, int rowsP, int cols, std::ptrdiff_t srcStride, float* dst) {
    for (int r0 = 0; r0 < rowsP; r0 += kLanes) {
        for (int c0 = 0; c0 < cols; c0 += kLanes) {
            Eigen::internal::PacketBlock<Packet, kLanes> block;
            for (int i = 0; i < kLanes; ++i) {
                block.packet[i] = pload<Packet>(src + (r0 + i) * srcStride + c0);
            }
            Eigen::internal::ptranspose(block);
            for (int i = 0; i < kLanes; ++i) {
                pstore(dst + static_cast<std::ptrdiff_t>(c0 + i) * rowsP + r0, block.packet[i]);
            }
        }
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
            const float* aT = l == 0 ? in.xt.data() : ws.post[static_cast<std::size_t>(l - 1)].data();
            smallProduct(s.out, vectors, s.in, w, s.in, 1, aT, bp, bias, z, bp);
        } else {
            StridedMap zm(z, s.out, bp, Eigen::OuterStride<>(bp));
            const ConstStridedMap wm(w, s.out, s.in, Eigen::OuterStride<>(s.in));
            if (l == 0) {
                const ConstStridedMap xb(in.xb.data(), bp, s.in,
                                         Eigen::OuterStride<>(in.paddedInputs));
                zm.noalias() = wm * xb.transpose();
            } else {
                const ConstStridedMap aT(ws.post[static_cast<std::size_t>(l - 1)].data(), s.in, bp,
                                         Eigen::OuterStride<>(bp));
                zm.noalias() = wm * aT;
            }
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

// Mean over the batch of weight_b * CE_b for logits (classes x bp, feature-major), and dLogits
// into delta (classes x bp, zero in the padding): softmaxCrossEntropy of math/loss.h, lane-wise.
float crossEntropy(const float* logits, int classes, const int32_t* labels, const float* weights,
                   int batch, int bp, FastWorkspace& ws, float* delta) {
    float* ew = ws.exampleWeights.data();
    float* el = ws.exampleLabels.data();
    const float scale = 1.0f / static_cast<float>(batch);
    for (int b = 0; b < batch; ++b) {
        ew[b] = weights[b] * scale;
        el[b] = static_cast<float>(labels[b]);
    }
    const Packet one = pset1<Packet>(1.0f);
    Packet lossAcc = pset1<Packet>(0.0f);
    for (int v = 0; v < bp; v += kLanes) {
        Packet mx = pload<Packet>(logits + v);
        for (int c = 1; c < classes; ++c) {
            mx = pmax(mx, pload<Packet>(logits + static_cast<std::ptrdiff_t>(c) * bp + v));
        }
        Packet sum = pset1<Packet>(0.0f);
        for (int c = 0; c < classes; ++c) {
            const Packet z = pload<Packet>(logits + static_cast<std::ptrdiff_t>(c) * bp + v);
            sum = padd(sum, pexp(psub(z, mx)));
        }
        const Packet lse = padd(mx, plog(sum));
        const Packet w = pload<Packet>(ew + v);
        const Packet label = pload<Packet>(el + v);
        // Padding lanes (label -1) contribute exactly 0, whatever their logits.
        const Packet real = pcmp_le(pset1<Packet>(0.0f), label);
        Packet zLabel = pset1<Packet>(0.0f);
        for (int c = 0; c < classes; ++c) {
            const std::ptrdiff_t o = static_cast<std::ptrdiff_t>(c) * bp + v;
            const Packet z = pload<Packet>(logits + o);
            const Packet isLabel = pcmp_eq(label, pset1<Packet>(static_cast<float>(c)));
            zLabel = padd(zLabel, pand(isLabel, z));
            const Packet p = pexp(psub(z, lse));
            pstore(delta + o, pand(real, pmul(w, psub(p, pand(isLabel, one)))));
        }
        lossAcc = padd(lossAcc, pand(real, pmul(w, psub(lse, zLabel))));
    }
    return predux(lossAcc);
}

// The shared backward pass: for each layer from the last, dW and db into ws.gradW / ws.gradB,
// dA of the layer below (with the old W), then sink(l, dW, db), which may update layer l.
// Returns the loss (not finite: stops before the backward pass).
template <typename Sink>
float forwardBackward(const ParamLayout& layout, int k, Activation act, const float* params,
                      const FastBatch& in, const int32_t* labels, const float* weights,
                      FastWorkspace& ws, Sink&& sink) {
    const int batch = in.batch;
    const int bp = in.paddedBatch;
    const int layers = layout.layerCount();
    const int classes = layout.classes();
    const float* logits = forward(layout, k, act, params, in, batch, bp, ws);

    // Loss and dLogits: softmaxCrossEntropy (math/loss.h), the same formula vectorised across
    // the examples of the batch (Eigen's pexp/plog instead of expf/logf).
    float* delta = ws.delta.data();
    float* deltaPrev = ws.deltaPrev.data();
    const float loss = crossEntropy(logits, classes, labels, weights, batch, bp, ws, delta);
    if (!std::isfinite(loss)) {
        return loss;
    }

    const int vectors = bp / kLanes;
    const int fullVectors = batch / kLanes;
    for (int l = layers - 1; l >= 0; --l) {
        const LayerSlot& s = layout.layer(l);
        const float* w = params + layout.weightOffset(l, k);
        float* dw = ws.gradW.data();
        float* db = ws.gradB.data();
        // dW = dZ^T A over the real rows only (padding never reaches a gradient).
        if (!useEigen(s.in, s.out, batch)) {
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
            StridedMap dwm(dw, s.out, s.in, Eigen::OuterStride<>(s.in));
            const ConstStridedMap dzm(delta, s.out, batch, Eigen::OuterStride<>(bp));
            if (l == 0) {
                const ConstStridedMap xb(in.xb.data(), batch, s.in,
                                         Eigen::OuterStride<>(in.paddedInputs));
                dwm.noalias() = dzm * xb;
            } else {
                const ConstStridedMap aT(ws.post[static_cast<std::size_t>(l - 1)].data(), s.in,
                                         batch, Eigen::OuterStride<>(bp));
                dwm.noalias() = dzm * aT.transpose();
            }
        }
        for (int o = 0; o < s.out; ++o) {
            const float* row = delta + static_cast<std::ptrdiff_t>(o) * bp;
            Packet acc = pload<Packet>(row);
            for (int v = 1; v < fullVectors; ++v) {
                acc = padd(acc, pload<Packet>(row + v * kLanes));
            }
            float sum = fullVectors > 0 ? predux(acc) : 0.0f;
            for (int b = fullVectors * kLanes; b < batch; ++b) {
                sum += row[b];
            }
            db[o] = sum;
        }
        if (l > 0) {
            // dA^T = W^T dZ^T, then times f'(Z) of the layer below.
            if (!useEigen(s.in, s.out, batch)) {
                smallProduct(s.in, vectors, s.out, w, 1, s.in, delta, bp, nullptr, deltaPrev, bp);
            } else {
                StridedMap dam(deltaPrev, s.in, bp, Eigen::OuterStride<>(bp));
                const ConstStridedMap wm(w, s.out, s.in, Eigen::OuterStride<>(s.in));
                const ConstStridedMap dzm(delta, s.out, bp, Eigen::OuterStride<>(bp));
                dam.noalias() = wm.transpose() * dzm;
            }
            activateGradRows(act, ws.pre[static_cast<std::size_t>(l - 1)].data(),
                             ws.post[static_cast<std::size_t>(l - 1)].data(), deltaPrev,
                             static_cast<std::size_t>(s.in) * bp);
        }
        sink(l, dw, db);
        std::swap(delta, deltaPrev);
    }
    return loss;
}

}  // namespace

int fastLanes() {
    return kLanes;
}

void FastBatch::resize(const ParamLayout& layout, int rows) {
    batch = rows;
    paddedBatch = padded(rows);
    paddedInputs = padded(layout.inputs());
    xb.assign(static_cast<std::size_t>(paddedBatch) * paddedInputs, 0.0f);
    xt.assign(static_cast<std::size_t>(paddedInputs) * paddedBatch, 0.0f);
}

void fastGather(const ParamLayout& layout, const float* data, const int32_t* rows, int batch,
                FastBatch& out) {
    const int inputs = layout.inputs();
    const int bp = out.paddedBatch;
    const int ip = out.paddedInputs;
    const bool transposed = !useEigen(inputs, layout.layer(0).out, batch);
    for (int b = 0; b < batch; ++b) {
        const float* src = data + static_cast<std::ptrdiff_t>(rows[b]) * inputs;
        float* dst = out.xb.data() + static_cast<std::ptrdiff_t>(b) * ip;
        for (int f = 0; f < inputs; ++f) {
            dst[f] = src[f];
        }
        if (transposed) {
            for (int f = 0; f < inputs; ++f) {
                out.xt[static_cast<std::size_t>(f) * bp + b] = src[f];
            }
        }
    }
}

void FastWorkspace::resize(const ParamLayout& layout, int rows) {
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
    batchMajor.assign(static_cast<std::size_t>(paddedBatch) * maxIn, 0.0f);
    delta.assign(static_cast<std::size_t>(maxWidth) * paddedBatch, 0.0f);
    deltaPrev.assign(delta.size(), 0.0f);
    gradW.assign(static_cast<std::size_t>(maxOut) * maxIn, 0.0f);
    gradB.assign(static_cast<std::size_t>(maxOut) + kLanes, 0.0f);
    exampleWeights.assign(static_cast<std::size_t>(paddedBatch), 0.0f);
    exampleLabels.assign(static_cast<std::size_t>(paddedBatch), -1.0f);
    input.resize(layout, rows);
}

void fastApplyUpdate(const OptimizerRule& r, bool firstUpdate, float* p, const float* g,
                     float* m, float* v, std::size_t n) {
    std::size_t i = 0;
    switch (r.kind) {
        case OptimizerKind::Sgd: {
            const Packet wd = pset1<Packet>(r.weightDecay);
            const Packet lr = pset1<Packet>(r.lr);
            const Packet mom = pset1<Packet>(r.momentum);
            const bool useMomentum = r.momentum != 0.0f;
            for (; i + kLanes <= n; i += kLanes) {
                Packet pp = ploadu<Packet>(p + i);
                const Packet gg = padd(ploadu<Packet>(g + i), pmul(wd, pp));
                if (useMomentum) {
                    const Packet buf =
                        firstUpdate ? gg : padd(pmul(mom, ploadu<Packet>(m + i)), gg);
                    pstoreu(m + i, buf);
                    pp = psub(pp, pmul(lr, buf));
                } else {
                    pp = psub(pp, pmul(lr, gg));
                }
                pstoreu(p + i, pp);
            }
            break;
        }
        case OptimizerKind::AdamW:
        case OptimizerKind::Adam:
        default: {
            const bool decoupled = r.kind == OptimizerKind::AdamW;
            const Packet wd = pset1<Packet>(r.weightDecay);
            const Packet decay = pset1<Packet>(r.decayFactor);
            const Packet b1 = pset1<Packet>(r.beta1);
            const Packet b2 = pset1<Packet>(r.beta2);
            const Packet omb1 = pset1<Packet>(r.oneMinusBeta1);
            const Packet omb2 = pset1<Packet>(r.oneMinusBeta2);
            const Packet bc2 = pset1<Packet>(r.biasCorrection2Sqrt);
            const Packet eps = pset1<Packet>(r.eps);
            const Packet step = pset1<Packet>(r.stepSize);
            for (; i + kLanes <= n; i += kLanes) {
                Packet pp = ploadu<Packet>(p + i);
                Packet gg = ploadu<Packet>(g + i);
                if (decoupled) {
                    pp = pmul(pp, decay);
                } else {
                    gg = padd(gg, pmul(wd, pp));
                }
                const Packet mm = padd(pmul(b1, ploadu<Packet>(m + i)), pmul(omb1, gg));
                const Packet vv =
                    padd(pmul(b2, ploadu<Packet>(v + i)), pmul(pmul(omb2, gg), gg));
                const Packet denom = padd(pdiv(psqrt(vv), bc2), eps);
                pp = psub(pp, pdiv(pmul(step, mm), denom));
                pstoreu(m + i, mm);
                pstoreu(v + i, vv);
                pstoreu(p + i, pp);
            }
            break;
        }
    }
    for (; i < n; ++i) {
        applyUpdate(r, firstUpdate, p[i], g[i], m[i], v[i]);
    }
}

float fastTrainMember(const ParamLayout& layout, int k, Activation act, float* params,
                      float* moment1, float* moment2, const OptimizerRule& rule,
                      bool firstUpdate, const FastBatch& batch, const int32_t* labels,
                      const float* weights, FastWorkspace& ws) {
    return forwardBackward(
        layout, k, act, params, batch, labels, weights, ws,
        [&](int l, const float* dw, const float* db) {
            const LayerSlot& s = layout.layer(l);
            const std::size_t wOff = layout.weightOffset(l, k);
            const std::size_t bOff = layout.biasOffset(l, k);
            fastApplyUpdate(rule, firstUpdate, params + wOff, dw, moment1 + wOff, moment2 + wOff,
                            static_cast<std::size_t>(s.out) * s.in);
            fastApplyUpdate(rule, firstUpdate, params + bOff, db, moment1 + bOff, moment2 + bOff,
                            static_cast<std::size_t>(s.out));
        });
}

float fastMemberGradient(const ParamLayout& layout, int k, Activation act, const float* params,
                         const FastBatch& batch, const int32_t* labels, const float* weights,
                         FastWorkspace& ws, float* grad) {
    // Packed offsets of each layer in the member's gradient.
    std::vector<std::size_t> offsets(static_cast<std::size_t>(layout.layerCount()));
    std::size_t offset = 0;
    for (int l = 0; l < layout.layerCount(); ++l) {
        offsets[static_cast<std::size_t>(l)] = offset;
        offset += static_cast<std::size_t>(layout.layer(l).out) * (layout.layer(l).in + 1);
    }
    return forwardBackward(layout, k, act, params, batch, labels, weights, ws,
                           [&](int l, const float* dw, const float* db) {
                               const LayerSlot& s = layout.layer(l);
                               const std::size_t n = static_cast<std::size_t>(s.out) * s.in;
                               float* g = grad + offsets[static_cast<std::size_t>(l)];
                               std::copy(dw, dw + n, g);
                               std::copy(db, db + s.out, g + n);
                           });
}

void fastPredictLogProbs(const ParamLayout& layout, int k, Activation act, const float* params,
                         const float* x, int rows, FastWorkspace& ws, float* out) {
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
    // log softmax down each column, vectorised across the rows.
    const int used = padded(rows);
    float* lp = ws.deltaPrev.data();  // classes x bp scratch
    for (int v = 0; v < used; v += kLanes) {
        Packet mx = pload<Packet>(z + v);
        for (int c = 1; c < classes; ++c) {
            mx = pmax(mx, pload<Packet>(z + static_cast<std::ptrdiff_t>(c) * bp + v));
        }
        Packet sum = pset1<Packet>(0.0f);
        for (int c = 0; c < classes; ++c) {
            sum = padd(sum, pexp(psub(pload<Packet>(z + static_cast<std::ptrdiff_t>(c) * bp + v), mx)));
        }
        const Packet lse = padd(mx, plog(sum));
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
