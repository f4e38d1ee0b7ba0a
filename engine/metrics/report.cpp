#include "metrics/report.h"

#include <charconv>
#include <cmath>
#include <filesystem>
#include <stdexcept>
#include <system_error>

#include "core/errors.h"
#include "metrics/metrics_detail.h"
#include "sys/atomic_file.h"

namespace ensemble {

nlohmann::json jsonNumber(double v) {
    return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr);
}

std::string csvNumber(double v) {
    if (std::isnan(v)) {
        return {};
    }
    char buf[64];
    const auto r = std::to_chars(buf, buf + sizeof buf, v);
    return std::string(buf, r.ptr);
}

namespace {

TemperatureReport temperatureReport(const EvaluationInput& input, const EvaluationOptions& options,
                                    const RowHalves& halves) {
    TemperatureReport t;
    const MemberPredictions& p = *input.predictions;
    const std::vector<int32_t>& labels = *input.labels;
    if (input.validation != nullptr && input.validationLabels != nullptr) {
        if (input.validation->rows < 1 || p.rows < 1) {
            return t;
        }
        t.fit = fitTemperature(*input.validation, *input.validationLabels, input.include,
                               options.temperatureMode);
        t.validationRows = input.validation->rows;
        t.evaluationRows = p.rows;
        t.before = ensembleClassificationMetrics(p, labels, input.include, options.bins);
        const MemberPredictions scaled =
            temperatureScaled(p, input.include, t.fit.temperature, options.temperatureMode);
        t.after = ensembleClassificationMetrics(scaled, labels, {}, options.bins);
        t.available = true;
        return t;
    }
    const int64_t nVal = static_cast<int64_t>(halves.calibration.size());
    if (nVal < 1 || p.rows - nVal < 1) {
        return t;
    }
    const MemberPredictions val = selectPredictionRows(p, halves.calibration);
    const MemberPredictions rest = selectPredictionRows(p, halves.measure);
    const std::vector<int32_t> valLabels = selectValues(labels, halves.calibration);
    const std::vector<int32_t> restLabels = selectValues(labels, halves.measure);
    t.fit = fitTemperature(val, valLabels, input.include, options.temperatureMode);
    t.validationRows = nVal;
    t.evaluationRows = p.rows - nVal;
    t.before = ensembleClassificationMetrics(rest, restLabels, input.include, options.bins);
    const MemberPredictions scaled =
        temperatureScaled(rest, input.include, t.fit.temperature, options.temperatureMode);
    t.after = ensembleClassificationMetrics(scaled, restLabels, {}, options.bins);
    t.available = true;
    return t;
}

nlohmann::json metricsJson(const ClassificationMetrics& m) {
    return {{"accuracy", jsonNumber(m.accuracy)},
            {"nll", jsonNumber(m.nll)},
            {"brier", jsonNumber(m.brier)},
            {"ece", jsonNumber(m.ece)},
            {"mce", jsonNumber(m.mce)}};
}

nlohmann::json binsJson(const Calibration& c) {
    nlohmann::json bins = nlohmann::json::array();
    for (const ReliabilityBin& b : c.bins) {
        bins.push_back({{"lower", b.lower},
                        {"upper", b.upper},
                        {"count", b.count},
                        {"confidence", jsonNumber(b.confidence)},
                        {"accuracy", jsonNumber(b.accuracy)}});
    }
    return bins;
}

nlohmann::json oodScoreJson(const OodScore& s) {
    return {{"auroc", jsonNumber(s.auroc)},
            {"fpr_at_95_tpr", jsonNumber(s.fprAt95Tpr)},
            {"aupr", jsonNumber(s.aupr)}};
}

}  // namespace

nlohmann::json halvesJson(const RowHalves& h) {
    return {{"method", "Philox permutation of the evaluated rows"},
            {"seed", h.seed},
            {"calibration", h.calibration.size()},
            {"measure", h.measure.size()}};
}

nlohmann::json conformalSetsJson(const ConformalSets& s, const ConformalThreshold& t) {
    nlohmann::json bySize = nlohmann::json::array();
    for (double v : s.coverageBySize) {
        bySize.push_back(jsonNumber(v));
    }
    return {{"threshold", jsonNumber(t.threshold)},
            {"coverage", jsonNumber(s.coverage)},
            {"set_size_mean", jsonNumber(s.setSizeMean)},
            {"coverage_by_size", bySize},
            {"count_by_size", s.countBySize}};
}

