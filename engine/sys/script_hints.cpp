// SPDX-License-Identifier: GPL-3.0-or-later
#include "sys/script_hints.h"

#include <unistd.h>

#include <climits>
#include <string>
#include <utility>

namespace ensemble {

namespace {

// The folder of the running executable, with a trailing '/'; empty where /proc is missing.
std::string executableFolder() {
    char path[PATH_MAX];
    const ssize_t n = readlink("/proc/self/exe", path, sizeof path - 1);
    if (n <= 0) {
        return {};
    }
    const std::string exe(path, static_cast<std::size_t>(n));
    const std::size_t slash = exe.rfind('/');
    return slash == std::string::npos ? std::string() : exe.substr(0, slash + 1);
}

bool installedIn(const std::string& folder, const char* command) {
    if (folder.empty()) {
        return false;
    }
    const std::string path = folder.back() == '/' ? folder + command : folder + "/" + command;
    return access(path.c_str(), X_OK) == 0;
}

}  // namespace

std::string scriptHints(std::string text) {
    static const std::string folder = executableFolder();
    return scriptHintsFor(std::move(text), folder);
}

std::string scriptHintsFor(std::string text, const std::string& folder) {
    if (!installedIn(folder, kFetchMnistCommand)) {
        return text;
    }
    const std::string from = kFetchMnistScript;
    const std::string to = kFetchMnistCommand;
    for (std::size_t at = text.find(from); at != std::string::npos;
         at = text.find(from, at + to.size())) {
        text.replace(at, from.size(), to);
    }
    return text;
}

}  // namespace ensemble
