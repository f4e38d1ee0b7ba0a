// The fast path's memory: aligned buffers, gathered batches, the per-thread workspace sized for
// the kernels' padding and GEMM blocking (fast_layout.h), and the prefetch of a member's
// parameters.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>
#include <utility>

#include "backend/cpu/fast_layout.h"
#include "backend/cpu/fast_mlp.h"
#include "backend/cpu/gemm.h"

namespace ensemble {

using fast::kLanes;
using fast::padded;
using fast::transposedWeightGradient;
using fast::useEigen;

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

void FastWorkspace::resize(const ParamLayout& layout, int rows, bool adversarialTraining,
                           bool dropout) {
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
    dropMask.resize(static_cast<std::size_t>(layers));
    for (int l = 0; l < layers; ++l) {
        const std::size_t n = static_cast<std::size_t>(padded(layout.layer(l).out)) * paddedBatch;
        dropMask[static_cast<std::size_t>(l)].assign(dropout && l + 1 < layers ? n : 0, 0.0f);
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

}  // namespace ensemble
