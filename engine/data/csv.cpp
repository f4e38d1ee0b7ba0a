// CSV datasets: a header row, numeric feature columns and an integer `label` column anywhere.
// Parsing is locale-independent (std::from_chars / std::to_chars): Qt applications call
// setlocale(LC_ALL, ""), under which strtod and printf would read and write "0,5". Text that
// starts with gzip's magic bytes (1f 8b) is inflated first, whatever the file is called.
#include <zlib.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <ostream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "core/errors.h"
#include "data/dataset.h"
#include "sys/atomic_file.h"

namespace ensemble {
namespace {

// Labels above this are far more likely a wrong column than a real class.
constexpr int64_t kMaxLabel = 999;
// Columns per line: far more features than any model here takes, and it bounds what one line
// costs while split (a field object each) to tens of MB however the file is made.
constexpr std::size_t kMaxColumns = 1'000'000;

// "x<index>", the name of an unnamed feature. (Built by append: GCC 12 warns falsely,
// -Wrestrict, on "x" + std::to_string(i).)
std::string featureName(int index) {
    std::string name = "x";
    name += std::to_string(index);
    return name;
}

bool isBlank(char c) {
    return c == ' ' || c == '\t';
}

std::string_view trim(std::string_view s) {
    while (!s.empty() && isBlank(s.front())) {
        s.remove_prefix(1);
    }
    while (!s.empty() && isBlank(s.back())) {
        s.remove_suffix(1);
    }
    return s;
}

std::string lower(std::string_view s) {
    std::string out(s);
    for (char& c : out) {
        if (c >= 'A' && c <= 'Z') {
            c = static_cast<char>(c - 'A' + 'a');
        }
    }
    return out;
}

// "data.csv:17: column 3 ('x2'): " -- every message starts with where the problem is.
std::string where(const std::string& path, int64_t line, std::size_t column = 0,
                  std::string_view name = {}) {
    std::string s = path + ":" + std::to_string(line) + ": ";
    if (column > 0) {
        s += "column " + std::to_string(column);
        if (!name.empty()) {
            s += " ('" + std::string(name) + "')";
        }
        s += ": ";
    }
    return s;
}

// Splits one line into fields. Fields may be quoted ("a,b", "say ""hi"""); whitespace around
// a field is dropped. Quoted fields cannot span lines.
std::vector<std::string> splitFields(std::string_view line, const std::string& path,
                                     int64_t lineNo) {
    std::vector<std::string> fields;
    std::size_t pos = 0;
    while (true) {
        std::string field;
        while (pos < line.size() && isBlank(line[pos])) {
            ++pos;
        }
        if (pos < line.size() && line[pos] == '"') {
            ++pos;
            bool closed = false;
            while (pos < line.size()) {
                if (line[pos] == '"') {
                    if (pos + 1 < line.size() && line[pos + 1] == '"') {
                        field += '"';
                        pos += 2;
                        continue;
                    }
                    ++pos;
                    closed = true;
                    break;
                }
                field += line[pos++];
            }
            if (!closed) {
                throw DataError(ErrorKind::Csv,
                                where(path, lineNo, fields.size() + 1) +
                                    "expected a closing '\"' before the end of the line");
            }
            while (pos < line.size() && isBlank(line[pos])) {
                ++pos;
            }
            if (pos < line.size() && line[pos] != ',') {
                throw DataError(ErrorKind::Csv, where(path, lineNo, fields.size() + 1) +
                                                    "expected ',' after the closing '\"', got '" +
                                                    line[pos] + "'");
            }
        } else {
            std::size_t end = line.find(',', pos);
            if (end == std::string_view::npos) {
                end = line.size();
            }
            field = std::string(trim(line.substr(pos, end - pos)));
            pos = end;
        }
        if (fields.size() == kMaxColumns) {
            throw DataError(ErrorKind::Csv, where(path, lineNo) + "more than " +
                                                std::to_string(kMaxColumns) +
                                                " columns (the most a CSV dataset may have)");
        }
        fields.push_back(std::move(field));
        if (pos >= line.size()) {
            break;
        }
        ++pos;  // the comma
    }
    return fields;
}

// A finite number that fits a float, or an error message (empty on success). Parsed straight
// to float, so the decimal is rounded once (what writeCsv's nine digits rely on).
std::string parseFeature(std::string_view text, float& value) {
    if (text.empty()) {
        return "expected a number, got an empty field";
    }
    std::string_view digits = text;
    if (digits.front() == '+') {
        digits.remove_prefix(1);
    }
    const char* first = digits.data();
    const char* last = digits.data() + digits.size();
    float v = 0.0f;
    auto [end, ec] = std::from_chars(first, last, v);
    if (ec == std::errc::result_out_of_range && end == last) {
        // Too large is an error; too small to be a float is just zero.
        double d = 0.0;
        const auto wide = std::from_chars(first, last, d);
        const bool tiny = wide.ec == std::errc() ? std::fabs(d) < 1.0
                                                 : digits.find("e-") != std::string_view::npos ||
                                                       digits.find("E-") != std::string_view::npos;
        if (!tiny) {
            return "expected a number within float range, got '" + std::string(text) + "'";
        }
        v = digits.front() == '-' ? -0.0f : 0.0f;
        ec = std::errc();
    }
    if (ec != std::errc() || end != last) {
        return "expected a number, got '" + std::string(text) + "'";
    }
    if (!std::isfinite(v)) {
        return "expected a finite number, got '" + std::string(text) + "'";
    }
    value = v;
    return {};
}

std::string parseLabel(std::string_view text, int32_t& label) {
    if (text.empty()) {
        return "expected an integer label 0, 1, 2, ..., got an empty field";
    }
    int64_t v = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    if (ec != std::errc() || end != text.data() + text.size()) {
        return "expected an integer label 0, 1, 2, ..., got '" + std::string(text) + "'";
    }
    if (v < 0) {
        return "expected a label of 0 or more, got '" + std::string(text) + "'";
    }
    if (v > kMaxLabel) {
        return "expected a label of at most " + std::to_string(kMaxLabel) + ", got '" +
               std::string(text) + "'";
    }
    label = static_cast<int32_t>(v);
    return {};
}

// Required: an integer `label` column (classification). Skip: features only, `label` and the
// column named `special` (when given) are skipped (prediction). Target: the numeric column
// named `special` is the regression target, a `label` column is skipped.
enum class LabelMode { Required, Skip, Target };

// The column named `name`: an exact match first, else the only case-insensitive one; -1.
std::ptrdiff_t findColumn(const std::vector<std::string>& header, const std::string& name) {
    if (name.empty()) {
        return -1;
    }
    for (std::size_t c = 0; c < header.size(); ++c) {
        if (header[c] == name) {
            return static_cast<std::ptrdiff_t>(c);
        }
    }
    std::ptrdiff_t found = -1;
    for (std::size_t c = 0; c < header.size(); ++c) {
        if (lower(header[c]) == lower(name)) {
            if (found >= 0) {
                return -1;
            }
            found = static_cast<std::ptrdiff_t>(c);
        }
    }
    return found;
}

// Whether `bytes` start as a gzip file does (RFC 1952's ID1 ID2).
bool startsAsGzip(std::string_view bytes) {
    return bytes.size() >= 2 && static_cast<unsigned char>(bytes[0]) == 0x1f &&
           static_cast<unsigned char>(bytes[1]) == 0x8b;
}

// The text inside gzip `bytes`. Members may follow each other (as `cat a.gz b.gz` makes); bytes
// after the last member that do not start another one are ignored, as gzip -d does. A stream
// that ends early or fails its checks is a DataError naming `path`.
std::string inflateCsvGzip(std::string_view bytes, const std::string& path) {
    z_stream stream{};
    if (inflateInit2(&stream, 16 + MAX_WBITS) != Z_OK) {
        throw DataError(ErrorKind::Csv, path + ": cannot start zlib to read the gzip data");
    }
    struct EndStream {
        z_stream* s;
        ~EndStream() { inflateEnd(s); }
    } endStream{&stream};

    std::string text;
    std::size_t used = 0;  // input bytes consumed
    constexpr std::size_t kCsvInflatePiece = std::size_t{1} << 20;
    constexpr std::size_t kCsvInflateMaxIn = std::size_t{1} << 30;  // zlib counts in uInt
    while (true) {
        const std::size_t produced = text.size();
        text.resize(produced + kCsvInflatePiece);
        const std::size_t available = std::min(bytes.size() - used, kCsvInflateMaxIn);
        stream.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(bytes.data() + used));
        stream.avail_in = static_cast<uInt>(available);
        stream.next_out = reinterpret_cast<Bytef*>(text.data() + produced);
        stream.avail_out = static_cast<uInt>(kCsvInflatePiece);
        const int code = inflate(&stream, Z_NO_FLUSH);
        used += available - stream.avail_in;
        text.resize(produced + (kCsvInflatePiece - stream.avail_out));
        if (code == Z_STREAM_END) {
            if (!startsAsGzip(bytes.substr(used))) {
                return text;
            }
            inflateReset(&stream);  // another member follows
        } else if (code == Z_BUF_ERROR ||
                   (code == Z_OK && used == bytes.size() && stream.avail_out > 0)) {
            // zlib wants input that is not there.
            throw DataError(ErrorKind::Csv,
                            path + ": truncated gzip data: the compressed stream ends after " +
                                std::to_string(bytes.size()) + " bytes, before its end marker (" +
                                std::to_string(text.size()) + " bytes of text so far)");
        } else if (code != Z_OK) {
            throw DataError(ErrorKind::Csv,
                            path + ": corrupt gzip data after " + std::to_string(used) +
                                " compressed bytes (" +
                                (stream.msg != nullptr ? stream.msg : zError(code)) + ")");
        }
    }
}

// The shared reader behind readCsv, readCsvFeatures and readCsvRegression; `path` only names
// the text in errors (line numbers count lines of the inflated text for gzip input).
Dataset parseCsvText(std::string text, const std::string& path, LabelMode mode,
                     int expectedFeatures, int* classes, const std::string& special = {}) {
    if (startsAsGzip(text)) {
        text = inflateCsvGzip(text, path);
    }
    if (text.size() >= 3 && text.compare(0, 3, "\xEF\xBB\xBF") == 0) {
        text.erase(0, 3);  // UTF-8 byte order mark, as spreadsheets write it
    }

    Dataset data;
    std::vector<std::string> header;
    std::ptrdiff_t labelColumn = -1;
    std::ptrdiff_t specialColumn = -1;
    int64_t headerLine = 0;
    int64_t lineNo = 0;
    int32_t maxLabel = -1;
    std::size_t pos = 0;
    while (pos < text.size()) {
        std::size_t end = text.find('\n', pos);
        if (end == std::string::npos) {
            end = text.size();
        }
        std::string_view line(text.data() + pos, end - pos);
        pos = end + 1;
        ++lineNo;
        if (!line.empty() && line.back() == '\r') {
            line.remove_suffix(1);  // CRLF
        }
        if (trim(line).empty()) {
            continue;  // blank lines (a trailing one most often) carry nothing
        }
        std::vector<std::string> fields = splitFields(line, path, lineNo);

        if (header.empty()) {
            headerLine = lineNo;
            header = std::move(fields);
            for (std::size_t c = 0; c < header.size(); ++c) {
                if (lower(header[c]) != "label") {
                    continue;
                }
                if (labelColumn >= 0) {
                    throw DataError(ErrorKind::Csv,
                                    where(path, lineNo, c + 1, header[c]) +
                                        "a second label column (the first is column " +
                                        std::to_string(labelColumn + 1) + ")");
                }
                labelColumn = static_cast<std::ptrdiff_t>(c);
            }
            if (labelColumn < 0 && mode == LabelMode::Required) {
                std::string names;
                for (const auto& h : header) {
                    names += (names.empty() ? "" : ", ") + ("'" + h + "'");
                }
                throw DataError(ErrorKind::Csv,
                                where(path, lineNo) +
                                    "expected a 'label' column (integer classes 0, 1, ...) in the "
                                    "header, found only " +
                                    names);
            }
            specialColumn = findColumn(header, special);
            if (specialColumn >= 0 && specialColumn == labelColumn) {
                labelColumn = -1;  // a target (or skipped column) that happens to be 'label'
            }
            if (mode == LabelMode::Target) {
                if (specialColumn < 0) {
                    std::string names;
                    for (const auto& h : header) {
                        names += (names.empty() ? "" : ", ") + ("'" + h + "'");
                    }
                    throw DataError(ErrorKind::Csv,
                                    where(path, lineNo) + "expected the target column '" + special +
                                        "' (dataset.target) in the header, found only " + names);
                }
                data.targetName = header[static_cast<std::size_t>(specialColumn)];
            }
            for (std::size_t c = 0; c < header.size(); ++c) {
                if (static_cast<std::ptrdiff_t>(c) == labelColumn ||
                    static_cast<std::ptrdiff_t>(c) == specialColumn) {
                    continue;
                }
                const int index = static_cast<int>(data.featureNames.size());
                data.featureNames.push_back(header[c].empty() ? featureName(index) : header[c]);
            }
            data.features = static_cast<int>(data.featureNames.size());
            if (data.features == 0) {
                throw DataError(
                    ErrorKind::Csv,
                    where(path, lineNo) + "expected at least one feature column besides '" +
                        (mode == LabelMode::Target ? data.targetName : std::string("label")) + "'");
            }
            if (expectedFeatures >= 0 && data.features != expectedFeatures) {
                throw DataError(ErrorKind::Csv,
                                where(path, lineNo) + "expected " +
                                    std::to_string(expectedFeatures) +
                                    " feature columns (as the model was trained with), got " +
                                    std::to_string(data.features));
            }
            continue;
        }

        if (fields.size() < header.size()) {
            const std::size_t c = fields.size();
            throw DataError(ErrorKind::Csv, where(path, lineNo, c + 1, header[c]) +
                                                "expected a value, but the row ends after " +
                                                std::to_string(c) + " of the header's " +
                                                std::to_string(header.size()) + " columns");
        }
        if (fields.size() > header.size()) {
            throw DataError(ErrorKind::Csv, where(path, lineNo, header.size() + 1) +
                                                "expected the row to end (the header has " +
                                                std::to_string(header.size()) + " columns), got '" +
                                                fields[header.size()] + "'");
        }
        for (std::size_t c = 0; c < fields.size(); ++c) {
            std::string error;
            if (static_cast<std::ptrdiff_t>(c) == specialColumn) {
                if (mode != LabelMode::Target) {
                    continue;
                }
                float value = 0.0f;
                error = parseFeature(fields[c], value);
                if (error.empty()) {
                    data.target.push_back(value);
                }
            } else if (static_cast<std::ptrdiff_t>(c) == labelColumn) {
                if (mode != LabelMode::Required) {
                    continue;
                }
                int32_t label = 0;
                error = parseLabel(fields[c], label);
                if (error.empty()) {
                    data.y.push_back(label);
                    maxLabel = std::max(maxLabel, label);
                }
            } else {
                float value = 0.0f;
                error = parseFeature(fields[c], value);
                if (error.empty()) {
                    data.x.push_back(value);
                }
            }
            if (!error.empty()) {
                throw DataError(ErrorKind::Csv, where(path, lineNo, c + 1, header[c]) + error);
            }
        }
        ++data.rows;
    }

    if (header.empty()) {
        throw DataError(ErrorKind::Csv,
                        path + ": the file is empty, expected a header row such as 'x0,x1,label'");
    }
    if (data.rows == 0) {
        throw DataError(ErrorKind::Csv, where(path, headerLine) +
                                            "expected data rows after the header, found none");
    }
    if (classes != nullptr) {
        *classes = maxLabel + 1;
    }
    if (mode == LabelMode::Target &&
        std::all_of(data.target.begin(), data.target.end(),
                    [&](float v) { return v == data.target.front(); })) {
        const std::size_t c = static_cast<std::size_t>(specialColumn);
        char number[32];
        const auto r =
            std::to_chars(number, number + sizeof number, static_cast<double>(data.target.front()));
        throw DataError(ErrorKind::Csv, where(path, headerLine, c + 1, header[c]) +
                                            "the target is constant (every row holds " +
                                            std::string(number, r.ptr) +
                                            "): a regression target needs a std above 0");
    }
    return data;
}

// A header field as CSV: quoted when it holds a separator, a quote or outer whitespace.
std::string csvField(const std::string& name) {
    std::string clean = name;
    for (char& c : clean) {
        if (c == '\n' || c == '\r') {
            c = ' ';
        }
    }
    const bool quote = clean.find_first_of(",\"") != std::string::npos ||
                       (!clean.empty() && (isBlank(clean.front()) || isBlank(clean.back())));
    if (!quote) {
        return clean;
    }
    std::string out = "\"";
    for (char c : clean) {
        out += c;
        if (c == '"') {
            out += '"';
        }
    }
    return out + "\"";
}

}  // namespace

