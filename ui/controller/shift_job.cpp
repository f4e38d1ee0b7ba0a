#include "controller/shift_job.h"

#include <QObject>

#include <algorithm>
#include <cmath>
#include <exception>

#include "core/errors.h"
#include "core/named_enum.h"
#include "data/dataset.h"
#include "io/model_io.h"
#include "shift/shift_report.h"
#include "shift/transforms.h"

namespace ensemble::ui {

namespace {

// The most 2-D test points a level's preview moves (the Boundary view draws as many).
constexpr int64_t kMaxPreviewPoints = 4000;

// The metric of every level of `report` as the charts read it.
ShiftSeries seriesOf(const ShiftReport& report, double ShiftMetrics::*field) {
    ShiftSeries s;
    for (const ShiftLevelReport& level : report.levels) {
        s.ensemble.push_back(level.ensemble.*field);
        const MemberSpread members = memberSpread(level.members, field);
        s.membersMedian.push_back(members.median);
        s.membersMin.push_back(members.min);
        s.membersMax.push_back(members.max);
        s.ensembleTs.push_back(level.ensembleTs.*field);
        const MemberSpread membersTs = memberSpread(level.membersTs, field);
        s.membersTsMedian.push_back(membersTs.median);
        s.membersTsMin.push_back(membersTs.min);
        s.membersTsMax.push_back(membersTs.max);
    }
    return s;
}

// The measuring-half figures (coverage, set size, AURC) exist only for the _ts blocks: the
// raw blocks' NaN would draw nothing, so their series stay empty.
ShiftSeries tsSeriesOf(const ShiftReport& report, double ShiftMetrics::*field) {
    ShiftSeries s = seriesOf(report, field);
    s.ensemble.clear();
    s.membersMedian.clear();
    s.membersMin.clear();
    s.membersMax.clear();
    return s;
}

// The median and range of `values` as memberSpread (shift_report.h) takes them: NaN skipped,
// the median of an even count the mean of the middle two.
MemberSpread spreadOf(std::vector<double> values) {
    values.erase(
        std::remove_if(values.begin(), values.end(), [](double v) { return std::isnan(v); }),
        values.end());
    MemberSpread s;
    if (values.empty()) {
        return s;
    }
    std::sort(values.begin(), values.end());
    const std::size_t n = values.size();
    s.median = n % 2 == 1 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
    s.min = values.front();
    s.max = values.back();
    return s;
}

// A regression report's value of every level (the ensemble and the members' spread; no
// temperature-scaled variants).
ShiftSeries regressionSeriesOf(const ShiftReport& report, double ShiftRegressionMetrics::*field,
                               bool members) {
    ShiftSeries s;
    for (const ShiftLevelReport& level : report.levels) {
        s.ensemble.push_back(level.regressionEnsemble.*field);
        if (!members) {
            continue;
        }
        std::vector<double> values;
        for (const ShiftRegressionMetrics& m : level.regressionMembers) {
            values.push_back(m.*field);
        }
        const MemberSpread spread = spreadOf(std::move(values));
        s.membersMedian.push_back(spread.median);
        s.membersMin.push_back(spread.min);
        s.membersMax.push_back(spread.max);
    }
    return s;
}

void fillRegression(const ShiftReport& report, ShiftFigures& f) {
    f.regression = true;
    f.titles = {QObject::tr("RMSE"), QObject::tr("NLL"),
                QObject::tr("90% Gaussian interval coverage"),
                QObject::tr("Conformal interval width")};
    f.rates = {false, false, true, false};
    // Short enough for a chart 200 px wide; the view's tooltip says on which rows.
    f.coverageTitle = QObject::tr("Conformal coverage");
    f.metrics[0] = regressionSeriesOf(report, &ShiftRegressionMetrics::rmse, true);
    f.metrics[1] = regressionSeriesOf(report, &ShiftRegressionMetrics::nll, true);
    f.metrics[2] = regressionSeriesOf(report, &ShiftRegressionMetrics::coverage90, true);
    f.metrics[3] = regressionSeriesOf(report, &ShiftRegressionMetrics::intervalWidthMean, false);
    f.coverage = regressionSeriesOf(report, &ShiftRegressionMetrics::intervalCoverage, false);
    f.riskCoverage.assign(report.levels.size(), {});
}

ShiftFigures figuresOf(const ShiftReport& report) {
    ShiftFigures f;
    const ShiftKindInfo& info = shiftKindInfo(report.kind);
    f.shift = QLatin1String(info.name);
    f.unit = QLatin1String(info.levels[static_cast<std::size_t>(report.data)].unit);
    f.alpha = report.alpha;
    for (const ShiftLevelReport& level : report.levels) {
        f.levels.push_back(level.level);
    }
    if (report.regression) {
        fillRegression(report, f);
        return f;
    }
    f.titles = {QObject::tr("Accuracy"), QObject::tr("NLL"), QObject::tr("Brier"),
                QObject::tr("ECE")};
    f.rates = {true, false, false, true};
    f.coverageTitle = QObject::tr("Conformal coverage (LAC)");
    for (const ShiftLevelReport& level : report.levels) {
        std::vector<QPointF> curve;
        const SelectiveCurve& c = level.selectiveMaxProbability;
        for (std::size_t i = 0; i < c.coverage.size() && i < c.risk.size(); ++i) {
            curve.emplace_back(c.coverage[i], c.risk[i]);
        }
        f.riskCoverage.push_back(std::move(curve));
    }
    f.metrics[static_cast<std::size_t>(ShiftMetric::Accuracy)] =
        seriesOf(report, &ShiftMetrics::accuracy);
    f.metrics[static_cast<std::size_t>(ShiftMetric::Nll)] = seriesOf(report, &ShiftMetrics::nll);
    f.metrics[static_cast<std::size_t>(ShiftMetric::Brier)] =
        seriesOf(report, &ShiftMetrics::brier);
    f.metrics[static_cast<std::size_t>(ShiftMetric::Ece)] = seriesOf(report, &ShiftMetrics::ece);
    f.coverage = tsSeriesOf(report, &ShiftMetrics::coverage);
    f.setSize = tsSeriesOf(report, &ShiftMetrics::setSizeMean);
    f.aurc = tsSeriesOf(report, &ShiftMetrics::aurc);
    return f;
}

// The first `rows` rows of `data`.
Dataset firstRows(const Dataset& data, int64_t rows) {
    Dataset out;
    out.rows = std::min(rows, data.rows);
    out.features = data.features;
    out.featureNames = data.featureNames;
    out.x.assign(data.x.begin(), data.x.begin() + out.rows * data.features);
    if (!data.y.empty()) {
        out.y.assign(data.y.begin(), data.y.begin() + out.rows);
    }
    if (!data.target.empty()) {
        out.target.assign(data.target.begin(), data.target.begin() + out.rows);
        out.targetName = data.targetName;
    }
    return out;
}

// The inputs of every level as the view shows them: the first test images, or the 2-D test
// points, moved the way the report moved them (same frame, same seed: a row's noise does not
// depend on the other rows, so the first rows are shifted as in the report).
std::vector<ShiftPreview> previewsOf(const ShiftReport& report, const DataSplit& data,
                                     const Dataset& test, const Normalization& normalization) {
    std::vector<ShiftPreview> previews;
    if (report.data != ShiftData::Images && report.data != ShiftData::Planar) {
        return previews;
    }
    const ShiftFrame frame = shiftFrameOf(data, normalization);
    const bool images = report.data == ShiftData::Images;
    const Dataset rows = firstRows(test, images ? kShiftPreviewImages : kMaxPreviewPoints);
    for (const ShiftLevelReport& level : report.levels) {
        const Dataset moved = applyShift(rows, report.kind, level.level, frame, report.seed);
        ShiftPreview preview;
        for (int64_t i = 0; i < moved.rows; ++i) {
            const float* x = moved.row(i);
            if (images) {
                QImage image(frame.width, frame.height, QImage::Format_Grayscale8);
                for (int r = 0; r < frame.height; ++r) {
                    uchar* line = image.scanLine(r);
                    for (int c = 0; c < frame.width; ++c) {
                        const float v = x[r * frame.width + c] / frame.pixelMax;
                        line[c] = static_cast<uchar>(std::clamp(v, 0.0f, 1.0f) * 255.0f + 0.5f);
                    }
                }
                preview.images.push_back(std::move(image));
            } else {
                preview.points.emplace_back(x[0], x[1]);
            }
            preview.labels.push_back(moved.y.empty() ? 0 : moved.y[static_cast<std::size_t>(i)]);
        }
        previews.push_back(std::move(preview));
    }
    return previews;
}

}  // namespace

ShiftOutcome measureShift(const LoadedEnsemble& ensemble, const DataSplit& data,
                          const ShiftRequest& request, uint64_t runId,
                          const std::function<void(int64_t, int64_t)>& progress,
                          const std::atomic<bool>& cancel) {
    ShiftOutcome outcome;
    outcome.runId = runId;
    outcome.request = request;
    outcome.step = ensemble.step;
    try {
        ShiftOptions options;
        if (!enumFromName(request.shift, options.kind)) {
            throw ConfigError("unknown shift '" + request.shift + "' (" + namesText<ShiftKind>() +
                              ")");
        }
        options.levels = request.levels;
        options.alpha = request.alpha;
        options.subset = request.subset;
        // As `ensemble-cli shift` sets them (app/cli/shift_command.cpp).
        options.seed = ensemble.config.ensemble.seed;
        options.threads = ensemble.config.backend.threads;
        auto engineReport = std::make_shared<ShiftReport>(computeShiftReport(
            ensemble, data, options,
            [&](const ShiftProgress& p) {
                if (progress) {
                    progress(p.rowsDone, p.rowsTotal);
                }
            },
            &cancel));
        const ShiftReport& report = *engineReport;
        if (!report.complete) {
            outcome.cancelled = true;
            return outcome;
        }
        outcome.report = shiftReportJson(report);
        outcome.engineReport = std::move(engineReport);
        outcome.figures = figuresOf(report);
        const Dataset& test = data.test.rows > 0 ? data.test : data.train;
        outcome.previews = previewsOf(report, data, test, ensemble.normalization);
    } catch (const std::exception& e) {
        outcome.error = QString::fromStdString(e.what());
    }
    return outcome;
}

ShiftOutcome refusedShift(const ShiftRequest& request, uint64_t runId, const QString& why) {
    ShiftOutcome outcome;
    outcome.runId = runId;
    outcome.request = request;
    outcome.error = why;
    return outcome;
}

}  // namespace ensemble::ui
