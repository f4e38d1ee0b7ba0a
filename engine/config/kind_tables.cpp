#include "config/kind_tables.h"
#include "core/unreachable.h"

#include "data/dataset_kinds.h"
#include "model/ensemble_methods.h"
#include "model/model_kinds.h"

namespace ensemble {

namespace {

const char* sourceText(DataSource source) {
    switch (source) {
        case DataSource::Generator:
            return "generated (`dataset.n`, `dataset.seed`)";
        case DataSource::CsvFile:
            return "a CSV file (`dataset.path`)";
        case DataSource::IdxImages:
            return "IDX files (`dataset.path` or the default folders)";
        case DataSource::Bundled:
            return "shipped with the program (the data folder)";
    }
    unreachableKind("DataSource");
}

std::string taskText(const DatasetKindInfo& row) {
    return row.taskFromConfig ? "`dataset.task`" : toString(row.task);
}

std::string inputsText(const DatasetKindInfo& row) {
    if (row.source == DataSource::IdxImages) {
        return "images";
    }
    if (row.planar) {
        return "points in the plane";
    }
    if (row.source == DataSource::Bundled) {
        return "the table's feature columns";
    }
    return row.source == DataSource::CsvFile ? "the CSV's feature columns"
                                             : "numbers (`x0`, `x1`, ...)";
}

}  // namespace

std::string kindTablesMarkdown() {
    std::string out =
        "| `dataset.kind` | what it is | task | inputs | rows |\n"
        "|---|---|---|---|---|\n";
    for (const DatasetKindInfo& row : EnumNames<DatasetKind>::table) {
        out += "| `" + std::string(row.name) + "` | " + row.help + " | " + taskText(row) + " | " +
               inputsText(row) + " | " + sourceText(row.source) + " |\n";
    }
    out +=
        "\n| `model.kind` | what it is | needs |\n"
        "|---|---|---|\n";
    for (const ModelKindInfo& row : EnumNames<ModelKind>::table) {
        out += "| `" + std::string(row.name) + "` | " + row.help + " | " +
               (row.needsImages ? "an image dataset" : "any dataset") +
               (row.adversarialTraining ? "" : "; no `training.adversarial_eps`") + " |\n";
    }
    out +=
        "\n| `ensemble.method` | what it is | MPI mesh |\n"
        "|---|---|---|\n";
    for (const EnsembleMethodInfo& row : EnumNames<EnsembleMethod>::table) {
        out += "| `" + std::string(row.name) + "` | " + row.help + " | " +
               (row.sharedTraining ? "the data axis only" : "both axes") + " |\n";
    }
    return out;
}

}  // namespace ensemble
