#include "metrics/grid.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <utility>

#include "metrics/metrics_detail.h"

namespace ensemble {

GridBounds gridBounds(const DataSplit& data, double margin) {
    if (data.train.features != 2) {
        throw std::invalid_argument("gridBounds: the data has " +
                                    std::to_string(data.train.features) +
                                    " features; a grid needs 2-D data");
    }
    double lo[2] = {std::numeric_limits<double>::infinity(),
                    std::numeric_limits<double>::infinity()};
    double hi[2] = {-std::numeric_limits<double>::infinity(),
                    -std::numeric_limits<double>::infinity()};
    for (const Dataset* d : {&data.train, &data.test}) {
        if (d->rows > 0 && d->features != 2) {
            throw std::invalid_argument("gridBounds: train and test differ in features");
        }
        for (int64_t i = 0; i < d->rows; ++i) {
            for (int f = 0; f < 2; ++f) {
                const double v = d->row(i)[f];
                lo[f] = std::min(lo[f], v);
                hi[f] = std::max(hi[f], v);
            }
        }
    }
    if (!(lo[0] <= hi[0])) {
        throw std::invalid_argument("gridBounds: the data has no rows");
    }
    GridBounds b;
    double* out[2][2] = {{&b.xMin, &b.xMax}, {&b.yMin, &b.yMax}};
    for (int f = 0; f < 2; ++f) {
        const double extent = hi[f] > lo[f] ? hi[f] - lo[f] : 1.0;
        *out[f][0] = lo[f] - margin * extent;
        *out[f][1] = hi[f] + margin * extent;
    }
    return b;
}

std::vector<float> gridPoints(const GridBounds& bounds, int size) {
    if (size < 1) {
        throw std::invalid_argument("gridPoints: size must be >= 1");
    }
    const std::size_t g = static_cast<std::size_t>(size);
    std::vector<float> points(g * g * 2);
    const double dx = (bounds.xMax - bounds.xMin) / size;
    const double dy = (bounds.yMax - bounds.yMin) / size;
    for (int r = 0; r < size; ++r) {
        const float y = static_cast<float>(bounds.yMax - (r + 0.5) * dy);
        for (int c = 0; c < size; ++c) {
            const std::size_t p = static_cast<std::size_t>(r) * g + static_cast<std::size_t>(c);
            points[2 * p] = static_cast<float>(bounds.xMin + (c + 0.5) * dx);
            points[2 * p + 1] = y;
        }
    }
    return points;
}

GridEvaluation evaluateGrid(const MemberPredictions& predictions, const GridBounds& bounds,
                            int size, const std::vector<uint8_t>& include) {
    const int64_t n = static_cast<int64_t>(size) * size;
    if (predictions.rows != n) {
        throw std::invalid_argument("evaluateGrid: " + std::to_string(predictions.rows) +
                                    " predicted rows for a " + std::to_string(size) + " x " +
                                    std::to_string(size) + " grid");
    }
    GridEvaluation g;
    g.size = size;
    g.bounds = bounds;
    g.members = predictions.members;
    g.classes = predictions.classes;
    g.points = gridPoints(bounds, size);
    g.memberProbabilities.resize(predictions.logProbs.size());
    const std::vector<int> members = includedMembers(predictions, include);
    if (!members.empty()) {
        // The included members' probabilities come out of the ensemble pass.
        g.ensemble =
            detail::pointStatisticsInto(predictions, members, {}, g.memberProbabilities.data());
    }
    std::vector<uint8_t> done(static_cast<std::size_t>(predictions.members), 0);
    for (int k : members) {
        done[static_cast<std::size_t>(k)] = 1;
    }
    const std::size_t block = static_cast<std::size_t>(n) * static_cast<std::size_t>(g.classes);
    for (int k = 0; k < predictions.members; ++k) {
        if (done[static_cast<std::size_t>(k)]) {
            continue;
        }
        const float* from = predictions.logProbs.data() + static_cast<std::size_t>(k) * block;
        float* to = g.memberProbabilities.data() + static_cast<std::size_t>(k) * block;
        const int64_t count = static_cast<int64_t>(block);
#pragma omp parallel for schedule(static)
        for (int64_t j = 0; j < count; ++j) {
            to[j] = std::exp(from[j]);
        }
    }
    return g;
}

GridEvaluation evaluateGrid(const MemberPredictor& predict, const GridBounds& bounds, int size,
                            const std::vector<uint8_t>& include) {
    const std::vector<float> points = gridPoints(bounds, size);
    const MemberPredictions predictions = predict(points.data(), static_cast<int64_t>(size) * size);
    return evaluateGrid(predictions, bounds, size, include);
}

}  // namespace ensemble
