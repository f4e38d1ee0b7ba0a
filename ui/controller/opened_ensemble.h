#pragma once

// A trained ensemble opened in the app (an export or a checkpoint), and what it shows by
// itself when its dataset cannot be loaded here: its members, stored curves and first conv
// layer, without a trainer.

#include <QString>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "controller/snapshot.h"
#include "io/checkpoint.h"

namespace ensemble::ui {

// A trained ensemble read from a weights file, for EngineWorker::open: an export (the
// weights become a new run's initial state) or a checkpoint (the run continues it).
struct OpenedEnsemble {
    QString path;
    bool isCheckpoint = false;
    // .ensemble: the export either way; .state, .curves, .trainRows: a checkpoint's only.
    Checkpoint checkpoint;
    ExperimentConfig config;  // what the run is built with (resumeConfig for a checkpoint)
};

// The config an export's weights start a new run with: the stored one, its
// ensemble.switched_off as at the file's step (the schedule's switches up to it applied), so
// the run's ensemble is the one eval and the file's metrics report from step 0 on.
ExperimentConfig exportStartConfig(const LoadedEnsemble& e);

// Reads and validates `path` (an export or a checkpoint). DataError naming the file.
std::shared_ptr<const OpenedEnsemble> readOpenedEnsemble(const QString& path);

// Where an opened file's members were trained, from the metadata ensemble-cli writes under
// mpirun (mesh, member_ranks, member_devices); nothing for a file trained in one process.
void setMemberOrigins(const LoadedEnsemble& e, RunInfo& run);

// A checkpoint's curves as the Curves view's points (those before `step`: the app evaluates
// the step it opens at itself, on the rows it evaluates live), appended to `history`.
void appendStoredCurves(const std::vector<Evaluation>& curves, int64_t step,
                        std::vector<std::shared_ptr<const HistoryPoint>>& history);

// The run of a file opened without its dataset (`why`: the loader's message): no trainer,
// no test rows; RunInfo::missingData says what is missing.
std::shared_ptr<RunInfo> runWithoutData(const OpenedEnsemble& opened, uint64_t runId,
                                        const std::string& why);

// The one snapshot such a run has: the file's members and switches, its stored curves
// (appended to `history`), the last stored test figures, its first conv layer. The caller
// numbers it (Snapshot::serial).
std::shared_ptr<Snapshot> snapshotWithoutData(
    const OpenedEnsemble& opened, std::shared_ptr<const RunInfo> run,
    std::vector<std::shared_ptr<const HistoryPoint>>& history);

}  // namespace ensemble::ui
