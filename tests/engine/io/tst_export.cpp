// `ensemble-cli export` and `train --export` without outside tools: the format a
// name or --format selects, the exit codes of bad input with nothing written, a checkpoint's
// export part, the .npz / .npy structure the writer promises, ONNX's C++ checker on the ONNX
// models and their external-data form (tst_interop has NumPy, the Python ONNX checker and ONNX
// Runtime read the files).
#include <QtTest/QtTest>

#include <sstream>

#include "io/export_formats.h"
#include "io/model_io.h"
#include "io/npz.h"
#include "io/onnx_export.h"
#include "io/safetensors.h"
#include "support/onnx_check.h"
#include "support/test_support.h"

using ensemble::test::Run;
using ensemble::test::runCli;

namespace {

QByteArray head(const QString& path, int n) {
    QFile f(path);
    return f.open(QIODevice::ReadOnly) ? f.read(n) : QByteArray();
}

uint32_t le32(const QByteArray& b, qsizetype at) {
    uint32_t v = 0;
    for (int i = 3; i >= 0; --i) {
        v = (v << 8) | static_cast<uint8_t>(b[at + i]);
    }
    return v;
}

uint16_t le16(const QByteArray& b, qsizetype at) {
    return static_cast<uint16_t>(static_cast<uint8_t>(b[at]) |
                                 (static_cast<uint8_t>(b[at + 1]) << 8));
}

const QByteArray kZipMagic("PK\x03\x04", 4);
// An ONNX ModelProto starts with field 1 (ir_version, varint) = 8: bytes 0x08 0x08.
const QByteArray kOnnxStart("\x08\x08", 2);

}  // namespace

class TestExport : public QObject {
    Q_OBJECT

    QTemporaryDir m_dir;
    QString m_weights;
    QString m_checkpoint;

    QString path(const QString& name) const { return m_dir.filePath(name); }

  private Q_SLOTS:
    void initTestCase() {
        QVERIFY(m_dir.isValid());
        m_weights = path(QStringLiteral("w.safetensors"));
        m_checkpoint = path(QStringLiteral("c.safetensors"));
        const Run r = runCli(
            {QStringLiteral("train"), QStringLiteral("--config"), QStringLiteral("spirals"),
             QStringLiteral("--set"), QStringLiteral("training.steps=20"), QStringLiteral("--set"),
             QStringLiteral("ensemble.members=3"), QStringLiteral("--export"), m_weights,
             QStringLiteral("--checkpoint"), m_checkpoint, QStringLiteral("--quiet")});
        QVERIFY2(r.code == 0, qPrintable(r.err));
    }

    void formatByNameOrFlag() {
        QCOMPARE(ensemble::exportFormatForPath("a.onnx"), ensemble::ExportFormat::Onnx);
        QCOMPARE(ensemble::exportFormatForPath("dir.onnx/a.NPZ"), ensemble::ExportFormat::Npz);
        QCOMPARE(ensemble::exportFormatForPath("run.bin"), ensemble::ExportFormat::Safetensors);
        QCOMPARE(ensemble::exportFormatForPath("onnx"), ensemble::ExportFormat::Safetensors);
        QCOMPARE(ensemble::parseExportFormat("npz"), ensemble::ExportFormat::Npz);
        QVERIFY_THROWS_EXCEPTION(ensemble::ConfigError, ensemble::parseExportFormat("ONNX"));

        const auto exportTo = [&](const QString& out, const QStringList& extra = {}) {
            const Run r = runCli(QStringList{QStringLiteral("export"), QStringLiteral("--weights"),
                                             m_weights, QStringLiteral("--out"), out} +
                                 extra);
            return r.code;
        };
        QCOMPARE(exportTo(path(QStringLiteral("m.onnx"))), 0);
        QCOMPARE(head(path(QStringLiteral("m.onnx")), 2), kOnnxStart);
        QCOMPARE(exportTo(path(QStringLiteral("a.npz"))), 0);
        QCOMPARE(head(path(QStringLiteral("a.npz")), 4), kZipMagic);
        // --format wins over the name; other names stay safetensors, equal to the input.
        QCOMPARE(exportTo(path(QStringLiteral("x.bin")),
                          {QStringLiteral("--format"), QStringLiteral("npz")}),
                 0);
        QCOMPARE(head(path(QStringLiteral("x.bin")), 4), kZipMagic);
        QCOMPARE(exportTo(path(QStringLiteral("y.onnx")),
                          {QStringLiteral("--format"), QStringLiteral("safetensors")}),
                 0);
        QCOMPARE(exportTo(path(QStringLiteral("run.bin"))), 0);
        for (const char* name : {"y.onnx", "run.bin"}) {
            QFile a(m_weights);
            QFile b(path(QString::fromLatin1(name)));
            QVERIFY(a.open(QIODevice::ReadOnly) && b.open(QIODevice::ReadOnly));
            QVERIFY2(a.readAll() == b.readAll(), name);
        }
    }

