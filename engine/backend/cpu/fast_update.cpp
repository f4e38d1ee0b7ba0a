// The optimizer update of the fast path, fused into its backward pass (fastTrainMember calls it
// per layer while the gradient is in L1) and used by the CNN members' update (conv_net.cpp).

#include <algorithm>
#include <cstddef>

#include "backend/cpu/fast_mlp.h"
#include "backend/cpu/simd_lanes.h"
#include "core/unreachable.h"
#include "optim/update_rules.h"

namespace ensemble {

using Eigen::internal::ploadu;
using Eigen::internal::pstoreu;
using simd::kLanes;
using simd::Packet;

void fastApplyUpdate(const OptimizerRule& r, bool firstUpdate, float* p, const float* g, float* m,
                     float* v, std::size_t n, float l2Gradient) {
    if (l2Gradient != 0.0f) {
        // The penalty's term first (withL2), in chunks on the stack: the loops below then run
        // as they do without one.
        constexpr std::size_t kChunk = 256;
        float withPenalty[kChunk];
        for (std::size_t begin = 0; begin < n; begin += kChunk) {
            const std::size_t count = std::min(kChunk, n - begin);
            for (std::size_t i = 0; i < count; ++i) {
                withPenalty[i] = withL2(g[begin + i], l2Gradient, p[begin + i]);
            }
            fastApplyUpdate(r, firstUpdate, p + begin, withPenalty, m + begin, v + begin, count);
        }
        return;
    }
    // sgdLanes / adamLanes (optim/update_rules.h) on packets, then applyUpdate on the tail. The
    // coefficients are a local copy (made per kind: only the ones it uses are loaded): stores
    // through p, m and v cannot alias them, so they stay in registers.
    std::size_t i = 0;
    const auto tail = [&] {
        for (; i < n; ++i) {
            applyUpdate(r, firstUpdate, p[i], g[i], m[i], v[i]);
        }
    };
    switch (r.kind) {
        case OptimizerKind::Sgd: {
            const RuleLanes<Packet> c(r);
            if (r.momentum != 0.0f) {
                for (; i + kLanes <= n; i += kLanes) {
                    Packet pp = ploadu<Packet>(p + i);
                    Packet buf = ploadu<Packet>(m + i);
                    sgdLanes(c, true, firstUpdate, pp, ploadu<Packet>(g + i), buf);
                    pstoreu(m + i, buf);
                    pstoreu(p + i, pp);
                }
            } else {
                for (; i + kLanes <= n; i += kLanes) {
                    Packet pp = ploadu<Packet>(p + i);
                    Packet unused;
                    sgdLanes(c, false, firstUpdate, pp, ploadu<Packet>(g + i), unused);
                    pstoreu(p + i, pp);
                }
            }
            tail();
            return;
        }
        case OptimizerKind::AdamW:
        case OptimizerKind::Adam: {
            const RuleLanes<Packet> c(r);
            const bool decoupled = r.kind == OptimizerKind::AdamW;
            for (; i + kLanes <= n; i += kLanes) {
                Packet pp = ploadu<Packet>(p + i);
                Packet mm = ploadu<Packet>(m + i);
                Packet vv = ploadu<Packet>(v + i);
                adamLanes(c, decoupled, pp, ploadu<Packet>(g + i), mm, vv);
                pstoreu(m + i, mm);
                pstoreu(v + i, vv);
                pstoreu(p + i, pp);
            }
            tail();
            return;
        }
    }
    unreachableKind("OptimizerKind");
}

}  // namespace ensemble
