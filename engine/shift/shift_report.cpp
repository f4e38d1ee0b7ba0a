// computeShiftReport: predictions of every level in chunks (progress, cancel), the
// in-distribution fits on the calibration half, and each level's blocks.
#include "shift/shift_report.h"
#include "core/index.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>

#include "core/errors.h"
#include "metrics/metrics.h"
#include "metrics/regression.h"
#include "metrics/temperature.h"

namespace ensemble {
namespace {

// DataError unless the ensemble can be measured on `data` (eval's checks, in the engine).
void checkData(const LoadedEnsemble& ensemble, const DataSplit& data) {
    const int features = ensemble.layout.inputs();
    if (data.train.features != features) {
        throw DataError("dataset " + data.name + " has " + std::to_string(data.train.features) +
                        " features, but the ensemble takes " + std::to_string(features));
    }
    const bool regression = isRegression(ensemble.config.model.likelihood);
    if (regression != data.regression) {
        throw DataError("dataset " + data.name + " is a " +
                        (data.regression ? "regression" : "classification") +
                        " dataset, but the ensemble " +
                        (regression ? "is a regression model" : "classifies"));
    }
    if (!regression && data.classes > ensemble.layout.classes()) {
        throw DataError("dataset " + data.name + " has " + std::to_string(data.classes) +
                        " classes, but the ensemble predicts " +
                        std::to_string(ensemble.layout.classes()));
    }
    if (data.test.rows < 1) {
        throw DataError("dataset " + data.name +
                        " has no test split to shift (dataset.test_fraction is 0 and there is "
                        "no test file)");
    }
}

// Predicts `rows` in chunks of options.chunkRows, reporting each chunk to `tick` and stopping
// (false) when `cancel` is set.
class ChunkedPredictor {
  public:
    ChunkedPredictor(const LoadedEnsemble& ensemble, const ShiftOptions& options,
                     const std::function<void(const ShiftProgress&)>& onProgress,
                     const std::atomic<bool>* cancel, ShiftProgress& progress)
        : m_ensemble(ensemble),
          m_options(options),
          m_onProgress(onProgress),
          m_cancel(cancel),
          m_progress(progress) {}

    bool cancelled() const { return m_cancel != nullptr && m_cancel->load(); }

    bool predict(const Dataset& data, MemberPredictions& out) {
        const int k = m_ensemble.layout.members();
        const int c = m_ensemble.layout.classes();
        const int d = data.features;
        out.members = k;
        out.rows = data.rows;
        out.classes = c;
        out.logProbs.assign(idx(k) * idx(data.rows) * idx(c), 0.0f);
        const int64_t chunk = std::max<int64_t>(m_options.chunkRows, 1);
        for (int64_t begin = 0; begin < data.rows; begin += chunk) {
            if (cancelled()) {
                return false;
            }
            const int64_t n = std::min(chunk, data.rows - begin);
            const std::vector<float> part = predictLogProbs(
                m_ensemble, data.x.data() + idx(begin) * idx(d), n, m_options.threads);
            for (int m = 0; m < k; ++m) {
                std::copy(
                    part.begin() + static_cast<std::ptrdiff_t>(idx(m) * idx(n) * idx(c)),
                    part.begin() + static_cast<std::ptrdiff_t>(idx(m + 1) * idx(n) * idx(c)),
                    out.logProbs.begin() + static_cast<std::ptrdiff_t>(
                                               (idx(m) * idx(data.rows) + idx(begin)) * idx(c)));
            }
            m_progress.rowsDone += n;
            if (m_onProgress) {
                m_onProgress(m_progress);
            }
        }
        return !cancelled();
    }

