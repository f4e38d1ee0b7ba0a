// ensemble-cli dataset: writes the train or test split of a config's dataset as CSV.
#include <cstdio>
#include <string>

#include "cli/cli_common.h"
#include "cli/commands.h"
#include "core/errors.h"
#include "data/dataset.h"

namespace ensemble::cli {

ExitCode commandDataset(const CliArgs& args) {
    const ExperimentConfig config = configFrom(args);
    const std::string split = args.get("--split", "train");
    if (split != "train" && split != "test") {
        throw ConfigError("--split: expected train or test, got '" + split + "'");
    }
    const DataSplit data = loadDataSplit(config.dataset);
    writeCsv(args.require("--out"), split == "train" ? data.train : data.test);
    std::fprintf(stderr, "wrote %lld %s rows of %s to %s\n",
                 static_cast<long long>(split == "train" ? data.train.rows : data.test.rows),
                 split.c_str(), data.name.c_str(), args.get("--out").c_str());
    return ExitCode::Ok;
}

}  // namespace ensemble::cli
