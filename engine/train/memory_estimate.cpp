// The run's memory estimate: data, parameters, optimizer state, the backend's workspaces and
// the evaluation buffers, against what /proc/meminfo says is available.
#include "train/memory_estimate.h"

#include <algorithm>
#include <fstream>
#include <sstream>
#include <string>

#include <omp.h>

#include "backend/backend.h"
#include "core/errors.h"
#include "model/mlp.h"

namespace ensemble {

std::size_t availableMemoryBytes() {
    std::ifstream in("/proc/meminfo");
    std::string key;
    std::size_t value = 0;
    std::string unit;
    while (in >> key >> value) {
        std::getline(in, unit);
        if (key == "MemAvailable:") {
            return value * 1024;
        }
    }
    return 0;
}

std::string memoryRefusal(std::size_t need, std::size_t have, int members) {
    std::ostringstream os;
    os << "this run needs about " << (need >> 20) << " MiB but only " << (have >> 20)
       << " MiB of memory is available (K = " << members
       << ", model.hidden, training.batch_size and the dataset size set the need); "
          "reduce ensemble.members or the model";
    return os.str();
}

std::size_t estimateRunBytes(const ExperimentConfig& config, int64_t trainRows, int64_t testRows,
                             Shape input, int classes) {
    const ParamLayout layout(modelArchitecture(config.model, input, classes),
                             config.ensemble.members);
    const std::size_t features = static_cast<std::size_t>(input.size());
    const std::size_t f = sizeof(float);
    const std::size_t k = static_cast<std::size_t>(config.ensemble.members);
    const std::size_t rows = static_cast<std::size_t>(trainRows + testRows);
    std::size_t bytes = 0;
    bytes += 3 * rows * features * f;  // raw + normalised + backend copy
    bytes += 2 * rows * sizeof(int32_t);
    bytes += 5 * layout.size() * f;  // params, m, v, export copy, gradient slack
    const std::size_t threads = 64;  // generous upper bound on per-thread workspaces
    if (layout.isMlp()) {
        std::size_t widthSum = 0;
        for (int w : layout.widths()) {
            widthSum += static_cast<std::size_t>(w);
        }
        bytes += threads * static_cast<std::size_t>(config.training.batchSize) * (2 * widthSum) * f;
    } else {
        // Conv workspaces are a few MB per thread: count the threads this machine has.
        const int cores = std::max(
            1, config.backend.threads > 0 ? config.backend.threads : omp_get_max_threads());
        bytes += cpuConvWorkspaceBytes(layout, config.training.batchSize, cores);
        bytes += k * static_cast<std::size_t>(config.training.batchSize) * features * f;
    }
    bytes += k *
             static_cast<std::size_t>(
                 std::min<int64_t>(kEvalChunkRows, std::max<int64_t>(trainRows, 1))) *
             static_cast<std::size_t>(classes) * f;
    if (config.ensemble.bootstrap != BootstrapMode::None) {
        bytes += k * static_cast<std::size_t>(trainRows) * sizeof(int32_t);
    }
    return bytes;
}

void checkRunFitsInMemory(const ExperimentConfig& config, int64_t trainRows, int64_t testRows,
                          Shape input, int classes) {
    const std::size_t need = estimateRunBytes(config, trainRows, testRows, input, classes);
    const std::size_t have = availableMemoryBytes();
    if (have > 0 && need > have) {
        throw RuntimeError(ErrorKind::Memory, memoryRefusal(need, have, config.ensemble.members));
    }
}

}  // namespace ensemble
