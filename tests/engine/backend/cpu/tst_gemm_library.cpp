// backend.gemm: the CPU backend's large products through Eigen or OpenBLAS (backend/cpu/gemm.h,
// backend/gemm_library.h). Each library against a naive triple loop in double for the operand
// orders and strides gemm.h's callers use; results independent of the thread count; OpenBLAS
// starts no threads of its own; a training run with OpenBLAS matches one with Eigen; the pin
// (ENSEMBLE_GEMM) and the fallback note. The OpenBLAS checks run again in a child process under
// each of Debian's builds (openblas-pthread, openblas-openmp: LD_LIBRARY_PATH) with
// OMP_NUM_THREADS=4, so both are tested whichever the alternatives select.
//
// Tolerance: |c - ref| <= (depth + 2) * 2^-24 * sum_k |a_ik b_kj| per element, the classical
// bound of a float dot product of `depth` terms, whatever the order of the sums.
#include <QProcess>
#include <QtTest/QtTest>

#include <dlfcn.h>
#include <omp.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <stdexcept>
#include <vector>

#include "backend/compiled_isa.h"
#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/gemm.h"
#include "backend/gemm_library.h"
#include "backend/kernel_report.h"
#include "math/philox.h"
#include "support/backend_test_problem.h"
#include "sys/cpu_identity.h"

using namespace ensemble;

namespace gemm_test {

struct GemmShape {
    int rows, cols, depth;
    bool lhsRow, rhsRow;
    int pad;  // extra columns in every operand's outer stride
};

std::vector<GemmLibrary> libraries() {
    std::vector<GemmLibrary> out{GemmLibrary::Eigen};
    if (openblasUnusableReason().empty()) {
        out.push_back(GemmLibrary::OpenBlas);
    }
    return out;
}

std::vector<float> randoms(std::size_t n, uint64_t seed) {
    std::vector<float> v(n);
    uint64_t s = seed * 0x9E3779B97F4A7C15ull + 1;
    for (float& x : v) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        x = static_cast<float>(static_cast<int64_t>(s >> 40) - (1 << 23)) / float(1 << 23);
    }
    return v;
}

// res = lhs * rhs with gemm.h's template for the shape's orders; accumulate: res += instead.
void product(const GemmShape& s, const float* a, int lda, const float* b, int ldb, float* c,
             int ldc, bool accumulate) {
    cpu::GemmBuffers buffers;
    buffers.need(s.rows, s.cols, s.depth);
    // Eigen stores whole packets into its packing buffers: aligned as FloatBuffer is.
    std::vector<float, Eigen::aligned_allocator<float>> ba(buffers.sizeA + 1),
        bb(buffers.sizeB + 1);
    auto run = [&]<int L, int R>() {
        if (accumulate) {
            cpu::gemmAccumulate<L, R>(s.rows, s.cols, s.depth, a, lda, b, ldb, c, ldc, ba.data(),
                                      bb.data());
        } else {
            cpu::gemm<L, R>(s.rows, s.cols, s.depth, a, lda, b, ldb, c, ldc, ba.data(), bb.data());
        }
    };
    constexpr int Row = Eigen::RowMajor;
    constexpr int Col = Eigen::ColMajor;
    if (s.lhsRow && s.rhsRow) {
        run.template operator()<Row, Row>();
    } else if (s.lhsRow) {
        run.template operator()<Row, Col>();
    } else if (s.rhsRow) {
        run.template operator()<Col, Row>();
    } else {
        run.template operator()<Col, Col>();
    }
}

struct Operands {
    std::vector<float> a, b, c;
    int lda, ldb, ldc;
};

Operands operands(const GemmShape& s, uint64_t seed) {
    Operands o;
    o.lda = (s.lhsRow ? s.depth : s.rows) + s.pad;
    o.ldb = (s.rhsRow ? s.cols : s.depth) + s.pad;
    o.ldc = s.cols + s.pad;
    o.a = randoms(static_cast<std::size_t>(o.lda) * (s.lhsRow ? s.rows : s.depth), seed);
    o.b = randoms(static_cast<std::size_t>(o.ldb) * (s.rhsRow ? s.depth : s.cols), seed + 1);
    o.c = randoms(static_cast<std::size_t>(o.ldc) * s.rows, seed + 2);
    return o;
}

