// Exports other tools run, checked by those tools: for an MLP classifier on spirals,
// an MLP and a CNN on MNIST-format images, and Gaussian and MSE regressors, `ensemble-cli
// export` writes an ONNX model that onnx.checker accepts (tests/interop/check_onnx.py: IR 8,
// opset 17, inputs, outputs, metadata_props, initializer bytes) and that ONNX Runtime
// (onnxruntime-node, tests/interop/ort_run.cjs) runs on the rows `predict` read to the values
// `predict` wrote, within 1e-5 (relative to max(1, |value|)); and an .npz that numpy.load opens
// with every tensor bit for bit and the metadata (tests/interop/check_npz.py), zip64 too. ONNX's
// C++ checker accepts each model, and its external-data form (forced on these small models)
// passes both checkers and gives ONNX Runtime's outputs bit for bit.
//
// Needs python3 with onnx and numpy (Debian: python3-onnx python3-numpy) and node with
// onnxruntime-node, which scripts/fetch-onnxruntime.sh installs into the build tree. Without
// them the suite exits 77 (skipped) with the reason, unless ENSEMBLE_REQUIRE_INTEROP=1 (CI),
// where a missing tool is a failure.
#include <QtTest/QtTest>

#include <cmath>
#include <cstdio>
#include <cstring>

#include <nlohmann/json.hpp>

#include "data/dataset.h"
#include "io/model_io.h"
#include "io/npz.h"
#include "io/onnx_export.h"
#include "io/safetensors.h"
#include "support/onnx_check.h"
#include "support/test_support.h"

using ensemble::test::readFloats;
using ensemble::test::Run;
using ensemble::test::runCli;
using ensemble::test::runProgram;
using ensemble::test::sourceDir;
using nlohmann::json;

namespace {

// The contract's tolerance: ONNX Runtime's float32 graph against predict's output.
constexpr double kOnnxVsPredict = 1e-5;

QString g_python;   // a python3 that imports onnx and numpy
QString g_ortDir;   // .../node_modules/onnxruntime-node
QString g_version;  // the project's version, as metadata_props must say

QString interopScript(const char* name) {
    return sourceDir() + QStringLiteral("/tests/interop/") + QString::fromLatin1(name);
}

// Why the suite cannot run here, or empty.
QString findInteropTools() {
    for (const QString& candidate :
         {QStringLiteral("/usr/bin/python3"), QStringLiteral("python3")}) {
        if (runProgram(candidate, {QStringLiteral("-c"), QStringLiteral("import onnx, numpy")})
                .code == 0) {
            g_python = candidate;
            break;
        }
    }
    if (g_python.isEmpty()) {
        return QStringLiteral(
            "python3 with onnx and numpy is not installed (Debian: apt install "
            "python3-onnx python3-numpy)");
    }
    if (runProgram(QStringLiteral("node"), {QStringLiteral("--version")}).code != 0) {
        return QStringLiteral("node is not installed (Debian: apt install nodejs npm)");
    }
    const QString folder = QDir::currentPath() + QStringLiteral("/test-data/onnxruntime");
    const Run fetch =
        runProgram(sourceDir() + QStringLiteral("/scripts/fetch-onnxruntime.sh"), {folder}, 600000);
    if (fetch.code != 0) {
        return QStringLiteral("scripts/fetch-onnxruntime.sh failed: ") +
               (fetch.out + fetch.err).trimmed();
    }
    g_ortDir = folder + QStringLiteral("/node_modules/onnxruntime-node");
    return {};
}

// A CSV of numbers with a header: rows of doubles ("nan" reads as NaN).
std::vector<std::vector<double>> readNumbers(const QString& path) {
    QFile f(path);
    std::vector<std::vector<double>> rows;
    if (!f.open(QIODevice::ReadOnly)) {
        return rows;
    }
    f.readLine();
    while (!f.atEnd()) {
        const QByteArray line = f.readLine().trimmed();
        if (line.isEmpty()) {
            continue;
        }
        std::vector<double> row;
        for (const QByteArray& cell : line.split(',')) {
            row.push_back(cell == "nan" || cell == "-nan" ? std::nan("") : cell.toDouble());
        }
        rows.push_back(std::move(row));
    }
    return rows;
}

// Marks `members` diverged in the export's metadata (what the trainer records for a member
// whose loss stopped being finite) and adds a metadata entry outside ASCII, rewriting the file.
void markDiverged(const QString& weights, const std::vector<int>& members) {
    ensemble::SafetensorsFile file = ensemble::readSafetensors(weights.toStdString());
    json list = json::parse(file.metadata.at("members"));
    for (int m : members) {
        list[static_cast<std::size_t>(m)]["diverged"] = true;
    }
    file.metadata["members"] = list.dump();
    file.metadata["note"] = "σ² ü 😀";
    ensemble::writeSafetensors(weights.toStdString(), file);
}

struct Agreement {
    double maxAbs = 0.0;
    double maxScaled = 0.0;  // |a - b| / max(1, |b|)
    int64_t values = 0;
};

// The MNIST CNN cases' stack: a strided "same" conv (uneven padding), max pooling, a "valid"
// conv on the members' channels (grouped), average pooling, dense.
QString smallCnnLayers() {
    return QStringLiteral(
        "model.layers=[{\"type\":\"conv\",\"filters\":4,\"kernel\":3,\"stride\":2},"
        "{\"type\":\"pool\",\"kind\":\"max\",\"size\":2},"
        "{\"type\":\"conv\",\"filters\":3,\"kernel\":2,\"padding\":\"valid\"},"
        "{\"type\":\"pool\",\"kind\":\"avg\",\"size\":2},{\"type\":\"dense\",\"units\":16}]");
}

}  // namespace

