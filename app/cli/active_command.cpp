// ensemble-cli active: the pool-based active-learning loop (engine/active/active_learning.h) for
// each acquisition function and seed, side by side round by round: a line per round on stdout,
// progress on stderr, the report as JSON (rewritten after every round, so an interrupted or
// crashed run keeps what it finished) and the curves and acquired rows as CSV.
#include <unistd.h>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "active/active_learning.h"
#include "active/active_study.h"
#include "cli/cli_common.h"
#include "cli/command_run.h"
#include "cli/commands.h"
#include "cli/interrupt.h"
#include "core/errors.h"
#include "data/dataset.h"
#include "metrics/report.h"
#include "sys/atomic_file.h"

namespace ensemble::cli {
namespace {

using Clock = std::chrono::steady_clock;
using nlohmann::json;

// The accuracies "labels_to_reach" reports, as the report's keys spell them.
constexpr std::pair<double, const char*> kReachTargets[] = {
    {0.80, "0.8"}, {0.90, "0.9"}, {0.95, "0.95"}};

// One acquisition function's learners, one per seed.
struct AcquisitionRuns {
    Acquisition acquisition;
    std::vector<std::unique_ptr<ActiveLearner>> seeds;
};

using CurvePoint = ActiveCurvePoint;

// The rounds every seed has finished, the mean over the seeds (active_study.h).
std::vector<CurvePoint> meanCurve(const AcquisitionRuns& runs) {
    std::vector<const std::vector<ActiveRound>*> seeds;
    for (const auto& learner : runs.seeds) {
        seeds.push_back(&learner->rounds());
    }
    return activeMeanCurve(seeds);
}

// The labels of the first point of the mean curve at or above `accuracy`; null when none is.
json labelsToReachJson(const std::vector<CurvePoint>& curve, double accuracy) {
    const int64_t labels = labelsToReachMean(curve, accuracy);
    return labels < 0 ? json(nullptr) : json(labels);
}

json reportJson(const std::vector<AcquisitionRuns>& runs) {
    json acquisitions = json::object();
    for (const AcquisitionRuns& a : runs) {
        json seeds = json::array();
        for (const auto& learner : a.seeds) {
            json state = learner->toJson();
            state.erase("pending");  // rows acquired for a round the interruption cut short
            seeds.push_back(std::move(state));
        }
        const std::vector<CurvePoint> curve = meanCurve(a);
        json reach = json::object();
        for (const auto& [accuracy, key] : kReachTargets) {
            reach[key] = labelsToReachJson(curve, accuracy);
        }
        acquisitions[toString(a.acquisition)] = {{"seeds", std::move(seeds)},
                                                 {"labels_to_reach", std::move(reach)}};
    }
    return {{"acquisitions", std::move(acquisitions)}};
}

std::string number(double v) {
    if (!std::isfinite(v)) {
        return "";
    }
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.6g", v);
    return buf;
}

// active_curves.csv: one row per acquisition and round, the means and standard deviations over
// the seeds.
std::string curvesCsv(const std::vector<AcquisitionRuns>& runs) {
    std::ostringstream os;
    os << "acquisition,labels,seeds,accuracy_mean,accuracy_std,nll_mean,nll_std,ece_mean,ece_std\n";
    for (const AcquisitionRuns& a : runs) {
        for (const CurvePoint& p : meanCurve(a)) {
            os << toString(a.acquisition) << ',' << p.labels << ',' << a.seeds.size() << ','
               << number(p.accuracy.mean) << ',' << number(p.accuracy.std) << ','
               << number(p.nll.mean) << ',' << number(p.nll.std) << ',' << number(p.ece.mean) << ','
               << number(p.ece.std) << '\n';
        }
    }
    return os.str();
}

// active_acquired.csv: every labelled row, the round that trained on it first (0: the initial
// set), the order it was picked in within that round, and its score (empty for the initial set).
std::string acquiredCsv(const std::vector<AcquisitionRuns>& runs) {
    std::ostringstream os;
    os << "acquisition,seed,round,labels,pick,row,score\n";
    for (const AcquisitionRuns& a : runs) {
        for (const auto& learner : a.seeds) {
            const std::vector<ActiveRound>& rounds = learner->rounds();
            if (rounds.empty()) {
                continue;
            }
            const std::vector<int64_t>& initial = learner->initial();
            for (std::size_t i = 0; i < initial.size(); ++i) {
                os << toString(a.acquisition) << ',' << learner->seed() << ",0," << rounds[0].labels
                   << ',' << i << ',' << initial[i] << ",\n";
            }
            for (std::size_t r = 1; r < rounds.size(); ++r) {
                const ActiveRound& before = rounds[r - 1];
                for (std::size_t i = 0; i < before.acquired.size(); ++i) {
                    os << toString(a.acquisition) << ',' << learner->seed() << ',' << r << ','
                       << rounds[r].labels << ',' << i << ',' << before.acquired[i] << ','
                       << number(before.acquiredScores[i]) << '\n';
                }
            }
        }
    }
    return os.str();
}

// active_classes.csv: the labelled set's rows per true class at every round of every run (the
// set the round trained on), one column per class.
std::string classesCsv(const std::vector<AcquisitionRuns>& runs, int classes) {
    std::ostringstream os;
    os << "acquisition,seed,round,labels";
    for (int c = 0; c < classes; ++c) {
        os << ",class_" << c;
    }
    os << '\n';
    for (const AcquisitionRuns& a : runs) {
        for (const auto& learner : a.seeds) {
            const std::vector<ActiveRound>& rounds = learner->rounds();
            for (std::size_t r = 0; r < rounds.size(); ++r) {
                os << toString(a.acquisition) << ',' << learner->seed() << ',' << r << ','
                   << rounds[r].labels;
                for (int64_t n : rounds[r].classCounts) {
                    os << ',' << n;
                }
                os << '\n';
            }
        }
    }
    return os.str();
}

std::vector<Acquisition> parseAcquisitions(const std::string& text) {
    std::vector<Acquisition> out;
    std::size_t start = 0;
    while (start <= text.size()) {
        const std::size_t comma = std::min(text.find(',', start), text.size());
        const std::string name = text.substr(start, comma - start);
        Acquisition a{};
        if (!enumFromName(name, a)) {
            throw ConfigError("--acquisition: '" + name + "' is not an acquisition function (" +
                              namesText<Acquisition>() + "; a comma-separated list)");
        }
        if (std::find(out.begin(), out.end(), a) != out.end()) {
            throw ConfigError("--acquisition: '" + name + "' is listed twice");
        }
        out.push_back(a);
        start = comma + 1;
    }
    return out;
}

std::string accuracyCell(const MeanStd& m, bool withStd) {
    char buf[48];
    if (!std::isfinite(m.mean)) {
        std::snprintf(buf, sizeof buf, "%*s", withStd ? 17 : 8, "-");
    } else if (withStd) {
        std::snprintf(buf, sizeof buf, "  %.4f ± %.4f", m.mean, m.std);
    } else {
        std::snprintf(buf, sizeof buf, "  %.4f", m.mean);
    }
    return buf;
}

// The runs store's figures of the loop: per acquisition function, the mean curve's last test
// accuracy and its labels to reach each target, "<acquisition>.final_accuracy",
// "<acquisition>.labels_to_<target>".
std::map<std::string, double> activeFigures(const std::vector<AcquisitionRuns>& runs) {
    std::map<std::string, double> figures;
    for (const AcquisitionRuns& run : runs) {
        const std::string name = toString(run.acquisition);
        const std::vector<CurvePoint> curve = meanCurve(run);
        if (curve.empty()) {
            continue;
        }
        if (std::isfinite(curve.back().accuracy.mean)) {
            figures[name + ".final_accuracy"] = curve.back().accuracy.mean;
        }
        for (const auto& [accuracy, key] : kReachTargets) {
            const json labels = labelsToReachJson(curve, accuracy);
            if (!labels.is_null()) {
                figures[name + ".labels_to_" + key] = labels.get<double>();
            }
        }
    }
    return figures;
}

}  // namespace

ExitCode commandActive(const CliArgs& args) {
    args.require("--config");
    if (args.has("--rounds") && args.has("--labels")) {
        throw ConfigError(
            "--rounds and --labels: give one of them (rounds after the initial one, "
            "or the labels to reach), not both");
    }
    const std::vector<Acquisition> acquisitions =
        parseAcquisitions(args.get("--acquisition", "bald,entropy,random"));
    const int64_t seedCount = parseCount(args, "--seeds", 3, 1);
    const ExperimentConfig config = configFrom(args);
    if (config.dataset.regression()) {
        throw ConfigError("dataset.kind", "active learning needs classification data; " +
                                              std::string(toString(config.dataset.kind)) +
                                              " is a regression dataset");
    }
    const ActiveConfig& active = config.active;
    int64_t rounds = parseCount(args, "--rounds", active.rounds, 0);
    if (args.has("--labels")) {
        const int64_t labels = parseCount(args, "--labels", 0, 1);
        if (labels < active.initial) {
            throw ConfigError(
                "--labels: expected at least active.initial = " + std::to_string(active.initial) +
                " labels, got " + std::to_string(labels));
        }
        rounds = (labels - active.initial + active.perRound - 1) / active.perRound;
    }

    CommandRun record(args, "active", config.json);
    const auto data = std::make_shared<const DataSplit>(loadDataSplit(config.dataset));
    std::vector<AcquisitionRuns> runs;
    for (Acquisition a : acquisitions) {
        AcquisitionRuns run{a, {}};
        for (int64_t s = 0; s < seedCount; ++s) {
            run.seeds.push_back(
                std::make_unique<ActiveLearner>(activeSeedConfig(config, s), data, a));
        }
        runs.push_back(std::move(run));
    }
    bool cut = false;
    const int64_t possibleRounds = activeStudyRounds(active, data->train.rows, rounds, &cut);
    if (cut) {
        std::fprintf(stderr,
                     "ensemble-cli active: the pool of %lld rows lasts %lld rounds of %d; "
                     "stopping there\n",
                     static_cast<long long>(data->train.rows - active.initial),
                     static_cast<long long>(possibleRounds), active.perRound);
    }
    rounds = possibleRounds;

    std::string names;
    for (Acquisition a : acquisitions) {
        names += (names.empty() ? "" : ", ") + std::string(toString(a));
    }
    // active.epochs: the round's steps grow with the labels (ceil(N / batch) x epochs).
    const std::string perRound = active.epochs > 0
                                     ? std::to_string(active.epochs) + " epochs of batch " +
                                           std::to_string(config.training.batchSize) + " a round"
                                     : std::to_string(active.steps) + " steps a round";
    std::printf(
        "active learning on %s: %lld train rows (the pool), %lld test rows; K = %d, %d initial "
        "labels + %lld rounds of %d, %s (%s); seeds %llu..%llu; %s\n\n",
        data->name.c_str(), static_cast<long long>(data->train.rows),
        static_cast<long long>(data->test.rows), config.ensemble.members, active.initial,
        static_cast<long long>(rounds), active.perRound, perRound.c_str(), toString(active.retrain),
        static_cast<unsigned long long>(config.ensemble.seed),
        static_cast<unsigned long long>(config.ensemble.seed + static_cast<uint64_t>(seedCount) -
                                        1),
        names.c_str());
    const bool withStd = seedCount > 1;
    std::printf("%6s", "labels");
    for (Acquisition a : acquisitions) {
        std::printf("%*s", withStd ? 17 : 8, toString(a));
    }
    std::printf("   (test accuracy%s)\n", withStd ? ", mean ± std over the seeds" : "");
    std::fflush(stdout);

    const auto writeOutputs = [&] {
        if (args.has("--report")) {
            writeFileAtomic(args.get("--report"), reportJson(runs).dump(2) + "\n");
        }
        if (args.has("--csv")) {
            const std::filesystem::path dir = createCsvFolder(args.get("--csv"));
            writeFileAtomic((dir / "active_curves.csv").string(), curvesCsv(runs));
            writeFileAtomic((dir / "active_acquired.csv").string(), acquiredCsv(runs));
            writeFileAtomic((dir / "active_classes.csv").string(), classesCsv(runs, data->classes));
        }
    };

    const StopOnInterrupt stopOnInterrupt;
    const bool tty = isatty(fileno(stderr)) != 0;
    const auto start = Clock::now();
    auto lastLine = start;
    bool progressShown = false;
    bool noticeShown = false;
    bool complete = true;
    for (int64_t r = 0; r <= rounds && complete; ++r) {
        for (AcquisitionRuns& run : runs) {
            for (std::size_t s = 0; s < run.seeds.size() && complete; ++s) {
                ActiveLearner& learner = *run.seeds[s];
                const auto onStep = [&](int64_t done, int64_t total) {
                    const auto now = Clock::now();
                    const double elapsed = std::chrono::duration<double>(now - start).count();
                    if (elapsed < 1.0 ||
                        std::chrono::duration<double>(now - lastLine).count() < 1.0) {
                        return;
                    }
                    lastLine = now;
                    progressShown = true;
                    std::fprintf(
                        stderr, "%sround %lld/%lld, %s seed %llu: step %lld/%lld, %.0f s%s",
                        tty ? "\r" : "", static_cast<long long>(r), static_cast<long long>(rounds),
                        toString(run.acquisition), static_cast<unsigned long long>(learner.seed()),
                        static_cast<long long>(done), static_cast<long long>(total), elapsed,
                        tty ? "   " : "\n");
                };
                complete = activeStudyRound(learner, r, onStep, &stopRequested());
                if (!noticeShown && !learner.backendNotice().empty()) {
                    noticeShown = true;
                    std::fprintf(stderr, "%s\n", learner.backendNotice().c_str());
                }
            }
        }
        if (!complete) {
            break;
        }
        if (progressShown && tty) {
            std::fprintf(stderr, "\r%60s\r", "");
        }
        std::printf("%6lld",
                    static_cast<long long>(runs.front().seeds.front()->rounds().back().labels));
        for (const AcquisitionRuns& run : runs) {
            std::printf("%s", accuracyCell(meanCurve(run).back().accuracy, withStd).c_str());
        }
        std::printf("\n");
        std::fflush(stdout);
        writeOutputs();
    }
    const double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
    if (progressShown && tty) {
        std::fprintf(stderr, "\n");
    }

    std::printf("\nlabels to reach a test accuracy (the mean curve over the seeds):\n");
    std::printf("%-18s", "");
    for (const auto& target : kReachTargets) {
        std::printf("%8.0f%%", target.first * 100.0);
    }
    std::printf("\n");
    for (const AcquisitionRuns& run : runs) {
        const std::vector<CurvePoint> curve = meanCurve(run);
        std::printf("%-18s", toString(run.acquisition));
        for (const auto& target : kReachTargets) {
            const json labels = labelsToReachJson(curve, target.first);
            if (labels.is_null()) {
                std::printf("%9s", "-");
            } else {
                std::printf("%9lld", static_cast<long long>(labels.get<int64_t>()));
            }
        }
        std::printf("\n");
    }
    // The cold-start effect at a glance: the rarest and the commonest class of the last round's
    // labelled set, over the seeds.
    std::printf("\nthe last round's labelled set, rows of the rarest and the commonest class:\n");
    for (const AcquisitionRuns& run : runs) {
        int64_t fewest = std::numeric_limits<int64_t>::max();
        int64_t most = 0;
        for (const auto& learner : run.seeds) {
            if (!learner->rounds().empty()) {
                const std::vector<int64_t>& counts = learner->rounds().back().classCounts;
                fewest = std::min(fewest, *std::min_element(counts.begin(), counts.end()));
                most = std::max(most, *std::max_element(counts.begin(), counts.end()));
            }
        }
        if (most > 0) {
            std::printf("%-18s%9lld%9lld\n", toString(run.acquisition),
                        static_cast<long long>(fewest), static_cast<long long>(most));
        }
    }
    writeOutputs();
    std::fprintf(stderr, "%zu acquisition%s x %lld seed%s in %.1f s\n", runs.size(),
                 runs.size() == 1 ? "" : "s", static_cast<long long>(seedCount),
                 seedCount == 1 ? "" : "s", elapsed);
    if (args.has("--report")) {
        std::fprintf(stderr, "wrote the report to %s\n", args.get("--report").c_str());
        record.addFile(args.get("--report"), "report");
    }
    if (args.has("--csv")) {
        std::fprintf(stderr,
                     "wrote active_curves.csv, active_acquired.csv and active_classes.csv to %s\n",
                     args.get("--csv").c_str());
        for (const char* name :
             {"active_curves.csv", "active_acquired.csv", "active_classes.csv"}) {
            record.addFile((std::filesystem::path(args.get("--csv")) / name).string(), "csv");
        }
    }
    if (!complete) {
        std::fprintf(stderr, "interrupted: the report holds the rounds every run finished\n");
    }
    const ExitCode code = complete ? ExitCode::Ok : interruptExitCode();
    record.finish(code, activeFigures(runs));
    return code;
}

}  // namespace ensemble::cli
