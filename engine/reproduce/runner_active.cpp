// The active-learning row's runs (runner_internal.h): one study of the acquisition function and
// seed of the planned run, by the same functions as `ensemble-cli active`
// (active/active_study.h), and the level figures read off the mean curve over a level's seeds
// with the CLI's reading (labelsToReachMean).
#include <chrono>
#include <cmath>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "active/active_study.h"
#include "config/config.h"
#include "data/dataset.h"
#include "reproduce/runner_internal.h"
#include "train/trainer.h"

namespace ensemble::reproduce {
namespace active_runs {  // apart from runner.cpp's helpers in the unity build
namespace {

const double kActiveNaN = std::numeric_limits<double>::quiet_NaN();

// A run's series back as the rounds it recorded (labels and the test figures).
std::vector<ActiveRound> roundsOf(const RunOutcome& o) {
    std::vector<ActiveRound> rounds;
    const auto series = [&](const char* name) -> const std::vector<double>* {
        const auto it = o.series.find(name);
        return it == o.series.end() ? nullptr : &it->second;
    };
    const std::vector<double>* labels = series("labels");
    const std::vector<double>* accuracy = series("accuracy");
    const std::vector<double>* nll = series("nll");
    const std::vector<double>* ece = series("ece");
    if (labels == nullptr || accuracy == nullptr || accuracy->size() != labels->size()) {
        return rounds;
    }
    for (std::size_t r = 0; r < labels->size(); ++r) {
        ActiveRound round;
        round.labels = static_cast<int64_t>((*labels)[r]);
        round.accuracy = (*accuracy)[r];
        round.nll = nll != nullptr && r < nll->size() ? (*nll)[r] : kActiveNaN;
        round.ece = ece != nullptr && r < ece->size() ? (*ece)[r] : kActiveNaN;
        rounds.push_back(std::move(round));
    }
    return rounds;
}

}  // namespace
}  // namespace active_runs

std::vector<ActiveCurvePoint> activeLevelCurve(const std::vector<const RunOutcome*>& runs) {
    std::vector<std::vector<ActiveRound>> rounds;
    for (const RunOutcome* o : runs) {
        rounds.push_back(active_runs::roundsOf(*o));
    }
    std::vector<const std::vector<ActiveRound>*> seeds;
    for (const std::vector<ActiveRound>& r : rounds) {
        seeds.push_back(&r);
    }
    return activeMeanCurve(seeds);
}

std::map<std::string, Aggregate> activeLevelFigures(const std::vector<const RunOutcome*>& runs) {
    std::map<std::string, Aggregate> figures;
    const std::vector<ActiveCurvePoint> curve = activeLevelCurve(runs);
    for (const auto& [accuracy, name] : kActiveReach) {
        Aggregate a;
        a.n = static_cast<int>(runs.size());
        a.level = true;
        a.se = active_runs::kActiveNaN;
        const int64_t labels = labelsToReachMean(curve, accuracy);
        if (labels >= 0) {
            a.mean = static_cast<double>(labels);
        } else if (!curve.empty()) {
            a.mean = std::numeric_limits<double>::infinity();
            a.beyond = static_cast<double>(curve.back().labels);
        } else {
            a.mean = active_runs::kActiveNaN;  // no round finished by every seed
        }
        figures[name] = a;
    }
    return figures;
}

bool runActive(const PlannedRun& plan, const ReproduceHooks& hooks, ReproduceProgress progress,
               std::chrono::steady_clock::time_point start, ReproductionResult& result,
               RunOutcome& out) {
    const ExperimentConfig config = parseConfig(plan.config);
    const auto data = std::make_shared<const DataSplit>(loadDataSplit(config.dataset));
    ActiveLearner learner(config, data, config.active.acquisition);
    const int64_t rounds = activeStudyRounds(config.active, data->train.rows, config.active.rounds);
    // The steps before each round and in all: under active.epochs a round's count grows with
    // its labelled set (initial + r * per_round rows in round r).
    std::vector<int64_t> stepsBefore(static_cast<std::size_t>(rounds) + 2, 0);
    for (int64_t r = 0; r <= rounds; ++r) {
        const int64_t labels = config.active.initial + r * config.active.perRound;
        stepsBefore[static_cast<std::size_t>(r) + 1] =
            stepsBefore[static_cast<std::size_t>(r)] +
            config.active.roundSteps(labels, config.training.batchSize);
    }
    auto lastReport = std::chrono::steady_clock::now();
    const auto onStep = [&](int64_t round, int64_t done, int64_t) {
        const auto now = std::chrono::steady_clock::now();
        if (!hooks.progress || now - lastReport < std::chrono::seconds(1)) {
            return;
        }
        lastReport = now;
        progress.step = stepsBefore[static_cast<std::size_t>(round)] + done;
        progress.steps = stepsBefore.back();
        progress.elapsed = std::chrono::duration<double>(now - start).count();
        hooks.progress(progress);
    };
    const bool finished = runActiveStudy(learner, rounds, onStep, hooks.cancel);
    if (result.backend.empty() && learner.trainer() != nullptr) {
        result.backend = learner.trainer()->backend().name();
    }
    if (!finished) {
        return false;
    }
    std::vector<std::string>& lines = out.csvLines["active_curves.csv"];
    for (std::size_t r = 0; r < learner.rounds().size(); ++r) {
        const ActiveRound& round = learner.rounds()[r];
        out.series["labels"].push_back(static_cast<double>(round.labels));
        out.series["accuracy"].push_back(round.accuracy);
        out.series["nll"].push_back(round.nll);
        out.series["ece"].push_back(round.ece);
        lines.push_back(plan.level + ',' + std::to_string(learner.seed()) + ',' +
                        std::to_string(r) + ',' + std::to_string(round.labels) + ',' +
                        csvNumberRepro(round.accuracy) + ',' + csvNumberRepro(round.nll) + ',' +
                        csvNumberRepro(round.ece));
    }
    // The seed's own reading beside the level's (the level figures read the mean curve).
    const std::vector<ActiveCurvePoint> own = activeLevelCurve({&out});
    if (!own.empty()) {
        out.figures["final_labels"] = static_cast<double>(own.back().labels);
        out.figures["final_accuracy_pct"] = 100.0 * own.back().accuracy.mean;
    }
    for (const auto& [accuracy, name] : kActiveReach) {
        const int64_t labels = labelsToReachMean(own, accuracy);
        if (labels >= 0) {  // not reached: no figure (the level figure says "> budget")
            out.figures["seed_" + std::string(name)] = static_cast<double>(labels);
        }
    }
    return true;
}

}  // namespace ensemble::reproduce
