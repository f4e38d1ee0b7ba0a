#include "train/trainer_report.h"

#include <stdexcept>
#include <string>
#include <utility>

namespace ensemble {

TrainerReport trainerReport(Trainer& trainer, const std::vector<uint8_t>& switchedOn,
                            EvaluationOptions options) {
    const int members = trainer.members();
    if (!switchedOn.empty() && switchedOn.size() != static_cast<std::size_t>(members)) {
        throw std::invalid_argument("trainerReport: switchedOn has " +
                                    std::to_string(switchedOn.size()) + " entries for " +
                                    std::to_string(members) + " members");
    }
    trainer.applyDueChanges();  // a switch recorded at the last step shows in the figures
    std::vector<uint8_t> include = trainer.included();
    std::vector<uint8_t> on = trainer.switchedOn();
    for (std::size_t k = 0; k < switchedOn.size(); ++k) {
        include[k] = include[k] != 0 && switchedOn[k] != 0 ? 1 : 0;
        on[k] = on[k] != 0 && switchedOn[k] != 0 ? 1 : 0;
    }
    const ExperimentConfig& config = trainer.config();
    const DataSplit& data = trainer.data();
    const bool useTest = data.test.rows > 0;
    options.split = useTest ? "test" : "train";
    options.seed = config.ensemble.seed;

    // One prediction per split serves the measurements, the out-of-bag estimates and the
    // loss and accuracy of every member.
    const MemberPredictions train = trainer.predictTrain();
    const MemberPredictions test = useTest ? trainer.predictTest() : MemberPredictions{};
    RunFacts run;
    run.dataset = data.name;
    run.step = trainer.step();
    run.epoch = trainer.epoch();
    run.lr = config.optimizer.lr;
    run.momentum = config.optimizer.momentum;
    run.weightDecay = config.optimizer.weightDecay;
    run.diverged = trainer.diverged();
    run.switchedOn = on;
    run.evaluation = trainer.evaluate(train, test, include);
    if (data.regression) {
        TrainerReport out;
        out.regression = evaluateRegression(
            useTest ? test : train, useTest ? data.test.target : data.train.target, include,
            data.normalization.targetMean, data.normalization.targetStd, options.split);
        out.json = reportJson(*out.regression, run);
        return out;
    }
    std::vector<int32_t> counts;
    if (config.ensemble.bootstrap != BootstrapMode::None) {
        counts = trainer.bootstrapCounts();
    }
    EvaluationInput input;
    input.predictions = useTest ? &test : &train;
    input.labels = useTest ? &data.test.y : &data.train.y;
    input.include = include;
    input.train = &train;
    input.trainLabels = &data.train.y;
    input.counts = &counts;

    TrainerReport out;
    out.report = evaluateEnsemble(input, options);
    out.json = reportJson(out.report, run);
    return out;
}

nlohmann::json configAsTrained(const Trainer& trainer) {
    return configWithLength(trainer, trainer.step());
}

nlohmann::json configWithLength(const Trainer& trainer, int64_t steps) {
    nlohmann::json json = trainer.config().json;
    if (trainer.config().totalSteps(trainer.data().train.rows) != steps) {
        json["training"]["steps"] = steps;
        json["training"]["epochs"] = 0;
    }
    return json;
}

GridEvaluation evaluateGrid(Trainer& trainer, const GridBounds& bounds, int size,
                            const std::vector<uint8_t>& include) {
    const std::vector<uint8_t> chosen = include.empty() ? trainer.included() : include;
    if (chosen.size() != static_cast<std::size_t>(trainer.members())) {
        throw std::invalid_argument("evaluateGrid: include has " + std::to_string(chosen.size()) +
                                    " entries for " + std::to_string(trainer.members()) +
                                    " members");
    }
    std::vector<int> members;
    for (std::size_t k = 0; k < chosen.size(); ++k) {
        if (chosen[k] != 0) {
            members.push_back(static_cast<int>(k));
        }
    }
    if (!members.empty() && trainer.backend().measuresUncertainty()) {
        GridEvaluation g;
        g.points = gridPoints(bounds, size);
        PointUncertainties u;
        if (trainer.predictRawUncertainty(g.points.data(), static_cast<int64_t>(size) * size,
                                          members, u)) {
            g.size = size;
            g.bounds = bounds;
            g.members = u.members;
            g.classes = u.classes;
            g.memberProbabilities = std::move(u.memberProbabilities);
            g.ensemble = pointStatisticsFrom(u.points, std::move(u.probabilities), u.classes,
                                             static_cast<int>(members.size()));
            return g;
        }
    }
    return evaluateGrid(
        [&trainer](const float* x, int64_t rows) { return trainer.predictRaw(x, rows); }, bounds,
        size, chosen);
}

GridEvaluation evaluateGrid(Trainer& trainer, int size, double margin) {
    return evaluateGrid(trainer, gridBounds(trainer.data(), margin), size, {});
}

}  // namespace ensemble
