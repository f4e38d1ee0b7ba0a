#include "runs/run_figures.h"

#include <cmath>

namespace ensemble::runs {

namespace {

void putFiniteFigure(std::map<std::string, double>& figures, const char* name, double value) {
    if (std::isfinite(value)) {
        figures[name] = value;
    }
}

}  // namespace

std::map<std::string, double> reportFigures(const TrainerReport& report) {
    std::map<std::string, double> figures;
    if (report.regression) {
        const RegressionMetrics& m = report.regression->ensemble;
        putFiniteFigure(figures, "test_rmse", m.rmse);
        putFiniteFigure(figures, "test_mae", m.mae);
        putFiniteFigure(figures, "test_nll", m.nll);
        putFiniteFigure(figures, "test_coverage",
                        m.coverage[1]);  // kCoverageLevels: 0.5, 0.9, 0.95
        putFiniteFigure(figures, "test_sharpness", m.sharpness);
        return figures;
    }
    if (report.report.classes == 0) {
        return figures;  // no report was made
    }
    const ClassificationMetrics& m = report.report.ensemble;
    putFiniteFigure(figures, "test_accuracy", m.accuracy);
    putFiniteFigure(figures, "test_nll", m.nll);
    putFiniteFigure(figures, "test_brier", m.brier);
    putFiniteFigure(figures, "test_ece", m.ece);
    return figures;
}

std::map<std::string, double> evaluationFigures(const Evaluation& e, bool gaussian) {
    std::map<std::string, double> figures;
    if (std::isnan(e.ensembleTest.accuracy)) {
        putFiniteFigure(figures, "test_rmse", e.ensembleTest.rmse);
        putFiniteFigure(figures, gaussian ? "test_nll" : "test_mse", e.ensembleTest.loss);
        return figures;
    }
    putFiniteFigure(figures, "test_accuracy", e.ensembleTest.accuracy);
    putFiniteFigure(figures, "test_nll", e.ensembleTest.loss);
    return figures;
}

}  // namespace ensemble::runs
