// The shipped UCI tables and what Deep Ensembles' protocol needs of the data layer: the CSV
// reader's gzip input, where the shipped files are found, the `uci` dataset kind, the seeded
// 90/10 split and the standardisation fitted on the training rows alone.

#include <zlib.h>

#include <QDir>
#include <QTemporaryDir>
#include <QTest>

#include <algorithm>
#include <cmath>
#include <functional>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "config/config.h"
#include "core/errors.h"
#include "data/bundled_data.h"
#include "data/dataset.h"
#include "support/test_support.h"

using namespace ensemble;
using ensemble::test::writeBytes;
using nlohmann::json;

namespace {

template <typename Error>
std::string uciErrorOf(const std::function<void()>& f) {
    try {
        f();
    } catch (const Error& e) {
        return e.what();
    } catch (const std::exception& e) {
        return std::string("<wrong exception type: ") + e.what() + ">";
    }
    return "<no exception>";
}

bool holds(const std::string& text, const std::string& part) {
    return text.find(part) != std::string::npos;
}

// `text` gzip-compressed by zlib (a gzip header, as gzip(1) writes), in memory.
std::string gzipped(const std::string& text) {
    z_stream s{};
    if (deflateInit2(&s, Z_BEST_COMPRESSION, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY) !=
        Z_OK) {
        return {};
    }
    std::string out(deflateBound(&s, static_cast<uLong>(text.size())) + 32, '\0');
    s.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(text.data()));
    s.avail_in = static_cast<uInt>(text.size());
    s.next_out = reinterpret_cast<Bytef*>(out.data());
    s.avail_out = static_cast<uInt>(out.size());
    const int code = deflate(&s, Z_FINISH);
    out.resize(s.total_out);
    deflateEnd(&s);
    return code == Z_STREAM_END ? out : std::string();
}

// The first line of a gzip file, read with zlib itself (not the reader under test).
std::string firstGzipLine(const std::string& path) {
    gzFile f = gzopen(path.c_str(), "rb");
    if (f == nullptr) {
        return {};
    }
    char line[4096];
    const char* got = gzgets(f, line, sizeof line);
    gzclose(f);
    std::string s = got != nullptr ? std::string(got) : std::string();
    while (!s.empty() && (s.back() == '\n' || s.back() == '\r')) {
        s.pop_back();
    }
    return s;
}

bool sameTable(const Dataset& a, const Dataset& b) {
    return a.rows == b.rows && a.features == b.features && a.x == b.x && a.y == b.y &&
           a.target == b.target && a.featureNames == b.featureNames && a.targetName == b.targetName;
}

// A uci config as a person writes it (model.likelihood gaussian: a regression head).
ExperimentConfig uciConfig(const char* set, double testFraction, uint64_t seed) {
    json j;
    j["dataset"] = {
        {"kind", "uci"}, {"uci_set", set}, {"test_fraction", testFraction}, {"seed", seed}};
    j["model"] = {{"likelihood", "gaussian"}};
    return parseConfig(j);
}

}  // namespace

class TestUci : public QObject {
    Q_OBJECT

  private:
    QTemporaryDir m_dir;

    std::string path(const char* name) const {
        return m_dir.filePath(QString::fromLatin1(name)).toStdString();
    }

  private Q_SLOTS:
    void initTestCase();
    void gzipCsvReadsAsThePlainText();
    void gzipErrorsNameTheFileAndLine();
    void truncatedOrCorruptGzipIsAnError();
    void dataFoldersFollowTheProgram();
    void everyUciSetLoadsWithItsCounts();
    void uciKindLoadsThroughTheConfig();
    void splitIsDisjointAndSeeded();
    void standardisationUsesTheTrainRowsOnly();
    void dataDirOverridesAndMissingDataSaysWhere();
};

void TestUci::initTestCase() {
    QVERIFY(m_dir.isValid());
    // The build tree's copy is what these tests read, whatever the caller's environment says.
    qunsetenv("ENSEMBLE_DATA_DIR");
}

