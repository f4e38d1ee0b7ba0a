#include "runs/run_table.h"

#include <algorithm>
#include <cstdlib>
#include <set>

#include "runs/run_fields.h"

namespace ensemble::runs {

namespace {

bool cellLooksNumeric(const std::string& text) {
    if (text.empty()) {
        return true;
    }
    char* end = nullptr;
    std::strtod(text.c_str(), &end);
    return end != text.c_str() && *end == '\0';
}

std::string csvField(const std::string& text) {
    if (text.find_first_of(",\"\n\r") == std::string::npos) {
        return text;
    }
    std::string out = "\"";
    for (char c : text) {
        out += c == '"' ? std::string("\"\"") : std::string(1, c);
    }
    return out + "\"";
}

}  // namespace

std::vector<std::string> defaultRunColumns(const std::vector<std::string>& figureNames) {
    std::vector<std::string> columns = {"id",     "started", "kind",   "state",
                                        "preset", "dataset", "method", "members"};
    const std::set<std::string> figures(figureNames.begin(), figureNames.end());
    for (const char* figure : {"test_accuracy", "test_rmse", "test_nll", "test_ece"}) {
        if (figures.count(figure) > 0) {
            columns.push_back(std::string("figure.") + figure);
        }
    }
    columns.push_back("wall");
    columns.push_back("tag");
    return columns;
}

std::vector<std::string> figureNamesOf(const std::vector<RunEntry>& entries) {
    std::set<std::string> names;
    for (const RunEntry& e : entries) {
        for (const auto& [name, value] : e.figures) {
            names.insert(name);
        }
    }
    return {names.begin(), names.end()};
}

bool runColumnsNeedConfig(const std::vector<std::string>& columns) {
    return std::any_of(columns.begin(), columns.end(),
                       [](const std::string& c) { return c.rfind("config.", 0) == 0; });
}

std::string runColumnHeader(const std::string& column) {
    return column.rfind("figure.", 0) == 0 ? column.substr(7) : column;
}

RunTableCells runTableCells(const std::vector<RunEntry>& entries,
                            const std::vector<std::string>& columns) {
    RunTableCells rows;
    rows.reserve(entries.size());
    for (const RunEntry& e : entries) {
        std::vector<std::string> row;
        row.reserve(columns.size());
        for (const std::string& column : columns) {
            row.push_back(runFieldText(e, column));
        }
        rows.push_back(std::move(row));
    }
    return rows;
}

std::string runTableText(const std::vector<std::string>& headers, const RunTableCells& rows) {
    std::vector<std::size_t> width(headers.size());
    std::vector<bool> numeric(headers.size(), true);
    for (std::size_t c = 0; c < headers.size(); ++c) {
        width[c] = headers[c].size();
        for (const auto& row : rows) {
            width[c] = std::max(width[c], row[c].size());
            numeric[c] = numeric[c] && cellLooksNumeric(row[c]);
        }
    }
    const auto line = [&](const std::vector<std::string>& cells) {
        std::string out;
        for (std::size_t c = 0; c < cells.size(); ++c) {
            const std::string pad(width[c] - cells[c].size(), ' ');
            const bool last = c + 1 == cells.size();
            out += numeric[c] ? pad + cells[c] : cells[c] + (last ? "" : pad);
            out += last ? "\n" : "  ";
        }
        return out;
    };
    std::string out = line(headers);
    for (const auto& row : rows) {
        out += line(row);
    }
    return out;
}

std::string runTableCsv(const std::vector<std::string>& columns, const RunTableCells& rows) {
    std::string out;
    for (std::size_t c = 0; c < columns.size(); ++c) {
        out += (c > 0 ? "," : "") + csvField(columns[c]);
    }
    out += "\n";
    for (const auto& row : rows) {
        for (std::size_t c = 0; c < row.size(); ++c) {
            out += (c > 0 ? "," : "") + csvField(row[c]);
        }
        out += "\n";
    }
    return out;
}

}  // namespace ensemble::runs
