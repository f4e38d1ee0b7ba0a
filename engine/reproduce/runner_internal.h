#pragma once

// The runners' shared steps (runner.cpp), and the MNIST rows (reproductions_mnist.cpp) with their
// runner (runner_mnist.cpp), which planRuns and runReproduction call for
// RunnerKind::MnistSizeCurve, MnistLenet and MnistShift. Internal to reproduce/: the public
// interface is reproduce.h.

#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "active/active_study.h"
#include "reproduce/reproduce.h"

namespace ensemble {
class Trainer;
}

namespace ensemble::reproduce {

// The overrides over a run's config, then the config as parseConfig completes it.
nlohmann::json completedConfig(nlohmann::json config, const std::vector<std::string>& overrides);
// Trains to the end in slices, reporting progress and seeing a cancel; false when cancelled.
bool trainToEnd(Trainer& trainer, const ReproduceHooks& hooks, ReproduceProgress progress,
                std::chrono::steady_clock::time_point start);
// The trainer of `config`; names result.backend after the first.
std::unique_ptr<Trainer> trainerFor(const nlohmann::json& config, ReproductionResult& result);
// A CSV number by to_chars (the same bytes in any locale); "" when not finite.
std::string csvNumberRepro(double v);

// The ECE bins of a row (Reproduction::eceBins, 0: kCalibrationBins).
int eceBinsOf(const Reproduction& r);

// The MNIST rows (reproductions_mnist.cpp), in the registry's order.
Reproduction deepEnsemblesMnist();
Reproduction ubMnistLenet();
Reproduction ovadiaMnistShift();
Reproduction galActiveLearning();  // reproductions_active.cpp
// Whether MNIST is in its default folders; `why` says where it was looked for and how to get it.
bool mnistDataPresent(std::string* why);

// The config of run `index` of `level` of an MNIST row (quick: the row's --quick budget).
nlohmann::json mnistRunConfig(const Reproduction& r, const std::string& level, int index,
                              bool quick);
// Trains and measures one planned run of an MNIST row into `out`; false when cancelled.
bool runMnist(const Reproduction& r, const PlannedRun& plan, const ReproduceHooks& hooks,
              ReproduceProgress progress, std::chrono::steady_clock::time_point start,
              ReproductionResult& result, RunOutcome& out);

// The active-learning row (RunnerKind::MnistActive; reproductions_active.cpp and
// runner_active.cpp). Its level figures: the labels to reach these test accuracies on the mean
// curve over a level's seeds.
inline constexpr std::pair<double, const char*> kActiveReach[] = {{0.90, "labels_to_90"},
                                                                  {0.95, "labels_to_95"}};
// The config of run `index` of `level` (an acquisition function): the mnist-active-cnn preset's
// study for seed preset + index, to the row's label budget (quick: its --quick budget).
nlohmann::json activeRunConfig(const std::string& level, int index, bool quick);
// The mean curve over `runs` (one level's) from their series, by activeMeanCurve.
std::vector<ActiveCurvePoint> activeLevelCurve(const std::vector<const RunOutcome*>& runs);
// labels_to_90 and labels_to_95 of the mean curve over `runs`: the labels, or +inf with
// `beyond` the curve's last labels when not reached; n = runs, no se.
std::map<std::string, Aggregate> activeLevelFigures(const std::vector<const RunOutcome*>& runs);
// One study (a function, a seed) to its last round into `out`; false when cancelled.
bool runActive(const PlannedRun& plan, const ReproduceHooks& hooks, ReproduceProgress progress,
               std::chrono::steady_clock::time_point start, ReproductionResult& result,
               RunOutcome& out);

}  // namespace ensemble::reproduce
