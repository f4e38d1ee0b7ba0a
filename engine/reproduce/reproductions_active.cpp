// The active-learning row of the registry (issue 50): Gal, Islam & Ghahramani 2017, Table 1,
// on the mnist-active-cnn preset's study, and the config of each of its runs (activeRunConfig).
// The full and --quick label budgets are written once here, so the row's words and its configs
// agree.
#include <string>
#include <vector>

#include "config/config.h"
#include "reproduce/runner_internal.h"

namespace ensemble::reproduce {
namespace active_rows {  // apart from the other rows' helpers in the unity build
namespace {

using nlohmann::json;

constexpr const char* kActivePreset = "mnist-active-cnn";
// The labels a study ends at: the paper's 1,000, --quick's 250.
constexpr int kActiveLabels = 1000;
constexpr int kActiveQuickLabels = 250;

constexpr const char* kGalPaper =
    "Gal, Islam, Ghahramani 2017, \"Deep Bayesian Active Learning with Image Data\" (ICML)";
constexpr const char* kGalSource =
    "Gal et al. 2017, Table 1 (MNIST: labels needed to reach 10 % and 5 % test error, 20 "
    "balanced initial labels, 10 acquired a round, the mean of 3 repetitions)";
constexpr const char* kKirschSource =
    "Kirsch, van Amersfoort, Gal 2019, \"BatchBALD\" (NeurIPS), MNIST: labels to reach 90 % and "
    "95 % accuracy, median and quartiles over 6 runs, as a secondary summary quotes them; "
    "another network and protocol, so context, not a target";

// Table 1's four functions as our acquisition names, with its labels to 10 % and 5 % error.
struct Table1Row {
    const char* level;
    const char* paperName;
    const char* to90;
    const char* to95;
};
constexpr Table1Row kTable1[] = {{"bald", "BALD", "145", "335"},
                                 {"variation_ratios", "Var Ratios", "120", "295"},
                                 {"entropy", "Max Entropy", "165", "355"},
                                 {"random", "Random", "255", "835"}};

// The bald band: within 1.5 times the paper's 145 either way.
constexpr double kBaldTo90 = 145.0;
constexpr double kBandFactor = 1.5;
// bald and variation_ratios need at most this share of random's labels to 90 %.
constexpr double kVersusRandom = 0.7;

Check labelsCheck(const std::string& level, const char* figure, const char* printed) {
    Check c;
    c.level = level;
    c.figure = figure;
    c.of = FigureOf::Level;
    c.kind = VerdictKind::Measurement;
    c.printedValue = printed;
    c.source = kGalSource;
    return c;
}

Published kirsch(const char* median, const char* quartiles) {
    Published p;
    p.label = "Kirsch et al. 2019";
    p.printedValue = median;
    p.printedAs = std::string("median of 6 runs; quartiles ") + quartiles;
    p.source = kKirschSource;
    return p;
}

Check versusCheck(const std::string& level, const std::string& versus, double factor,
                  const std::string& claim, const char* source) {
    Check c;
    c.level = level;
    c.figure = "labels_to_90";
    c.of = FigureOf::Level;
    c.kind = VerdictKind::Claim;
    c.claim = claim;
    c.test = ClaimTest::AtMost;
    c.versus = versus;
    c.factor = factor;
    c.source = source;
    return c;
}

}  // namespace
}  // namespace active_rows

nlohmann::json activeRunConfig(const std::string& level, int index, bool quick) {
    using namespace active_rows;
    json c = loadConfigJson(kActivePreset);
    const int initial = c["active"]["initial"].get<int>();
    const int perRound = c["active"]["per_round"].get<int>();
    const int labels = quick ? kActiveQuickLabels : kActiveLabels;
    c["active"]["acquisition"] = level;
    c["active"]["rounds"] = (labels - initial + perRound - 1) / perRound;
    // Seeds preset, preset + 1, ...: `ensemble-cli active --seeds 3`'s seeds.
    c["ensemble"]["seed"] = c["ensemble"]["seed"].get<uint64_t>() + static_cast<uint64_t>(index);
    c["backend"] = {{"kind", "cpu"}};
    return c;
}

Reproduction galActiveLearning() {
    using namespace active_rows;
    Reproduction r;
    r.id = "gal-2017-active";
    r.title = "Active learning on MNIST: labels needed to reach 90 % and 95 % test accuracy";
    r.paper = kGalPaper;
    r.cite = "Gal et al. 2017";
    r.where = "Table 1";
    r.runs =
        "the mnist-active-cnn preset's study (ensemble-cli active's loop): MNIST's 60,000 "
        "training images as the pool, the 10,000 test images; K = 5 CNNs (the authors' code's "
        "network), 20 balanced initial labels, 10 acquired a round from a random 2,000 of the "
        "pool, retrained from scratch (100 steps of 128) to 1,000 labels; per acquisition "
        "function, labels to reach 90 % and 95 % on the mean curve over seeds 1-3; backend cpu";
    r.runner = RunnerKind::MnistActive;
    r.unit = "seed";
    r.levels = {"bald", "variation_ratios", "entropy", "random", "batchbald"};
    r.counts = {3, 3, 3, 3, 3};
    r.quickCounts = {1, 0, 0, 1, 0};
    r.quickCuts =
        "bald and random only, seed 1 only, and the study stops at 250 labels instead of 1,000 "
        "(23 rounds instead of 98): a labels-to-reach past 250 reads \"> 250\"";
    // The whole row is 15 studies of 99 rounds, --quick two of 24. --quick was measured once, on
    // a machine shared with builds; the whole row was not run, so both figures stay 0 ("not
    // measured") and the text says what was measured (docs/active.md).
    r.costSeconds = 0.0;
    r.quickCostSeconds = 0.0;
    r.costMeasuredOn =
        "not measured for the whole row; --quick took 1,897 s (3,406 CPU-seconds) on "
        "GenuineIntel family 6 model 106, 2 cores shared with builds, about 40 s a round: the 15 "
        "studies of 99 rounds would be about 16 hours";
    for (const Table1Row& t : kTable1) {
        Check to90 = labelsCheck(t.level, "labels_to_90", t.to90);
        Check to95 = labelsCheck(t.level, "labels_to_95", t.to95);
        if (std::string(t.level) == "bald") {
            to90.kind = VerdictKind::Band;
            to90.low = kBaldTo90 / kBandFactor;
            to90.high = kBaldTo90 * kBandFactor;
            to90.beside = {kirsch("120", "120 / 170")};
            to95.beside = {kirsch("250", "250 / > 300")};
        }
        to90.printedAs = std::string(t.paperName) + ", labels to 10 % test error";
        to95.printedAs = std::string(t.paperName) + ", labels to 5 % test error";
        r.checks.push_back(to90);
        r.checks.push_back(to95);
        Check finalCheck;
        finalCheck.level = t.level;
        finalCheck.figure = "final_accuracy_pct";
        finalCheck.kind = VerdictKind::Measurement;
        r.checks.push_back(finalCheck);
    }
    for (const char* level : {"bald", "variation_ratios"}) {
        r.checks.push_back(versusCheck(
            level, "random", kVersusRandom,
            std::string(level) + " needs at most 0.7 of random's labels to reach 90 % (Table 1: "
                                 "BALD 145 and Var Ratios 120 against Random's 255)",
            kGalSource));
    }
    Check batch90;
    batch90.level = "batchbald";
    batch90.figure = "labels_to_90";
    batch90.of = FigureOf::Level;
    batch90.kind = VerdictKind::Measurement;
    batch90.beside = {kirsch("90", "70 / 110")};
    Check batch95 = batch90;
    batch95.figure = "labels_to_95";
    batch95.beside = {kirsch("200", "190 / 230")};
    r.checks.push_back(batch90);
    r.checks.push_back(batch95);
    Check batchFinal;
    batchFinal.level = "batchbald";
    batchFinal.figure = "final_accuracy_pct";
    r.checks.push_back(batchFinal);
    r.checks.push_back(versusCheck(
        "batchbald", "bald", 1.0,
        "batchbald needs at most bald's labels to reach 90 % (Kirsch et al. 2019: 90 against "
        "120, medians)",
        kKirschSource));
    r.deviations = {
        "the network is the authors' code's (Dropout_Bald_Q10_N1000_Paper.py: conv 32 3x3 "
        "twice, max-pool 5, dropout 0.25, dense 256, dropout 0.5), not the paper's text's "
        "(4x4 kernels, 2x2 pooling, dense 128)",
        "the model is an ensemble of K = 5 such networks trained independently (dropout in "
        "training only), not one MC-dropout network with T = 100 stochastic passes: the "
        "acquisition functions read the 5 members' predictions; each member predicts by one "
        "deterministic, weight-scaled pass, and the test accuracy is the ensemble's (the "
        "members' probabilities averaged), not one network's",
        "training: a fixed 100 steps of batch 128 a round, not the code's 5 epochs (ceil(N / "
        "128) x 5 steps: 5 to 40), which leave this network untrained (test NLL at ln 10 "
        "through 250 labels, docs/active.md)",
        "each round scores a random 2,000 of the pool, as the authors' code does, not the whole "
        "pool; the labels to reach an accuracy are read off the mean curve over the seeds, a "
        "round (10 labels) apart, as ensemble-cli active reads them; a level figure read off "
        "the mean curve has no standard error",
        "batchbald is ours beside the paper's four (Kirsch et al. 2019, on another network and "
        "protocol): its published medians are shown beside ours as context, never judged"};
    return r;
}

}  // namespace ensemble::reproduce
