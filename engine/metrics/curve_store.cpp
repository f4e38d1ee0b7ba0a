#include "metrics/curve_store.h"

#include <algorithm>
#include <array>
#include <cmath>

namespace ensemble {

void CurveStore::Bucket::add(const CurvePoint& p) {
    if (count == 0) {
        first = low = high = last = p;
    } else {
        // Ties keep the earlier point: a flat stretch draws from its start.
        if (p.value < low.value) {
            low = p;
        }
        if (p.value > high.value) {
            high = p;
        }
        last = p;
    }
    ++count;
}

void CurveStore::Bucket::merge(const Bucket& later) {
    if (later.count == 0) {
        return;
    }
    if (count == 0) {
        *this = later;
        return;
    }
    if (later.low.value < low.value) {
        low = later.low;
    }
    if (later.high.value > high.value) {
        high = later.high;
    }
    last = later.last;
    count += later.count;
}

CurveStore::CurveStore(int capacity, int latest)
    : m_capacity(std::max(2, capacity)), m_latestCapacity(std::max(0, latest)) {}

void CurveStore::append(int64_t step, double value) {
    if (!std::isfinite(value) || step < 0 || (m_count > 0 && step < lastStep())) {
        return;
    }
    const CurvePoint p{step, static_cast<float>(value)};
    ++m_count;
    m_latest.push_back(p);
    if (static_cast<int>(m_latest.size()) > m_latestCapacity) {
        toBuckets(m_latest.front());
        m_latest.pop_front();
    }
}

void CurveStore::toBuckets(const CurvePoint& p) {
    while (p.step / m_width >= m_capacity) {
        halve();
    }
    const auto index = static_cast<std::size_t>(p.step / m_width);
    if (index >= m_buckets.size()) {
        m_buckets.resize(index + 1);
    }
    m_buckets[index].add(p);
}

void CurveStore::halve() {
    // Buckets 2i and 2i + 1 become bucket i of twice the width.
    const std::size_t n = (m_buckets.size() + 1) / 2;
    for (std::size_t i = 0; i < n; ++i) {
        Bucket merged = m_buckets[2 * i];
        if (2 * i + 1 < m_buckets.size()) {
            merged.merge(m_buckets[2 * i + 1]);
        }
        m_buckets[i] = merged;
    }
    m_buckets.resize(n);
    m_width *= 2;
}

std::size_t CurveStore::bucketCount() const {
    return static_cast<std::size_t>(
        std::count_if(m_buckets.begin(), m_buckets.end(), [](const Bucket& b) { return b.count; }));
}

int64_t CurveStore::firstStep() const {
    for (const Bucket& b : m_buckets) {
        if (b.count > 0) {
            return b.first.step;
        }
    }
    return m_latest.empty() ? 0 : m_latest.front().step;
}

int64_t CurveStore::lastStep() const {
    return m_latest.empty() ? 0 : m_latest.back().step;
}

std::vector<CurvePoint> CurveStore::points(int maxPoints) const {
    return points(0, lastStep(), maxPoints);
}

std::vector<CurvePoint> CurveStore::points(int64_t from, int64_t to, int maxPoints) const {
    std::vector<CurvePoint> out;
    if (m_count == 0 || to < from) {
        return out;
    }
    // The latest points take what they need; the buckets share the rest, four points each.
    std::vector<CurvePoint> latest;
    for (const CurvePoint& p : m_latest) {
        if (p.step >= from && p.step <= to) {
            latest.push_back(p);
        }
    }
    const int budget = std::max(8, maxPoints);
    const std::size_t keep = static_cast<std::size_t>(budget / 2);
    if (latest.size() > keep) {
        // A narrow zoom into the newest points: evenly spaced ones, the last one kept.
        std::vector<CurvePoint> thinned;
        const std::size_t stride = (latest.size() - 1 + keep - 2) / (keep - 1);
        for (std::size_t i = 0; i + 1 < latest.size() && thinned.size() + 1 < keep; i += stride) {
            thinned.push_back(latest[i]);
        }
        thinned.push_back(latest.back());
        latest = std::move(thinned);
    }
    const int drawnBuckets = std::max(1, (budget - static_cast<int>(latest.size())) / 4);
    // The stored buckets overlapping [from, to].
    const int64_t firstIndex = from / m_width;
    const int64_t lastIndex =
        std::min<int64_t>(to / m_width, static_cast<int64_t>(m_buckets.size()) - 1);
    const int64_t stored = lastIndex - firstIndex + 1;
    if (stored > 0) {
        const int64_t group = (stored + drawnBuckets - 1) / drawnBuckets;  // merged per drawn one
        for (int64_t g = firstIndex; g <= lastIndex; g += group) {
            Bucket merged;
            for (int64_t i = g; i < std::min(g + group, lastIndex + 1); ++i) {
                merged.merge(m_buckets[static_cast<std::size_t>(i)]);
            }
            if (merged.count == 0) {
                continue;
            }
            std::array<CurvePoint, 4> four{merged.first, merged.low, merged.high, merged.last};
            std::stable_sort(
                four.begin(), four.end(),
                [](const CurvePoint& a, const CurvePoint& b) { return a.step < b.step; });
            for (const CurvePoint& p : four) {
                if (out.empty() || !(out.back() == p)) {
                    out.push_back(p);
                }
            }
        }
    }
    out.insert(out.end(), latest.begin(), latest.end());
    return out;
}

}  // namespace ensemble
