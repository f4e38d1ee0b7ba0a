#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "math/activations.h"
#include "optim/update_rules.h"
#include "sampling/batch_plan.h"

namespace ensemble {

// Every config key, its default and its meaning is documented once, in README.md
// ("Configuration"). Field names mirror the JSON keys.

struct DatasetConfig {
    std::string kind = "spirals";  // spirals|moons|circles|xor|blobs|csv|mnist|fashion-mnist
    int64_t n = 1000;              // generated points (2-D kinds)
    double noise = 0.05;           // Gaussian noise std (2-D kinds)
    double rotations = 1.0;        // spirals: turns of each arm
    int classes = 2;               // blobs: number of classes
    double testFraction = 0.2;     // held-out fraction when there is no separate test file
    uint64_t seed = 0;             // data generation and split
    std::string path;              // csv: the file; mnist/fashion-mnist: the folder
    std::string testPath;          // csv: optional separate test file
    int64_t limit = 0;             // use only the first `limit` train rows (0 = all)
};

struct ModelConfig {
    std::vector<int> hidden = {32, 32};
    Activation activation = Activation::Relu;
};

struct EnsembleConfig {
    int members = 8;
    BootstrapMode bootstrap = BootstrapMode::None;
    uint64_t seed = 0;
};

// Per-member hyperparameters are resolved to K values (member order) when the config is read.
struct OptimizerConfig {
    OptimizerKind kind = OptimizerKind::Adam;
    std::vector<double> lr;           // K values
    std::vector<double> momentum;     // K values
    std::vector<double> weightDecay;  // K values
    double beta1 = 0.9;
    double beta2 = 0.999;
    double eps = 1e-8;
};

struct TrainingConfig {
    int batchSize = 32;
    int64_t steps = 1000;  // used when epochs == 0
    double epochs = 0.0;   // > 0: train this many passes over the train split instead
    int64_t evalEvery = 100;
};

enum class BackendKind { Auto, Cpu, Cuda };

struct BackendConfig {
    BackendKind kind = BackendKind::Auto;
    int threads = 0;  // 0 = all cores
    int device = 0;   // CUDA device ordinal
};

struct ExperimentConfig {
    DatasetConfig dataset;
    ModelConfig model;
    EnsembleConfig ensemble;
    OptimizerConfig optimizer;
    TrainingConfig training;
    BackendConfig backend;
    // The config as JSON with every default filled in: stored in exported weights and saved
    // by the GUI, so a run can always be repeated exactly.
    nlohmann::json json;

    // Steps the run takes: `training.steps`, or ceil(epochs * N / B) when epochs are given.
    int64_t totalSteps(int64_t trainRows) const;
};

// The default configuration (the spirals preset's base).
nlohmann::json defaultConfigJson();

// Reads and validates a config. Throws ConfigError naming the key for unknown keys, wrong
// types and out-of-range values. Missing keys take their defaults.
ExperimentConfig parseConfig(const nlohmann::json& json);

// Applies one `--set key=value` override to `json` in place: `key` is dotted
// (`ensemble.members`); the value is read as JSON when it parses, else as a string.
void applyOverride(nlohmann::json& json, const std::string& assignment);

// Loads a config from a file path or a built-in preset name (resources/presets/<name>.json).
// Throws ConfigError when it is neither, DataError when the file is not valid JSON.
nlohmann::json loadConfigJson(const std::string& fileOrPreset);

// Names of the built-in presets, sorted.
std::vector<std::string> presetNames();
// A built-in preset's JSON text, or empty when there is none by that name.
std::string presetText(const std::string& name);

const char* toString(BootstrapMode mode);
const char* toString(Activation activation);
const char* toString(OptimizerKind kind);
const char* toString(BackendKind kind);

}  // namespace ensemble
