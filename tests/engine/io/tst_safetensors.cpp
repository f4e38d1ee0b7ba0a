// Safetensors reading/writing and atomic file writes (engine/io).

#include <sys/stat.h>

#include <QDir>
#include <QTemporaryDir>
#include <QTest>

#include <cmath>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/errors.h"
#include "io/model_io.h"
#include "io/safetensors.h"
#include "support/test_support.h"
#include "sys/atomic_file.h"

using namespace ensemble;

// Readable failure output for QCOMPARE of std::string (bytes shown escaped).
namespace QTest {
template <>
char* toString(const std::string& s) {
    return toPrettyCString(s.data(), static_cast<qsizetype>(s.size()));
}
}  // namespace QTest

namespace {

// 8-byte little-endian length prefix, as the format stores it.
std::string le64(uint64_t v) {
    std::string s(8, '\0');
    for (int i = 0; i < 8; ++i) {
        s[i] = static_cast<char>((v >> (8 * i)) & 0xff);
    }
    return s;
}

std::string fileWith(const std::string& header, const std::string& buffer) {
    return le64(header.size()) + header + buffer;
}

std::string bytesOf(const std::vector<std::byte>& data) {
    return std::string(reinterpret_cast<const char*>(data.data()), data.size());
}

// The message of the E that `f` throws, or a note saying what happened instead.
template <typename E, typename F>
std::string thrownMessage(F&& f) {
    try {
        f();
    } catch (const E& e) {
        return e.what();
    } catch (const std::exception& e) {
        return std::string("<wrong exception type: ") + e.what() + ">";
    }
    return "<no exception>";
}

bool contains(const std::string& text, const std::string& part) {
    return text.find(part) != std::string::npos;
}

// Every entry in a directory, hidden ones (temporary files) included.
QStringList entriesOf(const QString& dir) {
    return QDir(dir).entryList(
        QDir::AllEntries | QDir::Hidden | QDir::System | QDir::NoDotAndDotDot, QDir::Name);
}

std::string slurp(const QString& path) {
    return readFile(path.toStdString());
}

mode_t modeOf(const QString& path) {
    struct stat st {};
    if (::stat(path.toLocal8Bit().constData(), &st) != 0) {
        return 0;
    }
    return st.st_mode & 07777;
}

// An ensemble's weights as the trainer exports them: stacked [K, out, in] plus odds and ends.
SafetensorsFile sampleFile() {
    constexpr int64_t K = 3, out = 4, in = 5;
    std::vector<float> weight(K * out * in);
    for (size_t i = 0; i < weight.size(); ++i) {
        weight[i] = 0.25f * static_cast<float>(i) - 3.0f;
    }
    weight[7] = -0.0f;
    weight[8] = std::nextafter(1.0f, 2.0f);
    weight[9] = 1e-40f;  // subnormal: must survive bit for bit
    std::vector<float> bias(K * out, 0.5f);
    std::vector<int32_t> seeds = {7, -1, 2147483647};
    std::vector<double> stats = {1.0 / 3.0, -2.5e300};
    std::vector<int64_t> steps = {int64_t{1} << 40};
    std::vector<uint8_t> mask = {0, 1, 255};
    std::vector<float> scalar = {42.0f};

    SafetensorsFile f;
    f.tensors.push_back(Tensor::fromF32("layers.0.weight", {K, out, in}, weight));
    f.tensors.push_back(Tensor::fromF32("layers.0.bias", {K, out}, bias));
    f.tensors.push_back(Tensor::fromI32("seeds", {K}, seeds));
    f.tensors.push_back(Tensor::fromF32("empty", {K, 0, in}, {}));
    f.tensors.push_back(Tensor::fromF64("stats", {2}, stats));
    f.tensors.push_back(Tensor::fromI64("steps", {1, 1}, steps));
    f.tensors.push_back(Tensor::fromU8("mask", {3}, mask));
    f.tensors.push_back(Tensor::fromF32("scalar", {}, scalar));
    f.tensors.push_back(Tensor::fromF32("gewichte.\xc3\xa4", {1}, scalar));  // UTF-8 name
    f.metadata["format_version"] = "1";
    // (Not a raw string: moc 6.4 loses track of one holding an odd number of quotes.)
    f.metadata["config"] =
        "{\"ensemble\": {\"members\": 3}, \"note\": \"quotes \\\" and \\\\ inside\"}";
    f.metadata["empty"] = "";
    f.metadata["unicode"] = "\xce\xbb = 0.1";
    return f;
}

void compareFiles(const SafetensorsFile& actual, const SafetensorsFile& expected) {
    QCOMPARE(actual.tensors.size(), expected.tensors.size());
    for (size_t i = 0; i < expected.tensors.size(); ++i) {
        const Tensor& a = actual.tensors[i];
        const Tensor& e = expected.tensors[i];
        QCOMPARE(a.name, e.name);
        QVERIFY(a.dtype == e.dtype);
        QCOMPARE(a.shape, e.shape);
        QVERIFY2(a.data == e.data, e.name.c_str());  // bit for bit
    }
    QCOMPARE(actual.metadata, expected.metadata);
}

}  // namespace

class TestSafetensors : public QObject {
    Q_OBJECT

  private Q_SLOTS:
    void dtypeNamesAndSizes();
    void tensorBuildersAndAccessors();
    void builderRejectsWrongCount();
    void roundTripInMemory();
    void roundTripThroughFile();
    void handWrittenFileParses();
    void handWrittenFileVariantsParse();
    void serializerMatchesHandWrittenFile();
    void serializerPadsHeaderAndSortsOffsets();
    void getMissingTensorNamesFileAndTensor();
    void serializeRejects_data();
    void serializeRejects();
    void parseRejects_data();
    void parseRejects();
    void mismatchMessageIsExact();
    void truncatedAndCorruptedFilesFailCleanly();
    void readMissingFile();
    void readDirectory();
    void weightsWhoseMetadataDisagreesFailCleanly_data();
    void weightsWhoseMetadataDisagreesFailCleanly();

