#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <numeric>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "backend/registry.h"
#include "cli/cli_args.h"
#include "cli/interrupt.h"
#include "core/errors.h"
#include "data/dataset.h"
#include "io/atomic_file.h"
#include "io/checkpoint.h"
#include "io/export_formats.h"
#include "io/model_io.h"
#ifdef ENSEMBLE_HAVE_MPI
#include "dist/mpi_collective.h"
#endif
#include "metrics/regression.h"
#include "train/trainer.h"
#include "train/trainer_report.h"

namespace ensemble::cli {

namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

int64_t parseCount(const CliArgs& args, const std::string& flag, int64_t fallback, int64_t lo) {
    if (!args.has(flag)) {
        return fallback;
    }
    const std::string text = args.get(flag);
    char* end = nullptr;
    const long long value = std::strtoll(text.c_str(), &end, 10);
    if (end == text.c_str() || *end != '\0' || value < lo) {
        throw ConfigError(flag + ": expected an integer >= " + std::to_string(lo) + ", got '" +
                          text + "'");
    }
    return value;
}

std::string formatRate(double perSecond) {
    char buf[32];
    if (perSecond >= 1e6) {
        std::snprintf(buf, sizeof buf, "%.2fM", perSecond / 1e6);
    } else if (perSecond >= 1e3) {
        std::snprintf(buf, sizeof buf, "%.1fk", perSecond / 1e3);
    } else {
        std::snprintf(buf, sizeof buf, "%.1f", perSecond);
    }
    return buf;
}

// Regression: loss (gaussian: the NLL, constant included; mse: the MSE) and RMSE per split, in
// raw target units.
void printRegressionSummary(const Trainer& trainer, const Evaluation& e) {
    const bool gaussian = trainer.config().model.likelihood == Likelihood::Gaussian;
    const char* loss = gaussian ? "nll" : "mse";
    std::printf("\n%-10s %10s %10s %10s %10s %8s\n", "", (std::string("train ") + loss).c_str(),
                "train rmse", (std::string("test ") + loss).c_str(), "test rmse", "lr");
    const auto& lr = trainer.config().optimizer.lr;
    const auto cell = [](double v) {
        char buf[32];
        if (std::isfinite(v)) {
            std::snprintf(buf, sizeof buf, "%10.4f", v);
        } else {
            std::snprintf(buf, sizeof buf, "%10s", "-");
        }
        return std::string(buf);
    };
    const std::size_t k = e.members.size();
    const std::vector<uint8_t> on = trainer.switchedOn();
    for (std::size_t i = 0; i < k; ++i) {
        const MemberEvaluation& m = e.members[i];
        if (i >= 8 && i + 3 < k) {
            if (i == 8) {
                std::printf("%-10s (%zu more members)\n", "...", k - 11);
            }
            continue;
        }
        if (m.diverged) {
            std::printf("member %-3zu %10s %10s %10s %10s %8.2g  (diverged: left out)\n", i, "-",
                        "-", "-", "-", lr[i]);
            continue;
        }
        std::printf("member %-3zu %s %s %s %s %8.2g%s\n", i, cell(m.train.loss).c_str(),
                    cell(m.train.rmse).c_str(), cell(m.test.loss).c_str(),
                    cell(m.test.rmse).c_str(), lr[i], on[i] ? "" : "  (switched off: left out)");
    }
    std::printf("%-10s %s %s %s %s\n", "ensemble", cell(e.ensembleTrain.loss).c_str(),
                cell(e.ensembleTrain.rmse).c_str(), cell(e.ensembleTest.loss).c_str(),
                cell(e.ensembleTest.rmse).c_str());
}

void printSummary(const Trainer& trainer, const Evaluation& e) {
    if (trainer.data().regression) {
        printRegressionSummary(trainer, e);
        return;
    }
    std::printf("\n%-10s %10s %10s %10s %10s %8s\n", "", "train loss", "train acc", "test loss",
                "test acc", "lr");
    const auto& lr = trainer.config().optimizer.lr;
    const std::size_t k = e.members.size();
    const std::vector<uint8_t> on = trainer.switchedOn();
    auto row = [&](std::size_t i) {
        const MemberEvaluation& m = e.members[i];
        if (m.diverged) {
            std::printf("member %-3zu %10s %10s %10s %10s %8.2g  (diverged: left out)\n", i, "-",
                        "-", "-", "-", lr[i]);
            return;
        }
        std::printf("member %-3zu %10.4f %10.4f %10.4f %10.4f %8.2g%s\n", i, m.train.loss,
                    m.train.accuracy, m.test.loss, m.test.accuracy, lr[i],
                    on[i] ? "" : "  (switched off: left out)");
    };
    if (k <= 16) {
        for (std::size_t i = 0; i < k; ++i) {
            row(i);
        }
    } else {
        // Long ensembles: the best and worst members by test accuracy, then the rest summarised.
        std::vector<std::size_t> order(k);
        std::iota(order.begin(), order.end(), 0);
        std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
            return e.members[a].test.accuracy > e.members[b].test.accuracy;
        });
        for (std::size_t i = 0; i < 3; ++i) {
            row(order[i]);
        }
        std::printf("%-10s (%zu more members)\n", "...", k - 6);
        for (std::size_t i = k - 3; i < k; ++i) {
            row(order[i]);
        }
    }
    double meanTest = 0.0;
    int used = 0;
    for (std::size_t i = 0; i < k; ++i) {
        if (!e.members[i].diverged && on[i]) {
            meanTest += e.members[i].test.accuracy;
            ++used;
        }
    }
    std::printf("%-10s %10.4f %10.4f %10.4f %10.4f\n", "ensemble", e.ensembleTrain.loss,
                e.ensembleTrain.accuracy, e.ensembleTest.loss, e.ensembleTest.accuracy);
    if (used > 0) {
        std::printf("mean member test accuracy %.4f; ensemble %.4f (%d of %zu members)\n",
                    meanTest / used, e.ensembleTest.accuracy, used, k);
    }
}

