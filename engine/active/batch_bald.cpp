// BatchBALD (batch_bald.h): the joint predictive of the batch so far over the model samples,
// exact or by sampled configurations, and the greedy choice of the batch.
#include "active/batch_bald.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>

#include "math/philox.h"
#include "metrics/point_statistics.h"

namespace ensemble {

namespace {

constexpr double kUnknown = std::numeric_limits<double>::quiet_NaN();
// The `sub` word of RngPurpose::Active's draws: active_learning.cpp's ActiveStream takes 0..2.
constexpr uint32_t kBatchBaldStream = 3;

std::size_t slot(int64_t i) {
    return static_cast<std::size_t>(i);
}

// Uniform in [0, 1) with 53 random bits (as active_learning.cpp's `random` scores).
double uniformDraw(const Philox4x32& d) {
    const uint64_t bits = (static_cast<uint64_t>(d.v[0]) << 21) ^ (d.v[1] >> 11);
    return static_cast<double>(bits) * (1.0 / 9007199254740992.0);
}

// The included members' probabilities, laid out [row][class][member] so that the sum over the
// members, the innermost loop of every joint, reads contiguous memory.
struct Probabilities {
    int members = 0;
    int classes = 0;
    int64_t rows = 0;
    std::vector<double> prob;
    std::vector<double> meanEntropy;  // per row: 1/K sum_k H[P_k(.|x)], i.e. E_w H(y | w)

    const double* row(int64_t i) const {
        return prob.data() + slot(i) * static_cast<std::size_t>(classes * members);
    }
};

Probabilities probabilitiesOf(const MemberPredictions& p, const std::vector<int>& members) {
    Probabilities out;
    out.members = static_cast<int>(members.size());
    out.classes = p.classes;
    out.rows = p.rows;
    const std::size_t K = members.size();
    const std::size_t C = static_cast<std::size_t>(p.classes);
    out.prob.resize(slot(p.rows) * C * K);
    out.meanEntropy.assign(slot(p.rows), 0.0);
    for (std::size_t i = 0; i < slot(p.rows); ++i) {
        double entropy = 0.0;
        for (std::size_t j = 0; j < K; ++j) {
            const float* lp =
                p.logProbs.data() + (static_cast<std::size_t>(members[j]) * slot(p.rows) + i) * C;
            // Normalised: a float log-softmax sums to 1 only to ~1e-7, and the conditional
            // entropy of the batch is the sum of the rows' only for distributions that sum to 1.
            double sum = 0.0;
            for (std::size_t c = 0; c < C; ++c) {
                sum += std::exp(static_cast<double>(lp[c]));
            }
            for (std::size_t c = 0; c < C; ++c) {
                const double v = sum > 0.0 ? std::exp(static_cast<double>(lp[c])) / sum : 0.0;
                out.prob[(i * C + c) * K + j] = v;
                if (v > 0.0) {
                    entropy -= v * std::log(v);
                }
            }
        }
        out.meanEntropy[i] = entropy / static_cast<double>(K);
    }
    return out;
}

// The joint predictive of a batch: a column per label configuration of the batch (exact) or per
// sampled configuration, each holding prod_i P_k(y_i|x_i) for every member k.
class Joint {
  public:
    Joint(const Probabilities& p, const BatchBaldOptions& o)
        : m_p(p),
          m_options(o),
          m_limit(o.exactLimit < 0 ? static_cast<int64_t>(std::max(o.samples, 1)) : o.exactLimit),
          m_table(static_cast<std::size_t>(p.members), 1.0),
          m_logScale(1, 0.0),
          m_weight(1, 1.0) {}

    bool sampled() const { return m_sampled; }
    // E_w H(y_batch | w): the rows' mean member entropies (the labels are independent given w).
    double conditional() const { return m_conditional; }

