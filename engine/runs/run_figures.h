#pragma once

// The figures a runs-store entry keeps of a trained ensemble (RunEntry::figures), named as the
// store's filters and the CLI's `runs` columns name them, so the CLI and the app record the
// same names for the same measurement.

#include <map>
#include <string>

#include "metrics/types.h"
#include "train/trainer_report.h"

namespace ensemble::runs {

// Classification: test_accuracy, test_nll, test_brier, test_ece (the report's evaluated split,
// the test split where there is one). Regression: test_rmse, test_mae, test_nll,
// test_coverage (of the 90 % interval), test_sharpness. Non-finite values are left out.
std::map<std::string, double> reportFigures(const TrainerReport& report);

// What an evaluation alone gives, where no report was made: test_accuracy and test_nll
// (classification), test_rmse and test_nll or test_mse (regression, by the loss it trains).
std::map<std::string, double> evaluationFigures(const Evaluation& e, bool gaussian);

}  // namespace ensemble::runs
