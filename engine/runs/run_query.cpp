// Queries over the runs store: the filter and sort texts people type (the CLI's flags, the app's
// filter box), and the SQL a RunQuery becomes.

#include <charconv>
#include <cmath>

#include "runs/run_db.h"
#include "runs/run_query_sql.h"

namespace ensemble::runs {

namespace {

struct RunsColumn {
    const char* name;
    const char* column;
    detail::FieldKind kind;
    bool sortable;
};

constexpr RunsColumn kRunsColumns[] = {
    {"id", "r.id", detail::FieldKind::Number, true},
    {"started", "r.started", detail::FieldKind::Date, true},
    {"ended", "r.ended", detail::FieldKind::Date, true},
    {"wall", "r.wall", detail::FieldKind::Number, true},
    {"members", "r.members", detail::FieldKind::Number, true},
    {"seed", "r.seed", detail::FieldKind::Number, true},
    {"parent", "r.parent", detail::FieldKind::Number, true},
    {"program", "r.program", detail::FieldKind::Text, true},
    {"kind", "r.kind", detail::FieldKind::Text, true},
    {"version", "r.version", detail::FieldKind::Text, true},
    {"state", "r.state", detail::FieldKind::State, true},
    {"preset", "r.preset", detail::FieldKind::Text, true},
    {"dataset", "r.dataset", detail::FieldKind::Text, true},
    {"method", "r.method", detail::FieldKind::Text, true},
    {"backend", "r.backend", detail::FieldKind::Text, true},
    {"fingerprint", "r.fingerprint", detail::FieldKind::Text, true},
    {"relation", "r.relation", detail::FieldKind::Text, true},
    {"host", "r.host", detail::FieldKind::Text, true},
    {"note", "r.note", detail::FieldKind::Text, false},
    {"command", "r.command", detail::FieldKind::Text, false},
    {"tag", "", detail::FieldKind::Tag, false},
};

constexpr std::string_view kFigurePrefix = "figure.";
constexpr std::string_view kConfigPrefix = "config.";

std::string knownFieldsText() {
    std::string out;
    for (const RunsColumn& column : kRunsColumns) {
        out += column.name;
        out += ", ";
    }
    return out + "figure.<name>, config.<dotted.key>";
}

// The value of a numeric field: an integer when it is one (ids and seeds compare exactly), a real
// otherwise; dates as unix seconds.
std::optional<detail::SqlValue> numberValue(const std::string& text, bool date) {
    std::int64_t integer = 0;
    const char* end = text.data() + text.size();
    auto [intEnd, intError] = std::from_chars(text.data(), end, integer);
    if (intError == std::errc() && intEnd == end && !text.empty()) {
        return detail::SqlValue(integer);
    }
    double real = 0.0;
    auto [realEnd, realError] = std::from_chars(text.data(), end, real);
    if (realError == std::errc() && realEnd == end && !text.empty() && !std::isnan(real)) {
        return detail::SqlValue(real);
    }
    if (date) {
        if (const auto seconds = parseIsoUtc(text)) {
            return detail::SqlValue(*seconds);
        }
    }
    return std::nullopt;
}

// "a%b_c" as a LIKE pattern that contains it: %a\%b\_c%.
std::string containsPattern(const std::string& text) {
    std::string out = "%";
    for (const char c : text) {
        if (c == '%' || c == '_' || c == '\\') {
            out += '\\';
        }
        out += c;
    }
    return out + "%";
}

std::string termText(const RunFilter& filter) {
    return filter.field + filterOpText(filter.op) + filter.value;
}

[[noreturn]] void badTerm(const RunFilter& filter, const std::string& why) {
    throw ConfigError("runs filter '" + termText(filter) + "': " + why);
}

// SQL's operator: the typed one, but for contains (`~`), which is LIKE.
const char* sqlOp(FilterOp op) {
    return op == FilterOp::Contains ? "LIKE" : filterOpText(op);
}

}  // namespace

const char* filterOpText(FilterOp op) {
    switch (op) {
        case FilterOp::Equal:
            return "=";
        case FilterOp::NotEqual:
            return "!=";
        case FilterOp::Less:
            return "<";
        case FilterOp::LessEqual:
            return "<=";
        case FilterOp::Greater:
            return ">";
        case FilterOp::GreaterEqual:
            return ">=";
        case FilterOp::Contains:
            return "~";
    }
    return "=";
}

namespace detail {

ResolvedField resolveField(const std::string& field) {
    ResolvedField out;
    if (field.rfind(kFigurePrefix, 0) == 0) {
        out.kind = FieldKind::Figure;
        out.name = field.substr(kFigurePrefix.size());
        out.sortable = true;
    } else if (field.rfind(kConfigPrefix, 0) == 0) {
        out.kind = FieldKind::Config;
        out.name = field.substr(kConfigPrefix.size());
        out.sortable = true;
    } else {
        for (const RunsColumn& column : kRunsColumns) {
            if (field == column.name) {
                out.kind = column.kind;
                out.name = column.column;
                out.sortable = column.sortable;
                out.known = true;
                return out;
            }
        }
        return out;
    }
    out.known = !out.name.empty();
    return out;
}

void appendFilterSql(const RunFilter& filter, QuerySql& sql) {
    const ResolvedField field = resolveField(filter.field);
    if (!field.known) {
        badTerm(filter, "unknown field '" + filter.field + "' (known: " + knownFieldsText() + ")");
    }
    const bool contains = filter.op == FilterOp::Contains;
    const bool ordering =
        filter.op != FilterOp::Equal && filter.op != FilterOp::NotEqual && !contains;
    const std::string op = sqlOp(filter.op);
    const std::string like = " LIKE ? ESCAPE '\\'";
    std::string& where = sql.where;
    where += where.empty() ? "" : " AND ";
    switch (field.kind) {
        case FieldKind::Number:
        case FieldKind::Date:
        case FieldKind::Figure: {
            if (contains) {
                badTerm(filter, "'~' (contains) applies to text; " + filter.field + " is a number");
            }
            const auto value = numberValue(filter.value, field.kind == FieldKind::Date);
            if (!value) {
                badTerm(filter, "'" + filter.value + "' is not a number" +
                                    (field.kind == FieldKind::Date
                                         ? std::string(" or a date (2024-05-01T12:00:00Z)")
                                         : std::string()));
            }
            if (field.kind == FieldKind::Figure) {
                where += "r.id IN (SELECT run FROM figures WHERE name = ? AND value " + op + " ?)";
                sql.whereValues.emplace_back(field.name);
            } else {
                where += field.name + " " + op + " ?";
            }
            sql.whereValues.push_back(*value);
            return;
        }
        case FieldKind::State: {
            RunState state{};
            if (ordering) {
                badTerm(filter, "state takes =, != or ~");
            }
            if (!contains && !enumFromName(filter.value, state)) {
                badTerm(filter, "unknown state '" + filter.value +
                                    "' (known: running, finished, cancelled, failed, "
                                    "interrupted)");
            }
            [[fallthrough]];
        }
        case FieldKind::Text:
            if (contains) {
                where += field.name + like;
                sql.whereValues.emplace_back(containsPattern(filter.value));
            } else {
                where += field.name + " " + op + " ?";
                sql.whereValues.emplace_back(filter.value);
            }
            return;
        case FieldKind::Tag:
            if (ordering) {
                badTerm(filter, "tag takes =, != or ~");
            }
            if (contains) {
                where += "r.id IN (SELECT run FROM tags WHERE tag" + like + ")";
                sql.whereValues.emplace_back(containsPattern(filter.value));
            } else {
                where += std::string(filter.op == FilterOp::NotEqual ? "r.id NOT IN" : "r.id IN") +
                         " (SELECT run FROM tags WHERE tag = ?)";
                sql.whereValues.emplace_back(filter.value);
            }
            return;
        case FieldKind::Config: {
            where +=
                "r.id IN (SELECT run FROM config_values WHERE key = (SELECT id FROM config_keys "
                "WHERE key = ?) AND ";
            sql.whereValues.emplace_back(field.name);
            const auto number = contains ? std::nullopt : numberValue(filter.value, false);
            if (contains) {
                where += "text" + like + ")";
                sql.whereValues.emplace_back(containsPattern(filter.value));
            } else if (number) {
                where += "number " + op + " ?)";
                sql.whereValues.push_back(*number);
            } else {
                where += "text " + op + " ?)";
                sql.whereValues.emplace_back(filter.value);
            }
            return;
        }
    }
}

void appendTextSql(const std::string& text, QuerySql& sql) {
    std::size_t at = 0;
    while (at < text.size()) {
        const auto start = text.find_first_not_of(" \t\n", at);
        if (start == std::string::npos) {
            break;
        }
        const auto end = std::min(text.find_first_of(" \t\n", start), text.size());
        const std::string pattern = containsPattern(text.substr(start, end - start));
        sql.where += sql.where.empty() ? "" : " AND ";
        sql.where +=
            "(r.note LIKE ? ESCAPE '\\' OR r.id IN (SELECT run FROM tags WHERE tag LIKE ? "
            "ESCAPE '\\'))";
        sql.whereValues.emplace_back(pattern);
        sql.whereValues.emplace_back(pattern);
        at = end;
    }
}

void appendSortSql(const RunSort& sort, QuerySql& sql) {
    const ResolvedField field = resolveField(sort.field);
    if (!field.known || !field.sortable) {
        throw ConfigError("runs sort '" + sort.field + "': " +
                          (field.known ? std::string("cannot sort by it")
                                       : "unknown field (known: " + knownFieldsText() + ")"));
    }
    const bool down = sort.descending;
    const SortPart missing{"runs r", "", {}, "", "r.id", down};
    if (field.kind == FieldKind::Figure) {
        sql.parts.push_back({"figures sf CROSS JOIN runs r ON r.id = sf.run",
                             "sf.name = ?",
                             {field.name},
                             "sf.value",
                             "sf.run",
                             down});
        sql.parts.push_back(missing);
        sql.parts.back().condition =
            "NOT EXISTS (SELECT 1 FROM figures WHERE run = r.id AND name = ?)";
        sql.parts.back().conditionValues = {field.name};
    } else if (field.kind == FieldKind::Config) {
        const std::string from = "config_values sc CROSS JOIN runs r ON r.id = sc.run";
        const std::string key = "sc.key = (SELECT id FROM config_keys WHERE key = ?)";
        // Numbers before text, ascending; each stretch in its own index order.
        const SortPart numbers{
            from, key + " AND sc.number IS NOT NULL", {field.name}, "sc.number", "sc.run", down};
        const SortPart texts{
            from, key + " AND sc.number IS NULL", {field.name}, "sc.text", "sc.run", down};
        sql.parts.push_back(down ? texts : numbers);
        sql.parts.push_back(down ? numbers : texts);
        sql.parts.push_back(missing);
        sql.parts.back().condition =
            "NOT EXISTS (SELECT 1 FROM config_values WHERE key = (SELECT id FROM config_keys "
            "WHERE key = ?) AND run = r.id)";
        sql.parts.back().conditionValues = {field.name};
    } else if (field.name == "r.ended") {
        sql.parts.push_back({"runs r", "r.ended IS NOT NULL", {}, "r.ended", "r.id", down});
        sql.parts.push_back(missing);
        sql.parts.back().condition = "r.ended IS NULL";
    } else if (field.name == "r.id") {
        sql.parts.push_back(missing);
    } else {
        sql.parts.push_back({"runs r", "", {}, field.name, "r.id", down});
    }
}

std::string sortPartOrder(const SortPart& part, bool reversed) {
    const std::string dir = part.descending != reversed ? " DESC" : " ASC";
    return part.key.empty() ? part.tie + dir : part.key + dir + ", " + part.tie + dir;
}

std::string sortPartSql(const SortPart& part, const std::string& where, bool count, Seek seek,
                        bool reversed) {
    std::string conditions = part.condition;
    const auto add = [&](const std::string& condition) {
        conditions += (conditions.empty() ? "" : " AND ") + condition;
    };
    const std::string op = part.descending != reversed ? " < ?" : " > ?";
    if (seek == Seek::Ties) {
        add(part.key + " = ? AND " + part.tie + op);
    } else if (seek == Seek::Past) {
        add((part.key.empty() ? part.tie : part.key) + op);
    }
    if (!where.empty()) {
        add("(" + where + ")");
    }
    std::string text = std::string(count ? "SELECT count(*)" : "SELECT r.id") + " FROM " +
                       part.from + (conditions.empty() ? "" : " WHERE " + conditions);
    return count ? text : text + " ORDER BY " + sortPartOrder(part, reversed) + " LIMIT ? OFFSET ?";
}

QuerySql buildQuerySql(const RunQuery& query, bool withOrder) {
    QuerySql sql;
    for (const RunFilter& filter : query.filters) {
        appendFilterSql(filter, sql);
    }
    appendTextSql(query.text, sql);
    if (withOrder) {
        appendSortSql(query.sort, sql);
    }
    return sql;
}

}  // namespace detail

namespace {

// Splits at blanks outside double quotes; quotes are dropped, \" inside them is a quote.
std::vector<std::string> filterTokens(std::string_view text) {
    std::vector<std::string> out;
    std::string current;
    bool inToken = false;
    bool quoted = false;
    for (std::size_t i = 0; i < text.size(); ++i) {
        const char c = text[i];
        if (quoted) {
            if (c == '\\' && i + 1 < text.size() && text[i + 1] == '"') {
                current += '"';
                ++i;
            } else if (c == '"') {
                quoted = false;
            } else {
                current += c;
            }
        } else if (c == '"') {
            quoted = true;
            inToken = true;
        } else if (c == ' ' || c == '\t' || c == '\n') {
            if (inToken) {
                out.push_back(std::move(current));
                current.clear();
                inToken = false;
            }
        } else {
            current += c;
            inToken = true;
        }
    }
    if (quoted) {
        throw ConfigError("runs filter '" + std::string(text) + "': a \" is not closed");
    }
    if (inToken) {
        out.push_back(std::move(current));
    }
    return out;
}

// The term's operator: its position and length in `token`, the first of = ! < > ~.
bool findFilterOp(const std::string& token, std::size_t& at, std::size_t& length, FilterOp& op) {
    at = token.find_first_of("=!<>~");
    if (at == std::string::npos) {
        return false;
    }
    const std::string_view rest = std::string_view(token).substr(at);
    static constexpr std::pair<std::string_view, FilterOp> kOps[] = {
        {"!=", FilterOp::NotEqual}, {"<=", FilterOp::LessEqual}, {">=", FilterOp::GreaterEqual},
        {"=", FilterOp::Equal},     {"<", FilterOp::Less},       {">", FilterOp::Greater},
        {"~", FilterOp::Contains},
    };
    for (const auto& [text, value] : kOps) {
        if (rest.substr(0, text.size()) == text) {
            length = text.size();
            op = value;
            return true;
        }
    }
    length = 1;  // a lone '!'
    return false;
}

}  // namespace

RunQuery parseFilter(std::string_view text) {
    RunQuery query;
    for (const std::string& token : filterTokens(text)) {
        std::size_t at = 0;
        std::size_t length = 0;
        FilterOp op = FilterOp::Equal;
        if (!findFilterOp(token, at, length, op)) {
            if (at != std::string::npos) {
                throw ConfigError("runs filter '" + token +
                                  "': '!' must be followed by '=' (operators: = != < <= > >= ~)");
            }
            query.text += query.text.empty() ? token : " " + token;
            continue;
        }
        RunFilter filter{token.substr(0, at), op, token.substr(at + length)};
        if (filter.field.empty()) {
            throw ConfigError("runs filter '" + token + "': no field before '" + filterOpText(op) +
                              "'");
        }
        // The SQL for the term checks its field, operator and value once, here.
        detail::QuerySql check;
        detail::appendFilterSql(filter, check);
        query.filters.push_back(std::move(filter));
    }
    return query;
}

RunSort parseSort(std::string_view text) {
    RunSort sort;
    sort.descending = false;
    std::string field(text);
    if (!field.empty() && (field.front() == '-' || field.front() == '+')) {
        sort.descending = field.front() == '-';
        field.erase(0, 1);
    }
    for (const auto& [suffix, descending] :
         {std::pair<std::string_view, bool>{":desc", true}, {":asc", false}}) {
        if (field.size() > suffix.size() &&
            std::string_view(field).substr(field.size() - suffix.size()) == suffix) {
            field.resize(field.size() - suffix.size());
            sort.descending = descending;
        }
    }
    sort.field = field;
    detail::QuerySql check;
    detail::appendSortSql(sort, check);
    return sort;
}

}  // namespace ensemble::runs
