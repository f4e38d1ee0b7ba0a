// ensemble-cli predict: an exported ensemble's predictions for the rows of a CSV file, the
// ensemble's and every member's.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "cli/cli_common.h"
#include "cli/commands.h"
#include "data/dataset.h"
#include "io/model_io.h"
#include "metrics/regression.h"
#include "sys/atomic_file.h"

namespace ensemble::cli {

namespace {

// predict for a regression model: the mixture's mean and std with its aleatoric and epistemic
// parts, then each member's mean and std, in raw target units.
ExitCode predictRegression(const LoadedEnsemble& ensemble, const CliArgs& args) {
    const Dataset input =
        readCsvFeatures(args.require("--input"), ensemble.layout.inputs(), ensemble.target);
    const std::string output = args.require("--output");
    const int threads = static_cast<int>(parseCount(args, "--threads", 0, 0));
    MemberPredictions p;
    p.members = ensemble.layout.members();
    p.rows = input.rows;
    p.classes = ensemble.layout.classes();
    p.logProbs = predictLogProbs(ensemble, input.x.data(), input.rows, threads);
    const MemberGaussians g =
        memberGaussians(p, ensemble.normalization.targetMean, ensemble.normalization.targetStd);
    const std::vector<uint8_t> include = includedMembers(ensemble);
    std::vector<int> used;
    for (int m = 0; m < p.members; ++m) {
        if (include[static_cast<std::size_t>(m)] != 0) {
            used.push_back(m);
        }
    }
    RegressionPoints mix;
    if (!used.empty()) {
        mix = mixturePoints(g, used);
    }
    std::string out = "ens_mean,ens_std,ens_aleatoric_std,ens_epistemic_std";
    for (int m = 0; m < p.members; ++m) {
        out += ",m" + std::to_string(m) + "_mean,m" + std::to_string(m) + "_std";
    }
    out += '\n';
    char buf[40];
    const auto put = [&](const char* sep, double v) {
        std::snprintf(buf, sizeof buf, "%s%.9g", sep, v);
        out += buf;
    };
    for (int64_t i = 0; i < p.rows; ++i) {
        const std::size_t u = static_cast<std::size_t>(i);
        const double nan = std::nan("");
        put("", used.empty() ? nan : mix.mean[u]);
        put(",", used.empty() ? nan : std::sqrt(mix.variance[u]));
        put(",", used.empty() ? nan : std::sqrt(mix.aleatoric[u]));
        put(",", used.empty() ? nan : std::sqrt(mix.epistemic[u]));
        for (int m = 0; m < p.members; ++m) {
            const std::size_t at =
                static_cast<std::size_t>(m) * static_cast<std::size_t>(p.rows) + u;
            put(",", g.mean[at]);
            put(",", std::sqrt(g.variance[at]));
        }
        out += '\n';
    }
    writeFileAtomic(output, out);
    return ExitCode::Ok;
}

}  // namespace

ExitCode commandPredict(const CliArgs& args) {
    const LoadedEnsemble ensemble = importEnsemble(args.require("--weights"));
    if (isRegression(ensemble.config.model.likelihood)) {
        return predictRegression(ensemble, args);
    }
    const Dataset input = readCsvFeatures(args.require("--input"), ensemble.layout.inputs());
    const std::string output = args.require("--output");
    const int threads = static_cast<int>(parseCount(args, "--threads", 0, 0));
    const std::vector<float> logProbs =
        predictLogProbs(ensemble, input.x.data(), input.rows, threads);

    const int k = ensemble.layout.members();
    const int c = ensemble.layout.classes();
    const int64_t rows = input.rows;
    // The ensemble's average: its switched-on, non-diverged members.
    const std::vector<uint8_t> include = includedMembers(ensemble);
    const int used = static_cast<int>(std::count(include.begin(), include.end(), uint8_t{1}));
    std::string out;
    out.reserve(static_cast<std::size_t>(rows) * (k + 1) * c * 12);
    for (int j = 0; j < c; ++j) {
        out += (j ? ",ens_p" : "ens_p") + std::to_string(j);
    }
    for (int m = 0; m < k; ++m) {
        for (int j = 0; j < c; ++j) {
            out += ",m" + std::to_string(m) + "_p" + std::to_string(j);
        }
    }
    out += '\n';
    char buf[32];
    std::vector<double> ens(static_cast<std::size_t>(c));
    for (int64_t i = 0; i < rows; ++i) {
        std::fill(ens.begin(), ens.end(), 0.0);
        for (int m = 0; m < k; ++m) {
            if (include[static_cast<std::size_t>(m)] == 0) {
                continue;
            }
            for (int j = 0; j < c; ++j) {
                ens[static_cast<std::size_t>(j)] += std::exp(static_cast<double>(
                    logProbs[(static_cast<std::size_t>(m) * rows + i) * c + j]));
            }
        }
        for (int j = 0; j < c; ++j) {
            std::snprintf(buf, sizeof buf, "%s%.9g", j ? "," : "",
                          used > 0 ? ens[static_cast<std::size_t>(j)] / used : std::nan(""));
            out += buf;
        }
        for (int m = 0; m < k; ++m) {
            for (int j = 0; j < c; ++j) {
                std::snprintf(buf, sizeof buf, ",%.9g",
                              std::exp(static_cast<double>(
                                  logProbs[(static_cast<std::size_t>(m) * rows + i) * c + j])));
                out += buf;
            }
        }
        out += '\n';
    }
    writeFileAtomic(output, out);
    return ExitCode::Ok;
}

}  // namespace ensemble::cli
