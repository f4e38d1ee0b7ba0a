#pragma once

// A learning curve of any length in bounded memory: min/max-per-bucket decimation (M4).
//
// The newest `latest` points are kept exactly. Older points go into buckets of `width` steps
// (aligned at step 0), each keeping its first, lowest, highest and last point, so every
// extreme of the curve survives however long the run. When the buckets would exceed
// `capacity`, neighbours merge in pairs and the width doubles: a run of 10^6 or 10^9 steps
// holds at most `capacity` buckets plus `latest` points. A view asks for the curve over a
// range in at most as many points as its pixels can show (points()): the stored buckets are
// merged further for a wide range, and a zoomed range is drawn from the stored (finer)
// buckets themselves.

#include <cstddef>
#include <cstdint>
#include <deque>
#include <vector>

namespace ensemble {

struct CurvePoint {
    int64_t step = 0;
    float value = 0.0f;
    friend bool operator==(const CurvePoint&, const CurvePoint&) = default;
};

class CurveStore {
  public:
    static constexpr int kDefaultCapacity = 256;
    static constexpr int kDefaultLatest = 32;

    explicit CurveStore(int capacity = kDefaultCapacity, int latest = kDefaultLatest);

    // Steps must not decrease (a smaller one is ignored); non-finite values are not stored.
    void append(int64_t step, double value);

    // The curve over steps [from, to] in at most `maxPoints` points (at least 8 are allowed):
    // per drawn bucket the first, lowest, highest and last point, in step order, then the
    // latest points as they were appended. A bucket that overlaps the range is drawn whole,
    // so the line reaches the range's edges.
    std::vector<CurvePoint> points(int64_t from, int64_t to, int maxPoints) const;
    // The whole curve.
    std::vector<CurvePoint> points(int maxPoints) const;

    bool empty() const { return m_count == 0; }
    int64_t appended() const { return m_count; }  // points ever appended (finite ones)
    // What the store holds: buckets in use and exact latest points (both bounded).
    std::size_t bucketCount() const;
    std::size_t latestCount() const { return m_latest.size(); }
    int64_t bucketWidth() const { return m_width; }
    int64_t firstStep() const;
    int64_t lastStep() const;

  private:
    struct Bucket {
        CurvePoint first, low, high, last;
        int64_t count = 0;  // 0: no point fell in it
        void add(const CurvePoint& p);
        void merge(const Bucket& later);
    };

    void toBuckets(const CurvePoint& p);
    void halve();

    int m_capacity;
    int m_latestCapacity;
    int64_t m_width = 1;
    int64_t m_count = 0;
    std::vector<Bucket> m_buckets;  // m_buckets[i] covers [i * width, (i + 1) * width)
    std::deque<CurvePoint> m_latest;
};

}  // namespace ensemble
