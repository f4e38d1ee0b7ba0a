#include "controller/comparison.h"

#include <QFile>
#include <QFileInfo>

#include <algorithm>
#include <exception>

#include "config/config.h"
#include "config/config_schema.h"
#include "controller/snapshot_builder.h"
#include "core/errors.h"
#include "data/dataset.h"
#include "io/model_io.h"

namespace ensemble::ui {

std::shared_ptr<const Comparison> measureComparison(const QString& path,
                                                    const nlohmann::json& runDataset) {
    const LoadedEnsemble e = importEnsemble(QFile::encodeName(path).toStdString());
    auto c = std::make_shared<Comparison>();
    c->path = path;
    c->name = QFileInfo(path).fileName();
    const std::string file = c->name.toStdString();

    // The same dataset section as the run's, so both are measured on the same test rows (the
    // CLI's `eval --weights A --weights B` asks the same).
    const nlohmann::json stored = e.config.json.value("dataset", nlohmann::json::object());
    const std::vector<std::string> differ =
        changedKeys(nlohmann::json{{"dataset", runDataset}}, nlohmann::json{{"dataset", stored}});
    if (!differ.empty()) {
        const KeySpec& spec = keySpec(differ.front());
        const auto value = [&](const nlohmann::json& section) {
            const nlohmann::json config{{"dataset", section}};  // outlives the pointer below
            const nlohmann::json* v = valueOrDefault(config, spec);
            return v != nullptr ? jsonForMessage(*v) : std::string("(none)");
        };
        throw DataError(file + " was trained on another dataset than this run (" + spec.key + " " +
                        value(stored) + " there, " + value(runDataset) +
                        " here): a comparison measures both on the same test rows. Open it "
                        "instead, or compare runs of one dataset.");
    }
    c->dataset = runDataset;

    nlohmann::json config = e.config.json;
    config["dataset"] = runDataset;
    const DataSplit data = loadDataSplit(parseConfig(config).dataset);
    if (data.train.features != e.layout.inputs()) {
        throw DataError(file + " takes " + std::to_string(e.layout.inputs()) +
                        " features, but this run's data has " +
                        std::to_string(data.train.features));
    }
    c->regression = isRegression(e.config.model.likelihood);
    if (c->regression != data.regression || (!c->regression && data.classes > e.layout.classes())) {
        throw DataError(file + (c->regression ? " is a regression model" : " classifies") +
                        ", but this run's data " +
                        (data.regression ? "is for regression" : "has more classes"));
    }
    const bool useTest = data.test.rows > 0;
    const Dataset& rows = useTest ? data.test : data.train;
    c->members = e.layout.members();
    c->step = e.step;
    c->rows = rows.rows;
    c->lr = e.config.optimizer.lr;
    // The members eval averages: switched on at the file's step and not diverged.
    c->included = includedMembers(e);
    c->includedCount =
        static_cast<int>(std::count(c->included.begin(), c->included.end(), uint8_t{1}));
    if (c->includedCount == 0) {
        throw DataError(file +
                        ": every member diverged or is switched off, so there is no ensemble "
                        "to compare");
    }

    MemberPredictions p;
    p.members = c->members;
    p.rows = rows.rows;
    p.classes = e.layout.classes();
    p.logProbs = predictLogProbs(e, rows.x.data(), rows.rows);
    if (c->regression) {
        c->regressionReport =
            evaluateRegression(p, rows.target, c->included, e.normalization.targetMean,
                               e.normalization.targetStd, useTest ? "test" : "train");
        return c;
    }
    // The figures the Calibration view shows for the run, measured the same way
    // (snapshot_builder.cpp measureTest).
    c->memberMetrics.resize(static_cast<std::size_t>(c->members));
    for (int k = 0; k < c->members; ++k) {
        c->memberMetrics[static_cast<std::size_t>(k)] = memberClassificationMetrics(p, rows.y, k);
    }
    c->meanMember = meanOfMembers(c->memberMetrics, c->included);
    const PointStatistics stats = pointStatistics(p, c->included, rows.y);
    c->ensembleMetrics = classificationMetrics(stats);
    c->reliability = topLabelCalibration(stats);
    return c;
}

ComparisonResult measureComparisonJob(const QString& path, const nlohmann::json& runDataset,
                                      const std::atomic<bool>& cancel) {
    ComparisonResult result;
    result.path = path;
    // Reading and predicting cannot stop half-way: the checks are before and after them, so a
    // Cancel while the file is measured leaves the comparison shown before in place.
    if (cancel.load(std::memory_order_acquire)) {
        result.cancelled = true;
        return result;
    }
    try {
        result.comparison = measureComparison(path, runDataset);
    } catch (const std::exception& e) {
        result.error = QString::fromStdString(e.what());
    }
    if (cancel.load(std::memory_order_acquire)) {
        result.comparison.reset();
        result.error.clear();
        result.cancelled = true;
    }
    return result;
}

}  // namespace ensemble::ui