    void atomicWriteCreatesFile();
    void atomicWriteReplacesExistingFile();
    void atomicWriteRelativePath();
    void atomicWriteMissingDirectoryFails();
    void atomicWriteThrowingWriterLeavesOldFile();
    void atomicWriteFailedStreamLeavesOldFile();
    void atomicWriteOverDirectoryFails();
    void atomicWriteLargeStreaming();
    void writeSafetensorsReplacesAtomically();
    void writeSafetensorsInvalidLeavesOldFile();
};

void TestSafetensors::dtypeNamesAndSizes() {
    QCOMPARE(std::string(dtypeName(DType::F32)), std::string("F32"));
    QCOMPARE(std::string(dtypeName(DType::I32)), std::string("I32"));
    QCOMPARE(std::string(dtypeName(DType::F64)), std::string("F64"));
    QCOMPARE(std::string(dtypeName(DType::I64)), std::string("I64"));
    QCOMPARE(std::string(dtypeName(DType::U8)), std::string("U8"));
    QCOMPARE(dtypeSize(DType::F32), int64_t{4});
    QCOMPARE(dtypeSize(DType::I32), int64_t{4});
    QCOMPARE(dtypeSize(DType::F64), int64_t{8});
    QCOMPARE(dtypeSize(DType::I64), int64_t{8});
    QCOMPARE(dtypeSize(DType::U8), int64_t{1});
}

void TestSafetensors::tensorBuildersAndAccessors() {
    const std::vector<float> values = {1.5f, -2.0f, 3.25f, 0.0f, 7.0f, 8.0f};
    const Tensor t = Tensor::fromF32("w", {2, 3}, values);
    QCOMPARE(t.name, std::string("w"));
    QVERIFY(t.dtype == DType::F32);
    QCOMPARE(t.elements(), int64_t{6});
    QCOMPARE(t.data.size(), size_t{24});
    const std::span<const float> view = t.f32();
    QCOMPARE(view.size(), size_t{6});
    for (size_t i = 0; i < values.size(); ++i) {
        QCOMPARE(view[i], values[i]);
    }
    // Data is the plain little-endian bytes of the values.
    QCOMPARE(std::memcmp(t.data.data(), values.data(), 24), 0);

    const std::vector<int32_t> ints = {-3, 4};
    const Tensor i = Tensor::fromI32("i", {2}, ints);
    QCOMPARE(i.i32()[0], -3);
    QCOMPARE(i.i32()[1], 4);

    QCOMPARE(Tensor::fromF32("s", {}, std::vector<float>{1.0f}).elements(), int64_t{1});
    const Tensor empty = Tensor::fromF32("e", {4, 0}, {});
    QCOMPARE(empty.elements(), int64_t{0});
    QVERIFY(empty.f32().empty());

    // Wrong type: a DataError naming the tensor and both types.
    const std::string msg = thrownMessage<DataError>([&] { (void)i.f32(); });
    QVERIFY2(contains(msg, "'i'") && contains(msg, "I32") && contains(msg, "F32"), msg.c_str());
    QVERIFY(contains(thrownMessage<DataError>([&] { (void)t.i32(); }), "expected I32"));
    QVERIFY(contains(thrownMessage<DataError>([&] { (void)t.f64(); }), "expected F64"));
    QVERIFY(contains(thrownMessage<DataError>([&] { (void)t.i64(); }), "expected I64"));
    QVERIFY(contains(thrownMessage<DataError>([&] { (void)t.u8(); }), "expected U8"));

    // Data not matching the shape (a hand-assembled tensor) is caught, not read past its end.
    Tensor broken = t;
    broken.data.resize(20);
    const std::string size = thrownMessage<DataError>([&] { (void)broken.f32(); });
    QVERIFY2(contains(size, "20 bytes") && contains(size, "[2,3]"), size.c_str());
}

void TestSafetensors::builderRejectsWrongCount() {
    const std::vector<float> five(5, 1.0f);
    const std::string msg = thrownMessage<RuntimeError>([&] {
        (void)Tensor::fromF32("w", {2, 3}, five);
    });
    QVERIFY2(contains(msg, "'w'") && contains(msg, "5 values") && contains(msg, "[2,3]"),
             msg.c_str());
    const std::string negative = thrownMessage<RuntimeError>([&] {
        (void)Tensor::fromF32("n", {-1, -5}, five);
    });
    QVERIFY2(contains(negative, "[-1,-5]"), negative.c_str());
}

void TestSafetensors::roundTripInMemory() {
    const SafetensorsFile original = sampleFile();
    const std::string bytes = serializeSafetensors(original);
    const SafetensorsFile parsed = parseSafetensors(bytes, "mem");
    compareFiles(parsed, original);
    QCOMPARE(parsed.origin, std::string("mem"));
    // Serialising what was read gives the same bytes again.
    QCOMPARE(serializeSafetensors(parsed), bytes);
}