    // H(y_batch, y_row): exact, or the importance-weighted estimate over the sampled columns.
    double entropyWith(int64_t row) const {
        const std::size_t K = static_cast<std::size_t>(m_p.members);
        const std::size_t C = static_cast<std::size_t>(m_p.classes);
        const double invK = 1.0 / static_cast<double>(K);
        const double* pr = m_p.row(row);
        double h = 0.0;
        for (std::size_t col = 0; col < m_weight.size(); ++col) {
            const double* t = m_table.data() + col * K;
            double ratio = 1.0;  // 1 / p(y^m): the importance weight of a sampled column
            if (m_sampled) {
                double r = 0.0;
                for (std::size_t k = 0; k < K; ++k) {
                    r += t[k];
                }
                ratio = 1.0 / (r * invK);
            }
            double sum = 0.0;
            for (std::size_t c = 0; c < C; ++c) {
                const double* pc = pr + c * K;
                double q = 0.0;
                for (std::size_t k = 0; k < K; ++k) {
                    q += t[k] * pc[k];
                }
                q *= invK;
                if (q > 0.0) {
                    sum -= q * ratio * (std::log(q) + m_logScale[col]);
                }
            }
            h += m_weight[col] * sum;
        }
        return h;
    }

    void add(int64_t row) {
        m_batch.push_back(row);
        m_conditional += m_p.meanEntropy[slot(row)];
        const int64_t columns = static_cast<int64_t>(m_weight.size());
        if (!m_sampled && columns <= m_limit / std::max(m_p.classes, 1)) {
            extendExact(row);
        } else if (!m_sampled) {
            sampleBatch();
        } else {
            extendSampled(row, m_batch.size() - 1);
        }
    }

  private:
    void extendExact(int64_t row) {
        const std::size_t K = static_cast<std::size_t>(m_p.members);
        const std::size_t C = static_cast<std::size_t>(m_p.classes);
        const std::size_t columns = m_weight.size();
        const double* pr = m_p.row(row);
        std::vector<double> next(columns * C * K);
        for (std::size_t col = 0; col < columns; ++col) {
            for (std::size_t c = 0; c < C; ++c) {
                for (std::size_t k = 0; k < K; ++k) {
                    next[(col * C + c) * K + k] = m_table[col * K + k] * pr[c * K + k];
                }
            }
        }
        m_table = std::move(next);
        m_logScale.assign(columns * C, 0.0);
        m_weight.assign(columns * C, 1.0);
    }

    // M columns, column m drawn from member m mod K for every row of the batch so far; the
    // stratum weights 1 / (K M_k) make the mean over the columns the mixture's expectation.
    void sampleBatch() {
        const std::size_t K = static_cast<std::size_t>(m_p.members);
        // At least one column per member, so every stratum of the mixture is drawn.
        const std::size_t M = std::max(static_cast<std::size_t>(std::max(m_options.samples, 1)), K);
        m_sampled = true;
        m_table.assign(M * K, 1.0);
        m_logScale.assign(M, 0.0);
        m_weight.assign(M, 0.0);
        for (std::size_t m = 0; m < M; ++m) {
            const std::size_t inStratum = M / K + (m % K < M % K ? 1 : 0);
            m_weight[m] = 1.0 / (static_cast<double>(K) * static_cast<double>(inStratum));
        }
        for (std::size_t t = 0; t < m_batch.size(); ++t) {
            extendSampled(m_batch[t], t);
        }
    }

    // Each column draws its label of `row`, the batch's `position`-th, from its member.
    void extendSampled(int64_t row, std::size_t position) {
        const std::size_t K = static_cast<std::size_t>(m_p.members);
        const std::size_t C = static_cast<std::size_t>(m_p.classes);
        const double* pr = m_p.row(row);
        for (std::size_t m = 0; m < m_weight.size(); ++m) {
            const std::size_t member = m % K;
            const double u = uniformDraw(philoxDraw(
                m_options.seed, RngPurpose::Active, static_cast<uint32_t>(m_options.round),
                (static_cast<uint64_t>(position) << 32) | static_cast<uint64_t>(m),
                kBatchBaldStream));
            double total = 0.0;
            for (std::size_t c = 0; c < C; ++c) {
                total += pr[c * K + member];
            }
            // Inverse CDF; the class drawn has mass under the member, so the column stays > 0.
            std::size_t y = 0;
            double below = 0.0;
            for (std::size_t c = 0; c < C; ++c) {
                const double v = pr[c * K + member];
                if (v > 0.0) {
                    y = c;
                    below += v;
                    if (u * total < below) {
                        break;
                    }
                }
            }
            double* t = m_table.data() + m * K;
            double largest = 0.0;
            for (std::size_t k = 0; k < K; ++k) {
                t[k] *= pr[y * K + k];
                largest = std::max(largest, t[k]);
            }
            // Rescaled so a long batch's products do not underflow; the scale goes in the log.
            if (largest > 0.0) {
                for (std::size_t k = 0; k < K; ++k) {
                    t[k] /= largest;
                }
                m_logScale[m] += std::log(largest);
            }
        }
    }