nlohmann::json selectiveJson(const SelectiveCurve& s) {
    nlohmann::json coverage = nlohmann::json::array();
    nlohmann::json risk = nlohmann::json::array();
    for (std::size_t i = 0; i < s.coverage.size(); ++i) {
        coverage.push_back(jsonNumber(s.coverage[i]));
        risk.push_back(jsonNumber(s.risk[i]));
    }
    return {{"aurc", jsonNumber(s.aurc)},
            {"accuracy_at_90", jsonNumber(s.accuracyAt90)},
            {"accuracy_at_95", jsonNumber(s.accuracyAt95)},
            {"curve", {{"coverage", coverage}, {"risk", risk}}}};
}

namespace {

void appendMetrics(std::string& line, const ClassificationMetrics& m) {
    for (double v : {m.accuracy, m.nll, m.brier, m.ece, m.mce}) {
        line += ',';
        line += csvNumber(v);
    }
}

}  // namespace

EnsembleReport evaluateEnsemble(const EvaluationInput& input, const EvaluationOptions& options) {
    if (input.predictions == nullptr || input.labels == nullptr) {
        throw std::invalid_argument("evaluateEnsemble: predictions and labels are required");
    }
    const MemberPredictions& p = *input.predictions;
    const std::vector<int32_t>& labels = *input.labels;
    const std::vector<int> members = includedMembers(p, input.include);
    if (members.empty()) {
        throw RuntimeError(
            "no member is left in the ensemble (each diverged or is switched off): there is no "
            "ensemble to evaluate");
    }
    EnsembleReport r;
    r.split = options.split;
    r.classes = p.classes;
    r.included.assign(static_cast<std::size_t>(p.members), 0);
    for (int k : members) {
        r.included[static_cast<std::size_t>(k)] = 1;
    }
    r.points = pointStatistics(p, members, labels);
    r.ensemble = classificationMetrics(r.points, options.bins);
    r.uncertainty = summarizeUncertainty(r.points);
    for (int k = 0; k < p.members; ++k) {
        r.members.push_back(memberClassificationMetrics(p, labels, k, options.bins));
    }
    r.gibbsNll = gibbsNll(p, labels, input.include);
    r.diversity = diversity(p, input.include);
    r.reliability = topLabelCalibration(r.points, options.bins);
    if (options.positiveClassReliability && p.classes == 2) {
        r.positiveReliability = positiveClassCalibration(r.points, labels, options.bins);
    }
    r.sizeCurve =
        ensembleSizeCurve(p, labels, input.include, options.subsets, options.seed, options.bins);
    if (input.train != nullptr && input.trainLabels != nullptr) {
        static const std::vector<int32_t> kNoCounts;
        r.oob = outOfBagMetrics(*input.train, *input.trainLabels,
                                input.counts != nullptr ? *input.counts : kNoCounts, input.include);
    }
    if (input.ood != nullptr) {
        const PointStatistics out = pointStatistics(*input.ood, members, {});
        r.ood = oodMetrics(r.points, out, options.histogramBins);
        r.oodName = input.oodName;
    }
    r.halves = splitHalves(p.rows, options.seed, options.validationFraction);
    r.temperature = temperatureReport(input, options, r.halves);
    if (options.conformalAlpha) {
        r.conformal = conformalReport(r.points.probabilities, p.classes, labels, r.halves,
                                      *options.conformalAlpha);
        SelectiveReport& sel = r.selective.emplace();
        const std::vector<int64_t>& rows = r.halves.measure;
        sel.rows = static_cast<int64_t>(rows.size());
        const std::vector<uint8_t> correct = selectValues(r.points.correct, rows);
        std::vector<double> lowMi = selectValues(r.points.epistemic, rows);
        for (double& v : lowMi) {
            v = -v;  // least mutual information kept first
        }
        sel.maxProbability = selectivePrediction(selectValues(r.points.confidence, rows), correct);
        sel.mutualInformation = selectivePrediction(lowMi, correct);
    }
    return r;
}