// A gzip file (named without .gz: the magic bytes decide) parses exactly as its plain text,
// for each of the reader's modes, from a file and from memory.
void TestUci::gzipCsvReadsAsThePlainText() {
    const std::string text =
        "x0,\"x 1\",label,y\n0.5,-1e-3,1,2.25\n1.5,3,0,-4\r\n\n-2,7.125,2,0.5\n";
    const std::string gz = gzipped(text);
    QVERIFY(gz.size() > 2 && static_cast<unsigned char>(gz[0]) == 0x1f);
    QVERIFY(writeBytes(path("plain.csv"), text));
    QVERIFY(writeBytes(path("packed.dat"), gz));

    int plainClasses = 0;
    int packedClasses = 0;
    const Dataset plain = readCsv(path("plain.csv"), plainClasses);
    const Dataset packed = readCsv(path("packed.dat"), packedClasses);
    QVERIFY(sameTable(plain, packed));
    QCOMPARE(packedClasses, 3);
    QCOMPARE(packed.rows, int64_t{3});
    QCOMPARE(packed.featureNames, (std::vector<std::string>{"x0", "x 1", "y"}));

    QVERIFY(sameTable(readCsvRegression(path("plain.csv"), "y"),
                      readCsvRegression(path("packed.dat"), "y")));
    QVERIFY(
        sameTable(readCsvFeatures(path("plain.csv"), 3), readCsvFeatures(path("packed.dat"), 3)));
    int memoryClasses = 0;
    QVERIFY(sameTable(parseCsv(gz, "memory.csv.gz", memoryClasses), plain));

    // Two gzip members one after the other read as their texts joined (cat a.gz b.gz).
    const std::string head = "x0,label\n1,0\n";
    const std::string tail = "2,1\n";
    int joinedClasses = 0;
    const Dataset joined = parseCsv(gzipped(head) + gzipped(tail), "joined.gz", joinedClasses);
    QCOMPARE(joined.rows, int64_t{2});
    QCOMPARE(joined.x, (std::vector<float>{1.0f, 2.0f}));
}

// Errors in gzip input keep the plain reader's form: file, line, column, what was expected.
void TestUci::gzipErrorsNameTheFileAndLine() {
    QVERIFY(writeBytes(path("bad.csv.gz"), gzipped("x0,x1,label\n1,2,0\n3,oops,1\n")));
    int classes = 0;
    const std::string message =
        uciErrorOf<DataError>([&] { readCsv(path("bad.csv.gz"), classes); });
    QVERIFY2(holds(message, path("bad.csv.gz") + ":3: column 2 ('x1'): expected a number, got "
                                                 "'oops'"),
             message.c_str());
}

void TestUci::truncatedOrCorruptGzipIsAnError() {
    std::string text = "x0,x1,label\n";
    for (int i = 0; i < 2000; ++i) {
        text += std::to_string(i) + "," + std::to_string(i * 7 % 13) + "," + std::to_string(i % 2) +
                "\n";
    }
    const std::string gz = gzipped(text);
    int classes = 0;
    // Cut anywhere inside the stream: the header, the data, the trailer.
    for (const std::size_t keep : {std::size_t{2}, std::size_t{9}, gz.size() / 2, gz.size() - 1}) {
        QVERIFY(writeBytes(path("cut.csv.gz"), gz.substr(0, keep)));
        const std::string message =
            uciErrorOf<DataError>([&] { readCsv(path("cut.csv.gz"), classes); });
        QVERIFY2(holds(message, path("cut.csv.gz") + ": truncated gzip data"), message.c_str());
    }
    // A wrong CRC-32 in the trailer: zlib's check fails, and the message says corrupt.
    std::string bad = gz;
    bad[bad.size() - 8] = static_cast<char>(bad[bad.size() - 8] ^ 0x5a);
    QVERIFY(writeBytes(path("crc.csv.gz"), bad));
    const std::string message =
        uciErrorOf<DataError>([&] { readCsv(path("crc.csv.gz"), classes); });
    QVERIFY2(holds(message, path("crc.csv.gz") + ": corrupt gzip data"), message.c_str());
}

// Installed, the data is ../share/ensemblelab/data from bin/; a build tree's programs sit one
// or two folders below its root, which holds the copy at share/ensemblelab/data.
void TestUci::dataFoldersFollowTheProgram() {
    const std::vector<std::string> installed = bundledDataFoldersFor("/usr/bin", nullptr);
    QVERIFY(!installed.empty());
    QCOMPARE(installed.front(), std::string("/usr/share/ensemblelab/data"));
    const std::vector<std::string> cli = bundledDataFoldersFor("/b/build/app/cli", nullptr);
    QVERIFY(std::find(cli.begin(), cli.end(), "/b/build/share/ensemblelab/data") != cli.end());
    const std::vector<std::string> tests = bundledDataFoldersFor("/b/build/tests", nullptr);
    QCOMPARE(tests.front(), std::string("/b/build/share/ensemblelab/data"));
    // The variable replaces the search; an empty one is as unset.
    QCOMPARE(bundledDataFoldersFor("/usr/bin", "/data"), std::vector<std::string>{"/data"});
    QCOMPARE(bundledDataFoldersFor("/usr/bin", "").front(),
             std::string("/usr/share/ensemblelab/data"));
    QVERIFY(bundledDataFoldersFor("", nullptr).empty());
    QCOMPARE(bundledDataFoldersFor("/", nullptr).size(), std::size_t{1});
}