void TestSafetensors::roundTripThroughFile() {
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const std::string path = dir.filePath("weights.safetensors").toStdString();
    const SafetensorsFile original = sampleFile();
    writeSafetensors(path, original);
    const SafetensorsFile read = readSafetensors(path);
    compareFiles(read, original);
    QCOMPARE(read.origin, path);
    QCOMPARE(entriesOf(dir.path()), QStringList{"weights.safetensors"});
    // The file holds exactly what serializeSafetensors produces.
    QCOMPARE(readFile(path), serializeSafetensors(original));

    // The stacked [K, out, in] weight reads back with its layout: member k, row o, column i.
    const Tensor& w = read.get("layers.0.weight");
    QCOMPARE(w.shape, (std::vector<int64_t>{3, 4, 5}));
    QCOMPARE(w.elements(), int64_t{60});
    const std::span<const float> values = w.f32();
    QCOMPARE(values[(2 * 4 + 1) * 5 + 3], 0.25f * static_cast<float>((2 * 4 + 1) * 5 + 3) - 3.0f);
    QVERIFY(std::signbit(values[7]));
    QCOMPARE(values[9], 1e-40f);
    QCOMPARE(read.get("seeds").i32()[2], 2147483647);
    QCOMPARE(read.get("stats").f64()[1], -2.5e300);
    QCOMPARE(read.get("steps").i64()[0], int64_t{1} << 40);
    QCOMPARE(int(read.get("mask").u8()[2]), 255);
    QCOMPARE(read.get("scalar").shape.size(), size_t{0});
    QCOMPARE(read.get("scalar").f32()[0], 42.0f);
    QCOMPARE(read.get("empty").elements(), int64_t{0});
    QCOMPARE(read.metadata.at("config"), original.metadata.at("config"));
    QVERIFY(read.find("nope") == nullptr);
    QVERIFY(read.find("seeds") == &read.tensors[2]);
}

// A tiny file written byte by byte from the format description, not by our serializer.
void TestSafetensors::handWrittenFileParses() {
    // 141 bytes of JSON and 3 spaces: the data starts 8-byte aligned.
    const std::string header = R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                               R"("b":{"dtype":"I32","shape":[1,1],"data_offsets":[8,12]},)"
                               R"("__metadata__":{"format":"pt"}})"
                               "   ";
    QCOMPARE(header.size(), size_t{144});
    // a = [1.0f, -2.0f] (IEEE 754: 0x3F800000, 0xC0000000), b = [[7]], little-endian.
    const std::string data(
        "\x00\x00\x80\x3f"
        "\x00\x00\x00\xc0"
        "\x07\x00\x00\x00",
        12);
    std::string bytes = le64(header.size()) + header + data;
    QCOMPARE(bytes.size(), size_t{8 + header.size() + 12});
    QCOMPARE(bytes.substr(0, 8), std::string("\x90\0\0\0\0\0\0\0", 8));  // 144

    const SafetensorsFile f = parseSafetensors(bytes, "tiny.safetensors");
    QCOMPARE(f.tensors.size(), size_t{2});
    QCOMPARE(f.tensors[0].name, std::string("a"));
    QVERIFY(f.tensors[0].dtype == DType::F32);
    QCOMPARE(f.tensors[0].shape, std::vector<int64_t>{2});
    QCOMPARE(f.tensors[0].f32()[0], 1.0f);
    QCOMPARE(f.tensors[0].f32()[1], -2.0f);
    QCOMPARE(f.tensors[1].name, std::string("b"));
    QVERIFY(f.tensors[1].dtype == DType::I32);
    QCOMPARE(f.tensors[1].shape, (std::vector<int64_t>{1, 1}));
    QCOMPARE(f.tensors[1].i32()[0], 7);
    QCOMPARE(f.metadata.size(), size_t{1});
    QCOMPARE(f.metadata.at("format"), std::string("pt"));
}

// What other writers legally produce: an unpadded header, trailing spaces, whitespace, tensors
// listed out of offset order, unknown extra keys, no metadata.
void TestSafetensors::handWrittenFileVariantsParse() {
    const std::string data("\x00\x00\x80\x3f\x00\x00\x00\xc0\x07\x00\x00\x00", 12);
    const std::string header =
        "{ \"b\" : {\"dtype\":\"I32\",\"shape\":[1],\"data_offsets\":[8,12],\"extra\":1},\n"
        "  \"a\" : {\"shape\":[2],\"dtype\":\"F32\",\"data_offsets\":[0,8]}}";
    QVERIFY(header.size() % 8 != 0);
    for (const std::string& h : {header, header + "   ", header + std::string(8, ' ')}) {
        const SafetensorsFile f = parseSafetensors(fileWith(h, data), "v");
        // Read back in buffer order, whatever the header's order.
        QCOMPARE(f.tensors.size(), size_t{2});
        QCOMPARE(f.tensors[0].name, std::string("a"));
        QCOMPARE(f.tensors[0].f32()[1], -2.0f);
        QCOMPARE(f.tensors[1].name, std::string("b"));
        QCOMPARE(f.tensors[1].i32()[0], 7);
        QVERIFY(f.metadata.empty());
    }

    // Nothing at all: an empty header object and no data.
    const SafetensorsFile none = parseSafetensors(fileWith("{}", ""), "none");
    QVERIFY(none.tensors.empty());
    QVERIFY(none.metadata.empty());
    // Only metadata.
    const SafetensorsFile meta = parseSafetensors(fileWith(R"({"__metadata__":{}})", ""), "m");
    QVERIFY(meta.tensors.empty());
}