Dataset readCsv(const std::string& path, int& classes) {
    return parseCsvText(readFile(path, ErrorKind::Csv), path, LabelMode::Required, -1, &classes);
}

Dataset readCsvFeatures(const std::string& path, int expectedFeatures) {
    return parseCsvText(readFile(path, ErrorKind::Csv), path, LabelMode::Skip, expectedFeatures,
                        nullptr);
}

Dataset readCsvFeatures(const std::string& path, int expectedFeatures, const std::string& skip) {
    return parseCsvText(readFile(path, ErrorKind::Csv), path, LabelMode::Skip, expectedFeatures,
                        nullptr, skip);
}

Dataset readCsvRegression(const std::string& path, const std::string& target) {
    return parseCsvRegression(readFile(path, ErrorKind::Csv), path, target);
}

Dataset parseCsvRegression(std::string text, const std::string& origin, const std::string& target) {
    return parseCsvText(std::move(text), origin, LabelMode::Target, -1, nullptr, target);
}

Dataset parseCsv(std::string text, const std::string& origin, int& classes) {
    return parseCsvText(std::move(text), origin, LabelMode::Required, -1, &classes);
}

Dataset parseCsvFeatures(std::string text, const std::string& origin, int expectedFeatures) {
    return parseCsvText(std::move(text), origin, LabelMode::Skip, expectedFeatures, nullptr);
}

