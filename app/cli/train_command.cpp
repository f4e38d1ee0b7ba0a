// ensemble-cli train: trains an ensemble from a config (or resumes a checkpoint) and writes
// what was asked for: the export, the metrics, checkpoints; under mpirun on every rank.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <map>
#include <memory>
#include <numeric>
#include <optional>
#include <string>
#include <vector>

#include "cli/cli_common.h"
#include "cli/command_run.h"
#include "cli/commands.h"
#include "cli/interrupt.h"
#include "core/errors.h"
#include "io/checkpoint.h"
#include "io/export_formats.h"
#include "io/model_io.h"
#include "metrics/regression.h"
#include "model/ensemble_methods.h"
#include "registry/registry.h"
#include "runs/run_figures.h"
#include "sys/atomic_file.h"
#include "train/trainer.h"
#include "train/trainer_report.h"

namespace ensemble::cli {

namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

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
// written from here, complete, for that step; a checkpoint writer (`--checkpoint`) is
// called here too, beside the export.
void onInterruptAfterLastFinishedStep(const CliArgs& args, const Trainer& trainer) {
    std::fprintf(stderr, "ensemble-cli train: interrupted by %s at step %lld of %lld%s\n",
                 signalName(interruptSignal()), static_cast<long long>(trainer.step()),
                 static_cast<long long>(trainer.totalSteps()),
                 args.has("--export") || args.has("--metrics") || args.has("--checkpoint")
                     ? "; writing what was asked for at that step"
                     : "");
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

ExitCode commandTrain(const CliArgs& args) {
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
    const std::optional<ExitCode> setupFailed = agreeOnSetup(world, "train", [&] {
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
            cli::printConfigWarnings(config.json);
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
    // The runs store's entry (rank 0): from here until the command's exit.
    CommandRun run(args, args.has("--resume") ? "resume" : "train", config.json);
    run.setBackend(trainer->backend().name());
    if (args.has("--resume")) {
        run.setParentFromFile(args.get("--resume"), "continued");
    }
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
    bool checkpointRecorded = false;
    const auto saveCheckpoint = [&](const json& metrics) {
        if (!args.has("--checkpoint")) {
            return;
        }
        writeCheckpoint(args.get("--checkpoint"), *trainer, curves, metrics);
        if (!checkpointRecorded) {
            run.addFile(args.get("--checkpoint"), "checkpoint");
            checkpointRecorded = true;
        }
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
        run.addEvaluation(e);
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
            return interruptSignal() != 0 ? interruptExitCode() : ExitCode::Ok;
        }
        BackendChoice choice = makeBackend(trainer->config(), trainer->data());
        assembled =
            std::make_unique<Trainer>(trainer->config(), trainer->data(), std::move(choice.backend),
                                      nullptr, std::move(choice.memberBackend));
        // The export says what rank 0 trained on (every rank decided by the same rule).
        assembled->setBackendDecision(trainer->backendDecision());
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
        // A one-network method (MC dropout, snapshots) trains one network per step, not K.
        const double networkSteps =
            static_cast<double>(trainer->step()) *
            trainedNetworks(trainer->config().ensemble.method, trainer->members());
        std::printf("%lld steps in %.2f s (%s member-steps/s)\n",
                    static_cast<long long>(trainer->step()), elapsed,
                    formatRate(elapsed > 0 ? networkSteps / elapsed : 0).c_str());
    }
    if (args.has("--metrics")) {
        writeFileAtomic(args.get("--metrics"), metrics.dump(2) + "\n");
        run.addFile(args.get("--metrics"), "report");
    }
    // The checkpoint of the last finished step, interrupted or not.
    saveCheckpoint(metrics);
    if (args.has("--export")) {
        exportEnsemble(args.get("--export"), *trainer, metrics, exportMetadata);
        run.addFile(args.get("--export"), "export");
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
    const ExitCode code = interruptSignal() != 0 ? interruptExitCode() : ExitCode::Ok;
    run.finish(code, wantReport
                         ? runs::reportFigures(report)
                         : runs::evaluationFigures(
                               last, trainer->config().model.likelihood == Likelihood::Gaussian));
    return code;
}

}  // namespace ensemble::cli
