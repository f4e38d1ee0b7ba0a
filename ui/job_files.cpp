#include "job_files.h"

#include <sstream>

#include "config/config.h"
#include "config/config_schema.h"
#include "core/errors.h"

namespace ensemble::ui {

namespace {

// A POSIX shell word: single quotes, a single quote inside written as '\''.
std::string shellWord(const std::string& text) {
    std::string out = "'";
    for (char c : text) {
        out += c == '\'' ? std::string("'\\''") : std::string(1, c);
    }
    return out + "'";
}

}  // namespace

JobFiles makeJobFiles(nlohmann::json config, int ensemble, int data, const std::string& name) {
    if (ensemble < 1 || data < 1) {
        throw ConfigError("backend.mesh", "the mesh needs at least one rank on each axis, got " +
                                              std::to_string(ensemble) + " x " +
                                              std::to_string(data));
    }
    config["backend"]["mesh"] = {{"ensemble", ensemble}, {"data", data}};
    // The parser fills in the defaults and checks every key, the mesh's shape included.
    const ExperimentConfig parsed = parseConfig(config);
    if (parsed.ensemble.members < ensemble) {
        throw ConfigError("backend.mesh",
                          "ensemble.members = " + std::to_string(parsed.ensemble.members) +
                              " is fewer than the " + std::to_string(ensemble) +
                              " ranks of the ensemble axis");
    }
    if (parsed.training.batchSize % data != 0) {
        throw ConfigError("training.batch_size", std::to_string(parsed.training.batchSize) +
                                                     " rows are not divisible by the " +
                                                     std::to_string(data) +
                                                     " ranks of the data axis");
    }
    if (data > 1 && parsed.backend.kind == BackendKind::Cuda) {
        throw ConfigError("backend.kind",
                          "cuda with the data axis (data = " + std::to_string(data) +
                              "): the data axis trains on the CPU backend");
    }
    const int ranks = ensemble * data;
    const int threads = parsed.backend.threads > 0 ? parsed.backend.threads : 1;
    const bool gpus = parsed.backend.kind != BackendKind::Cpu && data == 1;
    const std::string train = "\"$CLI\" train --config " + shellWord(name + ".json") +
                              " --export " + shellWord(name + ".safetensors") + " --metrics " +
                              shellWord(name + ".metrics.json");

    JobFiles files;
    files.config = config.dump(2) + "\n";

    std::ostringstream m;
    m << "#!/bin/sh\n"
      << "# EnsembleLab job '" << name << "': " << parsed.ensemble.members
      << " members on a mesh of " << ensemble << " (ensemble axis) x " << data
      << " (data axis) = " << ranks << " MPI ranks.\n"
      << "# Edit freely: CLI is ensemble-cli's path, the mesh is backend.mesh in " << name
      << ".json.\n"
      << "# More ranks than cores on one machine: add --oversubscribe. As root in a container:\n"
      << "# export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1\n"
      << "set -e\n"
      << "cd \"$(dirname \"$0\")\"\n"
      << "CLI=${ENSEMBLE_CLI:-ensemble-cli}\n"
      << "export OMP_NUM_THREADS=" << threads << "\n"
      << "# Time for rank 0 to write the export after Ctrl-C (docs/scaling.md, Errors).\n"
      << "export OMPI_MCA_odls_base_sigkill_timeout=30\n"
      << "exec mpirun -n " << ranks << " " << train << "\n";
    files.mpirun = m.str();

    std::ostringstream s;
    s << "#!/bin/bash\n"
      << "# EnsembleLab job '" << name << "' for Slurm: sbatch " << name << ".sbatch\n"
      << "# " << parsed.ensemble.members << " members on a mesh of " << ensemble << " x " << data
      << " = " << ranks << " MPI ranks (backend.mesh in " << name << ".json).\n"
      << "#SBATCH --job-name=" << name << "\n"
      << "#SBATCH --ntasks=" << ranks << "\n"
      << "#SBATCH --cpus-per-task=" << threads << "\n"
      << "#SBATCH --time=01:00:00\n"
      << (gpus ? "" : "# ") << "#SBATCH --gpus-per-task=1"
      << (gpus ? "  # one GPU per rank (backend.kind " +
                     std::string(toString(parsed.backend.kind)) + ")\n"
               : "  (a GPU per rank: backend.kind cuda or auto, data axis 1)\n")
      << "#SBATCH --output=" << name << "-%j.log\n"
      << "set -e\n"
      << "cd \"$SLURM_SUBMIT_DIR\"\n"
      << "CLI=${ENSEMBLE_CLI:-ensemble-cli}\n"
      << "export OMP_NUM_THREADS=$SLURM_CPUS_PER_TASK\n"
      << "# Open MPI's mpirun takes the ranks and hosts from the allocation (or: srun "
         "--mpi=pmix).\n"
      << "mpirun -n $SLURM_NTASKS " << train << "\n";
    files.sbatch = s.str();
    return files;
}

}  // namespace ensemble::ui
