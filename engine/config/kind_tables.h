#pragma once

// The docs' tables of kinds (docs/configuration.md, checked by tst_config), generated from the
// registries' rows, so a new dataset or model kind appears there without an edit.

#include <string>

namespace ensemble {

// Markdown: the dataset kinds (name, what it is, task, inputs, where the rows come from) and the
// model kinds (name, what it is, what it needs).
std::string kindTablesMarkdown();

}  // namespace ensemble
