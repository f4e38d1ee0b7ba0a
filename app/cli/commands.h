#pragma once

// The commands of ensemble-cli, one file each (<name>_command.cpp); main.cpp's command table
// gives each its name, synopsis, summary and flags, and dispatches to it. Each returns the
// process's exit code and throws ConfigError / DataError / RuntimeError, which main() maps with
// exitCodeFor (core/exit_codes.h).

#include "cli/cli_common.h"
#include "core/exit_codes.h"

namespace ensemble::cli {

ExitCode commandTrain(const CliArgs& args);
ExitCode commandPredict(const CliArgs& args);
// Converts an export (or a checkpoint's export) to safetensors, ONNX or .npz
// (io/export_formats.h); --format, else the --out name's extension, picks the format.
ExitCode commandExport(const CliArgs& args);
ExitCode commandDataset(const CliArgs& args);
ExitCode commandBench(const CliArgs& args);
ExitCode commandEval(const CliArgs& args);
// The ensemble under a shift of its test split, level by level (engine/shift/shift_report.h).
ExitCode commandShift(const CliArgs& args);
// The active-learning loop (engine/active/active_learning.h) for each acquisition function and
// seed: learning curves, acquired rows and the labels needed to reach an accuracy.
ExitCode commandActive(const CliArgs& args);
// Each ensemble method (model/ensemble_methods.h) trained on the same data, K, steps and seed,
// measured side by side (engine/compare/compare.h).
ExitCode commandCompare(const CliArgs& args);
// A published experiment rerun and judged against the paper's numbers
// (engine/reproduce/reproduce.h); --list names the registered ones.
ExitCode commandReproduce(const CliArgs& args);
// Validates --config and --set and prints the config that results: exactly the keys that apply,
// defaults filled in (what an export stores).
ExitCode commandConfig(const CliArgs& args);
// Prints the config schema: docs/configuration.md's Markdown table, or JSON for tools.
ExitCode commandSchema(const CliArgs& args);
// Lists the built-in presets' names, one a line.
ExitCode commandPresets(const CliArgs& args);
// The runs store every recording command and the app write (runs_command.cpp): list, show one
// entry, diff two, tag, note, remove, export the table.
ExitCode commandRunsList(const CliArgs& args);
ExitCode commandRunsShow(const CliArgs& args);
ExitCode commandRunsDiff(const CliArgs& args);
ExitCode commandRunsTag(const CliArgs& args);
ExitCode commandRunsNote(const CliArgs& args);
ExitCode commandRunsRemove(const CliArgs& args);
ExitCode commandRunsExport(const CliArgs& args);

}  // namespace ensemble::cli