class TestInterop : public QObject {
    Q_OBJECT

    QTemporaryDir m_dir;

    QString path(const QString& name) const { return m_dir.filePath(name); }

    // Trains (train args), optionally marks members diverged, predicts the test split that
    // `datasetArgs` writes, exports ONNX and npz, and checks both against the export and
    // predict. Returns how closely ONNX Runtime matched predict.
    Agreement checkCase(const QString& name, const QStringList& trainArgs,
                        const QStringList& datasetArgs, const std::vector<int>& diverged = {}) {
        Agreement agreement;
        const QString weights = path(name + QStringLiteral(".safetensors"));
        const QString data = path(name + QStringLiteral(".csv"));
        const QString predicted = path(name + QStringLiteral(".predict.csv"));
        const QString onnx = path(name + QStringLiteral(".onnx"));
        const QString npz = path(name + QStringLiteral(".npz"));
        const QString outDir = path(name + QStringLiteral(".ort"));
        [&] {
            ENSEMBLE_VERIFY_RUN_OK(runCli(
                QStringList{QStringLiteral("train")} + trainArgs +
                    QStringList{QStringLiteral("--export"), weights, QStringLiteral("--quiet")},
                300000));
            if (!diverged.empty()) {
                markDiverged(weights, diverged);
            }
            ENSEMBLE_VERIFY_RUN_OK(
                runCli(QStringList{QStringLiteral("dataset")} + datasetArgs +
                       QStringList{QStringLiteral("--out"), data, QStringLiteral("--split"),
                                   QStringLiteral("test")}));
            ENSEMBLE_VERIFY_RUN_OK(
                runCli({QStringLiteral("predict"), QStringLiteral("--weights"), weights,
                        QStringLiteral("--input"), data, QStringLiteral("--output"), predicted}));
            ENSEMBLE_VERIFY_RUN_OK(runCli({QStringLiteral("export"), QStringLiteral("--weights"),
                                           weights, QStringLiteral("--out"), onnx}));
            ENSEMBLE_VERIFY_RUN_OK(runCli({QStringLiteral("export"), QStringLiteral("--weights"),
                                           weights, QStringLiteral("--out"), npz}));
            ENSEMBLE_VERIFY_RUN_OK(
                runProgram(g_python, {interopScript("check_onnx.py"), onnx, weights, g_version}));
            ENSEMBLE_VERIFY_RUN_OK(
                runProgram(g_python, {interopScript("check_npz.py"), npz, weights}));

            // The rows predict read, as float32, through ONNX Runtime.
            const ensemble::LoadedEnsemble e = ensemble::importEnsemble(weights.toStdString());
            const ensemble::Dataset input =
                ensemble::readCsvFeatures(data.toStdString(), e.layout.inputs(), e.target);
            const QString x = path(name + QStringLiteral(".x.f32"));
            {
                QFile f(x);
                QVERIFY(f.open(QIODevice::WriteOnly));
                const auto bytes = static_cast<qint64>(input.x.size() * sizeof(float));
                QCOMPARE(f.write(reinterpret_cast<const char*>(input.x.data()), bytes), bytes);
            }
            QVERIFY(QDir().mkpath(outDir));
            ENSEMBLE_VERIFY_RUN_OK(runProgram(
                QStringLiteral("node"),
                {interopScript("ort_run.cjs"), g_ortDir, onnx, x, QString::number(input.rows),
                 QString::number(e.layout.inputs()), outDir}));

            // ONNX's C++ checker; then the same ensemble in the external-data form (meant for
            // ensembles over 2 GiB, forced here) through both checkers and ONNX Runtime, which
            // must give the self-contained model's outputs bit for bit.
            QString failure = ensemble::test::onnxCheckFailure(onnx);
            QVERIFY2(failure.isEmpty(), qPrintable(failure));
            const QString externalDir = path(name + QStringLiteral(".external"));
            QVERIFY(QDir().mkpath(externalDir));
            const QString external = QDir(externalDir).filePath(name + QStringLiteral(".onnx"));
            ensemble::OnnxOptions forced;
            forced.externalDataAbove = 0;
            ensemble::writeOnnx(external.toStdString(),
                                ensemble::readSafetensors(weights.toStdString()), forced);
            QCOMPARE(QDir(externalDir).entryList(QDir::Files).size(), 2);
            failure = ensemble::test::onnxCheckFailure(external);
            QVERIFY2(failure.isEmpty(), qPrintable(failure));
            ENSEMBLE_VERIFY_RUN_OK(runProgram(
                g_python, {interopScript("check_onnx.py"), external, weights, g_version}));
            const QString externalOut = path(name + QStringLiteral(".external.ort"));
            QVERIFY(QDir().mkpath(externalOut));
            ENSEMBLE_VERIFY_RUN_OK(runProgram(
                QStringLiteral("node"),
                {interopScript("ort_run.cjs"), g_ortDir, external, x, QString::number(input.rows),
                 QString::number(e.layout.inputs()), externalOut}));
            const QStringList outputs =
                QDir(outDir).entryList({QStringLiteral("*.f32")}, QDir::Files);
            QVERIFY(outputs.size() >= 2);
            for (const QString& output : outputs) {
                QFile a(QDir(outDir).filePath(output));
                QFile b(QDir(externalOut).filePath(output));
                QVERIFY(a.open(QIODevice::ReadOnly) && b.open(QIODevice::ReadOnly));
                QVERIFY2(a.readAll() == b.readAll(), qPrintable(output));
            }

            const auto csv = readNumbers(predicted);
            const int64_t rows = input.rows;
            const int k = e.layout.members();
            QCOMPARE(static_cast<int64_t>(csv.size()), rows);
            QVERIFY(rows > 0);
            const auto compare = [&](double onnxValue, double predictValue, const char* what,
                                     int64_t i) {
                if (std::isnan(onnxValue) && std::isnan(predictValue)) {
                    ++agreement.values;
                    return true;
                }
                const double diff = std::abs(onnxValue - predictValue);
                const double scaled = diff / std::max(1.0, std::abs(predictValue));
                agreement.maxAbs = std::max(agreement.maxAbs, diff);
                agreement.maxScaled = std::max(agreement.maxScaled, scaled);
                ++agreement.values;
                if (!(scaled <= kOnnxVsPredict)) {
                    qWarning("%s row %lld: onnx %.9g, predict %.9g", what,
                             static_cast<long long>(i), onnxValue, predictValue);
                    return false;
                }
                return true;
            };
            std::vector<int> used;
            for (int m = 0; m < k; ++m) {
                if (!e.diverged[static_cast<std::size_t>(m)]) {
                    used.push_back(m);
                }
            }
            if (!ensemble::isRegression(e.config.model.likelihood)) {
                const int c = e.layout.classes();
                const std::vector<float> ens =
                    readFloats(outDir + QStringLiteral("/ens_probs.f32"));
                const std::vector<float> mem =
                    readFloats(outDir + QStringLiteral("/member_probs.f32"));
                QCOMPARE(static_cast<int64_t>(ens.size()), rows * c);
                QCOMPARE(static_cast<int64_t>(mem.size()), k * rows * c);
                QCOMPARE(static_cast<int64_t>(csv.front().size()), int64_t{k + 1} * c);
                double excludedMatters = 0.0;
                for (int64_t i = 0; i < rows; ++i) {
                    const auto& row = csv[static_cast<std::size_t>(i)];
                    for (int j = 0; j < c; ++j) {
                        QVERIFY(compare(ens[static_cast<std::size_t>(i * c + j)],
                                        row[static_cast<std::size_t>(j)], "ens_probs", i));
                        double all = 0.0;
                        for (int m = 0; m < k; ++m) {
                            const float v = mem[static_cast<std::size_t>((m * rows + i) * c + j)];
                            QVERIFY(compare(v, row[static_cast<std::size_t>(c + m * c + j)],
                                            "member_probs", i));
                            all += v;
                        }
                        excludedMatters =
                            std::max(excludedMatters,
                                     std::abs(all / k - ens[static_cast<std::size_t>(i * c + j)]));
                    }
                }
                if (!diverged.empty() && !used.empty()) {
                    // Leaving the diverged members out changed the mean: the test can tell.
                    QVERIFY2(excludedMatters > 1e-3, qPrintable(QString::number(excludedMatters)));
                }
            } else {
                const char* ensNames[4] = {"ens_mean", "ens_std", "ens_aleatoric_std",
                                           "ens_epistemic_std"};
                for (int j = 0; j < 4; ++j) {
                    const std::vector<float> v = readFloats(
                        outDir + QStringLiteral("/%1.f32").arg(QLatin1String(ensNames[j])));
                    QCOMPARE(static_cast<int64_t>(v.size()), rows);
                    for (int64_t i = 0; i < rows; ++i) {
                        QVERIFY(
                            compare(v[static_cast<std::size_t>(i)],
                                    csv[static_cast<std::size_t>(i)][static_cast<std::size_t>(j)],
                                    ensNames[j], i));
                    }
                }
                const std::vector<float> mean =
                    readFloats(outDir + QStringLiteral("/member_mean.f32"));
                const std::vector<float> sd =
                    readFloats(outDir + QStringLiteral("/member_std.f32"));
                QCOMPARE(static_cast<int64_t>(mean.size()), k * rows);
                QCOMPARE(static_cast<int64_t>(sd.size()), k * rows);
                for (int64_t i = 0; i < rows; ++i) {
                    const auto& row = csv[static_cast<std::size_t>(i)];
                    for (int m = 0; m < k; ++m) {
                        const auto at = static_cast<std::size_t>(m * rows + i);
                        QVERIFY(compare(mean[at], row[static_cast<std::size_t>(4 + 2 * m)],
                                        "member_mean", i));
                        QVERIFY(compare(sd[at], row[static_cast<std::size_t>(5 + 2 * m)],
                                        "member_std", i));
                    }
                }
            }
        }();
        std::printf(
            "%s: %lld values, ONNX Runtime vs predict max |diff| %.3g, max |diff| / "
            "max(1, |value|) %.3g\n",
            qPrintable(name), static_cast<long long>(agreement.values), agreement.maxAbs,
            agreement.maxScaled);
        return agreement;
    }

