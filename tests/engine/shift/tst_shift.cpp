// The shifts (shift/transforms.h) against closed forms, and the shift report
// (shift/shift_report.h) against the evaluation it must agree with. SciPy and NumPy check the
// image transforms on real images in tst_shift_interop (label interop).
#include <QtTest/QtTest>

#include <atomic>
#include <cmath>
#include <memory>
#include <numbers>
#include <random>
#include <vector>

#include <nlohmann/json.hpp>

#include "config/config.h"
#include "core/errors.h"
#include "io/model_io.h"
#include "metrics/report.h"
#include "registry/registry.h"
#include "shift/shift_report.h"
#include "shift/transforms.h"
#include "support/test_support.h"
#include "train/trainer.h"

using namespace ensemble;
using ensemble::test::kExactDouble;
using ensemble::test::kFloatRounding;
using ensemble::test::kStatistical;

namespace {

constexpr int kSide = 28;

std::vector<float> randomImage(uint32_t seed) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> u(0.0f, 255.0f);
    std::vector<float> img(kSide * kSide);
    for (float& v : img) {
        v = u(rng);
    }
    return img;
}

float at(const std::vector<float>& img, int r, int c) {
    return img[static_cast<std::size_t>(r) * kSide + c];
}

// A trained ensemble loaded back from its export, and its data.
struct Trained {
    LoadedEnsemble ensemble;
    DataSplit data;
};

Trained trainSmall(const nlohmann::json& patch, int steps) {
    nlohmann::json cfg = defaultConfigJson();
    cfg.merge_patch(patch);
    // The defaults of a classification run hold keys a regression patch makes inapplicable
    // (active.*): dropped, as the CLI's --set and the panel drop them.
    dropInapplicable(cfg, nullptr);
    cfg["training"]["steps"] = steps;
    cfg["backend"] = {{"kind", "cpu"}, {"threads", 1}};
    const ExperimentConfig config = parseConfig(cfg);
    std::unique_ptr<Trainer> trainer = makeTrainer(config, nullptr);
    trainer->runSteps(steps);
    QTemporaryDir dir;
    const std::string path = (dir.path() + QStringLiteral("/w.safetensors")).toStdString();
    exportEnsemble(path, *trainer);
    return {importEnsemble(path), trainer->data()};
}

}  // namespace

class TestShift : public QObject {
    Q_OBJECT

  private slots:
    void registryRows();
    void rotateByRightAnglesIsRot90();
    void rotateIsBilinearOfTheRotatedPoint();
    void translateIsRoll();
    void noiseIsReproducibleAndClipped();
    void pointShiftsClosedForm();
    void oodSets();
    void errorsSayWhy();
    void reportAgreesWithEvaluation();
    void reportProgressAndCancel();
    void regressionReport();
    void cliCommand();
};

void TestShift::registryRows() {
    const std::vector<double> rotate = defaultShiftLevels(ShiftKind::Rotate, ShiftData::Images);
    QCOMPARE(rotate.size(), std::size_t{13});
    QCOMPARE(rotate.back(), 180.0);
    QCOMPARE(defaultShiftLevels(ShiftKind::Translate, ShiftData::Images).size(), std::size_t{15});
    const std::vector<double> noise = defaultShiftLevels(ShiftKind::Noise, ShiftData::Images);
    QCOMPARE(noise.size(), std::size_t{11});
    QCOMPARE(noise[3], 0.3);
    QCOMPARE(noise.back(), 1.0);
    const std::vector<double> scale = defaultShiftLevels(ShiftKind::Scale, ShiftData::Tabular);
    QCOMPARE(scale.front(), 1.0);
    QCOMPARE(scale.back(), 3.0);
    QVERIFY(shiftApplies(ShiftKind::Rotate, ShiftData::Planar));
    QVERIFY(!shiftApplies(ShiftKind::Rotate, ShiftData::Tabular));
    QVERIFY(!shiftApplies(ShiftKind::Rotate, ShiftData::Regression));
    QVERIFY(!shiftApplies(ShiftKind::Translate, ShiftData::Planar));
    QVERIFY(!shiftApplies(ShiftKind::Scale, ShiftData::Images));
    for (const auto& row : EnumNames<ShiftKind>::table) {
        QVERIFY(shiftApplies(row.value, ShiftData::Images) ||
                shiftApplies(row.value, ShiftData::Planar));
    }
    QCOMPARE(shiftKindsFor(ShiftData::Regression), std::string("noise or scale"));
}

