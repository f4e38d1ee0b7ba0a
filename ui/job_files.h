#pragma once

// File > Export job…: the current experiment as a cluster job, for `mpirun` on a machine or a
// Slurm allocation (docs/scaling.md). Plain C++ (no widgets): the window writes
// what this returns.

#include <string>

#include <nlohmann/json.hpp>

namespace ensemble::ui {

struct JobFiles {
    std::string config;  // the experiment with backend.mesh set: NAME.json
    std::string mpirun;  // NAME-mpirun.sh
    std::string sbatch;  // NAME.sbatch
};

// The files of a cluster job training `config` (an experiment as Save writes it) on a mesh of
// `ensemble` x `data` ranks; `name` is the files' base name (the scripts refer to NAME.json
// next to them and write NAME.safetensors and NAME.metrics.json). Throws ConfigError (key
// backend.mesh, training.batch_size or backend.kind) when the mesh cannot train this config,
// the check `mpirun` would make at launch.
JobFiles makeJobFiles(nlohmann::json config, int ensemble, int data, const std::string& name);

}  // namespace ensemble::ui
