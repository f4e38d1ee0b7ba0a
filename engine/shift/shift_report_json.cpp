// The shift report as JSON and CSV (the layout is documented in docs/shift.md).
#include <charconv>
#include <cmath>
#include <filesystem>
#include <string>

#include "core/errors.h"
#include "metrics/report.h"
#include "shift/shift_report.h"
#include "sys/atomic_file.h"

namespace ensemble {
namespace {

using nlohmann::json;

json blockJson(const ShiftMetrics& m, bool measured) {
    json j = {{"rows", m.rows},
              {"accuracy", jsonNumber(m.accuracy)},
              {"nll", jsonNumber(m.nll)},
              {"brier", jsonNumber(m.brier)},
              {"ece", jsonNumber(m.ece)},
              {"entropy_mean", jsonNumber(m.entropyMean)},
              {"epistemic_mean", jsonNumber(m.epistemicMean)}};
    if (measured) {
        j["coverage"] = jsonNumber(m.coverage);
        j["set_size_mean"] = jsonNumber(m.setSizeMean);
        j["aurc"] = jsonNumber(m.aurc);
    }
    return j;
}

json blocksJson(const std::vector<ShiftMetrics>& blocks, const std::vector<int>& members,
                bool measured) {
    json out = json::array();
    for (std::size_t i = 0; i < blocks.size(); ++i) {
        json b = blockJson(blocks[i], measured);
        b["member"] = members[i];
        out.push_back(b);
    }
    return out;
}

// {"accuracy": {"median", "min", "max"}, ...}: "a single network" of Ovadia's figures.
json spreadJson(const std::vector<ShiftMetrics>& blocks, bool measured) {
    json out;
    const auto add = [&](const char* name, double ShiftMetrics::*field) {
        const MemberSpread s = memberSpread(blocks, field);
        out[name] = {{"median", jsonNumber(s.median)},
                     {"min", jsonNumber(s.min)},
                     {"max", jsonNumber(s.max)}};
    };
    add("accuracy", &ShiftMetrics::accuracy);
    add("nll", &ShiftMetrics::nll);
    add("brier", &ShiftMetrics::brier);
    add("ece", &ShiftMetrics::ece);
    add("entropy_mean", &ShiftMetrics::entropyMean);
    if (measured) {
        add("coverage", &ShiftMetrics::coverage);
        add("set_size_mean", &ShiftMetrics::setSizeMean);
        add("aurc", &ShiftMetrics::aurc);
    }
    return out;
}

json regressionJson(const ShiftRegressionMetrics& m, bool ensemble) {
    json j = {{"rows", m.rows},
              {"rmse", jsonNumber(m.rmse)},
              {"nll", jsonNumber(m.nll)},
              {"coverage_90", jsonNumber(m.coverage90)}};
    if (ensemble) {
        j["interval_rows"] = m.measureRows;
        j["interval_coverage"] = jsonNumber(m.intervalCoverage);
        j["interval_width_mean"] = jsonNumber(m.intervalWidthMean);
    }
    return j;
}

json oodScore(const OodScore& s) {
    return {{"auroc", jsonNumber(s.auroc)},
            {"aupr", jsonNumber(s.aupr)},
            {"fpr_at_95_tpr", jsonNumber(s.fprAt95Tpr)}};
}

}  // namespace

json shiftReportJson(const ShiftReport& r) {
    const ShiftKindInfo& info = shiftKindInfo(r.kind);
    json j;
    j["shift"] = info.name;
    j["unit"] = info.levels[static_cast<std::size_t>(r.data)].unit;
    j["dataset"] = r.dataset;
    j["data"] = toString(r.data);
    j["task"] = r.regression ? "regression" : "classification";
    j["alpha"] = r.alpha;
    j["seed"] = r.seed;
    j["complete"] = r.complete;
    j["rows"] = {{"test", r.testRows},
                 {"evaluated", r.rows},
                 {"calibration", r.calibrationRows},
                 {"measure", r.measureRows},
                 {"halves", "Philox permutation of the evaluated rows (seed " +
                                std::to_string(r.seed) + ")"}};
    j["members"] = r.members;
    j["members_total"] = r.membersTotal;
    if (r.regression) {
        j["interval_threshold"] = jsonNumber(r.intervalThreshold);
    } else {
        j["classes"] = r.classes;
        j["temperature"] = jsonNumber(r.temperature);
        json mt = json::array();
        for (double t : r.memberTemperatures) {
            mt.push_back(jsonNumber(t));
        }
        j["member_temperatures"] = mt;
        j["conformal_threshold"] = {{"lac", jsonNumber(r.lacThreshold.threshold)},
                                    {"aps", jsonNumber(r.apsThreshold.threshold)},
                                    {"lac_untempered", jsonNumber(r.rawLacThreshold.threshold)}};
        json ml = json::array();
        for (double t : r.memberLacThresholds) {
            ml.push_back(jsonNumber(t));
        }
        j["member_conformal_threshold"] = ml;
    }
    json levels = json::array();
    for (const ShiftLevelReport& l : r.levels) {
        json lj;
        lj["level"] = l.level;
        if (r.regression) {
            lj["ensemble"] = regressionJson(l.regressionEnsemble, true);
            json members = json::array();
            for (std::size_t i = 0; i < l.regressionMembers.size(); ++i) {
                json m = regressionJson(l.regressionMembers[i], false);
                m["member"] = r.members[i];
                members.push_back(m);
            }
            lj["members"] = members;
        } else {
            lj["ensemble"] = blockJson(l.ensemble, false);
            lj["members"] = blocksJson(l.members, r.members, false);
            lj["members_spread"] = spreadJson(l.members, false);
            lj["ensemble_ts"] = blockJson(l.ensembleTs, true);
            lj["members_ts"] = blocksJson(l.membersTs, r.members, true);
            lj["members_ts_spread"] = spreadJson(l.membersTs, true);
            lj["ensemble_measure"] = blockJson(l.ensembleMeasure, true);
            lj["conformal"] = {{"lac", conformalSetsJson(l.lac, r.lacThreshold)},
                               {"aps", conformalSetsJson(l.aps, r.apsThreshold)}};
            lj["selective"] = {{"rows", l.selectiveMaxProbability.rows},
                               {"max_prob", selectiveJson(l.selectiveMaxProbability)},
                               {"mutual_information", selectiveJson(l.selectiveMutualInformation)}};
        }
        levels.push_back(lj);
    }
    j["levels"] = levels;
    if (r.ood) {
        j["ood"] = {{"available", true},
                    {"dataset", r.oodName},
                    {"in_rows", r.ood->inRows},
                    {"out_rows", r.ood->outRows},
                    {"positive", "in-distribution"},
                    {"max_prob", oodScore(r.ood->maxProbability)},
                    {"entropy", oodScore(r.ood->entropy)},
                    {"mutual_information", oodScore(r.ood->mutualInformation)}};
    } else {
        j["ood"] = {{"available", false}};
    }
    return j;
}

std::string shiftLevelsCsv(const ShiftReport& r) {
    std::string out = "level";
    if (r.regression) {
        out +=
            ",ensemble_rmse,ensemble_nll,ensemble_coverage_90,interval_coverage,"
            "interval_width_mean\n";
        for (const ShiftLevelReport& l : r.levels) {
            const ShiftRegressionMetrics& e = l.regressionEnsemble;
            out += csvNumber(l.level);
            for (double v :
                 {e.rmse, e.nll, e.coverage90, e.intervalCoverage, e.intervalWidthMean}) {
                out += ',' + csvNumber(v);
            }
            out += '\n';
        }
        return out;
    }
    const char* metrics[] = {"accuracy",       "nll",      "brier",         "ece", "entropy_mean",
                             "epistemic_mean", "coverage", "set_size_mean", "aurc"};
    double ShiftMetrics::*fields[] = {
        &ShiftMetrics::accuracy, &ShiftMetrics::nll,         &ShiftMetrics::brier,
        &ShiftMetrics::ece,      &ShiftMetrics::entropyMean, &ShiftMetrics::epistemicMean,
        &ShiftMetrics::coverage, &ShiftMetrics::setSizeMean, &ShiftMetrics::aurc};
    // A block's value of one metric: the ensemble's, or a statistic of the members'.
    struct Column {
        const char* name;
        double (*value)(const ShiftLevelReport&, double ShiftMetrics::*);
    };
    static const Column columns[] = {
        {"ensemble",
         [](const ShiftLevelReport& l, double ShiftMetrics::*f) { return l.ensemble.*f; }},
        {"members_median",
         [](const ShiftLevelReport& l, double ShiftMetrics::*f) {
             return memberSpread(l.members, f).median;
         }},
        {"members_min", [](const ShiftLevelReport& l,
                           double ShiftMetrics::*f) { return memberSpread(l.members, f).min; }},
        {"members_max", [](const ShiftLevelReport& l,
                           double ShiftMetrics::*f) { return memberSpread(l.members, f).max; }},
        {"ensemble_measure",
         [](const ShiftLevelReport& l, double ShiftMetrics::*f) { return l.ensembleMeasure.*f; }},
        {"ensemble_ts",
         [](const ShiftLevelReport& l, double ShiftMetrics::*f) { return l.ensembleTs.*f; }},
        {"members_ts_median",
         [](const ShiftLevelReport& l, double ShiftMetrics::*f) {
             return memberSpread(l.membersTs, f).median;
         }},
        {"members_ts_min",
         [](const ShiftLevelReport& l, double ShiftMetrics::*f) {
             return memberSpread(l.membersTs, f).min;
         }},
        {"members_ts_max",
         [](const ShiftLevelReport& l, double ShiftMetrics::*f) {
             return memberSpread(l.membersTs, f).max;
         }},
    };
    for (const Column& c : columns) {
        for (const char* m : metrics) {
            out += std::string(",") + c.name + '_' + m;
        }
    }
    out += '\n';
    for (const ShiftLevelReport& l : r.levels) {
        out += csvNumber(l.level);
        for (const Column& c : columns) {
            for (auto field : fields) {
                out += ',' + csvNumber(c.value(l, field));
            }
        }
        out += '\n';
    }
    return out;
}

std::string riskCoverageCsv(const ShiftReport& r) {
    std::string out = "level,ranking,coverage,risk\n";
    for (const ShiftLevelReport& l : r.levels) {
        const auto add = [&](const char* ranking, const SelectiveCurve& c) {
            for (std::size_t i = 0; i < c.coverage.size(); ++i) {
                out += csvNumber(l.level) + ',' + ranking + ',' + csvNumber(c.coverage[i]) + ',' +
                       csvNumber(c.risk[i]) + '\n';
            }
        };
        add("max_prob", l.selectiveMaxProbability);
        add("mutual_information", l.selectiveMutualInformation);
    }
    return out;
}

std::string setSizesCsv(const ShiftReport& r) {
    std::string out = "level,score,set_size,count,coverage\n";
    for (const ShiftLevelReport& l : r.levels) {
        const auto add = [&](const char* score, const ConformalSets& s) {
            for (std::size_t k = 0; k < s.countBySize.size(); ++k) {
                out += csvNumber(l.level) + ',' + score + ',' + std::to_string(k) + ',' +
                       std::to_string(s.countBySize[k]) + ',' + csvNumber(s.coverageBySize[k]) +
                       '\n';
            }
        };
        add("lac", l.lac);
        add("aps", l.aps);
    }
    return out;
}

void writeShiftCsvs(const std::string& directory, const ShiftReport& report) {
    const std::filesystem::path dir = createCsvFolder(directory);
    writeFileAtomic((dir / "shift_levels.csv").string(), shiftLevelsCsv(report));
    if (!report.regression) {
        writeFileAtomic((dir / "risk_coverage.csv").string(), riskCoverageCsv(report));
        writeFileAtomic((dir / "set_sizes.csv").string(), setSizesCsv(report));
    }
}

}  // namespace ensemble