void TestShift::rotateByRightAnglesIsRot90() {
    const std::vector<float> img = randomImage(1);
    std::vector<float> out(img.size());
    // numpy.rot90(img, 1)[i][j] = img[j][W - 1 - i]: exactly, no interpolation.
    rotateImage(img.data(), out.data(), kSide, kSide, 90.0);
    for (int i = 0; i < kSide; ++i) {
        for (int j = 0; j < kSide; ++j) {
            QCOMPARE(at(out, i, j), at(img, j, kSide - 1 - i));
        }
    }
    rotateImage(img.data(), out.data(), kSide, kSide, 180.0);
    for (int i = 0; i < kSide; ++i) {
        for (int j = 0; j < kSide; ++j) {
            QCOMPARE(at(out, i, j), at(img, kSide - 1 - i, kSide - 1 - j));
        }
    }
    // -90 (= 270): rot90(img, 3)[i][j] = img[H - 1 - j][i].
    rotateImage(img.data(), out.data(), kSide, kSide, -90.0);
    for (int i = 0; i < kSide; ++i) {
        for (int j = 0; j < kSide; ++j) {
            QCOMPARE(at(out, i, j), at(img, kSide - 1 - j, i));
        }
    }
    rotateImage(img.data(), out.data(), kSide, kSide, 0.0);
    QCOMPARE(out, img);
    rotateImage(img.data(), out.data(), kSide, kSide, 360.0);
    QCOMPARE(out, img);
}

void TestShift::rotateIsBilinearOfTheRotatedPoint() {
    // Bilinear interpolation reproduces a linear function exactly, so rotating the ramp
    // f(r, c) = 2r + 3c + 1 gives f at the rotated-back point wherever that point lies inside
    // [0, 27]^2, and 0 outside (mode 'constant'). Rotated back by theta about (13.5, 13.5):
    // r' = cos t (r - 13.5) + sin t (c - 13.5) + 13.5, c' = -sin t (r - 13.5) + cos t (c - 13.5)
    // + 13.5.
    std::vector<float> ramp(kSide * kSide);
    for (int r = 0; r < kSide; ++r) {
        for (int c = 0; c < kSide; ++c) {
            ramp[static_cast<std::size_t>(r) * kSide + c] = static_cast<float>(2 * r + 3 * c + 1);
        }
    }
    std::vector<float> out(ramp.size());
    for (double degrees : {15.0, 45.0, 100.0, -30.0}) {
        rotateImage(ramp.data(), out.data(), kSide, kSide, degrees);
        const double t = degrees * std::numbers::pi / 180.0;
        int inside = 0;
        for (int r = 0; r < kSide; ++r) {
            for (int c = 0; c < kSide; ++c) {
                const double rr = std::cos(t) * (r - 13.5) + std::sin(t) * (c - 13.5) + 13.5;
                const double cc = -std::sin(t) * (r - 13.5) + std::cos(t) * (c - 13.5) + 13.5;
                // Points within rounding of the border could go either way: skip them.
                const double margin = 1e-9;
                if (std::min(rr, cc) > margin && std::max(rr, cc) < 27 - margin) {
                    ++inside;
                    ENSEMBLE_COMPARE_NEAR(at(out, r, c), 2 * rr + 3 * cc + 1, 1e-4);
                } else if (std::min(rr, cc) < -margin || std::max(rr, cc) > 27 + margin) {
                    QCOMPARE(at(out, r, c), 0.0f);
                }
            }
        }
        QVERIFY(inside > 400);
    }
}

