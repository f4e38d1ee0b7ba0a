#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <utility>
#include <vector>

#include "backend/auto_choice.h"
#include "backend/backend.h"
#include "config/config.h"
#include "data/dataset.h"
#include "dist/collective.h"
#include "metrics/types.h"
#include "model/mlp.h"
#include "train/effective_members.h"

namespace ensemble {

struct TrainingProgress {
    int64_t step = 0;
    int64_t totalSteps = 0;
    double epoch = 0.0;
    double loss = 0.0;  // mean batch loss over active members, smoothed
    double stepsPerSecond = 0.0;
    double memberStepsPerSecond = 0.0;
    int divergedMembers = 0;
};

// Everything a run's continuation needs besides its config (io/checkpoint.h stores it): the
// step, every member's parameters, the optimizer state of what the backend trains, and which
// members diverged. For a one-network method (model/ensemble_methods.h) `params` are the K
// effective members: those taken so far and, for the others, the network in training (which
// is member min(taken, K - 1): a finished run's last member is the network at its end), and
// `optimizer` and `trained` are that one network's.
struct TrainingState {
    int64_t step = 0;
    std::vector<float> params;  // the members' layout order
    OptimizerState optimizer;   // the trained networks' layout order
    // A one-network method: the network in training (Trainer::trainedLayout); empty when the
    // backend trains the members themselves.
    std::vector<float> trained;
    std::vector<uint8_t> diverged;  // per member; a diverged member stays frozen
};

// The adversarial eps of each input in the model's (normalised) units, for a backend's
// TrainingProblem::adversarialEpsPerInput: empty under the `standardised` unit or eps 0 (the
// scalar eps serves every input); under `range`, input f's eps * (max_f - min_f) over the raw
// train rows, divided by the normalisation's std_f (0 for a constant column).
std::vector<float> adversarialInputEps(double eps, AdversarialEpsUnit unit, const DataSplit& data);

// Drives a Backend through a run: steps, evaluation, divergence, progress, cancel. It starts
// no threads and emits nothing on its own: callers step it synchronously (the GUI from its
// engine thread, the CLI from main).
class Trainer {
  public:
    // Builds the model, initialises the parameters from ensemble.seed and binds the backend.
    // Under MPI (`collective` distributed) this trainer holds only its rank's share of the
    // ensemble, members [memberOffset(), memberOffset() + members()) of
    // config.ensemble.members, each keyed by its global index, so its trajectory is the one a
    // single process computes; evaluate() and run() are then collective calls (every rank makes
    // them) and their evaluations are complete on rank 0 only. The collective must outlive the
    // trainer; null: one process. Throws ConfigError when a rank would hold no member.
    //
    // A one-network method (model/ensemble_methods.h: oneNetwork) trains one network on
    // `backend` and predicts its K effective members (train/effective_members.h) on
    // `memberBackend`, a fresh backend of the same kind that the trainer binds for prediction
    // (registry.h's makeBackend makes it: BackendChoice::memberBackend); other methods leave it
    // null. Throws std::invalid_argument when a one-network method has none, ConfigError (key
    // backend.mesh) for an ensemble axis under a method whose members share their training, and
    // (key training.steps) for a run too short for the method's plan.
    Trainer(ExperimentConfig config, DataSplit data, std::unique_ptr<Backend> backend,
            Collective* collective = nullptr, std::unique_ptr<Backend> memberBackend = nullptr);

    const ExperimentConfig& config() const { return m_config; }
    const DataSplit& data() const { return m_data; }
    const ParamLayout& layout() const { return m_layout; }
    const Backend& backend() const { return *m_backend; }
    // What the backend trains: the members' layout, or one network's for a one-network method.
    const ParamLayout& trainedLayout() const { return m_trainedLayout; }
    // What backend.kind resolved to and why (registry.h's makeBackend decides; an export's
    // metadata "backend" and a resumed run read it). A trainer made with a backend in hand says
    // only which kind it is until the maker sets the decision.
    const BackendDecision& backendDecision() const { return m_backendDecision; }
    void setBackendDecision(BackendDecision decision) { m_backendDecision = std::move(decision); }
    // The members this trainer holds (all of them in one process).
    int members() const { return m_layout.members(); }
    // The global index of its member 0, and the ensemble's size over every rank.
    int memberOffset() const { return m_share.begin; }
    int globalMembers() const { return m_config.ensemble.members; }
    Collective& collective() const { return *m_collective; }

