// The methods side by side (compare/compare.h).
#include "compare/compare.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <optional>
#include <sstream>
#include <utility>

#include "compare/peak_memory.h"
#include "config/config_schema.h"
#include "core/errors.h"
#include "data/dataset.h"
#include "io/model_io.h"
#include "io/safetensors.h"
#include "metrics/metrics.h"
#include "metrics/ood.h"
#include "metrics/point_statistics.h"
#include "metrics/report.h"
#include "registry/registry.h"
#include "train/trainer.h"
#include "train/trainer_report.h"

namespace ensemble {

namespace {

using Clock = std::chrono::steady_clock;
using nlohmann::json;

double secondsSince(Clock::time_point start) {
    return std::chrono::duration<double>(Clock::now() - start).count();
}

// The evaluated rows' labelled statistics for the ensemble trainerReport averages (its members
// switched on and not diverged), summed in the order metrics/report.cpp sums them.
PointStatistics statisticsOf(const MemberPredictions& p, const std::vector<uint8_t>& include,
                             const std::vector<int32_t>& labels) {
    return pointStatistics(p, includedMembers(p, include), labels);
}

// The elements of the `layers.*` tensors of the trainer's export: the trained values the
// method stores (normalisation and bootstrap counts are not trained).
int64_t storedParameters(const Trainer& trainer) {
    const SafetensorsFile file = exportFile(trainer);
    int64_t count = 0;
    for (const Tensor& t : file.tensors) {
        if (t.name.starts_with("layers.")) {
            count += t.elements();
        }
    }
    return count;
}

// Predicts the evaluated rows with every member until at least `minRows` rows and `minSeconds`
// have passed; seconds per 1,000 rows.
double predictSecondsPer1000(Trainer& trainer, const Dataset& rows, int64_t minRows,
                             double minSeconds) {
    if (rows.rows == 0) {
        return kNotMeasured;
    }
    int64_t predicted = 0;
    const auto start = Clock::now();
    double elapsed = 0.0;
    do {
        const MemberPredictions p = trainer.predictRaw(rows.x.data(), rows.rows);
        predicted += p.rows;
        elapsed = secondsSince(start);
    } while (predicted < minRows || elapsed < minSeconds);
    return elapsed / static_cast<double>(predicted) * 1000.0;
}

// The data's own OOD set (as `eval --ood` and the shift report build it), or false for data
// without one.
bool oodSetOf(const DataSplit& data, const ShiftFrame& frame, int64_t rows, uint64_t seed,
              Dataset& out, std::string& name) {
    if (frame.data == ShiftData::Images) {
        out = uniformNoiseImages(rows, frame.width, frame.height, frame.pixelMax, seed);
        name = "uniform-noise";
        return true;
    }
    if (frame.data == ShiftData::Planar) {
        out = ringPoints(rows, data.train, frame.mean, kRingRadiusFactor, seed);
        name = "ring";
        return true;
    }
    return false;
}

std::string number(double v) {
    if (!std::isfinite(v)) {
        return "";
    }
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.9g", v);
    return buf;
}

}  // namespace

std::vector<EnsembleMethod> allEnsembleMethods() {
    std::vector<EnsembleMethod> out;
    for (const EnsembleMethodInfo& row : EnumNames<EnsembleMethod>::table) {
        out.push_back(row.value);
    }
    return out;
}

std::vector<EnsembleMethod> parseMethodList(const std::string& text, const std::string& flag) {
    std::vector<EnsembleMethod> out;
    std::size_t start = 0;
    while (start <= text.size()) {
        const std::size_t comma = std::min(text.find(',', start), text.size());
        const std::string name = text.substr(start, comma - start);
        EnsembleMethod method{};
        if (!enumFromName(name, method)) {
            throw ConfigError(flag + ": '" + name +
                              "' is not an ensemble method (the known ones: " +
                              namesText<EnsembleMethod>() + "; a comma-separated list)");
        }
        if (std::find(out.begin(), out.end(), method) != out.end()) {
            throw ConfigError(flag + ": '" + name + "' is listed twice");
        }
        out.push_back(method);
        start = comma + 1;
    }
    return out;
}

ExperimentConfig methodConfig(const ExperimentConfig& base, EnsembleMethod method) {
    json layer = json::object();
    applyOverride(layer, std::string("ensemble.method=") + toString(method));
    try {
        return parseConfig(overlayConfig(base.json, layer, nullptr));
    } catch (const ConfigError& e) {
        throw ConfigError(std::string("ensemble.method ") + toString(method) + ": " + e.what());
    }
}

CompareResult compareMethods(const ExperimentConfig& base,
                             const std::vector<EnsembleMethod>& methods,
                             const CompareOptions& options,
                             const std::function<void(const CompareProgress&)>& onProgress,
                             const std::atomic<bool>* cancel) {
    if (methods.empty()) {
        throw ConfigError("compare: no method to compare");
    }
    // Every config first, so a mistake in the last method's keys shows before any training.
    std::vector<ExperimentConfig> configs;
    for (EnsembleMethod m : methods) {
        configs.push_back(methodConfig(base, m));
    }
    const DataSplit data = loadDataSplit(base.dataset);
    if (data.regression) {
        throw ConfigError("dataset.kind",
                          "compare measures classifiers (accuracy, ECE, OOD "
                          "AUROC); " +
                              data.name + " is a regression dataset");
    }
    CompareResult result;
    result.config = base.json;
    result.dataset = data.name;
    const bool useTest = data.test.rows > 0;
    const Dataset& evaluated = useTest ? data.test : data.train;
    result.split = useTest ? "test" : "train";
    result.rows = evaluated.rows;
    result.members = base.ensemble.members;
    result.steps = base.totalSteps(data.train.rows);
    result.seed = base.ensemble.seed;
    result.shiftKind = options.shiftKind;
    result.shiftLevel = options.shiftLevel;

    // The shifted rows and the OOD set are the same for every method: made once, up front, so
    // a shift that does not apply is reported before any training.
    const ShiftFrame frame = shiftFrameOf(data, data.normalization);
    const ShiftData shiftData = shiftDataOf(data);
    checkShiftApplies(options.shiftKind, data);
    result.shiftUnit =
        shiftKindInfo(options.shiftKind).levels[static_cast<std::size_t>(shiftData)].unit;
    Dataset shifted;
    try {
        shifted =
            applyShift(evaluated, options.shiftKind, options.shiftLevel, frame, base.ensemble.seed);
    } catch (const ConfigError& e) {
        throw ConfigError(std::string("the shift of shift_nll: ") + e.what());
    }
    Dataset ood;
    const bool hasOod =
        oodSetOf(data, frame, evaluated.rows, base.ensemble.seed, ood, result.oodName);

    std::optional<GridBounds> gridBox;
    if (options.gridSize > 0 && data.planar()) {
        gridBox = gridBounds(data, options.gridMargin);
    }

    PeakMemory memory;
    result.peakRssSource = memory.source();
    for (std::size_t i = 0; i < methods.size(); ++i) {
        if (cancel != nullptr && cancel->load()) {
            result.complete = false;
            return result;
        }
        CompareProgress progress;
        progress.method = static_cast<int>(i);
        progress.methods = static_cast<int>(methods.size());
        progress.value = methods[i];
        progress.totalSteps = result.steps;
        if (onProgress) {
            onProgress(progress);
        }
        memory.reset();
        const ExperimentConfig& config = configs[i];
        BackendChoice choice = makeBackend(config, data);
        if (i == 0) {
            result.backendNotice = choice.notice;
        }
        Trainer trainer(config, data, std::move(choice.backend), nullptr,
                        std::move(choice.memberBackend));
        trainer.setBackendDecision(choice.decision);

        const auto trainStart = Clock::now();
        const bool finished = trainer.run(
            [&](const TrainingProgress& p) {
                if (onProgress) {
                    progress.step = p.step;
                    progress.totalSteps = p.totalSteps;
                    onProgress(progress);
                }
            },
            {}, cancel, options.progressSeconds);
        MethodComparison row;
        row.method = methods[i];
        row.trainSeconds = secondsSince(trainStart);
        if (!finished) {
            result.complete = false;
            return result;
        }
        progress.phase = ComparePhase::Measuring;
        progress.step = trainer.step();
        if (onProgress) {
            onProgress(progress);
        }

        const std::vector<uint8_t> include = trainer.included();
        row.parameters = storedParameters(trainer);
        const std::vector<uint8_t> diverged = trainer.diverged();
        row.divergedMembers = static_cast<int>(
            std::count_if(diverged.begin(), diverged.end(), [](uint8_t d) { return d != 0; }));
        if (std::none_of(include.begin(), include.end(), [](uint8_t on) { return on != 0; })) {
            // Every member diverged (or is switched off): no ensemble to measure; the row says
            // so with its metrics not measured, and the other methods go on.
            row.peakRssMib = memory.peakMib();
            result.methods.push_back(row);
            continue;
        }
        const MemberPredictions predictions =
            useTest ? trainer.predictTest() : trainer.predictTrain();
        const PointStatistics stats = statisticsOf(predictions, include, evaluated.y);
        const ClassificationMetrics metrics = classificationMetrics(stats);
        row.accuracy = metrics.accuracy;
        row.nll = metrics.nll;
        row.brier = metrics.brier;
        row.ece = metrics.ece;

        const MemberPredictions moved = trainer.predictRaw(shifted.x.data(), shifted.rows);
        row.shiftNll = classificationMetrics(statisticsOf(moved, include, shifted.y)).nll;
        if (hasOod) {
            const MemberPredictions out = trainer.predictRaw(ood.x.data(), ood.rows);
            const PointStatistics oodStats = statisticsOf(out, include, {});
            row.oodAuroc = oodMetrics(stats, oodStats).mutualInformation.auroc;
            double sum = 0.0;
            for (double mi : oodStats.epistemic) {
                sum += mi;
            }
            row.oodMeanMi = oodStats.epistemic.empty()
                                ? kNotMeasured
                                : sum / static_cast<double>(oodStats.epistemic.size());
        }
        row.predictSecondsPer1000 =
            predictSecondsPer1000(trainer, evaluated, options.predictRows, options.predictSeconds);
        row.peakRssMib = memory.peakMib();
        if (gridBox) {
            row.grid = evaluateGrid(trainer, *gridBox, options.gridSize, include);
        }
        result.methods.push_back(row);
    }
    return result;
}

json compareReportJson(const CompareResult& result) {
    json methods = json::object();
    for (const MethodComparison& m : result.methods) {
        methods[toString(m.method)] = {
            {"accuracy", jsonNumber(m.accuracy)},
            {"nll", jsonNumber(m.nll)},
            {"brier", jsonNumber(m.brier)},
            {"ece", jsonNumber(m.ece)},
            {"ood_auroc", jsonNumber(m.oodAuroc)},
            {"shift_nll", jsonNumber(m.shiftNll)},
            {"parameters", m.parameters},
            {"train_seconds", jsonNumber(m.trainSeconds)},
            {"predict_seconds_per_1000", jsonNumber(m.predictSecondsPer1000)},
            {"peak_rss_mib", jsonNumber(m.peakRssMib)},
            {"ood_mean_mi", jsonNumber(m.oodMeanMi)},
            {"diverged_members", m.divergedMembers},
        };
    }
    json ood = nullptr;
    if (!result.oodName.empty()) {
        ood = {{"set", result.oodName}, {"score", "mutual information"}};
    }
    return {
        {"methods", std::move(methods)},
        {"config", result.config},
        {"complete", result.complete},
        {"dataset", result.dataset},
        {"split", result.split},
        {"rows", result.rows},
        {"members", result.members},
        {"steps", result.steps},
        {"seed", result.seed},
        {"ood", std::move(ood)},
        {"shift",
         {{"kind", toString(result.shiftKind)},
          {"level", result.shiftLevel},
          {"unit", result.shiftUnit}}},
        {"peak_rss_source", result.peakRssSource},
    };
}

std::string compareCsv(const CompareResult& result) {
    std::ostringstream os;
    os << "method,accuracy,nll,brier,ece,ood_auroc,shift_nll,parameters,train_seconds,"
          "predict_seconds_per_1000,peak_rss_mib,ood_mean_mi\n";
    for (const MethodComparison& m : result.methods) {
        os << toString(m.method) << ',' << number(m.accuracy) << ',' << number(m.nll) << ','
           << number(m.brier) << ',' << number(m.ece) << ',' << number(m.oodAuroc) << ','
           << number(m.shiftNll) << ',' << m.parameters << ',' << number(m.trainSeconds) << ','
           << number(m.predictSecondsPer1000) << ',' << number(m.peakRssMib) << ','
           << number(m.oodMeanMi) << '\n';
    }
    return os.str();
}

std::map<std::string, double> compareHeadlineFigures(const CompareResult& result) {
    std::map<std::string, double> figures;
    for (const MethodComparison& m : result.methods) {
        const std::string method = toString(m.method);
        const std::pair<const char*, double> measures[] = {
            {"test_accuracy", m.accuracy},    {"test_nll", m.nll},
            {"test_brier", m.brier},          {"test_ece", m.ece},
            {"ood_auroc", m.oodAuroc},        {"shift_nll", m.shiftNll},
            {"train_seconds", m.trainSeconds}};
        for (const auto& [name, value] : measures) {
            if (std::isfinite(value)) {
                figures[method + "." + name] = value;
            }
        }
    }
    return figures;
}

}  // namespace ensemble