// The shapes of fast_mlp.cpp's and conv_net.cpp's products (MNIST MLP 784-256-256-10 at
// batch 128, Flax's CNN: 3x3 convolutions over 28x28 planes, its dense layers) at reduced size,
// and ragged ones around the kernels' register blocks.
const std::vector<GemmShape>& shapes() {
    static const std::vector<GemmShape> s = {
        {256, 128, 784, true, false, 0},  // MLP layer 1 forward: W X^T (X batch-major)
        {256, 128, 256, true, true, 0},   // forward of an upper layer
        {256, 784, 128, true, true, 0},   // dW = dZ^T X
        {256, 128, 256, false, true, 0},  // dA^T = W^T dZ^T
        {32, 1568, 9, true, true, 0},     // conv forward: filters x (plane * 2), fan 9
        {64, 288, 392, true, false, 3},   // conv dW, the columns col-major with a stride
        {288, 392, 64, false, true, 0},   // conv dCols = W^T delta
        {17, 33, 45, false, false, 5},    // ragged, both col-major, strided
        {1, 1, 1, true, true, 0},        {7, 129, 3, true, false, 2},
    };
    return s;
}

void checkAgainstReference(const GemmShape& s, GemmLibrary library, bool accumulate) {
    useGemmLibrary(library);
    Operands o = operands(s, 11);
    const std::vector<float> c0 = o.c;
    product(s, o.a.data(), o.lda, o.b.data(), o.ldb, o.c.data(), o.ldc, accumulate);
    const double unit = std::ldexp(1.0, -24);
    for (int i = 0; i < s.rows; ++i) {
        for (int j = 0; j < s.cols; ++j) {
            double ref = accumulate ? c0[static_cast<std::size_t>(i) * o.ldc + j] : 0.0;
            double mag = std::abs(ref);
            for (int k = 0; k < s.depth; ++k) {
                const double a = s.lhsRow ? o.a[static_cast<std::size_t>(i) * o.lda + k]
                                          : o.a[static_cast<std::size_t>(k) * o.lda + i];
                const double b = s.rhsRow ? o.b[static_cast<std::size_t>(k) * o.ldb + j]
                                          : o.b[static_cast<std::size_t>(j) * o.ldb + k];
                ref += a * b;
                mag += std::abs(a * b);
            }
            const double got = o.c[static_cast<std::size_t>(i) * o.ldc + j];
            const double tol = (s.depth + 2) * unit * mag;
            if (std::abs(got - ref) > tol) {
                QFAIL(qPrintable(QStringLiteral("%1: (%2, %3) got %4, reference %5, tolerance %6")
                                     .arg(QString::fromStdString(gemmLibraryKey(library)))
                                     .arg(i)
                                     .arg(j)
                                     .arg(got, 0, 'g', 9)
                                     .arg(ref, 0, 'g', 9)
                                     .arg(tol)));
            }
        }
        // The padding of the result's rows is never written.
        for (int j = s.cols; j < o.ldc; ++j) {
            QCOMPARE(o.c[static_cast<std::size_t>(i) * o.ldc + j],
                     c0[static_cast<std::size_t>(i) * o.ldc + j]);
        }
    }
}

int threadsOfThisProcess() {
    int n = 0;
    for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator("/proc/self/task")) {
        ++n;
    }
    return n;
}

// Whether this program's OpenMP runtime is clang's libomp (it alone exports __kmpc_fork_call).
bool engineOnLibomp() {
    return dlsym(RTLD_DEFAULT, "__kmpc_fork_call") != nullptr;
}

// Set in the child processes: the build ("pthread", "OpenMP") the child must have loaded.
constexpr const char* kChildBuild = "ENSEMBLE_GEMM_TEST_BUILD";

}  // namespace gemm_test

using namespace gemm_test;

class TestGemmLibrary : public QObject {
    Q_OBJECT

  private Q_SLOTS:
    void cleanup() {
        unsetenv("ENSEMBLE_GEMM");
        useGemmLibrary(GemmLibrary::Eigen);
    }