    QString mnistFolder() {
        const QString folder = path(QStringLiteral("mnist"));
        if (!QDir(folder).exists()) {
            QDir().mkpath(folder);
            const bool written = ensemble::test::writeIdx(folder, "train-images-idx3-ubyte",
                                                          "train-labels-idx1-ubyte", 300, 1) &&
                                 ensemble::test::writeIdx(folder, "t10k-images-idx3-ubyte",
                                                          "t10k-labels-idx1-ubyte", 60, 2);
            if (!written) {
                qWarning("could not write the MNIST-format files in %s", qPrintable(folder));
                return {};
            }
        }
        return folder;
    }

  private Q_SLOTS:
    void initTestCase() {
        QVERIFY(m_dir.isValid());
        g_version = QStringLiteral(ENSEMBLE_TEST_VERSION);
    }

    // MLP classifier on spirals, tanh; member 1 diverged (left out of ens_probs).
    void spiralsMlp() {
        const QStringList config = {QStringLiteral("--config"), QStringLiteral("spirals"),
                                    QStringLiteral("--set"), QStringLiteral("dataset.n=400")};
        checkCase(
            QStringLiteral("spirals"),
            config + QStringList{QStringLiteral("--set"), QStringLiteral("ensemble.members=4"),
                                 QStringLiteral("--set"), QStringLiteral("model.activation=tanh"),
                                 QStringLiteral("--set"), QStringLiteral("training.steps=300")},
            config, {1});
    }