void TestShift::translateIsRoll() {
    const std::vector<float> img = randomImage(2);
    std::vector<float> out(img.size());
    translateImage(img.data(), out.data(), kSide, kSide, 28);
    QCOMPARE(out, img);
    translateImage(img.data(), out.data(), kSide, kSide, 0);
    QCOMPARE(out, img);
    for (int s : {3, -1, 30}) {
        translateImage(img.data(), out.data(), kSide, kSide, s);
        for (int r = 0; r < kSide; ++r) {
            for (int c = 0; c < kSide; ++c) {
                // numpy.roll(img, s, axis=1)[r][c] = img[r][(c - s) mod W].
                QCOMPARE(at(out, r, c), at(img, r, ((c - s) % kSide + kSide) % kSide));
            }
        }
    }
}

void TestShift::noiseIsReproducibleAndClipped() {
    Dataset images;
    images.rows = 200;
    images.features = kSide * kSide;
    for (int i = 0; i < 200; ++i) {
        const std::vector<float> img = randomImage(static_cast<uint32_t>(i));
        images.x.insert(images.x.end(), img.begin(), img.end());
    }
    ShiftFrame frame;
    frame.data = ShiftData::Images;
    frame.width = frame.height = kSide;
    const Dataset a = applyShift(images, ShiftKind::Noise, 0.3, frame, 11);
    const Dataset b = applyShift(images, ShiftKind::Noise, 0.3, frame, 11);
    const Dataset c = applyShift(images, ShiftKind::Noise, 0.3, frame, 12);
    QCOMPARE(a.x, b.x);
    QVERIFY(a.x != c.x);
    QCOMPARE(applyShift(images, ShiftKind::Noise, 0.0, frame, 11).x, images.x);
    bool clippedLow = false;
    bool clippedHigh = false;
    for (std::size_t i = 0; i < a.x.size(); ++i) {
        QVERIFY(a.x[i] >= 0.0f && a.x[i] <= 255.0f);
        // Unclipped values are x + 0.3 * 255 z with z the stream's draw.
        const double expected = images.x[i] + 0.3 * 255.0 * shiftNoise(11, i);
        if (expected < 0.0) {
            clippedLow = true;
            QCOMPARE(a.x[i], 0.0f);
        } else if (expected > 255.0) {
            clippedHigh = true;
            QCOMPARE(a.x[i], 255.0f);
        } else {
            ENSEMBLE_COMPARE_NEAR(a.x[i], expected, 1e-3);
        }
    }
    QVERIFY(clippedLow && clippedHigh);
    // The draws are standard normal: mean 0, variance 1 over 10^5 draws (sd of the mean 0.003).
    double sum = 0.0;
    double squares = 0.0;
    const int n = 100000;
    for (int i = 0; i < n; ++i) {
        const double z = shiftNoise(5, static_cast<uint64_t>(i));
        sum += z;
        squares += z * z;
    }
    ENSEMBLE_COMPARE_NEAR(sum / n, 0.0, kStatistical);
    ENSEMBLE_COMPARE_NEAR(squares / n, 1.0, kStatistical);
}