    void trainExportsEveryFormat() {
        for (const char* name : {"t.onnx", "t.npz"}) {
            const QString out = path(QString::fromLatin1(name));
            const Run r = runCli({QStringLiteral("train"), QStringLiteral("--config"),
                                  QStringLiteral("moons"), QStringLiteral("--set"),
                                  QStringLiteral("training.steps=5"), QStringLiteral("--export"),
                                  out, QStringLiteral("--quiet")});
            QVERIFY2(r.code == 0, qPrintable(r.err));
            QCOMPARE(head(out, 2), QByteArray(name[2] == 'o' ? kOnnxStart : kZipMagic.left(2)));
        }
    }

    void badInputWritesNothing() {
        const QString out = path(QStringLiteral("never.onnx"));
        // Not an ensemble export: a CSV, and a safetensors file without the metadata.
        const QString csv = path(QStringLiteral("d.csv"));
        {
            QFile f(csv);
            QVERIFY(f.open(QIODevice::WriteOnly));
            f.write("x0,x1,label\n1,2,0\n");
        }
        ensemble::SafetensorsFile bare;
        bare.tensors.push_back(
            ensemble::Tensor::fromF32("layers.0.weight", {1, 2, 2}, std::vector<float>(4, 1.0f)));
        const QString bareFile = path(QStringLiteral("bare.safetensors"));
        ensemble::writeSafetensors(bareFile.toStdString(), bare);
        for (const QString& in : {csv, bareFile, path(QStringLiteral("missing.safetensors"))}) {
            for (const QString& target : {out, path(QStringLiteral("never.npz"))}) {
                const Run r = runCli({QStringLiteral("export"), QStringLiteral("--weights"), in,
                                      QStringLiteral("--out"), target});
                QVERIFY2(r.code == 3, qPrintable(r.err));
                QVERIFY2(r.err.contains(QFileInfo(in).fileName()), qPrintable(r.err));
                QVERIFY(!QFileInfo::exists(target));
            }
        }
        // An unknown --format: a usage error naming the flag.
        Run r = runCli({QStringLiteral("export"), QStringLiteral("--weights"), m_weights,
                        QStringLiteral("--out"), out, QStringLiteral("--format"),
                        QStringLiteral("pt")});
        QCOMPARE(r.code, 2);
        QVERIFY2(
            r.err.contains(QStringLiteral("--format")) && r.err.contains(QStringLiteral("'pt'")),
            qPrintable(r.err));
        QVERIFY(!QFileInfo::exists(out));
        // A folder that does not exist: exit 4, as for safetensors exports.
        for (const char* name : {"no/such/m.onnx", "no/such/a.npz", "no/such/w.safetensors"}) {
            r = runCli({QStringLiteral("export"), QStringLiteral("--weights"), m_weights,
                        QStringLiteral("--out"), path(QString::fromLatin1(name))});
            QVERIFY2(r.code == 4, qPrintable(r.err));
            QVERIFY2(r.err.contains(QStringLiteral("no/such")), qPrintable(r.err));
        }
        QVERIFY(!QFileInfo::exists(path(QStringLiteral("no"))));
        // Train refuses the same folder before it trains? It trains, then exit 4 on the write.
        r = runCli({QStringLiteral("train"), QStringLiteral("--config"), QStringLiteral("moons"),
                    QStringLiteral("--set"), QStringLiteral("training.steps=2"),
                    QStringLiteral("--export"), path(QStringLiteral("no/such/t.onnx")),
                    QStringLiteral("--quiet")});
        QCOMPARE(r.code, 4);
        // The leftover temporary files of failed writes: none.
        const QStringList left =
            QDir(m_dir.path()).entryList({QStringLiteral(".*tmp*")}, QDir::Files | QDir::Hidden);
        QVERIFY2(left.isEmpty(), qPrintable(left.join(QLatin1Char(' '))));
    }