void TestSafetensors::serializerMatchesHandWrittenFile() {
    SafetensorsFile f;
    f.tensors.push_back(Tensor::fromF32("a", {2}, std::vector<float>{1.0f, -2.0f}));
    f.tensors.push_back(Tensor::fromI32("b", {1, 1}, std::vector<int32_t>{7}));
    f.metadata["format"] = "pt";
    const std::string bytes = serializeSafetensors(f);

    // Our layout, spelled out: metadata first, then tensors in order, compact JSON, spaces to
    // the next multiple of 8 (141 bytes of JSON -> 144).
    const std::string json = R"({"__metadata__":{"format":"pt"},)"
                             R"("a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                             R"("b":{"dtype":"I32","shape":[1,1],"data_offsets":[8,12]}})";
    QCOMPARE(json.size(), size_t{141});
    const std::string expected =
        le64(144) + json + "   " +
        std::string("\x00\x00\x80\x3f\x00\x00\x00\xc0\x07\x00\x00\x00", 12);
    QCOMPARE(bytes, expected);

    // And it parses to the same thing as the hand-written file.
    const SafetensorsFile parsed = parseSafetensors(bytes, "ours");
    QCOMPARE(parsed.tensors.size(), size_t{2});
    QCOMPARE(parsed.tensors[0].name, std::string("a"));
    QCOMPARE(parsed.tensors[0].shape, std::vector<int64_t>{2});
    QCOMPARE(bytesOf(parsed.tensors[0].data), std::string("\x00\x00\x80\x3f\x00\x00\x00\xc0", 8));
    QCOMPARE(parsed.tensors[1].name, std::string("b"));
    QCOMPARE(parsed.tensors[1].shape, (std::vector<int64_t>{1, 1}));
    QCOMPARE(parsed.tensors[1].i32()[0], 7);
    QCOMPARE(parsed.metadata, f.metadata);
}

void TestSafetensors::serializerPadsHeaderAndSortsOffsets() {
    // Names of growing length move the header length through every residue mod 8.
    for (int extra = 0; extra < 16; ++extra) {
        SafetensorsFile f;
        f.tensors.push_back(
            Tensor::fromU8(std::string(1 + extra, 'x'), {3}, std::vector<uint8_t>{1, 2, 3}));
        f.tensors.push_back(Tensor::fromF64("d", {2}, std::vector<double>{1.0, 2.0}));
        f.tensors.push_back(Tensor::fromF32("z", {0}, {}));
        f.tensors.push_back(Tensor::fromI64("c", {1}, std::vector<int64_t>{-1}));
        const std::string bytes = serializeSafetensors(f);

        uint64_t n = 0;
        for (int i = 0; i < 8; ++i) {
            n |= uint64_t{static_cast<uint8_t>(bytes[i])} << (8 * i);
        }
        QCOMPARE(n % 8, uint64_t{0});
        QCOMPARE(bytes.size(), size_t{8 + n + 3 + 16 + 0 + 8});
        const std::string headerText = bytes.substr(8, n);
        // Padding is spaces only, after the closing brace.
        const size_t close = headerText.rfind('}');
        QCOMPARE(headerText.find_first_not_of(' ', close + 1), std::string::npos);
        QVERIFY(n - (close + 1) < 8);

        // Offsets are contiguous, in the given order.
        const auto header = nlohmann::ordered_json::parse(headerText);
        QVERIFY(!header.contains("__metadata__"));  // none given, none written
        std::vector<std::string> order;
        for (const auto& [name, entry] : header.items()) {
            order.push_back(name);
        }
        QCOMPARE(order, (std::vector<std::string>{std::string(1 + extra, 'x'), "d", "z", "c"}));
        const auto offsets = [&](const std::string& name) {
            return header[name]["data_offsets"].get<std::vector<uint64_t>>();
        };
        QCOMPARE(offsets(order[0]), (std::vector<uint64_t>{0, 3}));
        QCOMPARE(offsets("d"), (std::vector<uint64_t>{3, 19}));
        QCOMPARE(offsets("z"), (std::vector<uint64_t>{19, 19}));
        QCOMPARE(offsets("c"), (std::vector<uint64_t>{19, 27}));
        QCOMPARE(header["c"]["dtype"].get<std::string>(), std::string("I64"));
        QCOMPARE(bytes.substr(8 + n + 3, 8), std::string("\x00\x00\x00\x00\x00\x00\xf0\x3f", 8));

        const SafetensorsFile parsed = parseSafetensors(bytes, "pad");
        compareFiles(parsed, f);
    }
}

void TestSafetensors::getMissingTensorNamesFileAndTensor() {
    const SafetensorsFile f = parseSafetensors(serializeSafetensors(sampleFile()), "w.st");
    const std::string msg = thrownMessage<DataError>([&] { (void)f.get("layers.9.weight"); });
    QVERIFY2(contains(msg, "w.st") && contains(msg, "'layers.9.weight'"), msg.c_str());
}

void TestSafetensors::serializeRejects_data() {
    QTest::addColumn<int>("which");
    QTest::addColumn<QString>("expected");
    QTest::newRow("duplicate name") << 0 << "'w': duplicate name";
    QTest::newRow("reserved name") << 1 << "'__metadata__': the name is reserved";
    QTest::newRow("data size mismatch") << 2 << "'w': 20 bytes of data do not match shape [2,3]";
    QTest::newRow("negative dimension") << 3 << "invalid shape [2,-3]";
    QTest::newRow("invalid UTF-8 name") << 4 << "not valid UTF-8";
    QTest::newRow("invalid UTF-8 metadata") << 5 << "not valid UTF-8";
}

void TestSafetensors::serializeRejects() {
    QFETCH(int, which);
    QFETCH(QString, expected);
    const std::vector<float> six(6, 1.0f);
    SafetensorsFile f;
    f.tensors.push_back(Tensor::fromF32("w", {2, 3}, six));
    switch (which) {
        case 0:
            f.tensors.push_back(Tensor::fromF32("w", {6}, six));
            break;
        case 1:
            f.tensors.push_back(Tensor::fromF32("__metadata__", {6}, six));
            break;
        case 2:
            f.tensors[0].data.resize(20);
            break;
        case 3:
            f.tensors[0].shape = {2, -3};
            break;
        case 4:
            f.tensors.push_back(Tensor::fromF32("bad\xff", {6}, six));
            break;
        case 5:
            f.metadata["k"] = "bad\xc3";
            break;
    }
    const std::string msg = thrownMessage<RuntimeError>([&] { (void)serializeSafetensors(f); });
    QVERIFY2(contains(msg, expected.toStdString()), msg.c_str());
}

