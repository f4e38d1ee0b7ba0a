#include "controller/opened_ensemble.h"

#include <QFile>

#include <algorithm>
#include <limits>

#include "io/model_io.h"

namespace ensemble::ui {

ExperimentConfig exportStartConfig(const LoadedEnsemble& e) {
    const std::vector<int> off = e.config.switchedOffAt(e.step);
    if (off == e.config.ensemble.switchedOff) {
        return e.config;
    }
    nlohmann::json json = e.config.json;
    json["ensemble"]["switched_off"] = off;
    return parseConfig(json);
}

std::shared_ptr<const OpenedEnsemble> readOpenedEnsemble(const QString& path) {
    const SafetensorsFile file = readSafetensors(QFile::encodeName(path).toStdString());
    auto opened = std::make_shared<OpenedEnsemble>();
    opened->path = path;
    if (isCheckpoint(file)) {
        opened->isCheckpoint = true;
        opened->checkpoint = readCheckpoint(file);
        opened->config = resumeConfig(opened->checkpoint, {});
    } else {
        opened->checkpoint.ensemble = importEnsemble(file);
        opened->checkpoint.trainRows = opened->checkpoint.ensemble.trainRows;
        opened->config = exportStartConfig(opened->checkpoint.ensemble);
    }
    return opened;
}

// Where an opened file's members were trained, from the metadata ensemble-cli writes under
// mpirun (mesh, member_ranks, member_devices); nothing for a file trained in one process.
void setMemberOrigins(const LoadedEnsemble& e, RunInfo& run) {
    const nlohmann::json& meta = e.metadata;
    const auto ranks = meta.find("member_ranks");
    if (ranks == meta.end() || !ranks->is_array() ||
        ranks->size() != static_cast<std::size_t>(e.layout.members())) {
        return;
    }
    const auto devices = meta.find("member_devices");
    const bool haveDevices =
        devices != meta.end() && devices->is_array() && devices->size() == ranks->size();
    for (std::size_t k = 0; k < ranks->size(); ++k) {
        std::string origin = "rank " + (*ranks)[k].dump();
        if (haveDevices) {
            const nlohmann::json& d = (*devices)[k];
            origin += " · " + (d.is_string() ? d.get<std::string>() : d.dump());
        }
        run.memberOrigins.push_back(origin);
    }
    const auto mesh = meta.find("mesh");
    if (mesh != meta.end() && mesh->is_object() && mesh->contains("ensemble") &&
        mesh->contains("data")) {
        run.mesh = (*mesh)["ensemble"].dump() + " × " + (*mesh)["data"].dump() + " ranks";
    }
}

// A checkpoint's curves as the Curves view's points (those before `step`: the app evaluates
// the step it opens at itself, on the rows it evaluates live).
void appendStoredCurves(const std::vector<Evaluation>& curves, int64_t step,
                        std::vector<std::shared_ptr<const HistoryPoint>>& history) {
    for (const Evaluation& e : curves) {
        if (e.step >= step) {
            continue;
        }
        auto point = std::make_shared<HistoryPoint>();
        point->step = e.step;
        point->epoch = e.epoch;
        point->ensembleTrain = e.ensembleTrain;
        point->ensembleTest = e.ensembleTest;
        for (const MemberEvaluation& m : e.members) {
            point->memberTrain.push_back(m.train);
            point->memberTest.push_back(m.test);
        }
        history.push_back(std::move(point));
    }
}

std::shared_ptr<RunInfo> runWithoutData(const OpenedEnsemble& opened, uint64_t runId,
                                        const std::string& why) {
    const LoadedEnsemble& e = opened.checkpoint.ensemble;
    const ExperimentConfig& config = opened.config;
    const int k = e.layout.members();
    auto run = std::make_shared<RunInfo>();
    run->runId = runId;
    run->config = config;
    run->datasetName = e.datasetName;
    run->backendName = "none";
    run->members = k;
    run->regression = isRegression(config.model.likelihood);
    run->classes = run->regression ? 0 : e.layout.classes();
    run->features = e.layout.inputs();
    const Shape input = e.layout.architecture().input();
    run->isImage = input.height > 1 || input.width > 1;
    run->imageWidth = run->isImage ? input.width : 0;
    run->imageHeight = run->isImage ? input.height : 0;
    run->trainRows = opened.checkpoint.trainRows;
    run->totalSteps = std::max(e.step, config.totalSteps(std::max<int64_t>(1, run->trainRows)));
    run->likelihood = config.model.likelihood;
    run->targetMean = e.normalization.targetMean;
    run->targetStd = e.normalization.targetStd;
    run->lr = config.optimizer.lr;
    run->momentum = config.optimizer.momentum;
    run->weightDecay = config.optimizer.weightDecay;
    run->missingData = why;
    setMemberOrigins(e, *run);
    return run;
}

std::shared_ptr<Snapshot> snapshotWithoutData(
    const OpenedEnsemble& opened, std::shared_ptr<const RunInfo> run,
    std::vector<std::shared_ptr<const HistoryPoint>>& history) {
    const LoadedEnsemble& e = opened.checkpoint.ensemble;
    const ExperimentConfig& config = opened.config;
    const int k = run->members;
    auto s = std::make_shared<Snapshot>();
    s->run = run;
    s->step = e.step;
    s->finished = true;
    s->totalSteps = run->totalSteps;
    if (config.json.contains("training") && config.json["training"].contains("schedule")) {
        s->schedule = config.json["training"]["schedule"];
    }
    s->diverged = e.diverged;
    // The switches as the file has them at its step (eval leaves the same members out).
    s->switchedOn = switchedOnMembers(e);
    s->included = includedMembers(e);
    s->includedCount =
        static_cast<int>(std::count(s->included.begin(), s->included.end(), uint8_t{1}));
    s->lastLosses.assign(static_cast<std::size_t>(k), std::numeric_limits<float>::quiet_NaN());
    // A checkpoint's curves, every one of them: nothing can be evaluated here.
    appendStoredCurves(opened.checkpoint.curves, std::numeric_limits<int64_t>::max(), history);
    s->history = history;
    // The figures: the last stored evaluation's test accuracy and loss where the file has
    // curves; unknown ("–") otherwise.
    const double nan = std::numeric_limits<double>::quiet_NaN();
    const ClassificationMetrics unknown{0, nan, nan, nan, nan, nan};
    s->memberMetrics.assign(static_cast<std::size_t>(k), unknown);
    s->meanMember = unknown;
    s->ensembleMetrics = unknown;
    if (!history.empty() && history.back()->step == e.step && !run->regression) {
        const HistoryPoint& last = *history.back();
        for (std::size_t m = 0; m < last.memberTest.size() && m < s->memberMetrics.size(); ++m) {
            s->memberMetrics[m].accuracy = last.memberTest[m].accuracy;
            s->memberMetrics[m].nll = last.memberTest[m].loss;
        }
        s->ensembleMetrics.accuracy = last.ensembleTest.accuracy;
        s->ensembleMetrics.nll = last.ensembleTest.loss;
    }
    const auto& layers = e.layout.architecture().layers();
    if (!layers.empty() && layers.front().kind == LayerKind::Conv) {
        s->firstConv = std::make_shared<const FirstConv>(firstConvOf(e.layout, e.params.data()));
    }
    return s;
}

}  // namespace ensemble::ui
