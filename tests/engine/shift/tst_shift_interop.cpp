// The image shifts checked by the tools that define them, on real images: for the
// first 16 test images of Fashion-MNIST (Debian's dataset-fashion-mnist) or MNIST, rotateImage
// equals scipy.ndimage.rotate(img, angle, reshape=False, order=1, mode='constant', cval=0)
// within 1e-5 on the 0..1 pixel scale at every default angle and two others, 90 degrees equals
// numpy.rot90(img, 1), and translateImage equals numpy.roll(img, s, axis=1)
// (tests/interop/shift_reference.py writes the references).
//
// Needs python3 with NumPy and SciPy (Debian: python3-numpy python3-scipy) and one of the two
// datasets; without them the suite exits 77 (skipped) with the reason, unless
// ENSEMBLE_REQUIRE_INTEROP=1 (CI), where a missing tool is a failure.
#include <QtTest/QtTest>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "data/dataset.h"
#include "data/dataset_kinds.h"
#include "shift/transforms.h"
#include "support/test_support.h"

using namespace ensemble;
using ensemble::test::readFloats;
using ensemble::test::runProgram;
using ensemble::test::sourceDir;

namespace {

// The contract's tolerance, on 0..1 pixels.
constexpr double kScipyTolerance = 1e-5;
constexpr int kImages = 16;
constexpr int kSide = 28;

QString g_python;
std::string g_imagesFile;  // an IDX images file of real 28x28 images
std::string g_labelsFile;

// Why the suite cannot run here, or empty.
QString findPythonAndImages() {
    for (const QString& candidate :
         {QStringLiteral("/usr/bin/python3"), QStringLiteral("python3")}) {
        if (runProgram(candidate,
                       {QStringLiteral("-c"), QStringLiteral("import numpy, scipy.ndimage")})
                .code == 0) {
            g_python = candidate;
            break;
        }
    }
    if (g_python.isEmpty()) {
        return QStringLiteral(
            "python3 with NumPy and SciPy is not installed (Debian: apt install python3-numpy "
            "python3-scipy)");
    }
    for (DatasetKind kind : {DatasetKind::FashionMnist, DatasetKind::Mnist}) {
        for (const std::string& folder : defaultDataFolders(kind)) {
            for (const char* ext : {"", ".gz"}) {
                const std::string images = folder + "/t10k-images-idx3-ubyte" + ext;
                const std::string labels = folder + "/t10k-labels-idx1-ubyte" + ext;
                std::error_code ec;
                if (std::filesystem::exists(images, ec) && std::filesystem::exists(labels, ec)) {
                    g_imagesFile = images;
                    g_labelsFile = labels;
                    return {};
                }
            }
        }
    }
    return QStringLiteral(
        "neither Fashion-MNIST nor MNIST is installed (Debian: apt install "
        "dataset-fashion-mnist; or scripts/fetch-mnist.sh)");
}

}  // namespace

class TestShiftInterop : public QObject {
    Q_OBJECT

  private slots:
    void initTestCase();
    void rotateEqualsScipy();
    void rollEqualsNumpy();

  private:
    QTemporaryDir m_dir;
    std::vector<float> m_images;  // kImages images on the 0..1 scale
};

void TestShiftInterop::initTestCase() {
    QVERIFY(m_dir.isValid());
    const Dataset all = readIdxPair(g_imagesFile, g_labelsFile);
    QVERIFY(all.rows >= kImages && all.features == kSide * kSide);
    m_images.assign(all.x.begin(), all.x.begin() + kImages * kSide * kSide);
    for (float& v : m_images) {
        v /= 255.0f;
    }
    const QString input = m_dir.filePath(QStringLiteral("images.f32"));
    QFile f(input);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write(reinterpret_cast<const char*>(m_images.data()),
            static_cast<qint64>(m_images.size() * sizeof(float)));
    f.close();
    const auto r =
        runProgram(g_python, {sourceDir() + QStringLiteral("/tests/interop/shift_reference.py"),
                              input, QString::number(kImages), m_dir.path()});
    QVERIFY2(r.code == 0, qPrintable(ensemble::test::describe(r)));
}

void TestShiftInterop::rotateEqualsScipy() {
    std::vector<float> mine(kSide * kSide);
    for (const char* angle : {"0", "15", "30", "45", "60", "75", "90", "105", "120", "135", "150",
                              "165", "180", "-30", "37.5"}) {
        const std::vector<float> reference =
            readFloats(m_dir.filePath(QStringLiteral("rotate_%1.f32").arg(QLatin1String(angle))));
        QCOMPARE(reference.size(), m_images.size());
        double worst = 0.0;
        for (int i = 0; i < kImages; ++i) {
            const float* img = m_images.data() + static_cast<std::size_t>(i) * kSide * kSide;
            rotateImage(img, mine.data(), kSide, kSide, std::stod(angle));
            for (int p = 0; p < kSide * kSide; ++p) {
                worst = std::max(
                    worst, std::abs(static_cast<double>(mine[p]) -
                                    reference[static_cast<std::size_t>(i) * kSide * kSide + p]));
            }
        }
        QVERIFY2(
            worst <= kScipyTolerance,
            qPrintable(QStringLiteral("%1 degrees: max |difference| %2").arg(angle).arg(worst)));
    }
    // 90 degrees is numpy.rot90(img, 1), exactly.
    const std::vector<float> rot90 = readFloats(m_dir.filePath(QStringLiteral("rot90.f32")));
    for (int i = 0; i < kImages; ++i) {
        const std::size_t offset = static_cast<std::size_t>(i) * kSide * kSide;
        rotateImage(m_images.data() + offset, mine.data(), kSide, kSide, 90.0);
        for (int p = 0; p < kSide * kSide; ++p) {
            QCOMPARE(mine[p], rot90[offset + p]);
        }
    }
}

void TestShiftInterop::rollEqualsNumpy() {
    std::vector<float> mine(kSide * kSide);
    for (int shift : {0, 2, 5, 14, 28, -3}) {
        const std::vector<float> reference =
            readFloats(m_dir.filePath(QStringLiteral("roll_%1.f32").arg(shift)));
        QCOMPARE(reference.size(), m_images.size());
        for (int i = 0; i < kImages; ++i) {
            const std::size_t offset = static_cast<std::size_t>(i) * kSide * kSide;
            translateImage(m_images.data() + offset, mine.data(), kSide, kSide, shift);
            for (int p = 0; p < kSide * kSide; ++p) {
                QCOMPARE(mine[p], reference[offset + p]);
            }
        }
    }
}

int main(int argc, char** argv) {
    QCoreApplication app(argc, argv);
    TestShiftInterop test;
    return ensemble::test::runInteropSuite(test, findPythonAndImages(), argc, argv);
}

#include "tst_shift_interop.moc"