    // mc_dropout: the file holds one network and the masks' seed; the graph multiplies the
    // masks (constants) into the network's weights, member 2 diverged (left out).
    void spiralsMcDropout() {
        const QStringList config = {QStringLiteral("--config"), QStringLiteral("spirals"),
                                    QStringLiteral("--set"), QStringLiteral("dataset.n=400")};
        checkCase(
            QStringLiteral("spirals-mc"),
            config + QStringList{QStringLiteral("--set"),
                                 QStringLiteral("ensemble.method=mc_dropout"),
                                 QStringLiteral("--set"), QStringLiteral("model.dropout=0.3"),
                                 QStringLiteral("--set"), QStringLiteral("ensemble.members=5"),
                                 QStringLiteral("--set"), QStringLiteral("training.steps=200")},
            config, {2});
    }

    // batchensemble: the file holds the shared weights and the members' fast weights; the graph
    // expands each member's weights, member 1 diverged (left out).
    void spiralsBatchEnsemble() {
        const QStringList config = {QStringLiteral("--config"), QStringLiteral("spirals"),
                                    QStringLiteral("--set"), QStringLiteral("dataset.n=400")};
        checkCase(
            QStringLiteral("spirals-be"),
            config + QStringList{QStringLiteral("--set"),
                                 QStringLiteral("ensemble.method=batchensemble"),
                                 QStringLiteral("--set"), QStringLiteral("ensemble.members=4"),
                                 QStringLiteral("--set"), QStringLiteral("training.steps=200")},
            config, {1});
    }