// THE HOOK "on interrupt, after the last finished step": Ctrl-C / SIGTERM stopped training at a
// step boundary (Trainer::run returned false) and `trainer` holds the state after step
// trainer.step(), the last finished one. Everything train writes for an interrupted run is
// written from here, complete, for that step; a checkpoint writer (`--checkpoint`, issue 24)
// is called here too, beside the export.
void onInterruptAfterLastFinishedStep(const CliArgs& args, const Trainer& trainer) {
    std::fprintf(stderr, "ensemble-cli train: interrupted by %s at step %lld of %lld%s\n",
                 signalName(interruptSignal()), static_cast<long long>(trainer.step()),
                 static_cast<long long>(trainer.totalSteps()),
                 args.has("--export") || args.has("--metrics") || args.has("--checkpoint")
                     ? "; writing what was asked for at that step"
                     : "");
}

Collective* g_world = nullptr;

// Every rank runs `setup`; when it threw on any rank, rank 0 prints each failing rank's
// message (once per distinct message, naming the ranks) and every rank returns the largest
// exit code (2 config, 3 data, 4 runtime), so a rank that cannot start never leaves the others
// waiting. Returns nothing when every rank succeeded, else this rank's exit code (rank 0: the
// largest, the others 0). In one process the exception propagates.
template <typename F>
std::optional<int> agreeOnSetup(Collective& world, const char* command, F&& setup) {
    if (!world.distributed()) {
        setup();
        return std::nullopt;
    }
    int code = 0;
    std::string message;
    try {
        setup();
    } catch (const ConfigError& e) {
        code = 2;
        message = e.what();
    } catch (const DataError& e) {
        code = 3;
        message = e.what();
    } catch (const std::exception& e) {
        code = 4;
        message = e.what();
    }
    const int worst = static_cast<int>(world.max(code));
    if (worst == 0) {
        return std::nullopt;
    }
    // Rank 0 reports and alone exits non-zero: mpirun then returns its code (a rank that fails
    // first makes mpirun stop the others, which would also report being stopped).
    const std::vector<std::string> messages = world.gatherText(message);
    if (world.root()) {
        std::vector<std::pair<std::string, std::vector<int>>> distinct;
        for (std::size_t r = 0; r < messages.size(); ++r) {
            if (messages[r].empty()) {
                continue;
            }
            auto it = std::find_if(distinct.begin(), distinct.end(),
                                   [&](const auto& d) { return d.first == messages[r]; });
            if (it == distinct.end()) {
                distinct.push_back({messages[r], {}});
                it = distinct.end() - 1;
            }
            it->second.push_back(static_cast<int>(r));
        }
        for (const auto& [text, ranks] : distinct) {
            std::string who;
            for (int r : ranks) {
                who += (who.empty() ? "" : ", ") + std::to_string(r);
            }
            std::fprintf(stderr, "ensemble-cli %s (rank%s %s of %d): %s\n", command,
                         ranks.size() > 1 ? "s" : "", who.c_str(), world.ranks(), text.c_str());
        }
    }
    world.barrier();
    return world.root() ? worst : 0;
}

