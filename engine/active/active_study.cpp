// An active-learning study (active_study.h): the rounds of one learner, and the mean curve and
// labels to reach an accuracy over several seeds.
#include "active/active_study.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace ensemble {

MeanStd meanStd(const std::vector<double>& values) {
    MeanStd out;
    if (values.empty()) {
        out.mean = out.std = std::numeric_limits<double>::quiet_NaN();
        return out;
    }
    double sum = 0.0;
    for (double v : values) {
        sum += v;
    }
    out.mean = sum / static_cast<double>(values.size());
    if (values.size() > 1) {
        double squares = 0.0;
        for (double v : values) {
            squares += (v - out.mean) * (v - out.mean);
        }
        out.std = std::sqrt(squares / static_cast<double>(values.size() - 1));
    }
    return out;
}

std::vector<ActiveCurvePoint> activeMeanCurve(
    const std::vector<const std::vector<ActiveRound>*>& seeds) {
    std::size_t rounds = std::numeric_limits<std::size_t>::max();
    for (const std::vector<ActiveRound>* s : seeds) {
        rounds = std::min(rounds, s->size());
    }
    std::vector<ActiveCurvePoint> curve;
    for (std::size_t r = 0; r < rounds && !seeds.empty(); ++r) {
        std::vector<double> accuracy;
        std::vector<double> nll;
        std::vector<double> ece;
        for (const std::vector<ActiveRound>* s : seeds) {
            const ActiveRound& round = (*s)[r];
            accuracy.push_back(round.accuracy);
            nll.push_back(round.nll);
            ece.push_back(round.ece);
        }
        curve.push_back(
            {(*seeds.front())[r].labels, meanStd(accuracy), meanStd(nll), meanStd(ece)});
    }
    return curve;
}

int64_t labelsToReachMean(const std::vector<ActiveCurvePoint>& curve, double accuracy) {
    std::vector<ActiveRound> rounds;
    rounds.reserve(curve.size());
    for (const ActiveCurvePoint& p : curve) {
        ActiveRound r;
        r.labels = p.labels;
        r.accuracy = p.accuracy.mean;
        rounds.push_back(std::move(r));
    }
    return labelsToReach(rounds, accuracy);
}

int64_t activeStudyRounds(const ActiveConfig& active, int64_t trainRows, int64_t requested,
                          bool* cut) {
    const int64_t poolRows = std::max<int64_t>(0, trainRows - active.initial);
    const int64_t possible = (poolRows + active.perRound - 1) / active.perRound;
    if (cut != nullptr) {
        *cut = requested > possible;
    }
    return std::min(requested, possible);
}

ExperimentConfig activeSeedConfig(const ExperimentConfig& config, int64_t s) {
    ExperimentConfig c = config;
    c.ensemble.seed = config.ensemble.seed + static_cast<uint64_t>(s);
    c.json["ensemble"]["seed"] = c.ensemble.seed;
    return c;
}

bool activeStudyRound(ActiveLearner& learner, int64_t r,
                      const std::function<void(int64_t, int64_t)>& onStep,
                      const std::atomic<bool>* cancel) {
    if (r > 0) {
        const PoolScores scored = learner.scorePool();
        learner.acquire(scored.picks, scored.pickScores);
    }
    return learner.trainRound(onStep, cancel);
}

bool runActiveStudy(ActiveLearner& learner, int64_t rounds,
                    const std::function<void(int64_t, int64_t, int64_t)>& onStep,
                    const std::atomic<bool>* cancel) {
    for (int64_t r = 0; r <= rounds; ++r) {
        const auto step = [&](int64_t done, int64_t total) {
            if (onStep) {
                onStep(r, done, total);
            }
        };
        if (!activeStudyRound(learner, r, step, cancel)) {
            return false;
        }
    }
    return true;
}

}  // namespace ensemble
