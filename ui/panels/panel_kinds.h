#pragma once

// The Experiment panel's questions about kinds, each answered once from the engine's registries
// (data/dataset_kinds.h, model/model_kinds.h): is this dataset images, a CSV file, generated, a
// regression one; does this model need images; which kinds read a key.

#include <string>

#include "config/config_schema.h"

namespace ensemble::ui {

// dataset.kind: images read from a folder of IDX files (mnist, fashion-mnist).
bool isImageDataset(const std::string& kind);
// dataset.kind: rows read from a CSV file (dataset.path).
bool isCsvDataset(const std::string& kind);
// dataset.kind: drawn from dataset.seed, the 2-D generators and the regression generators.
bool isGeneratedDataset(const std::string& kind);
// dataset.kind: a table shipped with the program, named by its own key (uci: dataset.uci_set).
bool isShippedDataset(const std::string& kind);
// A regression kind, or one whose dataset.task (csv) is regression.
bool isRegressionDataset(const std::string& kind, const std::string& task);

// model.kind: members that read images.
bool modelNeedsImages(const std::string& modelKind);

// model.likelihood: a regression head (gaussian, mse) rather than categorical.
bool isRegressionLikelihood(const std::string& likelihood);
// The head a dataset of that task gets when the current one does not fit it.
std::string defaultLikelihood(bool regression);

// When the form offers a key the engine accepts whatever the kinds, but only some kinds read
// (dataset.n, dataset.rotations, optimizer.momentum, backend.device, ...). Written as the
// schema writes its own conditions (KeySpec::when), so a row can move into the schema as it
// is; always() for a key without one.
const Condition& formCondition(const std::string& key);

}  // namespace ensemble::ui