nlohmann::json reportJson(const EnsembleReport& r) {
    nlohmann::json j;
    j["split"] = r.split;
    j["rows"] = r.points.rows;
    j["classes"] = r.classes;
    j["members_total"] = r.members.size();
    j["members_included"] = r.points.members;
    j["brier_definition"] = "sum over classes";
    j["definitions"] = {
        {"ensemble", "p(x) = mean over included (switched-on, non-diverged) members of P_k(x)"},
        {"nll", "mean over points of -ln p(y|x); ensemble: -logsumexp_k ln P_k(y|x) + ln K"},
        {"brier", "mean over points of sum over classes (p_c - [c = y])^2, range 0..2"},
        {"ece", "top-label, equal-width bins (a, b] of max_c p_c; sum_b n_b/N |acc_b - conf_b|"},
        {"entropy", "H[p] in nats"},
        {"aleatoric", "mean_k H[P_k]"},
        {"epistemic", "H[p] - mean_k H[P_k] (mutual information), clamped at 0"},
        {"disagreement", "1 - fraction of members voting the ensemble's class"},
        {"predicted_std", "population std over members of P_k(ensemble class)"},
        {"gibbs_nll", "mean over members of the member NLL"},
        {"diversity", "mean over member pairs of the fraction of points predicted differently"}};
    j["calibration_bins"] = r.reliability.bins.size();

    nlohmann::json e = metricsJson(r.ensemble);
    e["entropy_mean"] = jsonNumber(r.uncertainty.entropyMean);
    e["aleatoric_mean"] = jsonNumber(r.uncertainty.aleatoricMean);
    e["epistemic_mean"] = jsonNumber(r.uncertainty.epistemicMean);
    e["disagreement_mean"] = jsonNumber(r.uncertainty.disagreementMean);
    e["predicted_std_mean"] = jsonNumber(r.uncertainty.predictedStdMean);
    j["ensemble"] = e;

    nlohmann::json members = nlohmann::json::array();
    for (std::size_t k = 0; k < r.members.size(); ++k) {
        nlohmann::json m = metricsJson(r.members[k]);
        m["index"] = k;
        m["included"] = r.included[k] != 0;
        members.push_back(m);
    }
    j["members"] = members;
    j["gibbs_nll"] = jsonNumber(r.gibbsNll);
    j["diversity"] = jsonNumber(r.diversity);
    j["reliability"] = binsJson(r.reliability);
    if (r.positiveReliability) {
        j["reliability_positive"] = binsJson(*r.positiveReliability);
    }

    nlohmann::json curve = nlohmann::json::array();
    for (const SizeCurvePoint& s : r.sizeCurve) {
        curve.push_back({{"members", s.members},
                         {"first", metricsJson(s.first)},
                         {"random_mean", metricsJson(s.randomMean)},
                         {"random_std", metricsJson(s.randomStd)}});
    }
    j["size_curve"] = curve;

    if (r.oob) {
        const OobMetrics& o = *r.oob;
        nlohmann::json om = nlohmann::json::array();
        for (const OobMember& m : o.members) {
            om.push_back({{"rows", m.rows},
                          {"accuracy", jsonNumber(m.accuracy)},
                          {"nll", jsonNumber(m.nll)}});
        }
        j["oob"] = {{"available", o.available},
                    {"split", "train"},
                    {"ensemble",
                     {{"accuracy", jsonNumber(o.ensembleAccuracy)},
                      {"nll", jsonNumber(o.ensembleNll)},
                      {"rows", o.ensembleRows},
                      {"skipped_rows", o.skippedRows}}},
                    {"members", om}};
    } else {
        j["oob"] = {{"available", false}};
    }

    if (r.ood) {
        const OodMetrics& o = *r.ood;
        j["ood"] = {
            {"available", true},
            {"dataset", r.oodName},
            {"in_rows", o.inRows},
            {"out_rows", o.outRows},
            {"positive", "in-distribution"},
            {"score_direction",
             "higher = more in-distribution: max_prob as is, entropy and mutual_information "
             "negated"},
            {"max_prob", oodScoreJson(o.maxProbability)},
            {"entropy", oodScoreJson(o.entropy)},
            {"mutual_information", oodScoreJson(o.mutualInformation)},
            {"entropy_histogram",
             {{"edges", o.entropyHistogram.edges},
              {"in", o.entropyHistogram.in},
              {"out", o.entropyHistogram.out}}}};
    } else {
        j["ood"] = {{"available", false}};
    }

    const TemperatureReport& t = r.temperature;
    if (t.available) {
        j["temperature"] = {{"available", true},
                            {"method", toString(t.fit.mode)},
                            {"temperature", t.fit.temperature},
                            {"validation_rows", t.validationRows},
                            {"evaluation_rows", t.evaluationRows},
                            {"validation_nll_before", jsonNumber(t.fit.nllBefore)},
                            {"validation_nll_after", jsonNumber(t.fit.nllAfter)},
                            {"before", metricsJson(t.before)},
                            {"after", metricsJson(t.after)}};
    } else {
        j["temperature"] = {{"available", false}};
    }
    if (t.available && t.validationRows == static_cast<int64_t>(r.halves.calibration.size()) &&
        t.evaluationRows == static_cast<int64_t>(r.halves.measure.size())) {
        j["temperature"]["halves"] = halvesJson(r.halves);
    }
    if (r.conformal) {
        const ConformalReport& c = *r.conformal;
        j["conformal"] = {
            {"alpha", c.alpha},
            {"rows", {{"calibration", c.calibrationRows}, {"measure", c.measureRows}}},
            {"halves", halvesJson(r.halves)},
            {"lac", conformalSetsJson(c.lac, c.lacThreshold)},
            {"aps", conformalSetsJson(c.aps, c.apsThreshold)}};
    }
    if (r.selective) {
        j["selective"] = {{"rows", r.selective->rows},
                          {"ranking", "max_prob: highest first; mutual_information: lowest first"},
                          {"max_prob", selectiveJson(r.selective->maxProbability)},
                          {"mutual_information", selectiveJson(r.selective->mutualInformation)}};
    }
    return j;
}