void TestSafetensors::parseRejects_data() {
    QTest::addColumn<QByteArray>("bytes");
    QTest::addColumn<QString>("expected");
    const auto row = [](const char* name, const std::string& bytes, const char* expected) {
        QTest::newRow(name) << QByteArray(bytes.data(), static_cast<qsizetype>(bytes.size()))
                            << QString::fromUtf8(expected);
    };
    const std::string f8(8, '\0');    // 8 bytes of data buffer
    const std::string f12(12, '\0');  // 12 bytes of data buffer
    const auto one = [](const std::string& entry) { return "{\"w\":" + entry + "}"; };

    // Length prefix.
    row("empty file", "", "too short");
    row("7 bytes", std::string(7, '\0'), "(7 bytes, need at least 8)");
    row("length beyond file", le64(1000) + "{}", "header length 1000 is larger than the rest");
    row("length 2^64-1", le64(~uint64_t{0}) + "{}", "header length 18446744073709551615");
    row("length over 100 MB", le64(100'000'001) + "{}", "exceeds the 100 MB limit");
    row("length exactly 100 MB, short file", le64(100'000'000) + "{}", "larger than the rest");
    // Header text.
    row("not JSON", fileWith("{not json", ""), "header is not valid JSON");
    row("truncated JSON", fileWith(R"({"w":{"dtype":"F32")", ""), "header is not valid JSON");
    row("invalid UTF-8", fileWith("{\"w\xff\":1}", ""), "header is not valid JSON");
    row("NUL padding", fileWith(std::string("{}") + '\0', ""), "NUL byte at offset 10");
    row("NUL then garbage", fileWith(std::string("{}\0\"x\":]", 7), ""),
        "header is not valid JSON");
    row("JSON array", fileWith("[1,2]", ""), "header is not a JSON object");
    row("JSON string", fileWith("\"x\"", ""), "header is not a JSON object");
    row("empty header", fileWith("", ""), "header is not valid JSON");
    // Entries.
    row("entry not an object", fileWith(one("[1]"), ""), "tensor 'w': expected an object");
    row("missing dtype", fileWith(one(R"({"shape":[],"data_offsets":[0,0]})"), ""),
        "tensor 'w': missing 'dtype'");
    row("missing shape", fileWith(one(R"({"dtype":"F32","data_offsets":[0,0]})"), ""),
        "tensor 'w': missing 'shape'");
    row("missing offsets", fileWith(one(R"({"dtype":"F32","shape":[0]})"), ""),
        "tensor 'w': missing 'data_offsets'");
    row("unknown dtype", fileWith(one(R"({"dtype":"BF16","shape":[4],"data_offsets":[0,8]})"), f8),
        "tensor 'w': unknown dtype 'BF16'");
    row("lowercase dtype", fileWith(one(R"({"dtype":"f32","shape":[2],"data_offsets":[0,8]})"), f8),
        "unknown dtype 'f32'");
    row("dtype not a string", fileWith(one(R"({"dtype":4,"shape":[2],"data_offsets":[0,8]})"), f8),
        "tensor 'w': dtype is not a string: 4");
    row("shape not a list", fileWith(one(R"({"dtype":"F32","shape":2,"data_offsets":[0,8]})"), f8),
        "tensor 'w': shape 2 is not a list of non-negative integers");
    row("negative dimension",
        fileWith(one(R"({"dtype":"F32","shape":[-2,-1],"data_offsets":[0,8]})"), f8),
        "shape [-2,-1] is not a list of non-negative integers");
    row("fractional dimension",
        fileWith(one(R"({"dtype":"F32","shape":[2.0],"data_offsets":[0,8]})"), f8),
        "shape [2.0] is not a list");
    row("string dimension",
        fileWith(one(R"({"dtype":"F32","shape":["2"],"data_offsets":[0,8]})"), f8),
        R"(shape ["2"] is not a list)");
    row("dimension over int64",
        fileWith(one(R"({"dtype":"U8","shape":[9223372036854775808],"data_offsets":[0,8]})"), f8),
        "shape [9223372036854775808] is not a list");
    row("offsets not a list", fileWith(one(R"({"dtype":"F32","shape":[2],"data_offsets":8})"), f8),
        "data_offsets 8 is not [begin, end]");
    row("three offsets", fileWith(one(R"({"dtype":"F32","shape":[2],"data_offsets":[0,8,8]})"), f8),
        "data_offsets [0,8,8] is not [begin, end]");
    row("negative offset",
        fileWith(one(R"({"dtype":"F32","shape":[2],"data_offsets":[-8,0]})"), f8),
        "data_offsets [-8,0] is not [begin, end]");
    row("offsets reversed",
        fileWith(one(R"({"dtype":"F32","shape":[2],"data_offsets":[8,0]})"), f8),
        "tensor 'w': data_offsets [8, 0] end before they begin");
    row("offsets past buffer",
        fileWith(one(R"({"dtype":"F32","shape":[4],"data_offsets":[0,16]})"), f8),
        "tensor 'w': data_offsets [0, 16] reach past the end of the data buffer (8 bytes)");
    row("size mismatch", fileWith(one(R"({"dtype":"F64","shape":[2],"data_offsets":[0,8]})"), f8),
        "tensor 'w': data_offsets [0, 8] do not match shape [2] of F64 (16 bytes)");
    row("size overflow",
        fileWith(one(R"({"dtype":"F64","shape":[4294967296,4294967296,16],"data_offsets":[0,8]})"),
                 f8),
        "do not match shape [4294967296,4294967296,16] of F64 (more than 2^63 bytes)");
    row("product wraps to 8 bytes",  // (2^61 + 1) * 8 = 2^64 + 8: 8 in unchecked 64-bit math
        fileWith(one(R"({"dtype":"U8","shape":[2305843009213693953,8],"data_offsets":[0,8]})"), f8),
        "(more than 2^63 bytes)");
    // Coverage of the buffer.
    row("overlap",
        fileWith(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                 R"("b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})",
                 f12),
        "tensor 'b': data_offsets [4, 12] overlap tensor 'a' [0, 8]");
    row("same range twice",
        fileWith(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                 R"("b":{"dtype":"I32","shape":[2],"data_offsets":[0,8]}})",
                 f8),
        "overlap tensor");
    row("empty tensor inside another",
        fileWith(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                 R"("e":{"dtype":"F32","shape":[0],"data_offsets":[4,4]}})",
                 f8),
        "tensor 'e': data_offsets [4, 4] overlap tensor 'a' [0, 8]");
    row("hole",
        fileWith(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
                 R"("b":{"dtype":"F32","shape":[1],"data_offsets":[8,12]}})",
                 f12),
        "bytes [4, 8) of the data buffer are not covered by any tensor");
    row("hole at start", fileWith(one(R"({"dtype":"F32","shape":[1],"data_offsets":[4,8]})"), f8),
        "bytes [0, 4) of the data buffer are not covered");
    row("trailing bytes", fileWith(one(R"({"dtype":"F32","shape":[1],"data_offsets":[0,4]})"), f8),
        "bytes [4, 8) of the data buffer are not covered");
    row("data without tensors", fileWith("{}", f8), "bytes [0, 8) of the data buffer");
    // Metadata.
    row("metadata not an object", fileWith(R"({"__metadata__":["a"]})", ""),
        R"(__metadata__ is not an object: ["a"])");
    row("metadata number", fileWith(R"({"__metadata__":{"ok":"x","lr":0.1}})", ""),
        "__metadata__ value for 'lr' is not a string: 0.1");
    row("metadata null", fileWith(R"({"__metadata__":{"k":null}})", ""),
        "__metadata__ value for 'k' is not a string: null");
    row("metadata nested", fileWith(R"({"__metadata__":{"cfg":{"a":"b"}}})", ""),
        "__metadata__ value for 'cfg' is not a string");
    // Duplicates, which a JSON parser would silently merge.
    row("duplicate tensor",
        fileWith(R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
                 R"("w":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
                 f8),
        "duplicate tensor name 'w'");
    row("duplicate key in entry",
        fileWith(one(R"({"dtype":"F32","dtype":"I32","shape":[1],"data_offsets":[0,4]})"),
                 std::string(4, '\0')),
        "duplicate key 'dtype'");
    row("duplicate metadata key", fileWith(R"({"__metadata__":{"k":"a","k":"b"}})", ""),
        "duplicate key 'k'");
}

