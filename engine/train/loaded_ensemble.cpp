#include "train/loaded_ensemble.h"

#include <memory>

#include "backend/backend.h"
#include "backend/cpu_dispatch.h"

namespace ensemble {

std::vector<uint8_t> switchedOnMembers(const LoadedEnsemble& ensemble) {
    std::vector<uint8_t> on = ensemble.config.switchedOnAt(ensemble.step);
    on.resize(ensemble.diverged.size(), 1);
    return on;
}

std::vector<uint8_t> includedMembers(const LoadedEnsemble& ensemble) {
    std::vector<uint8_t> include = switchedOnMembers(ensemble);
    for (std::size_t k = 0; k < include.size(); ++k) {
        include[k] = include[k] != 0 && ensemble.diverged[k] == 0 ? 1 : 0;
    }
    return include;
}

std::vector<float> predictLogProbs(const LoadedEnsemble& ensemble, const float* rawX, int64_t rows,
                                   int threads) {
    // The level this CPU runs best (backend/cpu_dispatch.h), not the stored config's pin: a
    // file predicts on any machine. ENSEMBLE_CPU_ISA still pins it.
    const std::unique_ptr<Backend> backend = makeDispatchedCpuBackend(threads);
    TrainingProblem problem;
    problem.layout = ensemble.layout;
    problem.activation = ensemble.config.model.activation;
    problem.likelihood = ensemble.config.model.likelihood;
    problem.plan.batch = 1;
    backend->bind(problem);
    backend->setParameters(ensemble.params.data());
    const int64_t d = ensemble.layout.inputs();
    std::vector<float> x(rawX, rawX + rows * d);
    for (int64_t i = 0; i < rows; ++i) {
        for (int64_t j = 0; j < d; ++j) {
            float& v = x[static_cast<std::size_t>(i * d + j)];
            v = (v - ensemble.normalization.mean[static_cast<std::size_t>(j)]) /
                ensemble.normalization.std[static_cast<std::size_t>(j)];
        }
    }
    std::vector<float> out(static_cast<std::size_t>(ensemble.layout.members()) * rows *
                           ensemble.layout.classes());
    if (rows > 0) {
        backend->predictLogProbs(x.data(), rows, out.data());
    }
    return out;
}

}  // namespace ensemble
