#pragma once

// Eigen's single-threaded GEMM without its per-call allocation, for the CPU backend's large
// products (fast_mlp.cpp, conv_net.cpp). A product expression sizes its packing buffers per
// call and, above EIGEN_STACK_ALLOCATION_LIMIT (128 KB), mallocs and frees them every time:
// for the conv layers that is an mmap and page faults per product. This is the blocking the
// expression would choose (gemm_blocking_space for a row-major destination, one thread), with
// the buffers owned by the caller, so the results are the same bits and depend only on the
// operands' sizes, never on a thread count.
//
// backend.gemm = openblas (backend/gemm_library.h) sends the same products to OpenBLAS's
// cblas_sgemm instead, one thread inside the caller's task; the buffers are then unused.
//
// Include only from translation units built with the engine's flags (-march=native).

#include <Eigen/Core>
#include <algorithm>
#include <cstddef>

#include "backend/gemm_library.h"

namespace ensemble::cpu {

class FixedBlocking : public Eigen::internal::level3_blocking<float, float> {
  public:
    // A row-major rows x cols destination, depth terms: Eigen blocks the transposed problem.
    FixedBlocking(Eigen::Index rows, Eigen::Index cols, Eigen::Index depth) {
        m_mc = cols;
        m_nc = rows;
        m_kc = depth;
        Eigen::internal::computeProductBlockingSizes<float, float, 1>(m_kc, m_mc, m_nc,
                                                                      Eigen::Index{1});
    }
    std::size_t sizeA() const { return static_cast<std::size_t>(m_mc * m_kc); }
    std::size_t sizeB() const { return static_cast<std::size_t>(m_kc * m_nc); }
    void use(float* a, float* b) {
        m_blockA = a;
        m_blockB = b;
    }
};

// Packing buffers large enough for every product a caller makes: grow with need() at setup.
struct GemmBuffers {
    std::size_t sizeA = 0;
    std::size_t sizeB = 0;
    void need(Eigen::Index rows, Eigen::Index cols, Eigen::Index depth) {
        const FixedBlocking b(rows, cols, depth);
        sizeA = std::max(sizeA, b.sizeA());
        sizeB = std::max(sizeB, b.sizeB());
    }
};

// res (rows x cols, row-major, stride resStride) += lhs * rhs; LhsOrder / RhsOrder say how the
// operands are stored (Eigen::RowMajor or Eigen::ColMajor) with their outer strides.
// Precondition: blockA / blockB hold FixedBlocking(rows, cols, depth)'s sizes.
template <int LhsOrder, int RhsOrder>
void gemmAccumulate(Eigen::Index rows, Eigen::Index cols, Eigen::Index depth, const float* lhs,
                    Eigen::Index lhsStride, const float* rhs, Eigen::Index rhsStride, float* res,
                    Eigen::Index resStride, float* blockA, float* blockB) {
    if (gemmLibrary() == GemmLibrary::OpenBlas) {
        openblasGemm(LhsOrder == Eigen::RowMajor, RhsOrder == Eigen::RowMajor, rows, cols, depth,
                     lhs, lhsStride, rhs, rhsStride, res, resStride, 1.0f);
        return;
    }
    FixedBlocking blocking(rows, cols, depth);
    blocking.use(blockA, blockB);
    Eigen::internal::general_matrix_matrix_product<Eigen::Index, float, LhsOrder, false, float,
                                                   RhsOrder, false, Eigen::RowMajor,
                                                   1>::run(rows, cols, depth, lhs, lhsStride, rhs,
                                                           rhsStride, res, 1, resStride, 1.0f,
                                                           blocking, nullptr);
}

// res = lhs * rhs (res zeroed first).
template <int LhsOrder, int RhsOrder>
void gemm(Eigen::Index rows, Eigen::Index cols, Eigen::Index depth, const float* lhs,
          Eigen::Index lhsStride, const float* rhs, Eigen::Index rhsStride, float* res,
          Eigen::Index resStride, float* blockA, float* blockB) {
    if (gemmLibrary() == GemmLibrary::OpenBlas) {
        openblasGemm(LhsOrder == Eigen::RowMajor, RhsOrder == Eigen::RowMajor, rows, cols, depth,
                     lhs, lhsStride, rhs, rhsStride, res, resStride, 0.0f);
        return;
    }
    for (Eigen::Index r = 0; r < rows; ++r) {
        std::fill(res + r * resStride, res + r * resStride + cols, 0.0f);
    }
    gemmAccumulate<LhsOrder, RhsOrder>(rows, cols, depth, lhs, lhsStride, rhs, rhsStride, res,
                                       resStride, blockA, blockB);
}

}  // namespace ensemble::cpu
