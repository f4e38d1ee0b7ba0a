#include "metrics/regression.h"

#include <charconv>
#include <cmath>
#include <filesystem>
#include <limits>
#include <numbers>
#include <stdexcept>
#include <system_error>

#include "core/errors.h"
#include "metrics/metrics_detail.h"
#include "metrics/report.h"
#include "sys/atomic_file.h"

namespace ensemble {

using detail::kNaN;

namespace {

// z such that N(0, 1) puts mass p in [-z, z]: Phi^-1((1 + p) / 2) for p = 0.5, 0.9, 0.95.
constexpr std::array<double, 3> kCoverageZ = {0.67448975019608171, 1.6448536269514722,
                                              1.9599639845400540};

std::size_t at(int k, int64_t rows, int64_t i) {
    return static_cast<std::size_t>(k) * static_cast<std::size_t>(rows) +
           static_cast<std::size_t>(i);
}

std::vector<int> chosenMembers(int members, const std::vector<uint8_t>& include) {
    std::vector<int> out;
    for (int k = 0; k < members; ++k) {
        if (include.empty() || include[static_cast<std::size_t>(k)] != 0) {
            out.push_back(k);
        }
    }
    return out;
}

// Member k alone as a "mixture" of one: its own mean and variance, all aleatoric.
RegressionPoints memberPoints(const MemberGaussians& g, int k) {
    return mixturePoints(g, {k});
}

nlohmann::json metricsJson(const RegressionMetrics& m) {
    nlohmann::json j = {{"rmse", jsonNumber(m.rmse)},
                        {"mae", jsonNumber(m.mae)},
                        {"nll", jsonNumber(m.nll)},
                        {"sharpness", jsonNumber(m.sharpness)}};
    if (m.probabilistic()) {
        j["coverage"] = {{"50", jsonNumber(m.coverage[0])},
                         {"90", jsonNumber(m.coverage[1])},
                         {"95", jsonNumber(m.coverage[2])}};
        nlohmann::json observed = nlohmann::json::array();
        for (double v : m.calibrationObserved) {
            observed.push_back(jsonNumber(v));
        }
        j["calibration"] = {{"observed", observed}, {"mean_abs_gap", jsonNumber(m.calibrationGap)}};
    } else {
        j["coverage"] = nullptr;
        j["calibration"] = nullptr;
    }
    return j;
}

}  // namespace

double regressionCalibrationLevel(int j) {
    return 0.05 * static_cast<double>(j + 1);
}

MemberGaussians memberGaussians(const MemberPredictions& p, double targetMean, double targetStd) {
    if (p.classes != 1 && p.classes != 2) {
        throw std::invalid_argument("memberGaussians: a regression head has 1 or 2 outputs, got " +
                                    std::to_string(p.classes));
    }
    MemberGaussians g;
    g.members = p.members;
    g.rows = p.rows;
    const std::size_t n = static_cast<std::size_t>(p.members) * static_cast<std::size_t>(p.rows);
    g.mean.resize(n);
    g.variance.assign(n, 0.0);
    const double var = targetStd * targetStd;
    for (std::size_t r = 0; r < n; ++r) {
        const float* o = p.logProbs.data() + r * static_cast<std::size_t>(p.classes);
        g.mean[r] = static_cast<double>(o[0]) * targetStd + targetMean;
        if (p.classes == 2) {
            g.variance[r] = static_cast<double>(o[1]) * var;
        }
    }
    return g;
}

RegressionPoints mixturePoints(const MemberGaussians& g, const std::vector<int>& members) {
    if (members.empty()) {
        throw std::invalid_argument("mixturePoints: no member to mix");
    }
    RegressionPoints out;
    out.rows = g.rows;
    out.members = static_cast<int>(members.size());
    const std::size_t n = static_cast<std::size_t>(g.rows);
    out.mean.resize(n);
    out.variance.resize(n);
    out.aleatoric.resize(n);
    out.epistemic.resize(n);
    const double kInv = 1.0 / static_cast<double>(members.size());
    for (int64_t i = 0; i < g.rows; ++i) {
        double mu = 0.0;
        double alea = 0.0;
        for (int k : members) {
            mu += g.mean[at(k, g.rows, i)];
            alea += g.variance[at(k, g.rows, i)];
        }
        mu *= kInv;
        alea *= kInv;
        // The population variance of the means, from deviations (no cancellation).
        double epi = 0.0;
        for (int k : members) {
            const double d = g.mean[at(k, g.rows, i)] - mu;
            epi += d * d;
        }
        epi *= kInv;
        const std::size_t u = static_cast<std::size_t>(i);
        out.mean[u] = mu;
        out.aleatoric[u] = alea;
        out.epistemic[u] = epi;
        out.variance[u] = alea + epi;
    }
    return out;
}

RegressionMetrics regressionMetrics(const RegressionPoints& pts,
                                    const std::vector<float>& targets) {
    if (targets.size() != static_cast<std::size_t>(pts.rows)) {
        throw std::invalid_argument("regressionMetrics: " + std::to_string(targets.size()) +
                                    " targets for " + std::to_string(pts.rows) + " points");
    }
    RegressionMetrics m;
    m.rows = pts.rows;
    m.calibrationObserved.assign(kRegressionCalibrationLevels, kNaN);
    if (pts.rows == 0) {
        m.rmse = m.mae = m.nll = m.sharpness = m.calibrationGap = kNaN;
        m.coverage.fill(kNaN);
        return m;
    }
    bool positive = true;
    for (double v : pts.variance) {
        positive = positive && v > 0.0;
    }
    double se = 0.0;
    double ae = 0.0;
    double nll = 0.0;
    double sigmaSum = 0.0;
    std::array<int64_t, 3> covered{};
    std::vector<int64_t> below(kRegressionCalibrationLevels, 0);
    const double logTwoPi = std::log(2.0 * std::numbers::pi);
    for (int64_t i = 0; i < pts.rows; ++i) {
        const std::size_t u = static_cast<std::size_t>(i);
        const double d = static_cast<double>(targets[u]) - pts.mean[u];
        const double var = pts.variance[u];
        const double sigma = std::sqrt(var);
        se += d * d;
        ae += std::abs(d);
        sigmaSum += sigma;
        if (!positive) {
            continue;
        }
        nll += 0.5 * (logTwoPi + std::log(var)) + d * d / (2.0 * var);
        for (std::size_t c = 0; c < kCoverageZ.size(); ++c) {
            covered[c] += std::abs(d) <= kCoverageZ[c] * sigma ? 1 : 0;
        }
        const double cdf = 0.5 * std::erfc(-d / (sigma * std::numbers::sqrt2));
        for (int j = 0; j < kRegressionCalibrationLevels; ++j) {
            below[static_cast<std::size_t>(j)] += cdf <= regressionCalibrationLevel(j) ? 1 : 0;
        }
    }
    const double n = static_cast<double>(pts.rows);
    m.rmse = std::sqrt(se / n);
    m.mae = ae / n;
    m.sharpness = sigmaSum / n;
    if (!positive) {
        m.nll = kNaN;
        m.coverage.fill(kNaN);
        m.calibrationGap = kNaN;
        return m;
    }
    m.nll = nll / n;
    for (std::size_t c = 0; c < covered.size(); ++c) {
        m.coverage[c] = static_cast<double>(covered[c]) / n;
    }
    double gap = 0.0;
    for (int j = 0; j < kRegressionCalibrationLevels; ++j) {
        const double observed = static_cast<double>(below[static_cast<std::size_t>(j)]) / n;
        m.calibrationObserved[static_cast<std::size_t>(j)] = observed;
        gap += std::abs(observed - regressionCalibrationLevel(j));
    }
    m.calibrationGap = gap / kRegressionCalibrationLevels;
    return m;
}

RegressionReport evaluateRegression(const MemberPredictions& p, const std::vector<float>& targets,
                                    const std::vector<uint8_t>& include, double targetMean,
                                    double targetStd, const std::string& split) {
    if (!include.empty() && include.size() != static_cast<std::size_t>(p.members)) {
        throw std::invalid_argument("evaluateRegression: include has " +
                                    std::to_string(include.size()) + " entries for " +
                                    std::to_string(p.members) + " members");
    }
    const std::vector<int> members = chosenMembers(p.members, include);
    if (members.empty()) {
        throw RuntimeError(
            "no member is left in the ensemble (each diverged or is switched off): there is no "
            "ensemble to evaluate");
    }
    const MemberGaussians g = memberGaussians(p, targetMean, targetStd);
    RegressionReport r;
    r.split = split;
    r.likelihood = p.classes == 2 ? Likelihood::Gaussian : Likelihood::Mse;
    r.included.assign(static_cast<std::size_t>(p.members), 0);
    for (int k : members) {
        r.included[static_cast<std::size_t>(k)] = 1;
    }
    r.points = mixturePoints(g, members);
    r.ensemble = regressionMetrics(r.points, targets);
    double alea = 0.0;
    double epi = 0.0;
    for (int64_t i = 0; i < r.points.rows; ++i) {
        alea += std::sqrt(r.points.aleatoric[static_cast<std::size_t>(i)]);
        epi += std::sqrt(r.points.epistemic[static_cast<std::size_t>(i)]);
    }
    r.aleatoricStdMean = r.points.rows > 0 ? alea / static_cast<double>(r.points.rows) : kNaN;
    r.epistemicStdMean = r.points.rows > 0 ? epi / static_cast<double>(r.points.rows) : kNaN;
    for (int k = 0; k < p.members; ++k) {
        r.members.push_back(regressionMetrics(memberPoints(g, k), targets));
    }
    // The first m members' mixtures, one member added at a time (Welford's update of the
    // means' mean and squared deviations), so the curve costs O(K' N), not O(K'^2 N).
    const std::size_t n = static_cast<std::size_t>(p.rows);
    std::vector<double> meanSum(n, 0.0), squares(n, 0.0), aleaSum(n, 0.0);
    RegressionPoints prefix;
    prefix.rows = p.rows;
    prefix.mean.resize(n);
    prefix.variance.resize(n);
    prefix.aleatoric.resize(n);
    prefix.epistemic.resize(n);
    for (std::size_t m = 1; m <= members.size(); ++m) {
        const int k = members[m - 1];
        const double count = static_cast<double>(m);
        for (std::size_t i = 0; i < n; ++i) {
            const double mu = g.mean[at(k, p.rows, static_cast<int64_t>(i))];
            const double delta = mu - meanSum[i];
            meanSum[i] += delta / count;
            squares[i] += delta * (mu - meanSum[i]);
            aleaSum[i] += g.variance[at(k, p.rows, static_cast<int64_t>(i))];
            prefix.mean[i] = meanSum[i];
            prefix.aleatoric[i] = aleaSum[i] / count;
            prefix.epistemic[i] = squares[i] / count;
            prefix.variance[i] = prefix.aleatoric[i] + prefix.epistemic[i];
        }
        prefix.members = static_cast<int>(m);
        const RegressionMetrics s = regressionMetrics(prefix, targets);
        r.sizeCurve.push_back({static_cast<int>(m), s.nll, s.rmse});
    }
    return r;
}

SplitEvaluation evaluateRegressionSplit(const MemberPredictions& p,
                                        const std::vector<float>& targets,
                                        const std::vector<uint8_t>& include, Likelihood likelihood,
                                        double targetMean, double targetStd) {
    const MemberGaussians g = memberGaussians(p, targetMean, targetStd);
    const auto split = [&](const RegressionPoints& pts) {
        SplitMetrics s;
        const RegressionMetrics m = regressionMetrics(pts, targets);
        s.rmse = m.rmse;
        s.loss = likelihood == Likelihood::Gaussian ? m.nll : m.rmse * m.rmse;
        s.accuracy = kNaN;
        return s;
    };
    SplitEvaluation e;
    const std::vector<int> members = chosenMembers(p.members, include);
    if (members.empty()) {
        e.ensemble = {kNaN, kNaN, kNaN};
    } else {
        e.ensemble = split(mixturePoints(g, members));
    }
    for (int k = 0; k < p.members; ++k) {
        e.members.push_back(split(memberPoints(g, k)));
    }
    return e;
}

nlohmann::json regressionReportJson(const RegressionReport& r) {
    nlohmann::json j;
    j["task"] = "regression";
    j["likelihood"] = r.likelihood == Likelihood::Gaussian ? "gaussian" : "mse";
    j["split"] = r.split;
    j["rows"] = r.points.rows;
    j["members_total"] = r.members.size();
    j["members_included"] = r.points.members;
    j["units"] = "raw target units";
    j["definitions"] = {
        {"ensemble",
         "the mixture of the included members' Gaussians: mu = mean_k mu_k, sigma^2 = "
         "mean_k(sigma_k^2 + mu_k^2) - mu^2 = aleatoric + epistemic"},
        {"aleatoric", "mean_k sigma_k^2 (0 for mse members)"},
        {"epistemic", "var_k mu_k, the population variance"},
        {"nll",
         "mean over points of 1/2 log(2 pi sigma^2) + (y - mu)^2 / (2 sigma^2); null "
         "where some sigma is 0"},
        {"coverage", "fraction of targets inside the central 50/90/95% interval of N(mu, sigma^2)"},
        {"calibration",
         "Kuleshov et al. 2018: for each level p the fraction of points with F(y) <= p, F the "
         "CDF of N(mu, sigma^2); mean_abs_gap = mean over p of |observed - p|"},
        {"sharpness", "mean sigma"},
        {"size_curve", "NLL and RMSE of the mixture of the first m included members"}};
    nlohmann::json levels = nlohmann::json::array();
    for (int i = 0; i < kRegressionCalibrationLevels; ++i) {
        levels.push_back(regressionCalibrationLevel(i));
    }
    j["calibration_levels"] = levels;
    nlohmann::json e = metricsJson(r.ensemble);
    e["aleatoric_std_mean"] = jsonNumber(r.aleatoricStdMean);
    e["epistemic_std_mean"] = jsonNumber(r.epistemicStdMean);
    j["ensemble"] = e;
    nlohmann::json members = nlohmann::json::array();
    for (std::size_t k = 0; k < r.members.size(); ++k) {
        nlohmann::json m = metricsJson(r.members[k]);
        m["index"] = k;
        m["included"] = r.included[k] != 0;
        members.push_back(m);
    }
    j["members"] = members;
    nlohmann::json curve = nlohmann::json::array();
    for (const RegressionSizePoint& s : r.sizeCurve) {
        curve.push_back(
            {{"members", s.members}, {"nll", jsonNumber(s.nll)}, {"rmse", jsonNumber(s.rmse)}});
    }
    j["size_curve"] = curve;
    return j;
}

std::string regressionPointsCsv(const RegressionPoints& pts, const std::vector<float>& targets) {
    const bool labelled = targets.size() == static_cast<std::size_t>(pts.rows);
    std::string out = "row,target,mean,std,aleatoric_std,epistemic_std\n";
    for (int64_t i = 0; i < pts.rows; ++i) {
        const std::size_t u = static_cast<std::size_t>(i);
        out += std::to_string(i) + ',' +
               (labelled ? csvNumber(static_cast<double>(targets[u])) : std::string()) + ',' +
               csvNumber(pts.mean[u]) + ',' + csvNumber(std::sqrt(pts.variance[u])) + ',' +
               csvNumber(std::sqrt(pts.aleatoric[u])) + ',' +
               csvNumber(std::sqrt(pts.epistemic[u])) + '\n';
    }
    return out;
}

namespace {

std::string membersLine(const RegressionMetrics& m) {
    std::string line;
    for (double v : {m.rmse, m.mae, m.nll, m.coverage[0], m.coverage[1], m.coverage[2],
                     m.calibrationGap, m.sharpness}) {
        line += ',' + csvNumber(v);
    }
    return line;
}

}  // namespace

std::string regressionMembersCsv(const RegressionReport& r) {
    std::string out =
        "member,included,rmse,mae,nll,coverage_50,coverage_90,coverage_95,calibration_gap,"
        "sharpness\n";
    for (std::size_t k = 0; k < r.members.size(); ++k) {
        out += std::to_string(k) + ',' + (r.included[k] ? "1" : "0") + membersLine(r.members[k]) +
               '\n';
    }
    out += "ensemble," + membersLine(r.ensemble) + '\n';
    return out;
}

std::string regressionCalibrationCsv(const RegressionReport& r) {
    std::string out = "level,ensemble";
    for (std::size_t k = 0; k < r.members.size(); ++k) {
        out += ",m" + std::to_string(k);
    }
    out += '\n';
    for (int j = 0; j < kRegressionCalibrationLevels; ++j) {
        const std::size_t u = static_cast<std::size_t>(j);
        out += csvNumber(regressionCalibrationLevel(j)) + ',' +
               csvNumber(r.ensemble.calibrationObserved[u]);
        for (const RegressionMetrics& m : r.members) {
            out += ',' + csvNumber(m.calibrationObserved[u]);
        }
        out += '\n';
    }
    return out;
}

std::string regressionSizeCurveCsv(const RegressionReport& r) {
    std::string out = "members,nll,rmse\n";
    for (const RegressionSizePoint& s : r.sizeCurve) {
        out += std::to_string(s.members) + ',' + csvNumber(s.nll) + ',' + csvNumber(s.rmse) + '\n';
    }
    return out;
}

void writeRegressionCsvs(const std::string& directory, const RegressionReport& report,
                         const std::vector<float>& targets) {
    const std::filesystem::path dir = createCsvFolder(directory);
    writeFileAtomic((dir / "uncertainty.csv").string(),
                    regressionPointsCsv(report.points, targets));
    writeFileAtomic((dir / "members.csv").string(), regressionMembersCsv(report));
    writeFileAtomic((dir / "calibration.csv").string(), regressionCalibrationCsv(report));
    writeFileAtomic((dir / "size_curve.csv").string(), regressionSizeCurveCsv(report));
}

}  // namespace ensemble