    void eachLibraryEqualsTheReference() {
        for (GemmLibrary library : libraries()) {
            for (const GemmShape& s : shapes()) {
                checkAgainstReference(s, library, false);
                checkAgainstReference(s, library, true);
            }
        }
    }

    // The same products as 8 OpenMP tasks under 1 and 2 threads: the same bits, and the same as
    // made one by one.
    void resultsIndependentOfTheThreadCount() {
        for (GemmLibrary library : libraries()) {
            useGemmLibrary(library);
            const GemmShape s = shapes()[0];
            std::vector<Operands> in;
            for (int t = 0; t < 8; ++t) {
                in.push_back(operands(s, 100 + t));
            }
            auto runAll = [&](int threads) {
                std::vector<Operands> out = in;
#pragma omp parallel for num_threads(threads) schedule(dynamic, 1)
                for (int t = 0; t < 8; ++t) {
                    Operands& o = out[static_cast<std::size_t>(t)];
                    product(s, o.a.data(), o.lda, o.b.data(), o.ldb, o.c.data(), o.ldc, true);
                }
                return out;
            };
            const std::vector<Operands> one = runAll(1);
            const std::vector<Operands> two = runAll(2);
            for (int t = 0; t < 8; ++t) {
                Operands o = in[static_cast<std::size_t>(t)];
                product(s, o.a.data(), o.lda, o.b.data(), o.ldb, o.c.data(), o.ldc, true);
                QVERIFY(one[static_cast<std::size_t>(t)].c == o.c);
                QVERIFY(two[static_cast<std::size_t>(t)].c == o.c);
            }
        }
    }

    // OpenBLAS runs on the caller's thread: chosen, it reports one thread, and products inside
    // and outside the engine's parallel regions start no thread (no nested team, no pool
    // woken), whichever of Debian's builds (pthread, OpenMP) the alternatives select.
    void openblasStartsNoThreads() {
        if (const std::string why = openblasUnusableReason(); !why.empty()) {
            QSKIP(why.c_str());
        }
        const int openmpBefore = omp_get_max_threads();
        useGemmLibrary(GemmLibrary::OpenBlas);
        QCOMPARE(openblasThreads(), 1);
        QCOMPARE(omp_get_max_threads(), openmpBefore);  // the OpenMP build's side effect undone
        const GemmShape s = shapes()[2];
        Operands o = operands(s, 3);
#pragma omp parallel for num_threads(2)
        for (int t = 0; t < 2; ++t) {
            (void)t;  // the engine's team exists before the count
        }
        const int before = threadsOfThisProcess();
        for (int round = 0; round < 3; ++round) {
            product(s, o.a.data(), o.lda, o.b.data(), o.ldb, o.c.data(), o.ldc, false);
#pragma omp parallel for num_threads(2)
            for (int t = 0; t < 4; ++t) {
                Operands mine = o;
                product(s, mine.a.data(), mine.lda, mine.b.data(), mine.ldb, mine.c.data(),
                        mine.ldc, false);
            }
        }
        QCOMPARE(threadsOfThisProcess(), before);
        QVERIFY(!openblasReport().empty());
        qInfo("%s", openblasReport().c_str());
    }

