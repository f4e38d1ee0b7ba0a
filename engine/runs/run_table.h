#pragma once

// The runs table as text: its default columns, its cells, and the table as aligned text or
// CSV. One writer for the CLI (`ensemble-cli runs list`, `runs export`) and the app's Runs view
// (its Export CSV), so both write the same bytes for the same entries and columns.

#include <string>
#include <vector>

#include "runs/run_store.h"

namespace ensemble::runs {

// One row of cells per entry, one cell per column: runFieldText(entry, column).
using RunTableCells = std::vector<std::vector<std::string>>;

// The columns a table shows when none are asked for: id, started, kind, state, preset,
// dataset, method, members, the headline figures that `figureNames` holds (test_accuracy,
// test_rmse, test_nll, test_ece, in that order), wall and tag.
std::vector<std::string> defaultRunColumns(const std::vector<std::string>& figureNames);
// The figure names of `entries`, sorted and distinct (defaultRunColumns' argument).
std::vector<std::string> figureNamesOf(const std::vector<RunEntry>& entries);

// Whether a column needs the entries' configs (a config.* column: RunQuery::full).
bool runColumnsNeedConfig(const std::vector<std::string>& columns);

// A column's header as a table shows it: figures without their prefix ("test_nll").
std::string runColumnHeader(const std::string& column);

RunTableCells runTableCells(const std::vector<RunEntry>& entries,
                            const std::vector<std::string>& columns);

// Aligned text: a header line (runColumnHeader), then a line per row; columns whose every cell
// reads as a number (or is empty) are right-aligned, others left-aligned, two blanks apart.
std::string runTableText(const std::vector<std::string>& headers, const RunTableCells& rows);

// CSV (RFC 4180 quoting where a field needs it, "\n" line ends): a header line with the
// columns' field names as given, then a line per row.
std::string runTableCsv(const std::vector<std::string>& columns, const RunTableCells& rows);

}  // namespace ensemble::runs