void TestShift::pointShiftsClosedForm() {
    Dataset pts;
    pts.rows = 2;
    pts.features = 2;
    pts.x = {3.0f, 1.0f, 1.0f, 4.0f};
    ShiftFrame frame;
    frame.data = ShiftData::Planar;
    frame.mean = {1.0f, 1.0f};
    frame.std = {2.0f, 0.5f};
    // (3, 1) is (2, 0) from the mean: rotated by 90 degrees it is (0, 2), i.e. (1, 3).
    const Dataset r = applyShift(pts, ShiftKind::Rotate, 90.0, frame, 0);
    ENSEMBLE_COMPARE_NEAR(r.x[0], 1.0, kFloatRounding);
    ENSEMBLE_COMPARE_NEAR(r.x[1], 3.0, kFloatRounding);
    ENSEMBLE_COMPARE_NEAR(r.x[2], -2.0, kFloatRounding);  // (0, 3) -> (-3, 0)
    ENSEMBLE_COMPARE_NEAR(r.x[3], 1.0, kFloatRounding);
    const Dataset s = applyShift(pts, ShiftKind::Scale, 2.5, frame, 0);
    ENSEMBLE_COMPARE_NEAR(s.x[0], 1.0 + 2.5 * 2.0, kFloatRounding);
    ENSEMBLE_COMPARE_NEAR(s.x[3], 1.0 + 2.5 * 3.0, kFloatRounding);
    // Noise in standardised units: sigma * std_j * z.
    const Dataset n = applyShift(pts, ShiftKind::Noise, 0.5, frame, 4);
    ENSEMBLE_COMPARE_NEAR(n.x[0], 3.0 + 0.5 * 2.0 * shiftNoise(4, 0), 1e-5);
    ENSEMBLE_COMPARE_NEAR(n.x[3], 4.0 + 0.5 * 0.5 * shiftNoise(4, 3), 1e-5);
}

void TestShift::oodSets() {
    const Dataset u = uniformNoiseImages(50, kSide, kSide, 255.0f, 1);
    QCOMPARE(u.rows, int64_t{50});
    double sum = 0.0;
    for (float v : u.x) {
        QVERIFY(v >= 0.0f && v <= 255.0f);
        sum += v;
    }
    ENSEMBLE_COMPARE_NEAR(sum / static_cast<double>(u.x.size()) / 255.0, 0.5, kStatistical);
    Dataset train;
    train.rows = 3;
    train.features = 2;
    train.x = {0.0f, 0.0f, 3.0f, 4.0f, -1.0f, 0.0f};
    const std::vector<float> mean = {0.0f, 0.0f};
    ENSEMBLE_COMPARE_NEAR(planarRadius(train, mean), 5.0, kExactDouble);
    const Dataset ring = ringPoints(40, train, mean, kRingRadiusFactor, 2);
    for (int64_t i = 0; i < ring.rows; ++i) {
        ENSEMBLE_COMPARE_NEAR(std::hypot(ring.row(i)[0], ring.row(i)[1]), 7.5, 1e-5);
    }
}

void TestShift::errorsSayWhy() {
    DataSplit tabular;
    tabular.name = "iris.csv";
    tabular.train.features = 4;
    try {
        checkShiftApplies(ShiftKind::Rotate, tabular);
        QFAIL("rotate on 4-feature data must be refused");
    } catch (const ConfigError& e) {
        const std::string m = e.what();
        QVERIFY2(m.find("iris.csv") != std::string::npos, e.what());
        QVERIFY2(m.find("4 features") != std::string::npos, e.what());
        QVERIFY2(m.find("noise or scale") != std::string::npos, e.what());
    }
    QVERIFY_THROWS_EXCEPTION(ConfigError, parseShiftLevels("0,x,2"));
    QVERIFY_THROWS_EXCEPTION(ConfigError, parseShiftLevels(""));
    QCOMPARE(parseShiftLevels("0, 15,30"), (std::vector<double>{0, 15, 30}));
    ShiftFrame frame;
    frame.data = ShiftData::Tabular;
    frame.mean = {0.0f};
    frame.std = {1.0f};
    Dataset one;
    one.features = 1;
    QVERIFY_THROWS_EXCEPTION(ConfigError, applyShift(one, ShiftKind::Scale, 0.0, frame, 0));
    QVERIFY_THROWS_EXCEPTION(ConfigError, applyShift(one, ShiftKind::Noise, -1.0, frame, 0));
}