// backend.mesh against the ranks this run has. Under mpirun E x D must be the rank count (a
// ConfigError naming both); in one process a mesh other than "auto" is ignored with a notice.
void resolveMesh(const ExperimentConfig& config, Collective& world) {
    const BackendConfig& b = config.backend;
    if (!world.distributed()) {
        if (!b.meshAuto()) {
            std::fprintf(stderr,
                         "note: backend.mesh {\"ensemble\": %d, \"data\": %d} is ignored: this "
                         "is one process (run it under mpirun -n %d)\n",
                         b.meshEnsemble, b.meshData, b.meshEnsemble * b.meshData);
        }
        return;
    }
    const Mesh mesh = b.meshAuto() ? Mesh{world.ranks(), 1} : Mesh{b.meshEnsemble, b.meshData};
    if (mesh.ensemble * mesh.data != world.ranks()) {
        throw ConfigError("backend.mesh", "the mesh " + std::to_string(mesh.ensemble) + " x " +
                                              std::to_string(mesh.data) + " needs " +
                                              std::to_string(mesh.ensemble * mesh.data) +
                                              " ranks but mpirun "
                                              "started " +
                                              std::to_string(world.ranks()));
    }
    if (config.ensemble.members < mesh.ensemble) {
        throw ConfigError("backend.mesh",
                          "ensemble.members = " + std::to_string(config.ensemble.members) +
                              " is fewer than the " + std::to_string(mesh.ensemble) +
                              " ranks of the ensemble axis: every rank needs a "
                              "member");
    }
#ifdef ENSEMBLE_HAVE_MPI
    setMpiMesh(world, mesh);
#endif
}

// Every rank's backend ("cuda:1 (NVIDIA H100 ...)", "cpu (1 thread)") on rank 0, in rank order
// (empty elsewhere), and, unless `quiet`, one line per rank saying it: each rank's device, once.
// A collective call.
std::vector<std::string> logRankDevices(const Trainer& trainer, bool quiet) {
    Collective& world = trainer.collective();
    if (!world.distributed()) {
        return {};
    }
    std::vector<std::string> names = world.gatherText(trainer.backend().name());
    for (std::size_t r = 0; r < names.size() && !quiet; ++r) {
        std::fprintf(stderr, "rank %zu of %d: %s\n", r, world.ranks(), names[r].c_str());
    }
    return names;
}

// The metadata an export of a run on a mesh records: the mesh and which rank (the first of its
// group's data-axis replicas) and device trained which member (information; a file loads the
// same way in one process). `rankDevices`: logRankDevices().
void addMeshMetadata(const Trainer& trainer, const std::vector<std::string>& rankDevices,
                     std::map<std::string, std::string>& metadata) {
    const Collective& world = trainer.collective();
    if (!world.distributed()) {
        return;
    }
    const Mesh mesh = world.mesh();
    const int k = trainer.globalMembers();
    json ranks = json::array();
    json devices = json::array();
    for (int e = 0; e < mesh.ensemble; ++e) {
        const MemberRange share = memberShare(k, mesh.ensemble, e);
        for (int m = share.begin; m < share.end; ++m) {
            const int rank = e * mesh.data;
            ranks.push_back(rank);
            if (static_cast<std::size_t>(rank) < rankDevices.size()) {
                devices.push_back(rankDevices[static_cast<std::size_t>(rank)]);
            }
        }
    }
    metadata["mesh"] =
        json{{"ensemble", mesh.ensemble}, {"data", mesh.data}, {"ranks", world.ranks()}}.dump();
    metadata["member_ranks"] = ranks.dump();
    if (!devices.empty()) {
        metadata["member_devices"] = devices.dump();
    }
}

}  // namespace

Collective& world() {
    return g_world != nullptr ? *g_world : singleProcess();
}

void setWorld(Collective* collective) {
    g_world = collective;
}

bool CliArgs::flag(const std::string& name) const {
    return std::find(switches.begin(), switches.end(), name) != switches.end();
}

std::string CliArgs::require(const std::string& flag) const {
    if (!has(flag)) {
        throw ConfigError("missing " + flag + " (see ensemble-cli " + command + " --help)");
    }
    return get(flag);
}

