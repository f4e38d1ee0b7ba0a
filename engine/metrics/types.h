#pragma once

// The values metrics/ measures and reports: member predictions in, loss and accuracy out. They
// live here, not with the trainer, so that metrics/ depends on nothing above it; the trainer,
// the CLI and the app all speak these types.

#include <cstdint>
#include <vector>

namespace ensemble {

// Per-member log-probabilities of a dataset: logProbs[(k*rows + i)*C + c].
struct MemberPredictions {
    int members = 0;
    int64_t rows = 0;
    int classes = 0;
    std::vector<float> logProbs;
};

// Loss and accuracy of one split: what the trainer tracks while training (metrics.h,
// ensembleMetrics, memberMetrics and evaluateSplit). A regression head (metrics/regression.h,
// evaluateRegressionSplit) tracks its loss in raw target units (gaussian: the full NLL; mse:
// the mean squared error) and the RMSE; its accuracy is NaN.
struct SplitMetrics {
    double loss = 0.0;  // mean NLL (natural log)
    double accuracy = 0.0;
    double rmse = 0.0;  // regression only
};

// Loss and accuracy on one split of the ensemble and of every member (metrics.h,
// evaluateSplit).
struct SplitEvaluation {
    SplitMetrics ensemble;
    std::vector<SplitMetrics> members;
};

struct MemberEvaluation {
    SplitMetrics train;
    SplitMetrics test;
    bool diverged = false;
};

// One evaluation of every member and of the ensemble (mean of the included members'
// probabilities: average probabilities, never logits).
struct Evaluation {
    int64_t step = 0;
    double epoch = 0.0;
    SplitMetrics ensembleTrain;
    SplitMetrics ensembleTest;
    std::vector<MemberEvaluation> members;
};

}  // namespace ensemble
