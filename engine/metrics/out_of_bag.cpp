// Out-of-bag figures: each member on the rows it never drew, and the ensemble of those
// members per row.
#include "metrics/out_of_bag.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "metrics/metrics_detail.h"

namespace ensemble {

using detail::argmaxFirst;
using detail::checkLabels;
using detail::checkPredictions;
using detail::kNaN;
using detail::logSumExpD;
using detail::memberRow;

OobMetrics outOfBagMetrics(const MemberPredictions& train, const std::vector<int32_t>& labels,
                           const std::vector<int32_t>& counts,
                           const std::vector<uint8_t>& include) {
    checkPredictions(train, "outOfBagMetrics");
    checkLabels(train, labels, "outOfBagMetrics");
    OobMetrics oob;
    const int kAll = train.members;
    const int64_t n = train.rows;
    const int classes = train.classes;
    oob.members.resize(static_cast<std::size_t>(kAll));
    for (OobMember& m : oob.members) {
        m.accuracy = m.nll = kNaN;
    }
    oob.ensembleAccuracy = oob.ensembleNll = kNaN;
    if (counts.empty()) {
        oob.skippedRows = n;
        return oob;
    }
    if (counts.size() != static_cast<std::size_t>(kAll) * idx(n)) {
        throw std::invalid_argument("outOfBagMetrics: counts has " + std::to_string(counts.size()) +
                                    " entries, expected members x rows = " +
                                    std::to_string(static_cast<int64_t>(kAll) * n));
    }
    auto count = [&](int k, int64_t i) {
        return counts[static_cast<std::size_t>(k) * idx(n) + idx(i)];
    };

#pragma omp parallel for schedule(static)
    for (int k = 0; k < kAll; ++k) {
        OobMember& m = oob.members[static_cast<std::size_t>(k)];
        int64_t rows = 0;
        int64_t correct = 0;
        double nll = 0.0;
        for (int64_t i = 0; i < n; ++i) {
            if (count(k, i) != 0) {
                continue;
            }
            const float* row = memberRow(train, k, i);
            const int y = labels[idx(i)];
            ++rows;
            nll -= row[y];
            correct += argmaxFirst(row, classes) == y;
        }
        m.rows = rows;
        if (rows > 0) {
            m.accuracy = static_cast<double>(correct) / static_cast<double>(rows);
            m.nll = nll / static_cast<double>(rows);
        }
    }
    for (const OobMember& m : oob.members) {
        oob.available = oob.available || m.rows > 0;
    }

    const std::vector<int> members = includedMembers(train, include);
    std::vector<int> used(idx(n), 0);
    std::vector<uint8_t> correct(idx(n), 0);
    std::vector<double> nll(idx(n), 0.0);
#pragma omp parallel
    {
        std::vector<double> prob(idx(classes));
        std::vector<double> labelLogs(members.size());
#pragma omp for schedule(static)
        for (int64_t i = 0; i < n; ++i) {
            std::fill(prob.begin(), prob.end(), 0.0);
            const int y = labels[idx(i)];
            int u = 0;
            for (int k : members) {
                if (count(k, i) != 0) {
                    continue;
                }
                const float* row = memberRow(train, k, i);
                for (int c = 0; c < classes; ++c) {
                    prob[idx(c)] += std::exp(static_cast<double>(row[c]));
                }
                labelLogs[static_cast<std::size_t>(u++)] = row[y];
            }
            used[idx(i)] = u;
            if (u > 0) {
                correct[idx(i)] = argmaxFirst(prob.data(), classes) == y ? 1 : 0;
                nll[idx(i)] = -(logSumExpD(labelLogs.data(), u) - std::log(static_cast<double>(u)));
            }
        }
    }
    int64_t rows = 0;
    int64_t hits = 0;
    double nllSum = 0.0;
    for (int64_t i = 0; i < n; ++i) {
        if (used[idx(i)] == 0) {
            continue;
        }
        ++rows;
        hits += correct[idx(i)];
        nllSum += nll[idx(i)];
    }
    oob.ensembleRows = rows;
    oob.skippedRows = n - rows;
    if (rows > 0) {
        oob.ensembleAccuracy = static_cast<double>(hits) / static_cast<double>(rows);
        oob.ensembleNll = nllSum / static_cast<double>(rows);
    }
    return oob;
}

}  // namespace ensemble