CliArgs parseArgs(int argc, char** argv, const std::vector<std::string>& valueFlags,
                  const std::vector<std::string>& switchFlags) {
    CliArgs args;
    args.command = argv[1];
    for (int i = 2; i < argc; ++i) {
        std::string arg = argv[i];
        std::string value;
        bool inlineValue = false;
        const auto eq = arg.find('=');
        if (arg.rfind("--", 0) == 0 && eq != std::string::npos) {
            value = arg.substr(eq + 1);
            arg = arg.substr(0, eq);
            inlineValue = true;
        }
        if (arg == "--help" || arg == "-h") {
            args.switches.push_back("--help");
            continue;
        }
        if (std::find(switchFlags.begin(), switchFlags.end(), arg) != switchFlags.end()) {
            args.switches.push_back(arg);
            continue;
        }
        const bool repeatable =
            std::find(valueFlags.begin(), valueFlags.end(), arg + "...") != valueFlags.end();
        if (!repeatable &&
            std::find(valueFlags.begin(), valueFlags.end(), arg) == valueFlags.end()) {
            throw ConfigError("unknown option '" + arg + "' for " + args.command +
                              " (see ensemble-cli " + args.command + " --help)");
        }
        if (!inlineValue) {
            if (i + 1 >= argc) {
                throw ConfigError(arg + " needs a value");
            }
            value = argv[++i];
        }
        if (arg == "--set") {
            args.sets.push_back(value);
        } else if (repeatable) {
            args.repeated[arg].push_back(value);
            args.options.emplace(arg, value);  // the first
        } else if (args.has(arg)) {
            // Keeping only the last would silently ignore the others.
            throw ConfigError(arg + " given twice ('" + args.get(arg) + "' and '" + value +
                              "'): give it once");
        } else {
            args.options[arg] = value;
        }
    }
    return args;
}

ComposedConfig composedFrom(const CliArgs& args) {
    ComposedConfig composed = composeConfig(args.get("--config"), args.sets);
    for (const std::string& notice :
         world().root() ? composed.notices : std::vector<std::string>{}) {
        std::fprintf(stderr, "note: %s\n", notice.c_str());
    }
    return composed;
}

json configJsonFrom(const CliArgs& args) {
    return composedFrom(args).json;
}

ExperimentConfig configFrom(const CliArgs& args) {
    return parseConfig(composedFrom(args));
}

