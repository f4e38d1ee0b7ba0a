#pragma once

// Published experiments, rerun and set beside the paper (issue 49). One registry row per
// experiment: what it runs (a config per level and split or seed, composed from the engine's
// own pieces: the seeded split, the training rows' standardisation, the trainer, the regression
// report), the numbers the paper prints with their spread and source, and how each is judged.
// Judging comes in four kinds:
//   numeric      |ours - paper| <= 2 sqrt(se_paper^2 + se_ours^2), se_paper the printed spread
//                floored at half its last printed digit ("0.09 ± 0.00" is ± 0.005)
//   band         ours inside a printed range
//   claim        a named finding, checked in every split or seed of its level, or (a claim
//                against another level) ours against a multiple of the other level's figure
//   measurement  no verdict
// Ours is the mean ± standard error (sample standard deviation / sqrt(n)) over the splits or
// seeds of a level; a level figure (FigureOf::Level) is one number read off the level's runs
// together (active learning: the labels to reach an accuracy on the mean curve over the seeds),
// with no standard error.

#include <atomic>
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/named_enum.h"

namespace ensemble::reproduce {

enum class VerdictKind { Numeric, Band, Claim, Measurement };
inline constexpr std::size_t kVerdictKindCount = 4;

enum class Verdict { Pass, Fail, None };

// How a reproduction's runs are made and measured (runner.cpp switches over it).
enum class RunnerKind {
    UciRegression,  // a regression ensemble per split: test RMSE and NLL, raw target units
    CubicCurves,    // the Deep Ensembles figure: each panel's mean and ± 3 sigma on [-6, 6]
    SpiralsTiming,  // Whitney 2021: K = 1 against K = 100, the same steps, timed
    MoonsOod,       // two moons and an OOD blob: a method's confidence and OOD AUROC on it
    // MNIST (runner_mnist.cpp):
    MnistSizeCurve,  // Deep Ensembles Figure 2a: test error and NLL against M = 1..K
    MnistLenet,      // uncertainty-baselines' LeNet-5: accuracy, NLL and ECE of a run
    MnistShift,      // Ovadia et al. 2019: rotated and translated test images, three methods
    // Gal et al. 2017 (runner_active.cpp): an active-learning study (active/active_study.h) of
    // one acquisition function and one seed per run; labels to reach an accuracy per level
    MnistActive,
};

// What a check's figure is a figure of.
enum class FigureOf {
    Run,    // each run's: ours is the mean ± standard error over the level's runs
    Level,  // the level's runs together (ReproductionResult::levelFigures): one number, no se
};

// A claim's test of a figure in one run.
enum class ClaimTest { AtLeast, AtMost };

// Another published column of the same table, shown beside the paper's number without a
// verdict ("MC dropout" beside Deep Ensembles' own column): value and spread as the row judges
// them, ASCII '-'.
struct Published {
    std::string label;  // "MC dropout"
    std::string printedValue;
    std::string printedSpread;  // empty: printed without a spread (shown as the value alone)
    std::string printedAs;      // what the source prints when it is another quantity, or empty
    std::string source;
};

// One judged figure of one level: what the paper prints and how ours is set beside it.
struct Check {
    std::string level;   // "concrete", "ensemble"; the figure's level in the runs
    std::string figure;  // the run figure it reads: "rmse", "nll", "band_ratio", ...
    FigureOf of = FigureOf::Run;
    VerdictKind kind = VerdictKind::Measurement;
    // numeric: the paper's number and spread as printed ("6.03", "0.58"; ASCII '-'). A band or
    // a measurement may carry the paper's number too ("145"): shown, not judged.
    std::string printedValue;
    std::string printedSpread;
    // band: the printed range.
    double low = 0.0;
    double high = 0.0;
    // claim: what it says, and its test: figure >= (AtLeast) or <= (AtMost) threshold in every
    // run of the level.
    std::string claim;
    ClaimTest test = ClaimTest::AtLeast;
    double threshold = 0.0;
    // claim against another level: the test is ours (test) factor x the figure of level
    // `versus` (judgeAgainst), not a threshold; `threshold` is unused then.
    std::string versus;
    double factor = 1.0;
    // Where the number or the finding is printed ("Lakshminarayanan et al. 2017, Table 1");
    // empty only for a measurement of ours alone.
    std::string source;
    // numeric: what the source prints when the value judged is derived from it (a test
    // log-likelihood "-3.04 ± 0.02" judged as the NLL "3.04"), or empty.
    std::string printedAs;
    // Other published columns of the same table, beside the paper's (report, table, figure).
    std::vector<Published> beside;
};

struct Reproduction {
    std::string id;     // "deep-ensembles-uci"
    std::string title;  // one line for people
    std::string paper;  // authors, year, title
    std::string cite;   // "Lakshminarayanan et al. 2017": the paper in one short column
    std::string where;  // "Table 1", "Figure 1"
    std::string runs;   // what it runs, for --list and the report (data, model, method, budget)
    RunnerKind runner = RunnerKind::UciRegression;
    // "split" or "seed": what the count counts (--splits or --seeds).
    std::string unit;
    std::vector<std::string> levels;  // in the paper's order
    // Per level: the runs the paper's protocol makes, and those of --quick.
    std::vector<int> counts;
    std::vector<int> quickCounts;
    std::string quickCuts;  // what --quick leaves out, in words
    // The measured cost of the whole row on two cores, in seconds (full and --quick), and the
    // machine it was measured on; 0: not measured.
    double costSeconds = 0.0;
    double quickCostSeconds = 0.0;
    std::string costMeasuredOn;
    std::vector<Check> checks;
    // The bins of every ECE the row measures (0: metrics' kCalibrationBins, 15); a paper that
    // prints an ECE of 10 bins is measured with 10.
    int eceBins = 0;
    // Every deviation from the paper's protocol this row knowingly makes, in words.
    std::vector<std::string> deviations;
    // Merged (RFC 7396) over every run's config before --set: a row that reuses a runner with
    // another method (mc-dropout-uci: the UCI runner under mc_dropout); per level under the
    // level's name, for every level under "". Null: none.
    nlohmann::json configPatch;
};

// Every registered reproduction, in the order --list shows them. Ids are unique.
const std::vector<Reproduction>& reproductions();
// The row of `id`, or null.
const Reproduction* findReproduction(const std::string& id);
// Whether the row's data are on this machine (generated data always are); `why` says what is
// missing.
bool dataPresent(const Reproduction& r, std::string* why = nullptr);

// --- aggregation and verdicts ---------------------------------------------------------------

struct Aggregate {
    int n = 0;
    double mean = 0.0;
    double se = 0.0;  // sample standard deviation / sqrt(n); NaN for n < 2
    // A level figure (FigureOf::Level): `mean` is the one number read off the n runs together,
    // se is NaN (there is no spread over runs to give).
    bool level = false;
    // Not reached within the runs' budget (labels to reach an accuracy the curve never
    // reaches): mean is +inf, and the figure is known only to exceed `beyond` (the budget);
    // reported as "> beyond". NaN otherwise.
    double beyond = std::numeric_limits<double>::quiet_NaN();
};
// Mean and standard error of `values` (NaN values make the mean NaN: a diverged run counts).
Aggregate aggregate(const std::vector<double>& values);

// Half of the last printed digit of `printed` ("0.00" -> 0.005, "3" -> 0.5).
double halfLastDigit(const std::string& printed);
// The printed text as a number. Throws std::invalid_argument for anything else.
double printedNumber(const std::string& printed);
// The printed number of the opposite sign, its digits kept ("-3.04" -> "3.04", "0.95" ->
// "-0.95"; zero stays as printed): a test log-likelihood as the NLL it is the negative of.
// Throws std::invalid_argument for text printedNumber refuses.
std::string negatedPrinted(const std::string& printed);

struct Judgement {
    Verdict verdict = Verdict::None;
    double paper = 0.0;       // numeric: the printed value
    double paperSe = 0.0;     // numeric: the printed spread floored at half its last digit
    double tolerance = 0.0;   // numeric: 2 sqrt(paperSe^2 + se_ours^2)
    double difference = 0.0;  // numeric: ours - paper
    int held = 0;             // claim: the runs in which it held
    std::string why;          // one line
};
// se_ours NaN (one run) counts as 0.
Judgement judgeNumeric(const std::string& printedValue, const std::string& printedSpread,
                       const Aggregate& ours);
Judgement judgeBand(double low, double high, const Aggregate& ours);
// Holds when every one of `values` passes the test (and there is at least one).
Judgement judgeClaim(ClaimTest test, double threshold, const std::vector<double>& values);
// A claim against another level: ours (test) factor x other, each side an interval (a finite
// mean is itself; a figure not reached within the budget is (beyond, inf)). Holds when it holds
// for every value in the intervals (AtMost: ours' highest <= factor x other's lowest); fails
// otherwise, the reason saying whether it is refuted or only undetermined by the budget. Not
// finite and not "beyond": fails.
Judgement judgeAgainst(ClaimTest test, double factor, const Aggregate& ours,
                       const Aggregate& other);

// --- running ---------------------------------------------------------------------------------

struct ReproduceOptions {
    int count = 0;                       // > 0: runs per level instead of the row's counts
    bool quick = false;                  // the row's quick counts (count still wins)
    std::vector<std::string> levels;     // empty: every level
    std::vector<std::string> overrides;  // --set key=value, applied over every run's config
};

// One run of a level: its config is complete, so `ensemble-cli train --config` redoes it.
struct PlannedRun {
    std::string level;
    int index = 0;  // the split's or seed's number, 0..count-1
    nlohmann::json config;
    // A timing run trains this config too and compares (SpiralsTiming: K = 100).
    nlohmann::json otherConfig;
};

// Every run of `r` under `options`, level by level. Throws ConfigError for a level the row
// does not have and for an override that does not parse.
std::vector<PlannedRun> planRuns(const Reproduction& r, const ReproduceOptions& options);

struct RunOutcome {
    std::string level;
    int index = 0;
    uint64_t seed = 0;
    double seconds = 0.0;
    std::map<std::string, double> figures;
    // Per-round series of the run by name, in round order, which the level figures read over
    // the level's runs (MnistActive: "labels", "accuracy", "nll", "ece" of every round).
    std::map<std::string, std::vector<double>> series;
    // CSV lines (no header) by file name: the curves a figure draws.
    std::map<std::string, std::vector<std::string>> csvLines;
};

// One line of the ours-against-paper table.
struct ResultRow {
    const Check* check = nullptr;
    Aggregate ours;
    Judgement judgement;
};

struct ReproductionResult {
    const Reproduction* reproduction = nullptr;
    ReproduceOptions options;
    std::vector<PlannedRun> plan;
    std::vector<RunOutcome> outcomes;  // in the plan's order, as far as it ran
    bool complete = false;             // every planned run finished
    std::string backend;               // the first run's backend, as it named itself
    double seconds = 0.0;
    std::vector<ResultRow> rows;  // judge() fills them
    // Per level, its level figures (FigureOf::Level) over the runs that finished; judge() fills
    // them (MnistActive: "labels_to_90", "labels_to_95" off the mean curve over the seeds).
    std::map<std::string, std::map<std::string, Aggregate>> levelFigures;
};

struct ReproduceProgress {
    std::size_t run = 0;  // 0-based, of plan.size()
    std::size_t runs = 0;
    const PlannedRun* planned = nullptr;
    int64_t step = 0;
    int64_t steps = 0;
    double elapsed = 0.0;
};

struct ReproduceHooks {
    std::function<void(const ReproduceProgress&)> progress;   // about every second
    std::function<void(const ReproductionResult&)> afterRun;  // judged, after every run
    const std::atomic<bool>* cancel = nullptr;
};

// Runs the plan in order, judging after each run; stops between steps when `cancel` is set
// (complete stays false, the rows judge the runs that finished).
ReproductionResult runReproduction(const Reproduction& r, const ReproduceOptions& options,
                                   const ReproduceHooks& hooks);
// Fills result.levelFigures and result.rows from result.outcomes: a row per check of a level
// with finished runs (a claim against another level: when both have finished runs).
void judge(ReproductionResult& result);
// The level figures of one level's runs (`runs`, all of one level) for the row's runner; empty
// for a runner without any.
std::map<std::string, Aggregate> levelFiguresOf(const Reproduction& r,
                                                const std::vector<const RunOutcome*>& runs);

// --- output ----------------------------------------------------------------------------------

// {"id", "title", "paper", "where", "runs", "unit", "count", "quick", "complete", "backend",
//  "cpu", "seconds", "deviations", "rows": [{"level", "figure", "kind", "ours": {"n", "mean",
//  "se", "of", "not_reached_within"}, "paper": {"printed", "value", "spread", "low", "high",
//  "claim", "versus", "factor", "source", "printed_as"}, "beside": [{"label", "printed",
//  "value", "spread", "printed_as", "source"}], "verdict", "tolerance", "difference", "why"}],
//  "runs": [{"level", "index", "seed", "seconds", "figures"}], "summary": {"pass", "fail",
//  "measured"}}; NaN and infinity are null. "printed_as" and "beside" only where the check has
//  them; "of" ("run" or "level": a level figure has no se) always; "not_reached_within" (the
//  budget a level figure was not reached in, its mean null) only then; "versus" and "factor"
//  for a claim against another level.
nlohmann::json reportJson(const ReproductionResult& result);
// The CSV files of a result by name: runs.csv (every run's figures), table.csv (the rows) and
// the curves the runs drew.
std::map<std::string, std::string> resultCsvs(const ReproductionResult& result);
// The ours-against-paper table as text, one line per row.
std::string resultTable(const ReproductionResult& result);
// The runs store's figures: "<level>.<figure>" (ours' mean), "pass", "fail".
std::map<std::string, double> resultFigures(const ReproductionResult& result);
// A row's measured cost in words, as --list and the app's Reproduce view show it: "9.5 min",
// "40 s", "2.8 s", "not measured" (0).
std::string costText(double seconds);

}  // namespace ensemble::reproduce

namespace ensemble {
template <>
struct EnumNames<reproduce::VerdictKind> {
    static constexpr EnumName<reproduce::VerdictKind> table[] = {
        {reproduce::VerdictKind::Numeric, "numeric", "within 2 combined standard errors"},
        {reproduce::VerdictKind::Band, "band", "inside the printed range"},
        {reproduce::VerdictKind::Claim, "claim", "the finding holds in every run"},
        {reproduce::VerdictKind::Measurement, "measurement", "measured, no verdict"},
    };
};
}  // namespace ensemble