// Every set loads from the build tree with the README's counts, its target the file's last
// column; naval's two constant columns standardise to zeros, not to infinities.
void TestUci::everyUciSetLoadsWithItsCounts() {
    for (const UciSetInfo& info : EnumNames<UciSet>::table) {
        const std::string file = bundledDataFile(info.file);
        const Dataset data = readUciSet(info.value);
        QVERIFY2(data.rows == info.rows, info.name);
        QVERIFY2(data.features == info.features, info.name);
        QVERIFY2(data.y.empty() && data.target.size() == static_cast<std::size_t>(data.rows),
                 info.name);
        QCOMPARE(data.targetName, std::string(info.target));
        const std::string header = firstGzipLine(file);
        QVERIFY2(header.size() > std::string(info.target).size() &&
                     header.substr(header.size() - std::string(info.target).size() - 1) ==
                         "," + std::string(info.target),
                 (std::string(info.name) + ": " + header).c_str());
    }
    const Dataset naval = readUciSet(UciSet::Naval);
    const Normalization n = Normalization::fit(naval);
    int constant = 0;
    for (int f = 0; f < naval.features; ++f) {
        if (naval.featureNames[f] == "gt_compressor_inlet_air_temperature" ||
            naval.featureNames[f] == "gt_compressor_inlet_air_pressure") {
            ++constant;
            QCOMPARE(n.std[f], 1.0f);
            QCOMPARE(n.mean[f], naval.x[static_cast<std::size_t>(f)]);
        }
    }
    QCOMPARE(constant, 2);
    for (float v : n.apply(naval)) {
        QVERIFY(std::isfinite(v));
    }
}

void TestUci::uciKindLoadsThroughTheConfig() {
    const ExperimentConfig c = uciConfig("yacht", 0.1, 7);
    QVERIFY(c.dataset.kind == DatasetKind::Uci);
    QVERIFY(c.dataset.uciSet == UciSet::Yacht);
    QVERIFY(c.dataset.regression());
    const DataSplit split = loadDataSplit(c.dataset);
    QVERIFY(split.regression);
    QCOMPARE(split.name, std::string("yacht"));
    QCOMPARE(split.test.rows, int64_t{31});  // round(308 * 0.1)
    QCOMPARE(split.train.rows, int64_t{277});
    QCOMPARE(split.train.features, 6);
    QVERIFY(!split.planar());
    // The key is the uci kind's alone; other kinds refuse it, naming it.
    json spirals;
    spirals["dataset"] = {{"kind", "spirals"}, {"uci_set", "yacht"}};
    QVERIFY(holds(uciErrorOf<ConfigError>([&] { parseConfig(spirals); }), "dataset.uci_set"));
    json unknown;
    unknown["dataset"] = {{"kind", "uci"}, {"uci_set", "boston"}};
    unknown["model"] = {{"likelihood", "gaussian"}};
    QVERIFY(holds(uciErrorOf<ConfigError>([&] { parseConfig(unknown); }), "concrete | energy"));
}

// The 90/10 split, on the table with each row's index as its target: a partition of the rows
// (each row whole), the same for one seed, another for another seed; loadDataSplit gives the
// same split.
void TestUci::splitIsDisjointAndSeeded() {
    const Dataset all = readUciSet(UciSet::Concrete);
    Dataset indexed = all;
    for (int64_t r = 0; r < indexed.rows; ++r) {
        indexed.target[static_cast<std::size_t>(r)] = static_cast<float>(r);
    }
    const auto rowsOf = [](const Dataset& part) {
        std::vector<int64_t> rows;
        for (float t : part.target) {
            rows.push_back(static_cast<int64_t>(t));
        }
        return rows;
    };
    const TrainTest a = splitTrainTest(indexed, 0.1, 11);
    QCOMPARE(a.test.rows, int64_t{103});  // round(1030 * 0.1)
    QCOMPARE(a.train.rows, int64_t{927});
    std::set<int64_t> seen;
    for (const Dataset* part : {&a.train, &a.test}) {
        const std::vector<int64_t> rows = rowsOf(*part);
        for (std::size_t i = 0; i < rows.size(); ++i) {
            QVERIFY(seen.insert(rows[i]).second);  // no row in both parts, nor twice
            QVERIFY(std::equal(part->row(static_cast<int64_t>(i)),
                               part->row(static_cast<int64_t>(i)) + all.features,
                               all.row(rows[i])));
        }
    }
    QCOMPARE(seen.size(), static_cast<std::size_t>(all.rows));

    const TrainTest again = splitTrainTest(indexed, 0.1, 11);
    QCOMPARE(rowsOf(again.test), rowsOf(a.test));
    QCOMPARE(rowsOf(again.train), rowsOf(a.train));
    const TrainTest other = splitTrainTest(indexed, 0.1, 12);
    QVERIFY(rowsOf(other.test) != rowsOf(a.test));
    std::vector<int64_t> sortedA = rowsOf(a.test);
    std::vector<int64_t> sortedOther = rowsOf(other.test);
    std::sort(sortedA.begin(), sortedA.end());
    std::sort(sortedOther.begin(), sortedOther.end());
    QVERIFY(sortedA != sortedOther);  // other rows held out, not the same rows reordered

    const DataSplit loaded = loadDataSplit(uciConfig("concrete", 0.1, 11).dataset);
    QVERIFY(sameTable(loaded.test, selectRows(all, rowsOf(a.test))));
    QVERIFY(sameTable(loaded.train, selectRows(all, rowsOf(a.train))));
}