    // A checkpoint exports as the export it holds: no optimizer state, no curves.
    void checkpointExportsItsExport() {
        const QString out = path(QStringLiteral("from-checkpoint.safetensors"));
        const Run r = runCli({QStringLiteral("export"), QStringLiteral("--weights"), m_checkpoint,
                              QStringLiteral("--out"), out});
        QVERIFY2(r.code == 0, qPrintable(r.err));
        const ensemble::SafetensorsFile c = ensemble::readSafetensors(m_checkpoint.toStdString());
        const ensemble::SafetensorsFile e = ensemble::readSafetensors(out.toStdString());
        QVERIFY(c.find("optimizer.step") != nullptr);
        QVERIFY(e.find("optimizer.step") == nullptr);
        QCOMPARE(e.metadata.count("curves"), std::size_t{0});
        QCOMPARE(e.metadata.count("checkpoint_format_version"), std::size_t{0});
        int kept = 0;
        for (const ensemble::Tensor& t : c.tensors) {
            if (t.name.rfind("optimizer.", 0) == 0) {
                continue;
            }
            const ensemble::Tensor* same = e.find(t.name);
            QVERIFY2(same != nullptr && same->data == t.data && same->shape == t.shape,
                     t.name.c_str());
            ++kept;
        }
        QCOMPARE(static_cast<std::size_t>(kept), e.tensors.size());
        ensemble::importEnsemble(out.toStdString());  // an export every command reads
    }

    // NumPy's format 1.0: magic, version, a little-endian header length, the dict ending in
    // '\n', the preamble a multiple of 64 bytes.
    void npyHeaders() {
        const std::string h = ensemble::npyHeader("<f4", {4, 16, 2});
        QCOMPARE(h.size() % 64, std::size_t{0});
        QCOMPARE(h.substr(0, 8), std::string("\x93NUMPY\x01\x00", 8));
        const std::size_t len = static_cast<uint8_t>(h[8]) | (static_cast<uint8_t>(h[9]) << 8);
        QCOMPARE(len + 10, h.size());
        QCOMPARE(h.back(), '\n');
        QVERIFY(h.find("{'descr': '<f4', 'fortran_order': False, 'shape': (4, 16, 2), }") == 10);
        QVERIFY(ensemble::npyHeader("<i4", {7}).find("'shape': (7,), }") != std::string::npos);
        QVERIFY(ensemble::npyHeader("<U3", {}).find("'shape': (), }") != std::string::npos);
    }