void TestSafetensors::parseRejects() {
    QFETCH(QByteArray, bytes);
    QFETCH(QString, expected);
    const std::string msg = thrownMessage<DataError>([&] {
        (void)parseSafetensors(std::string_view(bytes.constData(), bytes.size()), "w.safetensors");
    });
    QVERIFY2(msg.rfind("w.safetensors: ", 0) == 0, msg.c_str());
    QVERIFY2(contains(msg, expected.toStdString()), msg.c_str());
}

void TestSafetensors::mismatchMessageIsExact() {
    const std::string bytes =
        fileWith(R"({"layers.0.weight":{"dtype":"F32","shape":[4,8,2],"data_offsets":[0,100]}})",
                 std::string(100, '\0'));
    const std::string msg =
        thrownMessage<DataError>([&] { (void)parseSafetensors(bytes, "w.safetensors"); });
    QCOMPARE(msg, std::string("w.safetensors: tensor 'layers.0.weight': data_offsets [0, 100] do "
                              "not match shape [4,8,2] of F32 (256 bytes)"));
}

// Robustness: every truncation and every single-byte corruption of a valid file either parses
// or is a DataError; nothing else (no crash, no other exception, no huge allocation).
void TestSafetensors::truncatedAndCorruptedFilesFailCleanly() {
    SafetensorsFile f;
    f.tensors.push_back(Tensor::fromF32("a", {2, 2}, std::vector<float>{1, 2, 3, 4}));
    f.tensors.push_back(Tensor::fromI32("b", {1}, std::vector<int32_t>{5}));
    f.metadata["k"] = "v";
    const std::string good = serializeSafetensors(f);
    for (size_t n = 0; n < good.size(); ++n) {
        const std::string msg =
            thrownMessage<DataError>([&] { (void)parseSafetensors(good.substr(0, n), "t"); });
        QVERIFY2(msg.rfind("t: ", 0) == 0, msg.c_str());
    }
    int parsed = 0;
    int rejected = 0;
    for (size_t i = 0; i < good.size(); ++i) {
        for (int flip : {0x01, 0x20, 0x80, 0xff}) {
            std::string bad = good;
            bad[i] = static_cast<char>(bad[i] ^ flip);
            try {
                (void)parseSafetensors(bad, "c");
                ++parsed;
            } catch (const DataError&) {
                ++rejected;
            }
        }
    }
    QVERIFY(rejected > 0);
    QVERIFY(parsed > 0);  // flips in the data buffer are still valid files
}