  private:
    const LoadedEnsemble& m_ensemble;
    const ShiftOptions& m_options;
    const std::function<void(const ShiftProgress&)>& m_onProgress;
    const std::atomic<bool>* m_cancel;
    ShiftProgress& m_progress;
};

std::vector<uint8_t> onlyMember(int members, int k) {
    std::vector<uint8_t> include(idx(members), 0);
    include[idx(k)] = 1;
    return include;
}

// accuracy, nll, brier, ece, entropy_mean, epistemic_mean of labelled statistics.
ShiftMetrics blockOf(const PointStatistics& s, int bins) {
    const ClassificationMetrics m = classificationMetrics(s, bins);
    const UncertaintySummary u = summarizeUncertainty(s);
    ShiftMetrics b;
    b.rows = s.rows;
    b.accuracy = m.accuracy;
    b.nll = m.nll;
    b.brier = m.brier;
    b.ece = m.ece;
    b.entropyMean = u.entropyMean;
    b.epistemicMean = u.epistemicMean;
    return b;
}

// The in-distribution fits of a classifier (see the header).
struct ClassificationFits {
    std::vector<uint8_t> include;
    double temperature = 1.0;
    std::vector<double> memberTemperatures;
    ConformalThreshold lac;
    ConformalThreshold aps;
    ConformalThreshold rawLac;
    std::vector<ConformalThreshold> memberLac;
};

ClassificationFits fitClassification(const MemberPredictions& unshifted,
                                     const std::vector<int32_t>& labels,
                                     const std::vector<int>& members, const RowHalves& halves,
                                     double alpha) {
    ClassificationFits f;
    f.include.assign(idx(unshifted.members), 0);
    for (int k : members) {
        f.include[idx(k)] = 1;
    }
    const MemberPredictions cal = selectPredictionRows(unshifted, halves.calibration);
    const std::vector<int32_t> y = selectValues(labels, halves.calibration);
    const int c = unshifted.classes;
    f.temperature = fitTemperature(cal, y, f.include).temperature;
    const MemberPredictions scaled = temperatureScaled(cal, f.include, f.temperature);
    const PointStatistics s = pointStatistics(scaled, std::vector<int>{0}, y);
    f.lac = calibrateConformal(ConformalScore::Lac, s.probabilities, c, y, alpha);
    f.aps = calibrateConformal(ConformalScore::Aps, s.probabilities, c, y, alpha);
    f.rawLac = calibrateConformal(ConformalScore::Lac,
                                  pointStatistics(cal, members, y).probabilities, c, y, alpha);
    for (int k : members) {
        const std::vector<uint8_t> only = onlyMember(unshifted.members, k);
        const double t = fitTemperature(cal, y, only).temperature;
        f.memberTemperatures.push_back(t);
        const PointStatistics sk =
            pointStatistics(temperatureScaled(cal, only, t), std::vector<int>{0}, y);
        f.memberLac.push_back(
            calibrateConformal(ConformalScore::Lac, sk.probabilities, c, y, alpha));
    }
    return f;
}

void measureClassification(ShiftLevelReport& level, const MemberPredictions& p,
                           const std::vector<int32_t>& labels, const std::vector<int>& members,
                           const RowHalves& halves, const ClassificationFits& fits, int bins) {
    const int c = p.classes;
    level.ensemble = blockOf(pointStatistics(p, members, labels), bins);
    for (int k : members) {
        level.members.push_back(blockOf(pointStatistics(p, std::vector<int>{k}, labels), bins));
    }
    const MemberPredictions pm = selectPredictionRows(p, halves.measure);
    const std::vector<int32_t> ym = selectValues(labels, halves.measure);
    const PointStatistics raw = pointStatistics(pm, members, ym);
    level.ensembleMeasure = blockOf(raw, bins);
    const ConformalSets rawSets = conformalSets(fits.rawLac, raw.probabilities, c, ym);
    level.ensembleMeasure.coverage = rawSets.coverage;
    level.ensembleMeasure.setSizeMean = rawSets.setSizeMean;
    level.ensembleMeasure.aurc = selectivePrediction(raw.confidence, raw.correct, 2).aurc;
    const PointStatistics ts = pointStatistics(
        temperatureScaled(pm, fits.include, fits.temperature), std::vector<int>{0}, ym);
    level.ensembleTs = blockOf(ts, bins);
    // Pool-then-calibrate scales the average, not the members: their disagreement is the raw
    // ensemble's.
    level.ensembleTs.epistemicMean = summarizeUncertainty(raw).epistemicMean;
    level.lac = conformalSets(fits.lac, ts.probabilities, c, ym);
    level.aps = conformalSets(fits.aps, ts.probabilities, c, ym);
    level.ensembleTs.coverage = level.lac.coverage;
    level.ensembleTs.setSizeMean = level.lac.setSizeMean;
    level.selectiveMaxProbability = selectivePrediction(ts.confidence, ts.correct);
    level.ensembleTs.aurc = level.selectiveMaxProbability.aurc;
    std::vector<double> lowMi = raw.epistemic;
    for (double& v : lowMi) {
        v = -v;
    }
    level.selectiveMutualInformation = selectivePrediction(lowMi, raw.correct);
    for (std::size_t i = 0; i < members.size(); ++i) {
        const std::vector<uint8_t> only = onlyMember(p.members, members[i]);
        const PointStatistics sk = pointStatistics(
            temperatureScaled(pm, only, fits.memberTemperatures[i]), std::vector<int>{0}, ym);
        ShiftMetrics b = blockOf(sk, bins);
        const ConformalSets sets = conformalSets(fits.memberLac[i], sk.probabilities, c, ym);
        b.coverage = sets.coverage;
        b.setSizeMean = sets.setSizeMean;
        b.aurc = selectivePrediction(sk.confidence, sk.correct, 2).aurc;
        level.membersTs.push_back(b);
    }
}

ShiftRegressionMetrics regressionBlock(const RegressionPoints& points,
                                       const std::vector<float>& targets) {
    const RegressionMetrics m = regressionMetrics(points, targets);
    ShiftRegressionMetrics b;
    b.rows = m.rows;
    b.rmse = m.rmse;
    b.nll = m.nll;
    b.coverage90 = m.coverage[1];
    return b;
}

RegressionPoints selectPoints(const RegressionPoints& p, const std::vector<int64_t>& rows) {
    RegressionPoints out;
    out.rows = static_cast<int64_t>(rows.size());
    out.members = p.members;
    out.mean = selectValues(p.mean, rows);
    out.variance = selectValues(p.variance, rows);
    out.aleatoric = selectValues(p.aleatoric, rows);
    out.epistemic = selectValues(p.epistemic, rows);
    return out;
}

}  // namespace

MemberSpread memberSpread(const std::vector<ShiftMetrics>& members, double ShiftMetrics::*field) {
    std::vector<double> v;
    for (const ShiftMetrics& m : members) {
        if (!std::isnan(m.*field)) {
            v.push_back(m.*field);
        }
    }
    MemberSpread s;
    if (v.empty()) {
        return s;
    }
    std::sort(v.begin(), v.end());
    const std::size_t n = v.size();
    s.median = n % 2 == 1 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
    s.min = v.front();
    s.max = v.back();
    return s;
}

ShiftReport computeShiftReport(const LoadedEnsemble& ensemble, const DataSplit& data,
                               const ShiftOptions& options,
                               const std::function<void(const ShiftProgress&)>& onProgress,
                               const std::atomic<bool>* cancel) {
    checkShiftApplies(options.kind, data);
    checkData(ensemble, data);
    if (!(options.alpha > 0.0 && options.alpha < 1.0)) {
        throw ConfigError("--alpha: must be in (0, 1), got " + std::to_string(options.alpha));
    }
    if (options.subset < 0) {
        throw ConfigError("--subset: must be >= 0");
    }
    ShiftReport r;
    r.kind = options.kind;
    r.data = shiftDataOf(data);
    r.dataset = data.name;
    r.regression = data.regression;
    r.classes = data.regression ? 0 : ensemble.layout.classes();
    r.alpha = options.alpha;
    r.seed = options.seed;
    r.membersTotal = ensemble.layout.members();
    const std::vector<uint8_t> include = includedMembers(ensemble);
    for (int k = 0; k < r.membersTotal; ++k) {
        if (include[idx(k)] != 0) {
            r.members.push_back(k);
        }
    }
    if (r.members.empty()) {
        throw RuntimeError(
            "no member is left in the ensemble (each diverged or is switched off): there is no "
            "ensemble to measure");
    }
    const std::vector<double> levels =
        options.levels.empty() ? defaultShiftLevels(options.kind, r.data) : options.levels;
    const ShiftFrame frame = shiftFrameOf(data, ensemble.normalization);
    Dataset empty;
    empty.features = data.test.features;
    for (double level : levels) {
        applyShift(empty, options.kind, level, frame, options.seed);  // checks the level
    }

    r.testRows = data.test.rows;
    Dataset test = data.test;
    if (options.subset > 0 && options.subset < test.rows) {
        std::vector<int64_t> first(idx(options.subset));
        std::iota(first.begin(), first.end(), int64_t{0});
        test = selectRows(data.test, first);
    }
    r.rows = test.rows;
    const RowHalves halves = splitHalves(r.rows, options.seed);
    r.calibrationRows = static_cast<int64_t>(halves.calibration.size());
    r.measureRows = static_cast<int64_t>(halves.measure.size());
    if (r.calibrationRows < 1 || r.measureRows < 1) {
        throw DataError("the test split of " + data.name + " has " + std::to_string(r.rows) +
                        " rows: the shift report needs at least 2 (one to fit, one to measure)");
    }

    const double identity = shiftKindInfo(options.kind).identity;
    const bool identityListed = std::find(levels.begin(), levels.end(), identity) != levels.end();
    const bool oodSet = options.ood && !r.regression &&
                        (r.data == ShiftData::Images || r.data == ShiftData::Planar);
    ShiftProgress progress;
    progress.levels = static_cast<int>(levels.size());
    progress.rowsTotal = r.rows * (static_cast<int64_t>(levels.size()) + (identityListed ? 0 : 1) +
                                   (oodSet ? 1 : 0));
    ChunkedPredictor predictor(ensemble, options, onProgress, cancel, progress);

    // The unshifted predictions: the fits, and the in-distribution side of the OOD scores.
    MemberPredictions unshifted;
    if (!predictor.predict(applyShift(test, options.kind, identity, frame, options.seed),
                           unshifted)) {
        r.complete = false;
        return r;
    }
    ClassificationFits fits;
    RegressionPoints unshiftedPoints;
    const double targetMean = ensemble.normalization.targetMean;
    const double targetStd = ensemble.normalization.targetStd;
    if (r.regression) {
        unshiftedPoints =
            mixturePoints(memberGaussians(unshifted, targetMean, targetStd), r.members);
        const RegressionPoints cal = selectPoints(unshiftedPoints, halves.calibration);
        r.intervalThreshold = calibrateIntervals(
            cal.mean, cal.variance, selectValues(test.target, halves.calibration), options.alpha);
    } else {
        fits = fitClassification(unshifted, test.y, r.members, halves, options.alpha);
        r.temperature = fits.temperature;
        r.memberTemperatures = fits.memberTemperatures;
        r.lacThreshold = fits.lac;
        r.apsThreshold = fits.aps;
        r.rawLacThreshold = fits.rawLac;
        for (const ConformalThreshold& t : fits.memberLac) {
            r.memberLacThresholds.push_back(t.threshold);
        }
    }

    for (std::size_t l = 0; l < levels.size(); ++l) {
        progress.level = static_cast<int>(l);
        MemberPredictions shifted;
        const MemberPredictions* p = &unshifted;
        if (levels[l] != identity) {
            if (!predictor.predict(applyShift(test, options.kind, levels[l], frame, options.seed),
                                   shifted)) {
                r.complete = false;
                return r;
            }
            p = &shifted;
        }
        ShiftLevelReport level;
        level.level = levels[l];
        if (r.regression) {
            const MemberGaussians g = memberGaussians(*p, targetMean, targetStd);
            const RegressionPoints points = mixturePoints(g, r.members);
            level.regressionEnsemble = regressionBlock(points, test.target);
            const RegressionPoints measured = selectPoints(points, halves.measure);
            const ConformalIntervals iv = measureIntervals(
                r.intervalThreshold, options.alpha, r.calibrationRows, measured.mean,
                measured.variance, selectValues(test.target, halves.measure));
            level.regressionEnsemble.measureRows = iv.rows;
            level.regressionEnsemble.intervalCoverage = iv.coverage;
            level.regressionEnsemble.intervalWidthMean = iv.widthMean;
            for (int k : r.members) {
                level.regressionMembers.push_back(
                    regressionBlock(mixturePoints(g, std::vector<int>{k}), test.target));
            }
        } else {
            measureClassification(level, *p, test.y, r.members, halves, fits, options.bins);
        }
        r.levels.push_back(std::move(level));
    }

    if (oodSet) {
        Dataset out =
            r.data == ShiftData::Images
                ? uniformNoiseImages(r.rows, frame.width, frame.height, frame.pixelMax,
                                     options.seed)
                : ringPoints(r.rows, data.train, frame.mean, kRingRadiusFactor, options.seed);
        MemberPredictions q;
        if (!predictor.predict(out, q)) {
            r.complete = false;
            return r;
        }
        r.ood = oodMetrics(pointStatistics(unshifted, r.members, test.y),
                           pointStatistics(q, r.members, std::vector<int32_t>{}));
        r.oodName = r.data == ShiftData::Images ? "uniform-noise" : "ring";
    }
    return r;
}

std::map<std::string, double> shiftHeadlineFigures(const ShiftReport& report) {
    std::map<std::string, double> figures;
    const auto put = [&](const std::string& name, double value) {
        if (std::isfinite(value)) {
            figures[name] = value;
        }
    };
    for (const ShiftLevelReport& level : report.levels) {
        char prefix[32];
        std::snprintf(prefix, sizeof prefix, "%g.", level.level);
        if (report.regression) {
            put(prefix + std::string("rmse"), level.regressionEnsemble.rmse);
            put(prefix + std::string("nll"), level.regressionEnsemble.nll);
        } else {
            put(prefix + std::string("accuracy"), level.ensemble.accuracy);
            put(prefix + std::string("nll"), level.ensemble.nll);
            put(prefix + std::string("ece"), level.ensemble.ece);
        }
    }
    return figures;
}

}  // namespace ensemble
