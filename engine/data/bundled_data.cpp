// Where the shipped data is found at run time, and the UCI tables read from it.
#include "data/bundled_data.h"

#include <cstdlib>
#include <filesystem>
#include <string>
#include <system_error>
#include <vector>

#include "core/errors.h"
#include "data/dataset.h"

// The path from the installed bin/ to the installed data folder; CMake computes it from the
// install directories (cmake/install.cmake) and passes it to this file alone.
#ifndef ENSEMBLE_DATA_FROM_BINDIR
#define ENSEMBLE_DATA_FROM_BINDIR "../share/ensemblelab/data"
#endif

namespace ensemble {

namespace {

namespace fs = std::filesystem;

// The running program's folder; empty where /proc is missing.
std::string bundledProgramFolder() {
    std::error_code ec;
    const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
    return ec ? std::string() : exe.parent_path().string();
}

}  // namespace

std::vector<std::string> bundledDataFoldersFor(const std::string& programFolder,
                                               const char* override) {
    if (override != nullptr && override[0] != '\0') {
        return {override};
    }
    std::vector<std::string> folders;
    if (programFolder.empty()) {
        return folders;
    }
    fs::path folder(programFolder);
    for (int up = 0; up < 3; ++up) {
        folders.push_back((folder / ENSEMBLE_DATA_FROM_BINDIR).lexically_normal().string());
        if (!folder.has_relative_path()) {
            break;  // the root: nothing above it
        }
        folder = folder.parent_path();
    }
    return folders;
}

std::vector<std::string> bundledDataFolders() {
    static const std::string program = bundledProgramFolder();
    return bundledDataFoldersFor(program, std::getenv("ENSEMBLE_DATA_DIR"));
}

std::string bundledDataFile(const std::string& relative) {
    const std::vector<std::string> folders = bundledDataFolders();
    std::string looked;
    for (const std::string& folder : folders) {
        const fs::path path = fs::path(folder) / relative;
        std::error_code ec;
        if (fs::is_regular_file(path, ec)) {
            return path.string();
        }
        looked += "\n  " + path.string() + ": no such file";
    }
    if (folders.empty()) {
        looked = "\n  (no folder: the program's own path is unknown)";
    }
    throw DataError(ErrorKind::Csv,
                    relative + ": the shipped data file was not found. Looked in:" + looked +
                        "\nReinstall the package, rebuild (the build copies "
                        "resources/data into the build tree), or set "
                        "ENSEMBLE_DATA_DIR to the folder that holds uci/.");
}

Dataset readUciSet(UciSet set) {
    const UciSetInfo& info = uciSetInfo(set);
    const std::string path = bundledDataFile(info.file);
    // The target by its name: the shipped files hold it last (tst_data checks the header), and
    // a name cannot silently pick another column of a file that was edited.
    return readCsvRegression(path, info.target);
}

}  // namespace ensemble