nlohmann::json reportJson(const EnsembleReport& r, const RunFacts& run) {
    nlohmann::json j = reportJson(r);
    addRunFacts(j, r.members.size(), run, false);
    return j;
}

nlohmann::json reportJson(const RegressionReport& r, const RunFacts& run) {
    nlohmann::json j = regressionReportJson(r);
    addRunFacts(j, r.members.size(), run, true);
    return j;
}

void addRunFacts(nlohmann::json& j, std::size_t members, const RunFacts& run, bool regression) {
    const auto check = [members](std::size_t size, const char* what) {
        if (size != 0 && size != members) {
            throw std::invalid_argument(std::string("reportJson: ") + what + " has " +
                                        std::to_string(size) + " entries for " +
                                        std::to_string(members) + " members");
        }
    };
    check(run.lr.size(), "lr");
    check(run.momentum.size(), "momentum");
    check(run.weightDecay.size(), "weight_decay");
    check(run.diverged.size(), "diverged");
    check(run.switchedOn.size(), "switched_on");
    if (run.evaluation) {
        check(run.evaluation->members.size(), "the evaluation");
    }
    // A split's loss and accuracy (classification) or loss and RMSE (regression) as the
    // trainer tracks them (Evaluation).
    const auto splitJson = [regression](const SplitMetrics& m) {
        return regression
                   ? nlohmann::json{{"loss", jsonNumber(m.loss)}, {"rmse", jsonNumber(m.rmse)}}
                   : nlohmann::json{{"loss", jsonNumber(m.loss)},
                                    {"accuracy", jsonNumber(m.accuracy)}};
    };

    j["step"] = run.step;
    if (run.epoch) {
        j["epoch"] = *run.epoch;
    }
    if (!run.dataset.empty()) {
        j["dataset"] = run.dataset;
    }
    if (run.evaluation) {
        j["ensemble"]["train"] = splitJson(run.evaluation->ensembleTrain);
        j["ensemble"]["test"] = splitJson(run.evaluation->ensembleTest);
    }
    for (std::size_t k = 0; k < members; ++k) {
        nlohmann::json& m = j["members"][k];
        m["member"] = k;
        if (!run.lr.empty()) {
            m["lr"] = run.lr[k];
        }
        if (!run.momentum.empty()) {
            m["momentum"] = run.momentum[k];
        }
        if (!run.weightDecay.empty()) {
            m["weight_decay"] = run.weightDecay[k];
        }
        if (!run.diverged.empty()) {
            m["diverged"] = run.diverged[k] != 0;
        }
        m["switched_on"] = run.switchedOn.empty() || run.switchedOn[k] != 0;
        if (run.evaluation) {
            m["train"] = splitJson(run.evaluation->members[k].train);
            m["test"] = splitJson(run.evaluation->members[k].test);
        }
    }
}

