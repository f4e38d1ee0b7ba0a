#pragma once

// The CUDA backend's executor for the operation sequences of step_program.h and
// conv_program.h: every call is one kernel launch or one cuBLAS call on the stream, so a
// sequence can be captured as a graph unchanged. Host C++ (included by cuda_step.cpp and
// cuda_predict.cpp), inline so the programs' templates call the launchers directly.

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <cstdint>

#include "backend/cuda/batch_kernels.cuh"
#include "backend/cuda/conv_kernels.cuh"
#include "backend/cuda/conv_program.h"
#include "backend/cuda/cublas_loader.h"
#include "backend/cuda/cuda_check.h"
#include "backend/cuda/layer_kernels.cuh"
#include "backend/cuda/loss_kernels.cuh"
#include "backend/cuda/optim_kernels.cuh"
#include "backend/cuda/step_program.h"

namespace ensemble::gpu {

class DeviceExecutor {
  public:
    DeviceExecutor(cublasHandle_t cublas, cudaStream_t stream)
        : m_cublas(cublas), m_stream(stream) {}

    void prepareRules(const OptimizerRule* base, OptimizerRule* rules, int members,
                      const DeviceStepState* state) {
        launchPrepareRules(base, rules, members, state, m_stream);
    }
    void planBatch(const BatchPlanParams& plan, int members, const DeviceStepState* state,
                   int32_t* rows, float* weights, uint32_t first, uint32_t n) {
        launchPlanBatch(plan, members, state, rows, weights, first, n, m_stream);
    }
    void gatherRows(const float* trainX, int features, const int32_t* rows, int64_t slotCount,
                    float* x) {
        launchGatherRows(trainX, features, rows, slotCount, x, m_stream);
    }
    // C = op(A) op(B) for every member; see GemmArgs for how row-major maps to cuBLAS.
    // Pointer mode is host, so alpha/beta are read at the call and a captured graph holds
    // their values.
    void gemm(const GemmArgs& g, const float* a, const float* b, float* c) {
        const float one = 1.0f;
        const float beta = g.beta;
        ENSEMBLE_CUBLAS_CHECK(cublas().sgemmStridedBatched(
            m_cublas, g.transA ? CUBLAS_OP_T : CUBLAS_OP_N, g.transB ? CUBLAS_OP_T : CUBLAS_OP_N,
            g.m, g.n, g.k, &one, a, g.lda, static_cast<long long>(g.strideA), b, g.ldb,
            static_cast<long long>(g.strideB), &beta, c, g.ldc, static_cast<long long>(g.strideC),
            g.batchCount));
    }
    void biasActivate(float* z, float* post, const float* bias, int members, int rows, int out,
                      Activation act) {
        launchBiasActivate(z, post, bias, members, rows, out, act, m_stream);
    }
    void softmaxCrossEntropy(const float* logits, const int32_t* trainY, const int32_t* rows,
                             const float* weights, int members, int batch, int classes,
                             float* dLogits, float* rowLoss, int normaliser) {
        launchSoftmaxCrossEntropy(logits, trainY, rows, weights, members, batch, classes, dLogits,
                                  rowLoss, normaliser, m_stream);
    }
    void regressionLoss(const float* outputs, const float* trainTargets, const int32_t* rows,
                        const float* weights, int members, int batch, int outputCount,
                        Likelihood likelihood, float* dOutputs, float* rowLoss, int normaliser) {
        launchRegressionLoss(outputs, trainTargets, rows, weights, members, batch, outputCount,
                             likelihood, dOutputs, rowLoss, normaliser, m_stream);
    }
    void headPredictive(float* z, int64_t rows, int outputCount, Likelihood likelihood) {
        launchHeadPredictive(z, rows, outputCount, likelihood, m_stream);
    }
    void memberLoss(const float* rowLoss, const uint8_t* active, int members, int batch,
                    float* loss) {
        launchMemberLoss(rowLoss, active, members, batch, loss, m_stream);
    }
    void biasGradient(const float* delta, float* gradBias, int members, int rows, int out,
                      bool accumulate = false) {
        launchBiasGradient(delta, gradBias, members, rows, out, accumulate, m_stream);
    }
    void adversarialInputs(const float* x, bool shared, int members, int batch, int features,
                           float eps, float* xAdv) {
        launchAdversarialInputs(x, shared, members, batch, features, eps, xAdv, m_stream);
    }
    void adversarialLoss(const float* lossAdv, int members, float* loss) {
        launchAdversarialLoss(lossAdv, members, loss, m_stream);
    }
    void activationBackward(float* delta, const float* pre, const float* post, int64_t count,
                            Activation act) {
        launchActivationBackward(delta, pre, post, count, act, m_stream);
    }
    void dropoutMask(const DropoutStep& key, const DeviceStepState* state, int members, int rows,
                     int units, int layer, float* mask) {
        launchDropoutMask(key, state, members, rows, units, layer, mask, m_stream);
    }
    void dropoutApply(float* post, const float* mask, int64_t count, int64_t plane, int units) {
        launchDropoutApply(post, mask, count, plane, units, m_stream);
    }
    void dropoutBackward(float* delta, const float* pre, const float* mask, int64_t count,
                         int64_t plane, int units, Activation act) {
        launchDropoutBackward(delta, pre, mask, count, plane, units, act, m_stream);
    }
    void dropoutLayerMask(const DropoutStep& key, const DeviceStepState* state, int members,
                          int rows, int channels, int plane, int layer, float rate, float* mask) {
        launchDropoutLayerMask(key, state, members, rows, channels, plane, layer, rate, mask,
                               m_stream);
    }
    void maskMultiply(const float* x, const float* mask, int64_t count, float* out) {
        launchMaskMultiply(x, mask, count, out, m_stream);
    }
    void applyUpdates(const StepBuffers& b, int64_t total) {
        launchApplyUpdates(b.params, b.grad, b.moment1, b.moment2, b.segments, b.segmentCount,
                           b.rules, b.active, b.loss, b.state, total, m_stream);
    }
    void advanceState(DeviceStepState* state) { launchAdvanceState(state, m_stream); }
    void logSoftmax(float* z, int64_t rows, int classes) {
        launchLogSoftmax(z, rows, classes, m_stream);
    }
    // CNN members (conv_program.h).
    void im2col(const SpatialGeometry& g, const float* in, int64_t inExamples, int64_t examples,
                float* cols) {
        launchIm2col(g, in, inExamples, examples, cols, m_stream);
    }
    void col2im(const SpatialGeometry& g, const float* dCols, int64_t examples, float* dIn) {
        launchCol2im(g, dCols, examples, dIn, m_stream);
    }
    void poolForward(const SpatialGeometry& g, const float* in, int64_t examples, float* out) {
        launchPoolForward(g, in, examples, out, m_stream);
    }
    void poolBackward(const SpatialGeometry& g, const float* in, const float* dOut,
                      int64_t examples, float* dIn) {
        launchPoolBackward(g, in, dOut, examples, dIn, m_stream);
    }
    void flatten(int channels, int64_t plane, int64_t examples, const float* in, float* out) {
        launchFlatten(channels, plane, examples, in, out, m_stream);
    }
    void unflatten(int channels, int64_t plane, int64_t examples, const float* in, float* out) {
        launchUnflatten(channels, plane, examples, in, out, m_stream);
    }
    void sumPartials(const float* partial, int members, int splits, int64_t n, float* out) {
        launchSumPartials(partial, members, splits, n, out, m_stream);
    }
    void fill(float* out, int64_t count, float value) { launchFill(out, count, value, m_stream); }
    void implicitConvForward(const SpatialGeometry& g, const float* in, int64_t inExamples,
                             int members, int64_t rows, const float* weights, float* pre) {
        launchImplicitConvForward(g, in, inExamples, members, rows, weights, pre, m_stream);
    }
    void implicitConvInputGrad(const SpatialGeometry& g, const float* dPre, const float* weights,
                               int64_t examplesPerMember, int64_t examples, float* dIn) {
        launchImplicitConvInputGrad(g, dPre, weights, examplesPerMember, examples, dIn, m_stream);
    }
    void implicitConvWeightGrad(const SpatialGeometry& g, const float* in, int64_t inExamples,
                                const float* dPre, int members, int64_t rows, int splits,
                                float* partial) {
        launchImplicitConvWeightGrad(g, in, inExamples, dPre, members, rows, splits, partial,
                                     m_stream);
    }

  private:
    cublasHandle_t m_cublas;
    cudaStream_t m_stream;
};

}  // namespace ensemble::gpu