    int64_t step() const { return m_step; }
    int64_t totalSteps() const { return m_totalSteps; }
    double epoch() const;
    bool finished() const { return m_step >= m_totalSteps; }
    // Moves the end of the run (the app's "Stop after", Continue). Training goes on from the
    // current step, so N steps, then the limit raised and M more, equal N + M steps straight,
    // bit for bit: every batch is a function of the step. A limit below the current step ends
    // the run where it is. Precondition: steps >= 0. A method whose plan fixes the run's length
    // (model/ensemble_methods.h: fixedLength) throws ConfigError (key training.steps) for any
    // other length than its plan's.
    void setTotalSteps(int64_t steps);
    // Whether setTotalSteps may move the end (false for a fixed-length method), and why not.
    bool lengthChangeable(std::string* why = nullptr) const;

    // The state after the last finished step (what a checkpoint holds): this trainer's members.
    TrainingState trainingState() const;
    // The whole ensemble's state on rank 0, in the global layout (every rank's share in member
    // order); empty elsewhere. A collective call; in one process the same as trainingState().
    TrainingState gatherTrainingState() const;
    // Continues from a saved state as if this trainer had trained to state.step itself: the
    // parameters, the optimizer state (moments and update count), the diverged flags and the
    // schedule's position (its entries before that step applied). With the config the state was
    // saved under (the training length may differ, but for a fixed-length method), the run then
    // goes on bit for bit. Throws std::invalid_argument for a state of another shape and
    // std::logic_error when this trainer has already stepped or changed hyperparameters.
    void restoreTrainingState(const TrainingState& state);

    // Calls `hook` in run() after every `every` steps (after that step's evaluation, before the
    // next step) while the run has steps left: the CLI's periodic checkpoint. 0: never.
    void setPeriodicHook(int64_t every, std::function<void()> hook);

    // Changes live keys now, before the next step (the app's live edit or member switch): `set`
    // is {"optimizer.lr": value, "ensemble.switched_off": [..], ...} in any form the key takes.
    // The change is recorded in training.schedule of config() (JSON and parsed) at the current
    // step, merged into an entry already recorded there, so an export, a saved experiment and
    // a CLI replay of it give the same weights and figures. Throws ConfigError naming the key.
    void changeHyperparameters(const nlohmann::json& set);
    // Applies the schedule's entries due at the current step now rather than before the next
    // step (training is the same either way): the figures of a run that ends here show them.
    // run() does this before its final evaluation.
    void applyDueChanges();

    // Trains `n` steps (fewer when the run ends). Members whose loss turns non-finite are
    // frozen and flagged; the run goes on.
    void runSteps(int64_t n);

    // Runs to the end, calling onProgress about every `progressSeconds` and onEvaluation every
    // training.eval_every steps and at the end. Returns false when `cancel` stopped it.
    bool run(const std::function<void(const TrainingProgress&)>& onProgress,
             const std::function<void(const Evaluation&)>& onEvaluation,
             const std::atomic<bool>* cancel = nullptr, double progressSeconds = 0.25);

    // Loss and accuracy of every member and of the ensemble of included() on both splits
    // (metrics/: ensembleMetrics, memberMetrics). Under MPI, rank 0 gathers every member's
    // outputs in member order and runs the same metrics code (the other ranks get an
    // Evaluation without members): the numbers are a single process's, bit for bit.
    Evaluation evaluate();
    // The same from predictions already made (predictTrain(), predictTest(); `test` unused
    // when the test split is empty), the ensemble being the members with include[k] != 0
    // (empty: every member).
    Evaluation evaluate(const MemberPredictions& train, const MemberPredictions& test,
                        const std::vector<uint8_t>& include) const;
    // Member log-probabilities for raw (dataset-unit) inputs; normalises them first.
    MemberPredictions predictRaw(const float* rawX, int64_t rows);
    // Every member's probabilities and the per-point measures over `members` for raw inputs,
    // when the backend computes them itself (Backend::predictUncertainty); false otherwise.
    bool predictRawUncertainty(const float* rawX, int64_t rows, const std::vector<int>& members,
                               PointUncertainties& out);
    MemberPredictions predictTest();
    MemberPredictions predictTrain();
    // Loss and accuracy (classification: evaluateSplit) or loss and RMSE (regression:
    // evaluateRegressionSplit, raw target units) of predictions of the first p.rows rows of
    // `split` (this trainer's train or test split, or rows from the same dataset), the ensemble
    // being the members with include[k] != 0. Precondition: p.rows <= split.rows.
    SplitEvaluation evaluatePredictions(const MemberPredictions& p, const Dataset& split,
                                        const std::vector<uint8_t>& include) const;

