// ensemble-cli runs: the runs store (engine/runs/run_store.h) that every recording command and
// the app write: list with filters and sort, show one entry, diff two, tag, note, remove, and
// export the table. The same store, filters and fields as the app's Runs view.
#include <cstdio>
#include <filesystem>
#include <sstream>
#include <string>
#include <system_error>
#include <vector>

#include "cli/cli_common.h"
#include "cli/commands.h"
#include "core/errors.h"
#include "runs/run_fields.h"
#include "runs/run_store.h"
#include "runs/run_table.h"
#include "sys/atomic_file.h"

namespace ensemble::cli {

namespace {

using runs::RunEntry;
using runs::RunStore;

// --store FILE, else the store every program records to (ENSEMBLE_RUNS_DB, then the user's
// data folder).
RunStore openStore(const CliArgs& args) {
    if (args.has("--store")) {
        // A mistyped name would otherwise open a new, empty store and list nothing.
        std::error_code error;
        if (!std::filesystem::exists(args.get("--store"), error)) {
            throw ConfigError("--store: no runs store at '" + args.get("--store") +
                              "' (the store every program records to is " +
                              runs::defaultRunStorePath().string() + ")");
        }
        return RunStore::open(args.get("--store"));
    }
    const std::filesystem::path path = runs::defaultRunStorePath();
    if (path.empty()) {
        throw ConfigError(std::string(runs::kRunsDbVariable) +
                          "=off: recording is off and no store is named (give --store FILE)");
    }
    return RunStore::open(path);
}

std::int64_t parseRunId(const std::string& text) {
    std::size_t used = 0;
    long long id = 0;
    try {
        id = std::stoll(text, &used);
    } catch (const std::exception&) {
        used = 0;
    }
    if (used != text.size() || id <= 0) {
        throw ConfigError("expected a run id (a number as `runs list` shows it), got '" + text +
                          "'");
    }
    return id;
}

RunEntry requireEntry(const RunStore& store, const std::string& idText) {
    const std::int64_t id = parseRunId(idText);
    std::optional<RunEntry> entry = store.get(id);
    if (!entry) {
        throw ConfigError("no run " + std::to_string(id) + " in " + store.path().string());
    }
    return std::move(*entry);
}

std::vector<std::string> splitList(const std::string& text) {
    std::vector<std::string> out;
    std::stringstream in(text);
    std::string item;
    while (std::getline(in, item, ',')) {
        if (!item.empty()) {
            out.push_back(item);
        }
    }
    return out;
}

// The positional filter terms and the list flags as one query.
runs::RunQuery queryFrom(const CliArgs& args, std::int64_t defaultLimit) {
    std::string terms;
    for (const std::string& term : args.positionals) {
        terms += (terms.empty() ? "" : " ") + term;
    }
    runs::RunQuery query = runs::parseFilter(terms);
    if (args.has("--sort")) {
        query.sort = runs::parseSort(args.get("--sort"));
    }
    query.limit = parseCount(args, "--limit", defaultLimit, 0);
    if (query.limit == 0) {
        query.limit = -1;  // --limit 0: every entry
    }
    return query;
}

// A table's columns: --columns, else the usual ones and the figures the entries have.
std::vector<std::string> columnsFor(const CliArgs& args, const std::vector<RunEntry>& entries) {
    if (args.has("--columns")) {
        std::vector<std::string> columns = splitList(args.get("--columns"));
        if (columns.empty()) {
            throw ConfigError(
                "--columns: expected fields separated by commas, such as "
                "id,preset,figure.test_nll");
        }
        return columns;
    }
    return runs::defaultRunColumns(runs::figureNamesOf(entries));
}

// The aligned table with its headers as a table shows them (figures without their prefix).
std::string tableText(const std::vector<std::string>& columns, const runs::RunTableCells& rows) {
    std::vector<std::string> headers;
    for (const std::string& column : columns) {
        headers.push_back(runs::runColumnHeader(column));
    }
    return runs::runTableText(headers, rows);
}

std::string jsonText(const std::vector<RunEntry>& entries) {
    nlohmann::json out = nlohmann::json::array();
    for (const RunEntry& e : entries) {
        out.push_back(runs::runEntryJson(e));
    }
    return out.dump(2) + "\n";
}

// The entries of a list or export query, with what their columns need.
std::vector<RunEntry> listed(const RunStore& store, runs::RunQuery query,
                             const std::vector<std::string>& wantedColumns, bool full) {
    query.full = full || runs::runColumnsNeedConfig(wantedColumns);
    return store.list(query);
}

}  // namespace

ExitCode commandRunsList(const CliArgs& args) {
    const std::string format = args.get("--format", "table");
    if (format != "table" && format != "csv" && format != "json") {
        throw ConfigError("--format: expected table, csv or json, got '" + format + "'");
    }
    const RunStore store = openStore(args);
    // A table on a terminal shows the newest 50 unless asked; csv and json give every entry.
    const runs::RunQuery query = queryFrom(args, format == "table" ? 50 : 0);
    const std::vector<std::string> asked =
        args.has("--columns") ? splitList(args.get("--columns")) : std::vector<std::string>{};
    const std::vector<RunEntry> entries = listed(store, query, asked, format == "json");
    if (format == "json") {
        std::fputs(jsonText(entries).c_str(), stdout);
        return ExitCode::Ok;
    }
    const std::vector<std::string> columns = columnsFor(args, entries);
    const runs::RunTableCells rows = runs::runTableCells(entries, columns);
    if (format == "csv") {
        std::fputs(runs::runTableCsv(columns, rows).c_str(), stdout);
        return ExitCode::Ok;
    }
    if (entries.empty()) {
        std::fprintf(stderr, "no runs%s in %s\n", args.positionals.empty() ? "" : " match",
                     store.path().c_str());
        return ExitCode::Ok;
    }
    std::fputs(tableText(columns, rows).c_str(), stdout);
    const std::int64_t total = store.count(query);
    if (total > static_cast<std::int64_t>(entries.size())) {
        std::fprintf(stderr, "(%lld of %lld runs; --limit 0 lists all)\n",
                     static_cast<long long>(entries.size()), static_cast<long long>(total));
    }
    return ExitCode::Ok;
}

ExitCode commandRunsShow(const CliArgs& args) {
    const std::string format = args.get("--format", "text");
    if (format != "text" && format != "json") {
        throw ConfigError("--format: expected text or json, got '" + format + "'");
    }
    const RunStore store = openStore(args);
    const RunEntry e = requireEntry(store, args.positionals.at(0));
    if (format == "json") {
        std::printf("%s\n", runs::runEntryJson(e).dump(2).c_str());
        return ExitCode::Ok;
    }
    const auto field = [&](const char* name) { return runs::runFieldText(e, name); };
    std::printf("run %lld: %s %s, %s\n", static_cast<long long>(e.id), e.program.c_str(),
                e.kind.c_str(), field("state").c_str());
    std::printf("started   %s UTC", field("started").c_str());
    if (e.ended > 0.0) {
        std::printf("   ended %s UTC   wall %s s", field("ended").c_str(), field("wall").c_str());
    }
    std::printf("\n");
    std::printf("preset    %s   dataset %s   method %s   members %s   seed %s\n",
                e.preset.empty() ? "-" : e.preset.c_str(), field("dataset").c_str(),
                field("method").c_str(), field("members").c_str(), field("seed").c_str());
    if (!e.backend.empty()) {
        std::printf("backend   %s\n", e.backend.c_str());
    }
    std::printf("version   %s   host %s   pid %lld\n", e.version.c_str(), e.host.c_str(),
                static_cast<long long>(e.pid));
    if (e.parentId > 0) {
        std::printf("parent    run %lld (%s)\n", static_cast<long long>(e.parentId),
                    e.relation.c_str());
    }
    if (!e.figures.empty()) {
        std::printf("figures\n");
        for (const auto& [name, value] : e.figures) {
            std::printf("  %-20s %s\n", name.c_str(),
                        runs::runFieldText(e, "figure." + name).c_str());
        }
    }
    if (!e.tags.empty()) {
        std::printf("tags      %s\n", field("tag").c_str());
    }
    if (!e.note.empty()) {
        std::printf("note      %s\n", e.note.c_str());
    }
    if (!e.files.empty()) {
        std::printf("files\n");
        for (const runs::RunFile& f : e.files) {
            std::error_code error;
            const bool present = std::filesystem::exists(f.path, error);
            std::printf("  %-10s %s%s\n", f.role.c_str(), f.path.c_str(),
                        present ? "" : "  (gone)");
        }
    }
    if (e.curves.is_object() && !e.curves.empty()) {
        std::printf("curves   ");
        for (const auto& [name, points] : e.curves.items()) {
            std::printf(" %s (%zu points)", name.c_str(), points.size());
        }
        std::printf("\n");
    }
    if (!e.commandLine.empty()) {
        std::printf("command   %s\n", e.commandLine.c_str());
    }
    if (e.config.is_object()) {
        std::printf("config\n");
        std::string text = e.config.dump(2);
        std::printf("%s\n", text.c_str());
    }
    return ExitCode::Ok;
}

ExitCode commandRunsDiff(const CliArgs& args) {
    const std::string format = args.get("--format", "text");
    if (format != "text" && format != "json") {
        throw ConfigError("--format: expected text or json, got '" + format + "'");
    }
    const RunStore store = openStore(args);
    const RunEntry a = requireEntry(store, args.positionals.at(0));
    const RunEntry b = requireEntry(store, args.positionals.at(1));
    const std::vector<runs::RunDifference> differences = runs::runDifferences(a, b);
    if (format == "json") {
        nlohmann::json out = {{"a", a.id}, {"b", b.id}, {"differences", nlohmann::json::array()}};
        for (const runs::RunDifference& d : differences) {
            out["differences"].push_back({{"field", d.field},
                                          {"a", d.a ? nlohmann::json(*d.a) : nlohmann::json()},
                                          {"b", d.b ? nlohmann::json(*d.b) : nlohmann::json()}});
        }
        std::printf("%s\n", out.dump(2).c_str());
        return ExitCode::Ok;
    }
    runs::RunTableCells rows;
    for (const runs::RunDifference& d : differences) {
        rows.push_back({d.field, d.a.value_or("-"), d.b.value_or("-")});
    }
    const std::vector<std::string> columns = {"field", "run " + std::to_string(a.id),
                                              "run " + std::to_string(b.id)};
    std::fputs(tableText(columns, rows).c_str(), stdout);
    return ExitCode::Ok;
}

ExitCode commandRunsTag(const CliArgs& args) {
    RunStore store = openStore(args);
    const RunEntry e = requireEntry(store, args.positionals.at(0));
    const bool remove = args.flag("--remove");
    for (std::size_t i = 1; i < args.positionals.size(); ++i) {
        const std::string& tag = args.positionals[i];
        if (tag.empty() || tag.find_first_of(" ,\t\n") != std::string::npos) {
            throw ConfigError("a tag is one word without commas, got '" + tag + "'");
        }
        if (remove) {
            store.removeTag(e.id, tag);
        } else {
            store.addTag(e.id, tag);
        }
    }
    return ExitCode::Ok;
}

ExitCode commandRunsNote(const CliArgs& args) {
    RunStore store = openStore(args);
    const RunEntry e = requireEntry(store, args.positionals.at(0));
    store.setNote(e.id, args.positionals.at(1));
    return ExitCode::Ok;
}

ExitCode commandRunsRemove(const CliArgs& args) {
    RunStore store = openStore(args);
    // Every id first: a mistyped one removes nothing.
    std::vector<std::int64_t> ids;
    for (const std::string& text : args.positionals) {
        ids.push_back(requireEntry(store, text).id);
    }
    for (std::int64_t id : ids) {
        const std::optional<std::vector<runs::RunFile>> files = store.remove(id);
        if (!files || !args.flag("--files")) {
            continue;
        }
        for (const runs::RunFile& f : *files) {
            std::error_code error;
            if (std::filesystem::remove(f.path, error)) {
                std::fprintf(stderr, "removed %s\n", f.path.c_str());
            } else if (error) {
                std::fprintf(stderr, "warning: could not remove %s: %s\n", f.path.c_str(),
                             error.message().c_str());
            }
        }
    }
    return ExitCode::Ok;
}

ExitCode commandRunsExport(const CliArgs& args) {
    const std::string out = args.require("--out");
    const std::string extension = std::filesystem::path(out).extension().string();
    if (extension != ".csv" && extension != ".json") {
        throw ConfigError("--out: expected a .csv or .json file, got '" + out + "'");
    }
    const RunStore store = openStore(args);
    const runs::RunQuery query = queryFrom(args, 0);
    const std::vector<std::string> asked =
        args.has("--columns") ? splitList(args.get("--columns")) : std::vector<std::string>{};
    const std::vector<RunEntry> entries = listed(store, query, asked, extension == ".json");
    if (extension == ".json") {
        writeFileAtomic(out, jsonText(entries));
    } else {
        const std::vector<std::string> columns = columnsFor(args, entries);
        writeFileAtomic(out, runs::runTableCsv(columns, runs::runTableCells(entries, columns)));
    }
    std::fprintf(stderr, "wrote %zu runs to %s\n", entries.size(), out.c_str());
    return ExitCode::Ok;
}

}  // namespace ensemble::cli