    // A CPU backend trains an MLP whose hidden layers go through gemm.h (200 x 200 x batch 64)
    // with each library: the parameters after 5 SGD steps (Adam would turn rounding in near-zero
    // gradients into steps of lr) agree to 1e-4 (relative to the largest), and each library repeats
    // its own run bit for bit under 1 and 2 threads.
    void trainingWithOpenblasMatchesEigen() {
        if (const std::string why = openblasUnusableReason(); !why.empty()) {
            QSKIP(why.c_str());
        }
        test::ProblemShape shape;
        shape.widths = {2, 200, 200, 2};
        shape.batch = 64;
        shape.members = 4;
        const test::Problem p =
            test::makeProblem(BootstrapMode::Resample, OptimizerKind::Sgd, Activation::Relu, shape);
        const std::vector<float> init = test::initialParameters(p.training.layout, 5);
        auto train = [&](GemmLibrary library, int threads) {
            useGemmLibrary(library);
            CpuBackend backend(threads);
            backend.bind(p.training);
            backend.setParameters(init.data());
            std::vector<float> losses(static_cast<std::size_t>(shape.members));
            const std::vector<uint8_t> active(static_cast<std::size_t>(shape.members), 1);
            for (uint64_t step = 0; step < 5; ++step) {
                backend.step(step, active.data(), losses.data());
            }
            std::vector<float> out(init.size());
            backend.parameters(out.data());
            if (library == GemmLibrary::OpenBlas) {
                [&] { QVERIFY(backend.name().find("OpenBLAS") != std::string::npos); }();
            }
            return out;
        };
        const std::vector<float> eigen = train(GemmLibrary::Eigen, 1);
        const std::vector<float> openblas = train(GemmLibrary::OpenBlas, 1);
        QVERIFY(train(GemmLibrary::Eigen, 2) == eigen);
        QVERIFY(train(GemmLibrary::OpenBlas, 2) == openblas);
        double largest = 0, worst = 0;
        for (std::size_t i = 0; i < eigen.size(); ++i) {
            largest = std::max(largest, std::abs(double(eigen[i])));
            worst = std::max(worst, std::abs(double(eigen[i]) - double(openblas[i])));
        }
        QVERIFY2(worst <= 1e-4 * largest, qPrintable(QString::number(worst / largest)));
        QVERIFY(eigen != init);
    }

    // In a child: the build asked for is the one loaded.
    void loadedBuild() {
        const char* build = std::getenv(kChildBuild);
        if (build == nullptr) {
            QSKIP("checked in the child processes of eachOpenblasBuild");
        }
        qInfo("%s", openblasReport().c_str());
        QVERIFY(openblasReport().find(std::string(build) + " build") != std::string::npos);
    }

    // In a child with the OpenMP build beside an engine on libomp: OpenBLAS is refused with
    // the reason, and backend.gemm=openblas resolves to Eigen with a note.
    void foreignRuntimeRefused() {
        if (std::getenv(kChildBuild) == nullptr || !engineOnLibomp()) {
            QSKIP("checked in eachOpenblasBuild's OpenMP child of an engine on libomp");
        }
        const std::string why = openblasUnusableReason();
        QVERIFY2(why.find("libomp") != std::string::npos, why.c_str());
        QVERIFY_THROWS_EXCEPTION(std::logic_error, useGemmLibrary(GemmLibrary::OpenBlas));
        const GemmResolution r = resolveGemm(GemmChoice::OpenBlas, compiledFloatLanes());
        QCOMPARE(r.library, GemmLibrary::Eigen);
        QVERIFY2(r.note.find("libomp") != std::string::npos, r.note.c_str());
        QCOMPARE(resolveGemm(GemmChoice::Auto, 1).library, GemmLibrary::Eigen);
    }

    // The OpenBLAS checks under each of Debian's builds of the library, in a child process with
    // LD_LIBRARY_PATH at the build's directory and OMP_NUM_THREADS=4 (the OpenMP build would
    // otherwise fork a team of 4 for a product made outside an active parallel region).
    void eachOpenblasBuild_data() {
        QTest::addColumn<QString>("directory");
        QTest::addColumn<QString>("build");
        QTest::newRow("pthread") << "openblas-pthread"
                                 << "pthread";
        QTest::newRow("openmp") << "openblas-openmp"
                                << "OpenMP";
    }
    void eachOpenblasBuild() {
        QFETCH(QString, directory);
        QFETCH(QString, build);
        if (!openblasBuilt()) {
            QSKIP("this build has no OpenBLAS");
        }
        if (std::getenv(kChildBuild) != nullptr) {
            QSKIP("a child process");
        }
        // Debian's layout: /usr/lib/<triplet>/openblas-<build>/libopenblas.so.0.
        const std::filesystem::path loaded = openblasLibraryFile();
        const std::filesystem::path dir =
            loaded.parent_path().parent_path() / directory.toStdString();
        if (loaded.empty() || !std::filesystem::exists(dir / "libopenblas.so.0")) {
            QSKIP(qPrintable(
                QStringLiteral("%1/libopenblas.so.0 is not installed (Debian: "
                               "libopenblas0-%2): that build is not tested")
                    .arg(QString::fromStdString(dir.string()), QString(directory).mid(9))));
        }
        QProcess child;
        QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
        env.insert("LD_LIBRARY_PATH", QString::fromStdString(dir.string()));
        env.insert("OMP_NUM_THREADS", "4");
        env.insert(kChildBuild, build);
        child.setProcessEnvironment(env);
        child.setProcessChannelMode(QProcess::MergedChannels);
        // An engine on clang's libomp (the sanitizer trees) cannot keep the OpenMP build to one
        // thread: there the child checks that it is refused, with the reason.
        const QStringList checks =
            build == QStringLiteral("OpenMP") && engineOnLibomp()
                ? QStringList{"loadedBuild", "foreignRuntimeRefused"}
                : QStringList{"loadedBuild", "eachLibraryEqualsTheReference",
                              "resultsIndependentOfTheThreadCount", "openblasStartsNoThreads",
                              "trainingWithOpenblasMatchesEigen"};
        child.start(QString::fromStdString(std::filesystem::read_symlink("/proc/self/exe")),
                    checks);
        QVERIFY(child.waitForFinished(120000));
        const QByteArray out = child.readAll();
        QVERIFY2(child.exitStatus() == QProcess::NormalExit && child.exitCode() == 0,
                 out.constData());
        QVERIFY2(!out.contains("SKIP"), out.constData());
    }