// The inputs' mean and std and the target's are the train rows' (population std, in double),
// not the whole table's; the test rows reach the model through the train rows' numbers.
void TestUci::standardisationUsesTheTrainRowsOnly() {
    const DataSplit split = loadDataSplit(uciConfig("energy", 0.1, 3).dataset);
    const Dataset all = readUciSet(UciSet::Energy);
    const Dataset& train = split.train;
    bool differsFromAll = false;
    for (int f = 0; f < train.features; ++f) {
        double sum = 0.0;
        double allSum = 0.0;
        for (int64_t r = 0; r < train.rows; ++r) {
            sum += train.row(r)[f];
        }
        for (int64_t r = 0; r < all.rows; ++r) {
            allSum += all.row(r)[f];
        }
        const double mean = sum / static_cast<double>(train.rows);
        double squares = 0.0;
        for (int64_t r = 0; r < train.rows; ++r) {
            squares += (train.row(r)[f] - mean) * (train.row(r)[f] - mean);
        }
        const double sd = std::sqrt(squares / static_cast<double>(train.rows));
        QCOMPARE(split.normalization.mean[f], static_cast<float>(mean));
        QCOMPARE(split.normalization.std[f], static_cast<float>(sd));
        differsFromAll =
            differsFromAll || split.normalization.mean[f] !=
                                  static_cast<float>(allSum / static_cast<double>(all.rows));
    }
    QVERIFY(differsFromAll);
    double targetSum = 0.0;
    for (float t : train.target) {
        targetSum += t;
    }
    const double targetMean = targetSum / static_cast<double>(train.rows);
    QVERIFY(std::fabs(split.normalization.targetMean - targetMean) <= 1e-9 * std::fabs(targetMean));
    double targetSquares = 0.0;
    for (float t : train.target) {
        targetSquares += (t - targetMean) * (t - targetMean);
    }
    const double targetSd = std::sqrt(targetSquares / static_cast<double>(train.rows));
    QVERIFY(std::fabs(split.normalization.targetStd - targetSd) <= 1e-9 * targetSd);
    // A test row maps through the train rows' numbers.
    const std::vector<float> test = split.normalization.apply(split.test);
    QCOMPARE(test[1],
             (split.test.row(0)[1] - split.normalization.mean[1]) / split.normalization.std[1]);
}

// ENSEMBLE_DATA_DIR replaces the search; without the file, the error lists where it looked.
void TestUci::dataDirOverridesAndMissingDataSaysWhere() {
    QTemporaryDir data;
    QVERIFY(data.isValid() && QDir(data.path()).mkpath(QStringLiteral("uci")));
    QVERIFY(writeBytes(data.filePath(QStringLiteral("uci/yacht.csv.gz")).toStdString(),
                       gzipped("a,b,residuary_resistance\n1,2,3\n4,5,6.5\n7,8,9\n")));
    qputenv("ENSEMBLE_DATA_DIR", data.path().toUtf8());
    const Dataset yacht = readUciSet(UciSet::Yacht);
    const std::string missing = uciErrorOf<DataError>([] { readUciSet(UciSet::Wine); });
    qunsetenv("ENSEMBLE_DATA_DIR");
    QCOMPARE(yacht.rows, int64_t{3});
    QCOMPARE(yacht.target, (std::vector<float>{3.0f, 6.5f, 9.0f}));
    QVERIFY2(holds(missing, "uci/wine-quality-red.csv.gz") &&
                 holds(missing, data.path().toStdString()) && holds(missing, "ENSEMBLE_DATA_DIR"),
             missing.c_str());
    QCOMPARE(readUciSet(UciSet::Yacht).rows, int64_t{308});  // the build tree's again
}

QTEST_APPLESS_MAIN(TestUci)
#include "tst_uci.moc"