int commandTrain(const CliArgs& args) {
    Collective& world = cli::world();
    const bool root = world.root();
    // Rank 0 alone talks and writes; the other ranks train their members and send them.
    const bool quiet = args.flag("--quiet") || !root;
    int64_t checkpointEvery = 0;
    // A resumed run trains with the checkpoint's config; --set may change its length, the
    // backend and the live hyperparameters (io/checkpoint.h, resumeConfig).
    std::unique_ptr<Checkpoint> resumed;
    ExperimentConfig config;
    std::unique_ptr<Trainer> trainer;
    std::string notice;
    const std::optional<int> setupFailed = agreeOnSetup(world, "train", [&] {
        checkpointEvery = parseCount(args, "--checkpoint-every", 0, 1);
        if (args.has("--checkpoint-every") && !args.has("--checkpoint")) {
            throw ConfigError("--checkpoint-every needs --checkpoint FILE (where to write them)");
        }
        if (world.distributed() && (args.has("--resume") || args.has("--checkpoint-every"))) {
            throw ConfigError(
                std::string(args.has("--resume") ? "--resume" : "--checkpoint-every") +
                " is not supported under mpirun yet (--checkpoint, written at the "
                "end of the run, is)");
        }
        if (args.has("--resume")) {
            if (args.has("--config")) {
                throw ConfigError(
                    "--config cannot be combined with --resume: a resumed run continues with the "
                    "checkpoint's config (change keys with --set)");
            }
            resumed = std::make_unique<Checkpoint>(readCheckpoint(args.get("--resume")));
            std::vector<std::string> notices;
            config = resumeConfig(*resumed, args.sets, &notices);
            for (const std::string& n : notices) {
                std::fprintf(stderr, "note: %s\n", n.c_str());
            }
        } else {
            config = configFrom(args);
        }
        resolveMesh(config, world);
        trainer = makeTrainer(config, &notice, &world);
    });
    if (setupFailed) {
        return *setupFailed;
    }
    if (!notice.empty() && root) {
        std::fprintf(stderr, "%s\n", notice.c_str());
    }
    const std::vector<std::string> rankDevices = logRankDevices(*trainer, quiet);
    // The evaluations of the run so far: a checkpoint's curves.
    std::vector<Evaluation> curves;
    if (resumed) {
        resumeTrainer(*trainer, *resumed);
        curves = resumed->curves;
        resumed.reset();
        if (trainer->finished()) {
            std::fprintf(stderr,
                         "note: the run ends at step %lld and the checkpoint is at step %lld: "
                         "nothing to train (train longer with --set training.steps=N)\n",
                         static_cast<long long>(trainer->totalSteps()),
                         static_cast<long long>(trainer->step()));
        }
    }
    // From here a signal stops training at the next step boundary (before the first step when
    // it comes first), and what was asked for is written for the last finished step before
    // the exit code says so (cli/interrupt.h).
    const StopOnInterrupt stopOnInterrupt;
    const bool tty = isatty(fileno(stderr)) != 0;
    const DataSplit& data = trainer->data();
    if (!quiet) {
        const std::string task =
            data.regression ? std::string("regression") : std::to_string(data.classes) + " classes";
        std::string where = trainer->backend().name();
        if (world.distributed()) {
            const Mesh mesh = world.mesh();
            where += " x " + std::to_string(world.ranks()) + " MPI ranks (mesh: ensemble " +
                     std::to_string(mesh.ensemble) + " x data " + std::to_string(mesh.data) + ")";
        }
        std::fprintf(stderr,
                     "training %d members on %s (%lld train / %lld test rows, %s) for "
                     "%lld steps on %s\n",
                     trainer->globalMembers(), data.name.c_str(),
                     static_cast<long long>(data.train.rows),
                     static_cast<long long>(data.test.rows), task.c_str(),
                     static_cast<long long>(trainer->totalSteps()), where.c_str());
        if (args.has("--resume")) {
            std::fprintf(stderr, "resuming %s at step %lld\n", args.get("--resume").c_str(),
                         static_cast<long long>(trainer->step()));
        }
    }
    // Writes the checkpoint of the last finished step; the periodic hook, the end of the run
    // and an interrupted run (Trainer::run returned false) call it.
    const auto saveCheckpoint = [&](const json& metrics) {
        if (!args.has("--checkpoint")) {
            return;
        }
        writeCheckpoint(args.get("--checkpoint"), *trainer, curves, metrics);
        if (!quiet) {
            std::fprintf(stderr, "%swrote checkpoint %s at step %lld%s", tty ? "\r" : "",
                         args.get("--checkpoint").c_str(), static_cast<long long>(trainer->step()),
                         tty ? "   \n" : "\n");
        }
    };
    if (checkpointEvery > 0) {
        trainer->setPeriodicHook(checkpointEvery, [&] { saveCheckpoint(nullptr); });
    }
    auto lastLine = Clock::now();
    auto onProgress = [&](const TrainingProgress& p) {
        if (quiet) {
            return;
        }
        // On a terminal the line is redrawn in place; in a log a line every few seconds.
        const auto now = Clock::now();
        if (!tty && p.step < p.totalSteps &&
            std::chrono::duration<double>(now - lastLine).count() < 5.0) {
            return;
        }
        lastLine = now;
        std::fprintf(
            stderr, "%sstep %lld/%lld  epoch %.2f  loss %.4f  %s member-steps/s%s%s",
            tty ? "\r" : "", static_cast<long long>(p.step), static_cast<long long>(p.totalSteps),
            p.epoch, p.loss, formatRate(p.memberStepsPerSecond).c_str(),
            p.divergedMembers > 0 ? ("  " + std::to_string(p.divergedMembers) + " diverged").c_str()
                                  : "",
            tty ? "   " : "\n");
    };
    Evaluation last;
    const auto onEvaluation = [&](const Evaluation& e) {
        last = e;
        // A run resumed at its end evaluates the checkpoint's last step again: one point.
        if (!curves.empty() && curves.back().step == e.step) {
            curves.back() = e;
        } else {
            curves.push_back(e);
        }
    };
    const auto start = Clock::now();
    const bool interrupted = !trainer->run(onProgress, onEvaluation, &stopRequested());
    const double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
    if (!quiet && tty) {
        std::fprintf(stderr, "\n");
    }
    std::map<std::string, std::string> exportMetadata;
    if (interrupted) {
        exportMetadata["interrupted_at_step"] = std::to_string(trainer->step());
        if (root) {
            onInterruptAfterLastFinishedStep(args, *trainer);
        }
    } else if (trainer->totalSteps() == 0) {
        last = trainer->evaluate();
    }
    // Under mpirun rank 0 assembles the whole ensemble (every rank's members, in member order)
    // in a one-process trainer; everything below reports and writes from it, as one process
    // would. The other ranks are done.
    std::unique_ptr<Trainer> assembled;
    if (world.distributed()) {
        const TrainingState state = trainer->gatherTrainingState();
        addMeshMetadata(*trainer, rankDevices, exportMetadata);
        if (!root) {
            // Alive until rank 0 has written everything: mpirun takes a rank that ends
            // (non-zero, after a signal) as the job's end and would stop rank 0 mid-write.
            world.barrier();
            if (interruptSignal() != 0) {
                world.leaveWithoutFinalize();  // mpirun is ending the job
            }
            return interruptSignal() != 0 ? interruptExitCode() : 0;
        }
        BackendChoice choice = makeBackend(trainer->config());
        assembled = std::make_unique<Trainer>(trainer->config(), trainer->data(),
                                              std::move(choice.backend));
        assembled->restoreTrainingState(state);
        // The ranks' trainer stays alive: `data` above refers to it.
        std::swap(trainer, assembled);
    }
    // The report of the final ensemble (train/trainer_report.h), the one the app exports too;
    // an interrupted run's is that of its last finished step.
    const bool wantReport =
        !quiet || args.has("--metrics") || args.has("--export") || args.has("--checkpoint");
    const TrainerReport report = wantReport ? trainerReport(*trainer) : TrainerReport{};
    const json& metrics = report.json;
    if (!quiet && !interrupted) {
        printSummary(*trainer, last);
        if (report.regression) {
            const RegressionMetrics& m = report.regression->ensemble;
            std::printf("ensemble on %s: RMSE %.4f, NLL %s, 90%% coverage %s, sharpness %.4f\n",
                        report.regression->split.c_str(), m.rmse,
                        std::isfinite(m.nll) ? std::to_string(m.nll).c_str() : "-",
                        std::isfinite(m.coverage[1]) ? std::to_string(m.coverage[1]).c_str() : "-",
                        m.sharpness);
        }
        std::printf(
            "%lld steps in %.2f s (%s member-steps/s)\n", static_cast<long long>(trainer->step()),
            elapsed,
            formatRate(elapsed > 0 ? trainer->step() * trainer->members() / elapsed : 0).c_str());
    }
    if (args.has("--metrics")) {
        writeFileAtomic(args.get("--metrics"), metrics.dump(2) + "\n");
    }
    // The checkpoint of the last finished step, interrupted or not (issue 24 meets issue 25).
    saveCheckpoint(metrics);
    if (args.has("--export")) {
        exportEnsemble(args.get("--export"), *trainer, metrics, exportMetadata);
        if (!quiet) {
            std::fprintf(stderr, "exported %s to %s\n",
                         exportFormatName(exportFormatForPath(args.get("--export"))),
                         args.get("--export").c_str());
        }
    }
    if (world.distributed()) {
        world.barrier();  // the other ranks wait for these writes (above)
        if (interruptSignal() != 0) {
            world.leaveWithoutFinalize();  // mpirun is ending the job
        }
    }
    // A signal that came after the last step still says the run was interrupted.
    return interruptSignal() != 0 ? interruptExitCode() : 0;
}