    // The archive's records where the zip spec puts them: local headers with the right sizes
    // and names, a central directory with the entry count, and the zip64 end records only when
    // forced (or needed).
    void zipStructure() {
        const ensemble::SafetensorsFile file = ensemble::readSafetensors(m_weights.toStdString());
        for (bool force : {false, true}) {
            std::ostringstream out;
            ensemble::writeNpzTo(out, file, {.forceZip64 = force});
            const std::string s = out.str();
            const QByteArray b(s.data(), static_cast<qsizetype>(s.size()));
            QCOMPARE(b.left(4), kZipMagic);
            const qsizetype eocd = b.size() - 22;
            QCOMPARE(le32(b, eocd), 0x06054b50u);
            const uint16_t entries = le16(b, eocd + 10);
            QCOMPARE(entries,
                     force ? uint16_t{0xFFFF} : static_cast<uint16_t>(file.tensors.size() + 1));
            QCOMPARE(b.contains(QByteArray("PK\x06\x06", 4)), force);
            // Walk the local headers: each entry's name and .npy magic.
            qsizetype at = 0;
            std::size_t seen = 0;
            while (le32(b, at) == 0x04034b50u) {
                const uint16_t nameLength = le16(b, at + 26);
                const uint16_t extraLength = le16(b, at + 28);
                const QByteArray name = b.mid(at + 30, nameLength);
                uint64_t size = le32(b, at + 22);
                if (force) {
                    QCOMPARE(size, uint64_t{0xFFFFFFFF});
                    QCOMPARE(extraLength, uint16_t{20});
                    size = le32(b, at + 30 + nameLength + 4);  // low half of the zip64 size
                }
                const qsizetype data = at + 30 + nameLength + extraLength;
                QCOMPARE(b.mid(data, 6), QByteArray("\x93NUMPY"));
                const std::string tensor = name.chopped(4).toStdString();
                if (tensor != "__metadata__") {
                    const ensemble::Tensor& t = file.get(tensor);
                    const uint16_t headerLength = le16(b, data + 8);
                    QCOMPARE(size, uint64_t{10u + headerLength} + t.data.size());
                    QVERIFY(std::memcmp(b.constData() + data + 10 + headerLength, t.data.data(),
                                        t.data.size()) == 0);
                }
                at = data + static_cast<qsizetype>(size);
                ++seen;
            }
            QCOMPARE(seen, file.tensors.size() + 1);
            QCOMPARE(le32(b, at), 0x02014b50u);  // the central directory follows
        }
    }

    // ONNX's C++ checker (check_model on the file, strict shape inference) on every ONNX model
    // this suite wrote, and on a checkpoint's export.
    void onnxModelsPassTheChecker() {
        const QString fromCheckpoint = path(QStringLiteral("c.onnx"));
        const Run r = runCli({QStringLiteral("export"), QStringLiteral("--weights"), m_checkpoint,
                              QStringLiteral("--out"), fromCheckpoint});
        QVERIFY2(r.code == 0, qPrintable(r.err));
        for (const QString& name :
             {QStringLiteral("m.onnx"), QStringLiteral("t.onnx"), QStringLiteral("c.onnx")}) {
            const QString failure = ensemble::test::onnxCheckFailure(path(name));
            QVERIFY2(failure.isEmpty(), qPrintable(failure));
        }
        // Not a model: the helper can fail.
        QVERIFY(!ensemble::test::onnxCheckFailure(m_weights).isEmpty());
    }