nlohmann::json evaluationReport(const EvaluationInput& input, const EvaluationOptions& options) {
    return reportJson(evaluateEnsemble(input, options));
}

std::string reliabilityCsv(const Calibration& calibration) {
    std::string out = "bin,lower,upper,count,confidence,accuracy\n";
    for (std::size_t b = 0; b < calibration.bins.size(); ++b) {
        const ReliabilityBin& r = calibration.bins[b];
        out += std::to_string(b) + ',' + csvNumber(r.lower) + ',' + csvNumber(r.upper) + ',' +
               std::to_string(r.count) + ',' + csvNumber(r.confidence) + ',' +
               csvNumber(r.accuracy) + '\n';
    }
    return out;
}

std::string sizeCurveCsv(const std::vector<SizeCurvePoint>& curve) {
    std::string out = "members";
    for (const char* prefix : {"first", "random_mean", "random_std"}) {
        for (const char* m : {"accuracy", "nll", "brier", "ece", "mce"}) {
            out += std::string(",") + prefix + '_' + m;
        }
    }
    out += '\n';
    for (const SizeCurvePoint& s : curve) {
        std::string line = std::to_string(s.members);
        appendMetrics(line, s.first);
        appendMetrics(line, s.randomMean);
        appendMetrics(line, s.randomStd);
        out += line + '\n';
    }
    return out;
}

std::string pointsCsv(const PointStatistics& s, const std::vector<int32_t>& labels) {
    const bool labelled = labels.size() == idx(s.rows) && s.correct.size() == idx(s.rows);
    std::string out =
        "row,label,predicted,correct,confidence,nll,brier,total,aleatoric,epistemic,"
        "disagreement,predicted_std\n";
    out.reserve(out.size() + idx(s.rows) * 120);
    for (int64_t i = 0; i < s.rows; ++i) {
        const std::size_t u = idx(i);
        out += std::to_string(i) + ',';
        out += labelled ? std::to_string(labels[u]) : std::string();
        out += ',' + std::to_string(s.predicted[u]) + ',';
        out += labelled ? std::to_string(static_cast<int>(s.correct[u])) : std::string();
        out += ',' + csvNumber(s.confidence[u]) + ',';
        out += labelled ? csvNumber(s.nll[u]) : std::string();
        out += ',';
        out += labelled ? csvNumber(s.brier[u]) : std::string();
        for (double v :
             {s.total[u], s.aleatoric[u], s.epistemic[u], s.disagreement[u], s.predictedStd[u]}) {
            out += ',' + csvNumber(v);
        }
        out += '\n';
    }
    return out;
}

std::string membersCsv(const EnsembleReport& report) {
    std::string out = "member,included,accuracy,nll,brier,ece,mce\n";
    for (std::size_t k = 0; k < report.members.size(); ++k) {
        std::string line = std::to_string(k) + ',' + (report.included[k] ? "1" : "0");
        appendMetrics(line, report.members[k]);
        out += line + '\n';
    }
    std::string line = "ensemble,";
    appendMetrics(line, report.ensemble);
    out += line + '\n';
    return out;
}

std::filesystem::path createCsvFolder(const std::string& directory) {
    std::error_code ec;
    std::filesystem::create_directories(directory, ec);
    if (ec) {
        throw RuntimeError("cannot create the CSV folder " + directory + ": " + ec.message());
    }
    return std::filesystem::path(directory);
}

void writeReportCsvs(const std::string& directory, const EnsembleReport& report,
                     const std::vector<int32_t>& labels) {
    const std::filesystem::path dir = createCsvFolder(directory);
    writeFileAtomic((dir / "reliability.csv").string(), reliabilityCsv(report.reliability));
    if (report.positiveReliability) {
        writeFileAtomic((dir / "reliability_positive.csv").string(),
                        reliabilityCsv(*report.positiveReliability));
    }
    writeFileAtomic((dir / "size_curve.csv").string(), sizeCurveCsv(report.sizeCurve));
    writeFileAtomic((dir / "uncertainty.csv").string(), pointsCsv(report.points, labels));
    writeFileAtomic((dir / "members.csv").string(), membersCsv(report));
}

}  // namespace ensemble