void TestSafetensors::readMissingFile() {
    QTemporaryDir dir;
    const std::string path = dir.filePath("absent.safetensors").toStdString();
    const std::string msg = thrownMessage<DataError>([&] { (void)readSafetensors(path); });
    QVERIFY2(contains(msg, path) && contains(msg, "No such file"), msg.c_str());
    QVERIFY(contains(thrownMessage<DataError>([&] { (void)readFile(path); }), path));
}

void TestSafetensors::readDirectory() {
    QTemporaryDir dir;
    const std::string path = dir.path().toStdString();
    const std::string msg = thrownMessage<DataError>([&] { (void)readFile(path); });
    QVERIFY2(contains(msg, path) && contains(msg, "directory"), msg.c_str());
}

void TestSafetensors::atomicWriteCreatesFile() {
    QTemporaryDir dir;
    const QString path = dir.filePath("new.bin");
    const std::string content("binary\0data\xff", 12);
    writeFileAtomic(path.toStdString(), content);
    QCOMPARE(slurp(path), content);
    QCOMPARE(entriesOf(dir.path()), QStringList{"new.bin"});
    // Permissions as for any new file: 0666 minus the umask, not mkstemp's 0600.
    const mode_t mask = ::umask(0);
    ::umask(mask);
    QCOMPARE(modeOf(path), static_cast<mode_t>(0666 & ~mask));

    writeFileAtomic(dir.filePath("empty.bin").toStdString(), std::string_view());
    QCOMPARE(slurp(dir.filePath("empty.bin")), std::string());
}

void TestSafetensors::atomicWriteReplacesExistingFile() {
    QTemporaryDir dir;
    const QString path = dir.filePath("f.txt");
    writeFileAtomic(path.toStdString(), "a much longer old content that must not linger");
    QVERIFY(::chmod(path.toLocal8Bit().constData(), 0640) == 0);
    writeFileAtomic(path.toStdString(), "new");
    QCOMPARE(slurp(path), std::string("new"));
    QCOMPARE(modeOf(path), static_cast<mode_t>(0640));  // a replaced file keeps its mode
    writeFileAtomic(path.toStdString(), [](std::ostream& out) { out << "streamed " << 42; });
    QCOMPARE(slurp(path), std::string("streamed 42"));
    QCOMPARE(entriesOf(dir.path()), QStringList{"f.txt"});
}

void TestSafetensors::atomicWriteRelativePath() {
    QTemporaryDir dir;
    const QString previous = QDir::currentPath();
    QVERIFY(QDir::setCurrent(dir.path()));
    std::string error;
    try {
        writeFileAtomic("rel.txt", "relative");  // no directory part: the current one
    } catch (const std::exception& e) {
        error = e.what();
    }
    QVERIFY(QDir::setCurrent(previous));
    QVERIFY2(error.empty(), error.c_str());
    QCOMPARE(slurp(dir.filePath("rel.txt")), std::string("relative"));
    QCOMPARE(entriesOf(dir.path()), QStringList{"rel.txt"});
}

void TestSafetensors::atomicWriteMissingDirectoryFails() {
    QTemporaryDir dir;
    const std::string path = dir.filePath("missing/sub/out.bin").toStdString();
    const std::string msg = thrownMessage<RuntimeError>([&] { writeFileAtomic(path, "x"); });
    QVERIFY2(contains(msg, path) && contains(msg, "No such file or directory"), msg.c_str());
    const std::string streamed =
        thrownMessage<RuntimeError>([&] { writeFileAtomic(path, [](std::ostream&) {}); });
    QVERIFY2(contains(streamed, "No such file or directory"), streamed.c_str());
    QVERIFY(entriesOf(dir.path()).isEmpty());

    const std::string empty = thrownMessage<RuntimeError>([&] { writeFileAtomic("", "x"); });
    QVERIFY2(contains(empty, "not a file path"), empty.c_str());
    const std::string slash =
        thrownMessage<RuntimeError>([&] { writeFileAtomic(dir.path().toStdString() + "/", "x"); });
    QVERIFY2(contains(slash, "not a file path"), slash.c_str());
}

void TestSafetensors::atomicWriteThrowingWriterLeavesOldFile() {
    QTemporaryDir dir;
    const QString path = dir.filePath("keep.txt");
    writeFileAtomic(path.toStdString(), "old");
    QStringList seenDuringWrite;
    const std::string msg = thrownMessage<std::invalid_argument>([&] {
        writeFileAtomic(path.toStdString(), [&](std::ostream& out) {
            out << std::string(1 << 20, 'p');  // more than one buffer: some reaches the disk
            out.flush();
            seenDuringWrite = entriesOf(dir.path());
            throw std::invalid_argument("writer gave up");
        });
    });
    QCOMPARE(msg, std::string("writer gave up"));  // the writer's exception, unchanged
    // While writing, the data went to a hidden temporary file beside the target.
    QCOMPARE(seenDuringWrite.size(), 2);
    QCOMPARE(seenDuringWrite[1], QString("keep.txt"));
    QVERIFY2(seenDuringWrite[0].startsWith(".keep.txt.tmp-"), qPrintable(seenDuringWrite[0]));
    // Afterwards: the old content, and no temporary file left behind.
    QCOMPARE(slurp(path), std::string("old"));
    QCOMPARE(entriesOf(dir.path()), QStringList{"keep.txt"});
}

void TestSafetensors::atomicWriteFailedStreamLeavesOldFile() {
    QTemporaryDir dir;
    const QString path = dir.filePath("keep.txt");
    writeFileAtomic(path.toStdString(), "old");
    const std::string msg = thrownMessage<RuntimeError>([&] {
        writeFileAtomic(path.toStdString(), [](std::ostream& out) {
            out << "partial";
            out.setstate(std::ios::failbit);
        });
    });
    QVERIFY2(contains(msg, path.toStdString()) && contains(msg, "stream"), msg.c_str());
    QCOMPARE(slurp(path), std::string("old"));
    QCOMPARE(entriesOf(dir.path()), QStringList{"keep.txt"});
}