    // Every member diverged: predict and the graph both give NaN for the ensemble.
    void spiralsAllDiverged() {
        const QStringList config = {QStringLiteral("--config"), QStringLiteral("spirals"),
                                    QStringLiteral("--set"), QStringLiteral("dataset.n=100")};
        checkCase(
            QStringLiteral("spirals-nan"),
            config + QStringList{QStringLiteral("--set"), QStringLiteral("ensemble.members=2"),
                                 QStringLiteral("--set"), QStringLiteral("training.steps=20")},
            config, {0, 1});
    }

    // MLP on MNIST-format images (784 raw pixels 0-255), GELU.
    void mnistMlp() {
        const QStringList config = {QStringLiteral("--config"), QStringLiteral("mnist-mlp"),
                                    QStringLiteral("--set"),
                                    QStringLiteral("dataset.path=") + mnistFolder()};
        checkCase(
            QStringLiteral("mnist-mlp"),
            config + QStringList{QStringLiteral("--set"), QStringLiteral("ensemble.members=3"),
                                 QStringLiteral("--set"), QStringLiteral("model.hidden=[32,16]"),
                                 QStringLiteral("--set"), QStringLiteral("model.activation=gelu"),
                                 QStringLiteral("--set"), QStringLiteral("training.epochs=1")},
            config);
    }

    // CNN on MNIST-format images: a strided "same" conv (uneven padding), max pooling, a
    // "valid" conv on the members' channels (grouped), average pooling, dense, ReLU.
    void mnistCnn() {
        const QStringList config = {QStringLiteral("--config"), QStringLiteral("mnist-cnn"),
                                    QStringLiteral("--set"),
                                    QStringLiteral("dataset.path=") + mnistFolder()};
        const QString layers = smallCnnLayers();
        checkCase(
            QStringLiteral("mnist-cnn"),
            config + QStringList{QStringLiteral("--set"), QStringLiteral("ensemble.members=3"),
                                 QStringLiteral("--set"), layers, QStringLiteral("--set"),
                                 QStringLiteral("training.epochs=1")},
            config);
    }

    // mc_dropout on a CNN: channel masks into the next conv's input channels (through a
    // pool) and into the dense layer's flattened positions.
    void mnistCnnMcDropout() {
        const QStringList config = {QStringLiteral("--config"), QStringLiteral("mnist-cnn"),
                                    QStringLiteral("--set"),
                                    QStringLiteral("dataset.path=") + mnistFolder()};
        const QString layers = smallCnnLayers();
        checkCase(
            QStringLiteral("mnist-cnn-mc"),
            config + QStringList{QStringLiteral("--set"),
                                 QStringLiteral("ensemble.method=mc_dropout"),
                                 QStringLiteral("--set"), QStringLiteral("model.dropout=0.5"),
                                 QStringLiteral("--set"), QStringLiteral("ensemble.members=3"),
                                 QStringLiteral("--set"), layers, QStringLiteral("--set"),
                                 QStringLiteral("training.steps=30")},
            config);
    }

