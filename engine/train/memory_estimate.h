#pragma once

// What a run needs in memory, estimated before the trainer allocates it, and the check that
// refuses a run the machine cannot hold (the trainer makes it for its rank's share).

#include <cstddef>
#include <cstdint>
#include <string>

#include "config/config.h"
#include "model/architecture.h"

namespace ensemble {

// Rows the trainer evaluates per backend call: bounds the K x rows x C buffer that the
// estimate counts.
inline constexpr int64_t kEvalChunkRows = 4096;

// Bytes a run needs (data, parameters, optimizer state, workspaces, evaluation buffers) for
// inputs of shape `input`.
std::size_t estimateRunBytes(const ExperimentConfig& config, int64_t trainRows, int64_t testRows,
                             Shape input, int classes);
// MemAvailable of /proc/meminfo in bytes; 0 when unknown.
std::size_t availableMemoryBytes();
// "this run needs about N MiB but only M MiB of memory is available (K = ...); reduce ..."
std::string memoryRefusal(std::size_t need, std::size_t have, int members);
// Throws RuntimeError with the estimate when it exceeds the memory the machine has available.
void checkRunFitsInMemory(const ExperimentConfig& config, int64_t trainRows, int64_t testRows,
                          Shape input, int classes);

}  // namespace ensemble
