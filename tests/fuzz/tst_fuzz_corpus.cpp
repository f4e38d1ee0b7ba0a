// Every parser's fuzz target over its checked-in corpus (fuzz/corpus/<name>/), as an ordinary
// suite: the inputs libFuzzer kept for their coverage and the findings turned into seeds, each
// replayed once through the target's own LLVMFuzzerTestOneInput. Run in every tree, so under
// ASan + UBSan in CI (scripts/sanitize.sh), it holds each reader to the contract fuzz_support.h
// states (an ensemble::Error or a parse, nothing else; no sanitizer report) on every input that
// ever reached new code, without a libFuzzer build. Fuzzing itself (new inputs) is
// scripts/fuzz.sh's.
#include <QtTest/QtTest>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

// The targets' entry points, renamed at compile time (tests/CMakeLists.txt) so that the six
// link into one executable.
extern "C" {
int ensembleFuzzSafetensors(const uint8_t* data, std::size_t size);
int ensembleFuzzModelIo(const uint8_t* data, std::size_t size);
int ensembleFuzzCsv(const uint8_t* data, std::size_t size);
int ensembleFuzzIdx(const uint8_t* data, std::size_t size);
int ensembleFuzzConfig(const uint8_t* data, std::size_t size);
int ensembleFuzzRunsFilter(const uint8_t* data, std::size_t size);
}

namespace {

using FuzzEntry = int (*)(const uint8_t*, std::size_t);

// CTest gives every suite the checkout's folder (tests/CMakeLists.txt).
std::filesystem::path corpusFolder(const char* name) {
    return std::filesystem::path(qgetenv("ENSEMBLE_SOURCE_DIR").constData()) / "fuzz" / "corpus" /
           name;
}

// Replays every file of the corpus; returns how many ran. A finding aborts the process (the
// target's own check, std::terminate for an escaping exception, or a sanitizer), which CTest
// reports with the target's message on stderr.
std::size_t replay(const std::filesystem::path& folder, FuzzEntry entry) {
    std::vector<std::filesystem::path> files;
    for (const auto& item : std::filesystem::directory_iterator(folder)) {
        if (item.is_regular_file()) {
            files.push_back(item.path());
        }
    }
    std::sort(files.begin(), files.end());  // the same order on every machine
    for (const auto& file : files) {
        std::ifstream in(file, std::ios::binary);
        const std::vector<char> bytes{std::istreambuf_iterator<char>(in),
                                      std::istreambuf_iterator<char>()};
        if (!in.eof() && in.fail()) {
            qFatal("%s: cannot read", file.c_str());
        }
        entry(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
    }
    return files.size();
}

}  // namespace

class TestFuzzCorpus : public QObject {
    Q_OBJECT

  private Q_SLOTS:
    void everyInputOfEveryTarget_data() {
        QTest::addColumn<QString>("corpus");
        QTest::addColumn<quintptr>("entry");
        const auto row = [](const char* corpus, FuzzEntry entry) {
            QTest::newRow(corpus) << QString::fromLatin1(corpus)
                                  << reinterpret_cast<quintptr>(entry);
        };
        row("safetensors", ensembleFuzzSafetensors);
        row("model_io", ensembleFuzzModelIo);
        row("csv", ensembleFuzzCsv);
        row("idx", ensembleFuzzIdx);
        row("config", ensembleFuzzConfig);
        row("runs_filter", ensembleFuzzRunsFilter);
    }
    void everyInputOfEveryTarget() {
        QFETCH(QString, corpus);
        QFETCH(quintptr, entry);
        const std::filesystem::path folder = corpusFolder(corpus.toLatin1().constData());
        QVERIFY2(std::filesystem::is_directory(folder), folder.c_str());
        const std::size_t count = replay(folder, reinterpret_cast<FuzzEntry>(entry));
        // A corpus emptied by mistake would pass silently otherwise.
        QVERIFY2(count >= 4, qPrintable(QStringLiteral("%1 inputs in %2")
                                            .arg(count)
                                            .arg(QString::fromStdString(folder.string()))));
    }
};

QTEST_GUILESS_MAIN(TestFuzzCorpus)
#include "tst_fuzz_corpus.moc"