    const Probabilities& m_p;
    const BatchBaldOptions& m_options;
    int64_t m_limit;
    std::vector<int64_t> m_batch;
    bool m_sampled = false;
    double m_conditional = 0.0;
    std::vector<double> m_table;     // [column][member]
    std::vector<double> m_logScale;  // per column: log of the factor divided out
    std::vector<double> m_weight;    // per column: 1 (exact) or the stratum's weight
};

}  // namespace

BatchBaldResult batchBald(const MemberPredictions& p, const std::vector<uint8_t>& include,
                          int count, const BatchBaldOptions& options) {
    BatchBaldResult out;
    const int64_t n = p.rows;
    const int64_t picks = std::clamp<int64_t>(count, 0, n);
    const std::vector<int> members = includedMembers(p, include);
    if (members.empty()) {
        for (int64_t i = 0; i < picks; ++i) {
            out.picks.push_back(i);
            out.joint.push_back(kUnknown);
            out.gains.push_back(kUnknown);
            out.sampled.push_back(0);
        }
        return out;
    }
    const bool capped = options.perClass > 0 && options.predicted.size() == slot(n);
    std::vector<int64_t> perClass(static_cast<std::size_t>(std::max(p.classes, 1)), 0);
    const auto full = [&](int64_t i) {
        const int32_t c = options.predicted[slot(i)];
        return c >= 0 && c < p.classes && perClass[static_cast<std::size_t>(c)] >= options.perClass;
    };
    const Probabilities prob = probabilitiesOf(p, members);
    Joint joint(prob, options);
    std::vector<uint8_t> taken(slot(n), 0);
    std::vector<double> value(slot(n));
    double before = 0.0;
    for (int64_t t = 0; t < picks; ++t) {
        // H(batch, x) - E_w H(x | w) per candidate; the batch's own E_w H is common to all.
#pragma omp parallel for schedule(dynamic, 16)
        for (int64_t i = 0; i < n; ++i) {
            value[slot(i)] =
                taken[slot(i)] != 0 ? kUnknown : joint.entropyWith(i) - prob.meanEntropy[slot(i)];
        }
        // The largest value (ties to the lower row, NaN last) among the rows the cap allows;
        // all rows left when it allows none.
        int64_t best = -1;
        for (int pass = 0; pass < 2 && best < 0; ++pass) {
            for (int64_t i = 0; i < n; ++i) {
                if (taken[slot(i)] != 0 || (pass == 0 && capped && full(i))) {
                    continue;
                }
                if (best < 0 || (std::isnan(value[slot(best)]) && !std::isnan(value[slot(i)])) ||
                    value[slot(i)] > value[slot(best)]) {
                    best = i;
                }
            }
        }
        const double information = value[slot(best)] - joint.conditional();
        out.picks.push_back(best);
        out.joint.push_back(information);
        out.gains.push_back(information - before);
        out.sampled.push_back(joint.sampled() ? 1 : 0);
        before = information;
        taken[slot(best)] = 1;
        if (capped && options.predicted[slot(best)] >= 0 &&
            options.predicted[slot(best)] < p.classes) {
            ++perClass[static_cast<std::size_t>(options.predicted[slot(best)])];
        }
        if (t + 1 < picks) {
            joint.add(best);
        }
    }
    return out;
}

double jointMutualInformation(const MemberPredictions& p, const std::vector<uint8_t>& include,
                              const std::vector<int64_t>& rows, const BatchBaldOptions& options) {
    const std::vector<int> members = includedMembers(p, include);
    if (members.empty()) {
        return kUnknown;
    }
    if (rows.empty()) {
        return 0.0;
    }
    const Probabilities prob = probabilitiesOf(p, members);
    Joint joint(prob, options);
    for (std::size_t i = 0; i + 1 < rows.size(); ++i) {
        joint.add(rows[i]);
    }
    return joint.entropyWith(rows.back()) - joint.conditional() -
           prob.meanEntropy[slot(rows.back())];
}

}  // namespace ensemble
