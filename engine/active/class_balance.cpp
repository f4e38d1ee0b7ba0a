// Class counts and class-balanced picks (class_balance.h).
#include "active/class_balance.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "active/active_learning.h"
#include "metrics/point_statistics.h"

namespace ensemble {

std::vector<int64_t> classCounts(const std::vector<int32_t>& labels,
                                 const std::vector<int64_t>& rows, int classes) {
    std::vector<int64_t> out(static_cast<std::size_t>(std::max(classes, 0)), 0);
    for (int64_t r : rows) {
        if (r < 0 || static_cast<std::size_t>(r) >= labels.size()) {
            throw std::invalid_argument("classCounts: row " + std::to_string(r) + " outside the " +
                                        std::to_string(labels.size()) + " labels");
        }
        const int32_t y = labels[static_cast<std::size_t>(r)];
        if (y >= 0 && y < classes) {
            ++out[static_cast<std::size_t>(y)];
        }
    }
    return out;
}

int classCapPicks(double cap, int perRound) {
    if (!(cap < 1.0)) {
        return 0;
    }
    // The small slack keeps 0.2 x 10 at 2 whatever the rounding of 0.2.
    return std::max(1, static_cast<int>(std::floor(cap * perRound + 1e-9)));
}

std::vector<int32_t> predictedClasses(const MemberPredictions& p,
                                      const std::vector<uint8_t>& include) {
    if (includedMembers(p, include).empty() || p.rows == 0) {
        return std::vector<int32_t>(static_cast<std::size_t>(p.rows), -1);
    }
    return pointStatistics(p, include).predicted;
}

std::vector<int64_t> topScoringCapped(const std::vector<double>& scores,
                                      const std::vector<int64_t>& candidates,
                                      const std::vector<int32_t>& predicted, int count,
                                      int perClass) {
    if (perClass <= 0) {
        return topScoring(scores, candidates, count);
    }
    if (predicted.size() != candidates.size()) {
        throw std::invalid_argument("topScoringCapped: " + std::to_string(predicted.size()) +
                                    " predicted classes for " + std::to_string(candidates.size()) +
                                    " candidates");
    }
    // Every candidate in score order; the position of each row in `candidates` for its class.
    const std::vector<int64_t> order =
        topScoring(scores, candidates, static_cast<int>(candidates.size()));
    std::vector<std::size_t> index(candidates.size());
    {
        std::vector<std::pair<int64_t, std::size_t>> byRow(candidates.size());
        for (std::size_t i = 0; i < candidates.size(); ++i) {
            byRow[i] = {candidates[i], i};
        }
        std::sort(byRow.begin(), byRow.end());
        for (std::size_t i = 0; i < order.size(); ++i) {
            index[i] = std::lower_bound(byRow.begin(), byRow.end(),
                                        std::pair<int64_t, std::size_t>{order[i], 0})
                           ->second;
        }
    }
    const std::size_t want =
        static_cast<std::size_t>(std::clamp<int64_t>(count, 0, static_cast<int64_t>(order.size())));
    std::vector<int64_t> taken;
    std::vector<uint8_t> used(order.size(), 0);
    std::vector<int> perClassTaken;
    for (std::size_t i = 0; i < order.size() && taken.size() < want; ++i) {
        const int32_t c = predicted[index[i]];
        if (c >= 0) {
            if (static_cast<std::size_t>(c) >= perClassTaken.size()) {
                perClassTaken.resize(static_cast<std::size_t>(c) + 1, 0);
            }
            if (perClassTaken[static_cast<std::size_t>(c)] >= perClass) {
                continue;
            }
            ++perClassTaken[static_cast<std::size_t>(c)];
        }
        taken.push_back(order[i]);
        used[i] = 1;
    }
    for (std::size_t i = 0; i < order.size() && taken.size() < want; ++i) {
        if (used[i] == 0) {
            taken.push_back(order[i]);  // the classes predicted cannot fill the round
        }
    }
    return taken;
}

}  // namespace ensemble