// predict for a regression model: the mixture's mean and std with its aleatoric and epistemic
// parts, then each member's mean and std, in raw target units.
int predictRegression(const LoadedEnsemble& ensemble, const CliArgs& args) {
    const Dataset input =
        readCsvFeatures(args.require("--input"), ensemble.layout.inputs(), ensemble.target);
    const std::string output = args.require("--output");
    const int threads = static_cast<int>(parseCount(args, "--threads", 0, 0));
    MemberPredictions p;
    p.members = ensemble.layout.members();
    p.rows = input.rows;
    p.classes = ensemble.layout.classes();
    p.logProbs = predictLogProbs(ensemble, input.x.data(), input.rows, threads);
    const MemberGaussians g =
        memberGaussians(p, ensemble.normalization.targetMean, ensemble.normalization.targetStd);
    const std::vector<uint8_t> include = includedMembers(ensemble);
    std::vector<int> used;
    for (int m = 0; m < p.members; ++m) {
        if (include[static_cast<std::size_t>(m)] != 0) {
            used.push_back(m);
        }
    }
    RegressionPoints mix;
    if (!used.empty()) {
        mix = mixturePoints(g, used);
    }
    std::string out = "ens_mean,ens_std,ens_aleatoric_std,ens_epistemic_std";
    for (int m = 0; m < p.members; ++m) {
        out += ",m" + std::to_string(m) + "_mean,m" + std::to_string(m) + "_std";
    }
    out += '\n';
    char buf[40];
    const auto put = [&](const char* sep, double v) {
        std::snprintf(buf, sizeof buf, "%s%.9g", sep, v);
        out += buf;
    };
    for (int64_t i = 0; i < p.rows; ++i) {
        const std::size_t u = static_cast<std::size_t>(i);
        const double nan = std::nan("");
        put("", used.empty() ? nan : mix.mean[u]);
        put(",", used.empty() ? nan : std::sqrt(mix.variance[u]));
        put(",", used.empty() ? nan : std::sqrt(mix.aleatoric[u]));
        put(",", used.empty() ? nan : std::sqrt(mix.epistemic[u]));
        for (int m = 0; m < p.members; ++m) {
            const std::size_t at =
                static_cast<std::size_t>(m) * static_cast<std::size_t>(p.rows) + u;
            put(",", g.mean[at]);
            put(",", std::sqrt(g.variance[at]));
        }
        out += '\n';
    }
    writeFileAtomic(output, out);
    return 0;
}