void TestShift::reportAgreesWithEvaluation() {
    const Trained t = trainSmall({{"dataset", {{"kind", "spirals"}, {"n", 400}}},
                                  {"ensemble", {{"members", 3}, {"seed", 5}}}},
                                 150);
    ShiftOptions options;
    options.kind = ShiftKind::Rotate;
    options.levels = {0.0, 90.0};
    options.seed = 5;
    options.chunkRows = 17;
    const ShiftReport r = computeShiftReport(t.ensemble, t.data, options);
    QVERIFY(r.complete);
    QCOMPARE(r.levels.size(), std::size_t{2});
    QCOMPARE(r.rows, t.data.test.rows);
    QCOMPARE(r.calibrationRows + r.measureRows, r.rows);
    // Level 0 is the test split itself: its ensemble block equals evaluateEnsemble's, and the
    // temperature is the one eval fits on the same halves.
    MemberPredictions p;
    p.members = t.ensemble.layout.members();
    p.rows = t.data.test.rows;
    p.classes = t.ensemble.layout.classes();
    p.logProbs = predictLogProbs(t.ensemble, t.data.test.x.data(), p.rows);
    EvaluationInput input;
    input.predictions = &p;
    input.labels = &t.data.test.y;
    EvaluationOptions eo;
    eo.seed = 5;
    const EnsembleReport e = evaluateEnsemble(input, eo);
    const ShiftLevelReport& l0 = r.levels[0];
    QCOMPARE(l0.ensemble.accuracy, e.ensemble.accuracy);
    QCOMPARE(l0.ensemble.nll, e.ensemble.nll);
    QCOMPARE(l0.ensemble.brier, e.ensemble.brier);
    QCOMPARE(l0.ensemble.epistemicMean, e.uncertainty.epistemicMean);
    QCOMPARE(r.temperature, e.temperature.fit.temperature);
    QCOMPARE(r.calibrationRows, e.temperature.validationRows);
    QCOMPARE(l0.ensembleTs.nll, e.temperature.after.nll);
    // ensemble_measure is the untempered ensemble on the same rows: eval's "before".
    QCOMPARE(l0.ensembleMeasure.nll, e.temperature.before.nll);
    QCOMPARE(l0.ensembleMeasure.rows, r.measureRows);
    QCOMPARE(l0.members.size(), std::size_t{3});
    QCOMPARE(l0.members[1].nll, e.members[1].nll);
    // The level-90 block is the ensemble on the rotated points.
    ShiftFrame frame = shiftFrameOf(t.data, t.ensemble.normalization);
    const Dataset turned = applyShift(t.data.test, ShiftKind::Rotate, 90.0, frame, 5);
    MemberPredictions q = p;
    q.logProbs = predictLogProbs(t.ensemble, turned.x.data(), q.rows);
    input.predictions = &q;
    input.labels = &turned.y;
    QCOMPARE(r.levels[1].ensemble.nll, evaluateEnsemble(input, eo).ensemble.nll);
    // The report's JSON keys (a public contract).
    const nlohmann::json j = shiftReportJson(r);
    QCOMPARE(j["shift"].get<std::string>(), std::string("rotate"));
    QCOMPARE(j["levels"][1]["level"].get<double>(), 90.0);
    for (const char* block : {"ensemble", "ensemble_ts", "ensemble_measure"}) {
        for (const char* key :
             {"accuracy", "nll", "brier", "ece", "entropy_mean", "epistemic_mean", "rows"}) {
            QVERIFY2(j["levels"][0][block].contains(key), key);
        }
    }
    for (const char* key : {"coverage", "set_size_mean", "aurc"}) {
        QVERIFY2(j["levels"][0]["ensemble_ts"].contains(key), key);
        QVERIFY2(j["levels"][0]["members_ts"][0].contains(key), key);
        QVERIFY2(!j["levels"][0]["ensemble"].contains(key), key);
    }
    QCOMPARE(j["levels"][0]["members"].size(), std::size_t{3});
    QCOMPARE(j["rows"]["calibration"].get<int64_t>(), r.calibrationRows);
    QVERIFY(j["ood"]["available"].get<bool>());
    QCOMPARE(j["ood"]["dataset"].get<std::string>(), std::string("ring"));
    // --subset: the first N rows.
    options.subset = 50;
    const ShiftReport s = computeShiftReport(t.ensemble, t.data, options);
    QCOMPARE(s.rows, int64_t{50});
    QCOMPARE(s.testRows, t.data.test.rows);
    // translate does not apply to 2-D points.
    options.kind = ShiftKind::Translate;
    options.levels.clear();
    QVERIFY_THROWS_EXCEPTION(ConfigError, computeShiftReport(t.ensemble, t.data, options));
}

