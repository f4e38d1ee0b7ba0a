#pragma once

// Out-of-bag figures of a bootstrapped ensemble: each train row judged by the members that
// never saw it.

#include <cstdint>
#include <vector>

#include "metrics/types.h"

namespace ensemble {

// Out-of-bag estimates (Breiman 1996, "Out-of-bag estimation") from the K x N bootstrap
// multiplicities of the train rows (`counts[k*N + i]`): member k's accuracy and NLL on the
// rows with counts == 0, and the ensemble's, where each row is predicted by the mean
// probabilities of the included members for which it is out of bag; rows out of bag for no
// included member are skipped and counted.
struct OobMember {
    int64_t rows = 0;       // rows out of bag for this member
    double accuracy = 0.0;  // NaN when rows == 0
    double nll = 0.0;       // NaN when rows == 0
};

struct OobMetrics {
    bool available = false;  // some row is out of bag for some member
    std::vector<OobMember> members;
    int64_t ensembleRows = 0;       // rows with at least one included out-of-bag member
    int64_t skippedRows = 0;        // rows out of bag for no included member
    double ensembleAccuracy = 0.0;  // NaN when ensembleRows == 0
    double ensembleNll = 0.0;       // NaN when ensembleRows == 0
};

// Preconditions: `train` holds the train rows in the order of `counts`; counts is empty (no
// bootstrap: nothing is out of bag) or train.members * train.rows long.
OobMetrics outOfBagMetrics(const MemberPredictions& train, const std::vector<int32_t>& labels,
                           const std::vector<int32_t>& counts, const std::vector<uint8_t>& include);

}  // namespace ensemble