int commandPredict(const CliArgs& args) {
    const LoadedEnsemble ensemble = importEnsemble(args.require("--weights"));
    if (isRegression(ensemble.config.model.likelihood)) {
        return predictRegression(ensemble, args);
    }
    const Dataset input = readCsvFeatures(args.require("--input"), ensemble.layout.inputs());
    const std::string output = args.require("--output");
    const int threads = static_cast<int>(parseCount(args, "--threads", 0, 0));
    const std::vector<float> logProbs =
        predictLogProbs(ensemble, input.x.data(), input.rows, threads);

    const int k = ensemble.layout.members();
    const int c = ensemble.layout.classes();
    const int64_t rows = input.rows;
    // The ensemble's average: its switched-on, non-diverged members.
    const std::vector<uint8_t> include = includedMembers(ensemble);
    const int used = static_cast<int>(std::count(include.begin(), include.end(), uint8_t{1}));
    std::string out;
    out.reserve(static_cast<std::size_t>(rows) * (k + 1) * c * 12);
    for (int j = 0; j < c; ++j) {
        out += (j ? ",ens_p" : "ens_p") + std::to_string(j);
    }
    for (int m = 0; m < k; ++m) {
        for (int j = 0; j < c; ++j) {
            out += ",m" + std::to_string(m) + "_p" + std::to_string(j);
        }
    }
    out += '\n';
    char buf[32];
    std::vector<double> ens(static_cast<std::size_t>(c));
    for (int64_t i = 0; i < rows; ++i) {
        std::fill(ens.begin(), ens.end(), 0.0);
        for (int m = 0; m < k; ++m) {
            if (include[static_cast<std::size_t>(m)] == 0) {
                continue;
            }
            for (int j = 0; j < c; ++j) {
                ens[static_cast<std::size_t>(j)] += std::exp(static_cast<double>(
                    logProbs[(static_cast<std::size_t>(m) * rows + i) * c + j]));
            }
        }
        for (int j = 0; j < c; ++j) {
            std::snprintf(buf, sizeof buf, "%s%.9g", j ? "," : "",
                          used > 0 ? ens[static_cast<std::size_t>(j)] / used : std::nan(""));
            out += buf;
        }
        for (int m = 0; m < k; ++m) {
            for (int j = 0; j < c; ++j) {
                std::snprintf(buf, sizeof buf, ",%.9g",
                              std::exp(static_cast<double>(
                                  logProbs[(static_cast<std::size_t>(m) * rows + i) * c + j])));
                out += buf;
            }
        }
        out += '\n';
    }
    writeFileAtomic(output, out);
    return 0;
}

int commandExport(const CliArgs& args) {
    const std::string weights = args.require("--weights");
    const std::string out = args.require("--out");
    // Usage errors first (exit 2), then the input (exit 3), then the write (exit 4): each
    // before anything is written.
    const ExportFormat format =
        args.has("--format") ? parseExportFormat(args.get("--format")) : exportFormatForPath(out);
    const SafetensorsFile file = readSafetensors(weights);
    importEnsemble(file);  // DataError for a file that is not an ensemble export
    writeExport(out, file, format);
    std::fprintf(stderr, "exported %s as %s to %s\n", weights.c_str(), exportFormatName(format),
                 out.c_str());
    return 0;
}

int commandDataset(const CliArgs& args) {
    const ExperimentConfig config = configFrom(args);
    const std::string split = args.get("--split", "train");
    if (split != "train" && split != "test") {
        throw ConfigError("--split: expected train or test, got '" + split + "'");
    }
    const DataSplit data = loadDataSplit(config.dataset);
    writeCsv(args.require("--out"), split == "train" ? data.train : data.test);
    std::fprintf(stderr, "wrote %lld %s rows of %s to %s\n",
                 static_cast<long long>(split == "train" ? data.train.rows : data.test.rows),
                 split.c_str(), data.name.c_str(), args.get("--out").c_str());
    return 0;
}

int commandConfig(const CliArgs& args) {
    const ExperimentConfig config = configFrom(args);
    std::printf("%s\n", config.json.dump(2).c_str());
    return 0;
}

int commandSchema(const CliArgs& args) {
    const std::string format = args.get("--format", "markdown");
    if (format == "markdown") {
        std::printf("%s", configTableMarkdown().c_str());
    } else if (format == "json") {
        std::printf("%s\n", configSchemaJson().dump(2).c_str());
    } else {
        throw ConfigError("--format", "expected markdown or json, got '" + format + "'");
    }
    return 0;
}