void TestShift::reportProgressAndCancel() {
    const Trained t = trainSmall(
        {{"dataset", {{"kind", "moons"}, {"n", 300}}}, {"ensemble", {{"members", 2}}}}, 20);
    ShiftOptions options;
    options.kind = ShiftKind::Scale;
    options.chunkRows = 10;
    int calls = 0;
    int64_t last = 0;
    int64_t total = 0;
    const ShiftReport r =
        computeShiftReport(t.ensemble, t.data, options, [&](const ShiftProgress& p) {
            ++calls;
            QVERIFY(p.rowsDone > last);
            last = p.rowsDone;
            total = p.rowsTotal;
        });
    QCOMPARE(r.levels.size(), std::size_t{9});  // 1, 1.25, ..., 3
    QCOMPARE(last, total);
    QVERIFY(calls >= 9);
    // Cancelled after the third chunk: the report says so and keeps what was finished.
    std::atomic<bool> cancel{false};
    int chunks = 0;
    const ShiftReport c = computeShiftReport(
        t.ensemble, t.data, options,
        [&](const ShiftProgress&) {
            if (++chunks == 3) {
                cancel = true;
            }
        },
        &cancel);
    QVERIFY(!c.complete);
    QVERIFY(c.levels.size() < 9);
    QCOMPARE(chunks, 3);
}

void TestShift::regressionReport() {
    const Trained t = trainSmall({{"dataset", {{"kind", "cubic"}, {"n", 300}}},
                                  {"model", {{"likelihood", "gaussian"}}},
                                  {"ensemble", {{"members", 2}}}},
                                 100);
    ShiftOptions options;
    options.kind = ShiftKind::Noise;
    options.levels = {0.0, 1.0};
    const ShiftReport r = computeShiftReport(t.ensemble, t.data, options);
    QVERIFY(r.regression);
    QVERIFY(std::isfinite(r.intervalThreshold));
    const ShiftRegressionMetrics& e0 = r.levels[0].regressionEnsemble;
    QVERIFY(e0.rmse > 0.0);
    QVERIFY(e0.intervalCoverage >= 0.0 && e0.intervalCoverage <= 1.0);
    QCOMPARE(r.levels[0].regressionMembers.size(), std::size_t{2});
    // The RMSE is the one evaluateRegression gives on the unshifted split.
    MemberPredictions p;
    p.members = t.ensemble.layout.members();
    p.rows = t.data.test.rows;
    p.classes = t.ensemble.layout.classes();
    p.logProbs = predictLogProbs(t.ensemble, t.data.test.x.data(), p.rows);
    const RegressionReport ref =
        evaluateRegression(p, t.data.test.target, {}, t.ensemble.normalization.targetMean,
                           t.ensemble.normalization.targetStd);
    QCOMPARE(e0.rmse, ref.ensemble.rmse);
    const nlohmann::json j = shiftReportJson(r);
    for (const char* key : {"rmse", "nll", "coverage_90", "interval_coverage"}) {
        QVERIFY2(j["levels"][1]["ensemble"].contains(key), key);
    }
    options.kind = ShiftKind::Rotate;
    QVERIFY_THROWS_EXCEPTION(ConfigError, computeShiftReport(t.ensemble, t.data, options));
}