    // Per member: its last batch loss (a one-network method: the network's for members that
    // follow it, NaN for members taken), and whether it diverged.
    std::vector<float> lastLosses() const;
    std::vector<uint8_t> diverged() const;
    // 1 for members in the ensemble: switched on (ensemble.switched_off and its schedule
    // entries applied so far) and not diverged. Every member trains either way.
    std::vector<uint8_t> included() const;
    // 1 for members not switched off (this trainer's members, in order).
    std::vector<uint8_t> switchedOn() const;
    // Each member's optimizer hyperparameters (for display and export; a one-network method's
    // members all show its network's, with optimizer.lr as the peak of its schedule).
    std::vector<OptimizerRule> rules() const;

    // Every member's parameters (the members' layout: the effective members for a one-network
    // method).
    std::vector<float> parameters() const;
    // What the backend trains (trainedLayout()'s order): a one-network method's network.
    std::vector<float> trainedParameters() const;
    // The effective members taken so far (a one-network method; members() otherwise).
    int membersTaken() const;
    // Each member's multiplicity of every train row, K x N row-major (all 1 for `none`).
    std::vector<int32_t> bootstrapCounts() const;
    // Smoothed training throughput of the last run() or runSteps() calls.
    double lastStepSeconds() const { return m_lastStepSeconds; }

  private:
    MemberPredictions predictNormalized(const float* x, int64_t rows);
    // The backend the members predict on: the member backend, its parameters brought up to
    // the current step, for a one-network method; the training backend otherwise.
    Backend& predictor();
    // Rebuilds the effective members from the network in training (members >= m_taken).
    void deriveMembers(std::vector<float>& members) const;
    // After a step: takes the members whose turn has come.
    void takeMembers();
    // The rules the backend trains with at step `step` (the method's lr factor applied).
    void applyStepRules(int64_t step);
    // Gives the backend m_rules with the current lr factor applied.
    void pushRules();
    // Applies the schedule's entries for the current step (and any it skipped past).
    void applySchedule();
    void applyChange(const ScheduledChange& change);
    // An Evaluation with step, epoch and the diverged flags set, the metrics still empty.
    Evaluation evaluationFrame() const;
    static void setSplit(Evaluation& e, const SplitEvaluation& split, bool train);

    // Evaluation under MPI: every rank predicts its members, rank 0 measures them all.
    Evaluation evaluateDistributed();

    ExperimentConfig m_config;
    Collective* m_collective = nullptr;
    MemberRange m_share;
    DataSplit m_data;
    std::unique_ptr<Backend> m_backend;
    BackendDecision m_backendDecision;
    ParamLayout m_layout;
    std::vector<float> m_trainX;        // normalised
    std::vector<float> m_testX;         // normalised
    std::vector<float> m_trainTargets;  // regression: standardised train targets
    // Per trained network (m_trainedLayout's members).
    std::vector<OptimizerRule> m_rules;
    std::vector<uint8_t> m_active;
    std::vector<uint8_t> m_diverged;
    std::vector<float> m_lastLosses;
    // A one-network method: its plan, the backend its K members predict on, the members taken
    // so far (the members' layout; slots >= m_taken are rebuilt from the network on demand) and
    // whether each taken member's network had diverged.
    ParamLayout m_trainedLayout;
    std::size_t m_trainedSize = 0;  // the backend's parameters (BatchEnsemble: theta's size)
    bool m_oneNetwork = false;      // one network's loss, flag and rule stand for every member
    std::unique_ptr<EffectiveMembers> m_effective;
    std::unique_ptr<Backend> m_memberBackend;
    std::vector<float> m_memberParams;
    std::vector<uint8_t> m_takenDiverged;
    int m_taken = 0;
    int64_t m_predictorStep = -1;  // the step the member backend's parameters are from
    int64_t m_plannedSteps = 0;    // the length the method's plan was made for
    double m_lrFactor = 1.0;       // the factor the backend's rules have now
    int64_t m_step = 0;
    std::size_t m_nextChange = 0;  // the first entry of training.schedule not yet applied
    int64_t m_totalSteps = 0;
    double m_lastStepSeconds = 0.0;
    int64_t m_hookEvery = 0;
    std::function<void()> m_hook;
};

}  // namespace ensemble