int commandBench(const CliArgs& args) {
    // Under mpirun every rank steps its share of the members (backend.mesh); a repeat lasts as
    // long as the slowest rank, and the rate counts every member.
    Collective& world = cli::world();
    ExperimentConfig config;
    int64_t steps = 0;
    int64_t warmup = 0;
    int64_t repeat = 0;
    std::string notice;
    std::unique_ptr<Trainer> trainer;
    const std::optional<int> setupFailed = agreeOnSetup(world, "bench", [&] {
        json root = configJsonFrom(args);
        // Benchmarks never stop for evaluation; the step count is the bench's own.
        applyOverride(root, "training.eval_every=0");
        applyOverride(root, "training.epochs=0");
        applyOverride(root, "training.steps=1000000000");
        config = parseConfig(root);
        steps = parseCount(args, "--steps", 200, 1);
        warmup = parseCount(args, "--warmup", 20, 0);
        repeat = parseCount(args, "--repeat", 3, 1);
        resolveMesh(config, world);
        trainer = makeTrainer(config, &notice, &world);
    });
    if (setupFailed) {
        return *setupFailed;
    }
    const bool talk = world.root();
    if (!notice.empty() && talk) {
        std::fprintf(stderr, "%s\n", notice.c_str());
    }
    logRankDevices(*trainer, !talk);
    trainer->runSteps(warmup);
    std::vector<double> rates;
    for (int64_t r = 0; r < repeat; ++r) {
        world.barrier();
        const auto start = Clock::now();
        trainer->runSteps(steps);
        const double s = world.max(std::chrono::duration<double>(Clock::now() - start).count());
        rates.push_back(static_cast<double>(steps) / s);
        if (talk) {
            std::fprintf(stderr, "repeat %lld: %.1f steps/s\n", static_cast<long long>(r + 1),
                         rates.back());
        }
    }
    if (!talk) {
        return 0;
    }
    std::vector<double> sorted = rates;
    std::sort(sorted.begin(), sorted.end());
    const double median = sorted[sorted.size() / 2];
    const double memberRate = median * trainer->globalMembers();
    // Useful work of a step: forward, weight gradients and the input gradients of every layer
    // but the first, two FLOP per multiply-add (what docs/performance.md's FLOP rates count).
    const Architecture& arch = trainer->layout().architecture();
    double trainMacs = 2.0 * arch.forwardMacsPerExample();
    for (const StackLayer& s : arch.layers()) {
        if (s.param > 0) {
            trainMacs += static_cast<double>(s.fanIn()) * static_cast<double>(s.out.size());
        }
    }
    const double gflops = memberRate * config.training.batchSize * 2.0 * trainMacs / 1e9;
    // Prediction: the first ROWS rows of the test split (of the train split when there is no
    // test split) through every member, the median of `repeat` timings.
    double imagesPerSecond = 0.0;
    if (args.has("--predict")) {
        const int64_t want = parseCount(args, "--predict", 1024, 1);
        const Dataset& split =
            trainer->data().test.rows > 0 ? trainer->data().test : trainer->data().train;
        const int64_t rows = std::min(want, split.rows);
        std::vector<double> times;
        for (int64_t r = 0; r < repeat; ++r) {
            const auto start = Clock::now();
            const MemberPredictions p = trainer->predictRaw(split.x.data(), rows);
            times.push_back(std::chrono::duration<double>(Clock::now() - start).count());
        }
        std::sort(times.begin(), times.end());
        imagesPerSecond = static_cast<double>(rows) / times[times.size() / 2];
    }
    if (args.has("--json")) {
        const json report{{"backend", trainer->backend().name()},
                          {"members", trainer->globalMembers()},
                          {"ranks", world.ranks()},
                          {"batch_size", config.training.batchSize},
                          {"widths", trainer->layout().widths()},
                          {"model", config.json.value("model", json::object())},
                          {"steps", steps},
                          {"warmup", warmup},
                          {"steps_per_sec", rates},
                          {"steps_per_sec_median", median},
                          {"member_steps_per_sec", memberRate},
                          {"useful_gflops", gflops}};
        writeFileAtomic(args.get("--json"), report.dump(2) + "\n");
    }
    std::printf(
        "backend %s, K = %d, batch %d%s\n", trainer->backend().name().c_str(),
        trainer->globalMembers(), config.training.batchSize,
        world.distributed() ? (", " + std::to_string(world.ranks()) + " MPI ranks").c_str() : "");
    std::printf("RESULT steps_per_sec=%.6g member_steps_per_sec=%.6g useful_gflops=%.6g", median,
                memberRate, gflops);
    if (args.has("--predict")) {
        std::printf(" predict_images_per_sec=%.6g", imagesPerSecond);
    }
    std::printf("\n");
    return 0;
}

}  // namespace ensemble::cli