void TestShift::cliCommand() {
    // `ensemble-cli shift` and `eval --alpha` on a small spirals ensemble: exit codes, the
    // report's keys, and errors that say why.
    using ensemble::test::runCli;
    QTemporaryDir dir;
    const QString weights = dir.filePath(QStringLiteral("w.safetensors"));
    const auto train =
        runCli({QStringLiteral("train"), QStringLiteral("--config"), QStringLiteral("spirals"),
                QStringLiteral("--set"), QStringLiteral("training.steps=30"),
                QStringLiteral("--set"), QStringLiteral("ensemble.members=2"),
                QStringLiteral("--export"), weights, QStringLiteral("--quiet")});
    QVERIFY2(train.code == 0, qPrintable(ensemble::test::describe(train)));
    const QString report = dir.filePath(QStringLiteral("shift.json"));
    const auto shift =
        runCli({QStringLiteral("shift"), QStringLiteral("--weights"), weights,
                QStringLiteral("--shift"), QStringLiteral("rotate"), QStringLiteral("--levels"),
                QStringLiteral("0,90"), QStringLiteral("--report"), report, QStringLiteral("--csv"),
                dir.filePath(QStringLiteral("csv"))});
    QVERIFY2(shift.code == 0, qPrintable(ensemble::test::describe(shift)));
    QVERIFY(shift.out.contains(QStringLiteral("\n90 ")));
    QFile f(report);
    QVERIFY(f.open(QIODevice::ReadOnly));
    const nlohmann::json j = nlohmann::json::parse(f.readAll().toStdString());
    QCOMPARE(j["shift"].get<std::string>(), std::string("rotate"));
    QCOMPARE(j["levels"].size(), std::size_t{2});
    QCOMPARE(j["levels"][1]["level"].get<double>(), 90.0);
    QVERIFY(j["levels"][0]["ensemble_ts"].contains("coverage"));
    QVERIFY(QFile::exists(dir.filePath(QStringLiteral("csv/shift_levels.csv"))));
    // translate is for images; a bad alpha; an unknown shift: usage errors (exit 2).
    const auto translate = runCli({QStringLiteral("shift"), QStringLiteral("--weights"), weights,
                                   QStringLiteral("--shift"), QStringLiteral("translate")});
    QCOMPARE(translate.code, 2);
    QVERIFY2(translate.err.contains(QStringLiteral("for it use")), qPrintable(translate.err));
    QCOMPARE(runCli({QStringLiteral("shift"), QStringLiteral("--weights"), weights,
                     QStringLiteral("--shift"), QStringLiteral("rotate"), QStringLiteral("--alpha"),
                     QStringLiteral("1.5")})
                 .code,
             2);
    QCOMPARE(runCli({QStringLiteral("shift"), QStringLiteral("--weights"), weights,
                     QStringLiteral("--shift"), QStringLiteral("spin")})
                 .code,
             2);
    // eval --alpha writes "conformal" and "selective"; --ood ring works on 2-D data and
    // uniform-noise says why not.
    const QString evalReport = dir.filePath(QStringLiteral("eval.json"));
    const auto eval =
        runCli({QStringLiteral("eval"), QStringLiteral("--weights"), weights,
                QStringLiteral("--alpha"), QStringLiteral("0.1"), QStringLiteral("--ood"),
                QStringLiteral("ring"), QStringLiteral("--report"), evalReport});
    QVERIFY2(eval.code == 0, qPrintable(ensemble::test::describe(eval)));
    QFile g(evalReport);
    QVERIFY(g.open(QIODevice::ReadOnly));
    const nlohmann::json e = nlohmann::json::parse(g.readAll().toStdString());
    QCOMPARE(e["conformal"]["alpha"].get<double>(), 0.1);
    QVERIFY(e["conformal"]["lac"].contains("coverage_by_size"));
    QVERIFY(e["selective"]["mutual_information"].contains("aurc"));
    QCOMPARE(e["ood"]["dataset"].get<std::string>(), std::string("ring"));
    QVERIFY(e["ood"]["max_prob"].contains("aupr"));
    const auto noise = runCli({QStringLiteral("eval"), QStringLiteral("--weights"), weights,
                               QStringLiteral("--ood"), QStringLiteral("uniform-noise")});
    QCOMPARE(noise.code, 2);
    QVERIFY2(noise.err.contains(QStringLiteral("--ood ring")), qPrintable(noise.err));
}

QTEST_GUILESS_MAIN(TestShift)
#include "tst_shift.moc"