    // ENSEMBLE_GEMM overrides backend.gemm; openblas where it is missing is Eigen with a note;
    // an unknown value is ignored with a note; the choice shows in the kernels' report.
    void pinAndFallback() {
        const GemmResolution asked = resolveGemm(GemmChoice::OpenBlas, compiledFloatLanes());
        const bool usable = openblasUnusableReason().empty();
        QCOMPARE(asked.library, usable ? GemmLibrary::OpenBlas : GemmLibrary::Eigen);
        QCOMPARE(asked.note.empty(), usable);
        QCOMPARE(resolveGemm(GemmChoice::Eigen, compiledFloatLanes()).library, GemmLibrary::Eigen);
        // auto: OpenBLAS exactly where the running CPU backend's Eigen packets are narrower than
        // the CPU's vectors (a level pinned below the CPU's, a build without level objects).
        const int cpuLanes = cpuIdentity().vectorBits() / 32;
        QCOMPARE(resolveGemm(GemmChoice::Auto, cpuLanes).library, GemmLibrary::Eigen);
        QCOMPARE(resolveGemm(GemmChoice::Auto, 4).library,
                 usable && cpuLanes > 4 ? GemmLibrary::OpenBlas : GemmLibrary::Eigen);

        setenv("ENSEMBLE_GEMM", "eigen", 1);
        const GemmResolution pinned = resolveGemm(GemmChoice::OpenBlas, compiledFloatLanes());
        QCOMPARE(pinned.library, GemmLibrary::Eigen);
        QCOMPARE(pinned.request, std::string("eigen"));
        QVERIFY(pinned.reason.find("ENSEMBLE_GEMM=eigen") != std::string::npos);

        setenv("ENSEMBLE_GEMM", "openblas", 1);
        const GemmResolution toOpenblas = resolveGemm(GemmChoice::Eigen, compiledFloatLanes());
        QCOMPARE(toOpenblas.library, usable ? GemmLibrary::OpenBlas : GemmLibrary::Eigen);
        QCOMPARE(toOpenblas.note.empty(), usable);

        setenv("ENSEMBLE_GEMM", "mkl", 1);
        const GemmResolution unknown = resolveGemm(GemmChoice::Eigen, compiledFloatLanes());
        QCOMPARE(unknown.library, GemmLibrary::Eigen);
        QVERIFY(unknown.note.find("ENSEMBLE_GEMM=mkl") != std::string::npos);
        unsetenv("ENSEMBLE_GEMM");

        for (GemmLibrary library : libraries()) {
            useGemmLibrary(library);
            const CpuKernels k = cpuKernels();
            QCOMPARE(k.gemmLibrary, gemmLibraryKey(library));
            QVERIFY(k.describe().find("GEMM " + gemmLibraryKey(library)) == 0);
            QCOMPARE(k.openblas.empty(), !openblasBuilt());
        }
    }
};

QTEST_APPLESS_MAIN(TestGemmLibrary)
#include "tst_gemm_library.moc"