    // The form an ensemble over 2 GiB takes, forced on a small one: the weights in
    // "<name>.<hash>.data" beside the model, which the checker accepts and which is the
    // self-contained model byte for byte once the data is put back inline.
    void onnxExternalData() {
        const QString folder = path(QStringLiteral("external"));
        QVERIFY(QDir().mkpath(folder));
        const QDir dir(folder);
        const QString model = dir.filePath(QStringLiteral("m.onnx"));
        const QString single = dir.filePath(QStringLiteral("single.onnx"));
        const ensemble::SafetensorsFile weights =
            ensemble::readSafetensors(m_weights.toStdString());
        ensemble::OnnxOptions external;
        external.externalDataAbove = 0;
        ensemble::writeOnnx(single.toStdString(), weights);
        ensemble::writeOnnx(model.toStdString(), weights, external);

        const auto dataFiles = [&] {
            return dir.entryList({QStringLiteral("m.onnx.*")}, QDir::Files | QDir::Hidden);
        };
        const QRegularExpression dataName(QStringLiteral("^m\\.onnx\\.[0-9a-f]{16}\\.data$"));
        const QStringList first = dataFiles();
        QCOMPARE(first.size(), 1);
        QVERIFY2(dataName.match(first[0]).hasMatch(), qPrintable(first[0]));
        QVERIFY(QFileInfo(single).size() > 2 * QFileInfo(model).size());
        QString failure = ensemble::test::onnxCheckFailure(model);
        QVERIFY2(failure.isEmpty(), qPrintable(failure));

        onnx::ModelProto m;
        QVERIFY(ensemble::test::readOnnx(model, m));
        QFile dataFile(dir.filePath(first[0]));
        QVERIFY(dataFile.open(QIODevice::ReadOnly));
        const QByteArray data = dataFile.readAll();
        int externalTensors = 0;
        for (onnx::TensorProto& t : *m.mutable_graph()->mutable_initializer()) {
            const ensemble::Tensor* source = weights.find(t.name());
            // The export's tensors are external, the graph's small constants inline.
            QCOMPARE(t.data_location() == onnx::TensorProto::EXTERNAL, source != nullptr);
            if (source == nullptr) {
                continue;
            }
            ++externalTensors;
            std::map<std::string, std::string> entries;
            for (const onnx::StringStringEntryProto& e : t.external_data()) {
                entries[e.key()] = e.value();
            }
            QCOMPARE(QString::fromStdString(entries["location"]), first[0]);
            const qint64 offset = std::stoll(entries["offset"]);
            const qint64 length = std::stoll(entries["length"]);
            QCOMPARE(offset % 4096, qint64{0});
            QCOMPARE(length, static_cast<qint64>(source->data.size()));
            QVERIFY(offset + length <= data.size());
            QVERIFY(std::memcmp(data.constData() + offset, source->data.data(),
                                source->data.size()) == 0);
            t.set_raw_data(data.constData() + offset, static_cast<std::size_t>(length));
            t.clear_external_data();
            t.clear_data_location();
        }
        QVERIFY(externalTensors >= 4);
        QFile singleFile(single);
        QVERIFY(singleFile.open(QIODevice::ReadOnly));
        QVERIFY(QByteArray::fromStdString(m.SerializeAsString()) == singleFile.readAll());

        // Other weights to the same name: a new data file, and the old model's one is gone.
        ensemble::SafetensorsFile changed = weights;
        for (ensemble::Tensor& t : changed.tensors) {
            if (t.name == "normalization.mean") {
                t.data[0] = static_cast<std::byte>(static_cast<unsigned>(t.data[0]) ^ 1U);
            }
        }
        ensemble::writeOnnx(model.toStdString(), changed, external);
        const QStringList second = dataFiles();
        QCOMPARE(second.size(), 1);
        QVERIFY(second[0] != first[0]);
        failure = ensemble::test::onnxCheckFailure(model);
        QVERIFY2(failure.isEmpty(), qPrintable(failure));
        // The same weights again: the same data file.
        ensemble::writeOnnx(model.toStdString(), changed, external);
        QCOMPARE(dataFiles(), second);
        // A self-contained model over it takes its data file away too.
        ensemble::writeOnnx(model.toStdString(), changed);
        QCOMPARE(dataFiles(), QStringList());
        failure = ensemble::test::onnxCheckFailure(model);
        QVERIFY2(failure.isEmpty(), qPrintable(failure));

        // A stream or device has no "beside": refused before anything is written.
        QVERIFY_THROWS_EXCEPTION(ensemble::RuntimeError,
                                 ensemble::writeOnnx("/dev/null", weights, external));
        QCOMPARE(dir.entryList(QDir::Files | QDir::Hidden),
                 QStringList({QStringLiteral("m.onnx"), QStringLiteral("single.onnx")}));
    }
};

QTEST_GUILESS_MAIN(TestExport)
#include "tst_export.moc"
