#pragma once

// JSON files for the suites that hand configs to ensemble-cli and read back what it wrote
// (tst_active, tst_compare, the window suites): one way to write them and one to read them, so
// a file that cannot be read fails the test the same way everywhere. Other files, and bytes
// as they are: writeBytes and fileBytes (test_support.h).

#include <QFile>
#include <QString>

#include <string>

#include <nlohmann/json.hpp>

#include "support/test_support.h"

namespace ensemble::test {

// `j` as <folder>/<name>, indented; the path, or empty when the file cannot be written.
inline QString writeJson(const QString& folder, const char* name, const nlohmann::json& j) {
    const QString path = folder + QLatin1Char('/') + QLatin1String(name);
    QFile f(path);
    if (!f.open(QIODevice::WriteOnly)) {
        return {};
    }
    f.write(QByteArray::fromStdString(j.dump(2)));
    return path;
}

// `text` as <folder>/<name>, as it is (a config file with its own lines and columns); the path,
// or empty when the file cannot be written.
inline QString writeText(const QString& folder, const char* name, const std::string& text) {
    const QString path = folder + QLatin1Char('/') + QLatin1String(name);
    return writeBytes(path, QByteArray::fromStdString(text)) ? path : QString();
}

// The JSON at `path`: null when it cannot be read, discarded (is_discarded()) when it is not
// JSON.
inline nlohmann::json readJson(const QString& path) {
    QFile f(path);
    if (!f.open(QIODevice::ReadOnly)) {
        return nullptr;
    }
    return nlohmann::json::parse(f.readAll().toStdString(), nullptr, false);
}

}  // namespace ensemble::test