    // Dropout layers (model.layers): no node at inference; under mc_dropout the members'
    // fixed masks at the layers, one per position, folded into the dense layers after them.
    void mnistCnnDropoutLayers() {
        const QStringList config = {QStringLiteral("--config"), QStringLiteral("mnist-cnn"),
                                    QStringLiteral("--set"),
                                    QStringLiteral("dataset.path=") + mnistFolder()};
        const QString layers = QStringLiteral(
            "model.layers=[{\"type\":\"conv\",\"filters\":4,\"kernel\":3,\"stride\":2},"
            "{\"type\":\"pool\",\"kind\":\"max\",\"size\":2},"
            "{\"type\":\"dropout\",\"rate\":0.25},{\"type\":\"dense\",\"units\":16},"
            "{\"type\":\"dropout\",\"rate\":0.5}]");
        checkCase(
            QStringLiteral("mnist-cnn-dropout-layers"),
            config + QStringList{QStringLiteral("--set"),
                                 QStringLiteral("ensemble.method=mc_dropout"),
                                 QStringLiteral("--set"), QStringLiteral("ensemble.members=3"),
                                 QStringLiteral("--set"), layers, QStringLiteral("--set"),
                                 QStringLiteral("training.steps=30")},
            config);
    }

    // batchensemble on a CNN: per-channel fast weights of the convs, per-position ones of the
    // dense layer after the flatten.
    void mnistCnnBatchEnsemble() {
        const QStringList config = {QStringLiteral("--config"), QStringLiteral("mnist-cnn"),
                                    QStringLiteral("--set"),
                                    QStringLiteral("dataset.path=") + mnistFolder()};
        const QString layers = smallCnnLayers();
        checkCase(
            QStringLiteral("mnist-cnn-be"),
            config + QStringList{QStringLiteral("--set"),
                                 QStringLiteral("ensemble.method=batchensemble"),
                                 QStringLiteral("--set"), QStringLiteral("ensemble.members=3"),
                                 QStringLiteral("--set"), layers, QStringLiteral("--set"),
                                 QStringLiteral("training.steps=30")},
            config);
    }

    // Gaussian regressor (cubic), member 2 diverged: the mixture of the other four. Trained as
    // the preset was before adversarial training: that preset's members reach sigma^2 about
    // 0.01 in standardised units and below, where softplus is e^r plus a little. Its log1p is
    // Goldberg's on both sides (math/loss.h log1pLanes, the graph op for op): computed as
    // log(1 + e^r) in float, a flip in 1 + e^r's last bit between Eigen's and ONNX Runtime's exp
    // moved sigma by 1.1e-5 relative, past the tolerance, in a build without FMA.
    void gaussianRegressor() {
        const QStringList config = {
            QStringLiteral("--config"), QStringLiteral("cubic"),
            QStringLiteral("--set"),    QStringLiteral("training.adversarial_eps=0"),
            QStringLiteral("--set"),    QStringLiteral("training.epochs=100")};
        checkCase(
            QStringLiteral("gaussian"),
            config + QStringList{QStringLiteral("--set"), QStringLiteral("training.steps=300")},
            config, {2});
    }

    // MSE regressor: member_std 0, only the epistemic part.
    void mseRegressor() {
        const QStringList config = {QStringLiteral("--config"), QStringLiteral("sine"),
                                    QStringLiteral("--set"),
                                    QStringLiteral("model.likelihood=mse")};
        checkCase(
            QStringLiteral("mse"),
            config + QStringList{QStringLiteral("--set"), QStringLiteral("training.steps=200")},
            config);
    }

    // The writer's zip64 records, forced on a small archive, read by Python's zipfile and
    // NumPy: the path an archive past 4 GiB takes.
    void npzZip64() {
        const QString weights = path(QStringLiteral("spirals.safetensors"));
        QVERIFY2(QFileInfo::exists(weights), "spiralsMlp runs first");
        const QString npz = path(QStringLiteral("zip64.npz"));
        const ensemble::SafetensorsFile file = ensemble::readSafetensors(weights.toStdString());
        ensemble::writeNpz(npz.toStdString(), file, {.forceZip64 = true});
        ENSEMBLE_VERIFY_RUN_OK(runProgram(
            g_python, {interopScript("check_npz.py"), npz, weights, QStringLiteral("--zip64")}));
        // The same check fails on the plain archive: it can tell the two apart.
        const Run plain = runProgram(
            g_python, {interopScript("check_npz.py"), path(QStringLiteral("spirals.npz")), weights,
                       QStringLiteral("--zip64")});
        QCOMPARE(plain.code, 1);
    }
};

int main(int argc, char** argv) {
    QCoreApplication app(argc, argv);
    TestInterop test;
    return ensemble::test::runInteropSuite(test, findInteropTools(), argc, argv);
}

#include "tst_interop.moc"
