#pragma once

// Predictions of every member and of the ensemble on a G x G grid over a 2-D dataset's
// bounding box: what the app draws as decision boundaries and uncertainty maps.
//
// Layout (image convention, so a row of the grid is a row of a QImage): point p = r*G + c is
// the centre of cell (r, c): x = xMin + (c + 0.5) (xMax - xMin) / G,
// y = yMax - (r + 0.5) (yMax - yMin) / G; row 0 is at the top (largest y).
//
//   c:   0   1  ...  G-1
//   r=0  +---+---+---+     y = yMax
//        | . | . | . |     . = the point evaluated for the cell
//   r=1  +---+---+---+
//        ...
//        +---+---+---+     y = yMin
//      xMin         xMax

#include <cstdint>
#include <functional>
#include <vector>

#include "data/dataset.h"
#include "metrics/point_statistics.h"

namespace ensemble {

constexpr int kDefaultGridSize = 128;
constexpr double kDefaultGridMargin = 0.1;

// A box in raw (dataset) units.
struct GridBounds {
    double xMin = 0.0;
    double xMax = 1.0;
    double yMin = 0.0;
    double yMax = 1.0;
};

// The bounding box of features 0 and 1 of the train and test rows, widened by `margin` times
// its extent on every side (an extent of 0 counts as 1). Throws std::invalid_argument when the
// data is not 2-D or has no rows.
GridBounds gridBounds(const DataSplit& data, double margin = kDefaultGridMargin);

// The G*G cell centres in raw units, interleaved (x, y), in point order (see above).
// Precondition: size >= 1.
std::vector<float> gridPoints(const GridBounds& bounds, int size);

// Member log-probabilities for `rows` raw points (rows x 2): Trainer::predictRaw, or
// predictLogProbs of a loaded ensemble. (A live trainer's grid: train/trainer_report.h.)
using MemberPredictor = std::function<MemberPredictions(const float* rawX, int64_t rows)>;

struct GridEvaluation {
    int size = 0;  // G
    GridBounds bounds;
    int members = 0;  // K, every member (diverged too)
    int classes = 0;
    std::vector<float> points;  // G*G x 2, raw units
    // P_k for every member: memberProbabilities[(k*G*G + p)*C + c].
    std::vector<float> memberProbabilities;
    // The ensemble of the included members per point: probabilities (p*C + c), predicted
    // class, total / aleatoric / epistemic uncertainty, disagreement, predictedStd. Empty
    // (rows 0) when no member is included (every member diverged).
    PointStatistics ensemble;
};

// The per-point work given the members' log-probabilities at gridPoints(bounds, size);
// parallel over points (OpenMP), the same result for any thread count.
// Precondition: predictions.rows == size*size (else std::invalid_argument).
GridEvaluation evaluateGrid(const MemberPredictions& predictions, const GridBounds& bounds,
                            int size, const std::vector<uint8_t>& include);
GridEvaluation evaluateGrid(const MemberPredictor& predict, const GridBounds& bounds, int size,
                            const std::vector<uint8_t>& include);

}  // namespace ensemble
