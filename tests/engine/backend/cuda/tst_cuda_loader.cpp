// cuBLAS is opened when a CUDA backend first needs it, never at start-up (a CPU run would
// otherwise page in ~200 MB of libcublasLt). Runs without a GPU: loading the library and
// calling its host-only functions needs no device.
#include <QtTest/QtTest>

#include <fstream>
#include <string>

#include "backend/cuda/cublas_loader.h"
#include "core/errors.h"

using namespace ensemble;

namespace {

bool cublasMapped() {
    std::ifstream maps("/proc/self/maps");
    std::string line;
    while (std::getline(maps, line)) {
        if (line.find("libcublas") != std::string::npos) {
            return true;
        }
    }
    return false;
}

}  // namespace

class TestCudaLoader : public QObject {
    Q_OBJECT

  private Q_SLOTS:
    void cublasIsNotLinked();
    void cublasLoadsOnDemand();
};

void TestCudaLoader::cublasIsNotLinked() {
    QVERIFY(!gpu::cublasLoaded());
    QVERIFY2(!cublasMapped(), "libcublas is mapped before anything asked for it");
}

void TestCudaLoader::cublasLoadsOnDemand() {
    const gpu::CublasApi* api = nullptr;
    try {
        api = &gpu::cublas();
    } catch (const RuntimeError& e) {
        // The message must say what was tried; then there is nothing more to check here.
        QVERIFY2(std::string(e.what()).find("libcublas.so") != std::string::npos, e.what());
        QSKIP(qPrintable(QStringLiteral("cuBLAS is not installed here: %1").arg(e.what())));
    }
    QVERIFY(gpu::cublasLoaded());
    QVERIFY(cublasMapped());
    QVERIFY(api->create && api->destroy && api->setStream && api->setWorkspace &&
            api->setMathMode && api->sgemmStridedBatched && api->statusName && api->statusString);
    QCOMPARE(QString::fromLatin1(api->statusName(CUBLAS_STATUS_SUCCESS)),
             QStringLiteral("CUBLAS_STATUS_SUCCESS"));
    QCOMPARE(&gpu::cublas(), api);  // loaded once
}

QTEST_APPLESS_MAIN(TestCudaLoader)
#include "tst_cuda_loader.moc"
