// The Trainer's evaluation: the members' predictions in chunks, which members the ensemble
// includes, and the loss and accuracy (or RMSE) of both splits, gathered to rank 0 under MPI.
#include <algorithm>
#include <vector>

#include "metrics/metrics.h"
#include "metrics/regression.h"
#include "train/memory_estimate.h"
#include "train/trainer.h"

namespace ensemble {

std::vector<uint8_t> Trainer::switchedOn() const {
    std::vector<uint8_t> on(static_cast<std::size_t>(members()), 1);
    for (int g : m_config.ensemble.switchedOff) {
        const int k = g - m_share.begin;  // this trainer's member
        if (k >= 0 && k < static_cast<int>(on.size())) {
            on[static_cast<std::size_t>(k)] = 0;
        }
    }
    return on;
}

MemberPredictions Trainer::predictNormalized(const float* x, int64_t rows) {
    MemberPredictions p;
    p.members = members();
    p.rows = rows;
    p.classes = m_layout.classes();
    p.logProbs.resize(static_cast<std::size_t>(p.members) * rows * p.classes);
    Backend& backend = predictor();
    if (rows <= kEvalChunkRows) {
        backend.predictLogProbs(x, rows, p.logProbs.data());
        return p;
    }
    std::vector<float> chunk(static_cast<std::size_t>(p.members) * kEvalChunkRows * p.classes);
    for (int64_t begin = 0; begin < rows; begin += kEvalChunkRows) {
        const int64_t n = std::min(kEvalChunkRows, rows - begin);
        backend.predictLogProbs(x + begin * m_layout.inputs(), n, chunk.data());
        for (int k = 0; k < p.members; ++k) {
            std::copy_n(
                chunk.data() + static_cast<std::size_t>(k) * n * p.classes, n * p.classes,
                p.logProbs.data() + (static_cast<std::size_t>(k) * rows + begin) * p.classes);
        }
    }
    return p;
}

MemberPredictions Trainer::predictRaw(const float* rawX, int64_t rows) {
    std::vector<float> x(rawX, rawX + rows * m_layout.inputs());
    m_data.normalization.applyInPlace(x.data(), rows);
    return predictNormalized(x.data(), rows);
}

bool Trainer::predictRawUncertainty(const float* rawX, int64_t rows,
                                    const std::vector<int>& members, PointUncertainties& out) {
    Backend& backend = predictor();
    if (!backend.measuresUncertainty()) {
        return false;
    }
    std::vector<float> x(rawX, rawX + rows * m_layout.inputs());
    m_data.normalization.applyInPlace(x.data(), rows);
    return backend.predictUncertainty(x.data(), rows, members, out);
}

MemberPredictions Trainer::predictTest() {
    return predictNormalized(m_testX.data(), m_data.test.rows);
}

MemberPredictions Trainer::predictTrain() {
    return predictNormalized(m_trainX.data(), m_data.train.rows);
}

std::vector<uint8_t> Trainer::included() const {
    std::vector<uint8_t> in = switchedOn();
    const std::vector<uint8_t> out = diverged();
    for (std::size_t k = 0; k < in.size(); ++k) {
        in[k] = in[k] != 0 && out[k] == 0 ? 1 : 0;
    }
    return in;
}

Evaluation Trainer::evaluate() {
    if (m_collective->distributed()) {
        return evaluateDistributed();
    }
    const std::vector<uint8_t> include = included();
    Evaluation e = evaluationFrame();
    // One split's predictions at a time: the train split's are gone before the test split's
    // are made.
    setSplit(e, evaluatePredictions(predictTrain(), m_data.train, include), true);
    if (m_data.test.rows > 0) {
        setSplit(e, evaluatePredictions(predictTest(), m_data.test, include), false);
    }
    return e;
}

Evaluation Trainer::evaluateDistributed() {
    Collective& c = *m_collective;
    // Each group's leader sends its members (its replicas on the data axis hold the same).
    const bool leader = c.groupLeader();
    const std::vector<uint8_t> include = c.gather(leader ? included() : std::vector<uint8_t>{});
    const int k = globalMembers();
    // Member-major outputs, so the leaders' blocks in rank order are the members in order.
    const auto gathered = [&](bool train) {
        MemberPredictions local;
        if (leader) {
            local = train ? predictTrain() : predictTest();
        }
        MemberPredictions all;
        all.members = k;
        all.rows = train ? m_data.train.rows : m_data.test.rows;
        all.classes = m_layout.classes();
        all.logProbs = c.gather(local.logProbs);
        return all;
    };
    Evaluation e;
    e.step = m_step;
    e.epoch = epoch();
    const MemberPredictions train = gathered(true);
    if (c.root()) {
        e.members.resize(static_cast<std::size_t>(k));
        for (std::size_t m = 0; m < e.members.size(); ++m) {
            e.members[m].diverged = include[m] == 0;
        }
        setSplit(e, evaluatePredictions(train, m_data.train, include), true);
    }
    if (m_data.test.rows > 0) {
        const MemberPredictions test = gathered(false);
        if (c.root()) {
            setSplit(e, evaluatePredictions(test, m_data.test, include), false);
        }
    }
    return e;
}

Evaluation Trainer::evaluate(const MemberPredictions& train, const MemberPredictions& test,
                             const std::vector<uint8_t>& include) const {
    Evaluation e = evaluationFrame();
    setSplit(e, evaluatePredictions(train, m_data.train, include), true);
    if (m_data.test.rows > 0) {
        setSplit(e, evaluatePredictions(test, m_data.test, include), false);
    }
    return e;
}

SplitEvaluation Trainer::evaluatePredictions(const MemberPredictions& p, const Dataset& split,
                                             const std::vector<uint8_t>& include) const {
    const auto rows = static_cast<std::size_t>(p.rows);
    if (m_data.regression) {
        const std::vector<float> targets =
            rows == split.target.size()
                ? split.target
                : std::vector<float>(split.target.begin(),
                                     split.target.begin() + static_cast<std::ptrdiff_t>(rows));
        return evaluateRegressionSplit(p, targets, include, m_config.model.likelihood,
                                       m_data.normalization.targetMean,
                                       m_data.normalization.targetStd);
    }
    if (rows != split.y.size()) {
        const std::vector<int32_t> labels(split.y.begin(),
                                          split.y.begin() + static_cast<std::ptrdiff_t>(rows));
        return evaluateSplit(p, labels, include);
    }
    return evaluateSplit(p, split.y, include);
}

Evaluation Trainer::evaluationFrame() const {
    Evaluation e;
    e.step = m_step;
    e.epoch = epoch();
    e.members.resize(static_cast<std::size_t>(members()));
    const std::vector<uint8_t> out = diverged();
    for (std::size_t k = 0; k < e.members.size(); ++k) {
        e.members[k].diverged = out[k] != 0;
    }
    return e;
}

void Trainer::setSplit(Evaluation& e, const SplitEvaluation& split, bool train) {
    (train ? e.ensembleTrain : e.ensembleTest) = split.ensemble;
    for (std::size_t k = 0; k < e.members.size(); ++k) {
        (train ? e.members[k].train : e.members[k].test) = split.members[k];
    }
}

}  // namespace ensemble