void TestSafetensors::atomicWriteOverDirectoryFails() {
    QTemporaryDir dir;
    QVERIFY(QDir(dir.path()).mkdir("target"));
    const std::string path = dir.filePath("target").toStdString();
    const std::string msg = thrownMessage<RuntimeError>([&] { writeFileAtomic(path, "x"); });
    // Refused before anything is written (the output-path rule), not a failed rename.
    QVERIFY2(contains(msg, path) && contains(msg, "it is a directory"), msg.c_str());
    QCOMPARE(entriesOf(dir.path()), QStringList{"target"});
    QVERIFY(QFileInfo(dir.filePath("target")).isDir());
}

void TestSafetensors::atomicWriteLargeStreaming() {
    QTemporaryDir dir;
    const QString path = dir.filePath("large.bin");
    std::string expected;
    // Small pieces (buffered), single bytes and big blocks (written straight through), mixed.
    writeFileAtomic(path.toStdString(), [&](std::ostream& out) {
        for (int i = 0; i < 2000; ++i) {
            const std::string piece(static_cast<size_t>(i % 97) + 1,
                                    static_cast<char>('a' + i % 26));
            out << piece;
            out.put(static_cast<char>(i));
            expected += piece;
            expected += static_cast<char>(i);
            if (i % 500 == 0) {
                const std::string block(size_t{3} << 20, static_cast<char>(i % 251));
                out.write(block.data(), static_cast<std::streamsize>(block.size()));
                expected += block;
            }
        }
    });
    QCOMPARE(slurp(path).size(), expected.size());
    QVERIFY(slurp(path) == expected);
}

void TestSafetensors::writeSafetensorsReplacesAtomically() {
    QTemporaryDir dir;
    const std::string path = dir.filePath("w.safetensors").toStdString();
    writeSafetensors(path, sampleFile());
    SafetensorsFile small;
    small.tensors.push_back(Tensor::fromF32("only", {1}, std::vector<float>{3.0f}));
    writeSafetensors(path, small);
    compareFiles(readSafetensors(path), small);
    QCOMPARE(entriesOf(dir.path()), QStringList{"w.safetensors"});
}

void TestSafetensors::writeSafetensorsInvalidLeavesOldFile() {
    QTemporaryDir dir;
    const std::string path = dir.filePath("w.safetensors").toStdString();
    writeSafetensors(path, sampleFile());
    const std::string before = readFile(path);
    SafetensorsFile bad = sampleFile();
    bad.tensors.push_back(bad.tensors[0]);  // duplicate name
    const std::string msg = thrownMessage<RuntimeError>([&] { writeSafetensors(path, bad); });
    QVERIFY2(contains(msg, path) && contains(msg, "duplicate"), msg.c_str());
    QCOMPARE(readFile(path), before);
    QCOMPARE(entriesOf(dir.path()), QStringList{"w.safetensors"});

    const std::string missing = dir.filePath("no/such/dir.safetensors").toStdString();
    const std::string noDir =
        thrownMessage<RuntimeError>([&] { writeSafetensors(missing, sampleFile()); });
    QVERIFY2(contains(noDir, "No such file or directory"), noDir.c_str());
}

// The weights loader over a real export (the fuzz seed fuzz/corpus/model_io/spirals_k2.safetensors:
// K = 2, widths [2, 3, 2]) whose metadata was edited to disagree with its tensors. Each row was a
// fuzz_model_io finding: before, the parameters were allocated from the metadata's widths before
// any tensor was checked (a 7 KB file asked for ~64 GiB: bad_alloc, not a DataError), and
// json's own type_error escaped for a 'members' entry that is not an object.
void TestSafetensors::weightsWhoseMetadataDisagreesFailCleanly_data() {
    QTest::addColumn<QString>("key");
    QTest::addColumn<QString>("value");
    QTest::addColumn<QString>("expected");
    QTest::newRow("huge widths") << "widths"
                                 << "[65536, 65536, 65536]"
                                 << "tensor 'layers.0.weight' should be F32 [2,65536,65536]";
    QTest::newRow("member not an object") << "members"
                                          << "[1, 2]"
                                          << "'members' entry 0 is not an object";
    QTest::newRow("diverged not a boolean") << "members"
                                            << R"([{"diverged": "yes"}, {}])"
                                            << "'members' entry 0";
    QTest::newRow("wrapping version") << "format_version"
                                      << "4294967297"
                                      << "format_version 4294967297 is not supported";
}

void TestSafetensors::weightsWhoseMetadataDisagreesFailCleanly() {
    QFETCH(QString, key);
    QFETCH(QString, value);
    QFETCH(QString, expected);
    const std::string seed =
        test::sourceDir().toStdString() + "/fuzz/corpus/model_io/spirals_k2.safetensors";
    SafetensorsFile file = readSafetensors(seed);
    QVERIFY(importEnsemble(file).params.size() == 2 * (3 * 2 + 3 + 2 * 3 + 2));
    file.metadata[key.toStdString()] = value.toStdString();
    try {
        importEnsemble(parseSafetensors(serializeSafetensors(file), "edited.safetensors"));
        QFAIL("expected a DataError");
    } catch (const DataError& e) {
        QVERIFY2(QString::fromStdString(e.what()).contains(expected), e.what());
        QVERIFY2(QString::fromStdString(e.what()).startsWith("edited.safetensors: "), e.what());
    }
}

QTEST_APPLESS_MAIN(TestSafetensors)

#include "tst_safetensors.moc"