void writeCsv(const std::string& path, const Dataset& data) {
    const bool hasLabels = !data.y.empty();
    const bool hasTargets = !hasLabels && !data.target.empty();
    if (data.rows < 0 || data.features < 0 ||
        data.x.size() !=
            static_cast<std::size_t>(data.rows) * static_cast<std::size_t>(data.features) ||
        (hasLabels && data.y.size() != static_cast<std::size_t>(data.rows)) ||
        (hasTargets && data.target.size() != static_cast<std::size_t>(data.rows))) {
        throw std::invalid_argument(
            "writeCsv: the dataset's x / y sizes do not match rows x features");
    }
    const bool named = data.featureNames.size() == static_cast<std::size_t>(data.features);
    std::string header;
    for (int f = 0; f < data.features; ++f) {
        const std::string name = named ? data.featureNames[f] : featureName(f);
        if (lower(trim(name)) == "label") {
            throw std::invalid_argument("writeCsv: a feature may not be named 'label'");
        }
        if (f > 0) {
            header += ',';
        }
        header += csvField(name);
    }
    if (hasLabels) {
        header += data.features > 0 ? ",label" : "label";
    }
    if (hasTargets) {
        const std::string name = data.targetName.empty() ? "y" : data.targetName;
        header += (data.features > 0 ? "," : "") + csvField(name);
    }
    header += '\n';

    // Atomic (temporary file + rename): a reader never sees half a table.
    writeFileAtomic(path, [&](std::ostream& out) {
        out.write(header.data(), static_cast<std::streamsize>(header.size()));
        std::string line;
        char number[32];
        for (int64_t r = 0; r < data.rows; ++r) {
            line.clear();
            const float* row = data.row(r);
            for (int f = 0; f < data.features; ++f) {
                if (f > 0) {
                    line += ',';
                }
                // As %.9g: nine significant digits round-trip every float exactly.
                const auto result =
                    std::to_chars(number, number + sizeof(number), static_cast<double>(row[f]),
                                  std::chars_format::general, 9);
                line.append(number, result.ptr);
            }
            if (hasLabels) {
                line += data.features > 0 ? "," : "";
                line += std::to_string(data.y[static_cast<std::size_t>(r)]);
            }
            if (hasTargets) {
                line += data.features > 0 ? "," : "";
                const auto result =
                    std::to_chars(number, number + sizeof(number),
                                  static_cast<double>(data.target[static_cast<std::size_t>(r)]),
                                  std::chars_format::general, 9);
                line.append(number, result.ptr);
            }
            line += '\n';
            out.write(line.data(), static_cast<std::streamsize>(line.size()));
        }
    });
}

}  // namespace ensemble
